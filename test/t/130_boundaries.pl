
# 130_boundaries.pl: the generator at its boundaries, with a faked wall clock
# (libfaketime; the monotonic and boot clocks stay real), and a restart during
# each case.  Each case asserts exact IDs or exact errors:
#
# - normal increase: frozen at T0, T0 + 1 ms, T0 + 1 s: exact IDs;
# - saturation of a ms: 4,096 IDs of one ms, then the exact refusal;
# - a rollback within snowflake.max_wait_ms (the waiting call gets the exact
#   next ID once the clock is back) and beyond it (the exact refusal);
# - a forward jump within snowflake.max_clock_jump_ms (passes silently) and
#   beyond it (held: 55000, one WARNING, the mark not sized from the jumped
#   clock), which ends when the clock comes back or snowflake_accept_clock()
#   accepts it; a restart during a hold keeps it;
# - two servers with the same node id: a registry lets only one claim it.
#
# T0 is 2030-01-01 00:00:00 UTC, in the future, so that frozen clocks there
# only ever fall behind the boot clock: the clock watch never sees a forward
# jump in the first cases.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep time);

my $T0_MS = 1893456000000;                              # 2030-01-01 00:00:00 UTC
my $T0_TICK = $T0_MS - $SnowflakeTest::EPOCH_UNIX_MS;
my $NODE_BITS = (1 << 17) | (1 << 12);                  # datacenter 1, machine 1
sub id_at { my ($ms_after_t0, $seq) = @_; return (($T0_TICK + $ms_after_t0) << 22) | $NODE_BITS | $seq; }
# A frozen faketime spec at T0 + $s seconds; half a ms more, because libfaketime
# reads the fraction as a double and truncates to the ms (2.001 would be 2.000999).
sub at { my ($s) = @_; return sprintf('2030-01-01 00:00:%07.4f', $s + 0.0005); }

# How often $re matches in the node's log after byte $from.
sub log_count
{
	my ($t, $re, $from) = @_;
	my $log = slurp_file($t->node->logfile);
	$log = substr($log, $from // 0);
	my $n = () = $log =~ /$re/g;
	return $n;
}

# The message and detail of a refusal, for an exact match.
sub no_free_ts { return qr/^snowflake_next\(\) refused: no timestamp free within snowflake\.max_wait_ms \(200 ms\)$/; }

my $t = SnowflakeTest->new('bounds');
$t->set_clock(at(0));
$t->start;
$t->query('CREATE EXTENSION snowflake');
my $wait200 = 'SET snowflake.max_wait_ms = 200;';

# --- Normal increase.

my @ids = $t->ids('SELECT snowflake_next() FROM generate_series(1, 3);', 'frozen at T0: three IDs', count => 3);
is_deeply(\@ids, [ id_at(0, 0), id_at(0, 1), id_at(0, 2) ], 'frozen at T0: sequence 0, 1, 2 of T0');
$t->set_clock(at(0.001));
is($t->next_id('T0 + 1 ms'), id_at(1, 0), 'T0 + 1 ms: sequence 0 of the next ms');
$t->set_clock(at(1));
is($t->next_id('T0 + 1 s'), id_at(1000, 0), 'T0 + 1 s: sequence 0 of that ms');

# Restart: the clean shutdown recorded T0 + 1 s as the last ms; the frozen
# clock is still there, so the next ID needs the next ms.
$t->restart;
my $r = $t->next_refused('after a restart in the same frozen ms', $wait200, message => no_free_ts());
$t->set_clock(at(1.002));
is($t->next_id('after a restart, T0 + 1.002 s'), id_at(1002, 0), 'after a restart: sequence 0 of the next free ms');

# --- Saturation of one ms: 4,096 IDs, then the exact refusal.

$t->set_clock(at(2));
@ids = $t->ids('SELECT snowflake_next_n(4096);', 'frozen at T0 + 2 s: 4096 IDs', count => 4096);
is($ids[0], id_at(2000, 0), 'the first of the ms: sequence 0');
is($ids[-1], id_at(2000, 4095), 'the last of the ms: sequence 4095');
$r = $t->next_refused('the 4097th ID in a frozen ms', $wait200, message => no_free_ts());
like($r->{detail}, qr/^The IDs asked for need the clock to reach 1 ms past the current ms; each ms holds 4096 IDs per node/,
	'the detail says the clock must reach the next ms');
$r = $t->refused("$wait200 SELECT snowflake_next_n(1);", 'snowflake_next_n(1) in the full ms',
	message => qr/^snowflake_next_n\(\) refused: no timestamp free within snowflake\.max_wait_ms \(200 ms\)$/);
$t->restart;
$t->next_refused('after a restart in the full ms', $wait200, message => no_free_ts());
$t->set_clock(at(2.001));
is($t->next_id('after a restart, the next ms'), id_at(2001, 0), 'after a restart: sequence 0 of the next ms');

# --- Rollback within max_wait_ms: the waiting call gets the next ID once the clock is back.

$t->set_clock(at(3));
is($t->next_id('frozen at T0 + 3 s'), id_at(3000, 0), 'T0 + 3 s: sequence 0');
my $log_at = -s $t->node->logfile;
my $before = $t->status;
$t->set_clock(at(2.9));
my $bg = $t->background;
$bg->query_safe('SET snowflake.max_wait_ms = 60000');
$bg->query_until(qr/waiting/, "\\echo waiting\nSELECT snowflake_next();\n");
$t->wait_for_active('SELECT snowflake_next()%', "wait_event_type = 'Extension'");
$t->set_clock(at(3.001));
my ($waited) = grep { /^\d+$/ } split /\n/, $bg->query('SELECT 1');
$bg->quit;
# The clock was behind: the next ID continues the last ms (sequence 1), once the clock is there.
is($waited, id_at(3000, 1), 'the call that waited through a 100 ms rollback gets sequence 1 of T0 + 3 s');
$t->record('the call that waited through the rollback', $waited);
my $after = $t->status;
is($after->{clock_rollbacks} - $before->{clock_rollbacks}, 1, 'the rollback is counted once');
is($after->{max_rollback_ms}, 100, 'the largest rollback is 100 ms');
is(log_count($t, qr/WARNING:  snowflake: the system clock went back 100 ms for datacenter 1, machine 1/, $log_at), 1,
	'one WARNING when the rollback began');
is(log_count($t, qr/WARNING:  snowflake: the system clock is back at the highest time seen for datacenter 1, machine 1/, $log_at), 1,
	'one WARNING when it ended');

# --- Rollback beyond max_wait_ms: the exact refusal, before and after a restart.

$log_at = -s $t->node->logfile;
# The clock went back 501 ms from the highest time seen (T0 + 3.001 s), and is
# 500 ms behind the last ID (T0 + 3 s, sequence 1).
$t->set_clock(at(2.5));
for my $i (1 .. 3)
{
	$r = $t->next_refused("clock 500 ms behind the last ID, call $i", $wait200,
		message => qr/^snowflake_next\(\) refused: the system clock is behind the IDs already issued$/);
	like($r->{detail}, qr/^The clock went back 501 ms; it is 500 ms behind the last ID issued for datacenter 1, machine 1, and waiting for it would take longer than snowflake\.max_wait_ms \(200 ms\)\.$/,
		"call $i: the detail says how far back, and how far behind");
}
is(log_count($t, qr/WARNING:  snowflake: the system clock went back/, $log_at), 1,
	'three refused calls in one rollback: one WARNING');
$t->restart;
$r = $t->next_refused('after a restart, still 500 ms behind', $wait200,
	message => qr/^snowflake_next\(\) refused: the system clock is behind the IDs already issued$/);
like($r->{detail}, qr/The clock is 500 ms behind the last ID issued or reserved for datacenter 1, machine 1/,
	'after a restart the refusal measures from the mark written at shutdown');
$t->set_clock(at(3.002));
is($t->next_id('after a restart, clock back'), id_at(3002, 0), 'after a restart: sequence 0 of the next ms');

# --- A streak of refusals: one WARNING when it reaches 10, one when it ends.

$log_at = -s $t->node->logfile;
$t->set_clock(at(3));
$t->next_refused("streak, call $_", "SET snowflake.max_wait_ms = 0;") for 1 .. 12;
$t->set_clock(at(3.003));
is($t->next_id('after the streak'), id_at(3003, 0), 'the streak ends with the next ID');
is(log_count($t, qr/WARNING:  snowflake: 10 calls in a row refused for datacenter 1, machine 1, the last because the clock is behind the IDs issued/, $log_at), 1,
	'one WARNING when ten calls in a row were refused');
is(log_count($t, qr/WARNING:  snowflake: datacenter 1, machine 1 issues IDs again after 12 refused calls in a row/, $log_at), 1,
	'one WARNING when the streak ended, with its length');

# --- A short streak (round 29, F1): no WARNING at all, to the client or the
# log (no streak WARNING began it); its end is a LOG line with the count.
$log_at = -s $t->node->logfile;
$t->set_clock(at(3));
$t->next_refused("short streak, call $_", "SET snowflake.max_wait_ms = 0;") for 1 .. 2;
$t->set_clock(at(3.004));
$r = $t->run('SELECT snowflake_next();');
is($r->{ret}, 0, 'the short streak ends with the next ID');
my @problems = $t->record('after the short streak', grep { /^\d+$/ } split /\n/, $r->{stdout});
is(scalar(@problems), 0, 'its ID is new and above all earlier') or diag("@problems");
unlike($r->{stderr}, qr/WARNING:.*issues IDs again/, 'the call that ends a short streak gets no streak WARNING (the rollback\'s end is one of its own)');
is(log_count($t, qr/WARNING:  snowflake: datacenter 1, machine 1 issues IDs again/, $log_at), 0,
	'no WARNING in the log for a streak of 2');
is(log_count($t, qr/LOG:  snowflake: datacenter 1, machine 1 issues IDs again after 2 refused calls in a row/, $log_at), 1,
	'one LOG line with its length');
$t->summary;
$t->stop;

# --- Forward jumps, on a ticking clock (offsets from real time).

my $j = SnowflakeTest->new('jump', clock => 'shim', conf => "snowflake.datacenter_id = 2\nsnowflake.machine_id = 3");
$j->start;
$j->query('CREATE EXTENSION snowflake');
my $x1 = $j->next_id('real time');
$log_at = -s $j->node->logfile;

# Within the tolerance (30 s < 60 s): passes silently.
$j->set_clock('+30');
my $x2 = $j->next_id('clock 30 s ahead');
cmp_ok(id_unix_ms($x2) - id_unix_ms($x1), '>=', 30000, 'a 30 s forward step: the next ID carries the new time');
my $s = $j->status(2, 3);
cmp_ok($s->{max_rollback_ms}, '==', 0, 'no rollback');
is($j->query('SELECT max_clock_jump_ms BETWEEN 29000 AND 31000, clock_held FROM snowflake_status() WHERE machine_id = 3'),
	't|f', 'snowflake_status(): the largest jump is about 30 s, generation not held');
is(log_count($j, qr/jumped/, $log_at), 0, 'a step within the tolerance makes no WARNING');

# Beyond it (+2 h): held, seen by the reservation writer before any call.
$j->set_clock('+2h');
ok($j->node->wait_for_log(qr/WARNING:  snowflake: the system clock jumped (\d+) ms forward, more than snowflake\.max_clock_jump_ms \(60000 ms\)/, $log_at),
	'the reservation writer sees the jump without any call');
my $reserved_before = $j->query(q{SELECT floor(extract(epoch FROM reserved_until) * 1000)::bigint FROM snowflake_state()});
for my $call ('SELECT snowflake_next();', 'SELECT snowflake_next_n(10);', 'SELECT snowflake_next();')
{
	$r = $j->refused($call, "clock 2 h ahead: $call",
		message => qr/^snowflake_next(_n)?\(\) refused: the system clock jumped \d+ ms forward$/);
	my ($ms) = $r->{message} =~ /jumped (\d+) ms/;
	cmp_ok(abs($ms - 7200000), '<', 2000, "$call: the jump measured is the whole 2 h: the 30 s before were not taken in (cumulative)")
	  or diag("measured $ms ms");
	like($r->{detail}, qr/more than snowflake\.max_clock_jump_ms \(60000 ms\) allows; no ID is issued at the new time/,
		"$call: the detail says what the setting allows");
	like($r->{hint}, qr/correct the clock: generation resumes by itself.*SELECT <extension schema>\.snowflake_accept_clock\(\) \(with search_path pinned, as the README.s section Functions shows\)/,
		"$call: the hint says what to do");
}
is(log_count($j, qr/jumped \d+ ms forward, more than/, $log_at), 1, 'one WARNING for the whole hold');
is($j->query('SELECT clock_held FROM snowflake_status() WHERE machine_id = 3'), 't', 'snowflake_status(): generation held');
usleep(1_200_000);    # the writer looks at least every half window (500 ms)
is($j->query(q{SELECT floor(extract(epoch FROM reserved_until) * 1000)::bigint FROM snowflake_state()}),
	$reserved_before, 'the durable mark is not raised from the jumped clock');
cmp_ok($reserved_before, '<', time() * 1000 + 30000 + 60000, 'the mark lies within a minute of the time trusted before the jump');

# A restart during the hold keeps it (the state file records it).
$log_at = -s $j->node->logfile;
$j->restart;
ok(log_count($j, qr/LOG:  snowflake: the system clock jumped \d+ ms forward of the time trusted before this start \(same boot\)/, $log_at) == 1,
	'the restart compares the clock with the trusted offset in the state file (same boot)');
$r = $j->refused('SELECT snowflake_next();', 'after a restart, clock still 2 h ahead',
	message => qr/^snowflake_next\(\) refused: the system clock jumped \d+ ms forward$/);

# The clock comes back: generation resumes by itself, at the time trusted before.
$log_at = -s $j->node->logfile;
$j->set_clock('+30');
my $x3 = $j->next_id('clock back at +30 s');
cmp_ok(id_unix_ms($x3) - time() * 1000, '<', 31000, 'after the clock came back, the ID carries the old time, not the jumped one');
is(log_count($j, qr/WARNING:  snowflake: the system clock came back within snowflake\.max_clock_jump_ms \(60000 ms\)/, $log_at), 1,
	'one WARNING when the clock came back');
is($j->query('SELECT clock_held FROM snowflake_status() WHERE machine_id = 3'), 'f', 'no longer held');

# Jump again (+1 day), and an operator accepts the new time.
$j->set_clock('+1d');
$j->next_refused('clock 1 day ahead', '', message => qr/jumped \d+ ms forward/);
$j->query('CREATE ROLE plain LOGIN');
$r = $j->run('SET ROLE plain; SELECT snowflake_accept_clock();');
is($r->{sqlstate}, '42501', 'a plain role may not accept the clock');
my $moved = $j->query('SELECT snowflake_accept_clock()');
cmp_ok(abs($moved - 86400000), '<', 5000, 'snowflake_accept_clock() says how far the trusted time moved')
  or diag("moved $moved");
my $x4 = $j->next_id('after accepting the clock 1 day ahead');
cmp_ok(id_unix_ms($x4) - time() * 1000, '>', 86400000 - 5000, 'after the accept, IDs carry the new time');
like(slurp_file($j->node->logfile), qr/jump was accepted with snowflake_accept_clock\(\): generation resumes at the new time/,
	'the accept ends the hold with a WARNING');
$j->restart;
my $x5 = $j->next_id('after a restart, accepted time');
cmp_ok(id_unix_ms($x5) - time() * 1000, '>', 86400000 - 5000, 'after a restart, the accepted time holds');
$j->summary;
$j->stop;

# --- Two servers with the same node id: the registry lets only one claim it.

my $reg = PostgreSQL::Test::Cluster->new('registry');
$reg->init;
$reg->start;
$reg->safe_psql('postgres', q{
CREATE TABLE snowflake_registry (
    datacenter_id int NOT NULL,
    machine_id    int NOT NULL,
    owner         text NOT NULL,
    claimed_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    high_water_ms bigint,
    PRIMARY KEY (datacenter_id, machine_id)
);
});
my @pair;
for my $name ('same_a', 'same_b')
{
	my $n = SnowflakeTest->new($name, conf => "snowflake.require_claim = on");
	$n->start;
	my ($host, $port) = ($reg->host, $reg->port);
	$n->query(qq{
CREATE EXTENSION snowflake;
CREATE EXTENSION postgres_fdw;
CREATE SERVER fleet FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$host', port '$port', dbname 'postgres', connect_timeout '2');
CREATE USER MAPPING FOR CURRENT_USER SERVER fleet;
IMPORT FOREIGN SCHEMA public LIMIT TO (snowflake_registry) FROM SERVER fleet INTO public;
});
	push @pair, $n;
}
my ($sa, $sb) = @pair;
$sa->query(q{SELECT snowflake_claim_node('snowflake_registry', '1 hour')});
$sa->next_id('the first server, under its claim');
my $claim_refused = qr/^datacenter 1, machine 1 is claimed by another server/;
for my $round ('', ' after a restart')
{
	$sb->refused(q{SELECT snowflake_claim_node('snowflake_registry', '1 hour');},
		"the second server claims the same node$round", message => $claim_refused);
	$sb->next_refused("the second server generates without a claim$round", '',
		message => qr/^snowflake_next\(\) refused: this server holds no current registry claim for datacenter 1, machine 1/);
	$sb->restart;
}
$sa->restart;
$sa->query(q{SELECT snowflake_claim_node('snowflake_registry', '1 hour')});
$sa->next_id('the first server claims again after its restart');
$sb->refused(q{SELECT snowflake_claim_node('snowflake_registry', '1 hour');},
	'the second server, while the first holds the node again', message => $claim_refused);
$sa->summary;
$_->stop for @pair;
$reg->stop;

done_testing();
