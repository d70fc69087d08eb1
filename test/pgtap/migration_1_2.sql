-- migration_1_2.sql: pgTAP checks of the contract of snowflake_migrate_column() in version 1.2.
--
-- Its signature (tbl regclass, col name DEFAULT 'id', new_type regtype DEFAULT 'bigint') with
-- the 1.1 one gone, whether from a fresh 1.2 or an update from 1.1; its labels, pinned settings,
-- comment and who may run it; that 1.1 calls still resolve; that new_type takes bigint and
-- refuses other types with 22023; and the keys of its summary.  Everything happens in one
-- transaction that is rolled back.

\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;

SET LOCAL client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
DROP EXTENSION IF EXISTS snowflake CASCADE;
CREATE SCHEMA sf_mig;
CREATE EXTENSION snowflake SCHEMA sf_mig;
CREATE ROLE snowflake_pgtap_mig_plain;

SELECT plan(20);

SELECT has_function('sf_mig', 'snowflake_migrate_column', ARRAY['regclass', 'name', 'regtype'],
                    'snowflake_migrate_column(regclass, name, regtype) exists');
SELECT hasnt_function('sf_mig', 'snowflake_migrate_column', ARRAY['regclass', 'name'],
                      'the 1.1 signature snowflake_migrate_column(regclass, name) is gone');
SELECT is((SELECT count(*)::int FROM pg_proc WHERE proname = 'snowflake_migrate_column'), 1,
          'there is one snowflake_migrate_column()');
SELECT is(pg_get_function_arguments('sf_mig.snowflake_migrate_column(regclass, name, regtype)'::regprocedure),
          'tbl regclass, col name DEFAULT ''id''::name, new_type regtype DEFAULT ''bigint''::regtype',
          'its arguments: tbl, col defaulting to id, new_type defaulting to bigint');
SELECT function_returns('sf_mig', 'snowflake_migrate_column', ARRAY['regclass', 'name', 'regtype'], 'jsonb',
                        'it returns jsonb');
SELECT function_lang_is('sf_mig', 'snowflake_migrate_column', ARRAY['regclass', 'name', 'regtype'], 'plpgsql',
                        'it is PL/pgSQL');
SELECT volatility_is('sf_mig', 'snowflake_migrate_column', ARRAY['regclass', 'name', 'regtype'], 'volatile',
                     'it is VOLATILE');
SELECT isnt_strict('sf_mig', 'snowflake_migrate_column', ARRAY['regclass', 'name', 'regtype'],
                   'it is not STRICT (NULL arguments get their own errors)');
SELECT isnt_definer('sf_mig', 'snowflake_migrate_column', ARRAY['regclass', 'name', 'regtype'],
                    'it runs as the caller, not SECURITY DEFINER');
SELECT is((SELECT proparallel FROM pg_proc WHERE oid = 'sf_mig.snowflake_migrate_column(regclass, name, regtype)'::regprocedure),
          'u'::"char", 'it is PARALLEL UNSAFE');
SELECT is((SELECT proconfig FROM pg_proc WHERE oid = 'sf_mig.snowflake_migrate_column(regclass, name, regtype)'::regprocedure),
          ARRAY['search_path=pg_catalog, pg_temp', 'default_tablespace='],
          'it pins search_path and default_tablespace');
SELECT ok(length(obj_description('sf_mig.snowflake_migrate_column(regclass, name, regtype)'::regprocedure, 'pg_proc')) > 0,
          'it has a comment');
SELECT ok(has_function_privilege('snowflake_pgtap_mig_plain', 'sf_mig.snowflake_migrate_column(regclass, name, regtype)', 'EXECUTE'),
          'anyone may execute it (ALTER TABLE checks ownership)');

-- 1.1 callers: one and two arguments resolve to it, with the extension's schema off the path.
CREATE TABLE public.mig_one (id serial PRIMARY KEY);
CREATE TABLE public.mig_two (k int GENERATED ALWAYS AS IDENTITY PRIMARY KEY);
SELECT is(sf_mig.snowflake_migrate_column('public.mig_one') ->> 'new_type', 'bigint',
          'a 1.1 call with one argument works and makes bigint');
SELECT is(sf_mig.snowflake_migrate_column('public.mig_two', 'k') ->> 'changed', 'true',
          'a 1.1 call with two arguments works');
SELECT is(sf_mig.snowflake_migrate_column('public.mig_one', new_type => 'bigint') ->> 'changed', 'false',
          'new_type => bigint on a migrated column changes nothing');

-- new_type takes nothing but bigint here (and the extension's snowflake type where it has one).
SELECT throws_ok($$SELECT sf_mig.snowflake_migrate_column('public.mig_one', 'id', 'text')$$, '22023',
                 CASE WHEN to_regtype('sf_mig.snowflake') IS NULL THEN 'new_type must be bigint, not text'
                      ELSE 'new_type must be bigint or sf_mig.snowflake, not text' END,
                 'new_type text is refused with 22023');
SELECT throws_ok($$SELECT sf_mig.snowflake_migrate_column('public.mig_one', 'id', NULL)$$, '22004',
                 'new_type must not be null', 'a NULL new_type is refused with 22004');

-- The keys of the summary.
CREATE TABLE public.mig_keys (id serial PRIMARY KEY);
SELECT set_eq($$SELECT jsonb_object_keys(sf_mig.snowflake_migrate_column('public.mig_keys'))$$,
              ARRAY['table', 'column', 'changed', 'old_type', 'old_default', 'new_type', 'new_default',
                    'max_existing_id', 'widened_columns', 'dropped_sequences', 'kept_sequences',
                    'recreated_views', 'refreshed_matviews', 'reparsed_views', 'reparsed_expressions'],
              'the summary of a migration has the documented keys');

-- An update from 1.1 gives the same function.
DROP TABLE public.mig_one, public.mig_two, public.mig_keys;
CREATE TEMP TABLE fresh AS
SELECT pg_get_functiondef(p.oid) AS def FROM pg_proc p WHERE p.proname = 'snowflake_migrate_column';
DROP EXTENSION snowflake CASCADE;
CREATE EXTENSION snowflake SCHEMA sf_mig VERSION '1.1';
ALTER EXTENSION snowflake UPDATE;
SELECT set_eq($$SELECT pg_get_functiondef(p.oid) FROM pg_proc p WHERE p.proname = 'snowflake_migrate_column'$$,
              $$SELECT def FROM fresh$$,
              'an update from 1.1 leaves only the current (1.3) snowflake_migrate_column(), as a fresh install does');

SELECT * FROM finish();
ROLLBACK;
