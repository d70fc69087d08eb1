# 425_write_errno.pl: the SQLSTATE of a refused call whose durable mark cannot
# be written follows the OS error, as PostgreSQL's own file errors do, and is
# never XX000 (round 27 of the outside attack, F1: EFBIG, and ESTALE,
# ETIMEDOUT or EINTR from the fsync of a network file system, were XX000
# internal_error, which README's error table did not list and which says the
# fault is snowflake's; the storage failed).  Each case makes the reservation
# writer's calls on the temporary state file fail with one errno (strace's
# inject, on that file only: the writer's WAL writes are not touched), asks
# for IDs past the mark, and checks the refusal; then the fault goes and
# generation resumes.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

# A mark only 10 ms ahead: the clock soon passes it.  fsync on (the test
# servers run with it off, and then no fsync is made to fail).
my $t = SnowflakeTest->new('write_errno', conf => "fsync = on\nsnowflake.reservation_ms = 10");
$t->start;
$t->query('CREATE EXTENSION snowflake');
$t->ids('SELECT snowflake_next() FROM generate_series(1, 100)', 'before the faults', count => 100);
my $writer = $t->writer_pid;
my $dir = PostgreSQL::Test::Utils::tempdir;

# Until the clock passes the mark (the writer may have reserved further ahead
# than 10 ms after slow writes): the next ID needs a higher mark.
sub wait_past_mark
{
	for (1 .. 100 * $PostgreSQL::Test::Utils::timeout_default)
	{
		return if $t->query(q{SELECT clock_timestamp() > reserved_until + interval '5 ms'
FROM snowflake_status() WHERE datacenter_id = 1 AND machine_id = 1}) eq 't';
		usleep(10_000);
	}
	die 'the clock did not pass the mark';
}

# [system calls, errno, SQLSTATE, the step the message names]
my @cases = (
	[ 'write,pwrite64',              'EFBIG',     '53100', 'write' ],
	[ 'write,pwrite64',              'EDQUOT',    '53100', 'write' ],
	[ 'fsync,fdatasync',             'ESTALE',    '58030', 'fsync' ],
	[ 'fsync,fdatasync',             'ETIMEDOUT', '58030', 'fsync' ],
	# PostgreSQL 17 and later retry an fsync that fails with EINTR (pg_fsync):
	# the write never ends while every fsync fails so, and the call is refused
	# as waiting for a stalled write (seen on 17, 18 and 19; 16 is not tested).
	$t->pg_major >= 17
	? [ 'fsync,fdatasync', 'EINTR', '55000', 'stalled' ]
	: [ 'fsync,fdatasync', 'EINTR', '58030', 'fsync' ],
	[ 'fsync,fdatasync',             'EIO',       '58030', 'fsync' ],
	[ 'openat',                      'EMFILE',    '53000', 'create' ],
	[ 'openat',                      'ENOMEM',    '53200', 'create' ],
	[ 'openat',                      'EACCES',    '42501', 'create' ],
	[ 'rename,renameat,renameat2',   'ENOENT',    '58P01', 'rename' ],
	[ 'rename,renameat,renameat2',   'EROFS',     '42501', 'rename' ],
	# Round 28, F1: rename onto a directory that is not empty; was 58P02.
	[ 'rename,renameat,renameat2',   'EEXIST',    '42809', 'rename' ],);

for my $case (@cases)
{
	my ($calls, $errno, $sqlstate, $step) = @$case;
	# -P twice: a path argument names the file relative to the data directory,
	# a descriptor (write, fsync) resolves to its absolute path.
	my $st = SnowflakeTest::strace_start("$dir/$errno.strace", '-f', '-P', 'snowflake.state.tmp',
		'-P', $t->data_dir . '/snowflake.state.tmp',
		'-e', "trace=$calls", '-e', "inject=$calls:error=$errno", '-p', $writer);
	wait_past_mark();
	my $r = $t->next_refused("$errno on $step of the state file", 'SET snowflake.max_wait_ms = 300;',
		sqlstate => $sqlstate,
		message => $step eq 'stalled'
		? qr/^snowflake_next\(\) refused: the durable mark could not be raised within snowflake\.max_wait_ms \(300 ms\)$/
		: qr/^could not \Q$step\E snowflake state file "snowflake\.state\.tmp": /);
	like($r->{detail} // '', qr/^The reservation writer has been writing "snowflake\.state" for \d+ ms/,
		"$errno: the detail says the write is running") if $step eq 'stalled';
	like($r->{hint} // '', qr/^Something that is not a regular file \(a directory\?\) is in the way at "snowflake\.state\.tmp" or "snowflake\.state"/,
		"$errno: the hint says something is in the way") if $sqlstate eq '42809';
	SnowflakeTest::strace_stop($st);
	# The writer backs off (up to 10 s) after failures: a call may wait that long.
	is($t->query("SET snowflake.max_wait_ms = 30000;\nSELECT count(*) FROM snowflake_next_n(200000);"),
		'200000', "after $errno went away: 200,000 IDs");
	$t->next_id("after $errno went away");
}

# --- Round 28, F4: calls refused because the mark cannot be written count as
# refusals (snowflake_status().refusals) and make the streak's WARNING, like
# every other refusal; the streak's end gives their number.
my $refusals0 = $t->status->{refusals};
my $log_offset = -s $t->node->logfile;
my $st = SnowflakeTest::strace_start("$dir/streak.strace", '-f', '-P', $t->data_dir . '/snowflake.state.tmp',
	'-e', 'trace=fsync,fdatasync', '-e', 'inject=fsync,fdatasync:error=EIO', '-p', $writer);
wait_past_mark();
# Each call gets the failed write's error (58030), or, when the writer's next
# attempt is due within its wait but does not succeed in time, the refusal
# for a mark not raised (55000): both are refusals.
for my $n (1 .. 12)
{
	my $r = $t->run("SET snowflake.max_wait_ms = 300;\nSELECT snowflake_next();");
	like($r->{sqlstate} // '', qr/^(58030|55000)$/, "refusal $n of a streak while fsync fails")
	  or diag("stderr: $r->{stderr}");
}
my $counted = $t->status->{refusals} - $refusals0;
cmp_ok($counted, '>=', 12, "the 12 refused calls are counted in snowflake_status().refusals ($counted)");
like(substr(slurp_file($t->node->logfile), $log_offset),
	qr/WARNING:  snowflake: 10 calls in a row refused for datacenter 1, machine 1, the last because (the durable mark could not be (written|raised)|the last write of the durable mark failed)/,
	'the 10th refusal in a row logs the streak WARNING');
SnowflakeTest::strace_stop($st);
$t->next_id('after the streak', 'SET snowflake.max_wait_ms = 30000;');
my ($again) = substr(slurp_file($t->node->logfile), $log_offset) =~
  /datacenter 1, machine 1 issues IDs again after (\d+) refused calls in a row/;
cmp_ok($again // 0, '>=', 12, 'the streak ends with its count, at least the 12 refused calls');

$t->stop;
$t->summary;
done_testing();
