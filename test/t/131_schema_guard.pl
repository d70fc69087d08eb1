# 131_schema_guard.pl: the extension's schema can be neither renamed nor dropped while the
# extension is in it (outside attack on issue 19, round 17).
#
# The database's owner (on PostgreSQL 15, owner of public) made a superuser of itself three ways:
#   F1  its table's CHECK function, run as the owner inside the documented migration, renamed
#       public and planted look-alikes of the migration's helpers in a new public: the rest of the
#       superuser's call ran them (the guard of round 16 looked only at the call's start);
#   F2  renamed public and made a domain public.snowflake whose CHECK ran, as the caller, inside
#       the jsonb -> snowflake cast (its body names the type by the schema's name);
#   F3  renamed public and planted look-alikes of the documented administrative calls
#       (public.snowflake_status(), ...), which a superuser then ran.
# Now an event trigger of the extension refuses ALTER SCHEMA ... RENAME and DROP SCHEMA of its
# schema, and DROP OWNED BY that schema's owner, for every role; and the migration checks after
# the owner's code ran that the extension is still in its schema under its name (where event
# triggers do not fire).  Each reproduction also runs with the trigger disabled, as a control
# (F1: the migration's own check refuses).
use strict;
use warnings FATAL => 'all';
use FindBin;
use lib $FindBin::RealBin;
use SnowflakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('schema_guard');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'snowflake'\nsnowflake.datacenter_id = 1\nsnowflake.machine_id = 1\n");
$node->start;
$node->safe_psql('postgres', q{CREATE ROLE alice LOGIN; CREATE DATABASE app OWNER alice});
$node->safe_psql('app', q{CREATE EXTENSION snowflake SCHEMA public;
CREATE SCHEMA audit; CREATE TABLE audit.planted_calls (what text);
GRANT USAGE ON SCHEMA audit TO PUBLIC; GRANT INSERT ON audit.planted_calls TO PUBLIC});

sub alice
{
	my ($sql) = @_;
	return $node->psql('app', $sql, extra_params => [ '-U', 'alice' ]);
}

sub unprivileged
{
	my ($what) = @_;
	is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'alice'}), 'f', "$what: alice stays unprivileged");
	is($node->safe_psql('app', 'SELECT count(*) FROM audit.planted_calls'), '0', "$what: no planted code ran");
}

my $refused = qr/ERROR:  cannot (rename schema|drop schema|drop the objects of the owner of schema) "public": extension snowflake is in it/;

# The schema's owner, and a superuser too, cannot rename or drop it, in any form.
for my $sql (
	'ALTER SCHEMA public RENAME TO public_',
	'DROP SCHEMA public CASCADE',
	'DROP SCHEMA IF EXISTS audit, public CASCADE',
	'DROP OWNED BY pg_database_owner CASCADE',
	q{DO $$ BEGIN EXECUTE 'ALTER SCHEMA public RENAME TO x'; END $$})
{
	my ($ret, $out, $err) = alice($sql);
	like($err, $refused, "the database's owner: $sql: refused");
}
my ($ret, $out, $err) = $node->psql('app', 'ALTER SCHEMA public RENAME TO public_', extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  2BP01: cannot rename schema "public": extension snowflake is in it/, 'a superuser too: 2BP01');
like($err, qr/HINT:  A superuser can DROP EXTENSION snowflake first, or ALTER EVENT TRIGGER snowflake_schema_guard DISABLE/, 'the hint says what a superuser can do');
is($node->safe_psql('app', q{SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'snowflake'}),
	'public', 'the extension is still in public');
# Other schemas are not guarded.
($ret, $out, $err) = alice('CREATE SCHEMA scratch; ALTER SCHEMA scratch RENAME TO scratch2; DROP SCHEMA scratch2');
is($ret, 0, 'other schemas are renamed and dropped as before');

# F1: the owner's CHECK, run inside the documented migration, renames public and plants the helpers.
my $f1 = q{
CREATE SCHEMA evil;
GRANT USAGE ON SCHEMA evil TO PUBLIC;
} . SnowflakeTest::planted_pwn_sql('evil', 'audit.planted_calls', 'alice') . q{
CREATE FUNCTION evil.chk(v bigint) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
	IF session_user <> current_user AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'public_real') THEN
		ALTER SCHEMA public RENAME TO public_real;
		CREATE SCHEMA public;
		GRANT USAGE ON SCHEMA public TO PUBLIC;
		CREATE FUNCTION public.snowflake_migrate_exec(oid, text[]) RETURNS text LANGUAGE plpgsql AS $p$ BEGIN PERFORM evil.pwn('exec'); RETURN NULL; END $p$;
		CREATE FUNCTION public.snowflake_migrate_lift(bigint) RETURNS void LANGUAGE plpgsql AS $p$ BEGIN PERFORM evil.pwn('lift'); END $p$;
		CREATE FUNCTION public.snowflake_migrate_floor() RETURNS bigint LANGUAGE plpgsql AS $p$ BEGIN PERFORM evil.pwn('floor'); RETURN 0; END $p$;
		CREATE FUNCTION public.snowflake_next() RETURNS bigint LANGUAGE plpgsql AS $p$ BEGIN PERFORM evil.pwn('next'); RETURN 0; END $p$;
	END IF;
	RETURN true;
END $f$;
CREATE TABLE public.orders (id serial PRIMARY KEY CHECK (evil.chk(id)), v text);
INSERT INTO public.orders (v) SELECT 'row ' || g FROM generate_series(1, 10) g;
};
($ret, $out, $err) = alice($f1);
is($ret, 0, 'F1: the owner made its table, with a CHECK that renames public when run for someone else') or diag($err);
my $migrate = q{BEGIN; SET LOCAL search_path = pg_catalog, pg_temp;
SELECT pg_catalog.jsonb_pretty(public.snowflake_migrate_column('public.orders'::pg_catalog.regclass, 'id'::pg_catalog.name, 'bigint'::pg_catalog.regtype));
COMMIT;};
($ret, $out, $err) = $node->psql('app', $migrate);
like($err, $refused, 'F1: the rename inside the migration is refused, and the migration with it');
unprivileged('F1');
is($node->safe_psql('app', q{SELECT count(*) FROM pg_namespace WHERE nspname = 'public_real'}), '0', 'F1: public keeps its name');

# F1 with the event triggers disabled: the library's utility hook (the server preloads it) still
# refuses the rename, after taking the schema's lock.
$node->safe_psql('app', 'ALTER EVENT TRIGGER snowflake_schema_guard DISABLE; ALTER EVENT TRIGGER snowflake_schema_guard_end DISABLE');
($ret, $out, $err) = $node->psql('app', $migrate);
like($err, $refused, 'F1, event triggers disabled: the hook refuses the rename inside the migration');
unprivileged('F1, event triggers disabled');
is($node->safe_psql('app', q{SELECT count(*) FROM pg_namespace WHERE nspname = 'public_real'}), '0', 'F1, event triggers disabled: public keeps its name');

# F1 without a rename: the owner's CHECK, run inside the migration, puts an overload of a helper
# the migration calls later (and a look-alike operator) into public, which it owns: refused.
($ret, $out, $err) = alice(q{
CREATE FUNCTION evil.chk2(v bigint) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
	IF session_user <> current_user AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_proc WHERE proname = 'snowflake_migrate_lift' AND pronargs = 2) THEN
		CREATE FUNCTION public.snowflake_migrate_lift(bigint, integer DEFAULT 0) RETURNS void LANGUAGE plpgsql AS $p$ BEGIN PERFORM evil.pwn('lift overload'); END $p$;
	END IF;
	RETURN true;
END $f$;
CREATE TABLE public.orders2 (id serial PRIMARY KEY CHECK (evil.chk2(id)), v text);
INSERT INTO public.orders2 (v) SELECT 'row ' || g FROM generate_series(1, 10) g;
});
is($ret, 0, 'F1, overload: the owner made its table') or diag($err);
($ret, $out, $err) = $node->psql('app', $migrate =~ s/public\.orders'/public.orders2'/r);
like($err, qr/snowflake_migrate_column\(\) refused: code of the table's owner made or changed a function or operator in schema "public", which extension snowflake uses/,
	'F1, overload: the migration refuses once the owner\'s code put a function into the extension\'s schema');
unprivileged('F1, overload');
is($node->safe_psql('app', q{SELECT count(*) FROM pg_proc WHERE proname = 'snowflake_migrate_lift' AND pronargs = 2}), '0', 'F1, overload: rolled back');
$node->safe_psql('app', 'ALTER EVENT TRIGGER snowflake_schema_guard ENABLE; ALTER EVENT TRIGGER snowflake_schema_guard_end ENABLE');

# Round 18, F1 and F5: look-alikes and overloads of the extension's functions in its schema, made
# before the migration (its call of snowflake_migrate_rule_refs(oid) with a regclass picked a
# planted (regclass) overload, as the superuser) or to make the documented calls ambiguous.
my $lookalike = qr/ERROR:  cannot have "snowflake_[a-z_]+" in schema "public": extension snowflake has a function of that name there/;
for my $sql (
	q{CREATE FUNCTION public.snowflake_migrate_rule_refs(r regclass) RETURNS void LANGUAGE sql AS 'SELECT NULL::void'},
	q{CREATE FUNCTION public.snowflake_state(x int DEFAULT 0) RETURNS void LANGUAGE sql AS 'SELECT NULL::void'},
	q{CREATE FUNCTION public.mine(r regclass) RETURNS void LANGUAGE sql AS 'SELECT NULL::void'; ALTER FUNCTION public.mine(regclass) RENAME TO snowflake_migrate_rule_refs},
	q{CREATE FUNCTION evil.snowflake_status(x int DEFAULT 0) RETURNS void LANGUAGE sql AS 'SELECT NULL::void'; ALTER FUNCTION evil.snowflake_status(int) SET SCHEMA public},
	q{CREATE PROCEDURE public.snowflake_accept_clock(x int) LANGUAGE sql AS 'SELECT 1'})
{
	($ret, $out, $err) = alice($sql);
	like($err, $lookalike, "R18: the database's owner: $sql: refused");
}
($ret, $out, $err) = alice(q{CREATE FUNCTION public.my_helper(r regclass) RETURNS void LANGUAGE sql AS 'SELECT NULL::void'});
is($ret, 0, 'R18: other functions in public are made as before') or diag($err);

# A look-alike made while the triggers did not fire (disabled here): the superuser's functions refuse first.
$node->safe_psql('app', 'ALTER EVENT TRIGGER snowflake_schema_guard_end DISABLE');
alice(q{CREATE FUNCTION public.snowflake_migrate_rule_refs(r regclass) RETURNS void LANGUAGE plpgsql AS $p$ BEGIN PERFORM evil.pwn('rule_refs'); END $p$});
$node->safe_psql('app', 'ALTER EVENT TRIGGER snowflake_schema_guard_end ENABLE');
alice(q{CREATE TABLE public.orders3 (id serial PRIMARY KEY, v text); CREATE VIEW public.orders3_v AS SELECT id, v FROM public.orders3});
($ret, $out, $err) = $node->psql('app', $migrate =~ s/public\.orders'/public.orders3'/r);
like($err, qr/schema public holds a function snowflake_migrate_rule_refs that is not extension snowflake's/,
	'R18 F1: the migration refuses while a look-alike of its helpers is in the schema');
unprivileged('R18 F1');
$node->safe_psql('app', 'DROP FUNCTION public.snowflake_migrate_rule_refs(regclass)');

# F2: a domain public.snowflake in a renamed public, reached through the jsonb cast.
($ret, $out, $err) = alice(q{ALTER SCHEMA public RENAME TO public_old; CREATE SCHEMA public;});
like($err, $refused, 'F2: the rename is refused');
is($node->safe_psql('app', q{BEGIN; SET LOCAL search_path = pg_catalog, pg_temp;
SELECT ('{"id": "2128088743448551424"}'::pg_catalog.jsonb OPERATOR(pg_catalog.->) 'id')::public.snowflake; COMMIT;}),
	'2128088743448551424', 'F2: the cast reads the value, through the extension\'s own type');
unprivileged('F2');

# F3: dropped, rather than renamed, then planted: refused as well.
($ret, $out, $err) = alice(q{DROP SCHEMA public CASCADE; CREATE SCHEMA public;
CREATE FUNCTION public.snowflake_status() RETURNS void LANGUAGE sql AS 'SELECT NULL::void'});
like($err, $refused, 'F3: dropping public, to plant the administrative calls, is refused');
is($node->safe_psql('app', q{SELECT count(*) FROM pg_extension WHERE extname = 'snowflake'}), '1', 'F3: the extension stays');

# Round 18, F2: the owner renames (or drops) public while a superuser's CREATE EXTENSION runs.  The
# event triggers do not exist yet for that statement; the library's hook takes the schema's lock,
# waits for the creation, and refuses.
$node->safe_psql('postgres', 'CREATE DATABASE app4 OWNER alice');
for my $race ('ALTER SCHEMA public RENAME TO public_old', 'DROP SCHEMA public CASCADE')
{
	my $a = $node->background_psql('app4');
	$a->query_safe('BEGIN');
	$a->query_safe('CREATE EXTENSION snowflake SCHEMA public');
	my $b = $node->background_psql('app4', on_error_stop => 0, extra_params => [ '-U', 'alice' ]);
	$b->query_until(qr/sent/, "\\echo sent\n$race;\n\\echo finished\n");
	my $waited = $node->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_stat_activity WHERE usename = 'alice' AND datname = 'app4' AND wait_event_type = 'Lock'});
	ok($waited, "R18 F2, $race: waits for the extension's creation");
	$a->query_safe('COMMIT');
	$a->quit;
	$b->query_until(qr/finished/, '');
	like($b->{stderr}, $refused, "R18 F2, $race: refused once the extension is there");
	$b->quit;
	is($node->safe_psql('app4', q{SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'snowflake'}),
		'public', "R18 F2, $race: the extension is in public");
	$node->safe_psql('app4', 'DROP EXTENSION snowflake');
}

# Round 19, F1: the owner made public a member of a trusted extension of its own (tcn), after the
# install or before it, and dropped that extension: public, snowflake and the superuser's tables went
# with it, and a new public held look-alikes the documented calls ran as the superuser.  Making the
# extension's schema a member is refused; so is dropping an extension it is a member of (the event
# trigger, and with the triggers disabled the library's hook).
my $refused_ext = qr/ERROR:  cannot (add to extension "tcn" schema|drop extension "tcn" and with it schema) "public": extension snowflake is in it/;
$node->safe_psql('postgres', 'CREATE DATABASE app5 OWNER alice; CREATE DATABASE app6 OWNER alice');
$node->safe_psql('app5', q{CREATE EXTENSION snowflake SCHEMA public; CREATE TABLE public.posts (id snowflake PRIMARY KEY)});
($ret, $out, $err) = $node->psql('app5', q{CREATE SCHEMA holder; CREATE EXTENSION tcn SCHEMA holder; ALTER EXTENSION tcn ADD SCHEMA public},
	extra_params => [ '-U', 'alice' ]);
like($err, $refused_ext, 'R19 F1: ALTER EXTENSION tcn ADD SCHEMA public, after the install: refused');
# A member already (made while the event trigger did not fire: disabled here; the install refuses
# a member since round 20, below): dropping tcn is refused, by the event trigger, and with it
# disabled by the library's hook, once the drop has taken the schema.
$node->safe_psql('app6', q{CREATE SCHEMA holder; CREATE EXTENSION tcn SCHEMA holder}, extra_params => [ '-U', 'alice' ]);
$node->safe_psql('app6', q{CREATE EXTENSION snowflake SCHEMA public; CREATE TABLE public.posts (id snowflake PRIMARY KEY)});
$node->safe_psql('app6', 'ALTER EVENT TRIGGER snowflake_schema_guard DISABLE');
$node->safe_psql('app6', 'ALTER EXTENSION tcn ADD SCHEMA public', extra_params => [ '-U', 'alice' ]);
$node->safe_psql('app6', 'ALTER EVENT TRIGGER snowflake_schema_guard ENABLE');
($ret, $out, $err) = $node->psql('app6', 'DROP EXTENSION tcn CASCADE', extra_params => [ '-U', 'alice' ]);
like($err, $refused_ext, 'R19 F1: DROP EXTENSION tcn CASCADE, public a member: refused');
$node->safe_psql('app6', 'ALTER EVENT TRIGGER snowflake_schema_guard DISABLE');
($ret, $out, $err) = $node->psql('app6', 'DROP EXTENSION tcn CASCADE', extra_params => [ '-U', 'alice' ]);
like($err, qr/ERROR:  cannot drop schema "public": extension snowflake is in it/, 'R19 F1: with the event trigger disabled, the library\'s hook refuses it too');
$node->safe_psql('app6', 'ALTER EVENT TRIGGER snowflake_schema_guard ENABLE');
is($node->safe_psql('app6', q{SELECT count(*) FROM pg_extension WHERE extname = 'snowflake'}) . '/' .
	$node->safe_psql('app6', q{SELECT count(*) FROM pg_class WHERE oid = 'public.posts'::regclass}),
	'1/1', 'R19 F1: the extension and the superuser\'s table are still there');
($ret, $out, $err) = $node->psql('app6', 'ALTER EXTENSION tcn DROP SCHEMA public; DROP EXTENSION tcn CASCADE', extra_params => [ '-U', 'alice' ]);
is($ret, 0, 'R19 F1: once public is no member, the owner drops its extension') or diag($err);
is($node->safe_psql('app6', q{SELECT count(*) FROM pg_extension WHERE extname = 'snowflake'}), '1', 'R19 F1: and snowflake stays');

# Round 20, F1: public a member of the owner's tcn, made before the install, and then not tcn but
# what tcn goes with dropped: its own schema (DROP SCHEMA d CASCADE) or all the owner owns (DROP
# OWNED BY): the cascade took tcn, public, snowflake and its event triggers.  Now the install
# refuses a schema that is a member of another extension, the functions a superuser runs refuse
# it too, and the preloaded library refuses any drop after which the extension's schema is gone.
$node->safe_psql('postgres', 'CREATE DATABASE app7 OWNER alice');
$node->safe_psql('app7', q{CREATE SCHEMA d; CREATE EXTENSION tcn SCHEMA d; ALTER EXTENSION tcn ADD SCHEMA public},
	extra_params => [ '-U', 'alice' ]);
($ret, $out, $err) = $node->psql('app7', 'CREATE EXTENSION snowflake SCHEMA public');
like($err, qr/ERROR:  schema public of extension snowflake is a member of extension tcn/,
	'R20 F1: the install refuses a schema that is a member of another extension');
like($err, qr/HINT:  As the owner of extension tcn: ALTER EXTENSION tcn DROP SCHEMA public, then try again\./, 'R20 F1: the hint gives the way out');
$node->safe_psql('app7', 'ALTER EXTENSION tcn DROP SCHEMA public', extra_params => [ '-U', 'alice' ]);
$node->safe_psql('app7', q{CREATE EXTENSION snowflake SCHEMA public; CREATE TABLE public.orders (id snowflake PRIMARY KEY)});
# Made a member while the event trigger did not fire (disabled here).
$node->safe_psql('app7', 'ALTER EVENT TRIGGER snowflake_schema_guard DISABLE');
$node->safe_psql('app7', 'ALTER EXTENSION tcn ADD SCHEMA public', extra_params => [ '-U', 'alice' ]);
$node->safe_psql('app7', 'ALTER EVENT TRIGGER snowflake_schema_guard ENABLE');
($ret, $out, $err) = $node->psql('app7', 'SELECT pg_catalog.snowflake_check_schema()');
like($err, qr/ERROR:  schema public of extension snowflake is a member of extension tcn/,
	'R20 F1: the functions a superuser runs refuse while the schema is a member of another extension');
for my $drop ('DROP SCHEMA d CASCADE', 'DROP OWNED BY alice CASCADE')
{
	($ret, $out, $err) = $node->psql('app7', $drop, extra_params => [ '-U', 'alice' ]);
	like($err, qr/ERROR:  cannot drop schema "public": extension snowflake is in it/, "R20 F1: $drop, cascading to public: refused");
	is($node->safe_psql('app7', q{SELECT count(*) FROM pg_extension WHERE extname IN ('snowflake', 'tcn')}) . '/' .
		$node->safe_psql('app7', q{SELECT count(*) FROM pg_class WHERE oid = 'public.orders'::regclass}) . '/' .
		$node->safe_psql('app7', q{SELECT count(*) FROM pg_event_trigger WHERE evtname LIKE 'snowflake_schema_guard%'}),
		'2/1/2', "R20 F1: $drop: both extensions, the superuser's table and the event triggers are still there");
}
($ret, $out, $err) = $node->psql('app7', 'ALTER EXTENSION tcn DROP SCHEMA public; DROP SCHEMA d CASCADE', extra_params => [ '-U', 'alice' ]);
is($ret, 0, 'R20 F1: public no member, the owner drops its schema and extension') or diag($err);
is($node->safe_psql('app7', q{SELECT count(*) FROM pg_extension WHERE extname = 'snowflake'}), '1', 'R20 F1: and snowflake stays');

# Round 19, F2: a range type's constructors are functions of the type's name: CREATE TYPE
# public.snowflake_migrate_column AS RANGE put two look-alikes into public that a 1.1-style call by
# that name picked, as the superuser.  Refused at ddl_command_end like CREATE FUNCTION.
($ret, $out, $err) = $node->psql('app5', 'CREATE TYPE public.snowflake_migrate_column AS RANGE (subtype = text)',
	extra_params => [ '-U', 'alice' ]);
like($err, qr/ERROR:  cannot have "snowflake_migrate_column" in schema "public": extension snowflake has a function of that name there/,
	'R19 F2: a range type named like one of the extension\'s functions: refused');
is($node->safe_psql('app5', q{SELECT count(*) FROM pg_proc WHERE proname = 'snowflake_migrate_column' AND pronamespace = 'public'::regnamespace}),
	'1', 'R19 F2: no constructor next to the extension\'s function');
($ret, $out, $err) = $node->psql('app5', 'CREATE TYPE public.some_range AS RANGE (subtype = text)', extra_params => [ '-U', 'alice' ]);
is($ret, 0, 'R19 F2: a range type of another name is made as before') or diag($err);

# Round 21: a domain public.snowflake_timestamp (or public.snowflake_min_id): a call whose argument
# does not match the function's type exactly (a snowflake for its bigint, an untyped literal) was
# taken for a cast to the domain, whose CHECK ran as the superuser; and a leftover one made the
# migration fail inside.  Types named like the extension's functions are refused at creation
# (tables and views too: their row types have their names), and the superuser's functions refuse
# one made earlier.
for my $sql ('CREATE DOMAIN public.snowflake_timestamp AS bigint CHECK (VALUE > 0)',
	'CREATE DOMAIN public.snowflake_min_id AS text',
	'CREATE TABLE public.snowflake_decode (x int)',
	'CREATE VIEW public.snowflake_format AS SELECT 1 AS x',
	'CREATE DOMAIN public.d21 AS bigint; ALTER DOMAIN public.d21 RENAME TO snowflake_timestamp')
{
	($ret, $out, $err) = $node->psql('app5', $sql, extra_params => [ '-U', 'alice' ]);
	like($err, qr/ERROR:  cannot have "snowflake_(timestamp|min_id|decode|format)" in schema "public": extension snowflake has a function of that name there/,
		"R21: $sql: refused");
}
is($node->safe_psql('app5', q{SELECT count(*) FROM pg_type WHERE typnamespace = 'public'::regnamespace AND typname IN ('snowflake_timestamp', 'snowflake_min_id', 'snowflake_decode', 'snowflake_format')}),
	'0', 'R21: none of those types was made');
$node->safe_psql('app5', 'ALTER EVENT TRIGGER snowflake_schema_guard_end DISABLE');
$node->safe_psql('app5', 'CREATE DOMAIN public.snowflake_timestamp AS bigint', extra_params => [ '-U', 'alice' ]);
$node->safe_psql('app5', 'ALTER EVENT TRIGGER snowflake_schema_guard_end ENABLE');
($ret, $out, $err) = $node->psql('app5', 'SELECT pg_catalog.snowflake_check_schema()');
like($err, qr/ERROR:  schema public holds a type snowflake_timestamp named like a function of extension snowflake/,
	'R21: one made while the trigger was disabled: the superuser\'s functions refuse');
$node->safe_psql('app5', 'DROP DOMAIN public.snowflake_timestamp');

# Round 22: ALTER INDEX ... RENAME renames a table, a view or a materialized view too (its tag was
# not in the trigger's list), and EXPLAIN ANALYZE of CREATE TABLE AS or CREATE MATERIALIZED VIEW
# raises no event-trigger event at all: the owner got row types of the extension's function names
# into public, and the superuser's functions refused from then on (42710).  Now the trigger fires
# on every command, and the preloaded library checks after EXPLAIN of those two.
for my $sql ('CREATE TABLE public.x22 (a int); ALTER INDEX public.x22 RENAME TO snowflake_timestamp',
	'CREATE VIEW public.v22 AS SELECT 1 AS a; ALTER INDEX public.v22 RENAME TO snowflake_format',
	'CREATE MATERIALIZED VIEW public.m22 AS SELECT 1 AS a; ALTER INDEX public.m22 RENAME TO snowflake_datacenter_id',
	'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) CREATE TABLE public.snowflake_next_n AS SELECT 1 AS a',
	'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) CREATE MATERIALIZED VIEW public.snowflake_min_id AS SELECT 1 AS a',
	q{DO $$ BEGIN EXECUTE 'EXPLAIN ANALYZE SELECT 1 AS a INTO public.snowflake_max_id'; END $$})
{
	($ret, $out, $err) = $node->psql('app5', $sql, extra_params => [ '-U', 'alice' ]);
	like($err, qr/ERROR:  cannot have "snowflake_(timestamp|format|datacenter_id|next_n|min_id|max_id)" in schema "public": extension snowflake has a function of that name there/,
		"R22: $sql: refused");
}
is($node->safe_psql('app5', q{SELECT count(*) FROM pg_type WHERE typnamespace = 'public'::regnamespace AND typname IN ('snowflake_timestamp', 'snowflake_format', 'snowflake_datacenter_id', 'snowflake_next_n', 'snowflake_min_id', 'snowflake_max_id')}),
	'0', 'R22: none of those row types was made');
# (PostgreSQL 18 prints rows as 1.00, and buffers with ANALYZE.)
like($node->safe_psql('app5', q{EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) CREATE TABLE public.t22 AS SELECT 1 AS a; SELECT count(*) FROM public.t22}, extra_params => [ '-U', 'alice' ]),
	qr/\AResult \(actual rows=1(?:\.00)? loops=1\)\n(?:.*\n)*1\z/, 'R22: EXPLAIN ANALYZE of CREATE TABLE AS of another name works as before');
$node->safe_psql('app5', 'SELECT pg_catalog.snowflake_check_schema()');

# Round 23: the owner makes a look-alike while the superuser's install (or update) has not
# committed: its event triggers exist for no other session yet, and the script's check had run.
# The domain's CHECK then ran as the superuser through the pinned, qualified call.  Now DDL waits
# for an install or update to commit (and is refused by its triggers), and an install or update
# waits for transactions that made anything, then refuses what they made.
my $domain = 'CREATE DOMAIN public.snowflake_timestamp AS bigint CHECK (VALUE > 0)';
$node->safe_psql('postgres', 'CREATE DATABASE app23 OWNER alice');

# $first has run (its transaction open); $sql, sent from a new session as $role, must wait for a
# lock until $first commits; returns what it then wrote to stderr.
sub r23_waits
{
	my ($first, $role, $sql, $what) = @_;
	my $second = $node->background_psql('app23', on_error_stop => 0, extra_params => [ '-U', $role ]);
	$second->query_until(qr/sent/, "\\echo sent\n$sql\n\\echo finished\n");
	ok($node->poll_query_until('postgres',
		qq{SELECT count(*) > 0 FROM pg_stat_activity WHERE usename = '$role' AND datname = 'app23' AND wait_event_type IN ('Lock', 'Extension')}),
		"R23, $what: waits");
	$first->query_safe('COMMIT');
	$first->quit;
	$second->query_until(qr/finished/, '');
	my $stderr = $second->{stderr};
	$second->quit;
	return $stderr;
}

for my $install ('CREATE EXTENSION snowflake SCHEMA public', 'ALTER EXTENSION snowflake UPDATE')
{
	$node->safe_psql('app23', q{CREATE EXTENSION snowflake VERSION '1.2' SCHEMA public}) if $install =~ /UPDATE/;
	my $a = $node->background_psql('app23');
	$a->query_safe('BEGIN');
	$a->query_safe($install);
	like(r23_waits($a, 'alice', "$domain;", "the owner's CREATE DOMAIN during $install"),
		qr/ERROR:  cannot have "snowflake_timestamp" in schema "public": extension snowflake has a function of that name there/,
		"R23, during $install: then refused by the extension's trigger");
	is($node->safe_psql('app23', q{SELECT count(*) FROM pg_type WHERE typnamespace = 'public'::regnamespace AND typname = 'snowflake_timestamp'}),
		'0', "R23, during $install: no domain was made");
	$node->safe_psql('app23', 'DROP EXTENSION snowflake');
}
for my $install ('CREATE EXTENSION snowflake SCHEMA public', 'ALTER EXTENSION snowflake UPDATE')
{
	$node->safe_psql('app23', q{CREATE EXTENSION snowflake VERSION '1.2' SCHEMA public}) if $install =~ /UPDATE/;
	my $b = $node->background_psql('app23', extra_params => [ '-U', 'alice' ]);
	$b->query_safe('BEGIN');
	$b->query_safe($install =~ /UPDATE/ ? 'CREATE DOMAIN public.snowflake_timestamp AS bigint' : $domain);
	# In a transaction whose snapshot was taken before: the script's own check, which reads with
	# it, does not see the domain; the library's check after the script reads what is committed.
	like(r23_waits($b, 'postgres', "BEGIN ISOLATION LEVEL REPEATABLE READ;\nSELECT count(*) FROM pg_class;\n$install;\nCOMMIT;",
			"$install, after the owner's open transaction that made a domain"),
		qr/ERROR:  schema public holds a function or type snowflake_timestamp named like a function of extension snowflake/,
		"R23, $install: then refused, the domain there");
	is($node->safe_psql('app23', q{SELECT coalesce((SELECT extversion FROM pg_extension WHERE extname = 'snowflake'), 'none')}),
		$install =~ /UPDATE/ ? '1.2' : 'none', "R23, $install: not done");
	$node->safe_psql('app23', 'DROP DOMAIN public.snowflake_timestamp; DROP EXTENSION IF EXISTS snowflake');
}

# Round 24: the install waited in the lock's queue, behind any role's open transaction that had
# made a temporary table (or a prepared one), and every DDL statement of the database queued behind
# it.  Now it polls without queueing, until lock_timeout (or 10 s), and is refused then.
my $c = $node->background_psql('app23', extra_params => [ '-U', 'alice' ]);
$c->query_safe('BEGIN');
$c->query_safe('CREATE TEMP TABLE r24 (a int)');
my $c_pid = $c->query_safe('SELECT pg_backend_pid()');
# A DDL transaction in another database holds up nothing here, and the hint does not name it
# (round 26: its query listed them too).
my $o = $node->background_psql('app', extra_params => [ '-U', 'alice' ]);
$o->query_safe('BEGIN');
$o->query_safe('CREATE TEMP TABLE r26 (a int)');
($ret, $out, $err) = $node->psql('app23', q{SET lock_timeout = '300ms'; CREATE EXTENSION snowflake SCHEMA public});
like($err, qr/ERROR:  extension snowflake cannot be installed or updated while transactions that ran DDL in this database are open/,
	'R24: an install that cannot take its lock within lock_timeout is refused');
my ($hint_query) = $err =~ /HINT:  Find them with (SELECT .*?), end them/;
like($hint_query // '', qr/^SELECT /, 'R24: the hint gives a query');
is($node->safe_psql('app23', "SELECT string_agg(pid::text, ',') FROM ($hint_query) q"), $c_pid,
	'R26: the hint\'s query finds the transaction of this database, not the other database\'s');
$o->query_safe('COMMIT');
$o->quit;
my $d = $node->background_psql('app23');
$d->query_until(qr/sent/, "\\echo sent\nCREATE EXTENSION snowflake SCHEMA public;\n\\echo finished\n");
ok($node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_stat_activity WHERE usename = 'postgres' AND datname = 'app23' AND wait_event_type = 'Extension'}),
	'R24: an install waits for the open transaction that made a temporary table');
($ret, $out, $err) = $node->psql('app23', q{SET lock_timeout = '2s'; CREATE TEMP TABLE r24b (a int)}, extra_params => [ '-U', 'alice' ]);
is($ret, 0, 'R24: meanwhile other DDL does not wait behind it') or diag($err);
$c->query_safe('COMMIT');
$c->quit;
$d->query_until(qr/finished/, '');
is($d->{stderr}, '', 'R24: the install goes on once that transaction ends');
$d->quit;
is($node->safe_psql('app23', q{SELECT extversion FROM pg_extension WHERE extname = 'snowflake'}), '1.3', 'R24: installed');

# DROP EXTENSION still works (the trigger goes with it), and the schema is then the owner's again.
$node->safe_psql('app', 'DROP TABLE public.orders; DROP EXTENSION snowflake');
($ret, $out, $err) = alice('ALTER SCHEMA public RENAME TO public_; ALTER SCHEMA public_ RENAME TO public');
is($ret, 0, 'after DROP EXTENSION the schema is renamed as before') or diag($err);

done_testing();
