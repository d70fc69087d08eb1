
# 020_restart_crash.pl: restarts and crashes, with the clock set back.
#
# The node reserves 60 s ahead (snowflake.reservation_ms = 60000), so a
# generator that ignored the durable mark after a crash would be caught at
# once: it would issue IDs below the mark, or wait 30-60 s instead of
# refusing.  An ID handed out in a rolled-back transaction is never issued
# again.  A clean restart records the exact last ID (no wait afterwards); with
# the clock 1 h back it refuses.  A backend killed with SIGKILL while the clock
# is back: shared memory is rebuilt and the generator starts above the mark.
# The postmaster killed with SIGKILL (a backend waiting for the clock exits
# too), then started with the clock back: refused.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time);

# The clock is set back across restarts and crashes and then restored on purpose: the
# forward-jump hold is off here (130_boundaries.pl tests it, restarts included).
my $t = SnowflakeTest->new(
	'crash',
	restart_after_crash => 1,
	conf => "snowflake.reservation_ms = 60000\nsnowflake.max_clock_jump_ms = 0");
$t->start;
$t->query('CREATE EXTENSION snowflake');

$t->ids('SELECT snowflake_next() FROM generate_series(1, 20)',
	'true time: 20 IDs', count => 20);

# --- An ID handed out in a rolled-back transaction is never issued again;
# --- record() holds every later ID of this script (across the restarts and
# --- crashes below) above it.

my @rolled_back = $t->ids(
	"CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next(), v int);\n"
	  . "BEGIN;\nINSERT INTO t (v) VALUES (1) RETURNING id;\nROLLBACK;",
	'an ID returned by a rolled-back INSERT', count => 1);
my @kept = $t->ids('INSERT INTO t (v) VALUES (2) RETURNING id',
	'the next INSERT', count => 1);
cmp_ok($kept[0], '>', $rolled_back[0],
	'the next ID lies above the rolled-back one');

# --- A clean restart records the exact last ID: no wait after it.

my $mark = $t->status->{reserved_until_ms};
my $last = $t->next_id('last ID before a clean restart');
cmp_ok($mark, '>', time * 1000 + 20_000,
	'running: the durable mark lies well ahead (reservation_ms 60000)');
$t->restart;
my $id = $t->next_id('after a clean restart, max_wait_ms 0: no wait',
	'SET snowflake.max_wait_ms = 0;');
cmp_ok(id_unix_ms($id), '<', $mark,
	'the clean shutdown recorded the last ID, not the reservation');

# --- The same, exactly, whatever a restart takes: with the clock 10 min back
# --- after the stop (more than any restart takes) and a lead of 1 h, the
# --- first ID after the start is the one right above the recorded mark: the
# --- next ms after the last ID, sequence 0.  (At true time the clock would
# --- hide a mark recorded too low once the restart takes longer than that.)

my $lead = 'SET snowflake.max_lead_ms = 3600000;';
$last = $t->next_id('last ID before a clean stop, then the clock 10 min back');
$t->stop;
is($t->state_file_mark + $SnowflakeTest::EPOCH_UNIX_MS, id_unix_ms($last),
	'the clean shutdown wrote the ms of the last ID as the mark');
$t->set_clock('-10m');
$t->start;
$id = $t->next_id('after a clean restart, clock 10 min back, max_lead_ms 1 h', $lead);
is(id_unix_ms($id), id_unix_ms($last) + 1,
	'the first ID after a clean restart lies in the ms right after the last ID');
is(id_sequence($id), 0, 'the first ID after a clean restart has sequence 0');
$t->set_clock('+0');

# --- A clean restart with the clock 1 h back: refused until it is restored.

my $t0 = time;
$t->next_id('last ID before a clean stop');
$t->stop;
$t->set_clock('-1h');
$t->start;
my $r = $t->next_refused('after a clean restart with the clock 1 h back');
SnowflakeTest::step_ok($r, 3_600_000, $t0, time, 'clean restart, clock 1 h back');
my $back;
$t->set_clock('+0');
$t->ids('SET snowflake.max_wait_ms = 0; SELECT snowflake_next() FROM generate_series(1, 10)',
	'clock restored: IDs above all earlier, no wait', count => 10);

# --- A backend killed with SIGKILL while the clock is 10 min back.

sub crash_a_backend
{
	my ($what) = @_;
	my $bg = $t->background;
	my $pid = $bg->query_safe('SELECT pg_backend_pid()');
	is(kill('KILL', $pid), 1, "$what: backend $pid killed with SIGKILL");
	eval { $bg->quit; };
	$t->wait_ready;
	return;
}

$t->ids('SELECT snowflake_next() FROM generate_series(1, 10)',
	'true time, before the first crash', count => 10);
$mark = $t->status->{reserved_until_ms};
$t->set_clock('-10m');
my $log_offset = -s $t->node->logfile;
crash_a_backend('crash 1');
ok( $t->node->log_contains(
		'all server processes terminated; reinitializing', $log_offset),
	'crash 1: shared memory was re-initialised');
is($t->query(
		'SELECT count(*) FROM snowflake_status() WHERE datacenter_id = 1 AND machine_id = 1'),
	'0', 'crash 1: the generator state in shared memory was lost');

$r = $t->next_refused('after crash 1, clock 10 min back');
$back = SnowflakeTest::detail_ms($r);
ok(defined $back && $back > 600_000,
	'the detail states a rollback of more than 600000 ms (clock + reservation)')
  or diag('detail: ' . ($r->{detail} // '(none)'));

# Nothing raised the mark since the crash (no ID was issued): the generator
# starts in the ms right after the mark on disk, at sequence 0.
my $floor_ms = $t->state_file_mark + $SnowflakeTest::EPOCH_UNIX_MS;
cmp_ok($floor_ms, '>=', $mark, 'crash 1: the mark on disk is the one reported before the crash, or later');
my @after = $t->ids("$lead SELECT snowflake_next() FROM generate_series(1, 10)",
	'after crash 1, clock 10 min back, max_lead_ms 1 h', count => 10);
is(id_unix_ms($after[0]), $floor_ms + 1,
	'after crash 1: the first ID lies in the ms right after the durable mark');
is(id_sequence($after[0]), 0, 'after crash 1: the first ID has sequence 0');

# Again: the mark written while the clock was back must cover those IDs.
crash_a_backend('crash 2');
$t->next_refused('after crash 2, clock 10 min back');
$t->ids("$lead SELECT snowflake_next() FROM generate_series(1, 10)",
	'after crash 2, clock 10 min back, max_lead_ms 1 h: above all earlier',
	count => 10);

# Clock restored: the mark still lies ahead (up to 60 s), so a short
# max_wait_ms refuses; a lead lets it go on, above everything.
$t->set_clock('+0');
$t->next_refused('clock restored, mark ahead, max_wait_ms 1000',
	'SET snowflake.max_wait_ms = 1000;');
$t->ids("$lead SELECT snowflake_next() FROM generate_series(1, 10)",
	'clock restored, max_lead_ms 1 h', count => 10);

# --- The postmaster killed with SIGKILL while a call waits for the clock
# --- (2 min back, max_wait_ms 10 min): the waiting backend exits too.  Then
# --- started with the clock 10 min back: refused.

$mark = $t->status->{reserved_until_ms};
$t->set_clock('-2m');
my $bg = $t->background;
$bg->query_safe('SET snowflake.max_wait_ms = 600000');
$bg->query_until(qr/waiting/, "\\echo waiting\nSELECT snowflake_next();\n");
my $waiting = $t->wait_for_active('SELECT snowflake_next()%',
	"wait_event_type = 'Extension'");
$t->kill9;
ok(!kill(0, $waiting),
	'the backend waiting for the clock exited on postmaster death');
eval { $bg->quit; };
$t->set_clock('-10m');
$t->start;
$r = $t->next_refused('after the postmaster was killed, clock 10 min back');
$back = SnowflakeTest::detail_ms($r);
ok(defined $back && $back > 600_000,
	'the detail states a rollback of more than 600000 ms')
  or diag('detail: ' . ($r->{detail} // '(none)'));
$t->set_clock('+0');
@after = $t->ids("$lead SELECT snowflake_next() FROM generate_series(1, 10)",
	'after the postmaster was killed, clock restored, max_lead_ms 1 h',
	count => 10);
cmp_ok(id_unix_ms($after[0]), '>', $mark,
	'after the postmaster was killed: the first ID lies above the mark');

$t->summary;
$t->stop;
done_testing();
