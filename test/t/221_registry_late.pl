# 221_registry_late.pl: a claim counts only if its lease had not ended when it
# committed, and a registry backend that hangs on the worker's cached
# connection ends the worker's round by its timeouts, is logged, and stops
# generation at the lease's end (issue 17, item 8: tests for what the code
# already does).
#
# Deterministic: the writer runs under the clock shim, and the clock jumps
# past the lease while the claim waits (a by-hand claim inside an open
# transaction; the worker's claim on a registry row locked by another
# session).  The hung backend is the registry-side backend of the worker's
# cached postgres_fdw connection, stopped with SIGSTOP.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes;

my $r = PostgreSQL::Test::Cluster->new('registry');
$r->init;
$r->start;
$r->safe_psql('postgres', q{CREATE TABLE public.snowflake_registry (
    datacenter_id int NOT NULL, machine_id int NOT NULL, owner text NOT NULL,
    claimed_at timestamptz NOT NULL, expires_at timestamptz NOT NULL, high_water_ms bigint,
    PRIMARY KEY (datacenter_id, machine_id))});
my $r_user = $r->safe_psql('postgres', 'SELECT current_user');
my ($host, $port) = ($r->host, $r->port);

my $w = SnowflakeTest->new(
	'writer',
	clock => 'shim',
	conf => q(
snowflake.datacenter_id = 9
snowflake.machine_id = 4
snowflake.require_claim = on
snowflake.max_clock_jump_ms = 0    # the clock jumps past leases here
));
$w->start;
$w->query(qq{
CREATE EXTENSION snowflake;
CREATE EXTENSION postgres_fdw;
CREATE ROLE claimer;
GRANT EXECUTE ON FUNCTION public.snowflake_claim_node(regclass, interval),
    public.snowflake_note_claim(int, int, timestamptz, bigint),
    public.snowflake_release_node(regclass), public.snowflake_note_release(int, int) TO claimer;
CREATE SERVER fleet FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '$host', port '$port', dbname 'postgres', connect_timeout '2', application_name 'fleet_claim');
CREATE USER MAPPING FOR CURRENT_USER SERVER fleet OPTIONS (user '$r_user');
CREATE USER MAPPING FOR claimer SERVER fleet OPTIONS (user '$r_user', password_required 'false');
IMPORT FOREIGN SCHEMA public LIMIT TO (snowflake_registry) FROM SERVER fleet INTO public;
GRANT SELECT, INSERT, UPDATE ON public.snowflake_registry TO claimer;
});
my $claim = q{SELECT public.snowflake_claim_node('public.snowflake_registry'::regclass, '10 seconds'::interval)};

# --- By hand: the clock passes the lease's end before COMMIT.

my $bg = $w->background;
$bg->query_safe('BEGIN');
$bg->query_safe($claim);
$w->set_clock_ms(20_000);
$bg->query_safe('COMMIT');
is($r->safe_psql('postgres', 'SELECT count(*) FROM public.snowflake_registry'), '1', 'the claim committed in the registry');
$w->next_refused('a claim that committed after its lease ended does not count', undef,
	message => qr/this server holds no current registry claim for datacenter 9, machine 4/);

# The same claim, committed inside its lease, counts: the check above can fail.
$bg->query_safe('BEGIN');
$bg->query_safe($claim);
$bg->query_safe('COMMIT');
$w->ids('SELECT snowflake_next()', 'the same claim committed inside its lease', count => 1);
is($w->query(q{SELECT public.snowflake_release_node('public.snowflake_registry'::regclass)}), 't', 'released');
$bg->quit;

# --- The worker: its claim waits on a registry row locked by another session
# while the clock passes the lease's end; when it commits it must not count.

$w->node->append_conf('postgresql.conf', q(
snowflake.registry = 'public.snowflake_registry'
snowflake.registry_role = 'claimer'
snowflake.registry_lease_ms = 300000
));
$w->restart;
ok($w->node->poll_query_until('postgres', 'SELECT snowflake_next() > 0'), 'the worker claims the node');

my $lock = $r->background_psql('postgres', on_error_stop => 0);
$lock->query_safe('BEGIN');
$lock->query_safe('SELECT * FROM public.snowflake_registry FOR UPDATE');
my $offset = -s $w->node->logfile;
$w->node->reload;    # wakes the worker: a round at once
ok($r->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = 'fleet_claim' AND wait_event_type = 'Lock'}),
	'the worker\'s claim waits for the locked registry row');
$w->set_clock_ms(20_000 + 400_000);
$lock->query_safe('COMMIT');
ok($w->node->wait_for_log(qr/WARNING:  snowflake could not claim this server's node in registry "public.snowflake_registry": the claim committed after its lease had ended \(\d+ ms ago\): it does not count/, $offset),
	'the worker\'s claim that committed after its lease ended does not count, and is logged');
$w->next_refused('no ID under it', undef, message => qr/this server holds no current registry claim/);
# A reload wakes the worker for its next round at once (it sets the worker's
# latch; the configuration stays the same) instead of 5 s after the failed one.
$w->node->reload;
ok($w->node->poll_query_until('postgres', 'SELECT snowflake_next() > 0'), 'the next round claims the node again');
ok($w->node->wait_for_log(qr/LOG:  snowflake claimed this server's node in registry "public.snowflake_registry" again/, $offset),
	'and says so');
$lock->quit;

# --- The registry backend of the worker's cached connection hangs.

$w->node->append_conf('postgresql.conf', 'snowflake.registry_lease_ms = 6000');
$w->node->reload;
ok($w->node->poll_query_until('postgres',
		q{SELECT expires_at < now() + interval '7 seconds' FROM public.snowflake_registry}),
	'the worker renews with the short lease');

# The registry backend of the worker's connection (the oldest of its
# application_name that is not one given).
sub worker_backend
{
	my ($not) = @_;
	return $r->safe_psql('postgres',
		qq{SELECT pid FROM pg_stat_activity WHERE application_name = 'fleet_claim'
  AND backend_type = 'client backend' AND pid <> $not ORDER BY backend_start LIMIT 1});
}
my $remote = worker_backend(0);
like($remote, qr/^\d+$/, 'the registry backend that serves the worker\'s cached connection');
$offset = -s $w->node->logfile;
kill 'STOP', $remote;
ok($w->node->wait_for_log(qr/WARNING:  snowflake could not claim this server's node in registry "public.snowflake_registry": canceling statement due to statement timeout/, $offset),
	'a hung cached connection: the worker\'s round ends by its statement timeout, and is logged');
ok($w->node->wait_for_log(qr/LOG:  snowflake claimed this server's node in registry "public.snowflake_registry" again/, $offset),
	'the worker drops that connection and claims through a new one');
$w->ids('SELECT snowflake_next()', 'so generation goes on', count => 1);

# A registry backend that hangs in the middle of a claim (stopped while it
# waits for the node's row).  The worker's statement timeout cancels the claim;
# PostgreSQL 15's postgres_fdw then waits up to 30 s for the cancel's answer
# before it drops the connection: no renewal meanwhile, and generation stops
# at the lease's end.  Then the round ends, is logged, and a new connection
# claims again.
$lock = $r->background_psql('postgres', on_error_stop => 0);
$lock->query_safe('BEGIN');
$lock->query_safe('SELECT * FROM public.snowflake_registry FOR UPDATE');
$offset = -s $w->node->logfile;
$w->node->reload;    # a round at once
ok($r->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = 'fleet_claim' AND wait_event_type = 'Lock'}),
	'the worker\'s claim waits for the locked registry row');
my $remote2 = $r->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE application_name = 'fleet_claim' AND wait_event_type = 'Lock'});
kill 'STOP', $remote2;
$lock->query_safe('COMMIT');
$lock->quit;
my $stopped = 0;
for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
{
	my $res = $w->run('SELECT snowflake_next()');
	$stopped = 1, last if $res->{ret} != 0 && ($res->{sqlstate} // '') eq '55000';
	Time::HiRes::usleep(100_000);
}
ok($stopped, 'generation stops at the lease\'s end while the registry backend hangs');
$w->next_refused('no ID', undef, message => qr/this server holds no current registry claim/);
ok($w->node->wait_for_log(qr/WARNING:  snowflake could not claim this server's node in registry "public.snowflake_registry": canceling statement due to statement timeout/, $offset),
	'the worker\'s round ends by its timeout, and is logged');
kill 'CONT', $remote2;
kill 'CONT', $remote;
ok($w->node->poll_query_until('postgres', 'SELECT snowflake_next() > 0'), 'once the registry answers, the worker claims again');
ok($w->node->wait_for_log(qr/snowflake claimed this server's node in registry "public.snowflake_registry" again/, $offset),
	'and says so');

done_testing();
