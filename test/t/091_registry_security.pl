# 091_registry_security.pl: claiming a node never runs code a less privileged
# role planted, with a superuser's rights.
#
# A hostile role with only CREATE on the database plants a schema named after
# the bootstrap superuser, holding a table of the registry's name with a
# trigger that would make it a superuser; given TRIGGER on the real registry
# (a careless grant), it plants the same trigger there.  Neither a superuser
# claiming by hand nor the registry worker may run them: the hostile role must
# never become rolsuper.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('s');
$node->init;
$node->append_conf(
	'postgresql.conf', q(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 4
snowflake.machine_id = 2
));
$node->start;

my $su = $node->safe_psql('postgres', 'SELECT current_user');

# psql that must fail: returns stderr.
sub fails
{
	my ($sql, $what, %params) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql", %params);
	isnt($ret, 0, "$what: fails");
	return $err;
}

sub hostile_is_superuser
{
	return $node->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = 'hostile'");
}

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION snowflake;
CREATE TABLE public.snowflake_registry (
    datacenter_id int NOT NULL,
    machine_id    int NOT NULL,
    owner         text NOT NULL,
    claimed_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    high_water_ms bigint,
    PRIMARY KEY (datacenter_id, machine_id)
);
CREATE ROLE hostile LOGIN;
GRANT CREATE ON DATABASE postgres TO hostile;
});

# The plant: a schema first in the superuser's search_path ("\$user").
$node->safe_psql(
	'postgres', qq{
CREATE SCHEMA "$su";
CREATE TABLE "$su".snowflake_registry (datacenter_id int, machine_id int, owner text,
    claimed_at timestamptz, expires_at timestamptz, high_water_ms bigint,
    PRIMARY KEY (datacenter_id, machine_id));
CREATE FUNCTION "$su".escalate() RETURNS trigger LANGUAGE plpgsql AS
\$\$BEGIN ALTER ROLE hostile SUPERUSER; RETURN NEW; END\$\$;
CREATE TRIGGER escalate BEFORE INSERT OR UPDATE ON "$su".snowflake_registry
    FOR EACH ROW EXECUTE FUNCTION "$su".escalate();
}, extra_params => [ '-U', 'hostile' ]);
is(hostile_is_superuser(), 'f', 'hostile starts unprivileged');

# A superuser claims by hand with an unqualified name: the planted table is found, and refused.
my $err = fails("SELECT snowflake_claim_node('snowflake_registry')", 'a superuser claims through the planted table');
like($err, qr/42501: registry "?\Q$su\E"?\.snowflake_registry is owned by role hostile, which does not have the rights of role "?\Q$su\E"?/,
	'the claim refuses a registry owned by a role without the caller\'s rights');
is(hostile_is_superuser(), 'f', 'the planted trigger did not run as superuser');
$err = fails("SELECT snowflake_release_node('snowflake_registry')", 'a superuser releases through the planted table');
like($err, qr/42501: registry .* is owned by role hostile/, 'so does the release');
is(hostile_is_superuser(), 'f', 'still not superuser');

# A careless grant lets hostile put a trigger on the real registry.
$node->safe_psql('postgres', 'GRANT TRIGGER ON public.snowflake_registry TO hostile');
$node->safe_psql(
	'postgres', qq{
CREATE TRIGGER escalate BEFORE INSERT OR UPDATE ON public.snowflake_registry
    FOR EACH ROW EXECUTE FUNCTION "$su".escalate();
}, extra_params => [ '-U', 'hostile' ]);
$err = fails("SELECT snowflake_claim_node('public.snowflake_registry')", 'a superuser claims the registry carrying the trigger');
like($err, qr/42501: registry public.snowflake_registry carries trigger escalate/,
	'the claim refuses a registry carrying a trigger');
is(hostile_is_superuser(), 'f', 'the trigger on the real registry did not run as superuser');
is($node->safe_psql('postgres', 'SELECT count(*) FROM public.snowflake_registry'), '0', 'and nothing was claimed');

# --- The registry worker.

# An unqualified registry name is refused at start (a warning: the worker does not run).
$node->append_conf('postgresql.conf', "snowflake.registry = 'snowflake_registry'\n");
$node->restart;
like(slurp_file($node->logfile), qr/snowflake.registry must be a schema-qualified table name, not "snowflake_registry"/,
	'an unqualified snowflake.registry is refused, saying it must be schema-qualified');
is($node->safe_psql('postgres', 'SHOW snowflake.registry'), '', 'and no registry is used');
$node->stop;

# Qualified, with the default (empty) registry role: the worker claims nothing.
$node->append_conf('postgresql.conf', qq(
snowflake.registry = 'public.snowflake_registry'
snowflake.registry_lease_ms = 3000
));
$node->start;
ok($node->wait_for_log(qr/snowflake could not claim this server's node in registry "public.snowflake_registry": snowflake.registry_role is not set/),
	'without snowflake.registry_role the worker does not claim');

# An unprivileged claimer role, with only what the claim needs, and a default that records
# who runs the claim (a registry may carry no trigger).
$node->safe_psql(
	'postgres', q{
CREATE ROLE claimer;
GRANT SELECT, INSERT, UPDATE ON public.snowflake_registry TO claimer;
GRANT EXECUTE ON FUNCTION snowflake_claim_node(regclass, interval),
    snowflake_note_claim(int, int, timestamptz, bigint) TO claimer;
ALTER TABLE public.snowflake_registry ADD COLUMN claimed_by name DEFAULT current_user;
ALTER SYSTEM SET snowflake.registry_role = 'claimer';
SELECT pg_reload_conf();
});

# The hostile trigger is still there: the worker refuses it too.
ok($node->wait_for_log(qr/snowflake could not claim this server's node in registry "public.snowflake_registry": registry public.snowflake_registry carries trigger escalate/),
	'the worker refuses the registry while the hostile trigger is on it');
is(hostile_is_superuser(), 'f', 'the worker did not run the hostile trigger');

$node->safe_psql('postgres', 'DROP TRIGGER escalate ON public.snowflake_registry');
ok($node->poll_query_until('postgres', 'SELECT count(*) > 0 FROM public.snowflake_registry'),
	'without it, the worker claims the node');
is($node->safe_psql('postgres', 'SELECT claimed_by FROM public.snowflake_registry'), 'claimer',
	'the worker claims as snowflake.registry_role');
is(hostile_is_superuser(), 'f', 'hostile never became superuser');

# Naming a superuser as the registry role is refused.
$node->safe_psql('postgres', "ALTER ROLE claimer SUPERUSER");
ok($node->wait_for_log(qr/snowflake.registry_role "claimer" is a superuser/),
	'the worker refuses to claim as a superuser');

$node->stop;
done_testing();
