-- The outside attack on issue 18's first fix (F2, F3, F5): each shape made the hostile role
-- superuser, or refused only after DDL had started, on the branch point.
-- Runs in a database of its own, dropped at the end.

SELECT current_database() AS regress_db \gset
CREATE ROLE regress_sf_x_atk;
CREATE ROLE regress_sf_x_app;
CREATE DATABASE snowflake_migrate_attack;
\c snowflake_migrate_attack
CREATE EXTENSION snowflake;
\set SHOW_CONTEXT never
CREATE FUNCTION ddl_note() RETURNS event_trigger
LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'ddl: %', tg_tag; END $$;
CREATE FUNCTION atk_super() RETURNS bool
LANGUAGE sql AS $$ SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_sf_x_atk' $$;
CREATE SCHEMA atk AUTHORIZATION regress_sf_x_atk;
GRANT USAGE ON SCHEMA atk TO PUBLIC;
SET ROLE regress_sf_x_atk;
CREATE FUNCTION atk.pwn() RETURNS int
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'ALTER ROLE regress_sf_x_atk SUPERUSER';
    RETURN 1;
EXCEPTION WHEN others THEN
    RETURN 1;
END
$$;
CREATE VIEW atk.av AS SELECT 1 AS one;
GRANT SELECT ON atk.av TO PUBLIC;
RESET ROLE;

-- F3. views reached through functions: a materialized view calls a BEGIN ATOMIC function of the
-- superuser that reads the role's view; the role later makes its view call its function.
CREATE TABLE k1 (id serial PRIMARY KEY, v int);
INSERT INTO k1 (v) VALUES (1);
CREATE FUNCTION public.rep() RETURNS bigint LANGUAGE sql STABLE BEGIN ATOMIC SELECT count(*) FROM atk.av; END;
CREATE MATERIALIZED VIEW mv1 AS SELECT k1.id, public.rep() AS c FROM k1;
-- the same through a function whose body PostgreSQL cannot see into
CREATE TABLE k2 (id serial PRIMARY KEY, v int);
INSERT INTO k2 (v) VALUES (1);
CREATE FUNCTION public.rep2() RETURNS bigint LANGUAGE sql STABLE AS 'SELECT count(*) FROM atk.av';
CREATE MATERIALIZED VIEW mv2 AS SELECT k2.id, public.rep2() AS c FROM k2;
-- an index expression on the key table, through a BEGIN ATOMIC function
CREATE TABLE k3 (id serial PRIMARY KEY, v int);
INSERT INTO k3 (v) VALUES (1);
CREATE FUNCTION public.g3(bigint) RETURNS bigint LANGUAGE sql IMMUTABLE BEGIN ATOMIC SELECT $1 + (SELECT count(*) FROM atk.av); END;
CREATE INDEX ON k3 (public.g3(id));
SET ROLE regress_sf_x_atk;
CREATE OR REPLACE VIEW atk.av AS SELECT atk.pwn() AS one;
RESET ROLE;
CREATE EVENT TRIGGER ddl_note ON ddl_command_start EXECUTE FUNCTION ddl_note();
SELECT snowflake_migrate_column('k1') -> 'refreshed_matviews';
SELECT atk_super() AS atk_superuser;
ALTER ROLE regress_sf_x_atk NOSUPERUSER;
SELECT snowflake_migrate_column('k2') -> 'refreshed_matviews';
SELECT atk_super() AS atk_superuser;
ALTER ROLE regress_sf_x_atk NOSUPERUSER;
SELECT snowflake_migrate_column('k3') -> 'changed';
SELECT atk_super() AS atk_superuser;
ALTER ROLE regress_sf_x_atk NOSUPERUSER;
-- what the docs say to do: the tables owned by a role that is not a superuser
DROP EVENT TRIGGER ddl_note;
SET ROLE regress_sf_x_atk;
CREATE OR REPLACE VIEW atk.av AS SELECT 1 AS one;
RESET ROLE;
CREATE TABLE k4 (id serial PRIMARY KEY, v int);
INSERT INTO k4 (v) VALUES (1);
CREATE FUNCTION public.rep4() RETURNS bigint LANGUAGE sql STABLE AS 'SELECT count(*) FROM atk.av';
CREATE MATERIALIZED VIEW mv4 AS SELECT k4.id, public.rep4() AS c FROM k4;
ALTER TABLE k4 OWNER TO regress_sf_x_app;
ALTER MATERIALIZED VIEW mv4 OWNER TO regress_sf_x_app;
GRANT CREATE ON SCHEMA public TO regress_sf_x_app;
SELECT snowflake_migrate_column('k4') -> 'refreshed_matviews' AS refreshed;
REVOKE CREATE ON SCHEMA public FROM regress_sf_x_app;
SELECT atk_super() AS atk_superuser;

-- F5. the owner loses USAGE on a schema a recreated view reads: refused before the first DDL
CREATE SCHEMA app AUTHORIZATION regress_sf_x_app;
GRANT USAGE ON SCHEMA atk TO regress_sf_x_app;
SET ROLE regress_sf_x_atk;
CREATE TABLE atk.t (x int);
GRANT SELECT ON atk.t TO regress_sf_x_app;
RESET ROLE;
SET ROLE regress_sf_x_app;
CREATE TABLE app.k (id serial PRIMARY KEY);
CREATE VIEW app.v AS SELECT k.id, (SELECT count(*) FROM atk.t) AS n FROM app.k;
RESET ROLE;
REVOKE USAGE ON SCHEMA atk FROM PUBLIC;
REVOKE USAGE ON SCHEMA atk FROM regress_sf_x_app;
CREATE EVENT TRIGGER ddl_note ON ddl_command_start EXECUTE FUNCTION ddl_note();
SELECT snowflake_migrate_column('app.k');
-- and SELECT on a table that a materialized view reads (REFRESH runs its query)
GRANT USAGE ON SCHEMA atk TO regress_sf_x_app;
SET ROLE regress_sf_x_app;
CREATE TABLE app.k2 (id serial PRIMARY KEY);
CREATE MATERIALIZED VIEW app.mv AS SELECT k2.id, (SELECT count(*) FROM atk.t) AS n FROM app.k2;
RESET ROLE;
SET ROLE regress_sf_x_atk;
REVOKE SELECT ON atk.t FROM regress_sf_x_app;
RESET ROLE;
SELECT snowflake_migrate_column('app.k2');
-- and EXECUTE on a function it calls
SET ROLE regress_sf_x_atk;
GRANT SELECT ON atk.t TO regress_sf_x_app;
CREATE FUNCTION atk.f(bigint) RETURNS bigint LANGUAGE sql IMMUTABLE BEGIN ATOMIC SELECT $1; END;
RESET ROLE;
SET ROLE regress_sf_x_app;
CREATE TABLE app.k3 (id serial PRIMARY KEY);
CREATE MATERIALIZED VIEW app.mv3 AS SELECT atk.f(k3.id) AS f FROM app.k3;
RESET ROLE;
SET ROLE regress_sf_x_atk;
REVOKE EXECUTE ON FUNCTION atk.f(bigint) FROM PUBLIC;
RESET ROLE;
SELECT snowflake_migrate_column('app.k3');
DROP EVENT TRIGGER ddl_note;
SELECT format_type(atttypid, atttypmod) AS k_type FROM pg_attribute WHERE attrelid = 'app.k'::regclass AND attname = 'id';
SELECT format_type(atttypid, atttypmod) AS k2_type FROM pg_attribute WHERE attrelid = 'app.k2'::regclass AND attname = 'id';

-- F2. an overload in the extension's schema, where the role may create, takes over an untyped call
-- (since round 18 its creation is refused: no function that is not the extension's may have the
-- name of one of its own in its schema; the call below then refuses on the role's CREATE right)
GRANT CREATE ON SCHEMA public TO regress_sf_x_atk;
CREATE TABLE orders (id serial PRIMARY KEY, v int);
SET ROLE regress_sf_x_atk;
CREATE FUNCTION public.snowflake_migrate_column(tbl text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        EXECUTE 'ALTER ROLE regress_sf_x_atk SUPERUSER';
    EXCEPTION WHEN others THEN
        NULL;
    END;
    RETURN public.snowflake_migrate_column(tbl::regclass, 'id'::name, 'bigint'::regtype);
END
$$;
RESET ROLE;
-- the untyped call runs the role's function; the real one, called from it, refuses while the
-- role may create in the extension's schema, and the role's change is rolled back with it
SELECT snowflake_migrate_column('orders') ->> 'changed';
SELECT atk_super() AS atk_superuser;
ALTER ROLE regress_sf_x_atk NOSUPERUSER;
-- the documented call (schema-qualified, fully typed) never reaches the role's function; it too
-- refuses while the role may create in the extension's schema
SELECT public.snowflake_migrate_column('orders'::regclass, 'id'::name, 'bigint'::regtype) ->> 'changed';
SELECT atk_super() AS atk_superuser;
-- once only trusted roles may create there, the documented call migrates
REVOKE CREATE ON SCHEMA public FROM regress_sf_x_atk;
SELECT public.snowflake_migrate_column('orders'::regclass, 'id'::name, 'bigint'::regtype) ->> 'changed' AS changed;
SELECT atk_super() AS atk_superuser;

-- a DO block is the caller's own code: not refused
CREATE TABLE orders2 (id serial PRIMARY KEY);
DO $$ BEGIN RAISE NOTICE 'changed: %', public.snowflake_migrate_column('orders2'::regclass, 'id'::name, 'bigint'::regtype) ->> 'changed'; END $$;

-- Minor: a table the role owns, with a CHECK calling the role's own function, is migrated as
-- that role (the constraint is checked again as the owner), not refused
SET ROLE regress_sf_x_atk;
CREATE TABLE atk.k (id serial PRIMARY KEY);
CREATE FUNCTION atk.ok(bigint) RETURNS bool LANGUAGE plpgsql AS $$ BEGIN RETURN current_user = 'regress_sf_x_atk'; END $$;
CREATE TABLE atk.r (kid int REFERENCES atk.k (id) CHECK (atk.ok(kid)));
INSERT INTO atk.k DEFAULT VALUES;
INSERT INTO atk.r VALUES (1);
RESET ROLE;
SELECT public.snowflake_migrate_column('atk.k'::regclass, 'id'::name, 'bigint'::regtype) -> 'widened_columns' AS widened;
SELECT atk_super() AS atk_superuser;

\c :regress_db
DROP DATABASE snowflake_migrate_attack;
DROP ROLE regress_sf_x_atk;
DROP ROLE regress_sf_x_app;
