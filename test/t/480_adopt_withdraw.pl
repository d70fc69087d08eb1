# 480_adopt_withdraw.pl: a cancelled or timed-out adoption never takes effect
# later, or its error says truthfully that it will (attack on issue 19, F3).
#
# A caller asks the reservation writer for the adoption and waits.  When the
# wait ends by cancel or snowflake.max_wait_ms before the writer took the
# request, the request is withdrawn: the error says the data directory stays
# a copy, and the writer, once it runs again, does not adopt.  When the writer
# had already begun the write (a stalled fsync), the error says the adoption
# is being written and will take effect, and it does once the disk is back.
# Before the fix the writer adopted later in both cases, with errors saying
# the copy stays a copy.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

my $p = SnowflakeTest->new('primary', allows_streaming => 1, conf => 'fsync = on');
$p->start;
$p->query('CREATE EXTENSION snowflake');
$p->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'primary', count => 1000);
$p->node->backup('b');
my $dir = PostgreSQL::Test::Utils::tempdir;

sub copy_of
{
	my ($name) = @_;
	my $c = SnowflakeTest->new($name, from_backup => [ $p, 'b' ], standby => 0,
		conf => "fsync = on\nsnowflake.datacenter_id = 9");
	$c->start;
	is($c->query('SELECT state FROM snowflake_state()'), 'copy', "$name: the base backup is a copy");
	return $c;
}

sub switches
{
	my ($pid) = @_;
	return slurp_file("/proc/$pid/status") =~ /^voluntary_ctxt_switches:\s+(\d+)/m ? $1 : -1;
}

# Let a stopped writer run again and wait until it has gone through its loop
# (woken by the caller's latch) and slept again, twice.
sub resume_writer
{
	my ($pid) = @_;
	my $before = switches($pid);
	kill 'CONT', $pid;
	for (1 .. 100 * $PostgreSQL::Test::Utils::timeout_default)
	{
		last if switches($pid) >= $before + 3;
		usleep(10_000);
	}
	cmp_ok(switches($pid), '>=', $before + 3, 'the writer ran its loop again');
}

sub adopted_logged
{
	my ($c) = @_;
	return slurp_file($c->node->logfile) =~ /snowflake node state adopted by this data directory/ ? 1 : 0;
}

# --- 1. The writer not running (stopped): max_wait_ms runs out, the request is withdrawn.
my $c = copy_of('copy1');
my $writer = $c->writer_pid;
kill 'STOP', $writer;
my $bg = $c->background;
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
$bg->query_safe('SET snowflake.max_wait_ms = 200');
$bg->query('SELECT snowflake_adopt_state()');
my $r = SnowflakeTest::parse_error({ stderr => $bg->{stderr} });
is($r->{sqlstate}, '55000', 'timed out: 55000');
like($r->{detail} // '', qr/the request is withdrawn and the data directory stays a copy/,
	'the error says the request is withdrawn') or diag($bg->{stderr});
$bg->{stderr} = '';
resume_writer($writer);
is($c->query('SELECT state FROM snowflake_state()'), 'copy', 'the writer ran again: still a copy');
is(adopted_logged($c), 0, 'no adoption logged');

# --- 2. The writer stopped, the call cancelled: withdrawn as well.
kill 'STOP', $writer;
$bg->query_safe('SET snowflake.max_wait_ms = 600000');
$bg->query_until(qr/waiting/, "\\echo waiting\nSELECT snowflake_adopt_state();\n");
is($c->wait_for_active('SELECT snowflake_adopt_state()%', "wait_event_type = 'Extension'"), $pid,
	'the call waits for the writer');
is($c->query("SELECT pg_cancel_backend($pid)"), 't', 'pg_cancel_backend sent');
is($bg->query('SELECT 1'), '1', 'the cancelled call ended');
like($bg->{stderr}, qr/ERROR:\s+57014:\s+canceling statement due to user request/, 'with the cancel error');
like($bg->{stderr}, qr/CONTEXT:.*adoption of the snowflake node state was withdrawn: the data directory stays a copy/,
	'whose context says the request was withdrawn') or diag($bg->{stderr});
$bg->{stderr} = '';
resume_writer($writer);
is($c->query('SELECT state FROM snowflake_state()'), 'copy', 'after the cancel, the writer ran again: still a copy');
is(adopted_logged($c), 0, 'no adoption logged');

# --- 3. The writer's write stalled (fsync delayed), the call cancelled: the error says it takes effect.
my $stall = SnowflakeTest::strace_start("$dir/stall.strace", '-f', '-e', 'trace=fsync,fdatasync',
	'-e', 'inject=fsync,fdatasync:delay_enter=8000000', '-p', $writer);
$bg->query_until(qr/waiting/, "\\echo waiting\nSELECT snowflake_adopt_state();\n");
$c->wait_for_active('SELECT snowflake_adopt_state()%', "wait_event_type = 'Extension'");
# Wait until the writer is inside the write (its fsync is stalled).
for (1 .. 100 * $PostgreSQL::Test::Utils::timeout_default)
{
	last if -e "$dir/stall.strace" && slurp_file("$dir/stall.strace") =~ /f(data)?sync\(/;
	usleep(10_000);
}
like(slurp_file("$dir/stall.strace"), qr/f(data)?sync\(/, 'the writer is in a stalled fsync');
is($c->query("SELECT pg_cancel_backend($pid)"), 't', 'pg_cancel_backend sent');
is($bg->query('SELECT 1'), '1', 'the cancelled call ended');
like($bg->{stderr}, qr/CONTEXT:.*adoption of the snowflake node state is being written by the reservation writer and will take effect/,
	'the cancel error says the adoption is being written and will take effect') or diag($bg->{stderr});
$bg->{stderr} = '';
SnowflakeTest::strace_stop($stall);
ok($c->node->poll_query_until('postgres', 'SELECT state FROM snowflake_state()', 'ok'),
	'and it did take effect once the disk was back');
$bg->quit;

# --- 4. max_wait_ms = 200 with the writer's fsync stalled: whatever the error says holds.
my $d = copy_of('copy2');
$writer = $d->writer_pid;
$stall = SnowflakeTest::strace_start("$dir/stall2.strace", '-f', '-e', 'trace=fsync,fdatasync',
	'-e', 'inject=fsync,fdatasync:delay_enter=8000000', '-p', $writer);
$bg = $d->background;
$bg->query_safe('SET snowflake.max_wait_ms = 200');
$bg->query('SELECT snowflake_adopt_state()');
$r = SnowflakeTest::parse_error({ stderr => $bg->{stderr} });
is($r->{sqlstate}, '55000', 'stalled disk, max_wait_ms = 200: 55000');
SnowflakeTest::strace_stop($stall);
if (($r->{message} // '') =~ /is being written and will take effect when the write completes/)
{
	pass('the error says the adoption will take effect');
	ok($d->node->poll_query_until('postgres', 'SELECT state FROM snowflake_state()', 'ok'), 'and it does');
}
elsif (($r->{detail} // '') =~ /the request is withdrawn and the data directory stays a copy/)
{
	pass('the error says the request is withdrawn');
	kill 'STOP', $writer;
	resume_writer($writer);
	is($d->query('SELECT state FROM snowflake_state()'), 'copy', 'and it stays a copy');
}
else
{
	fail('the error says neither that the adoption takes effect nor that it was withdrawn');
	diag($bg->{stderr});
}
$bg->quit;

$d->stop;
$c->stop;
$p->stop;
done_testing();
