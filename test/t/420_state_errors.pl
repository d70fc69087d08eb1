# 420_state_errors.pl: what the state file's errors say, and that their
# remedies cannot repeat an ID (issue 19 items 1 and 6).
#
# - A damaged file: the hint does not offer restoring the file from a backup
#   (an older copy holds an older mark: IDs issued after it would repeat); it
#   says to make sure the clock is past every ID issued, remove the file and
#   start.  Followed with IDs an hour ahead of the clock, that remedy gives
#   IDs above all earlier ones.
# - A file that cannot be read (permissions): "could not read", SQLSTATE
#   58030, a hint that says not to remove it; the file is left as it was.
# - A dangling symbolic link is a file that cannot be read, not "no file":
#   the mark does not restart at the clock.
# - EDQUOT on the write of the file is SQLSTATE 53100 (disk full).

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

sub read_bytes
{
	my ($path) = @_;
	open my $fh, '<:raw', $path or die "could not read $path: $!";
	local $/;
	my $bytes = <$fh>;
	close $fh;
	return $bytes;
}

sub write_bytes
{
	my ($path, $bytes) = @_;
	open my $fh, '>:raw', $path or die "could not write $path: $!";
	print $fh $bytes;
	close $fh or die "could not close $path: $!";
	return;
}

# The clocks step an hour forward and back on purpose: the forward-jump check is off.
my $t = SnowflakeTest->new('errors', conf => 'snowflake.max_clock_jump_ms = 0');
my $file = $t->data_dir . '/snowflake.state';
$t->start;
$t->query('CREATE EXTENSION snowflake');
$t->ids('SELECT snowflake_next() FROM generate_series(1, 100)', 'true time', count => 100);
my $older = read_bytes($file);	# what a backup of the file would hold

# IDs an hour ahead of the clock the server comes back with.
$t->set_clock('+1h');
my @ahead = $t->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'clock an hour ahead', count => 1000);
$t->stop;
$t->set_clock('+0');

# --- A damaged file: the hint.
write_bytes($file, substr(read_bytes($file), 0, 20));
$t->start;
my $r = $t->next_refused('damaged state file', undef, sqlstate => 'XX001', message => qr/is damaged/);
unlike($r->{hint} // '', qr/backup/i, 'damaged: the hint does not offer restoring the file from a backup');
like($r->{hint} // '', qr/clock is past the timestamp of every ID this server issued/,
	'damaged: the hint says to make sure the clock is past every ID issued first');
like($r->{hint} // '', qr/only on the data directory that owns the node: a copy of it \(a restored or copied data directory, a standby\) must first get its own snowflake\.datacenter_id and snowflake\.machine_id/,
	'damaged: the hint limits removing the file to the owner, and sends a copy to its own node first (19c F4)');
like(slurp_file($t->node->logfile), qr/WARNING:.*snowflake state file "snowflake.state" is damaged/,
	'damaged: a WARNING at start-up');
$t->stop;

# The remedy, followed: the clock past every ID issued, the file removed.
my $max_ms = id_unix_ms($ahead[-1]);
ok($max_ms > time() * 1000 + 3_000_000, 'the highest ID lies about an hour ahead of the real clock');
$t->set_clock('+1h');
unlink $file or die "could not remove $file: $!";
$t->start;
my @after = $t->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'remedy followed: clock past every ID, file removed',
	count => 1000);
cmp_ok($after[0], '>', $ahead[-1], 'after the remedy, IDs lie above every ID issued before');
$t->stop;

# --- A file that cannot be read.
my $before = read_bytes($file);
chmod 0000, $file or die "chmod: $!";
SKIP:
{
	skip 'running as root: permissions do not stop reading', 7 if $> == 0;
	$t->start;
	$r = $t->next_refused('unreadable state file', undef, sqlstate => '58030',
		message => qr/could not read snowflake state file "snowflake\.state"/);
	like($r->{detail} // '', qr/Could not open it: Permission denied/, 'unreadable: the detail names the error');
	like($r->{hint} // '', qr/Do not remove the file, nor "snowflake\.state\.tmp": either may hold the durable mark\./, 'unreadable: the hint says not to remove it');
	unlike($r->{hint} // '', qr/remove the file and start/i, 'unreadable: no remove remedy');
	is($t->query('SELECT state FROM snowflake_state()'), 'unreadable', 'snowflake_state() says unreadable');
	$t->stop;
}
chmod 0600, $file or die "chmod: $!";
is(read_bytes($file), $before, 'the unreadable file was left as it was');
$t->start;
$t->ids('SELECT snowflake_next() FROM generate_series(1, 100)', 'readable again', count => 100);
$t->stop;

# --- A dangling symbolic link, the clock back at the true time: IDs an hour
# ahead were issued, so the mark must not restart at the clock.
$t->set_clock('+0');
my $kept = read_bytes($file);
unlink $file or die;
symlink($t->data_dir . '/gone/snowflake.state', $file) or die "symlink: $!";
$t->start;
$r = $t->next_refused('dangling symbolic link', undef, sqlstate => '58030',
	message => qr/could not read snowflake state file/);
like($r->{detail} // '', qr/No such file or directory/, 'dangling link: the detail names the error');
ok(-l $file, 'the link was left in place (not replaced by a new file)');
$t->stop;
unlink $file or die;
write_bytes($file, $kept);

# --- EDQUOT on the write of the file: SQLSTATE 53100 (the clock past the IDs again).
$t->set_clock('+1h');
$t->start;
$t->next_id('before the quota error');
my $bg = $t->background;
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
my $writer = $t->writer_pid;
my $dir = PostgreSQL::Test::Utils::tempdir;
my $st = SnowflakeTest::strace_start("$dir/edquot.strace", '-f', '-e', 'trace=write',
	'-e', 'inject=write:error=EDQUOT', '-p', $writer);
$bg->query('SET snowflake.max_wait_ms = 5000');
$bg->query('SELECT count(snowflake_next()) FROM (SELECT generate_series(1, 2000000)) s');
$r = SnowflakeTest::parse_error({ stderr => $bg->{stderr} });
is($r->{sqlstate}, '53100', 'EDQUOT on the write: SQLSTATE 53100 (disk full)')
  or diag("stderr: $bg->{stderr}");
like($r->{message} // '', qr/could not write snowflake state file "snowflake\.state\.tmp": Disk quota exceeded/,
	'EDQUOT: the message names the write and the error');
SnowflakeTest::strace_stop($st);
$bg->quit;
$t->next_id('after the quota error');

$t->stop;
$t->summary;
done_testing();
