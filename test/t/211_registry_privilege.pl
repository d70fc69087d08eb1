# 211_registry_privilege.pl: nothing the claim path runs can be turned into a
# superuser, and the registry role cannot do more than a claim could.
#
# A hostile role with only CREATE on the database plants functions named like
# the extension's in a schema named after the bootstrap superuser (first in
# the default search_path); given TRIGGER on the registry (a careless grant) it
# plants triggers whose WHEN clause it controls; it owns a schema, a foreign
# server.  The documented by-hand lines, a superuser's claim and the worker
# must never run its code with more than its own rights.  The registry worker
# refuses a registry role that can reach more than the claim needs, and a
# session of the registry role cannot record a claim.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('s');
$node->init;
$node->append_conf(
	'postgresql.conf', q(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 4
snowflake.machine_id = 2
snowflake.require_claim = on
));
$node->start;

my $su = $node->safe_psql('postgres', 'SELECT current_user');
my ($host, $port) = ($node->host, $node->port);

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
	return $node->safe_psql('postgres',
		"SELECT rolsuper OR rolcreaterole OR pg_has_role('hostile', 'pg_execute_server_program', 'MEMBER') FROM pg_roles WHERE rolname = 'hostile'");
}

my $registry_ddl = q{
    datacenter_id int NOT NULL,
    machine_id    int NOT NULL,
    owner         text NOT NULL,
    claimed_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    high_water_ms bigint,
    PRIMARY KEY (datacenter_id, machine_id)
};

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION snowflake;
CREATE EXTENSION postgres_fdw;
CREATE TABLE public.snowflake_registry ($registry_ddl);
CREATE ROLE hostile LOGIN;
GRANT CREATE ON DATABASE postgres TO hostile;
});

# The plant: functions of the extension's names, first in the superuser's search_path, and a
# function that makes its caller's rights hostile's.
$node->safe_psql(
	'postgres', qq{
CREATE SCHEMA "$su";
CREATE FUNCTION "$su".escalate() RETURNS boolean LANGUAGE plpgsql AS
\$\$BEGIN ALTER ROLE hostile SUPERUSER; RETURN true; EXCEPTION WHEN insufficient_privilege THEN RETURN true; END\$\$;
CREATE FUNCTION "$su".snowflake_claim_node(registry regclass, lease interval DEFAULT '5 minutes')
RETURNS timestamptz LANGUAGE plpgsql AS \$\$BEGIN PERFORM "$su".escalate(); RETURN now(); END\$\$;
CREATE FUNCTION "$su".snowflake_release_node(registry regclass)
RETURNS boolean LANGUAGE plpgsql AS \$\$BEGIN RETURN "$su".escalate(); END\$\$;
GRANT USAGE ON SCHEMA "$su" TO PUBLIC;
}, extra_params => [ '-U', 'hostile' ]);
is(hostile_is_superuser(), 'f', 'hostile starts unprivileged');

# --- Item 5: every by-hand line the documentation gives runs the extension's functions.

my @lines;
for my $doc ('README.md', 'docs/fleet.md')
{
	my $text = slurp_file("$FindBin::RealBin/../../$doc");
	push @lines, map { [ $doc, $_ ] }
	  ($text =~ /(SELECT\s+[\w."]*snowflake_(?:claim|release)_node\('public\.snowflake_registry'[^)]*\))/g);
}
cmp_ok(scalar(@lines), '>=', 2, 'the documentation gives by-hand claim and release lines');
for my $l (@lines)
{
	my ($doc, $sql) = @$l;
	$node->psql('postgres', $sql);
	is(hostile_is_superuser(), 'f', "$doc: \"$sql\" run by a superuser runs no planted function");
}
$node->safe_psql('postgres', 'DELETE FROM public.snowflake_registry');

# --- Item 6: a trigger on the registry, whatever its function and however enabled, is refused.

$node->safe_psql('postgres', qq{GRANT TRIGGER ON public.snowflake_registry TO hostile;
CREATE FUNCTION public.noop() RETURNS trigger LANGUAGE plpgsql AS \$\$BEGIN RETURN NEW; END\$\$;});
$node->safe_psql('postgres', qq{INSERT INTO public.snowflake_registry VALUES (4, 2, 'someone', now(), '-infinity', 0)});
for my $how ('', 'ALWAYS', 'REPLICA')
{
	$node->safe_psql(
		'postgres', qq{
CREATE TRIGGER sneak BEFORE INSERT OR UPDATE ON public.snowflake_registry
    FOR EACH ROW WHEN ("$su".escalate()) EXECUTE FUNCTION public.noop();
}, extra_params => [ '-U', 'hostile' ]);
	# (enabling it ALWAYS or REPLICA takes the table's owner: a careless one)
	$node->safe_psql('postgres', "ALTER TABLE public.snowflake_registry ENABLE $how TRIGGER sneak") if $how;
	my $err = fails("SET session_replication_role = " . ($how eq 'REPLICA' ? 'replica' : 'origin') .
		  ";\nSELECT public.snowflake_claim_node('public.snowflake_registry')",
		"a superuser claims a registry carrying a trigger enabled " . ($how || 'ORIGIN') . " whose WHEN clause hostile wrote");
	like($err, qr/42501: registry public.snowflake_registry carries trigger sneak/, 'refused: the registry carries a trigger');
	is(hostile_is_superuser(), 'f', 'the WHEN clause did not run as superuser');
	$node->safe_psql('postgres', 'DROP TRIGGER sneak ON public.snowflake_registry');
}
$node->safe_psql('postgres', qq{CREATE TRIGGER off BEFORE UPDATE ON public.snowflake_registry
    FOR EACH ROW EXECUTE FUNCTION public.noop();
ALTER TABLE public.snowflake_registry DISABLE TRIGGER off;});
like(fails("SELECT public.snowflake_release_node('public.snowflake_registry')", 'a release of a registry with a disabled trigger'),
	qr/42501: registry public.snowflake_registry carries trigger off/, 'refused too: anyone who can enable it could run it');
$node->safe_psql('postgres', 'DROP TRIGGER off ON public.snowflake_registry');

# Rules, policies, and defaults that call a function hostile owns.
$node->safe_psql('postgres', 'CREATE RULE r AS ON UPDATE TO public.snowflake_registry DO ALSO NOTIFY x');
like(fails("SELECT public.snowflake_claim_node('public.snowflake_registry')", 'a registry with a rule'),
	qr/42501: registry public.snowflake_registry carries rule r/, 'a rule is refused');
$node->safe_psql('postgres', 'DROP RULE r ON public.snowflake_registry;
CREATE POLICY p ON public.snowflake_registry USING (true)');
like(fails("SELECT public.snowflake_claim_node('public.snowflake_registry')", 'a registry with a policy'),
	qr/42501: registry public.snowflake_registry carries row security policy p/, 'a policy is refused');
# (on an empty registry: adding the default or constraint would otherwise run it at once)
$node->safe_psql('postgres', qq{DROP POLICY p ON public.snowflake_registry;
DELETE FROM public.snowflake_registry;
ALTER TABLE public.snowflake_registry ADD COLUMN note boolean DEFAULT "$su".escalate()});
like(fails("SELECT public.snowflake_claim_node('public.snowflake_registry')", 'a registry whose default calls hostile\'s function'),
	qr/42501: registry public.snowflake_registry calls function "?\Q$su\E"?\.escalate\(\) \(in a default, constraint or index\), owned by role hostile/,
	'a default calling a function of an untrusted owner is refused');
$node->safe_psql('postgres', qq{ALTER TABLE public.snowflake_registry DROP COLUMN note;
ALTER TABLE public.snowflake_registry ADD CONSTRAINT c CHECK ("$su".escalate())});
like(fails("SELECT public.snowflake_claim_node('public.snowflake_registry')", 'a registry whose constraint calls hostile\'s function'),
	qr/42501: registry public.snowflake_registry calls function "?\Q$su\E"?\.escalate\(\)/, 'so is a constraint');
$node->safe_psql('postgres', 'ALTER TABLE public.snowflake_registry DROP CONSTRAINT c');
is(hostile_is_superuser(), 'f', 'hostile never became superuser');

# A registry in a schema hostile owns (it could put another table in its place).
$node->safe_psql('postgres', qq{CREATE SCHEMA hs AUTHORIZATION hostile; CREATE TABLE hs.reg ($registry_ddl)});
like(fails("SELECT public.snowflake_claim_node('hs.reg')", 'a registry in a schema hostile owns'),
	qr/42501: schema hs of registry hs.reg is owned by role hostile, which does not have the rights of role "?\Q$su\E"?/,
	'the schema owner must be trusted');
is($node->safe_psql('postgres', 'SELECT count(*) FROM hs.reg'), '0', 'nothing was claimed there');

# A foreign registry on a server hostile owns (it could point the server elsewhere).
$node->safe_psql('postgres', 'GRANT USAGE ON FOREIGN DATA WRAPPER postgres_fdw TO hostile');
$node->safe_psql('postgres', qq{CREATE SERVER hostile_srv FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '$host', port '$port', dbname 'postgres');
CREATE USER MAPPING FOR PUBLIC SERVER hostile_srv OPTIONS (user '$su');}, extra_params => [ '-U', 'hostile' ]);
my $foreign_ddl = $registry_ddl =~ s/,\s*PRIMARY KEY.*//sr;
$node->safe_psql('postgres', qq{CREATE FOREIGN TABLE public.freg ($foreign_ddl)
    SERVER hostile_srv OPTIONS (schema_name 'public', table_name 'snowflake_registry')});
like(fails("SELECT public.snowflake_claim_node('public.freg')", 'a foreign registry on a server hostile owns'),
	qr/42501: foreign server hostile_srv of registry public.freg is owned by role hostile/,
	'the foreign server\'s owner must be trusted');

# --- Item 7: a session of the registry role cannot record a claim.

$node->safe_psql('postgres', q{
CREATE ROLE claimer LOGIN;
GRANT SELECT, INSERT, UPDATE ON public.snowflake_registry TO claimer;
GRANT EXECUTE ON FUNCTION public.snowflake_claim_node(regclass, interval),
    public.snowflake_note_claim(int, int, timestamptz, bigint) TO claimer;
});
for my $args ("4, 2, now() + interval '1 minute', NULL", "4, 2, '2070-01-01', NULL", "4, 2, now() + interval '1 minute', 3471292800000")
{
	like(fails("BEGIN; SELECT public.snowflake_note_claim($args); COMMIT;", "the registry role calls snowflake_note_claim($args) in its own session",
			extra_params => [ '-U', 'claimer' ]),
		qr/42501: permission denied for function snowflake_note_claim/, 'refused: only a superuser or the worker records a claim');
}
like(fails("SELECT snowflake_next()", 'generation after those calls'),
	qr/holds no current registry claim/, 'no claim was recorded');
like(fails("SELECT public.snowflake_claim_node('public.snowflake_registry')", 'a claim by hand as the registry role',
		extra_params => [ '-U', 'claimer' ]),
	qr/42501: permission denied for function snowflake_(note_claim|claim_token)/, 'claiming by hand needs a superuser');
is($node->safe_psql('postgres', 'SELECT count(*) FROM public.snowflake_registry WHERE owner <> \'someone\''), '0',
	'and left no registry row');

# --- The worker: it claims as the registry role, and refuses one that reaches too far.

$node->safe_psql('postgres', q{DELETE FROM public.snowflake_registry;
ALTER TABLE public.snowflake_registry ADD COLUMN claimed_by name DEFAULT current_user;
ALTER SYSTEM SET snowflake.registry = 'public.snowflake_registry';
ALTER SYSTEM SET snowflake.registry_role = 'claimer';
ALTER SYSTEM SET snowflake.registry_lease_ms = 4000;});
$node->restart;
ok($node->poll_query_until('postgres', 'SELECT count(*) > 0 FROM public.snowflake_registry'), 'the worker claims the node');
is($node->safe_psql('postgres', 'SELECT claimed_by FROM public.snowflake_registry'), 'claimer', 'as the registry role');
ok($node->poll_query_until('postgres', 'SELECT snowflake_next() > 0'), 'and the claim counts');

for my $case ([ 'CREATEROLE', 'ALTER ROLE claimer CREATEROLE', 'ALTER ROLE claimer NOCREATEROLE', qr/snowflake.registry_role "claimer" has CREATEROLE/ ],
	[ 'CREATEDB', 'ALTER ROLE claimer CREATEDB', 'ALTER ROLE claimer NOCREATEDB', qr/snowflake.registry_role "claimer" has CREATEDB/ ],
	[ 'BYPASSRLS', 'ALTER ROLE claimer BYPASSRLS', 'ALTER ROLE claimer NOBYPASSRLS', qr/snowflake.registry_role "claimer" has BYPASSRLS/ ],
	[ 'REPLICATION', 'ALTER ROLE claimer REPLICATION', 'ALTER ROLE claimer NOREPLICATION', qr/snowflake.registry_role "claimer" has REPLICATION/ ],
	map({ [ $_, "GRANT $_ TO claimer", "REVOKE $_ FROM claimer", qr/snowflake.registry_role "claimer" is a member of role "$_"/ ] }
		qw(pg_execute_server_program pg_read_server_files pg_write_server_files pg_read_all_data pg_write_all_data)),
	[ 'a member of a role with CREATEROLE', "CREATE ROLE admin NOLOGIN CREATEROLE; GRANT admin TO claimer",
	  "REVOKE admin FROM claimer; DROP ROLE admin", qr/snowflake.registry_role "claimer" is a member of role "admin" \(CREATEROLE\)/ ])
{
	my ($what, $grant, $revoke, $message) = @$case;
	# The first case waits for the worker's own next round (a third of the lease
	# on, 1.3 s): a round it schedules itself checks the role.  The others wake
	# it for a round at once (a reload sets its latch; nothing in the
	# configuration changes): the same check, without the wait.
	my $wake = $what ne 'CREATEROLE';
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', $grant);
	$node->reload if $wake;
	ok($node->wait_for_log($message, $offset), "the worker refuses a registry role with $what");
	$offset = -s $node->logfile;
	$node->safe_psql('postgres', $revoke);
	$node->reload if $wake;
	ok($node->wait_for_log(qr/snowflake claimed this server's node in registry "public.snowflake_registry" again/, $offset),
		"and claims again once it is gone");
}

# A database setting (its owner may make one) cannot stop the worker from claiming.
$node->safe_psql('postgres', 'ALTER DATABASE postgres SET default_transaction_read_only = on');
$node->restart;
my $restarted = $node->safe_psql('postgres', 'SELECT now()');
ok($node->poll_query_until('postgres', "SELECT max(claimed_at) > '$restarted' FROM public.snowflake_registry"),
	'the worker claims in a database whose transactions default to read only');
$node->safe_psql('postgres', 'SET default_transaction_read_only = off; ALTER DATABASE postgres RESET default_transaction_read_only');

# --- Item 8: a locked registry ends the worker's claim by its lock timeout, with a log line.

my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN; LOCK TABLE public.snowflake_registry IN ACCESS EXCLUSIVE MODE');
my $offset = -s $node->logfile;
ok($node->wait_for_log(qr/snowflake could not claim this server's node in registry "public.snowflake_registry": canceling statement due to lock timeout/, $offset),
	'a claim stuck on a lock ends by its timeout and says so');
# Every round fails the same way; the log says so once (at most once a minute per reason).
my %rounds;
for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
{
	# (asked in the locking session itself: pg_locks shows the waits as they are now)
	my $vxid = $locker->query_safe(
		"SELECT virtualtransaction FROM pg_locks WHERE relation = 'public.snowflake_registry'::regclass AND NOT granted");
	$rounds{$vxid} = 1 if $vxid ne '';
	last if keys %rounds >= 3;
	usleep(100_000);
}
cmp_ok(scalar(keys %rounds), '>=', 3, 'the worker tried at least three rounds against the locked registry');
my @logged = (substr(slurp_file($node->logfile), $offset) =~ /canceling statement due to lock timeout/g);
is(scalar(@logged), 1, 'and logged the lock timeout once');
$offset = -s $node->logfile;
$locker->query_safe('ROLLBACK');
$locker->quit;
ok($node->wait_for_log(qr/snowflake claimed this server's node in registry "public.snowflake_registry" again/, $offset),
	'and the worker claims again once the lock is gone');

is(hostile_is_superuser(), 'f', 'hostile never gained a superuser\'s rights');
$node->stop;
done_testing();
