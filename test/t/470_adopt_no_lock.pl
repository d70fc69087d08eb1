# 470_adopt_no_lock.pl: adoption is written by the reservation writer, never by
# the calling session under the state lock (issue 19 item 4).  With the disk
# stalled (every fsync of the writer and of the session delayed 20 s):
# snowflake_adopt_state() on a copy is refused within snowflake.max_wait_ms
# (55000), makes no fsync of its own, and a cancel ends its wait; with nothing
# to adopt it returns at once, while the writer's write is still stalled.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $p = SnowflakeTest->new('primary', allows_streaming => 1, conf => 'fsync = on');
$p->start;
$p->query('CREATE EXTENSION snowflake');
$p->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'primary', count => 1000);
$p->node->backup('b');
my $c = SnowflakeTest->new('copy', from_backup => [ $p, 'b' ], standby => 0,
	conf => "fsync = on\nsnowflake.datacenter_id = 9");
$c->start;
is($c->query('SELECT state FROM snowflake_state()'), 'copy', 'the base backup is a copy');
my $dir = PostgreSQL::Test::Utils::tempdir;

sub mark_ms
{
	my ($t) = @_;
	return $t->query('SELECT floor(extract(epoch FROM reserved_until) * 1000)::bigint FROM snowflake_state()');
}

# --- A copy, the disk stalled.
my $bg = $c->background;
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
my $writer = $c->writer_pid;
my $stall = SnowflakeTest::strace_start("$dir/stall.strace", '-f', '-e', 'trace=fsync,fdatasync',
	'-e', 'inject=fsync,fdatasync:delay_enter=20000000', '-p', $writer, '-p', $pid);
$bg->query_safe("SET statement_timeout = '1s'");
$bg->query_safe('SET snowflake.max_wait_ms = 200');
my $out = $bg->query('SELECT snowflake_adopt_state()');
my $r = SnowflakeTest::parse_error({ stderr => $bg->{stderr} });
is($r->{sqlstate}, '55000', 'stalled disk: adoption is refused within max_wait_ms (55000), not adopted by the session')
  or diag("stdout: $out, stderr: $bg->{stderr}");
like($r->{message} // '', qr/adoption of the snowflake node state (could not be written within snowflake\.max_wait_ms \(200 ms\)|is being written and will take effect when the write completes)/,
	'the error says the adoption was not written in time (480 checks that what it says holds)');
$bg->{stderr} = '';
# snowflake_state() says what goes on (round 9: it showed no write in progress and asked to adopt).
my ($state, $detail, $in_progress) = split /\|/, $c->query(
	'SELECT state, detail, write_in_progress_ms IS NOT NULL FROM snowflake_state()');
is($state, 'copy', 'snowflake_state(): still a copy while the write stalls');
if (($r->{message} // '') =~ /is being written/)
{
	like($detail, qr/^An adoption is being written/, 'its detail says the adoption is being written, not to adopt');
	is($in_progress, 't', 'and write_in_progress_ms counts the stalled write');
}
else
{
	like($detail, qr/run snowflake_adopt_state\(\) if this server replaces it/, 'withdrawn: its detail is the copy\'s');
	is($in_progress, 'f', 'and no write is in progress');
}

# A cancel ends a long wait at once.
$bg->query_safe('SET statement_timeout = 0');
$bg->query_safe('SET snowflake.max_wait_ms = 600000');
$bg->query_until(qr/waiting/, "\\echo waiting\nSELECT snowflake_adopt_state();\n");
is($c->wait_for_active('SELECT snowflake_adopt_state()%', "wait_event_type = 'Extension'"), $pid,
	'the session waits for the writer on the condition variable');
is($c->query("SELECT pg_cancel_backend($pid)"), 't', 'pg_cancel_backend sent');
is($bg->query('SELECT 1'), '1', 'the cancelled call ended');
like($bg->{stderr}, qr/ERROR:\s+57014:\s+canceling statement due to user request/, 'with the cancel error (57014)');
$bg->{stderr} = '';
is($c->query('SELECT state FROM snowflake_state()'), 'copy', 'still a copy while the write stalls');
SnowflakeTest::strace_stop($stall);

my $session_fsyncs = () = slurp_file("$dir/stall.strace") =~ /^$pid\s+f(data)?sync\(/mg;
is($session_fsyncs, 0, 'the session made no fsync of its own');

$bg->query_safe('SET snowflake.max_wait_ms = 60000');
like($bg->query_safe('SELECT snowflake_adopt_state()'), qr/^[tf]$/, 'the disk back: the copy is adopted (by this call, or by the write the writer had begun)');
ok($c->node->poll_query_until('postgres', 'SELECT state FROM snowflake_state()', 'ok'), 'and owns the node state');
ok($c->node->wait_for_log(qr/snowflake node state adopted by this data directory/), 'the adoption is logged');
$c->ids('SELECT snowflake_next() FROM generate_series(1, 100)', 'the adopted copy, its own node', count => 100);
$bg->quit;

# --- Nothing to adopt: no lock, no wait, even while a write of the writer stalls.
$bg = $p->background;
$writer = $p->writer_pid;
$stall = SnowflakeTest::strace_start("$dir/stall2.strace", '-f', '-e', 'trace=fsync,fdatasync',
	'-e', 'inject=fsync,fdatasync:delay_enter=20000000', '-p', $writer);
my $mark = mark_ms($p);
$bg->query('SET snowflake.max_wait_ms = 0');
$bg->query('SELECT count(snowflake_next()) FROM (SELECT generate_series(1, 100000000)) s');
like($bg->{stderr}, qr/durable mark could not be raised/, 'the primary\'s writer is stalled in a write');
$bg->{stderr} = '';
is($bg->query_safe('SELECT snowflake_adopt_state()'), 'f', 'snowflake_adopt_state() with nothing to adopt returns false');
is(mark_ms($p), $mark, 'it returned while the writer\'s write was still stalled (the mark has not moved)');
SnowflakeTest::strace_stop($stall);
$bg->quit;

$c->stop;
$p->stop;
$p->summary;
done_testing();
