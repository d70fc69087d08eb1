-- Attack on issue 18's first fix, F1: with the extension still at 1.1 or 1.2 and the 1.3 library
-- loaded, NO path of the old snowflake_migrate_column() may run DDL.  The path that only widens
-- references added since (the key already is bigint DEFAULT snowflake_next()) never called into
-- the library; the library now refuses the old function on entry (fmgr hook, src/migrate.c).
-- A hostile role with REFERENCES on the key table plants an index predicate that runs its
-- domain's CHECK when the referencing column's type changes.
-- Runs in databases of its own, dropped at the end.

SELECT current_database() AS regress_db \gset
CREATE ROLE regress_sf_old_atk;
CREATE DATABASE snowflake_migrate_old_12;
\c snowflake_migrate_old_12
CREATE EXTENSION snowflake VERSION '1.2';
\set SHOW_CONTEXT never
-- Every DDL command announces itself: a refusal with no such line before it came before the first DDL.
CREATE FUNCTION ddl_note() RETURNS event_trigger
LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'ddl: %', tg_tag; END $$;
CREATE SCHEMA atk AUTHORIZATION regress_sf_old_atk;
CREATE TABLE k (id bigint PRIMARY KEY DEFAULT snowflake_next(), v int);
GRANT REFERENCES ON k TO regress_sf_old_atk;
SET ROLE regress_sf_old_atk;
CREATE FUNCTION atk.pwn(int) RETURNS bool
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'ALTER ROLE regress_sf_old_atk SUPERUSER';
    RETURN true;
EXCEPTION WHEN others THEN
    RETURN true;
END
$$;
CREATE DOMAIN atk.d AS int CHECK (atk.pwn(VALUE));
CREATE TABLE atk.r (kid int REFERENCES public.k (id));
CREATE INDEX ON atk.r (kid) WHERE ('{1}'::atk.d[]) IS NOT NULL;
RESET ROLE;
CREATE EVENT TRIGGER ddl_note ON ddl_command_start EXECUTE FUNCTION ddl_note();
-- 1.2, references-only path: refused on entry, nothing changed
SELECT snowflake_migrate_column('k') -> 'widened_columns';
SELECT rolsuper AS atk_superuser FROM pg_roles WHERE rolname = 'regress_sf_old_atk';
SELECT format_type(atttypid, atttypmod) AS kid_type FROM pg_attribute WHERE attrelid = 'atk.r'::regclass AND attname = 'kid';
-- named and positional calls of the 1.2 signature alike
SELECT snowflake_migrate_column(tbl => 'k', col => 'id', new_type => 'bigint');
-- 1.1, the same shape
DROP EVENT TRIGGER ddl_note;
\c :regress_db
CREATE DATABASE snowflake_migrate_old_11;
\c snowflake_migrate_old_11
CREATE EXTENSION snowflake VERSION '1.1';
\set SHOW_CONTEXT never
CREATE FUNCTION ddl_note() RETURNS event_trigger
LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'ddl: %', tg_tag; END $$;
CREATE SCHEMA atk AUTHORIZATION regress_sf_old_atk;
CREATE TABLE k (id bigint PRIMARY KEY DEFAULT snowflake_next(), v int);
GRANT REFERENCES ON k TO regress_sf_old_atk;
SET ROLE regress_sf_old_atk;
CREATE FUNCTION atk.pwn(int) RETURNS bool
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'ALTER ROLE regress_sf_old_atk SUPERUSER';
    RETURN true;
EXCEPTION WHEN others THEN
    RETURN true;
END
$$;
CREATE DOMAIN atk.d AS int CHECK (atk.pwn(VALUE));
CREATE TABLE atk.r (kid int REFERENCES public.k (id));
CREATE INDEX ON atk.r (kid) WHERE ('{1}'::atk.d[]) IS NOT NULL;
RESET ROLE;
CREATE EVENT TRIGGER ddl_note ON ddl_command_start EXECUTE FUNCTION ddl_note();
\set VERBOSITY terse
SELECT snowflake_migrate_column('k');
\set VERBOSITY default
SELECT rolsuper AS atk_superuser FROM pg_roles WHERE rolname = 'regress_sf_old_atk';
SELECT format_type(atttypid, atttypmod) AS kid_type FROM pg_attribute WHERE attrelid = 'atk.r'::regclass AND attname = 'kid';
-- a function of that name outside the extension is not refused
CREATE FUNCTION public.snowflake_migrate_column(x int) RETURNS int LANGUAGE sql AS 'SELECT $1';
SELECT public.snowflake_migrate_column(7);
-- (1.3's functions refuse while a function that is not the extension's has the name of one of its
-- own in its schema, round 18 of the outside attack: it goes first)
DROP FUNCTION public.snowflake_migrate_column(int);
-- updated to 1.3, the same call refuses the hostile role's table (owner check), before any DDL
ALTER EXTENSION snowflake UPDATE;
\set VERBOSITY terse
SELECT snowflake_migrate_column('k'::regclass);
\set VERBOSITY default
SELECT rolsuper AS atk_superuser FROM pg_roles WHERE rolname = 'regress_sf_old_atk';
DROP EVENT TRIGGER ddl_note;
\c :regress_db
DROP DATABASE snowflake_migrate_old_12;
DROP DATABASE snowflake_migrate_old_11;
DROP ROLE regress_sf_old_atk;
