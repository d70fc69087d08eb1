# 129_schema_renamed.pl: the functions a superuser runs refuse while the extension's schema is renamed
# (outside attack on issue 19, round 16, F1).
#
# On PostgreSQL 15 the schema public belongs to pg_database_owner.  The database's owner renamed it
# (the extension moved with it) and made a new public holding look-alikes of the extension's helper
# functions.  The extension's functions call each other by the schema name they were created with,
# so the superuser's documented, qualified call of snowflake_migrate_column() (and of
# snowflake_claim_node(), snowflake_release_node(), snowflake_repair_integer_ops()) ran the
# look-alikes with the superuser's rights.  Each now first calls pg_catalog.snowflake_check_schema(),
# which refuses while the schema is not named as at the extension's creation.
use strict;
use warnings FATAL => 'all';
use FindBin;
use lib $FindBin::RealBin;
use SnowflakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('schema_renamed');
$node->init;
# Not preloaded: since round 18 a preloaded library's utility hook refuses the rename too.
$node->append_conf('postgresql.conf', "snowflake.datacenter_id = 1\nsnowflake.machine_id = 1\n");
$node->start;
$node->safe_psql('postgres', q{CREATE ROLE mallory LOGIN; CREATE DATABASE m10 OWNER mallory});
# Since round 17 the extension's event triggers refuse the rename, and a preloaded library's hook
# (131_schema_guard.pl); this file checks the guard beneath them, where neither acts: the
# triggers disabled by a superuser, the library not preloaded.
$node->safe_psql('m10', q{CREATE EXTENSION snowflake; ALTER EVENT TRIGGER snowflake_schema_guard DISABLE;
ALTER EVENT TRIGGER snowflake_schema_guard_end DISABLE; CREATE SCHEMA a; CREATE TABLE a.t (id serial PRIMARY KEY);
CREATE TABLE a.planted_calls (what text); GRANT USAGE ON SCHEMA a TO PUBLIC; GRANT INSERT ON a.planted_calls TO PUBLIC});

# The owner renames public (the extension's schema) and plants look-alikes of every helper the
# functions call by name in a new public.
$node->safe_psql('m10', q{
ALTER SCHEMA public RENAME TO public_;
CREATE SCHEMA public;
GRANT USAGE ON SCHEMA public TO PUBLIC;
} . SnowflakeTest::planted_pwn_sql('public', 'a.planted_calls', 'mallory') . q{
DO $d$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT p.proname AS n, pg_catalog.pg_get_function_arguments(p.oid) AS a, pg_catalog.pg_get_function_result(p.oid) AS res,
	                p.pronargs AS k, p.proretset AS s
	         FROM pg_catalog.pg_proc p
	         WHERE p.pronamespace = 'public_'::regnamespace AND p.proname LIKE 'snowflake%' AND p.prokind = 'f'
	           AND p.proname NOT IN ('snowflake_migrate_column', 'snowflake_claim_node', 'snowflake_release_node', 'snowflake_repair_integer_ops')
	           AND pg_catalog.pg_get_function_result(p.oid) NOT LIKE 'TABLE%' AND NOT p.proretset
	           AND pg_catalog.pg_get_function_arguments(p.oid) NOT LIKE '%internal%'
	           AND pg_catalog.pg_get_function_result(p.oid) NOT IN ('internal', 'trigger')
	LOOP
		BEGIN
			EXECUTE pg_catalog.format('CREATE FUNCTION public.%I(%s) RETURNS %s LANGUAGE plpgsql AS $x$ BEGIN PERFORM public.pwn(%L); %s END $x$',
				r.n, pg_catalog.replace(r.a, 'public_.', ''), pg_catalog.replace(r.res, 'public_.', ''), r.n,
				CASE WHEN r.res = 'void' THEN 'RETURN;' ELSE pg_catalog.format('RETURN public_.%I(%s);', r.n,
					coalesce((SELECT pg_catalog.string_agg('$' || i, ',') FROM pg_catalog.generate_series(1, r.k) i), '')) END);
		EXCEPTION WHEN OTHERS THEN NULL;	-- a signature of the extension's own types: skipped
		END;
	END LOOP;
END $d$;
}, extra_params => [ '-U', 'mallory' ]);
cmp_ok($node->safe_psql('m10', q{SELECT count(*) FROM pg_proc WHERE pronamespace = 'public'::regnamespace AND proname LIKE 'snowflake%'}),
	'>=', 5, 'the owner planted look-alikes of the helpers in a new public');

my $renamed = qr/the schema of extension snowflake was renamed from public to public_/;
for my $call (
	q{SELECT public_.snowflake_migrate_column('a.t'::pg_catalog.regclass, 'id'::pg_catalog.name, 'bigint'::pg_catalog.regtype)},
	q{SELECT public_.snowflake_claim_node('a.t'::pg_catalog.regclass, '5 minutes'::interval)},
	q{SELECT public_.snowflake_release_node('a.t'::pg_catalog.regclass)},
	q{SELECT public_.snowflake_repair_integer_ops()})
{
	my ($ret, $out, $err) = $node->psql('m10', "BEGIN; SET LOCAL search_path = pg_catalog, pg_temp; $call; COMMIT;");
	like($err, $renamed, "refused while the schema is renamed: $call");
	is($node->safe_psql('m10', 'SELECT count(*) FROM a.planted_calls'), '0', "no look-alike ran: $call");
	is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}), 'f', "mallory stays unprivileged: $call");
}
my ($ret, $out, $err) = $node->psql('m10', 'SELECT public_.snowflake_repair_integer_ops()');
like($err, qr/HINT:  Rename it back \(ALTER SCHEMA public_ RENAME TO public, after moving away any schema that took the old name\)/,
	'the hint says how to put it right');

# Named back: the functions work again.
$node->safe_psql('m10', q{ALTER SCHEMA public RENAME TO planted; ALTER SCHEMA public_ RENAME TO public});
is($node->safe_psql('m10', q{BEGIN; SET LOCAL search_path = pg_catalog, pg_temp; SELECT public.snowflake_repair_integer_ops(); COMMIT;}),
	'0', 'named back: the repair runs');
($ret, $out, $err) = $node->psql('m10', q{BEGIN; SET LOCAL search_path = pg_catalog, pg_temp;
SELECT public.snowflake_migrate_column('a.t'::pg_catalog.regclass, 'id'::pg_catalog.name, 'bigint'::pg_catalog.regtype); COMMIT;});
like($err, qr/snowflake must be loaded via shared_preload_libraries to use snowflake_migrate_column\(\)/,
	'named back: the migration passes the guard and goes on (to its need for the preloaded library, here)');
is($node->safe_psql('m10', 'SELECT count(*) FROM a.planted_calls'), '0', 'no look-alike ran');

done_testing();
