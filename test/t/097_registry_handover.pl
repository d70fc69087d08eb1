# 097_registry_handover.pl: a claim counts only once it commits, it is checked
# where the ID is taken, and handing a node over carries its high-water mark.
#
# Servers a and b share node (1, 1) under snowflake.require_claim, through a
# registry on a third server reached with postgres_fdw; a also has a local
# registry for the transaction tests.  Every ID of a and b goes through one
# record (id_key 'node'): across the handovers each must be above all before.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

my $registry_ddl = q{
    datacenter_id int NOT NULL,
    machine_id    int NOT NULL,
    owner         text NOT NULL,
    claimed_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    high_water_ms bigint,
    PRIMARY KEY (datacenter_id, machine_id)
};

my $r = PostgreSQL::Test::Cluster->new('registry');
$r->init;
$r->start;
$r->safe_psql('postgres', "CREATE TABLE public.snowflake_registry ($registry_ddl)");

# The clock is stepped forward on purpose: the forward-jump hold is off here (130 tests it).
my $conf = "snowflake.require_claim = on\nmax_prepared_transactions = 2\nsnowflake.max_clock_jump_ms = 0\n";
my $a = SnowflakeTest->new('a', conf => $conf, id_key => 'node');
my $b = SnowflakeTest->new('b', conf => $conf, id_key => 'node');
foreach my $n ($a, $b)
{
	$n->start;
	my ($host, $port) = ($r->host, $r->port);
	$n->query(qq{
CREATE EXTENSION snowflake;
CREATE EXTENSION postgres_fdw;
CREATE SERVER fleet FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$host', port '$port', dbname 'postgres', connect_timeout '2');
CREATE USER MAPPING FOR CURRENT_USER SERVER fleet;
IMPORT FOREIGN SCHEMA public LIMIT TO (snowflake_registry) FROM SERVER fleet INTO public;
});
}
$a->query("CREATE TABLE public.local_registry ($registry_ddl)");

my $no_claim = qr/refused: this server holds no current registry claim for datacenter 1, machine 1/;
my $past_bound = qr/refused: the ID would pass the bound of this server's registry claim for datacenter 1, machine 1/;
sub claim_sql
{
	my ($registry, $lease) = @_;
	return "DO \$\$BEGIN PERFORM snowflake_claim_node('$registry', '$lease'); END\$\$;";
}
my $release_local = "DO \$\$BEGIN PERFORM snowflake_release_node('public.local_registry'); END\$\$;";

# --- Item 5: the claim counts from its commit.

$a->next_refused('never claimed', '', message => $no_claim);
$a->next_refused('a claim whose transaction rolled back',
	"BEGIN;\n" . claim_sql('public.local_registry', '1 minute') . "\nROLLBACK;", message => $no_claim);
$a->next_refused('a claim whose savepoint rolled back',
	"BEGIN;\nSAVEPOINT s;\n" . claim_sql('public.local_registry', '1 minute') . "\nROLLBACK TO SAVEPOINT s;\nCOMMIT;",
	message => $no_claim);
$a->next_refused('generation inside the claiming transaction, before its commit',
	"BEGIN;\n" . claim_sql('public.local_registry', '1 minute'), message => $no_claim);
$a->refused("BEGIN;\n" . claim_sql('public.local_registry', '1 minute') . "\nPREPARE TRANSACTION 'claim';",
	'a claim in a prepared transaction', sqlstate => '0A000',
	message => qr/cannot PREPARE a transaction that claimed or released a snowflake node/);
is($a->query('SELECT count(*) FROM pg_prepared_xacts'), '0', 'nothing was prepared');
is($a->query('SELECT count(*) FROM public.local_registry'), '0', 'no rolled-back claim left a registry row');
$a->next_refused('after the refused PREPARE', '', message => $no_claim);

$a->next_id('a claim in a savepoint released and committed counts',
	"BEGIN;\nSAVEPOINT s;\n" . claim_sql('public.local_registry', '1 minute') . "\nRELEASE SAVEPOINT s;\nCOMMIT;");

# A release fences at once and ends the lease at commit.
$a->next_refused('generation inside the releasing transaction',
	"BEGIN;\n$release_local", message => $past_bound);
# A release rolled back keeps its fence until the next claim (issue 17 item 2: a foreign
# registry may have committed it all the same).
$a->next_refused('a release rolled back keeps its fence', "BEGIN;\n$release_local\nROLLBACK;", message => $past_bound);
$a->next_id('until the next claim', claim_sql('public.local_registry', '1 minute'));
$a->next_refused('a release rolled back to its savepoint keeps its fence too',
	"BEGIN;\nSAVEPOINT s;\n$release_local\nROLLBACK TO SAVEPOINT s;\nCOMMIT;", message => $past_bound);
$a->next_id('until the next claim', claim_sql('public.local_registry', '1 minute'));
my $last_local = $a->next_id('last ID under the local claim');
is($a->query("SELECT snowflake_release_node('public.local_registry')"), 't', 'the holder releases');
$a->next_refused('after the release committed', '', message => $no_claim);
is( $a->query('SELECT high_water_ms, expires_at FROM public.local_registry'),
	id_unix_ms($last_local) . '|-infinity',
	'the released row stays, free to claim, carrying the ms of the last ID issued');

# --- Item 6: the lease is checked where the ID is taken, not before a wait.

$a->query(claim_sql('public.local_registry', '5 seconds'));
$a->next_id('under a 5 s lease');
$a->set_clock(frozen_time(time + 2));    # before the lease ends; frozen: the run must wait
my $bg = $a->background;
$bg->query_safe('SET snowflake.max_wait_ms = 60000');
$bg->query_until(qr/waiting/, "\\echo waiting\nSELECT count(*) FROM snowflake_next_n(5000);\n");
$a->wait_for_active('SELECT count(*) FROM snowflake_next_n%');
usleep(500_000);
$a->set_clock('+60');                    # the wait ends past the lease's end
my $out = $bg->query('SELECT 1');
is($out, '1', 'the call that waited past the end of its lease issued no ID');
like($bg->{stderr}, qr/ERROR:\s+55000:\s+snowflake_next_n\(\) $no_claim/,
	'it is refused for the lease that ended while it waited');
$bg->quit;
$a->set_clock('+0');

# --- Issue 14 item 4: a non-holder cannot release another server's claim.

$a->query(claim_sql('public.snowflake_registry', '1 minute'));
$a->ids('SELECT snowflake_next() FROM generate_series(1, 100)', 'a under its claim', count => 100);
my $a_id = $a->query('SELECT snowflake_server_identity()');
my $row = $r->safe_psql('postgres', 'SELECT owner, expires_at, high_water_ms FROM snowflake_registry');
is($b->query("SELECT snowflake_release_node('public.snowflake_registry')"), 'f',
	'a server that does not hold the node releases nothing');
is($r->safe_psql('postgres', 'SELECT owner, expires_at, high_water_ms FROM snowflake_registry'),
	$row, "the holder's row is unchanged");
like($row, qr{^\Q$a_id\E/[0-9a-f]{16}\|}, 'and names a (identity/claim token)');
my $last_a = $a->next_id('a still generates after b tried to release');

# --- Item 7: release on a, claim on b whose clock is 20 s behind.

is($a->query("SELECT snowflake_release_node('public.snowflake_registry')"), 't', 'a releases the node');
is($r->safe_psql('postgres', 'SELECT high_water_ms FROM snowflake_registry'), id_unix_ms($last_a),
	'the registry carries the ms of the last ID a issued');
$a->next_refused('a after releasing', '', message => $no_claim);

$b->set_clock('-20');
$b->query(claim_sql('public.snowflake_registry', '1 minute'));
my $res = $b->next_refused('b, 20 s behind, right after taking the node over', '',
	message => qr/refused: the system clock is behind the IDs already issued/);
# (the clock runs on between a's last ID and this check: seconds on a loaded machine)
cmp_ok(SnowflakeTest::detail_ms($res) // 0, '>=', 15000, 'b is refused as for a clock 20 s back');

# A crash of b before its first ID must not forget the mark it took over (no clean shutdown
# records the lifted node: the takeover raised the durable mark itself).  The postmaster
# survives (a crash of a server process: shared memory made anew, the durable mark read
# again), so b keeps its claim tokens and renews at once; a start after the postmaster itself
# was killed waits out b's own lease first (220_registry_clone.pl).
$b->node->append_conf('postgresql.conf', 'restart_after_crash = on');
$b->node->reload;
my $crash_at = -s $b->node->logfile;
kill 'KILL', $b->child_pid(qr/checkpointer/);
$b->node->wait_for_log(qr/all server processes terminated; reinitializing/, $crash_at);
$b->node->poll_query_until('postgres', 'SELECT true');
$b->query(claim_sql('public.snowflake_registry', '1 minute'));
$b->next_refused('b after a crash, renewing its own claim, clock still 20 s behind', '',
	message => qr/refused: the system clock is behind the IDs already issued/);

$b->set_clock('+0');
my $first_b = $b->next_id('b once its clock passes the mark a left');
cmp_ok($first_b, '>', $last_a, "b's first ID is above a's last");

# --- Item 7: a lease that ends while its holder ran ahead under max_lead_ms.
# (4-second lease: a foreign registry's connect_timeout, 2 s at least, may be at most half the lease)

my $last_b = $b->next_id('last ID of b');
is($b->query("SELECT snowflake_release_node('public.snowflake_registry')"), 't', 'b releases the node');
my $f = time + 30;
$a->set_clock(frozen_time($f));          # a's clock stands still: IDs run ahead of it
$a->query("SET snowflake.max_lead_ms = 3000;\n" . claim_sql('public.snowflake_registry', '4 seconds'));
my ($ahead) = $a->ids("SET snowflake.max_lead_ms = 3000;\nSELECT max(i) FROM snowflake_next_n(10000000) i;",
	'a runs 2.4 s ahead of its clock, within its lease and max_lead_ms', count => 1);
cmp_ok(id_unix_ms($ahead) - 1000 * $f, '>', 2400, 'a issued IDs 2.4 s past its clock');
is($r->safe_psql('postgres', 'SELECT high_water_ms FROM snowflake_registry'), 1000 * $f + 4000 + 3000,
	'the registry carries the bound of a\'s claim: its lease\'s end plus its max_lead_ms');

# a stops renewing; b, its clock past a's lease but behind a's IDs, takes over.
$b->set_clock(frozen_time($f + 5));
$b->query(claim_sql('public.snowflake_registry', '1 minute'));
$b->next_refused('b after a lease ended under a holder that ran ahead', 'SET snowflake.max_wait_ms = 0;',
	message => qr/refused: the system clock is behind the IDs already issued/);

# a, its clock stuck inside its old lease, still never passes the bound b started above.
$a->refused("SET snowflake.max_lead_ms = 10000;\nSELECT max(i) FROM generate_series(1, 2) g, LATERAL snowflake_next_n(10000001 - g) i;",
	'a running past the bound of its claim', message => qr/snowflake_next_n\(\) $past_bound/);

$b->set_clock(frozen_time($f + 8));
my $b_after = $b->next_id('b once its clock passes the bound of a\'s claim');
cmp_ok($b_after, '>', $ahead, "b's ID is above every ID a issued");

$a->set_clock('+0');
$b->set_clock('+0');
$a->summary;
$a->stop;
$b->stop;
$r->stop;
done_testing();
