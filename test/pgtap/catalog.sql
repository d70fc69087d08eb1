-- catalog.sql: pgTAP checks of the catalog contract of snowflake 1.0.
--
-- What a user's DDL and queries rely on, read from the catalogs: every function of
-- sql/snowflake--1.0.sql with its exact argument types and names (IN and OUT), argument modes,
-- result type, language, volatility, strictness, parallel label and comment; each setting's
-- type, range, default, unit and context; the extension's version and relocatability.
-- The contract is written out below as tables, one row per function or setting, in the order
-- of the install script; each column becomes one test per row.  The extension is created at
-- version 1.0 whatever the default version is; what 1.1 adds is checked in catalog_1_1.sql.
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
DROP EXTENSION IF EXISTS snowflake CASCADE;
CREATE EXTENSION snowflake VERSION '1.0';

-- The contract of each 1.0 function.  argtypes/argnames/argmodes cover IN and OUT arguments;
-- argmodes is '{}' when all are IN.
CREATE TEMP TABLE want (ord int, sig text, returns text, lang text, volatility "char", strict boolean,
                        parallel "char", argnames text[], argmodes text[], argtypes text[]);
INSERT INTO want VALUES
 (1, 'snowflake_next()', 'bigint', 'c', 'v', false, 's', '{}', '{}', NULL),
 (2, 'snowflake_next_n(integer)', 'SETOF bigint', 'c', 'v', true, 's', '{n}', '{}', '{integer}'),
 (3, 'snowflake_encode(bigint,integer,integer,integer)', 'bigint', 'c', 'i', true, 's',
     '{unix_ms,datacenter_id,machine_id,sequence}', '{}', '{bigint,integer,integer,integer}'),
 (4, 'snowflake_encode(timestamp with time zone,integer,integer,integer)', 'bigint', 'c', 'i', true, 's',
     '{ts,datacenter_id,machine_id,sequence}', '{}', '{"timestamp with time zone",integer,integer,integer}'),
 (5, 'snowflake_decode(bigint)', 'record', 'c', 'i', true, 's',
     '{id,ts,unix_ms,datacenter_id,machine_id,sequence}', '{i,o,o,o,o,o}',
     '{bigint,"timestamp with time zone",bigint,integer,integer,integer}'),
 (6, 'snowflake_timestamp(bigint)', 'timestamp with time zone', 'c', 'i', true, 's', '{id}', '{}', '{bigint}'),
 (7, 'snowflake_unix_ms(bigint)', 'bigint', 'c', 'i', true, 's', '{id}', '{}', '{bigint}'),
 (8, 'snowflake_datacenter_id(bigint)', 'integer', 'c', 'i', true, 's', '{id}', '{}', '{bigint}'),
 (9, 'snowflake_machine_id(bigint)', 'integer', 'c', 'i', true, 's', '{id}', '{}', '{bigint}'),
 (10, 'snowflake_sequence(bigint)', 'integer', 'c', 'i', true, 's', '{id}', '{}', '{bigint}'),
 (11, 'snowflake_min_id(timestamp with time zone)', 'bigint', 'c', 'i', true, 's', '{ts}', '{}',
      '{"timestamp with time zone"}'),
 (12, 'snowflake_max_id(timestamp with time zone)', 'bigint', 'c', 'i', true, 's', '{ts}', '{}',
      '{"timestamp with time zone"}'),
 (13, 'snowflake_status()', 'SETOF record', 'c', 'v', false, 's',
      '{datacenter_id,machine_id,last_id,last_ts,last_sequence,clock_rollbacks,max_rollback_ms,waits,refusals,reserved_until}',
      '{o,o,o,o,o,o,o,o,o,o}',
      '{integer,integer,bigint,"timestamp with time zone",integer,bigint,bigint,bigint,bigint,"timestamp with time zone"}');

-- What the catalog says, one row per expected function (NULLs where it is missing).
CREATE TEMP VIEW got AS
SELECT w.ord, w.sig, p.oid AS fn,
       CASE WHEN p.proretset THEN 'SETOF ' ELSE '' END || pg_catalog.format_type(p.prorettype, NULL) AS returns,
       l.lanname::text AS lang, p.provolatile AS volatility, p.proisstrict AS strict, p.proparallel AS parallel,
       coalesce(p.proargnames, '{}') AS argnames, coalesce(p.proargmodes::text[], '{}') AS argmodes,
       (SELECT array_agg(pg_catalog.format_type(t, NULL) ORDER BY i)
        FROM unnest(coalesce(p.proallargtypes, p.proargtypes::oid[])) WITH ORDINALITY AS a(t, i)) AS argtypes,
       pg_catalog.obj_description(p.oid, 'pg_proc') AS comment
FROM want w
LEFT JOIN pg_catalog.pg_proc p ON p.oid = pg_catalog.to_regprocedure(
    (SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e
     JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'snowflake') || '.' || w.sig)
LEFT JOIN pg_catalog.pg_language l ON l.oid = p.prolang;

-- The contract of each setting, as pg_settings shows it.
CREATE TEMP TABLE want_setting (name text, vartype text, min_val text, max_val text, boot_val text,
                                unit text, context text);
INSERT INTO want_setting VALUES
 ('snowflake.datacenter_id', 'integer', '-1', '31', '-1', NULL, 'superuser'),
 ('snowflake.machine_id', 'integer', '-1', '31', '-1', NULL, 'superuser'),
 ('snowflake.max_lead_ms', 'integer', '0', '3600000', '0', 'ms', 'superuser'),
 ('snowflake.max_wait_ms', 'integer', '0', '2147483647', '10000', 'ms', 'user'),
 ('snowflake.reservation_ms', 'integer', '10', '3600000', '1000', 'ms', 'sighup'),
 ('snowflake.failover_adopt', 'bool', NULL, NULL, 'off', NULL, 'sighup'),
 ('snowflake.require_claim', 'bool', NULL, NULL, 'off', NULL, 'sighup'),
 ('snowflake.registry', 'string', NULL, NULL, '', NULL, 'postmaster'),
 ('snowflake.registry_database', 'string', NULL, NULL, 'postgres', NULL, 'postmaster'),
 ('snowflake.registry_lease_ms', 'integer', '3000', '86400000', '300000', 'ms', 'sighup'),
 ('snowflake.registry_role', 'string', NULL, NULL, '', NULL, 'sighup'),
 ('snowflake.max_clock_jump_ms', 'integer', '0', '2147483647', '60000', 'ms', 'sighup');

SELECT plan(4 + 13 * 11 + 12 * 7 + 1);

-- The extension.

SELECT is((SELECT extversion FROM pg_extension WHERE extname = 'snowflake'), '1.0',
          'extension snowflake is at version 1.0');
SELECT is((SELECT extrelocatable FROM pg_extension WHERE extname = 'snowflake'), false,
          'extension snowflake is not relocatable');
SELECT is((SELECT relocatable FROM pg_available_extension_versions
           WHERE name = 'snowflake' AND version = '1.0'), false,
          'snowflake.control says relocatable = false');
SELECT is((SELECT count(*) FROM pg_depend d
           WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
             AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake')),
          13::bigint, 'extension snowflake 1.0 has exactly the 13 functions of its install script');

-- Each function: 11 tests.

SELECT ok(g.fn IS NOT NULL, g.sig || ' exists') FROM got g ORDER BY g.ord;
SELECT is(g.returns, w.returns, g.sig || ' returns ' || w.returns) FROM got g JOIN want w USING (ord) ORDER BY ord;
SELECT is(g.lang, w.lang, g.sig || ' is LANGUAGE ' || w.lang) FROM got g JOIN want w USING (ord) ORDER BY ord;
SELECT is(g.volatility, w.volatility,
          g.sig || ' is ' || CASE w.volatility WHEN 'i' THEN 'IMMUTABLE' WHEN 's' THEN 'STABLE' ELSE 'VOLATILE' END)
FROM got g JOIN want w USING (ord) ORDER BY ord;
SELECT is(g.strict, w.strict, g.sig || CASE WHEN w.strict THEN ' is' ELSE ' is not' END || ' STRICT')
FROM got g JOIN want w USING (ord) ORDER BY ord;
SELECT is(g.parallel, w.parallel,
          g.sig || ' is PARALLEL ' || CASE w.parallel WHEN 's' THEN 'SAFE' WHEN 'r' THEN 'RESTRICTED' ELSE 'UNSAFE' END)
FROM got g JOIN want w USING (ord) ORDER BY ord;
SELECT is(g.argnames, w.argnames, g.sig || ' argument names ' || w.argnames::text) FROM got g JOIN want w USING (ord) ORDER BY ord;
SELECT is(g.argmodes, w.argmodes, g.sig || ' argument modes ' || w.argmodes::text) FROM got g JOIN want w USING (ord) ORDER BY ord;
SELECT is(g.argtypes, w.argtypes, g.sig || ' argument types ' || coalesce(w.argtypes::text, 'none'))
FROM got g JOIN want w USING (ord) ORDER BY ord;
SELECT ok(coalesce(length(g.comment), 0) > 0, g.sig || ' has a comment') FROM got g ORDER BY g.ord;
SELECT ok(g.fn IS NOT NULL AND pg_catalog.has_function_privilege('public', g.fn, 'EXECUTE'),
          g.sig || ' is executable by anyone') FROM got g ORDER BY g.ord;

-- Each setting: 7 tests.

SELECT ok(s.name IS NOT NULL, w.name || ' exists')
FROM want_setting w LEFT JOIN pg_settings s USING (name) ORDER BY w.name;
SELECT is(s.vartype, w.vartype, w.name || ' is of type ' || w.vartype)
FROM want_setting w LEFT JOIN pg_settings s USING (name) ORDER BY w.name;
SELECT is(s.min_val, w.min_val, w.name || ' minimum ' || coalesce(w.min_val, 'none'))
FROM want_setting w LEFT JOIN pg_settings s USING (name) ORDER BY w.name;
SELECT is(s.max_val, w.max_val, w.name || ' maximum ' || coalesce(w.max_val, 'none'))
FROM want_setting w LEFT JOIN pg_settings s USING (name) ORDER BY w.name;
SELECT is(s.boot_val, w.boot_val, w.name || ' defaults to ' || w.boot_val)
FROM want_setting w LEFT JOIN pg_settings s USING (name) ORDER BY w.name;
SELECT is(s.unit, w.unit, w.name || ' unit ' || coalesce(w.unit, 'none'))
FROM want_setting w LEFT JOIN pg_settings s USING (name) ORDER BY w.name;
SELECT is(s.context, w.context, w.name || ' context ' || w.context)
FROM want_setting w LEFT JOIN pg_settings s USING (name) ORDER BY w.name;

-- No other snowflake.* setting exists (a new one must be added above).
SELECT set_eq($$SELECT name FROM pg_settings WHERE name LIKE 'snowflake.%'$$,
              $$SELECT name FROM want_setting$$,
              'the snowflake.* settings are exactly these twelve');

SELECT * FROM finish();
ROLLBACK;
