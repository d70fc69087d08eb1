
# 010_clock.pl: the wall clock steps under a running server (libfaketime).
#
# Clock 10 min back: refused with the rollback in the detail, counted.  Waits
# for a clock behind ended by statement_timeout and by pg_cancel_backend.  A
# small step back absorbed by waiting.  A frozen clock: exactly 4096 IDs per
# ms, then refusal, never a wrap; with max_lead_ms, IDs run ahead that far and
# no further.  A jump forward and back: never a lower or repeated ID.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use POSIX qw(strftime);
use Time::HiRes qw(time);

# Forward jumps are held by default (snowflake.max_clock_jump_ms; 130_boundaries.pl):
# this file steps the clock forward 10 min on purpose, so the check is off here.
my $t = SnowflakeTest->new('clock', conf => 'snowflake.max_clock_jump_ms = 0');
$t->start;
$t->query('CREATE EXTENSION snowflake');

$t->ids('SELECT snowflake_next() FROM generate_series(1, 100)',
	'true time: 100 IDs', count => 100);

# --- The clock steps back 10 minutes: refused within max_wait_ms, counted.

my $t0 = time;
$t->next_id('last ID before the step back');
$t->set_clock('-10m');
my $r = $t->next_refused(
	'clock 10 min back, max_wait_ms 200',
	"SET snowflake.max_wait_ms = 200; SET statement_timeout = '30s';",
	message => qr/clock/);
SnowflakeTest::step_ok($r, 600_000, $t0, time, 'clock 10 min back');

$t->refused('SELECT snowflake_next_n(10)',
	'clock 10 min back: snowflake_next_n(10) refused at once (default max_wait_ms)');

my $s = $t->status;
my $slack = int((time - $t0) * 1000) + 2;
cmp_ok($s->{clock_rollbacks}, '>=', 1, 'status: the rollback is counted');
ok( $s->{max_rollback_ms} >= 600_000 - $slack && $s->{max_rollback_ms} <= 600_000,
	"status: max_rollback_ms is the 600000 ms step, less at most the test's own $slack ms")
  or diag("max_rollback_ms: $s->{max_rollback_ms}");
cmp_ok($s->{refusals}, '>=', 2, 'status: the refusals are counted');

# --- A wait for a clock 2 min behind ends promptly on statement_timeout and
# --- on pg_cancel_backend (max_wait_ms 5 min would let it wait).

$t->set_clock('-2m');
$t0 = time;
$t->next_refused(
	'clock 2 min back, max_wait_ms 300000, statement_timeout 300ms',
	"SET snowflake.max_wait_ms = 300000; SET statement_timeout = '300ms';",
	sqlstate => '57014',
	message => qr/statement timeout/);
cmp_ok(time - $t0, '<', 25, 'the wait did not run its course (sanity bound)');

my $bg = $t->background;
$bg->query_safe('SET snowflake.max_wait_ms = 300000');
$bg->query_until(qr/waiting/, "\\echo waiting\nSELECT snowflake_next();\n");
# PG_WAIT_EXTENSION: the backend is asleep in the generator's wait.
my $pid = $t->wait_for_active('SELECT snowflake_next()%',
	"wait_event_type = 'Extension'");
is($t->query("SELECT pg_cancel_backend($pid)"), 't', 'pg_cancel_backend sent');
my $out = $bg->query('SELECT 1');
is($out, '1', 'the cancelled call returned no ID');
like($bg->{stderr}, qr/ERROR:\s+57014:\s+canceling statement due to user request/,
	'the waiting call ends with the cancel error (57014)');
$bg->quit;

$t->set_clock('+0');
$t->next_id('clock restored: no wait left behind by the cancelled calls');

# --- A small step back (1.5 s) is absorbed by waiting.

$t->next_id('last ID before a 1.5 s step back');
my $before = $t->status;
$t->set_clock('-1.5');
$t->next_id('clock 1.5 s back, max_wait_ms 10000: waits, then succeeds',
	'SET snowflake.max_wait_ms = 10000;');
my $after = $t->status;
cmp_ok($after->{waits}, '>', $before->{waits}, 'status: the wait is counted');
cmp_ok($after->{clock_rollbacks}, '>', $before->{clock_rollbacks},
	'status: the 1.5 s rollback is counted');
$t->set_clock('+0');

# --- The clock steps back further while a call waits.  The wait's deadline
# --- is on the monotonic clock: a deadline on the wall clock would move back
# --- with it and the call would sleep for the hour (here: until the 60 s
# --- statement_timeout).  Waiting for a rollback (3 s back, max_wait_ms 10 s),
# --- then 1 h back: the clock can no longer catch up in time, refused at once.

sub waiting_call
{
	my ($setup, $cond) = @_;
	my $bg = $t->background;
	$bg->query_safe($_) for @$setup;
	$bg->query_safe("SET statement_timeout = '60s'");
	$bg->query_until(qr/waiting/, "\\echo waiting\nSELECT snowflake_next();\n");
	$t->wait_for_active('SELECT snowflake_next()%', $cond);
	return $bg;
}

# The error the background call ended with, parsed, once it has ended.
sub waiting_result
{
	my ($bg) = @_;
	$bg->query('SELECT 1');
	my $r = SnowflakeTest::parse_error({ stderr => $bg->{stderr} });
	$bg->quit;
	return $r;
}

$t0 = time;
$t->next_id('last ID before a 3 s step back');
$t->set_clock('-3');
$bg = waiting_call([ 'SET snowflake.max_wait_ms = 10000' ],
	"wait_event_type = 'Extension'");
$t->set_clock('-1h');
$r = waiting_result($bg);
is($r->{sqlstate}, '55000',
	'waiting for a 3 s rollback, clock 1 h back meanwhile: refused (no wall-clock deadline)')
  or diag("stderr: $r->{stderr}");
{
	# sf_reserve() hands sf_refuse() the clock it read before the sleep, so
	# the detail still says about 3000 ms.
	local $TODO = 'the detail reports the clock as read before the wait, not when refusing';
	SnowflakeTest::step_ok($r, 3_600_000, $t0, time, 'clock 1 h back during the wait');
}
$t->set_clock('+0');

# --- Waiting for the next ms under a frozen clock (machine 4: its ms used
# --- up), then the clock frozen 0.5 s earlier: the call still ends when
# --- max_wait_ms (2 s) has passed on the monotonic clock, with a refusal.

my $m4 = 'SET snowflake.machine_id = 4;';
my $frozen4 = int(time) + 3;
$t->set_clock(frozen_time($frozen4));
$t->ids("$m4 SELECT snowflake_next_n(4096);", 'machine 4, frozen clock: its ms used up',
	count => 4096);
$t0 = time;
$bg = waiting_call([ $m4, 'SET snowflake.max_wait_ms = 2000' ], 'true');
$t->set_clock(strftime('%Y-%m-%d %H:%M:%S', localtime($frozen4 - 1)) . '.5');
$r = waiting_result($bg);
my $waited = time - $t0;
is($r->{sqlstate}, '55000',
	'waiting for the next ms, clock frozen 0.5 s earlier meanwhile: refused at max_wait_ms')
  or diag("stderr: $r->{stderr}");
cmp_ok($waited, '>=', 1.4,
	'the call waited until the 2 s deadline less the 0.5 s the clock needs (a lower bound)');
$t->set_clock('+0');

# --- A frozen clock (machine 2): 4096 IDs in its ms, then a refusal.

my $m2 = 'SET snowflake.machine_id = 2; SET snowflake.max_wait_ms = 200;';
my $frozen_s = int(time) + 3;
my $frozen_ms = $frozen_s * 1000;
$t->set_clock(frozen_time($frozen_s));
# snowflake_next_n and snowflake_next share the ms: 4000 + 96 IDs.
my @f = $t->ids(
	"$m2 SELECT snowflake_next_n(4000);\n"
	  . "SELECT snowflake_next() FROM generate_series(1, 96);",
	'frozen clock: snowflake_next_n(4000), then snowflake_next() 96 times',
	count => 4096);
is_deeply(
	[ map { id_unix_ms($_) == $frozen_ms ? 1 : 0 } @f ],
	[ (1) x 4096 ],
	'frozen clock: all 4096 IDs in the frozen ms');
is_deeply([ map { id_sequence($_) } @f ], [ 0 .. 4095 ],
	'frozen clock: sequences 0..4095');
$before = $t->status(1, 2);
$r = $t->next_refused('frozen clock, max_lead_ms 0: the 4097th ID is refused',
	$m2);
unlike($r->{detail} // '', qr/went back/, 'frozen clock: the detail does not claim a rollback');
$after = $t->status(1, 2);
cmp_ok($after->{refusals}, '>', $before->{refusals}, 'status: refusal counted');
is($after->{last_id}, $f[-1], 'status: last ID unchanged by the refusal');
is($after->{clock_rollbacks}, 0, 'status: a frozen clock is no rollback');

# max_lead_ms 5: 5 more ms of 4096 IDs each, then refusal.
my $lead = 'SET snowflake.max_lead_ms = 5;';
my @g = $t->ids("$m2 $lead SELECT snowflake_next_n(4096 * 5);",
	'frozen clock, max_lead_ms 5: 5 * 4096 more IDs', count => 4096 * 5);
is(id_unix_ms($g[-1]), $frozen_ms + 5, 'max_lead_ms 5: the last ID is 5 ms ahead');
is(scalar(@f) + scalar(@g), 4096 * (1 + 5), 'count = 4096 * (1 + max_lead_ms)');
$r = $t->next_refused('frozen clock, max_lead_ms 5: the next ID is refused',
	"$m2 $lead");
unlike($r->{detail} // '', qr/went back/,
	'max_lead_ms exhausted: the detail does not claim a rollback');
like($r->{message} // '', qr/no timestamp free/, 'max_lead_ms exhausted: refused for want of a free timestamp');
$t->refused("$m2 $lead SELECT snowflake_next_n(1);",
	'max_lead_ms 5: snowflake_next_n(1) refused too');
$t->set_clock('+0');

# --- A jump forward 10 min, then back to true time (machine 3).

my $m3 = 'SET snowflake.machine_id = 3;';
$t->ids("$m3 SELECT snowflake_next() FROM generate_series(1, 10)",
	'machine 3, true time', count => 10);
$t->set_clock('+10m');
$t0 = time;
my @fut = $t->ids("$m3 SELECT snowflake_next() FROM generate_series(1, 10)",
	'machine 3, clock 10 min ahead', count => 10);
cmp_ok(id_unix_ms($fut[0]), '>', int(time * 1000) + 590_000,
	'the IDs carry the future time');
$t->set_clock('+0');
$r = $t->next_refused('machine 3, back to true time: refused',
	"$m3 SET snowflake.max_wait_ms = 1000;");
SnowflakeTest::step_ok($r, 600_000, $t0, time, 'machine 3, back from 10 min ahead');
$t->ids(
	"$m3 SET snowflake.max_lead_ms = 3600000; SELECT snowflake_next() FROM generate_series(1, 10)",
	'machine 3, true time, max_lead_ms 1 h: IDs go on above the future ones',
	count => 10);
$t->next_id('machine 1 unaffected by machine 3\'s future IDs');

$t->summary;
$t->stop;
done_testing();
