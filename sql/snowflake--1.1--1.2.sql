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
