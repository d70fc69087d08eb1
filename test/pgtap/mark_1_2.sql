-- mark_1_2.sql: pgTAP checks of what version 1.2 changes for the durable mark:
-- snowflake_state() reports the reservation writer's writes.  Rolled back.

\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;

SET LOCAL client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
DROP EXTENSION IF EXISTS snowflake CASCADE;
CREATE EXTENSION snowflake VERSION '1.2';
CREATE ROLE snowflake_pgtap_mark_plain;

SELECT plan(8);

SELECT is(
    (SELECT pg_catalog.array_to_string(p.proargnames, ',') || ' / ' || pg_catalog.array_to_string(p.proargmodes::text[], ',')
     FROM pg_catalog.pg_proc p WHERE p.oid = 'snowflake_state()'::pg_catalog.regprocedure),
    'state,detail,reserved_until,owner_directory,this_directory,worker_running,mark_writes,mark_write_failures,'
    'caller_writes,slowest_recent_write_ms,write_in_progress_ms / o,o,o,o,o,o,o,o,o,o,o',
    'snowflake_state() has the 1.2 OUT columns, in order');
SELECT is(
    (SELECT pg_catalog.format_type(t, NULL) FROM pg_catalog.pg_proc p, pg_catalog.unnest(p.proallargtypes) WITH ORDINALITY u(t, n)
     WHERE p.oid = 'snowflake_state()'::pg_catalog.regprocedure AND n = 10),
    'double precision', 'slowest_recent_write_ms is double precision');
SELECT is((SELECT p.provolatile FROM pg_catalog.pg_proc p WHERE p.oid = 'snowflake_state()'::pg_catalog.regprocedure),
          'v'::"char", 'snowflake_state() is VOLATILE');
SELECT is((SELECT p.proparallel FROM pg_catalog.pg_proc p WHERE p.oid = 'snowflake_state()'::pg_catalog.regprocedure),
          's'::"char", 'snowflake_state() is PARALLEL SAFE');
SELECT ok(pg_catalog.has_function_privilege('snowflake_pgtap_mark_plain', 'snowflake_state()', 'EXECUTE'),
          'anyone may read snowflake_state()');
SELECT ok(coalesce(length(pg_catalog.obj_description('snowflake_state()'::pg_catalog.regprocedure, 'pg_proc')), 0) > 0,
          'snowflake_state() has a comment');
SELECT is((SELECT state FROM snowflake_state()), 'ok', 'on a healthy server the state is ok');
SELECT ok((SELECT worker_running AND mark_write_failures = 0 AND caller_writes = 0 FROM snowflake_state()),
          'the writer runs, no write failed, no caller had to write');

SELECT * FROM finish();
ROLLBACK;
