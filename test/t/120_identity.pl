# 120_identity.pl: the data directory's identity survives a remount and a
# reboot, but not a copy.
#
# The state file names the data directory that owns the node state.  The
# device number changes when a file system is mounted again (NFS, btrfs, a
# re-attached cloud volume), so it must not count; the inode and the birth time
# do not change, while a copy gets new ones.  An LD_PRELOAD shim
# (fake_identity.c) makes stat()/statx() of the data directory report another
# device or birth time.  A state file of version 1 (snowflake 1.0 and 1.1) is
# still read, and its mark honoured.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

my $dir = PostgreSQL::Test::Utils::tempdir();
my $shim = "$dir/fake_identity.so";
system('cc', '-shared', '-fPIC', '-O2', '-o', $shim, "$FindBin::RealBin/fake_identity.c", '-ldl') == 0
  or BAIL_OUT('could not build the identity shim');

my $t = SnowflakeTest->new('ident');
$t->start;
$t->query('CREATE EXTENSION snowflake');
$t->ids('SELECT snowflake_next() FROM generate_series(1, 10)', 'first start', count => 10);
my $self_id = $t->query('SELECT this_directory FROM snowflake_state()');
like($self_id, qr/^\d+:(\d+\.\d{9}|-)$/, "the data directory's identity is inode:birth time ($self_id)");

sub state_is
{
	my ($want, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	is($t->query('SELECT state FROM snowflake_state()'), $want, "$what: snowflake_state() says $want");
}

# Another device number, as after a remount or a reboot: the same directory.
$t->set_env([$shim], SF_FAKE_DEV_MINOR => 99);
$t->restart;
state_is('ok', 'another device number');
$t->ids('SELECT snowflake_next() FROM generate_series(1, 10)', 'another device number: generation goes on',
	count => 10);

# Another birth time with the same inode: another directory (a copy that got
# the same inode number on another file system).
$t->set_env([$shim], SF_FAKE_BTIME => 12345);
$t->restart;
state_is('copy', 'another birth time');
$t->next_refused('another birth time: refused as a copy', undef, message => qr/this data directory is a copy/);
like(slurp_file($t->node->logfile), qr/The file names data directory \d+:\S+; this one is \d+:12345\.000000000/,
	'the log names both identities');

# A file system that does not record birth times: the inode decides.
$t->set_env([$shim], SF_FAKE_NO_BTIME => 1);
$t->restart;
state_is('ok', 'no birth time known');
$t->ids('SELECT snowflake_next() FROM generate_series(1, 10)', 'no birth time known: generation goes on',
	count => 10);

# Back to the real identity.
$t->set_env([]);
$t->restart;
state_is('ok', 'the real identity again');

# --- A version 1 state file (snowflake 1.0 and 1.1): read, its mark honoured.

my @crc_table;
foreach my $i (0 .. 255)
{
	my $c = $i;
	$c = ($c & 1) ? (($c >> 1) ^ 0x82F63B78) : ($c >> 1) for 1 .. 8;
	$crc_table[$i] = $c;
}

sub crc32c
{
	my $c = 0xFFFFFFFF;
	$c = $crc_table[ ($c ^ $_) & 0xFF ] ^ ($c >> 8) for unpack 'C*', $_[0];
	return $c ^ 0xFFFFFFFF;
}

my $sysid = $t->query('SELECT system_identifier FROM pg_control_system()');
my ($dev, $ino) = (stat $t->data_dir)[ 0, 1 ];
my $now_ms = $t->query('SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint');
my $mark = $now_ms + 3000 - $SnowflakeTest::EPOCH_UNIX_MS;
$t->stop;
my $body = pack('V V Q< Q< q< Q< Q< V', 0x534E4F57, 1, $sysid, $mark, $now_ms, $dev, $ino, 0);
my $file = $t->data_dir . '/snowflake.state';
open my $fh, '>:raw', $file or die "could not write $file: $!";
print $fh $body . pack('V', crc32c($body));
close $fh;
is(-s $file, 56, 'a version 1 state file, 56 bytes');
$t->start;
state_is('ok', 'version 1 state file of this directory');
my $id = $t->next_id('version 1 state file: first ID');
cmp_ok(id_unix_ms($id) - $SnowflakeTest::EPOCH_UNIX_MS, '>', $mark, 'the first ID lies above the version 1 mark');
$t->stop;
is(-s $file, 104, 'the next write made it a version 3 file');
$t->start;
state_is('ok', 'version 3 file written from a version 1 one');
$t->next_id('after the upgrade of the file');

# A version 2 file (snowflake 1.2: 72 bytes, no timeline) is read too.
$now_ms = $t->query('SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint');
$mark = $now_ms + 3000 - $SnowflakeTest::EPOCH_UNIX_MS;
$t->stop;
$body = pack('V V Q< Q< q< Q< q< V V Q<', 0x534E4F57, 2, $sysid, $mark, $now_ms, $ino, 0, 0, 0, $dev);
open $fh, '>:raw', $file or die "could not write $file: $!";
print $fh $body . pack('V V', crc32c($body), 0);
close $fh;
is(-s $file, 72, 'a version 2 state file, 72 bytes');
$t->start;
state_is('ok', 'version 2 state file of this directory');

# Its mark lies ahead (no raise is due), yet the writer records the timeline at
# once, before any ID: a copy taken from now on is known for one.
my $tli = -1;
for (1 .. 300)
{
	if (-s $file == 104)
	{
		open my $in, '<:raw', $file or die "could not read $file: $!";
		local $/;
		my $bytes = <$in>;
		close $in;
		$tli = unpack('V', substr($bytes, 88, 4));
		last if $tli == 1;
	}
	usleep(100_000);
}
is($tli, 1, 'the writer rewrote the version 2 file as version 3 with timeline 1, before any ID');
cmp_ok(SnowflakeTest::state_file_mark($t), '==', $mark, 'with the same mark');
$id = $t->next_id('version 2 state file: first ID');
cmp_ok(id_unix_ms($id) - $SnowflakeTest::EPOCH_UNIX_MS, '>', $mark, 'the first ID lies above the version 2 mark');
$t->stop;
is(-s $file, 104, 'the next write made it a version 3 file');
$t->start;
$t->next_id('after the upgrade of the version 2 file');

$t->summary;
$t->stop;
done_testing();
