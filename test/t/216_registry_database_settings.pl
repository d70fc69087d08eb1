# 216_registry_database_settings.pl: settings of snowflake.registry_database,
# which its owner may make, cannot stop the registry worker (attack 17b A2).
#
# The owner of the database (alice, not a superuser) sets role = 'alice' for
# it: every round of the worker then ran as alice and failed (permission
# denied for table pg_authid), and generation stopped server-wide at the end of
# the lease.  ALLOW_CONNECTIONS false stopped the worker at its next start.
# The worker now connects past ALLOW_CONNECTIONS, acts as the superuser it
# connected as whatever role or session_authorization the database sets, and
# overrides the settings that change how its SQL runs; a database a
# non-superuser owns (who can still rename or drop it) is named in a WARNING.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;


my $node = PostgreSQL::Test::Cluster->new('d');
$node->init;
$node->append_conf(
	'postgresql.conf', q(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 5
snowflake.machine_id = 6
snowflake.require_claim = on
));
$node->start;
my $su = $node->safe_psql('postgres', 'SELECT current_user');

$node->safe_psql('postgres', q{
CREATE EXTENSION snowflake;
CREATE ROLE alice LOGIN;
CREATE ROLE claimer LOGIN;
CREATE DATABASE app OWNER alice;
});
$node->safe_psql('app', q{
CREATE SCHEMA sf;
CREATE EXTENSION snowflake SCHEMA sf;
CREATE TABLE sf.snowflake_registry (
    datacenter_id int NOT NULL,
    machine_id    int NOT NULL,
    owner         text NOT NULL,
    claimed_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    high_water_ms bigint,
    PRIMARY KEY (datacenter_id, machine_id)
);
GRANT USAGE ON SCHEMA sf TO claimer;
GRANT EXECUTE ON FUNCTION sf.snowflake_claim_node(pg_catalog.regclass, interval),
    sf.snowflake_note_claim(int, int, timestamptz, bigint) TO claimer;
GRANT SELECT, INSERT, UPDATE ON sf.snowflake_registry TO claimer;
});
$node->safe_psql('postgres', q{
ALTER SYSTEM SET snowflake.registry = 'sf.snowflake_registry';
ALTER SYSTEM SET snowflake.registry_database = 'app';
ALTER SYSTEM SET snowflake.registry_role = 'claimer';
ALTER SYSTEM SET snowflake.registry_lease_ms = 4000;
});

# Restart, and wait until the worker's claim counts again (asked in database postgres: app may
# not accept connections, or set the role of whoever connects).
sub claims_after_restart
{
	my ($what) = @_;
	my $offset = -s $node->logfile;
	$node->restart;
	ok($node->poll_query_until('postgres', 'SELECT snowflake_next() > 0'), "the worker claims: $what");
	return $offset;
}

my $offset = claims_after_restart('a database owned by alice');
# (logged before the worker's first claim, which the generation above needed)
like(substr(slurp_file($node->logfile), $offset), qr/WARNING: .*snowflake.registry_database "app" is owned by role "alice", which is not a superuser/,
	'a WARNING names a registry_database a non-superuser owns');

# alice, as the database's owner, sets the role of every session there.
$node->safe_psql('postgres', q{ALTER DATABASE app SET role = 'alice'}, extra_params => [ '-U', 'alice' ]);
is($node->safe_psql('app', 'SELECT current_user'), 'alice', 'a superuser\'s session in app now runs as alice');
$offset = claims_after_restart('ALTER DATABASE app SET role = alice');
unlike(substr(slurp_file($node->logfile), $offset), qr/could not claim/, 'and no round failed');
$node->safe_psql('postgres', 'ALTER DATABASE app RESET ALL', extra_params => [ '-U', 'alice' ]);

# session_authorization, if PostgreSQL lets the owner set it for the database.
my ($ret, $out, $err) = $node->psql('postgres', q{ALTER DATABASE app SET session_authorization = 'alice'},
	extra_params => [ '-U', 'alice' ]);
if ($ret == 0)
{
	claims_after_restart('ALTER DATABASE app SET session_authorization = alice');
	$node->safe_psql('postgres', 'ALTER DATABASE app RESET ALL', extra_params => [ '-U', 'alice' ]);
}
else
{
	like($err, qr/session_authorization/, 'PostgreSQL refuses a database setting of session_authorization');
}

# Settings that change how an error ends, how the claim's SQL is read, or where it runs.
my $force_parallel = $node->safe_psql('postgres', 'SELECT current_setting(\'server_version_num\')::int >= 160000')
  eq 't' ? 'debug_parallel_query' : 'force_parallel_mode';
# PostgreSQL 19 accepts only standard_conforming_strings = on: the setting is gone as a lever there.
my $scs = SnowflakeTest::pg_major() >= 19 ? '' : 'ALTER DATABASE app SET standard_conforming_strings = off;';
$node->safe_psql('postgres', qq{
ALTER DATABASE app SET exit_on_error = on;
ALTER DATABASE app SET statement_timeout = '1ms';
ALTER DATABASE app SET lock_timeout = '1ms';
$scs
ALTER DATABASE app SET transform_null_equals = on;
ALTER DATABASE app SET default_transaction_read_only = on;
ALTER DATABASE app SET default_transaction_isolation = 'serializable';
ALTER DATABASE app SET max_parallel_workers_per_gather = 8;
ALTER DATABASE app SET $force_parallel = on;
}, extra_params => [ '-U', 'alice' ]);
$offset = claims_after_restart("exit_on_error, timeouts, standard_conforming_strings, read only, serializable, $force_parallel set for app");
$node->safe_psql('postgres', 'ALTER DATABASE app RESET ALL', extra_params => [ '-U', 'alice' ]);

# alice stops connections to app.
$node->safe_psql('postgres', 'ALTER DATABASE app ALLOW_CONNECTIONS false', extra_params => [ '-U', 'alice' ]);
$offset = claims_after_restart('ALTER DATABASE app ALLOW_CONNECTIONS false');
unlike(substr(slurp_file($node->logfile), $offset), qr/not currently accepting connections/, 'the worker was never refused');
$node->safe_psql('postgres', 'ALTER DATABASE app ALLOW_CONNECTIONS true', extra_params => [ '-U', 'alice' ]);

# A database a superuser owns: no WARNING.
$node->safe_psql('postgres', "ALTER DATABASE app OWNER TO \"$su\"");
$offset = claims_after_restart('a database owned by a superuser');
unlike(substr(slurp_file($node->logfile), $offset), qr/snowflake.registry_database "app" is owned by role/,
	'no WARNING for a database a superuser owns');

$node->stop;
done_testing();
