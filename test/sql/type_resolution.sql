-- How PostgreSQL resolves expressions over the snowflake type, against a bigint control
-- (issue 20): every operator of pg_catalog that takes a number, the forms that pick one type
-- for several values (coalesce, greatest, CASE, IN, VALUES, UNION, ...) and every function of
-- pg_catalog that takes a number or any type, each with a snowflake, a bigint, integer,
-- numeric and double precision columns, and literals of each type.
--   A. the extension changes nothing in statements without a snowflake: each expression
--      gives the same result, result type or error before and after CREATE EXTENSION;
--   B. each expression over a snowflake column gives what it gives over a bigint column with
--      the same values (results, result types, errors); the differences are listed, each
--      one documented in docs/type.md.

SELECT current_database() AS regress_db \gset
CREATE DATABASE snowflake_type_resolution;
\c snowflake_type_resolution
-- a guard only: no expression here takes more than milliseconds
SET statement_timeout = '60s';

-- x: the column under test (bigint here; a snowflake in src_sf below)
CREATE TABLE src (x bigint, b bigint, n integer, m numeric, f double precision);
INSERT INTO src VALUES (5, 7, 3, 2.5, 0.5), (1724551110457221119, -7, -3, -2.5, 1.5);

-- the value of an expression on each row, as "type value | type value", or its error
CREATE FUNCTION probe(expr text, tab text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
    EXECUTE format('SELECT string_agg(pg_typeof(v)::text || '' '' || coalesce(v::text, ''NULL''), '' | '') '
                   'FROM (SELECT (%s) AS v FROM %s) s', expr, tab) INTO r;
    RETURN coalesce(r, '(no rows)');
EXCEPTION WHEN OTHERS THEN
    RETURN 'ERROR ' || SQLSTATE || ' ' || SQLERRM;
END $$;

CREATE TABLE operand (v text);
INSERT INTO operand VALUES ('x'), ('b'), ('n'), ('m'), ('f'), ('5'), ('5.5'), ('''5'''), ('NULL'),
    ('2::smallint'), ('5::bigint'), ('5.5::numeric'), ('5.5::real'), ('5.5::double precision');

CREATE TABLE expr (expr text PRIMARY KEY);
-- every binary operator name of pg_catalog with a number on one side, between any two operands
INSERT INTO expr SELECT DISTINCT format('%s %s %s', l.v, o.oprname, r.v)
FROM operand l, operand r,
     (SELECT DISTINCT oprname FROM pg_operator
      WHERE oprnamespace = 'pg_catalog'::regnamespace AND oprleft <> 0
        AND (oprleft::regtype IN ('smallint', 'integer', 'bigint', 'numeric', 'real', 'double precision')
             OR oprright::regtype IN ('smallint', 'integer', 'bigint', 'numeric', 'real', 'double precision'))) o;
-- every prefix operator name on a number
INSERT INTO expr SELECT DISTINCT format('%s %s', o.oprname, r.v)
FROM operand r,
     (SELECT DISTINCT oprname FROM pg_operator
      WHERE oprnamespace = 'pg_catalog'::regnamespace AND oprleft = 0
        AND oprright::regtype IN ('smallint', 'integer', 'bigint', 'numeric', 'real', 'double precision')) o;
-- the forms that resolve one type for several values
INSERT INTO expr SELECT DISTINCT format(f, l.v, r.v)
FROM operand l, operand r,
     unnest(ARRAY['coalesce(%s, %s)', 'greatest(%s, %s)', 'least(%s, %s)', 'nullif(%s, %s)',
                  'CASE WHEN n > 0 THEN %s ELSE %s END', 'CASE %s WHEN %s THEN 1 ELSE 0 END',
                  '(ARRAY[%s, %s])[1]', '%s IN (%2$s, 3)', '%s = ANY (ARRAY[%s])', '%s BETWEEN %2$s AND 6',
                  '%s IS DISTINCT FROM %s', '(SELECT v FROM (VALUES (%s), (%s)) s(v) LIMIT 1)',
                  '(SELECT %s UNION ALL SELECT %s LIMIT 1)']) f;
-- every function of pg_catalog (not volatile, not returning a set, one to three arguments)
-- that takes a number or any type, with x at each argument and '5' at the others
INSERT INTO expr SELECT DISTINCT format('%s(%s)', quote_ident(p.proname),
    (SELECT string_agg(CASE WHEN i = pos THEN 'x' ELSE '''5''' END, ', ' ORDER BY i) FROM generate_series(1, p.pronargs) i))
FROM pg_proc p, generate_series(1, p.pronargs) pos
WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.prokind IN ('f', 'a') AND p.provolatile <> 'v'
  AND NOT p.proretset AND p.pronargs BETWEEN 1 AND 3
  AND p.proargtypes[pos - 1]::regtype IN ('smallint', 'integer', 'bigint', 'numeric', 'real', 'double precision',
                                         'anyelement', 'anycompatible', 'anynonarray', 'anycompatiblenonarray', '"any"')
ON CONFLICT DO NOTHING;
-- and what a query over IDs does every day
INSERT INTO expr VALUES ('abs(x)'), ('x + 1'), ('x - b'), ('x - x'), ('x * 2'), ('x / 2'), ('x % 7'), ('-x'),
    ('x + 1.5'), ('x / 2.0'), ('x * 0.5::double precision'), ('x::numeric / 3'), ('sum(x)'), ('avg(x)'),
    ('max(x)'), ('min(x)'), ('count(x)'), ('sum(x + 0)'), ('round(x)'), ('round(x, 2)'), ('trunc(x)'),
    ('to_char(x, ''FM9999999999999999999'')'), ('x::text'), ('x::numeric'), ('x::double precision'),
    ('x::integer'), ('(SELECT count(*) FROM generate_series(x, x + 2))'),
    ('(SELECT count(*) FROM generate_series(x, x + 4, 2))'), ('x = 5.0'), ('x = 5.0::numeric'),
    ('x = 5::double precision'), ('x < 5.5'), ('x IN (1.0, 5.0)'), ('x IN (5, 1.5)'), ('x = ANY (''{5.0,1.0}''::numeric[])'),
    ('x BETWEEN 4.5 AND 5.5'), ('coalesce(x, 0.0)'), ('greatest(x, 1.5)'), ('CASE WHEN n > 0 THEN x ELSE 0.5 END'),
    ('x = 1724551110457221119::double precision'), ('x = 1724551110457221120::double precision'),
    ('x = ''NaN''::numeric'), ('x < ''Infinity''::double precision'), ('x = 5.0::real'),
    ('x::numeric = 5.0'), ('x = ''abc''::numeric'), ('x > 5e400'), ('x = 1e300::double precision * 1e300')
ON CONFLICT DO NOTHING;

SELECT count(*) > 5000 AS many_expressions, count(*) FILTER (WHERE expr ~ '\mx\M') > 1500 AS many_over_x FROM expr;

-- A. before the extension
CREATE TABLE before AS SELECT expr, probe(expr, 'src') AS result FROM expr;

CREATE EXTENSION snowflake;
CREATE TABLE src_sf (x snowflake, b bigint, n integer, m numeric, f double precision);
INSERT INTO src_sf SELECT * FROM src;

CREATE TABLE after AS SELECT expr, probe(expr, 'src') AS result FROM expr;
-- (how many: 7268 on PostgreSQL 15, more where a later version has more functions)
SELECT count(*) > 7000 AS compared_over_7000, count(*) FILTER (WHERE b.result IS DISTINCT FROM a.result) AS changed_by_the_extension
FROM before b JOIN after a USING (expr);
SELECT b.expr, b.result AS before, a.result AS after FROM before b JOIN after a USING (expr)
WHERE b.result IS DISTINCT FROM a.result ORDER BY 1;

-- B. a snowflake column against a bigint column (the control: x bigint, same values)
CREATE TABLE sf AS SELECT expr, probe(expr, 'src_sf') AS result FROM expr WHERE expr ~ '\mx\M';
-- the same result with the type's name for bigint's: the value kept the type (its JSON a string)
CREATE FUNCTION as_bigint(r text) RETURNS text LANGUAGE sql AS $$ SELECT replace(r, 'snowflake', 'bigint') $$;
SELECT count(*) > 1500 AS over_x,
       count(*) FILTER (WHERE s.result = a.result) > 500 AS same,
       count(*) FILTER (WHERE s.result <> a.result AND as_bigint(s.result) = a.result) > 500 AS same_but_snowflake
FROM sf s JOIN after a USING (expr);
-- every difference is of a kind docs/type.md names ("Limits"): the snowflake is not converted
-- implicitly to numeric, real or double precision, where a bigint is (its arithmetic and
-- functions with those types; coalesce, CASE, ARRAY, VALUES, UNION with them); and for each one
-- id::bigint gives bigint's answer
CREATE TABLE diff AS
SELECT s.expr, a.result AS over_bigint, s.result AS over_snowflake,
       CASE WHEN s.result ~ '^ERROR 42846 [A-Z/]+ could not convert type (snowflake to (numeric|real|double precision)|(numeric|real|double precision) to snowflake)$'
            THEN 'mixed with numeric, real or double precision'
            WHEN s.result ~ '^ERROR 42883 operator does not exist: .*snowflake'
            THEN 'an operator bigint reaches through numeric, real or double precision'
            WHEN s.result ~ '^ERROR 42883 function \S+\(.*snowflake.*\) does not exist$'
            THEN 'a function with no bigint form'
            WHEN s.result ~ '^jsonb? ' AND replace(s.result, '"', '') = replace(a.result, '"', '')
            THEN 'JSON: a string (the type''s purpose)'
            WHEN s.expr ~ '^nullif\(' AND regexp_replace(s.result, '(^|\| )\S+ ', '\1', 'g') = regexp_replace(a.result, '(^|\| )(\S+|double precision) ', '\1', 'g')
            THEN 'nullif with numeric, real or double precision: same value, another type'
            ELSE 'other' END AS kind,
       probe(regexp_replace(s.expr, '\mx\M', '(x::bigint)', 'g'), 'src_sf') = a.result AS fixed_by_id_bigint
FROM sf s JOIN after a USING (expr)
WHERE as_bigint(s.result) <> a.result;
SELECT kind, bool_and(fixed_by_id_bigint) AS id_bigint_gives_bigints_answer FROM diff GROUP BY kind ORDER BY kind;
-- the other differences: nullif(id, <double precision>) is a snowflake_arg, the domain over the
-- type (bigint's a double precision), and percentile_disc() called without WITHIN GROUP fails
-- with another error (as before 1.3)
SELECT expr, over_bigint, over_snowflake FROM diff WHERE kind = 'other' OR NOT fixed_by_id_bigint ORDER BY expr;
-- the operators missing: arithmetic with real or double precision, % and ^ with numeric, ^, |/, ||/
SELECT DISTINCT substring(over_snowflake FROM 'operator does not exist: (.*)$') AS missing_operator
FROM diff WHERE kind ~ '^an operator' ORDER BY 1;
-- nullif(<numeric or double precision>, id) has the type of the comparison's domain
SELECT expr, over_bigint, over_snowflake FROM diff WHERE kind ~ '^nullif' ORDER BY expr;

-- the everyday expressions in full
SELECT s.expr, a.result AS over_bigint,
       CASE WHEN s.result = a.result THEN 'same' WHEN as_bigint(s.result) = a.result THEN 'same, snowflake'
            ELSE s.result END AS over_snowflake
FROM sf s JOIN after a USING (expr)
WHERE s.expr IN ('abs(x)', 'x + 1', 'x - b', 'x - x', 'x * 2', 'x / 2', 'x % 7', '-x', 'x + 1.5', 'x / 2.0',
                 'x * 0.5::double precision', 'x::numeric / 3', 'sum(x)', 'avg(x)', 'max(x)', 'min(x)', 'count(x)',
                 'round(x)', 'round(x, 2)', 'trunc(x)', 'to_char(x, ''FM9999999999999999999'')', 'x::numeric',
                 'x::double precision', 'x::integer', '(SELECT count(*) FROM generate_series(x, x + 2))',
                 '(SELECT count(*) FROM generate_series(x, x + 4, 2))', 'x = 5.0', 'x = 5.0::numeric',
                 'x = 5::double precision', 'x < 5.5', 'x IN (1.0, 5.0)', 'x IN (5, 1.5)',
                 'x = ANY (''{5.0,1.0}''::numeric[])', 'x BETWEEN 4.5 AND 5.5', 'coalesce(x, 0.0)', 'greatest(x, 1.5)',
                 'CASE WHEN n > 0 THEN x ELSE 0.5 END', 'x = 1724551110457221119::double precision',
                 'x = 1724551110457221120::double precision', 'x = ''NaN''::numeric',
                 'x < ''Infinity''::double precision', 'x = 5.0::real', 'x = ''abc''::numeric', 'x > 5e400',
                 'x = 1e300::double precision * 1e300')
ORDER BY 1;

-- parameters: a driver binding a Decimal (numeric) or a float (double precision)
CREATE TABLE ids (id snowflake PRIMARY KEY, b bigint);
INSERT INTO ids SELECT g, g FROM generate_series(1, 1000) g;
INSERT INTO ids VALUES (1724551110457221119, 1724551110457221119);
CREATE INDEX ON ids (b);
ANALYZE ids;
PREPARE by_numeric(numeric) AS SELECT count(*) FILTER (WHERE id = $1) AS snowflake, count(*) FILTER (WHERE b = $1) AS bigint FROM ids;
PREPARE by_float8(double precision) AS SELECT count(*) FILTER (WHERE id = $1) AS snowflake, count(*) FILTER (WHERE b = $1) AS bigint FROM ids;
EXECUTE by_numeric(5);
EXECUTE by_numeric(5.5);
EXECUTE by_numeric(1724551110457221119);
EXECUTE by_float8(5);
EXECUTE by_float8(1724551110457221119);
EXECUTE by_float8(1724551110457221000);
-- the plan is bigint's: the column as numeric, no index condition (bigint's index serves no
-- bigint = numeric either)
-- PostgreSQL 18 and later mark a disabled node ("Disabled: true"): left out, so every version prints the same plan.
CREATE FUNCTION plan_of(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
    FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        IF l !~ '^\s*Disabled: ' THEN RETURN NEXT l; END IF;
    END LOOP;
END $$;
SET enable_seqscan = off;
SELECT plan_of($q$SELECT * FROM ids WHERE id = 5.0$q$);
SELECT plan_of($q$SELECT * FROM ids WHERE b = 5.0$q$);
SELECT plan_of($q$SELECT * FROM ids WHERE id = 5::double precision$q$);
SELECT plan_of($q$SELECT * FROM ids WHERE b = 5::double precision$q$);
SELECT plan_of($q$SELECT * FROM ids WHERE id IN (1.0, 2.0)$q$);
-- integers stay index conditions
SELECT plan_of($q$SELECT * FROM ids WHERE id = 5$q$);
SELECT plan_of($q$SELECT * FROM ids WHERE id IN (1, 2)$q$);
RESET enable_seqscan;
DROP FUNCTION plan_of(text);

-- with the extension's schema off search_path: the comparisons are in pg_catalog, so
-- nullif() keeps the type (its = is the type's) and id = 5.0 still resolves
\c :regress_db
DROP DATABASE snowflake_type_resolution;
CREATE DATABASE snowflake_type_resolution;
\c snowflake_type_resolution
CREATE SCHEMA ext;
CREATE EXTENSION snowflake WITH SCHEMA ext;
CREATE TABLE t (id ext.snowflake, b bigint);
INSERT INTO t VALUES (5, 5), (1724551110457221119, 1724551110457221119);
SET search_path = public;
SELECT pg_typeof(nullif(id, 0)) AS nullif_int, pg_typeof(nullif(id, b)) AS nullif_bigint,
       pg_typeof(nullif(id, id)) AS nullif_self, jsonb_typeof(to_jsonb(nullif(id, 0))) AS json,
       pg_typeof(nullif(b, id)) AS nullif_bigint_first
FROM t WHERE id = 1724551110457221119;
SELECT id = 5.0 AS eq_numeric, id < 5.5::double precision AS lt_float8, id IN (5.0, 6.0) AS in_numeric FROM t ORDER BY b;

\c :regress_db
DROP DATABASE snowflake_type_resolution;
