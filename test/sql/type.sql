-- The snowflake type: a bigint in storage, comparisons and indexes, a string in JSON.

SELECT current_database() AS regress_db \gset
CREATE DATABASE snowflake_type;
\c snowflake_type
CREATE EXTENSION snowflake;

-- a key column of the type, filled by the generator, by literals and by the worked example
CREATE TABLE t (id snowflake PRIMARY KEY DEFAULT snowflake_next(), name text NOT NULL);
INSERT INTO t (id, name) VALUES (1724551110457221119, 'worked example'),
                                (1050118621198921728, 'a real tweet'),
                                (9007199254740993, '2^53 + 1'),
                                (5, 'an integer literal'),
                                ('9223372036854775807', 'largest, as text');
INSERT INTO t (name) SELECT 'generated ' || g FROM generate_series(1, 1000) g;
SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids,
       bool_and(snowflake_datacenter_id(id) = 1) FILTER (WHERE name LIKE 'generated%') AS generated_here
FROM t;
SELECT pg_column_size(id) AS bytes FROM t WHERE id = 5;

-- JSON: every producer gives a string, where bigint gives a number
SELECT to_json(t) FROM t WHERE id = 1724551110457221119;
SELECT to_jsonb(t) FROM t WHERE id = 1724551110457221119;
SELECT row_to_json(t) FROM t WHERE id = 1050118621198921728;
SELECT json_agg(t ORDER BY id) FROM t WHERE id < 1724551110457221120 AND name NOT LIKE 'generated%';
SELECT jsonb_agg(id ORDER BY id) FROM t WHERE id < 1724551110457221120 AND name NOT LIKE 'generated%';
SELECT jsonb_build_object('id', id, 'as_bigint', id::bigint) FROM t WHERE id = 1724551110457221119;
SELECT json_build_object('id', id), json_build_array(id, id::bigint) FROM t WHERE id = 9007199254740993;
SELECT jsonb_object_agg(name, id) FROM t WHERE id IN (5, 9007199254740993);
SELECT to_json(ARRAY[1724551110457221119, 5]::snowflake[]) AS array_of_ids;
SELECT jsonb_typeof(to_jsonb(id)) AS snowflake_json, jsonb_typeof(to_jsonb(id::bigint)) AS bigint_json
FROM t WHERE id = 5;
SELECT jsonb_build_object('newest', max(id), 'oldest', min(id)) FROM t WHERE name NOT LIKE 'generated%';
-- a domain over bigint would not do: JSON looks through domains
CREATE DOMAIN id_domain AS bigint;
SELECT to_json(1724551110457221119::id_domain) AS domain_json, to_json(1724551110457221119::snowflake) AS type_json;

-- ... and reads back: ->> then a cast, or populate_record from a string (or a legacy number)
SELECT ('{"id": "1724551110457221119"}'::json ->> 'id')::snowflake AS from_json;
SELECT (to_jsonb(t) ->> 'id')::snowflake = id AS round_trip FROM t WHERE id = 1724551110457221119;
SELECT count(*) AS rows, bool_and((to_jsonb(t) ->> 'id')::snowflake = id) AS every_id_round_trips FROM t;
SELECT * FROM jsonb_populate_record(NULL::t, '{"id": "1724551110457221119", "name": "from a string"}');
SELECT * FROM json_populate_record(NULL::t, '{"id": 1050118621198921728, "name": "from a number"}');
SELECT count(*) AS matched FROM t JOIN json_populate_recordset(NULL::t, (SELECT json_agg(t) FROM t)) r USING (id);

-- every decode function and range helper takes it (the implicit cast to bigint)
SELECT (snowflake_decode(id)).*, snowflake_timestamp(id), snowflake_unix_ms(id), snowflake_datacenter_id(id),
       snowflake_machine_id(id), snowflake_sequence(id)
FROM t WHERE id = 1724551110457221119;
SELECT snowflake_format(id) ->> 'id' AS formatted FROM t WHERE id = 1724551110457221119;

-- casts: to and from bigint, integer, smallint, numeric and text; arithmetic gives a bigint
SELECT pg_typeof(id::bigint) AS to_bigint, pg_typeof(id + 1) AS plus_one, pg_typeof(id::numeric) AS to_numeric,
       pg_typeof(id::text) AS to_text, pg_typeof(max(id)) AS max_of
FROM t WHERE id = 5 GROUP BY id;
SELECT 1724551110457221119::bigint::snowflake AS from_bigint, 42::snowflake AS from_int,
       42::smallint::snowflake AS from_smallint, 1724551110457221119::numeric::snowflake AS from_numeric,
       '1724551110457221119'::text::snowflake AS from_text, snowflake(7) AS function_style;
SELECT 1724551110457221119::snowflake::numeric AS to_numeric, 1724551110457221119::snowflake::text AS to_text;
CREATE TABLE t_assign (s snowflake, b bigint, n numeric, x text);
INSERT INTO t_assign VALUES (42, 1724551110457221119::snowflake, 1724551110457221119::snowflake, 5::snowflake);
INSERT INTO t_assign (s) VALUES (snowflake_next()), (42::smallint), (42.0);
SELECT s IS NOT NULL AS stored FROM t_assign;
SELECT b, n, x FROM t_assign WHERE b IS NOT NULL;
-- no operator of its own beyond comparisons, and no cast to json
SELECT DISTINCT oprname FROM pg_operator WHERE 'snowflake'::regtype IN (oprleft, oprright) ORDER BY 1;
SELECT count(*) AS casts_to_json FROM pg_cast WHERE castsource = 'snowflake'::regtype AND casttarget IN ('json'::regtype, 'jsonb'::regtype);

-- errors: bad input, out of range, overflow from numeric, no implicit cast from numeric
SELECT 'x'::snowflake;
SELECT '9223372036854775808'::snowflake;
SELECT 1e19::snowflake;
-- numeric compares and adds as with a bigint (test/sql/type_resolution.sql has the rest);
-- arithmetic with double precision does not exist
-- (terse: PostgreSQL 19 words the detail and hint of a missing operator differently)
SELECT id, id + 1.5 AS plus, pg_typeof(id / 2.0) AS divided FROM t WHERE id = 5.0;
\set VERBOSITY terse
SELECT id * 0.5::double precision FROM t WHERE id = 5;
\set VERBOSITY default
INSERT INTO t (id, name) VALUES (1724551110457221119, 'duplicate');

-- comparisons with snowflake, bigint and integer values and literals, in both orders
SELECT count(*) FILTER (WHERE id = 1724551110457221119) AS eq_bigint,
       count(*) FILTER (WHERE 1724551110457221119 = id) AS bigint_eq,
       count(*) FILTER (WHERE id = 5) AS eq_int,
       count(*) FILTER (WHERE id = 5::smallint) AS eq_smallint,
       count(*) FILTER (WHERE id = '5') AS eq_unknown,
       count(*) FILTER (WHERE id <> 5) AS ne_int,
       count(*) FILTER (WHERE id < 1724551110457221119) AS lt_bigint,
       count(*) FILTER (WHERE id <= 9007199254740993::snowflake) AS le_snowflake,
       count(*) FILTER (WHERE 6 > id) AS int_gt,
       count(*) FILTER (WHERE id >= 9007199254740993) AS ge_bigint
FROM t;
SELECT id FROM t WHERE id IN (5, 1050118621198921728, 1724551110457221119) ORDER BY id;
SELECT id FROM t WHERE id = ANY ('{5,9007199254740993}'::bigint[]) ORDER BY id DESC;

-- the indexes are used: equality with bigint and integer literals, and a time range
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id = 1724551110457221119;
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id = 5;
EXPLAIN (COSTS OFF) SELECT * FROM t
WHERE id BETWEEN snowflake_min_id('2023-11-14 22:13:20+00') AND snowflake_max_id('2023-11-14 22:13:21+00');
SELECT id, snowflake_timestamp(id) FROM t
WHERE id BETWEEN snowflake_min_id('2023-11-14 22:13:20+00') AND snowflake_max_id('2023-11-14 22:13:21+00');
-- max() reads the index backwards (how a plan prints its InitPlan differs between versions:
-- only the access path is checked).
CREATE FUNCTION pg_temp.plan(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY EXECUTE 'EXPLAIN (COSTS OFF) ' || q; END $$;
SELECT string_agg(p, ' ') ~ 'Index Only Scan Backward using t_pkey on t' AS max_reads_the_index_backward
FROM pg_temp.plan('SELECT max(id) FROM t') p;
SELECT max(id) AS newest_literal FROM t WHERE name NOT LIKE 'generated%';

-- hash and BRIN indexes (the key's btree index set aside)
ALTER TABLE t DROP CONSTRAINT t_pkey;
CREATE INDEX t_id_hash ON t USING hash (id);
CREATE INDEX t_id_brin ON t USING brin (id);
SELECT c.relname, am.amname, opc.opcname
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
JOIN pg_opclass opc ON opc.oid = i.indclass[0]
WHERE i.indrelid = 't'::regclass ORDER BY 1;
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id = 1724551110457221119;
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id = 5;
SELECT name FROM t WHERE id = 1724551110457221119;
SET enable_bitmapscan = on;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM t
WHERE id BETWEEN snowflake_min_id('2023-11-14 22:13:20+00') AND snowflake_max_id('2023-11-14 22:13:21+00');
SELECT name FROM t
WHERE id BETWEEN snowflake_min_id('2023-11-14 22:13:20+00') AND snowflake_max_id('2023-11-14 22:13:21+00');
RESET enable_indexscan;
DROP INDEX t_id_hash;
DROP INDEX t_id_brin;
ALTER TABLE t ADD PRIMARY KEY (id);
RESET enable_seqscan;
RESET enable_bitmapscan;

-- joins with a bigint column: hash join and merge join use the type's operator families
CREATE TABLE b (id bigint PRIMARY KEY, label text);
INSERT INTO b SELECT id, 'b ' || name FROM t;
ANALYZE t;
ANALYZE b;
SET enable_nestloop = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t JOIN b ON t.id = b.id;
SELECT count(*) AS hash_joined FROM t JOIN b ON t.id = b.id;
SET enable_hashjoin = off;
RESET enable_mergejoin;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t JOIN b ON t.id = b.id;
SELECT count(*) AS merge_joined FROM t JOIN b ON t.id = b.id;
RESET enable_hashjoin;
RESET enable_nestloop;
-- grouping, sorting and set operations
SELECT count(*) AS groups FROM (SELECT id FROM t GROUP BY id) g;
SELECT pg_typeof(u) AS union_with_bigint FROM (SELECT id FROM t WHERE id = 5 UNION SELECT 6::bigint) s(u) LIMIT 1;
SELECT pg_typeof(coalesce(id, 0::bigint)) AS coalesce_with_bigint FROM t WHERE id = 5;

-- foreign keys: snowflake to snowflake, bigint to snowflake, snowflake to bigint
CREATE TABLE child_s (parent snowflake REFERENCES t);
CREATE TABLE child_b (parent bigint REFERENCES t);
CREATE TABLE child_of_b (parent snowflake REFERENCES b);
INSERT INTO child_s VALUES (1724551110457221119), (5);
INSERT INTO child_b VALUES (1724551110457221119), (5);
INSERT INTO child_of_b VALUES (1724551110457221119), (5);
INSERT INTO child_s VALUES (6);
INSERT INTO child_b VALUES (6);
INSERT INTO child_of_b VALUES (6);
DELETE FROM t WHERE id = 5;
SELECT conrelid::regclass, pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'f' ORDER BY 1;

-- partitioning: by range on snowflake_min_id() bounds (pruned for a time range), and by hash
CREATE TABLE logs (id snowflake NOT NULL, line text) PARTITION BY RANGE (id);
CREATE TABLE logs_2023 PARTITION OF logs
    FOR VALUES FROM (snowflake_min_id('2023-01-01 00:00:00+00')) TO (snowflake_min_id('2024-01-01 00:00:00+00'));
CREATE TABLE logs_2024 PARTITION OF logs
    FOR VALUES FROM (snowflake_min_id('2024-01-01 00:00:00+00')) TO (snowflake_min_id('2025-01-01 00:00:00+00'));
INSERT INTO logs VALUES (1724551110457221119, 'worked example'),
                        (snowflake_encode('2024-06-01 00:00:00+00'::timestamptz, 1, 1, 0), 'mid 2024');
SELECT tableoid::regclass, line FROM logs ORDER BY id;
EXPLAIN (COSTS OFF) SELECT line FROM logs
WHERE id BETWEEN snowflake_min_id('2024-05-01 00:00:00+00') AND snowflake_max_id('2024-07-01 00:00:00+00');
CREATE TABLE hlogs (id snowflake NOT NULL) PARTITION BY HASH (id);
CREATE TABLE hlogs_0 PARTITION OF hlogs FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE hlogs_1 PARTITION OF hlogs FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO hlogs SELECT id FROM t;
SELECT count(*) = (SELECT count(*) FROM t) AS all_rows, count(DISTINCT tableoid) AS partitions_used FROM hlogs;
EXPLAIN (COSTS OFF) SELECT * FROM hlogs WHERE id = 1724551110457221119;
SELECT tableoid::regclass AS pruned_to_the_right_partition FROM hlogs WHERE id = 1724551110457221119;

-- a bigint column becomes a snowflake without rewriting the table (its indexes are rebuilt)
CREATE TABLE conv (id bigint PRIMARY KEY);
INSERT INTO conv SELECT id FROM t;
SELECT relfilenode AS before_filenode FROM pg_class WHERE relname = 'conv' \gset
ALTER TABLE conv ALTER COLUMN id TYPE snowflake;
SELECT relfilenode = :before_filenode AS not_rewritten FROM pg_class WHERE relname = 'conv';
SELECT json_agg(id ORDER BY id) FILTER (WHERE id < 10000000000000000) AS small FROM conv;

-- binary COPY: int8's send and receive
\copy (SELECT id, name FROM t ORDER BY id) TO 'results/type_copy.bin' WITH (FORMAT binary)
CREATE TABLE t_copy (id snowflake, name text);
\copy t_copy FROM 'results/type_copy.bin' WITH (FORMAT binary)
CREATE TABLE t_copy_bigint (id bigint, name text);
\copy t_copy_bigint FROM 'results/type_copy.bin' WITH (FORMAT binary)
SELECT (SELECT count(*) FROM t) AS source_rows,
       (SELECT count(*) FROM t_copy JOIN t USING (id, name)) AS copied_back,
       (SELECT count(*) FROM t_copy_bigint c JOIN t ON c.id = t.id AND c.name = t.name) AS into_bigint;

\c :regress_db
DROP DATABASE snowflake_type;
