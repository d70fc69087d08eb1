-- clock_1_2.sql: pgTAP checks of what version 1.2 changes for clock health:
-- snowflake_status() reports the clock's offset from the last ID, the largest forward
-- jump seen and whether generation is held; snowflake_accept_clock() is for superusers
-- only; snowflake.max_clock_jump_ms is a server-wide setting.  Rolled back.

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
CREATE ROLE snowflake_pgtap_clock_plain;

SELECT plan(19);

-- snowflake_status(): the 1.0 columns, then three more, in order.
SELECT is(
    (SELECT pg_catalog.array_to_string(p.proargnames, ',') || ' / ' || pg_catalog.array_to_string(p.proargmodes::text[], ',')
     FROM pg_catalog.pg_proc p WHERE p.oid = 'snowflake_status()'::pg_catalog.regprocedure),
    'datacenter_id,machine_id,last_id,last_ts,last_sequence,clock_rollbacks,max_rollback_ms,waits,refusals,'
    'reserved_until,clock_offset_ms,max_clock_jump_ms,clock_held / o,o,o,o,o,o,o,o,o,o,o,o,o',
    'snowflake_status() has the 1.2 OUT columns, in order');
SELECT is(
    (SELECT pg_catalog.array_to_string(array_agg(pg_catalog.format_type(t, NULL) ORDER BY n), ',')
     FROM pg_catalog.pg_proc p, pg_catalog.unnest(p.proallargtypes) WITH ORDINALITY u(t, n)
     WHERE p.oid = 'snowflake_status()'::pg_catalog.regprocedure AND n > 10),
    'bigint,bigint,boolean', 'clock_offset_ms and max_clock_jump_ms are bigint, clock_held boolean');
SELECT is((SELECT p.proretset FROM pg_catalog.pg_proc p WHERE p.oid = 'snowflake_status()'::pg_catalog.regprocedure),
          true, 'snowflake_status() returns a set');
SELECT is((SELECT p.provolatile::text || p.proparallel::text FROM pg_catalog.pg_proc p
           WHERE p.oid = 'snowflake_status()'::pg_catalog.regprocedure),
          'vs', 'snowflake_status() is VOLATILE PARALLEL SAFE');
SELECT ok(pg_catalog.has_function_privilege('snowflake_pgtap_clock_plain', 'snowflake_status()', 'EXECUTE'),
          'anyone may read snowflake_status()');
SELECT ok(coalesce(length(pg_catalog.obj_description('snowflake_status()'::pg_catalog.regprocedure, 'pg_proc')), 0) > 0,
          'snowflake_status() has a comment');

-- snowflake_accept_clock(): bigint, VOLATILE, superusers only.
SELECT is((SELECT pg_catalog.format_type(p.prorettype, NULL) || ' ' || p.provolatile::text || p.proparallel::text
                  || ' ' || p.proisstrict::text || ' ' || p.prosecdef::text
           FROM pg_catalog.pg_proc p WHERE p.oid = 'snowflake_accept_clock()'::pg_catalog.regprocedure),
          'bigint vu false false', 'snowflake_accept_clock() returns bigint, VOLATILE PARALLEL UNSAFE, not SECURITY DEFINER');
SELECT ok(NOT pg_catalog.has_function_privilege('snowflake_pgtap_clock_plain', 'snowflake_accept_clock()', 'EXECUTE'),
          'a plain role may not run snowflake_accept_clock()');
SELECT ok(NOT pg_catalog.has_function_privilege('public', 'snowflake_accept_clock()', 'EXECUTE'),
          'EXECUTE on snowflake_accept_clock() is revoked from PUBLIC');
SELECT ok(coalesce(length(pg_catalog.obj_description('snowflake_accept_clock()'::pg_catalog.regprocedure, 'pg_proc')), 0) > 0,
          'snowflake_accept_clock() has a comment');
SELECT is((SELECT count(*) FROM pg_catalog.pg_depend d
           WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.deptype = 'e'
             AND d.objid = 'snowflake_accept_clock()'::pg_catalog.regprocedure),
          1::bigint, 'snowflake_accept_clock() belongs to the extension');

SET LOCAL ROLE snowflake_pgtap_clock_plain;
SELECT throws_ok('SELECT snowflake_accept_clock()', '42501', NULL,
                 'a plain role running snowflake_accept_clock() is refused with 42501');
RESET ROLE;

-- The setting: integer ms, default 60000, 0 turns it off, set in postgresql.conf only.
SELECT is((SELECT vartype || ' ' || unit || ' ' || boot_val || ' ' || min_val || ' ' || max_val || ' ' || context
           FROM pg_catalog.pg_settings WHERE name = 'snowflake.max_clock_jump_ms'),
          'integer ms 60000 0 2147483647 sighup',
          'snowflake.max_clock_jump_ms: integer ms, default 60000 (1 minute), 0..2147483647, sighup');
SELECT throws_ok('SET snowflake.max_clock_jump_ms = 1000', '55P02', NULL,
                 'snowflake.max_clock_jump_ms cannot be set in a session');

-- On a healthy server: not held, and the wall clock is at or after the last ID.
SELECT ok(snowflake_next() > 0, 'an ID is issued');
SELECT is((SELECT clock_held FROM snowflake_status()
           WHERE datacenter_id = pg_catalog.current_setting('snowflake.datacenter_id')::int
             AND machine_id = pg_catalog.current_setting('snowflake.machine_id')::int),
          false, 'generation is not held');
SELECT ok((SELECT clock_offset_ms BETWEEN 0 AND 60000 AND max_clock_jump_ms >= 0 FROM snowflake_status()
           WHERE datacenter_id = pg_catalog.current_setting('snowflake.datacenter_id')::int
             AND machine_id = pg_catalog.current_setting('snowflake.machine_id')::int),
          'the clock is just past the last ID, and no negative jump is reported');
-- Accepting a clock that did not jump moves the trusted time forward by nothing noticeable.
SELECT ok(snowflake_accept_clock() BETWEEN 0 AND 1000, 'snowflake_accept_clock() on a steady clock moves almost nothing');
SELECT ok(snowflake_next() > 0, 'IDs are issued after snowflake_accept_clock()');

SELECT * FROM finish();
ROLLBACK;
