-- snowflake_migrate_column() runs every step as the key table's owner (issue 18).  A hostile role
-- with only what an application role usually has (its own schema, SELECT or REFERENCES on the
-- key table, CREATE in public) plants code that tries to make it superuser; the call, run by a
-- superuser, refuses before its first DDL or runs that code as the table's owner, never as
-- the caller.  Each numbered case made the role superuser with 1.2 (and 1.1).
-- Runs in databases of its own, dropped at the end.

SELECT current_database() AS regress_db \gset
CREATE DATABASE snowflake_migrate_owner;
\c snowflake_migrate_owner
CREATE EXTENSION snowflake;
\set SHOW_CONTEXT never

-- The SQLSTATE and message of a statement, or 'ok'.
CREATE FUNCTION try(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
-- The error's hint.
CREATE FUNCTION try_hint(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE h text;
BEGIN
    EXECUTE stmt;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
    RETURN h;
END
$$;
CREATE FUNCTION col_type(t regclass, c name) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = t AND attname = c
$$;

-- Every DDL command announces itself (a NOTICE is not rolled back): a refusal with no such
-- line before it came before the first DDL.
CREATE FUNCTION ddl_note() RETURNS event_trigger
LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'ddl: %', tg_tag; END $$;

-- The hostile role: its own schema, and a function that tries to make it
-- superuser and logs who ran it.
CREATE ROLE regress_sf_atk;
CREATE SCHEMA atk AUTHORIZATION regress_sf_atk;
-- (CREATE in public only while it plants overloads there: a role that may create in a schema
-- whose names a migration parses again makes every migration refuse, migrate_trust)
SET ROLE regress_sf_atk;
CREATE TABLE atk.log (via text, ran_as name);
GRANT INSERT ON atk.log TO PUBLIC;
CREATE FUNCTION atk.pwn(via text) RETURNS bool
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO atk.log VALUES (via, current_user);
    BEGIN
        ALTER ROLE regress_sf_atk SUPERUSER;
    EXCEPTION WHEN insufficient_privilege THEN
        NULL;
    END;
    RETURN true;
END
$$;
CREATE FUNCTION atk.pwn_int(v int) RETURNS bool LANGUAGE plpgsql AS $$ BEGIN RETURN atk.pwn('domain check'); END $$;
CREATE DOMAIN atk.d AS int CHECK (atk.pwn_int(VALUE));
RESET ROLE;

-- What happened: is the role superuser, and who ran its code.
CREATE VIEW outcome AS
SELECT (SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_sf_atk') AS atk_superuser,
       (SELECT coalesce(string_agg(DISTINCT ran_as, ','), '-') FROM atk.log) AS ran_as;

-- 1. a literal of the role's domain in a view that the call re-creates
CREATE TABLE k1 (id serial PRIMARY KEY);
INSERT INTO k1 DEFAULT VALUES;
GRANT SELECT ON k1 TO regress_sf_atk;
SET ROLE regress_sf_atk;
CREATE VIEW atk.v1 AS SELECT id, '{1}'::atk.d[] AS x FROM public.k1;
RESET ROLE;
TRUNCATE atk.log;
SELECT try('SELECT snowflake_migrate_column(''k1'')');
SELECT try_hint('SELECT snowflake_migrate_column(''k1'')');
SELECT * FROM outcome;
SELECT col_type('k1', 'id');
ALTER ROLE regress_sf_atk NOSUPERUSER;
-- the same literal in a view of the table's (superuser) owner, the domain's check made
-- harmful only after the view was created: refused too
SET ROLE regress_sf_atk;
DROP VIEW atk.v1;
CREATE OR REPLACE FUNCTION atk.pwn_int(v int) RETURNS bool LANGUAGE plpgsql AS $$ BEGIN RETURN true; END $$;
RESET ROLE;
CREATE VIEW v1_own AS SELECT id, '{1}'::atk.d[] AS x FROM k1;
SET ROLE regress_sf_atk;
CREATE OR REPLACE FUNCTION atk.pwn_int(v int) RETURNS bool LANGUAGE plpgsql AS $$ BEGIN RETURN atk.pwn('domain check'); END $$;
RESET ROLE;
TRUNCATE atk.log;
SELECT try('SELECT snowflake_migrate_column(''k1'')');
SELECT try_hint('SELECT snowflake_migrate_column(''k1'')');
SELECT * FROM outcome;
ALTER ROLE regress_sf_atk NOSUPERUSER;
DROP VIEW v1_own;
-- with nothing of the role's left, it migrates
SELECT snowflake_migrate_column('k1') ->> 'new_type' AS new_type;

-- 2. the literal in an index predicate, and in an expression statistics object, of the role's
--    table that references the key (ALTER COLUMN TYPE parses them again)
CREATE TABLE k2 (id serial PRIMARY KEY);
INSERT INTO k2 DEFAULT VALUES;
GRANT REFERENCES ON k2 TO regress_sf_atk;
SET ROLE regress_sf_atk;
CREATE TABLE atk.r2 (kid int REFERENCES public.k2 (id), n int);
INSERT INTO atk.r2 VALUES (1, 1);
CREATE INDEX r2_pred ON atk.r2 (kid) WHERE ('{1}'::atk.d[])[1] > 0;
RESET ROLE;
TRUNCATE atk.log;
SELECT try('SELECT snowflake_migrate_column(''k2'')');
SELECT try_hint('SELECT snowflake_migrate_column(''k2'')');
SELECT * FROM outcome;
SELECT col_type('k2', 'id'), col_type('atk.r2', 'kid');
ALTER ROLE regress_sf_atk NOSUPERUSER;
CREATE TABLE k2s (id serial PRIMARY KEY);
INSERT INTO k2s DEFAULT VALUES;
GRANT REFERENCES ON k2s TO regress_sf_atk;
SET ROLE regress_sf_atk;
CREATE TABLE atk.r2s (kid int REFERENCES public.k2s (id), n int);
CREATE STATISTICS atk.r2s_stat ON (kid + ('{1}'::atk.d[])[1]), n FROM atk.r2s;
RESET ROLE;
TRUNCATE atk.log;
SELECT try('SELECT snowflake_migrate_column(''k2s'')');
SELECT * FROM outcome;
SELECT col_type('k2s', 'id'), col_type('atk.r2s', 'kid');
ALTER ROLE regress_sf_atk NOSUPERUSER;

-- 3. a CHECK constraint that casts to the role's domain, or runs a query through a built-in
--    function: only direct function calls were looked at before
CREATE TABLE k3 (id serial PRIMARY KEY);
INSERT INTO k3 DEFAULT VALUES;
GRANT REFERENCES ON k3 TO regress_sf_atk;
SET ROLE regress_sf_atk;
CREATE TABLE atk.r3 (kid int REFERENCES public.k3 (id) CHECK (kid::atk.d IS NOT NULL));
INSERT INTO atk.r3 VALUES (1);
RESET ROLE;
TRUNCATE atk.log;
SELECT try('SELECT snowflake_migrate_column(''k3'')');
SELECT * FROM outcome;
SET ROLE regress_sf_atk;
DROP TABLE atk.r3;
CREATE TABLE atk.r3 (kid int REFERENCES public.k3 (id)
                     CHECK (query_to_xml(format('SELECT atk.pwn(%L)', kid), false, false, '') IS NOT NULL));
INSERT INTO atk.r3 VALUES (1);
RESET ROLE;
TRUNCATE atk.log;
SELECT try('SELECT snowflake_migrate_column(''k3'')');
SELECT * FROM outcome;
SELECT col_type('k3', 'id'), col_type('atk.r3', 'kid');
ALTER ROLE regress_sf_atk NOSUPERUSER;
-- handed to the table's owner (the hint's command), the constraint's code runs as that owner
CREATE ROLE regress_sf_app;
ALTER TABLE k3 OWNER TO regress_sf_app;
ALTER TABLE atk.r3 OWNER TO regress_sf_app;
GRANT USAGE ON SCHEMA atk TO regress_sf_app;
GRANT EXECUTE ON FUNCTION atk.pwn(text) TO regress_sf_app;
TRUNCATE atk.log;
SELECT snowflake_migrate_column('k3') -> 'widened_columns' AS widened;
SELECT * FROM outcome;
SELECT col_type('k3', 'id'), col_type('atk.r3', 'kid');

-- 4. a materialized view parsed again after widening would resolve f(id), or id ### 2, to an
--    overload the role added in public, and its REFRESH would run it as the view's owner
CREATE TABLE k4 (id serial PRIMARY KEY);
INSERT INTO k4 SELECT FROM generate_series(1, 5);
CREATE FUNCTION public.f4(int) RETURNS int LANGUAGE sql IMMUTABLE RETURN $1;
CREATE MATERIALIZED VIEW mv4 AS SELECT id, public.f4(id) AS f FROM k4;
GRANT CREATE ON SCHEMA public TO regress_sf_atk;
SET ROLE regress_sf_atk;
CREATE FUNCTION public.f4(bigint) RETURNS int LANGUAGE plpgsql AS $$ BEGIN PERFORM atk.pwn('overload'); RETURN 0; END $$;
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM regress_sf_atk;  -- the overload exists; the schema is no longer writable (that alone is refused: migrate_trust)
TRUNCATE atk.log;
SELECT try('SELECT snowflake_migrate_column(''k4'')');
SELECT try_hint('SELECT snowflake_migrate_column(''k4'')');
SELECT * FROM outcome;
SELECT col_type('k4', 'id'), relispopulated FROM pg_class WHERE relname = 'mv4';
ALTER ROLE regress_sf_atk NOSUPERUSER;
-- an operator: five rows before
CREATE TABLE k4b (id serial PRIMARY KEY);
INSERT INTO k4b SELECT FROM generate_series(1, 5);
CREATE FUNCTION public.mod4(int, int) RETURNS int LANGUAGE sql IMMUTABLE RETURN $1 % $2;
CREATE OPERATOR public.### (LEFTARG = int, RIGHTARG = int, FUNCTION = public.mod4);
CREATE VIEW v4op AS SELECT id FROM k4b WHERE (id OPERATOR(public.###) 2) IN (0, 1);
CREATE MATERIALIZED VIEW mv4op AS SELECT id FROM k4b WHERE (id OPERATOR(public.###) 2) IN (0, 1);
SELECT count(*) AS rows_before FROM v4op;
GRANT CREATE ON SCHEMA public TO regress_sf_atk;
SET ROLE regress_sf_atk;
CREATE FUNCTION public.atk_mod(bigint, int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN PERFORM atk.pwn('operator'); RETURN 7; END $$;
CREATE OPERATOR public.### (LEFTARG = bigint, RIGHTARG = int, FUNCTION = public.atk_mod);
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM regress_sf_atk;  -- the overload exists; the schema is no longer writable (that alone is refused: migrate_trust)
TRUNCATE atk.log;
SELECT try('SELECT snowflake_migrate_column(''k4b'')');
SELECT * FROM outcome;
SELECT col_type('k4b', 'id'), count(*) AS rows_after FROM v4op;
ALTER ROLE regress_sf_atk NOSUPERUSER;
DROP MATERIALIZED VIEW mv4, mv4op;
-- the same overloads owned by the owner itself are picked and reported (a view's query and its
-- other rules, functions and operators), before any REFRESH
SET ROLE regress_sf_atk;
DROP OPERATOR public.### (bigint, int);
DROP FUNCTION public.atk_mod(bigint, int);
DROP FUNCTION public.f4(bigint);
RESET ROLE;
CREATE FUNCTION public.f4(bigint) RETURNS int LANGUAGE sql IMMUTABLE RETURN -1;
CREATE FUNCTION public.mod4(bigint, int) RETURNS int LANGUAGE sql IMMUTABLE RETURN 7;
CREATE OPERATOR public.### (LEFTARG = bigint, RIGHTARG = int, FUNCTION = public.mod4);
CREATE TABLE k4_log (f int);
CREATE VIEW v4op_k4 AS SELECT id FROM k4 WHERE (id OPERATOR(public.###) 2) IN (0, 1);
CREATE VIEW v4rule AS SELECT id FROM k4;
CREATE RULE v4rule_upd AS ON UPDATE TO v4rule DO INSTEAD INSERT INTO k4_log VALUES (public.f4(old.id));
CREATE MATERIALIZED VIEW mv4b AS SELECT id, public.f4(id) AS f FROM k4;
SELECT jsonb_pretty(r -> 'reparsed_views') FROM snowflake_migrate_column('k4') AS r;
SELECT count(*) AS rows_after FROM v4op_k4;
SELECT DISTINCT f FROM mv4b;

-- 5. the extension still at 1.1 (or 1.2): the old function would re-create the role's
--    materialized view WITH DATA as the caller; with this library it refuses before any DDL
\c :regress_db
CREATE DATABASE snowflake_migrate_owner_11;
\c snowflake_migrate_owner_11
CREATE EXTENSION snowflake VERSION '1.1';
\set SHOW_CONTEXT never
CREATE SCHEMA atk AUTHORIZATION regress_sf_atk;
CREATE TABLE k5 (id serial PRIMARY KEY);
INSERT INTO k5 DEFAULT VALUES;
GRANT SELECT ON k5 TO regress_sf_atk;
SET ROLE regress_sf_atk;
CREATE FUNCTION atk.pwn() RETURNS int
LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        ALTER ROLE regress_sf_atk SUPERUSER;
    EXCEPTION WHEN insufficient_privilege THEN
        NULL;
    END;
    RETURN 1;
END
$$;
CREATE MATERIALIZED VIEW atk.mv5 AS SELECT id, atk.pwn() AS p FROM public.k5;
RESET ROLE;
SELECT snowflake_migrate_column('k5');
SELECT rolsuper AS atk_superuser FROM pg_roles WHERE rolname = 'regress_sf_atk';
SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'k5'::regclass AND attname = 'id';
ALTER ROLE regress_sf_atk NOSUPERUSER;
-- other uses of snowflake_min_id() keep working at 1.1
SELECT snowflake_min_id(now()) > 0 AS min_id_works;
-- 1.2 too
ALTER EXTENSION snowflake UPDATE TO '1.2';
\set VERBOSITY terse
SELECT snowflake_migrate_column('k5');
\set VERBOSITY default
-- updated, it refuses the role's view, naming the command
ALTER EXTENSION snowflake UPDATE;
SELECT snowflake_migrate_column('k5');
SELECT rolsuper AS atk_superuser FROM pg_roles WHERE rolname = 'regress_sf_atk';
\c :regress_db
DROP DATABASE snowflake_migrate_owner_11;

\c snowflake_migrate_owner
\set SHOW_CONTEXT never

-- 9. refusals before the first DDL: the BEGIN ATOMIC function, the publication's row filter,
--    the sub-partition keyed by the column, the foreign key declared on an inheritance child
--    (its column changes only with its parent's), the child's own default without a sequence
CREATE EVENT TRIGGER note_ddl ON ddl_command_start EXECUTE FUNCTION ddl_note();
CREATE TABLE k9 (id serial PRIMARY KEY);
CREATE TABLE k9_ref (kid int REFERENCES k9 (id));
CREATE VIEW k9_v AS SELECT id FROM k9;
CREATE FUNCTION k9_count() RETURNS bigint LANGUAGE sql BEGIN ATOMIC SELECT count(*) FROM k9_ref WHERE kid > 0; END;
SELECT try('SELECT snowflake_migrate_column(''k9'')');
DROP FUNCTION k9_count();
CREATE TABLE k9_other (a int);
CREATE TABLE k9_sink (id int);
CREATE RULE k9_other_r AS ON INSERT TO k9_other DO ALSO INSERT INTO k9_sink SELECT id FROM k9_v;
SELECT try('SELECT snowflake_migrate_column(''k9'')');
DROP TABLE k9_other, k9_sink;
SET client_min_messages = error;  -- the wal_level warning is worded differently from 17 on
CREATE PUBLICATION k9_pub FOR TABLE k9_ref WHERE (kid > 0);
RESET client_min_messages;
SELECT try('SELECT snowflake_migrate_column(''k9'')');
DROP PUBLICATION k9_pub;
CREATE TABLE k9p (id bigserial, kid int REFERENCES k9 (id)) PARTITION BY RANGE (id);
CREATE TABLE k9p_1 PARTITION OF k9p FOR VALUES FROM (0) TO (1000) PARTITION BY LIST ((kid % 2));
SELECT try('SELECT snowflake_migrate_column(''k9'')');
DROP TABLE k9p;
CREATE TABLE k9h (kid int, note text);
CREATE TABLE k9h_child (CONSTRAINT k9h_child_fk FOREIGN KEY (kid) REFERENCES k9 (id)) INHERITS (k9h);
SELECT try('SELECT snowflake_migrate_column(''k9'')');
DROP TABLE k9h_child, k9h;
CREATE TABLE k9i (id serial PRIMARY KEY);
CREATE TABLE k9i_child (id int DEFAULT 0) INHERITS (k9i);
SELECT try('SELECT snowflake_migrate_column(''k9i'')');
SELECT col_type('k9', 'id'), col_type('k9_ref', 'kid'), col_type('k9i', 'id');

-- 8. an inheritance child's own sequence default is replaced: its sequence is dropped and reported
--    (the DDL, announced, comes only now)
CREATE TABLE k8 (id serial PRIMARY KEY);
CREATE TABLE k8_child (id int) INHERITS (k8);
CREATE SEQUENCE k8_child_seq OWNED BY k8_child.id;
ALTER TABLE k8_child ALTER COLUMN id SET DEFAULT nextval('k8_child_seq');
SELECT jsonb_pretty(r -> 'dropped_sequences') FROM snowflake_migrate_column('k8') AS r;
DROP EVENT TRIGGER note_ddl;
SELECT to_regclass('k8_child_seq') AS child_seq, pg_get_expr(d.adbin, d.adrelid) AS child_default
FROM pg_attrdef d WHERE d.adrelid = 'k8_child'::regclass;

-- 10. a materialized view's column options (n_distinct) are kept
CREATE TABLE k10 (id serial PRIMARY KEY, a int);
CREATE MATERIALIZED VIEW k10_mv AS SELECT id, a FROM k10;
ALTER MATERIALIZED VIEW k10_mv ALTER COLUMN a SET (n_distinct = 42);
SELECT snowflake_migrate_column('k10') -> 'recreated_views' AS views;
SELECT array(SELECT o FROM unnest(attoptions) AS o WHERE o NOT LIKE 'pg\_attver=%') AS options
FROM pg_attribute WHERE attrelid = 'k10_mv'::regclass AND attname = 'a';

-- a default nextval('name'::text) records no dependency on its sequence: said so
CREATE SEQUENCE k13_seq;
CREATE TABLE k13 (id int PRIMARY KEY DEFAULT nextval('k13_seq'::text));
SELECT try('SELECT snowflake_migrate_column(''k13'')');
SELECT try_hint('SELECT snowflake_migrate_column(''k13'')');

-- a call written for 1.1 (no new_type) on a column already of the snowflake type: nothing to do
CREATE TABLE k12 (id serial PRIMARY KEY);
SELECT snowflake_migrate_column('k12', 'id', 'snowflake') ->> 'new_type' AS new_type;
SELECT r ->> 'changed' AS changed FROM snowflake_migrate_column('k12') AS r;
SELECT col_type('k12', 'id');

-- a caller that lacks the owner's privileges is refused up front
CREATE TABLE k11 (id serial PRIMARY KEY);
GRANT SELECT ON k11 TO regress_sf_atk;
SET ROLE regress_sf_atk;
SELECT try('SELECT snowflake_migrate_column(''public.k11'')');
-- nor can it run statements as a role whose privileges it lacks
SELECT try('SELECT snowflake_migrate_exec(''regress_sf_app''::regrole, ARRAY[''SELECT 1''])');
RESET ROLE;
-- the statements run in a security-restricted operation: SET ROLE back is refused
SELECT try('SELECT snowflake_migrate_exec(''regress_sf_app''::regrole, ARRAY[''RESET ROLE''])');
SELECT try('SELECT snowflake_migrate_exec(''regress_sf_app''::regrole, ARRAY[''SELECT set_config(''''role'''', ''''none'''', false)''])');
SELECT try('SELECT snowflake_migrate_exec(''regress_sf_app''::regrole, ARRAY[''CREATE TEMP TABLE x (a int)''])');
SELECT try('SELECT snowflake_migrate_exec(0, ARRAY[''SELECT 1''])');
SELECT snowflake_migrate_exec('regress_sf_app'::regrole, NULL) AS null_runs_nothing;

\c :regress_db
DROP DATABASE snowflake_migrate_owner;
DROP ROLE regress_sf_atk;
DROP ROLE regress_sf_app;
