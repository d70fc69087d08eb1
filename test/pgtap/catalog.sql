-- catalog.sql: pgTAP checks of the catalog contract of snowflake 1.0.
--
-- What a user's DDL and queries rely on, read from the catalogs: every function of
-- sql/snowflake--1.0.sql with its exact argument types and names, result type, language,
-- volatility, strictness, parallel label and comment; the OUT columns of snowflake_decode and
-- snowflake_status; each setting's type, range, default, unit and context; the extension's
-- version and relocatability.  The functions are checked in the order of the install script.
-- The extension is created at version 1.0 whatever the default version is; the functions that
-- later versions add are checked in their own files.
--
-- Run with pg_prove against a server that preloads snowflake.  Everything happens in one
-- transaction that is rolled back, so the database is left as it was.

\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;

SET LOCAL client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
-- Version 1.0 exactly, whatever the default version is: this file is 1.0's contract.
DROP EXTENSION IF EXISTS snowflake CASCADE;
CREATE EXTENSION snowflake VERSION '1.0';

SELECT n.nspname AS sf_schema
FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
WHERE e.extname = 'snowflake' \gset

-- The pg_proc row of a function of the extension's schema, by signature ('name(types)');
-- no row (so a failed test, not an error) when there is no such function.
CREATE FUNCTION pg_temp.sf_proc(sig text) RETURNS SETOF pg_proc
LANGUAGE sql STABLE AS $$
    SELECT * FROM pg_catalog.pg_proc
    WHERE oid = pg_catalog.to_regprocedure(
        (SELECT pg_catalog.quote_ident(n.nspname)
         FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
         WHERE e.extname = 'snowflake') || '.' || sig)
$$;

-- proparallel: 's' safe, 'r' restricted, 'u' unsafe.
CREATE FUNCTION pg_temp.sf_parallel(sig text) RETURNS "char"
LANGUAGE sql STABLE AS $$ SELECT proparallel FROM pg_temp.sf_proc(sig) $$;

-- Argument names of all arguments (IN and OUT), '{}' when none are named.
CREATE FUNCTION pg_temp.sf_argnames(sig text) RETURNS text[]
LANGUAGE sql STABLE AS $$ SELECT coalesce(proargnames, '{}') FROM pg_temp.sf_proc(sig) $$;

-- Argument modes of all arguments ('{}' when all are IN: proargmodes is then NULL).
CREATE FUNCTION pg_temp.sf_argmodes(sig text) RETURNS text[]
LANGUAGE sql STABLE AS $$ SELECT coalesce(proargmodes::text[], '{}') FROM pg_temp.sf_proc(sig) $$;

-- Types of all arguments (IN and OUT), as format_type names.
CREATE FUNCTION pg_temp.sf_argtypes(sig text) RETURNS text[]
LANGUAGE sql STABLE AS $$
    SELECT array_agg(pg_catalog.format_type(t, NULL) ORDER BY i)
    FROM pg_temp.sf_proc(sig) p,
         unnest(coalesce(p.proallargtypes, p.proargtypes::oid[])) WITH ORDINALITY AS a(t, i)
$$;

-- True when the function has a non-empty COMMENT.
CREATE FUNCTION pg_temp.sf_has_comment(sig text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(length(obj_description(oid, 'pg_proc')), 0) > 0 FROM pg_temp.sf_proc(sig)
$$;

-- One attribute of a setting, as text ('' for NULL); no row when the setting is missing.
CREATE FUNCTION pg_temp.sf_setting(guc text, attr text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT coalesce(CASE attr
                        WHEN 'vartype' THEN vartype
                        WHEN 'min_val' THEN min_val
                        WHEN 'max_val' THEN max_val
                        WHEN 'boot_val' THEN boot_val
                        WHEN 'unit' THEN unit
                        WHEN 'context' THEN context
                    END, '')
    FROM pg_catalog.pg_settings WHERE name = guc
$$;

SELECT plan(155);

-- The extension.

SELECT is((SELECT extversion FROM pg_extension WHERE extname = 'snowflake'), '1.0',
          'extension snowflake is at version 1.0');
SELECT is((SELECT extrelocatable FROM pg_extension WHERE extname = 'snowflake'), false,
          'extension snowflake is not relocatable');
SELECT is((SELECT relocatable FROM pg_available_extension_versions
           WHERE name = 'snowflake' AND version = '1.0'), false,
          'snowflake.control says relocatable = false');
SELECT is((SELECT array_agg(p.proname || '(' || pg_catalog.oidvectortypes(p.proargtypes) || ')'
                            ORDER BY p.proname || '(' || pg_catalog.oidvectortypes(p.proargtypes) || ')' COLLATE "C")
           FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
           WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
             AND d.refclassid = 'pg_extension'::regclass
             AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake')),
          ARRAY['snowflake_datacenter_id(bigint)',
                'snowflake_decode(bigint)',
                'snowflake_encode(bigint, integer, integer, integer)',
                'snowflake_encode(timestamp with time zone, integer, integer, integer)',
                'snowflake_machine_id(bigint)',
                'snowflake_max_id(timestamp with time zone)',
                'snowflake_min_id(timestamp with time zone)',
                'snowflake_next()',
                'snowflake_next_n(integer)',
                'snowflake_sequence(bigint)',
                'snowflake_status()',
                'snowflake_timestamp(bigint)',
                'snowflake_unix_ms(bigint)'],
          'extension snowflake 1.0 has exactly the 13 functions of its install script');

-- snowflake_next()

SELECT has_function(:'sf_schema', 'snowflake_next', ARRAY[]::text[],
                    'snowflake_next() exists');
SELECT function_returns(:'sf_schema', 'snowflake_next', ARRAY[]::text[], 'bigint',
                        'snowflake_next() returns bigint');
SELECT function_lang_is(:'sf_schema', 'snowflake_next', ARRAY[]::text[], 'c',
                        'snowflake_next() is LANGUAGE C');
SELECT volatility_is(:'sf_schema', 'snowflake_next', ARRAY[]::text[], 'volatile',
                     'snowflake_next() is VOLATILE');
SELECT isnt_strict(:'sf_schema', 'snowflake_next', ARRAY[]::text[],
                   'snowflake_next() is not STRICT');
SELECT is(pg_temp.sf_parallel('snowflake_next()'), 's',
          'snowflake_next() is PARALLEL SAFE');
SELECT is(pg_temp.sf_argnames('snowflake_next()'), '{}',
          'snowflake_next() has no arguments');
SELECT ok(pg_temp.sf_has_comment('snowflake_next()'),
          'snowflake_next() has a comment');

-- snowflake_next_n(n int)

SELECT has_function(:'sf_schema', 'snowflake_next_n', ARRAY['integer'],
                    'snowflake_next_n(integer) exists');
SELECT function_returns(:'sf_schema', 'snowflake_next_n', ARRAY['integer'], 'setof bigint',
                        'snowflake_next_n(integer) returns setof bigint');
SELECT function_lang_is(:'sf_schema', 'snowflake_next_n', ARRAY['integer'], 'c',
                        'snowflake_next_n(integer) is LANGUAGE C');
SELECT volatility_is(:'sf_schema', 'snowflake_next_n', ARRAY['integer'], 'volatile',
                     'snowflake_next_n(integer) is VOLATILE');
SELECT is_strict(:'sf_schema', 'snowflake_next_n', ARRAY['integer'],
                 'snowflake_next_n(integer) is STRICT');
SELECT is(pg_temp.sf_parallel('snowflake_next_n(integer)'), 's',
          'snowflake_next_n(integer) is PARALLEL SAFE');
SELECT is(pg_temp.sf_argnames('snowflake_next_n(integer)'), '{n}',
          'snowflake_next_n(integer): argument named n');
SELECT ok(pg_temp.sf_has_comment('snowflake_next_n(integer)'),
          'snowflake_next_n(integer) has a comment');

-- snowflake_encode(unix_ms bigint, datacenter_id int, machine_id int, sequence int)

SELECT has_function(:'sf_schema', 'snowflake_encode', ARRAY['bigint', 'integer', 'integer', 'integer'],
                    'snowflake_encode(bigint, integer, integer, integer) exists');
SELECT function_returns(:'sf_schema', 'snowflake_encode', ARRAY['bigint', 'integer', 'integer', 'integer'], 'bigint',
                        'snowflake_encode(bigint, integer, integer, integer) returns bigint');
SELECT function_lang_is(:'sf_schema', 'snowflake_encode', ARRAY['bigint', 'integer', 'integer', 'integer'], 'c',
                        'snowflake_encode(bigint, integer, integer, integer) is LANGUAGE C');
SELECT volatility_is(:'sf_schema', 'snowflake_encode', ARRAY['bigint', 'integer', 'integer', 'integer'], 'immutable',
                     'snowflake_encode(bigint, integer, integer, integer) is IMMUTABLE');
SELECT is_strict(:'sf_schema', 'snowflake_encode', ARRAY['bigint', 'integer', 'integer', 'integer'],
                 'snowflake_encode(bigint, integer, integer, integer) is STRICT');
SELECT is(pg_temp.sf_parallel('snowflake_encode(bigint, integer, integer, integer)'), 's',
          'snowflake_encode(bigint, integer, integer, integer) is PARALLEL SAFE');
SELECT is(pg_temp.sf_argnames('snowflake_encode(bigint, integer, integer, integer)'),
          '{unix_ms,datacenter_id,machine_id,sequence}',
          'snowflake_encode(bigint, integer, integer, integer): argument names');
SELECT ok(pg_temp.sf_has_comment('snowflake_encode(bigint, integer, integer, integer)'),
          'snowflake_encode(bigint, integer, integer, integer) has a comment');

-- snowflake_encode(ts timestamptz, datacenter_id int, machine_id int, sequence int)

SELECT has_function(:'sf_schema', 'snowflake_encode', ARRAY['timestamp with time zone', 'integer', 'integer', 'integer'],
                    'snowflake_encode(timestamptz, integer, integer, integer) exists');
SELECT function_returns(:'sf_schema', 'snowflake_encode', ARRAY['timestamp with time zone', 'integer', 'integer', 'integer'], 'bigint',
                        'snowflake_encode(timestamptz, integer, integer, integer) returns bigint');
SELECT function_lang_is(:'sf_schema', 'snowflake_encode', ARRAY['timestamp with time zone', 'integer', 'integer', 'integer'], 'c',
                        'snowflake_encode(timestamptz, integer, integer, integer) is LANGUAGE C');
SELECT volatility_is(:'sf_schema', 'snowflake_encode', ARRAY['timestamp with time zone', 'integer', 'integer', 'integer'], 'immutable',
                     'snowflake_encode(timestamptz, integer, integer, integer) is IMMUTABLE');
SELECT is_strict(:'sf_schema', 'snowflake_encode', ARRAY['timestamp with time zone', 'integer', 'integer', 'integer'],
                 'snowflake_encode(timestamptz, integer, integer, integer) is STRICT');
SELECT is(pg_temp.sf_parallel('snowflake_encode(timestamp with time zone, integer, integer, integer)'), 's',
          'snowflake_encode(timestamptz, integer, integer, integer) is PARALLEL SAFE');
SELECT is(pg_temp.sf_argnames('snowflake_encode(timestamp with time zone, integer, integer, integer)'),
          '{ts,datacenter_id,machine_id,sequence}',
          'snowflake_encode(timestamptz, integer, integer, integer): argument names');
SELECT ok(pg_temp.sf_has_comment('snowflake_encode(timestamp with time zone, integer, integer, integer)'),
          'snowflake_encode(timestamptz, integer, integer, integer) has a comment');

-- snowflake_decode(id bigint, OUT ts timestamptz, OUT unix_ms bigint, OUT datacenter_id int,
--                  OUT machine_id int, OUT sequence int)

SELECT has_function(:'sf_schema', 'snowflake_decode', ARRAY['bigint'],
                    'snowflake_decode(bigint) exists');
SELECT function_returns(:'sf_schema', 'snowflake_decode', ARRAY['bigint'], 'record',
                        'snowflake_decode(bigint) returns record');
SELECT function_lang_is(:'sf_schema', 'snowflake_decode', ARRAY['bigint'], 'c',
                        'snowflake_decode(bigint) is LANGUAGE C');
SELECT volatility_is(:'sf_schema', 'snowflake_decode', ARRAY['bigint'], 'immutable',
                     'snowflake_decode(bigint) is IMMUTABLE');
SELECT is_strict(:'sf_schema', 'snowflake_decode', ARRAY['bigint'],
                 'snowflake_decode(bigint) is STRICT');
SELECT is(pg_temp.sf_parallel('snowflake_decode(bigint)'), 's',
          'snowflake_decode(bigint) is PARALLEL SAFE');
SELECT is(pg_temp.sf_argnames('snowflake_decode(bigint)'),
          '{id,ts,unix_ms,datacenter_id,machine_id,sequence}',
          'snowflake_decode(bigint): argument id, then OUT ts, unix_ms, datacenter_id, machine_id, sequence');
SELECT is(pg_temp.sf_argmodes('snowflake_decode(bigint)'),
          '{i,o,o,o,o,o}',
          'snowflake_decode(bigint): one IN argument, five OUT columns');
SELECT is(pg_temp.sf_argtypes('snowflake_decode(bigint)'),
          '{bigint,"timestamp with time zone",bigint,integer,integer,integer}',
          'snowflake_decode(bigint): types (id bigint; ts timestamptz, unix_ms bigint, datacenter_id, machine_id, sequence integer)');
SELECT ok(pg_temp.sf_has_comment('snowflake_decode(bigint)'),
          'snowflake_decode(bigint) has a comment');

-- snowflake_timestamp(id bigint)

SELECT has_function(:'sf_schema', 'snowflake_timestamp', ARRAY['bigint'],
                    'snowflake_timestamp(bigint) exists');
SELECT function_returns(:'sf_schema', 'snowflake_timestamp', ARRAY['bigint'], 'timestamp with time zone',
                        'snowflake_timestamp(bigint) returns timestamptz');
SELECT function_lang_is(:'sf_schema', 'snowflake_timestamp', ARRAY['bigint'], 'c',
                        'snowflake_timestamp(bigint) is LANGUAGE C');
SELECT volatility_is(:'sf_schema', 'snowflake_timestamp', ARRAY['bigint'], 'immutable',
                     'snowflake_timestamp(bigint) is IMMUTABLE');
SELECT is_strict(:'sf_schema', 'snowflake_timestamp', ARRAY['bigint'],
                 'snowflake_timestamp(bigint) is STRICT');
SELECT is(pg_temp.sf_parallel('snowflake_timestamp(bigint)'), 's',
          'snowflake_timestamp(bigint) is PARALLEL SAFE');
SELECT is(pg_temp.sf_argnames('snowflake_timestamp(bigint)'), '{id}',
          'snowflake_timestamp(bigint): argument named id');
SELECT ok(pg_temp.sf_has_comment('snowflake_timestamp(bigint)'),
          'snowflake_timestamp(bigint) has a comment');

-- snowflake_unix_ms(id bigint)

SELECT has_function(:'sf_schema', 'snowflake_unix_ms', ARRAY['bigint'],
                    'snowflake_unix_ms(bigint) exists');
SELECT function_returns(:'sf_schema', 'snowflake_unix_ms', ARRAY['bigint'], 'bigint',
                        'snowflake_unix_ms(bigint) returns bigint');
SELECT function_lang_is(:'sf_schema', 'snowflake_unix_ms', ARRAY['bigint'], 'c',
                        'snowflake_unix_ms(bigint) is LANGUAGE C');
SELECT volatility_is(:'sf_schema', 'snowflake_unix_ms', ARRAY['bigint'], 'immutable',
                     'snowflake_unix_ms(bigint) is IMMUTABLE');
SELECT is_strict(:'sf_schema', 'snowflake_unix_ms', ARRAY['bigint'],
                 'snowflake_unix_ms(bigint) is STRICT');
SELECT is(pg_temp.sf_parallel('snowflake_unix_ms(bigint)'), 's',
          'snowflake_unix_ms(bigint) is PARALLEL SAFE');
SELECT is(pg_temp.sf_argnames('snowflake_unix_ms(bigint)'), '{id}',
          'snowflake_unix_ms(bigint): argument named id');
SELECT ok(pg_temp.sf_has_comment('snowflake_unix_ms(bigint)'),
          'snowflake_unix_ms(bigint) has a comment');

-- snowflake_datacenter_id(id bigint)

SELECT has_function(:'sf_schema', 'snowflake_datacenter_id', ARRAY['bigint'],
                    'snowflake_datacenter_id(bigint) exists');
SELECT function_returns(:'sf_schema', 'snowflake_datacenter_id', ARRAY['bigint'], 'integer',
                        'snowflake_datacenter_id(bigint) returns integer');
SELECT function_lang_is(:'sf_schema', 'snowflake_datacenter_id', ARRAY['bigint'], 'c',
                        'snowflake_datacenter_id(bigint) is LANGUAGE C');
SELECT volatility_is(:'sf_schema', 'snowflake_datacenter_id', ARRAY['bigint'], 'immutable',
                     'snowflake_datacenter_id(bigint) is IMMUTABLE');
SELECT is_strict(:'sf_schema', 'snowflake_datacenter_id', ARRAY['bigint'],
                 'snowflake_datacenter_id(bigint) is STRICT');
SELECT is(pg_temp.sf_parallel('snowflake_datacenter_id(bigint)'), 's',
          'snowflake_datacenter_id(bigint) is PARALLEL SAFE');
SELECT is(pg_temp.sf_argnames('snowflake_datacenter_id(bigint)'), '{id}',
          'snowflake_datacenter_id(bigint): argument named id');
SELECT ok(pg_temp.sf_has_comment('snowflake_datacenter_id(bigint)'),
          'snowflake_datacenter_id(bigint) has a comment');

-- snowflake_machine_id(id bigint)

SELECT has_function(:'sf_schema', 'snowflake_machine_id', ARRAY['bigint'],
                    'snowflake_machine_id(bigint) exists');
SELECT function_returns(:'sf_schema', 'snowflake_machine_id', ARRAY['bigint'], 'integer',
                        'snowflake_machine_id(bigint) returns integer');
SELECT function_lang_is(:'sf_schema', 'snowflake_machine_id', ARRAY['bigint'], 'c',
                        'snowflake_machine_id(bigint) is LANGUAGE C');
SELECT volatility_is(:'sf_schema', 'snowflake_machine_id', ARRAY['bigint'], 'immutable',
                     'snowflake_machine_id(bigint) is IMMUTABLE');
SELECT is_strict(:'sf_schema', 'snowflake_machine_id', ARRAY['bigint'],
                 'snowflake_machine_id(bigint) is STRICT');
SELECT is(pg_temp.sf_parallel('snowflake_machine_id(bigint)'), 's',
          'snowflake_machine_id(bigint) is PARALLEL SAFE');
SELECT is(pg_temp.sf_argnames('snowflake_machine_id(bigint)'), '{id}',
          'snowflake_machine_id(bigint): argument named id');
SELECT ok(pg_temp.sf_has_comment('snowflake_machine_id(bigint)'),
          'snowflake_machine_id(bigint) has a comment');

-- snowflake_sequence(id bigint)

SELECT has_function(:'sf_schema', 'snowflake_sequence', ARRAY['bigint'],
                    'snowflake_sequence(bigint) exists');
SELECT function_returns(:'sf_schema', 'snowflake_sequence', ARRAY['bigint'], 'integer',
                        'snowflake_sequence(bigint) returns integer');
SELECT function_lang_is(:'sf_schema', 'snowflake_sequence', ARRAY['bigint'], 'c',
                        'snowflake_sequence(bigint) is LANGUAGE C');
SELECT volatility_is(:'sf_schema', 'snowflake_sequence', ARRAY['bigint'], 'immutable',
                     'snowflake_sequence(bigint) is IMMUTABLE');
SELECT is_strict(:'sf_schema', 'snowflake_sequence', ARRAY['bigint'],
                 'snowflake_sequence(bigint) is STRICT');
SELECT is(pg_temp.sf_parallel('snowflake_sequence(bigint)'), 's',
          'snowflake_sequence(bigint) is PARALLEL SAFE');
SELECT is(pg_temp.sf_argnames('snowflake_sequence(bigint)'), '{id}',
          'snowflake_sequence(bigint): argument named id');
SELECT ok(pg_temp.sf_has_comment('snowflake_sequence(bigint)'),
          'snowflake_sequence(bigint) has a comment');

-- snowflake_min_id(ts timestamptz)

SELECT has_function(:'sf_schema', 'snowflake_min_id', ARRAY['timestamp with time zone'],
                    'snowflake_min_id(timestamptz) exists');
SELECT function_returns(:'sf_schema', 'snowflake_min_id', ARRAY['timestamp with time zone'], 'bigint',
                        'snowflake_min_id(timestamptz) returns bigint');
SELECT function_lang_is(:'sf_schema', 'snowflake_min_id', ARRAY['timestamp with time zone'], 'c',
                        'snowflake_min_id(timestamptz) is LANGUAGE C');
SELECT volatility_is(:'sf_schema', 'snowflake_min_id', ARRAY['timestamp with time zone'], 'immutable',
                     'snowflake_min_id(timestamptz) is IMMUTABLE');
SELECT is_strict(:'sf_schema', 'snowflake_min_id', ARRAY['timestamp with time zone'],
                 'snowflake_min_id(timestamptz) is STRICT');
SELECT is(pg_temp.sf_parallel('snowflake_min_id(timestamp with time zone)'), 's',
          'snowflake_min_id(timestamptz) is PARALLEL SAFE');
SELECT is(pg_temp.sf_argnames('snowflake_min_id(timestamp with time zone)'), '{ts}',
          'snowflake_min_id(timestamptz): argument named ts');
SELECT ok(pg_temp.sf_has_comment('snowflake_min_id(timestamp with time zone)'),
          'snowflake_min_id(timestamptz) has a comment');

-- snowflake_max_id(ts timestamptz)

SELECT has_function(:'sf_schema', 'snowflake_max_id', ARRAY['timestamp with time zone'],
                    'snowflake_max_id(timestamptz) exists');
SELECT function_returns(:'sf_schema', 'snowflake_max_id', ARRAY['timestamp with time zone'], 'bigint',
                        'snowflake_max_id(timestamptz) returns bigint');
SELECT function_lang_is(:'sf_schema', 'snowflake_max_id', ARRAY['timestamp with time zone'], 'c',
                        'snowflake_max_id(timestamptz) is LANGUAGE C');
SELECT volatility_is(:'sf_schema', 'snowflake_max_id', ARRAY['timestamp with time zone'], 'immutable',
                     'snowflake_max_id(timestamptz) is IMMUTABLE');
SELECT is_strict(:'sf_schema', 'snowflake_max_id', ARRAY['timestamp with time zone'],
                 'snowflake_max_id(timestamptz) is STRICT');
SELECT is(pg_temp.sf_parallel('snowflake_max_id(timestamp with time zone)'), 's',
          'snowflake_max_id(timestamptz) is PARALLEL SAFE');
SELECT is(pg_temp.sf_argnames('snowflake_max_id(timestamp with time zone)'), '{ts}',
          'snowflake_max_id(timestamptz): argument named ts');
SELECT ok(pg_temp.sf_has_comment('snowflake_max_id(timestamp with time zone)'),
          'snowflake_max_id(timestamptz) has a comment');

-- snowflake_status(OUT datacenter_id int, OUT machine_id int, OUT last_id bigint,
--                  OUT last_ts timestamptz, OUT last_sequence int, OUT clock_rollbacks bigint,
--                  OUT max_rollback_ms bigint, OUT waits bigint, OUT refusals bigint,
--                  OUT reserved_until timestamptz)

SELECT has_function(:'sf_schema', 'snowflake_status', ARRAY[]::text[],
                    'snowflake_status() exists');
SELECT function_returns(:'sf_schema', 'snowflake_status', ARRAY[]::text[], 'setof record',
                        'snowflake_status() returns setof record');
SELECT function_lang_is(:'sf_schema', 'snowflake_status', ARRAY[]::text[], 'c',
                        'snowflake_status() is LANGUAGE C');
SELECT volatility_is(:'sf_schema', 'snowflake_status', ARRAY[]::text[], 'volatile',
                     'snowflake_status() is VOLATILE');
SELECT isnt_strict(:'sf_schema', 'snowflake_status', ARRAY[]::text[],
                   'snowflake_status() is not STRICT');
SELECT is(pg_temp.sf_parallel('snowflake_status()'), 's',
          'snowflake_status() is PARALLEL SAFE');
SELECT is(pg_temp.sf_argnames('snowflake_status()'),
          '{datacenter_id,machine_id,last_id,last_ts,last_sequence,clock_rollbacks,max_rollback_ms,waits,refusals,reserved_until}',
          'snowflake_status(): OUT column names');
SELECT is(pg_temp.sf_argmodes('snowflake_status()'),
          '{o,o,o,o,o,o,o,o,o,o}',
          'snowflake_status(): no IN argument, ten OUT columns');
SELECT is(pg_temp.sf_argtypes('snowflake_status()'),
          '{integer,integer,bigint,"timestamp with time zone",integer,bigint,bigint,bigint,bigint,"timestamp with time zone"}',
          'snowflake_status(): OUT column types');
SELECT ok(pg_temp.sf_has_comment('snowflake_status()'),
          'snowflake_status() has a comment');

-- Settings: type, range, default, unit ('' = none) and who may set them.

SELECT is(pg_temp.sf_setting('snowflake.datacenter_id', 'vartype'), 'integer',
          'snowflake.datacenter_id is an integer');
SELECT is(pg_temp.sf_setting('snowflake.datacenter_id', 'min_val'), '-1',
          'snowflake.datacenter_id min is -1 (unset)');
SELECT is(pg_temp.sf_setting('snowflake.datacenter_id', 'max_val'), '31',
          'snowflake.datacenter_id max is 31');
SELECT is(pg_temp.sf_setting('snowflake.datacenter_id', 'boot_val'), '-1',
          'snowflake.datacenter_id default is -1 (unset)');
SELECT is(pg_temp.sf_setting('snowflake.datacenter_id', 'unit'), '',
          'snowflake.datacenter_id has no unit');
SELECT is(pg_temp.sf_setting('snowflake.datacenter_id', 'context'), 'superuser',
          'snowflake.datacenter_id is set by superusers (context superuser)');

SELECT is(pg_temp.sf_setting('snowflake.machine_id', 'vartype'), 'integer',
          'snowflake.machine_id is an integer');
SELECT is(pg_temp.sf_setting('snowflake.machine_id', 'min_val'), '-1',
          'snowflake.machine_id min is -1 (unset)');
SELECT is(pg_temp.sf_setting('snowflake.machine_id', 'max_val'), '31',
          'snowflake.machine_id max is 31');
SELECT is(pg_temp.sf_setting('snowflake.machine_id', 'boot_val'), '-1',
          'snowflake.machine_id default is -1 (unset)');
SELECT is(pg_temp.sf_setting('snowflake.machine_id', 'unit'), '',
          'snowflake.machine_id has no unit');
SELECT is(pg_temp.sf_setting('snowflake.machine_id', 'context'), 'superuser',
          'snowflake.machine_id is set by superusers (context superuser)');

SELECT is(pg_temp.sf_setting('snowflake.max_lead_ms', 'vartype'), 'integer',
          'snowflake.max_lead_ms is an integer');
SELECT is(pg_temp.sf_setting('snowflake.max_lead_ms', 'min_val'), '0',
          'snowflake.max_lead_ms min is 0');
SELECT is(pg_temp.sf_setting('snowflake.max_lead_ms', 'max_val'), '3600000',
          'snowflake.max_lead_ms max is 3600000 (1 h)');
SELECT is(pg_temp.sf_setting('snowflake.max_lead_ms', 'boot_val'), '0',
          'snowflake.max_lead_ms default is 0');
SELECT is(pg_temp.sf_setting('snowflake.max_lead_ms', 'unit'), 'ms',
          'snowflake.max_lead_ms unit is ms');
SELECT is(pg_temp.sf_setting('snowflake.max_lead_ms', 'context'), 'superuser',
          'snowflake.max_lead_ms is set by superusers (context superuser)');

SELECT is(pg_temp.sf_setting('snowflake.max_wait_ms', 'vartype'), 'integer',
          'snowflake.max_wait_ms is an integer');
SELECT is(pg_temp.sf_setting('snowflake.max_wait_ms', 'min_val'), '0',
          'snowflake.max_wait_ms min is 0');
SELECT is(pg_temp.sf_setting('snowflake.max_wait_ms', 'max_val'), '2147483647',
          'snowflake.max_wait_ms max is 2147483647');
SELECT is(pg_temp.sf_setting('snowflake.max_wait_ms', 'boot_val'), '10000',
          'snowflake.max_wait_ms default is 10000 (10 s)');
SELECT is(pg_temp.sf_setting('snowflake.max_wait_ms', 'unit'), 'ms',
          'snowflake.max_wait_ms unit is ms');
SELECT is(pg_temp.sf_setting('snowflake.max_wait_ms', 'context'), 'user',
          'snowflake.max_wait_ms is set by any user (context user)');

SELECT is(pg_temp.sf_setting('snowflake.reservation_ms', 'vartype'), 'integer',
          'snowflake.reservation_ms is an integer');
SELECT is(pg_temp.sf_setting('snowflake.reservation_ms', 'min_val'), '10',
          'snowflake.reservation_ms min is 10');
SELECT is(pg_temp.sf_setting('snowflake.reservation_ms', 'max_val'), '3600000',
          'snowflake.reservation_ms max is 3600000 (1 h)');
SELECT is(pg_temp.sf_setting('snowflake.reservation_ms', 'boot_val'), '1000',
          'snowflake.reservation_ms default is 1000 (1 s)');
SELECT is(pg_temp.sf_setting('snowflake.reservation_ms', 'unit'), 'ms',
          'snowflake.reservation_ms unit is ms');
SELECT is(pg_temp.sf_setting('snowflake.reservation_ms', 'context'), 'sighup',
          'snowflake.reservation_ms is set in the configuration and reloaded (context sighup)');

-- The fleet safety switches (booleans, off by default, reloadable).

SELECT is(pg_temp.sf_setting('snowflake.failover_adopt', 'vartype'), 'bool',
          'snowflake.failover_adopt is a boolean');
SELECT is(pg_temp.sf_setting('snowflake.failover_adopt', 'min_val'), '',
          'snowflake.failover_adopt has no min');
SELECT is(pg_temp.sf_setting('snowflake.failover_adopt', 'max_val'), '',
          'snowflake.failover_adopt has no max');
SELECT is(pg_temp.sf_setting('snowflake.failover_adopt', 'boot_val'), 'off',
          'snowflake.failover_adopt default is off');
SELECT is(pg_temp.sf_setting('snowflake.failover_adopt', 'unit'), '',
          'snowflake.failover_adopt has no unit');
SELECT is(pg_temp.sf_setting('snowflake.failover_adopt', 'context'), 'sighup',
          'snowflake.failover_adopt is set in the configuration and reloaded (context sighup)');

SELECT is(pg_temp.sf_setting('snowflake.require_claim', 'vartype'), 'bool',
          'snowflake.require_claim is a boolean');
SELECT is(pg_temp.sf_setting('snowflake.require_claim', 'min_val'), '',
          'snowflake.require_claim has no min');
SELECT is(pg_temp.sf_setting('snowflake.require_claim', 'max_val'), '',
          'snowflake.require_claim has no max');
SELECT is(pg_temp.sf_setting('snowflake.require_claim', 'boot_val'), 'off',
          'snowflake.require_claim default is off');
SELECT is(pg_temp.sf_setting('snowflake.require_claim', 'unit'), '',
          'snowflake.require_claim has no unit');
SELECT is(pg_temp.sf_setting('snowflake.require_claim', 'context'), 'sighup',
          'snowflake.require_claim is set in the configuration and reloaded (context sighup)');

-- No other snowflake.* setting exists (a new one must be added here, with its checks).
SELECT is((SELECT array_agg(name::text ORDER BY name COLLATE "C") FROM pg_settings WHERE name LIKE 'snowflake.%'),
          ARRAY['snowflake.datacenter_id', 'snowflake.failover_adopt', 'snowflake.machine_id',
                'snowflake.max_lead_ms', 'snowflake.max_wait_ms', 'snowflake.require_claim',
                'snowflake.reservation_ms'],
          'the snowflake.* settings are exactly these seven');

SELECT * FROM finish();

ROLLBACK;
