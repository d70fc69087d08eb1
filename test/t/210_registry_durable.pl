# 210_registry_durable.pl: what a claim carries over from a previous holder is
# durable before the claim returns, and never moves this server's IDs back;
# what a release fenced stays fenced; a claim never lowers the registry's mark;
# a registry row outside what a genuine holder could have written is refused.
#
# One server with a local registry (the claim runs the same code for a foreign
# one).  Its node is (1, 1); a session may SET snowflake.machine_id to issue
# under another node, as a server that moved nodes would.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $a = SnowflakeTest->new('a',
	conf => "snowflake.require_claim = on\nsnowflake.max_clock_jump_ms = 0\nsnowflake.max_wait_ms = 0\n");
$a->start;
$a->query(q{
CREATE EXTENSION snowflake;
CREATE TABLE public.reg (
    datacenter_id int NOT NULL,
    machine_id    int NOT NULL,
    owner         text NOT NULL,
    claimed_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    high_water_ms bigint,
    PRIMARY KEY (datacenter_id, machine_id)
);
});

my $now_ms = q{(extract(epoch from clock_timestamp()) * 1000)::bigint};
my $behind = qr/refused: the system clock is behind the IDs already issued/;

sub claim_sql
{
	my ($lease) = @_;
	return "DO \$\$BEGIN PERFORM public.snowflake_claim_node('public.reg', '" . ($lease // '1 minute') . "'); END\$\$;";
}

# A row left by another holder whose lease has ended, carrying high_water_ms = now + ahead_ms.
sub old_holder_row
{
	my ($holder, $ahead_ms) = @_;
	$a->query("DELETE FROM public.reg WHERE (datacenter_id, machine_id) = (1, 1);
INSERT INTO public.reg VALUES (1, 1, '$holder', now() - interval '2 minutes', now() - interval '1 second', $now_ms + $ahead_ms);");
	return $a->query('SELECT high_water_ms FROM public.reg WHERE (datacenter_id, machine_id) = (1, 1)');
}

# Issue IDs under node (1, 2) only: this server's node (1, 1) issues none.
sub use_other_node
{
	my ($what) = @_;
	$a->ids("SET snowflake.machine_id = 2;\n" . claim_sql() . "\nSELECT snowflake_next() FROM generate_series(1, 10);",
		$what, count => 10);
}

# --- Item 1: a lift survives a clean shutdown when the server issued IDs under another node.

my $x = old_holder_row('old-holder-1', 20000);
$a->query(claim_sql());
$a->next_refused('right after taking over a node 20 s ahead', '', message => $behind);
use_other_node('IDs under node (1, 2), none under the lifted node (1, 1)');
$a->restart;
$a->query(claim_sql());
my $res = $a->next_refused('after a clean restart, renewing its own claim', '', message => $behind);
cmp_ok(SnowflakeTest::detail_ms($res) // 0, '>=', 15000,
	'the lift above the previous holder\'s mark survived the clean shutdown');

# --- Item 1: and an unclean one (the clock first passes the mark taken over above: a clean
# shutdown's mark holds every node of the server).

$a->set_clock('+25');
$x = old_holder_row('old-holder-2', 40000);
$a->query(claim_sql());
use_other_node('IDs under node (1, 2) before the crash');
# A crash of a server process: the postmaster makes shared memory anew and reads the durable
# mark again; it keeps its claim tokens, so the claim below renews.  (After the postmaster
# itself was killed, the claim waits out the server's own lease: 220_registry_clone.pl.)
$a->node->append_conf('postgresql.conf', 'restart_after_crash = on');
$a->node->reload;
my $crash_at = -s $a->node->logfile;
kill 'KILL', $a->child_pid(qr/checkpointer/);
$a->node->wait_for_log(qr/all server processes terminated; reinitializing/, $crash_at);
$a->node->poll_query_until('postgres', 'SELECT true');
$a->query(claim_sql());
$res = $a->next_refused('after a crash, renewing its own claim', '', message => $behind);
cmp_ok(SnowflakeTest::detail_ms($res) // 0, '>=', 35000, 'the lift survived the crash');

# --- A carried mark below this server's word never moves it back.

$a->set_clock('+90');
my $last = $a->next_id('once the clock passed every carried mark', claim_sql());
$a->set_clock('+70');    # 20 s behind this server's word
old_holder_row('old-holder-3', -10000);
$a->query(claim_sql());
$a->next_refused('after taking over a node whose mark lies 10 s below the clock, the clock 20 s behind this server\'s word',
	'', message => $behind);
$a->set_clock('+90');
my $after = $a->next_id('once the clock is back', claim_sql());
cmp_ok($after, '>', $last, 'the takeover did not move the word back');
$a->restart;

# --- Item 3: a claim never lowers the registry's high_water_ms.

$a->query(claim_sql('1 hour'));
my $hw = $a->query('SELECT high_water_ms FROM public.reg WHERE (datacenter_id, machine_id) = (1, 1)');
$a->query(claim_sql('10 seconds'));
is($a->query('SELECT high_water_ms FROM public.reg WHERE (datacenter_id, machine_id) = (1, 1)'), $hw,
	'a claim with a shorter lease leaves the high_water_ms of the longer one');

# --- Item 2: a release whose transaction rolls back stays fenced until the next claim.

$a->query(claim_sql());
$last = $a->next_id('under a fresh claim');
$a->next_refused('after a release that rolled back',
	"BEGIN;\nDO \$\$BEGIN PERFORM public.snowflake_release_node('public.reg'); END\$\$;\nROLLBACK;",
	message => qr/refused: the ID would pass the bound of this server's registry claim/);
$a->next_refused('after a release rolled back to a savepoint',
	"BEGIN;\nSAVEPOINT s;\nDO \$\$BEGIN PERFORM public.snowflake_release_node('public.reg'); END\$\$;\nROLLBACK TO SAVEPOINT s;\nCOMMIT;",
	message => qr/refused: the ID would pass the bound of this server's registry claim/);
$a->query(claim_sql());
cmp_ok($a->next_id('a new claim ends the fence'), '>', $last, 'above the last ID before the release');

# --- Item 3: a claim that commits while a release of the node is under way never reopens its
# fence.  The claim (a renewal) holds the row; the release fences, then waits for the row; the
# claim commits; before the release commits, no ID may pass the ms the release will record.

my $before_race = $a->next_id('before the race', claim_sql());
my $claimer = $a->background;
$claimer->query_safe("BEGIN;\n" . claim_sql());
my $releaser = $a->background;
$releaser->query_safe('BEGIN');
$releaser->query_until(qr/releasing/,
	"\\echo releasing\nSELECT public.snowflake_release_node('public.reg');\n");
$a->wait_for_active('SELECT public.snowflake_release_node%', "wait_event_type = 'Lock'");
$claimer->query_safe('COMMIT');
$claimer->quit;
my $race = $a->next_refused('while the release is under way, after a concurrent claim committed', '',
	message => qr/refused: the ID would pass the bound of this server's registry claim/);
$releaser->query_safe('COMMIT');
$releaser->quit;
my $released_ms = $a->query('SELECT high_water_ms FROM public.reg WHERE (datacenter_id, machine_id) = (1, 1)');
foreach my $id ($before_race, @{ $race->{ids} })
{
	cmp_ok(SnowflakeTest::id_unix_ms($id), '<=', $released_ms, "the released row's high_water_ms covers ID $id");
}
$a->next_refused('after the release committed', '', message => qr/holds no current registry claim/);
$a->query(claim_sql());

# --- Item 4: rows no genuine holder could have written are refused, never applied.

# The durable mark stays within an hour of the clock (ticks: ms since the Snowflake epoch).
sub mark_near_clock
{
	my ($what) = @_;
	cmp_ok($a->state_file_mark, '<', 1000 * time + 90000 + 3600000 - SnowflakeTest::id_unix_ms(0), $what);
}
for my $case (
	[ 'a null high_water_ms', "NULL", '22004', qr/registry row for datacenter 1, machine 1 has no high_water_ms/ ],
	[ 'a negative high_water_ms', "-5", '22003', qr/registry row for datacenter 1, machine 1 carries high_water_ms -5, beyond/ ],
	[ 'a high_water_ms in 2080', "3471292800000", '22003', qr/carries high_water_ms 3471292800000, beyond/ ],
	[ 'a high_water_ms a day ahead', "$now_ms + 86400000", '22003', qr/carries high_water_ms \d+, beyond/ ])
{
	my ($what, $value, $state, $message) = @$case;
	$a->query("UPDATE public.reg SET owner = 'edited', expires_at = '-infinity', high_water_ms = $value
WHERE (datacenter_id, machine_id) = (1, 1)");
	$a->refused(claim_sql(), "a takeover of a row with $what", sqlstate => $state, message => $message);
	is($a->query('SELECT owner FROM public.reg WHERE (datacenter_id, machine_id) = (1, 1)'), 'edited',
		"the row with $what is not taken");
}
mark_near_clock('no refused row moved the durable mark');
my $before = $a->next_id('IDs are still issued under the old claim, from the clock');
cmp_ok(SnowflakeTest::id_unix_ms($before) - 1000 * time, '<', 120000, 'at the clock, not at a refused mark');

# note_claim itself refuses what no claim could have produced (as a superuser).
$a->refused("SELECT public.snowflake_note_claim(1, 1, now() + interval '2 days', NULL)",
	'note_claim with a lease past one day', sqlstate => '22023', message => qr/until must be at most one day ahead/);
$a->refused("SELECT public.snowflake_note_claim(1, 1, now() + interval '1 minute', -1)",
	'note_claim carrying a negative mark', sqlstate => '22003', message => qr/carried_ms must be between 0 and/);
$a->refused("SELECT public.snowflake_note_claim(1, 1, now() + interval '1 minute', 3471292800000)",
	'note_claim carrying a mark in 2080', sqlstate => '22003', message => qr/carried_ms must be between 0 and/);
$a->refused("SELECT public.snowflake_note_claim(1, 1, now() + interval '1 minute', -9223372036854775807)",
	'note_claim carrying the lowest bigint', sqlstate => '22003', message => qr/carried_ms must be between 0 and/);
mark_near_clock('nor did a refused note_claim');

# --- Lesser: two takeovers of one row through postgres_fdw at the same moment.  The remote side
# runs REPEATABLE READ: the loser's raw serialization failure becomes a clear 40001.

my ($host, $port) = ($a->node->host, $a->node->port);
$a->query(qq{
CREATE EXTENSION postgres_fdw;
CREATE SERVER loop FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$host', port '$port', dbname 'postgres', connect_timeout '2');
CREATE USER MAPPING FOR CURRENT_USER SERVER loop;
CREATE FOREIGN TABLE public.freg (datacenter_id int, machine_id int, owner text, claimed_at timestamptz,
    expires_at timestamptz, high_water_ms bigint) SERVER loop OPTIONS (schema_name 'public', table_name 'reg');
});
old_holder_row('old-holder-4', 0);
my $first = $a->background;
$first->query_safe("BEGIN;\nSELECT public.snowflake_claim_node('public.freg', '1 minute');");
my $second = $a->background;
$second->query_until(qr/claiming/, "\\echo claiming\nSELECT public.snowflake_claim_node('public.freg', '1 minute');\n");
$a->wait_for_active('%', "wait_event_type = 'Lock'");
$first->query_safe('COMMIT');
$first->quit;
$second->query('SELECT 1');
like($second->{stderr}, qr/ERROR:\s+40001:\s+datacenter 1, machine 1 is being claimed by another server at this moment/,
	'the second concurrent takeover fails with a clear 40001');
$second->quit;

$a->set_clock('+0');
$a->stop;
done_testing();
