-- The snowflake type in real query shapes (issue 20): bigint indexes serve it (foreign keys,
-- filters, merge joins), equalities carry across snowflake = bigint, range estimates read the
-- histogram as int8's, integer literals and IN lists meet it as they meet a bigint, mixed
-- expressions keep the type (JSON strings), and all of it with the extension's schema off
-- search_path.  Plans are shown with COSTS OFF; estimates are compared, never printed.

SELECT current_database() AS regress_db \gset
CREATE DATABASE snowflake_type_planner;
\c snowflake_type_planner
-- the extension in a schema of its own, on search_path for parts 1 to 3; part 4 takes it off
CREATE SCHEMA ext;
CREATE EXTENSION snowflake WITH SCHEMA ext;
SET search_path = "$user", public, ext;

-- the rows' estimate of a query's top plan node
CREATE FUNCTION est(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
    EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
    RETURN (j -> 0 -> 'Plan' ->> 'Plan Rows')::bigint;
END $$;

-- 1. a snowflake parent, a bigint child (README's migration keeps references bigint)
CREATE TABLE parent (id ext.snowflake PRIMARY KEY);
CREATE TABLE child (id bigint PRIMARY KEY,
                    parent_id bigint NOT NULL REFERENCES parent ON DELETE CASCADE);
CREATE INDEX child_parent_id_idx ON child (parent_id);
INSERT INTO parent SELECT g FROM generate_series(1, 2000) g;
INSERT INTO child SELECT g, g % 2000 + 1 FROM generate_series(1, 60000) g;
ANALYZE parent, child;

-- bigint_col = <snowflake>: an index condition on the bigint index (integer_ops)
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM child WHERE parent_id = '5'::ext.snowflake;
EXPLAIN (COSTS OFF) SELECT * FROM child WHERE '5'::ext.snowflake = parent_id;
EXPLAIN (COSTS OFF) SELECT * FROM child WHERE parent_id < '5'::ext.snowflake;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) AS children_of_5 FROM child WHERE parent_id = '5'::ext.snowflake;

-- the foreign key's lookups (ON DELETE CASCADE from the snowflake parent) scan the child's index:
-- no sequential scan of the child, one index scan per deleted parent
-- (the counters of this backend not yet sent are counted too: compare before and after)
BEGIN;
SELECT pg_stat_get_xact_numscans('child'::regclass) AS seq_before,
       pg_stat_get_xact_numscans('child_parent_id_idx'::regclass) AS idx_before \gset
DELETE FROM parent WHERE id <= 20;
SELECT pg_stat_get_xact_numscans('child'::regclass) - :seq_before AS child_seq_scans,
       pg_stat_get_xact_numscans('child_parent_id_idx'::regclass) - :idx_before AS child_index_scans;
SELECT count(*) AS children_left FROM child WHERE parent_id <= 20;
ROLLBACK;
-- and the check of a new child row finds its parent through the parent's index
BEGIN;
SELECT pg_stat_get_xact_numscans('parent'::regclass) AS seq_before \gset
INSERT INTO child VALUES (60001, 7);
SELECT pg_stat_get_xact_numscans('parent'::regclass) - :seq_before AS parent_seq_scans;
ROLLBACK;

-- merge join of the snowflake key and the bigint reference: both sides in their indexes' order
SET enable_hashjoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM child c JOIN parent p ON p.id = c.parent_id;
SELECT count(*) AS merge_joined FROM child c JOIN parent p ON p.id = c.parent_id;
-- (both sides read in their indexes' order, no sort: the snowflake index is offered in
-- integer_ops order too, src/type.c)
-- with the type's integer_ops members missing (after a pg_upgrade, before the repair) the
-- index is not offered so: the snowflake side is sorted, nothing fails
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT am.amname, 'OPERATOR' AS what, a.amopstrategy AS num, a.amoplefttype::regtype AS l, a.amoprighttype::regtype AS r
             FROM pg_amop a JOIN pg_opfamily f ON f.oid = a.amopfamily JOIN pg_am am ON am.oid = f.opfmethod
             WHERE f.opfname = 'integer_ops' AND 'ext.snowflake'::regtype IN (a.amoplefttype, a.amoprighttype)
             UNION ALL
             SELECT am.amname, 'FUNCTION', p.amprocnum, p.amproclefttype::regtype, p.amprocrighttype::regtype
             FROM pg_amproc p JOIN pg_opfamily f ON f.oid = p.amprocfamily JOIN pg_am am ON am.oid = f.opfmethod
             WHERE f.opfname = 'integer_ops' AND 'ext.snowflake'::regtype IN (p.amproclefttype, p.amprocrighttype)
    LOOP
        EXECUTE format('ALTER OPERATOR FAMILY integer_ops USING %s DROP %s %s (%s, %s)', r.amname, r.what, r.num, r.l, r.r);
    END LOOP;
END $$;
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT count(*) FROM child c JOIN parent p ON p.id = c.parent_id;
RESET max_parallel_workers_per_gather;
SELECT count(*) AS merge_joined_without_the_members FROM child c JOIN parent p ON p.id = c.parent_id;
SELECT ext.snowflake_repair_integer_ops() AS repaired;
EXPLAIN (COSTS OFF) SELECT count(*) FROM child c JOIN parent p ON p.id = c.parent_id;
-- two snowflake keys still merge in their own indexes' order, with no sort
CREATE TABLE parent2 (id ext.snowflake PRIMARY KEY);
INSERT INTO parent2 SELECT g FROM generate_series(1, 2000, 2) g;
ANALYZE parent2;
EXPLAIN (COSTS OFF) SELECT count(*) FROM parent JOIN parent2 USING (id);
RESET enable_hashjoin;
RESET enable_nestloop;

-- ORDER BY, max() and min() on the snowflake key use its index (backward for max)
EXPLAIN (COSTS OFF) SELECT id FROM parent ORDER BY id DESC LIMIT 1;
-- (how a plan prints its InitPlan differs between versions: only the access path is checked)
CREATE FUNCTION pg_temp.plan(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY EXECUTE 'EXPLAIN (COSTS OFF) ' || q; END $$;
SELECT string_agg(p, ' ') ~ 'Index Only Scan Backward using parent_pkey on parent' AS max_reads_the_index_backward
FROM pg_temp.plan('SELECT max(id) FROM parent') p;
SELECT string_agg(p, ' ') ~ 'Index Only Scan using parent_pkey on parent' AS min_reads_the_index
FROM pg_temp.plan('SELECT min(id) FROM parent') p;
SELECT pg_typeof(max(id)) AS max_type, max(id), min(id), jsonb_typeof(to_jsonb(max(id))) AS max_json FROM parent;

-- equivalence classes cross snowflake = bigint: a bigint table partitioned by key is pruned by
-- a condition on the snowflake side of the join
CREATE TABLE events (id bigint NOT NULL, note text) PARTITION BY RANGE (id);
CREATE TABLE events_1 PARTITION OF events FOR VALUES FROM (0) TO (1000);
CREATE TABLE events_2 PARTITION OF events FOR VALUES FROM (1000) TO (3000);
EXPLAIN (COSTS OFF) SELECT * FROM parent p JOIN events e ON e.id = p.id WHERE p.id = 1500;
EXPLAIN (COSTS OFF) SELECT * FROM parent p JOIN events e ON e.id = p.id WHERE p.id = '1500'::ext.snowflake;
-- and across snowflake = bigint = snowflake
EXPLAIN (COSTS OFF) SELECT * FROM parent p JOIN child c ON c.parent_id = p.id WHERE c.parent_id = 42;

-- 2. range estimates: one hour and one day of 100 days of IDs (one every 86.4 s), the whole table
-- sampled (statistics target 1000: 300000 rows sampled of 100000), so the estimates are fixed
CREATE TABLE ids_sf (id ext.snowflake);
CREATE TABLE ids_big (id bigint);
INSERT INTO ids_sf
SELECT ext.snowflake_min_id('2026-01-01 00:00+00'::timestamptz + g * interval '86.4 s') + g % 7
FROM generate_series(1, 100000) g;
INSERT INTO ids_big SELECT id FROM ids_sf;
ALTER TABLE ids_sf ALTER id SET STATISTICS 1000;
ALTER TABLE ids_big ALTER id SET STATISTICS 1000;
ANALYZE ids_sf, ids_big;
CREATE TEMP TABLE windows (name text, q text);
INSERT INTO windows VALUES
  ('one hour',  $$id BETWEEN ext.snowflake_min_id('2026-02-10 10:00+00') AND ext.snowflake_max_id('2026-02-10 11:00+00')$$),
  ('one day',   $$id >= ext.snowflake_min_id('2026-02-10 00:00+00') AND id < ext.snowflake_min_id('2026-02-11 00:00+00')$$),
  ('one day, literal bounds', $$id > 2021000000000000000 AND id < 2021360000000000000$$),
  ('after a time', $$id > ext.snowflake_min_id('2026-04-01 00:00+00')$$),
  ('one hour, snowflake literals', $$id BETWEEN '2021162223006646272' AND '2021177322505240575'$$),
  ('one day, snowflake-typed bounds', $$id >= ext.snowflake_min_id('2026-02-10 00:00+00')::ext.snowflake AND ext.snowflake_min_id('2026-02-11 00:00+00')::ext.snowflake > id$$);
SELECT name,
       est('SELECT * FROM ids_big WHERE ' || q) >= 20 AS bigint_estimate_is_real,
       est('SELECT * FROM ids_sf WHERE ' || q) * 3 >= est('SELECT * FROM ids_big WHERE ' || q)
       AND est('SELECT * FROM ids_sf WHERE ' || q) <= 3 * est('SELECT * FROM ids_big WHERE ' || q)
           AS snowflake_within_3x_of_bigint
FROM windows ORDER BY name;
-- the join of two one-day windows is estimated like bigint's, so it gets bigint's plan shape
SELECT est($$SELECT * FROM ids_sf a JOIN ids_sf b ON a.id = b.id
             WHERE a.id >= ext.snowflake_min_id('2026-02-10 00:00+00') AND a.id < ext.snowflake_min_id('2026-02-11 00:00+00')
               AND b.id >= ext.snowflake_min_id('2026-02-10 12:00+00') AND b.id < ext.snowflake_min_id('2026-02-11 12:00+00')$$) * 3
       >= est($$SELECT * FROM ids_big a JOIN ids_big b ON a.id = b.id
             WHERE a.id >= ext.snowflake_min_id('2026-02-10 00:00+00') AND a.id < ext.snowflake_min_id('2026-02-11 00:00+00')
               AND b.id >= ext.snowflake_min_id('2026-02-10 12:00+00') AND b.id < ext.snowflake_min_id('2026-02-11 12:00+00')$$)
       AS join_estimate_not_below_a_third_of_bigint;
-- a snowflake constant becomes a bigint one (the support function), the same comparison
EXPLAIN (COSTS OFF) SELECT * FROM ids_sf WHERE id > '2021162223006646272' AND '2021177322505240575' >= id;
SELECT count(*) AS same_rows FROM ids_sf WHERE id > '2021162223006646272'::ext.snowflake AND id <= '2021177322505240575'
HAVING count(*) = (SELECT count(*) FROM ids_big WHERE id > 2021162223006646272 AND id <= 2021177322505240575);
-- and so does a parameter of the type in a custom plan
PREPARE by_range(ext.snowflake, ext.snowflake) AS SELECT * FROM ids_sf WHERE id >= $1 AND id < $2;
CREATE FUNCTION est_prepared() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
    EXECUTE $q$EXPLAIN (FORMAT JSON) EXECUTE by_range('2021162223006646272', '2021177322501046272')$q$ INTO j;
    RETURN (j -> 0 -> 'Plan' ->> 'Plan Rows')::bigint;
END $$;
SELECT est_prepared() * 3 >= est($$SELECT * FROM ids_big WHERE id >= 2021162223006646272 AND id < 2021177322501046272$$)
       AND est_prepared() <= 3 * est($$SELECT * FROM ids_big WHERE id >= 2021162223006646272 AND id < 2021177322501046272$$)
       AS parameter_within_3x_of_bigint;
-- the count behind the estimates
SELECT count(*) AS one_day FROM ids_sf
WHERE id >= ext.snowflake_min_id('2026-02-10 00:00+00') AND id < ext.snowflake_min_id('2026-02-11 00:00+00');

-- 3. integer literals and IN lists: one = ANY index condition, as for bigint
EXPLAIN (COSTS OFF) SELECT * FROM parent WHERE id IN (1, 2, 3);
EXPLAIN (COSTS OFF) SELECT * FROM parent WHERE id IN (1::smallint, 2, 3::bigint);
EXPLAIN (COSTS OFF) SELECT * FROM parent WHERE id IN ('1', '2');
SELECT count(*) AS in_list FROM parent WHERE id IN (1, 2, 3, 2001);
SELECT count(*) AS not_in_list FROM parent WHERE id NOT IN (1, 2, 3);
PREPARE by_int(int) AS SELECT count(*) FROM parent WHERE id = $1;
EXECUTE by_int(5);
PREPARE by_ints(int[]) AS SELECT count(*) FROM parent WHERE id = ANY ($1);
EXECUTE by_ints('{1,2,3,99999}');
-- literals in mixed expressions: the snowflake wins over integer and smallint in any position
SELECT pg_typeof(coalesce(id, 0)) AS coalesce_0, pg_typeof(coalesce(0, id)) AS coalesce_0_first,
       pg_typeof(greatest(id, 0)) AS greatest_0, pg_typeof(least(0::smallint, id)) AS least_smallint,
       pg_typeof(CASE WHEN id > 3 THEN id ELSE 0 END) AS case_else_0,
       pg_typeof(nullif(id, 0)) AS nullif_0
FROM parent WHERE id = 5;
SELECT pg_typeof(v) AS values_type, v FROM (VALUES ((SELECT id FROM parent WHERE id = 5)), (0)) AS x(v) ORDER BY v;
SELECT coalesce(id, 0) AS c FROM (SELECT NULL::ext.snowflake) s(id);
-- numeric and double precision compare with a snowflake as with a bigint
-- (test/sql/type_resolution.sql checks them against a bigint control)
SELECT count(*) FILTER (WHERE id = 5.0) AS eq_numeric, count(*) FILTER (WHERE id = 5.5) AS eq_fraction,
       count(*) FILTER (WHERE id < 5.5::double precision) AS lt_float8
FROM parent;
SELECT count(*) FROM parent WHERE id = 5.0::bigint AND id::numeric = 5.0;

-- 4. with the extension's schema off search_path: max() and min() (in pg_catalog) still return
-- a snowflake and use the index; so do the comparisons (in pg_catalog too; before, they fell
-- back to int8's operators through the implicit cast)
SET search_path = "$user", public;
SELECT string_agg(p, ' ') ~ 'Index Only Scan Backward using parent_pkey on parent' AS max_reads_the_index_backward
FROM pg_temp.plan('SELECT max(id) FROM parent') p;
SELECT pg_typeof(max(id)) AS max_type, jsonb_typeof(to_jsonb(max(id))) AS max_json,
       jsonb_typeof(to_jsonb(min(id))) AS min_json FROM parent;
EXPLAIN (COSTS OFF) SELECT * FROM parent WHERE id IN (1, 2, 3);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM child WHERE parent_id = '5'::ext.snowflake;
RESET enable_seqscan;
RESET enable_bitmapscan;
SET search_path = "$user", public, ext;

-- JSON: which mixed expressions stay snowflake (a string) and which become bigint (a number)
CREATE TABLE node (id ext.snowflake PRIMARY KEY, parent_id bigint, alt ext.snowflake);
INSERT INTO node VALUES (1724551110457221119, 1050118621198921728, NULL);
SELECT jsonb_typeof(to_jsonb(coalesce(id, parent_id))) AS coalesce_sf_first,
       jsonb_typeof(to_jsonb(coalesce(parent_id, id))) AS coalesce_bigint_first,
       jsonb_typeof(to_jsonb(coalesce(alt, id))) AS coalesce_two_snowflakes,
       jsonb_typeof(to_jsonb(greatest(id, parent_id))) AS greatest_sf_first,
       jsonb_typeof(to_jsonb(CASE WHEN true THEN id ELSE parent_id END)) AS case_bigint_else,
       jsonb_typeof(to_jsonb(CASE WHEN true THEN parent_id ELSE id END)) AS case_sf_else,
       jsonb_typeof(to_jsonb(CASE WHEN true THEN parent_id::ext.snowflake ELSE id END)) AS case_fixed,
       jsonb_typeof(to_jsonb(coalesce(parent_id, id)::ext.snowflake)) AS coalesce_fixed,
       jsonb_typeof(to_jsonb(id + 0)) AS arithmetic
FROM node;
SELECT jsonb_agg(u) AS union_all_sf_first FROM (SELECT id FROM node UNION ALL SELECT parent_id FROM node) s(u);
SELECT jsonb_agg(u) AS union_all_bigint_first FROM (SELECT parent_id FROM node UNION ALL SELECT id FROM node) s(u);
SELECT jsonb_agg(u) AS union_all_fixed FROM (SELECT parent_id::ext.snowflake FROM node UNION ALL SELECT id FROM node) s(u);
SELECT json_agg(n) AS row_json FROM (SELECT id, coalesce(alt, id) AS root, max(id) OVER () AS newest FROM node) n;

-- operators with other types are not ambiguous for bigint and integer columns (the implicit
-- casts to snowflake must not take part in their resolution)
SELECT 5::bigint = 5.0 AS bigint_numeric, 5 < 5.5 AS integer_numeric, 5::bigint + 1 AS bigint_plus,
       pg_typeof(1050118621198921728::bigint - 1) AS bigint_minus, 2::smallint * 3 AS smallint_times;
SELECT pg_typeof(id - id) AS difference, pg_typeof(id + 1) AS plus_one FROM node;

-- 5. every comparison, run without an index (a sequential scan calls the operator's own
-- function), agrees with bigint's on values around the constant: 6 operators x 4 types x 2 orders
CREATE TABLE cmp (id snowflake, b bigint);
INSERT INTO cmp SELECT g, g FROM generate_series(-3, 13) g;
INSERT INTO cmp VALUES (9223372036854775807, 9223372036854775807), (-9223372036854775808, -9223372036854775808);
CREATE FUNCTION cmp_disagree(OUT expr text, OUT snowflake_count bigint, OUT bigint_count bigint)
RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE op text; typ text; l text; r text; n1 bigint; n2 bigint;
BEGIN
    FOREACH op IN ARRAY ARRAY['=', '<>', '<', '<=', '>', '>='] LOOP
        FOREACH typ IN ARRAY ARRAY['smallint', 'integer', 'bigint', 'snowflake'] LOOP
            FOR i IN 1 .. 2 LOOP
                l := CASE i WHEN 1 THEN 'id' ELSE format('5::%s', typ) END;
                r := CASE i WHEN 1 THEN format('5::%s', typ) ELSE 'id' END;
                EXECUTE format('SELECT count(*) FROM cmp WHERE %s %s %s', l, op, r) INTO n1;
                EXECUTE format('SELECT count(*) FROM cmp WHERE %s %s %s', replace(replace(l, 'id', 'b'), 'snowflake', 'bigint'), op,
                               replace(replace(r, 'id', 'b'), 'snowflake', 'bigint')) INTO n2;
                IF n1 <> n2 THEN
                    expr := format('%s %s %s', l, op, r); snowflake_count := n1; bigint_count := n2;
                    RETURN NEXT;
                END IF;
            END LOOP;
        END LOOP;
    END LOOP;
END $$;
EXPLAIN (COSTS OFF) SELECT count(*) FROM cmp WHERE id < 5;
SELECT count(*) FILTER (WHERE id < 5) AS lt_5, count(*) FILTER (WHERE id <= 5) AS le_5,
       count(*) FILTER (WHERE 5 > id) AS five_gt, count(*) FILTER (WHERE id > 5::smallint) AS gt_5
FROM cmp;
SELECT * FROM cmp_disagree();

\c :regress_db
DROP DATABASE snowflake_type_planner;
