-- versions.sql: what the build promises on every PostgreSQL version it is tested on (issue 10).
--
-- The extension's installed version is the control file's default_version (a fresh install
-- chains every update script), and on PostgreSQL 18 and later the loaded library names itself
-- and that same version (PG_MODULE_MAGIC_EXT, shown by pg_get_loaded_modules()).  Rolled back.

\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;
SET LOCAL client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS snowflake;

SELECT plan(4);

SELECT cmp_ok(current_setting('server_version_num')::int, '>=', 150000,
              'the server is PostgreSQL 15 or later');

SELECT is((SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'snowflake'),
          (SELECT default_version FROM pg_catalog.pg_available_extensions WHERE name = 'snowflake'),
          'the installed version is the control file''s default_version');

-- Make sure the library is loaded in this session (it is preloaded, but say so).
SELECT ok(snowflake_next() > 0, 'the library generates');

-- pg_get_loaded_modules() does not exist before 18: decide in psql, not in SQL.
SELECT current_setting('server_version_num')::int >= 180000 AS has_loaded_modules \gset
\if :has_loaded_modules
SELECT is((SELECT format('%s %s', m.module_name, m.version)
           FROM pg_catalog.pg_get_loaded_modules() m
           WHERE m.file_name = 'snowflake.so'),
          'snowflake ' || (SELECT default_version FROM pg_catalog.pg_available_extensions
                           WHERE name = 'snowflake'),
          'the loaded library names itself and the control file''s version (PG_MODULE_MAGIC_EXT)');
\else
SELECT skip('pg_get_loaded_modules() needs PostgreSQL 18', 1);
\endif

SELECT * FROM finish();
ROLLBACK;
