-- catalog_1_3.sql: version 1.3 is the default, and every update path ends where a fresh
-- install does.
--
-- For each member of the extension: its description, and for functions their whole
-- definition (pg_get_functiondef: arguments, result, language, labels, SET clauses, body)
-- with their privileges; for aggregates their pg_aggregate row.  A fresh 1.3, and 1.0, 1.1 and 1.2 updated to 1.3 must
-- agree row for row.  What each 1.2 and 1.3 function promises is checked in the pgTAP file of its
-- area.  Everything happens in one transaction that is rolled back.

\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;

SET LOCAL client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
DROP EXTENSION IF EXISTS snowflake CASCADE;

CREATE TEMP VIEW members AS
SELECT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid) AS obj,
       CASE WHEN d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
             AND (SELECT a.aggfnoid FROM pg_catalog.pg_aggregate a WHERE a.aggfnoid = d.objid) IS NOT NULL
            THEN (SELECT pg_catalog.md5(pg_catalog.concat_ws(' ', a.aggkind, a.aggtransfn, a.aggfinalfn, a.aggcombinefn,
                                                       a.aggsortop::pg_catalog.regoperator, a.aggtranstype::pg_catalog.regtype,
                                                       a.agginitval, p.proparallel, p.proacl))
                  || ' ' || coalesce(pg_catalog.obj_description(d.objid, 'pg_proc'), '')
                  FROM pg_catalog.pg_aggregate a JOIN pg_catalog.pg_proc p ON p.oid = a.aggfnoid
                  WHERE a.aggfnoid = d.objid)
            WHEN d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
            THEN pg_catalog.md5(pg_catalog.pg_get_functiondef(d.objid))
                 || ' ' || coalesce((SELECT p.proacl::text FROM pg_catalog.pg_proc p WHERE p.oid = d.objid), '')
                 || ' ' || coalesce(pg_catalog.obj_description(d.objid, 'pg_proc'), '')
       END AS def
FROM pg_catalog.pg_depend d
WHERE d.deptype = 'e'
  AND d.refobjid = (SELECT e.oid FROM pg_catalog.pg_extension e WHERE e.extname = 'snowflake');

SELECT plan(5);

CREATE EXTENSION snowflake;
SELECT is((SELECT extversion FROM pg_extension WHERE extname = 'snowflake'), '1.3',
          'CREATE EXTENSION snowflake installs version 1.3');
CREATE TEMP TABLE fresh AS SELECT * FROM members;
SELECT ok((SELECT count(*) FROM fresh) > 0, 'a fresh 1.3 has members');
DROP EXTENSION snowflake CASCADE;

CREATE EXTENSION snowflake VERSION '1.0';
ALTER EXTENSION snowflake UPDATE TO '1.3';
SELECT set_eq($$SELECT obj, def FROM members$$, $$SELECT obj, def FROM fresh$$,
              'ALTER EXTENSION snowflake UPDATE from 1.0 gives the objects of a fresh 1.3');
DROP EXTENSION snowflake CASCADE;

CREATE EXTENSION snowflake VERSION '1.1';
ALTER EXTENSION snowflake UPDATE TO '1.3';
SELECT set_eq($$SELECT obj, def FROM members$$, $$SELECT obj, def FROM fresh$$,
              'ALTER EXTENSION snowflake UPDATE from 1.1 gives the objects of a fresh 1.3');
DROP EXTENSION snowflake CASCADE;

CREATE EXTENSION snowflake VERSION '1.2';
ALTER EXTENSION snowflake UPDATE TO '1.3';
SELECT set_eq($$SELECT obj, def FROM members$$, $$SELECT obj, def FROM fresh$$,
              'ALTER EXTENSION snowflake UPDATE from 1.2 gives the objects of a fresh 1.3');

SELECT * FROM finish();
ROLLBACK;
