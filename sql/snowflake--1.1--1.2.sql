/* snowflake--1.1--1.2.sql: upgrade to 1.2 (hardening of the registry and the migration). */

\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.2'" to load this file. \quit

-- Each part below is owned by one area of the code; keep the marker lines so that work on
-- different parts merges cleanly.

-- ==== registry: node claims (src/registry.c, README "Running a fleet") ====

-- ==== end registry ====

-- ==== migration: snowflake_migrate_column() (README "Migrating a column") ====

-- ==== end migration ====

-- ==== type: the snowflake column type (README "The snowflake type") ====

-- ==== end type ====

-- ==== clock: clock health (README "Monitoring") ====

-- ==== end clock ====

-- ==== mark: the durable mark and its writer (src/mark.c, README "Monitoring") ====

-- snowflake_state() reports how the reservation writer's writes go. Its row gains columns,
-- so it is dropped and created again (nothing of the extension depends on it).
DROP FUNCTION snowflake_state();

CREATE FUNCTION snowflake_state(
    OUT state text,
    OUT detail text,
    OUT reserved_until timestamptz,
    OUT owner_directory text,
    OUT this_directory text,
    OUT worker_running boolean,
    OUT mark_writes bigint,
    OUT mark_write_failures bigint,
    OUT caller_writes bigint,
    OUT slowest_recent_write_ms double precision,
    OUT write_in_progress_ms double precision)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_state'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_state() IS
'the durable state: ok, damaged or copy (and why), the durable mark, the owning and this data directory (inode:birth time), whether the reservation writer runs, its writes, failures, writes callers had to make, its recent slowest write and how long the current one has run';

-- ==== end mark ====
