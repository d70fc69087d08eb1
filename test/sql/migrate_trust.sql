-- snowflake_migrate_column() refuses, before the first DDL, when a schema holding a function,
-- operator or type that an expression PostgreSQL parses again references (or the extension's
-- own schema) is writable by a role the caller does not trust: an overload created there at any
-- moment (CREATE FUNCTION takes no lock a migration could hold) would be chosen by the re-parse
-- and run as the owner (attack 18b, N1).  Deterministic forms: the schema is writable, or the
-- overload already exists.  Runs in a database of its own, dropped at the end.

SELECT current_database() AS regress_db \gset
CREATE DATABASE snowflake_migrate_trust;
\c snowflake_migrate_trust
CREATE SCHEMA ext;
CREATE EXTENSION snowflake SCHEMA ext;
\set SHOW_CONTEXT never
\set VERBOSITY default

CREATE ROLE regress_sf_trust_atk;
CREATE FUNCTION public.f(int) RETURNS int IMMUTABLE LANGUAGE sql RETURN $1 % 7;
CREATE FUNCTION public.f(numeric) RETURNS int IMMUTABLE LANGUAGE sql RETURN ($1 % 7)::int;
CREATE TABLE k (id serial PRIMARY KEY, v int);
CREATE TABLE ol (id serial PRIMARY KEY, kid int REFERENCES k(id) CHECK (public.f(kid) >= 0));
INSERT INTO k(v) SELECT generate_series(1, 5);
INSERT INTO ol(kid) SELECT generate_series(1, 5);

-- 1. CHECK on a referencing table calls a function in a schema the attacker may create in.
GRANT CREATE ON SCHEMA public TO regress_sf_trust_atk;
SELECT ext.snowflake_migrate_column('k'::regclass, 'id'::name, 'bigint'::regtype);
SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'k'::regclass AND attname = 'id';

-- 2. The same through PUBLIC.
REVOKE CREATE ON SCHEMA public FROM regress_sf_trust_atk;
GRANT CREATE ON SCHEMA public TO PUBLIC;
SELECT ext.snowflake_migrate_column('k'::regclass, 'id'::name, 'bigint'::regtype);
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- 3. An index expression on the referencing table, with the function in the attacker's own
--    schema (any schema, not only public).
ALTER TABLE ol DROP CONSTRAINT ol_kid_check;
CREATE SCHEMA atk AUTHORIZATION regress_sf_trust_atk;
CREATE FUNCTION atk.g(int) RETURNS int IMMUTABLE LANGUAGE sql RETURN $1;
-- (owned by the superuser: the attacker only owns the schema)
CREATE INDEX ol_g ON ol (atk.g(kid));
SELECT ext.snowflake_migrate_column('k'::regclass, 'id'::name, 'bigint'::regtype);
DROP INDEX ol_g;

-- 4. The extension's own schema, writable by another role: refused (it was only a warning).
GRANT CREATE ON SCHEMA ext TO regress_sf_trust_atk;
SELECT ext.snowflake_migrate_column('k'::regclass, 'id'::name, 'bigint'::regtype);
REVOKE CREATE ON SCHEMA ext FROM regress_sf_trust_atk;

-- 4a. A view the call re-creates uses an operator, and a referencing table's default a type,
--     of a schema the attacker may create in: each refused, naming the view or the default.
CREATE SCHEMA ops;
CREATE FUNCTION ops.m(int, int) RETURNS int IMMUTABLE LANGUAGE sql RETURN $1 % $2;
CREATE OPERATOR ops.%% (LEFTARG = int, RIGHTARG = int, FUNCTION = ops.m);
CREATE VIEW ol_odd AS SELECT kid FROM ol WHERE kid OPERATOR(ops.%%) 2 = 1;
GRANT CREATE ON SCHEMA ops TO regress_sf_trust_atk;
SELECT ext.snowflake_migrate_column('k'::regclass, 'id'::name, 'bigint'::regtype);
DROP VIEW ol_odd;
CREATE DOMAIN ops.small AS int CHECK (VALUE >= 0);
ALTER TABLE ol ADD COLUMN tag int DEFAULT 0::ops.small;
SELECT ext.snowflake_migrate_column('k'::regclass, 'id'::name, 'bigint'::regtype);
ALTER TABLE ol DROP COLUMN tag;
REVOKE CREATE ON SCHEMA ops FROM regress_sf_trust_atk;

-- 4b. (N4) a view that belongs to an extension is refused before the first DDL, naming it
CREATE VIEW ol_extview AS SELECT kid FROM ol;
ALTER EXTENSION snowflake ADD VIEW ol_extview;
SELECT ext.snowflake_migrate_column('k'::regclass, 'id'::name, 'bigint'::regtype);
\echo :LAST_ERROR_SQLSTATE
SELECT format_type(atttypid, NULL) AS k_id FROM pg_attribute WHERE attrelid = 'k'::regclass AND attname = 'id';
ALTER EXTENSION snowflake DROP VIEW ol_extview;
DROP VIEW ol_extview;

-- 5. A role the caller is a member of counts as trusted; pg_catalog is fine; with nothing
--    writable by an untrusted role the call goes through.
CREATE INDEX ol_f ON ol (public.f(kid));
CREATE ROLE regress_sf_trust_friend;
GRANT CREATE ON SCHEMA public TO regress_sf_trust_friend;
GRANT regress_sf_trust_friend TO CURRENT_USER;
-- 6. (N2) the index's expression, parsed again, now calls public.f(numeric) instead of
--    public.f(integer): the result reports it (reparsed_expressions), and pg_depend shows it
SELECT count(*) AS f_is_3_before FROM ol WHERE public.f(kid) = 3;
SELECT r -> 'widened_columns' AS widened, jsonb_pretty(r -> 'reparsed_expressions') AS reparsed
FROM ext.snowflake_migrate_column('k'::regclass, 'id'::name, 'bigint'::regtype) AS r;
SELECT count(*) AS f_is_3_after FROM ol WHERE public.f(kid) = 3;
SELECT refobjid::regprocedure AS ol_f_calls FROM pg_depend
WHERE objid = 'ol_f'::regclass AND refclassid = 'pg_proc'::regclass;
SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'ol'::regclass AND attname = 'kid';
REVOKE CREATE ON SCHEMA public FROM regress_sf_trust_friend;

\c :regress_db
DROP DATABASE snowflake_migrate_trust;
DROP ROLE regress_sf_trust_friend;
DROP ROLE regress_sf_trust_atk;
