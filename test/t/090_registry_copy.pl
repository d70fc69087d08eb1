# 090_registry_copy.pl: the node-id guard.
#
# A data directory copied from a base backup and started as its own primary
# refuses to generate until snowflake_adopt_state(); a registry shared through
# postgres_fdw lets only one live server claim a (datacenter, machine), and
# with snowflake.require_claim a server generates only under its own claim.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $conf = qq(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 4
snowflake.machine_id = 2
);

# psql that must fail: returns stderr.
sub fails
{
	my ($node, $sql, $what) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	isnt($ret, 0, "$what: fails");
	return $err;
}

# --- A copied data directory.

my $a = PostgreSQL::Test::Cluster->new('a');
$a->init(allows_streaming => 1);
$a->append_conf('postgresql.conf', $conf);
$a->start;
$a->safe_psql('postgres', 'CREATE EXTENSION snowflake; CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next())');
$a->safe_psql('postgres', 'INSERT INTO t SELECT FROM generate_series(1, 1000)');

$a->backup('copy');
my $c = PostgreSQL::Test::Cluster->new('c');
$c->init_from_backup($a, 'copy', standby => 0);
$c->start;

my $err = fails($c, 'SELECT snowflake_next()', 'copy started as its own primary');
like($err, qr/55000: snowflake_next\(\) refused: this data directory is a copy/,
	'a copy refuses to generate under the node it was copied with');
like($err, qr/HINT:  If this server replaces that one for good.*snowflake_adopt_state/,
	'the hint names snowflake_adopt_state()');
like(slurp_file($c->logfile), qr/was written by another data directory/,
	'the copy is reported at start-up');
is($c->safe_psql('postgres', 'SELECT state, owner_directory <> this_directory FROM snowflake_state()'),
	'copy|t', 'snowflake_state() says copy, naming another owning directory');
is($a->safe_psql('postgres', 'SELECT count(*) > 0 FROM (SELECT snowflake_next()) s'), 't',
	'the original keeps generating');

# Only a superuser may adopt; adopting makes the copy generate above the mark.
$c->safe_psql('postgres', 'CREATE ROLE plain LOGIN');
my ($ret, $out, $perr) = $c->psql('postgres', 'SELECT snowflake_adopt_state()', extra_params => [ '-U', 'plain' ]);
like($perr, qr/permission denied for function snowflake_adopt_state/, 'adoption needs a superuser');
# A failed write leaves it a copy: snowflake.state.tmp as a directory makes the write fail.
my $c_tmp = $c->data_dir . '/snowflake.state.tmp';
mkdir $c_tmp or die "could not create $c_tmp: $!";
$err = fails($c, 'SELECT snowflake_adopt_state()', 'adoption while the state file cannot be written');
like($err, qr/could not create snowflake state file "snowflake\.state\.tmp": Is a directory/,
	'a failed adoption says what could not be written');
is($c->safe_psql('postgres', 'SELECT state FROM snowflake_state()'), 'copy', 'after a failed adoption it is still a copy');
fails($c, 'SELECT snowflake_next()', 'generation after a failed adoption');
rmdir $c_tmp or die "could not remove $c_tmp: $!";
is($c->safe_psql('postgres', 'SELECT snowflake_adopt_state()'), 't', 'snowflake_adopt_state() adopts a copy');
is($c->safe_psql('postgres', 'SELECT snowflake_adopt_state()'), 'f', 'adopting again is a no-op');
is($c->safe_psql('postgres', 'SELECT state, detail IS NULL, owner_directory = this_directory FROM snowflake_state()'),
	'ok|t|t', 'after adoption snowflake_state() says ok, this directory owns the state');
is( $c->safe_psql('postgres', 'SELECT snowflake_next() > (SELECT max(id) FROM t)'),
	't', 'after adoption, the copy issues IDs above every ID in the copied data');
$c->restart;
is($c->safe_psql('postgres', 'SELECT snowflake_next() > 0'), 't', 'adoption survives a restart');
$c->stop;

# --- A registry shared through postgres_fdw.

my $r = PostgreSQL::Test::Cluster->new('registry');
$r->init;
$r->start;
$r->safe_psql(
	'postgres', q{
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

my $b = PostgreSQL::Test::Cluster->new('b');
$b->init;
$b->append_conf('postgresql.conf', $conf);
$b->start;
$b->safe_psql('postgres', 'CREATE EXTENSION snowflake');

foreach my $n ($a, $b)
{
	my ($host, $port) = ($r->host, $r->port);
	$n->safe_psql(
		'postgres', qq{
CREATE EXTENSION postgres_fdw;
CREATE SERVER fleet FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$host', port '$port', dbname 'postgres', connect_timeout '2');
CREATE USER MAPPING FOR CURRENT_USER SERVER fleet;
IMPORT FOREIGN SCHEMA public LIMIT TO (snowflake_registry) FROM SERVER fleet INTO public;
ALTER SYSTEM SET snowflake.require_claim = on;
SELECT pg_reload_conf();
});
}
foreach my $n ($a, $b)
{
	$n->poll_query_until('postgres', "SELECT current_setting('snowflake.require_claim') = 'on'");
}

$err = fails($a, 'SELECT snowflake_next()', 'require_claim without a claim');
like($err, qr/55000: snowflake_next\(\) refused: this server holds no current registry claim for datacenter 4, machine 2/,
	'with require_claim on, no claim means no IDs');

my $until = $a->safe_psql('postgres', "SELECT snowflake_claim_node('snowflake_registry', '4 seconds')");
like($until, qr/^\d{4}-/, 'server a claims (4, 2)');
is($a->safe_psql('postgres', 'SELECT snowflake_datacenter_id(snowflake_next())'), '4', 'a generates under its claim');
is( $r->safe_psql('postgres', q{SELECT split_part(owner, '/', 1) FROM snowflake_registry}),
	$a->safe_psql('postgres', 'SELECT snowflake_server_identity()'),
	'the registry names a as the holder');

$err = fails($b, "SELECT snowflake_claim_node('snowflake_registry')", 'b claims the node a holds');
like($err, qr/55000: datacenter 4, machine 2 is claimed by another server/, 'a second live server cannot claim the node');
$err = fails($b, 'SELECT snowflake_next()', 'b generates without a claim');
like($err, qr/holds no current registry claim/, 'b does not generate under the node a holds');

# a renews: still its own.
$a->safe_psql('postgres', "SELECT snowflake_claim_node('snowflake_registry', '4 seconds')");
is($a->safe_psql('postgres', 'SELECT count(*) FROM snowflake_registry'), '1', 'renewal keeps one claim');

# a stops renewing (as if it died); once its lease ends, b may take over and a may not go on.
$b->poll_query_until('postgres',
	"SELECT expires_at < clock_timestamp() FROM snowflake_registry WHERE datacenter_id = 4 AND machine_id = 2");
$b->safe_psql('postgres', "SELECT snowflake_claim_node('snowflake_registry', '1 minute')");
is($b->safe_psql('postgres', 'SELECT snowflake_machine_id(snowflake_next())'), '2', 'b takes over after the lease ended');
$err = fails($a, 'SELECT snowflake_next()', 'a after its lease ended');
like($err, qr/holds no current registry claim/, 'a no longer generates once its lease ended');
$err = fails($a, "SELECT snowflake_claim_node('snowflake_registry')", 'a claims again');
like($err, qr/is claimed by another server/, 'a cannot claim back while b holds it');

# Release: b gives the node up, a can claim it.
is($b->safe_psql('postgres', "SELECT snowflake_release_node('snowflake_registry')"), 't', 'b releases the node');
fails($b, 'SELECT snowflake_next()', 'b after releasing');
$a->safe_psql('postgres', "SELECT snowflake_claim_node('snowflake_registry')");
is($a->safe_psql('postgres', 'SELECT snowflake_next() > 0'), 't', 'a claims the released node');

# Argument errors.
$err = fails($a, "SELECT snowflake_claim_node('snowflake_registry', '10 ms')", 'a lease too short');
like($err, qr/22023: lease must be between 1 second and 1 day/, 'the lease is range-checked');
$err = fails($a, "SET snowflake.datacenter_id = -1; SELECT snowflake_claim_node('snowflake_registry')", 'claim with the node unset');
like($err, qr/55000: snowflake.datacenter_id and snowflake.machine_id must be set/, 'claiming needs a node');
$err = fails($a, "SET snowflake.machine_id = -1; SELECT snowflake_release_node('snowflake_registry')", 'release with the node unset');
like($err, qr/55000: snowflake.datacenter_id and snowflake.machine_id must be set to release a node/, 'releasing needs a node');

# --- The registry worker: claims and renews by itself.

my $e = PostgreSQL::Test::Cluster->new('e');
$e->init;
$e->append_conf('postgresql.conf', $conf . qq(
snowflake.registry = 'public.snowflake_registry'
snowflake.registry_role = 'claimer'
snowflake.registry_lease_ms = 4000
snowflake.require_claim = on
));
$e->start;

# Before the extension exists in snowflake.registry_database, the worker says so and retries.
ok($e->wait_for_log(qr/snowflake could not claim this server's node in registry "public.snowflake_registry": extension "snowflake" is not installed in database "postgres"/),
	'the registry worker reports a missing extension, and keeps running');
my $log_at = -s $e->logfile;
$e->safe_psql('postgres', 'CREATE EXTENSION snowflake');
ok($e->wait_for_log(qr/snowflake could not claim this server's node in registry "public.snowflake_registry": role "claimer" named by snowflake.registry_role does not exist/, $log_at),
	'the registry worker reports a registry role that does not exist');
$log_at = -s $e->logfile;
$e->safe_psql('postgres', 'CREATE ROLE claimer SUPERUSER');
ok($e->wait_for_log(qr/snowflake.registry_role "claimer" is a superuser/, $log_at),
	'the registry worker refuses to claim as a superuser');
{
	my ($host, $port) = ($r->host, $r->port);
	my $r_user = $r->safe_psql('postgres', 'SELECT current_user');
	# The unprivileged role the worker claims as: only what the claim needs.
	$e->safe_psql(
		'postgres', qq{
ALTER ROLE claimer NOSUPERUSER;
CREATE EXTENSION postgres_fdw;
CREATE SERVER fleet FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$host', port '$port', dbname 'postgres', connect_timeout '2');
CREATE USER MAPPING FOR CURRENT_USER SERVER fleet;
CREATE USER MAPPING FOR claimer SERVER fleet OPTIONS (user '$r_user', password_required 'false');
IMPORT FOREIGN SCHEMA public LIMIT TO (snowflake_registry) FROM SERVER fleet INTO public;
GRANT SELECT, INSERT, UPDATE ON public.snowflake_registry TO claimer;
GRANT EXECUTE ON FUNCTION snowflake_claim_node(regclass, interval),
    snowflake_note_claim(int, int, timestamptz, bigint) TO claimer;
});
}
my $e_id = $e->safe_psql('postgres', 'SELECT snowflake_server_identity()');

# a holds (4, 2): the worker keeps trying, and e does not generate.
ok($e->wait_for_log(qr/snowflake could not claim this server's node in registry "public.snowflake_registry": datacenter 4, machine 2 is claimed by another server/),
	'the registry worker reports that another server holds the node');
fails($e, 'SELECT snowflake_next()', 'e while a holds the node');

# a releases: the worker takes the node, e generates, and the lease is renewed.
$a->safe_psql('postgres', "SELECT snowflake_release_node('snowflake_registry')");
ok($r->poll_query_until('postgres', "SELECT split_part(owner, '/', 1) = '$e_id' FROM snowflake_registry WHERE datacenter_id = 4 AND machine_id = 2"),
	'the registry worker claims the released node');
ok($e->poll_query_until('postgres', 'SELECT snowflake_machine_id(snowflake_next()) = 2'),
	'e generates under the claim its worker took');
my $first = $r->safe_psql('postgres', 'SELECT expires_at FROM snowflake_registry WHERE datacenter_id = 4 AND machine_id = 2');
ok($r->poll_query_until('postgres', "SELECT expires_at > '$first' FROM snowflake_registry WHERE datacenter_id = 4 AND machine_id = 2"),
	'the worker renews the lease');

# A restart loses the claim in shared memory; the worker takes it again.
$e->restart;
ok($e->poll_query_until('postgres', 'SELECT snowflake_machine_id(snowflake_next()) = 2'),
	'after a restart the worker claims again and e generates');

$e->stop;
$a->stop;
$b->stop;
$r->stop;
done_testing();
