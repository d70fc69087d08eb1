-- catalog_1_1.sql: pgTAP checks of what version 1.1 adds to the catalog contract.
--
-- Each function of sql/snowflake--1.0--1.1.sql with its signature, result type, language,
-- volatility, strictness, parallel label, comment, and who may execute it (the fleet
-- operations are for superusers only); the extension at its default version 1.1 has the 13
-- functions of 1.0 plus these 8, and an update from 1.0 gives the same set.
-- Everything happens in one transaction that is rolled back.

\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;

SET LOCAL client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
DROP EXTENSION IF EXISTS snowflake CASCADE;
CREATE EXTENSION snowflake VERSION '1.1';
CREATE ROLE snowflake_pgtap_plain;

-- The expected contract of each 1.1 function.
CREATE TEMP TABLE want (sig text, returns text, lang text, volatility "char", strict boolean,
                        parallel "char", public_execute boolean);
INSERT INTO want VALUES
    ('snowflake_migrate_column(regclass,name)', 'jsonb', 'plpgsql', 'v', false, 'u', true),
    ('snowflake_format(bigint)', 'jsonb', 'sql', 'i', true, 's', true),
    ('snowflake_adopt_state()', 'boolean', 'c', 'v', false, 'u', false),
    ('snowflake_server_identity()', 'text', 'c', 's', false, 's', true),
    ('snowflake_note_claim(integer,integer,timestamp with time zone)', 'void', 'c', 'v', true, 'u', false),
    ('snowflake_claim_node(regclass,interval)', 'timestamp with time zone', 'plpgsql', 'v', false, 'u', false),
    ('snowflake_release_node(regclass)', 'boolean', 'plpgsql', 'v', true, 'u', false),
    ('snowflake_state()', 'record', 'c', 'v', false, 's', true);

-- What the catalog says, one row per expected function (NULLs where it is missing).
CREATE TEMP VIEW got AS
SELECT w.sig, p.oid AS fn, pg_catalog.format_type(p.prorettype, NULL) AS returns, l.lanname::text AS lang,
       p.provolatile AS volatility, p.proisstrict AS strict, p.proparallel AS parallel,
       pg_catalog.obj_description(p.oid, 'pg_proc') AS comment
FROM want w
LEFT JOIN pg_catalog.pg_proc p ON p.oid = pg_catalog.to_regprocedure(
    (SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e
     JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'snowflake') || '.' || w.sig)
LEFT JOIN pg_catalog.pg_language l ON l.oid = p.prolang;

SELECT plan(3 + 8 * 8);

SELECT is((SELECT extversion FROM pg_extension WHERE extname = 'snowflake'), '1.1',
          'CREATE EXTENSION snowflake VERSION ''1.1'' installs version 1.1');
SELECT is((SELECT count(*) FROM pg_depend d
           WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
             AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake')),
          21::bigint, 'version 1.1 has the 13 functions of 1.0 and 8 more');

SELECT ok(g.fn IS NOT NULL, g.sig || ' exists') FROM got g ORDER BY g.sig;
SELECT is(g.returns, w.returns, g.sig || ' returns ' || w.returns) FROM got g JOIN want w USING (sig) ORDER BY g.sig;
SELECT is(g.lang, w.lang, g.sig || ' is LANGUAGE ' || w.lang) FROM got g JOIN want w USING (sig) ORDER BY g.sig;
SELECT is(g.volatility, w.volatility, g.sig || ' has volatility ' || w.volatility::text) FROM got g JOIN want w USING (sig) ORDER BY g.sig;
SELECT is(g.strict, w.strict, g.sig || CASE WHEN w.strict THEN ' is' ELSE ' is not' END || ' STRICT')
FROM got g JOIN want w USING (sig) ORDER BY g.sig;
SELECT is(g.parallel, w.parallel, g.sig || ' has parallel label ' || w.parallel::text) FROM got g JOIN want w USING (sig) ORDER BY g.sig;
SELECT ok(coalesce(length(g.comment), 0) > 0, g.sig || ' has a comment') FROM got g ORDER BY g.sig;
SELECT is(g.fn IS NOT NULL AND pg_catalog.has_function_privilege('snowflake_pgtap_plain', g.fn, 'EXECUTE'),
          w.public_execute,
          g.sig || CASE WHEN w.public_execute THEN ' is executable by anyone' ELSE ' is for superusers only' END)
FROM got g JOIN want w USING (sig) ORDER BY g.sig;

-- An update from 1.0 ends with the same functions as a fresh 1.1.
CREATE TEMP TABLE fresh AS
SELECT pg_catalog.pg_describe_object(d.classid, d.objid, 0) AS obj FROM pg_depend d
WHERE d.deptype = 'e' AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake');
DROP EXTENSION snowflake CASCADE;
CREATE EXTENSION snowflake VERSION '1.0';
ALTER EXTENSION snowflake UPDATE TO '1.1';
SELECT set_eq(
    $$SELECT pg_catalog.pg_describe_object(d.classid, d.objid, 0) FROM pg_depend d
      WHERE d.deptype = 'e' AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake')$$,
    $$SELECT obj FROM fresh$$,
    'ALTER EXTENSION snowflake UPDATE from 1.0 gives the objects of a fresh 1.1');

SELECT * FROM finish();
ROLLBACK;
