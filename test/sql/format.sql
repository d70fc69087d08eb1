-- snowflake_format(): an ID as jsonb, the 64-bit numbers as strings.

SELECT current_database() AS regress_db \gset
CREATE DATABASE snowflake_format;
\c snowflake_format
CREATE EXTENSION snowflake;

-- the worked example of the spec and a real tweet ID
SELECT snowflake_format(1724551110457221119);
SELECT jsonb_pretty(snowflake_format(1050118621198921728));

-- the ends of the range
SELECT snowflake_format(0);
SELECT snowflake_format(9223372036854775807);
SELECT snowflake_format(NULL) IS NULL AS null_in_null_out;

-- the JSON types of the fields: big numbers are strings, small ones numbers
SELECT key, jsonb_typeof(value) FROM jsonb_each(snowflake_format(1724551110457221119)) ORDER BY key;

-- the same in every time zone: the timestamp is UTC
SET TimeZone = 'Asia/Kolkata';
SELECT snowflake_format(1724551110457221119) ->> 'ts' AS ts;
SET TimeZone = 'America/Los_Angeles';
SELECT snowflake_format(1724551110457221119) ->> 'ts' AS ts;
RESET TimeZone;

-- every field agrees with snowflake_decode(), and the strings give the exact bigint back
SELECT count(*) AS ids,
       bool_and(f ->> 'id' = id::text AND (f ->> 'id')::bigint = id) AS id_exact,
       bool_and((f ->> 'unix_ms')::bigint = (d).unix_ms) AS unix_ms_exact,
       bool_and((f ->> 'ts')::timestamptz = (d).ts) AS ts_exact,
       bool_and((f -> 'datacenter_id')::int = (d).datacenter_id AND (f -> 'machine_id')::int = (d).machine_id
                AND (f -> 'sequence')::int = (d).sequence) AS fields_exact,
       bool_and((f ->> 'datacenter_id')::int = 1 AND (f ->> 'machine_id')::int = 1) AS this_node
FROM (SELECT id, snowflake_format(id) AS f, snowflake_decode(id) AS d
      FROM (SELECT snowflake_next_n(1000) AS id) g) s;

-- why strings: a double (a JavaScript number) cannot hold these IDs
SELECT id, (id::float8)::numeric AS as_double, (id::float8)::numeric = id AS double_exact
FROM (VALUES (1724551110457221119), (1050118621198921728), (9007199254740993)) AS v(id);

-- a negative ID is rejected by snowflake_decode()
DO $$
BEGIN
    PERFORM snowflake_format(-1);
    RAISE NOTICE 'no error';
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'snowflake_format(-1) failed with SQLSTATE %', SQLSTATE;
END
$$;

-- labels
SELECT p.oid::regprocedure, p.provolatile, p.proparallel, p.proisstrict, p.prorettype::regtype,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
FROM pg_proc p WHERE p.proname = 'snowflake_format';

-- usable in an index expression (IMMUTABLE)
CREATE TABLE t_fmt (id bigint PRIMARY KEY DEFAULT snowflake_next());
CREATE INDEX ON t_fmt ((snowflake_format(id) ->> 'ts'));
INSERT INTO t_fmt DEFAULT VALUES;
SELECT count(*) FROM t_fmt WHERE snowflake_format(id) ->> 'id' = id::text;

\c :regress_db
DROP DATABASE snowflake_format;
