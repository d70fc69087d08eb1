-- Version 1.0 upgraded to 1.1 and on to 1.2, and a fresh install (1.0 plus the upgrade scripts).

SELECT current_database() AS regress_db \gset
CREATE DATABASE snowflake_upgrade;
\c snowflake_upgrade

SELECT version, installed FROM pg_available_extension_versions WHERE name = 'snowflake' ORDER BY 1;
SELECT source, target, path FROM pg_extension_update_paths('snowflake') WHERE path IS NOT NULL ORDER BY 1, 2;

CREATE EXTENSION snowflake VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT to_regprocedure('snowflake_format(bigint)') IS NULL AS no_format,
       to_regprocedure('snowflake_migrate_column(regclass,name)') IS NULL AS no_migrate;

-- objects made with 1.0 keep working across the update
CREATE TABLE t_up (id bigint PRIMARY KEY DEFAULT snowflake_next(), v text);
INSERT INTO t_up (v) VALUES ('before');
CREATE TABLE t_up_serial (id serial PRIMARY KEY);
INSERT INTO t_up_serial DEFAULT VALUES;

ALTER EXTENSION snowflake UPDATE TO '1.1';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';

-- the new functions, members of the extension
SELECT pg_describe_object(d.classid, d.objid, 0) AS member
FROM pg_depend d JOIN pg_extension e ON d.refobjid = e.oid AND d.refclassid = 'pg_extension'::regclass
WHERE e.extname = 'snowflake' AND d.deptype = 'e'
ORDER BY 1;
SELECT p.oid::regprocedure, p.provolatile, p.proparallel, p.proisstrict, p.proconfig
FROM pg_proc p WHERE p.proname IN ('snowflake_format', 'snowflake_migrate_column') ORDER BY 1;

INSERT INTO t_up (v) VALUES ('after');
SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids FROM t_up;
SELECT snowflake_format(1724551110457221119) ->> 'id' AS formatted;
-- with this library the 1.1 migration refuses before its first DDL (issue 18: it ran others'
-- code with the caller's rights); updated, the column migrates
\set VERBOSITY terse
SELECT snowflake_migrate_column('t_up_serial') ->> 'changed' AS migrated;
\set VERBOSITY default
ALTER EXTENSION snowflake UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT snowflake_migrate_column('t_up_serial') ->> 'changed' AS migrated;
INSERT INTO t_up (v) VALUES ('after the update');
SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids FROM t_up;

-- a fresh CREATE EXTENSION installs the default version (1.3)
DROP TABLE t_up, t_up_serial;
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake;
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
-- (PostgreSQL 17 and later also record the array type snowflake[] as a member: not counted.)
SELECT count(*) AS members
FROM pg_depend d JOIN pg_extension e ON d.refobjid = e.oid AND d.refclassid = 'pg_extension'::regclass
WHERE e.extname = 'snowflake' AND d.deptype = 'e'
  AND NOT (d.classid = 'pg_type'::regclass
           AND EXISTS (SELECT FROM pg_type t WHERE t.oid = d.objid AND t.typcategory = 'A'));
DROP EXTENSION snowflake;

-- in a schema of its own, updated, then used with a search_path that does not hold it
CREATE SCHEMA sfx;
CREATE EXTENSION snowflake SCHEMA sfx VERSION '1.0';
ALTER EXTENSION snowflake UPDATE;
CREATE SCHEMA evil;
CREATE FUNCTION evil.snowflake_decode(id bigint, OUT ts timestamptz, OUT unix_ms bigint, OUT datacenter_id int,
                                      OUT machine_id int, OUT sequence int)
LANGUAGE sql AS $$ SELECT now(), 0::bigint, 0, 0, 0 $$;
CREATE FUNCTION evil.snowflake_next() RETURNS bigint LANGUAGE sql AS $$ SELECT -1::bigint $$;
SET search_path = evil, public;
SELECT sfx.snowflake_format(1724551110457221119);
CREATE TABLE public.t_sfx (id serial PRIMARY KEY);
SELECT sfx.snowflake_migrate_column('public.t_sfx') ->> 'new_default' AS new_default;
INSERT INTO public.t_sfx DEFAULT VALUES;
SELECT count(*) AS rows, min(id) > 0 AS positive FROM public.t_sfx;
RESET search_path;

\c :regress_db
DROP DATABASE snowflake_upgrade;
