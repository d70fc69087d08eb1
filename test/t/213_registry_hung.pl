# 213_registry_hung.pl: a registry server that accepts connections but never
# answers must not hang the registry worker or the server's shutdown (outside
# attack on issue 17, F3).  PostgreSQL 15's postgres_fdw connects without a
# timeout of its own, and cannot be interrupted while it connects: a foreign
# registry's server must carry connect_timeout, at most half the lease.
#
# The registry server's postmaster is stopped (kill -STOP): the kernel still
# accepts connections on its socket, nothing answers.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $r = PostgreSQL::Test::Cluster->new('registry');
$r->init;
$r->start;
$r->safe_psql('postgres', q{CREATE TABLE public.snowflake_registry (
    datacenter_id int NOT NULL, machine_id int NOT NULL, owner text NOT NULL,
    claimed_at timestamptz NOT NULL, expires_at timestamptz NOT NULL, high_water_ms bigint,
    PRIMARY KEY (datacenter_id, machine_id))});
my $r_user = $r->safe_psql('postgres', 'SELECT current_user');
my ($host, $port) = ($r->host, $r->port);

my $w = PostgreSQL::Test::Cluster->new('writer');
$w->init;
$w->append_conf(
	'postgresql.conf', q(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 5
snowflake.machine_id = 6
snowflake.require_claim = on
snowflake.registry = 'public.snowflake_registry'
snowflake.registry_role = 'claimer'
snowflake.registry_lease_ms = 10000
));
$w->start;
my $offset = -s $w->logfile;
# A foreign server without connect_timeout: refused, with the option and the fix named.
$w->safe_psql(
	'postgres', qq{
CREATE EXTENSION snowflake;
CREATE EXTENSION postgres_fdw;
CREATE ROLE claimer;
GRANT EXECUTE ON FUNCTION public.snowflake_claim_node(regclass, interval),
    public.snowflake_note_claim(int, int, timestamptz, bigint) TO claimer;
CREATE SERVER fleet FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$host', port '$port', dbname 'postgres');
CREATE USER MAPPING FOR CURRENT_USER SERVER fleet;
CREATE USER MAPPING FOR claimer SERVER fleet OPTIONS (user '$r_user', password_required 'false');
IMPORT FOREIGN SCHEMA public LIMIT TO (snowflake_registry) FROM SERVER fleet INTO public;
GRANT SELECT, INSERT, UPDATE ON public.snowflake_registry TO claimer;
});
ok($w->wait_for_log(qr/WARNING:  snowflake could not claim this server's node in registry "public.snowflake_registry": foreign server fleet of registry public.snowflake_registry has no connect_timeout/, $offset),
	'the worker refuses a foreign server without connect_timeout, and says so');
my ($ret, $out, $err) = $w->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT public.snowflake_claim_node('public.snowflake_registry'::regclass, '1 minute'::interval)");
like($err, qr/42P17: foreign server fleet of registry public.snowflake_registry has no connect_timeout/, 'so does a by-hand claim (42P17)');
like($err, qr/HINT:  Run ALTER SERVER fleet OPTIONS \(ADD connect_timeout '10'\)/, 'and the hint gives the fix');
($ret, $out, $err) = $w->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT public.snowflake_release_node('public.snowflake_registry'::regclass)");
like($err, qr/42P17: foreign server fleet of registry public.snowflake_registry has no connect_timeout/, 'and a release');
is($r->safe_psql('postgres', 'SELECT count(*) FROM public.snowflake_registry'), '0', 'nothing was claimed');

# One not well inside the lease.
$w->safe_psql('postgres', q{ALTER SERVER fleet OPTIONS (ADD connect_timeout '30')});
($ret, $out, $err) = $w->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT public.snowflake_claim_node('public.snowflake_registry'::regclass, '59 seconds'::interval)");
like($err, qr/22023: connect_timeout 30 of foreign server fleet is too long for a lease of 00:00:59/, 'a connect_timeout above half the lease is refused');
($ret, $out, $err) = $w->psql('postgres', "SELECT public.snowflake_claim_node('public.snowflake_registry'::regclass, '1 minute'::interval)");
is($ret, 0, 'half the lease is accepted');
$w->safe_psql('postgres', q{ALTER SERVER fleet OPTIONS (SET connect_timeout '0')});
($ret, $out, $err) = $w->psql('postgres', "SELECT public.snowflake_claim_node('public.snowflake_registry'::regclass, '1 minute'::interval)");
like($err, qr/has no connect_timeout/, 'connect_timeout 0 (no timeout) is refused');

$offset = -s $w->logfile;
$w->safe_psql('postgres', q{ALTER SERVER fleet OPTIONS (SET connect_timeout '2')});
ok($w->wait_for_log(qr/snowflake claimed this server's node in registry "public.snowflake_registry" again/, $offset),
	'with connect_timeout 2 the worker claims');

# Hang the registry: its postmaster stops answering, and the fdw sessions it has are ended.
my $pids = $r->safe_psql('postgres',
	"SELECT string_agg(pid::text, ' ') FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()");
my $pm = (split /\n/, slurp_file($r->data_dir . '/postmaster.pid'))[0];
$offset = -s $w->logfile;
kill 'STOP', $pm;
kill 'TERM', split(/ /, $pids) if $pids ne '';
# PostgreSQL 15 waits in libpq's connect until connect_timeout; from 17 on the connect is
# interruptible and the claim's statement timeout may end it first: either is a logged failure.
my $ok = eval {
	$w->wait_for_log(
		qr/WARNING:  snowflake could not claim this server's node in registry "public.snowflake_registry": (could not connect to server "fleet"|canceling statement due to statement timeout)/,
		$offset);
};
ok($ok, 'with the registry hung, the worker logs that it cannot connect');
my $stopped = eval { $w->stop('fast'); 1 };
kill 'CONT', $pm;
ok($stopped, 'and the writer stops with pg_ctl -m fast while the registry still hangs');
$r->stop;

done_testing();
