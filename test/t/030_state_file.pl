
# 030_state_file.pl: a damaged or unwritable state file.
#
# Truncated, empty, bad magic, bad version, bad checksum, another cluster's:
# the server still starts, snowflake_next() refuses with XX001 and a hint,
# decoding still works, and a clean shutdown leaves the damaged file as it was
# (never silently reset).  A state write that fails (snowflake.state.tmp is a
# directory): no ID beyond the durable mark is returned, generation errors;
# once the directory is gone it resumes above everything issued.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

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

# Another cluster (its own system identifier) and its state file.
my $other = SnowflakeTest->new('other');
$other->start;
$other->query('CREATE EXTENSION snowflake');
$other->next_id('other cluster: one ID');
$other->stop;
my $foreign = read_bytes($other->data_dir . '/snowflake.state');

my $t = SnowflakeTest->new('state');
$t->start;
$t->query('CREATE EXTENSION snowflake');
$t->ids('SELECT snowflake_next() FROM generate_series(1, 10)',
	'true time: 10 IDs', count => 10);
$t->stop;

my $file = $t->data_dir . '/snowflake.state';
my $good = read_bytes($file);
# Layout (src/state.c, SnowflakeStateFile): magic u32 @0, version u32 @4,
# system_identifier u64 @8, mark u64 @16, then more fields and a CRC-32C at the
# end.  Only the offsets of the first four are used here.
cmp_ok(length($good), '>', 24, 'the state file exists');
isnt($foreign, $good, 'the other cluster\'s state file differs');

my $bad_checksum = $good;
substr($bad_checksum, 16, 1) = chr(ord(substr($good, 16, 1)) ^ 0x01);

my @damage = (
	[ 'truncated', substr($good, 0, 20), qr/20 bytes|short|truncat/i ],
	[ 'empty',     '',                   qr/0 bytes|short|empty/i ],
	[ 'bad magic', "XXXX" . substr($good, 4), qr/magic/i ],
	[
		'bad version', substr($good, 0, 4) . pack('V', 99) . substr($good, 8),
		qr/version/i
	],
	[ 'bad checksum', $bad_checksum, qr/checksum|crc/i ],
	[ 'another cluster\'s', $foreign, qr/system|cluster/i ],);

for my $case (@damage)
{
	my ($name, $bytes, $reason) = @$case;
	write_bytes($file, $bytes);
	ok($t->start(fail_ok => 1), "$name state file: the server starts");
	my $r = $t->next_refused("$name state file", '', sqlstate => 'XX001',
		message => qr/snowflake\.state/);
	like($r->{detail} // '', $reason, "$name state file: the detail says why");
	like($r->{hint} // '', qr/restore|remove|repair/i,
		"$name state file: the hint says what to do");
	$t->refused('SELECT snowflake_next_n(5)', "$name state file: snowflake_next_n",
		sqlstate => 'XX001');
	is( $t->query(
			'SELECT snowflake_unix_ms(1724551110457221119), (snowflake_decode(1724551110457221119)).machine_id'),
		'1700000000000|13',
		"$name state file: decoding still works");
	my ($state, $why) = split /\|/, $t->query('SELECT state, detail FROM snowflake_state()');
	is($state, 'damaged', "$name state file: snowflake_state() says damaged");
	like($why // '', $reason, "$name state file: snowflake_state() says why");
	$t->stop;
	is(read_bytes($file), $bytes,
		"$name state file: left as it was by the clean shutdown");
}

# The good file back: generation resumes above every earlier ID, no wait.
write_bytes($file, $good);
$t->start;
$t->ids('SET snowflake.max_wait_ms = 0; SELECT snowflake_next() FROM generate_series(1, 10)',
	'good state file restored: IDs above all earlier', count => 10);

# The file holds every mark that was published (read in this order: a write in
# between can only make the file's mark the later one).  WAL replay after a
# crash would repair a file that lags, so only the file itself shows it.
sub file_holds_mark
{
	my ($what) = @_;
	my $published = $t->status->{reserved_until_ms};
	my $on_disk = $t->state_file_mark + $SnowflakeTest::EPOCH_UNIX_MS;
	cmp_ok($on_disk, '>=', $published, "$what: the state file holds the published mark");
	return;
}
file_holds_mark('generating');

# --- A state write that fails: snowflake.state.tmp is a directory.

my $tmpdir = $t->data_dir . '/snowflake.state.tmp';
$t->next_id('just before the state file becomes unwritable');
my $mark = $t->status->{reserved_until_ms};
mkdir $tmpdir or die "could not create $tmpdir: $!";

# One call every 0.1 s: within reservation_ms (1 s) the IDs pass the mark.
my $script = join '',
  map { "SELECT snowflake_next();\nSELECT pg_sleep(0.1);\n" } 1 .. 60;
# The SQLSTATE follows errno (errcode_for_file_access): EISDIR here is 42809
# wrong_object_type; a full disk would be 53100, a permission problem 42501.
my $r = $t->refused($script, 'generation while the state cannot be written',
	sqlstate => '42809',
	message => qr/could not create snowflake state file "snowflake\.state\.tmp": Is a directory/);
# Round 28, F2: the directory is not removed (not the extension's to delete);
# the hint says something is in the way, not to check free space.
like($r->{hint} // '', qr/^Something that is not a regular file \(a directory\?\) is in the way at "snowflake\.state\.tmp" or "snowflake\.state" in the data directory: move it away/,
	'the hint says a directory is in the way');
my @over = grep { id_unix_ms($_) > $mark } @{ $r->{ids} };
is(scalar(@over), 0, 'no ID beyond the durable mark was returned')
  or diag("mark $mark, IDs beyond it: @over");
cmp_ok($t->status->{reserved_until_ms}, '==', $mark,
	'the durable mark did not move');
$t->refused('SELECT snowflake_next_n(5000)',
	'snowflake_next_n(5000) beyond the mark while the state cannot be written',
	sqlstate => '42809');

rmdir $tmpdir or die "could not remove $tmpdir: $!";
$t->ids('SELECT snowflake_next() FROM generate_series(1, 10)',
	'state writable again: IDs above all earlier', count => 10);
cmp_ok($t->status->{reserved_until_ms}, '>', $mark, 'the durable mark moved on');
file_holds_mark('state writable again');

$t->summary;
$t->stop;
done_testing();
