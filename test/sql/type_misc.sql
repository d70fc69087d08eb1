-- The snowflake type's smaller edges (issue 20, item 5): reading it back from jsonb, snowflake[]
-- in JSON, publication row filters, converting a partition key to the type, and an update over
-- an object of the user's that is already named snowflake.

SELECT current_database() AS regress_db \gset
CREATE DATABASE snowflake_type_misc;
\c snowflake_type_misc
CREATE EXTENSION snowflake;

-- jsonb -> snowflake: a string of digits (the type's JSON form) or a number; nothing else
SELECT ('{"id": "1724551110457221119"}'::jsonb -> 'id')::snowflake AS from_string,
       ('{"id": 1724551110457221119}'::jsonb -> 'id')::snowflake AS from_number,
       pg_typeof(('{"id": "5"}'::jsonb -> 'id')::snowflake) AS type;
SELECT (to_jsonb(1724551110457221119::snowflake))::snowflake = 1724551110457221119 AS round_trip;
SELECT count(*) AS every_element
FROM jsonb_array_elements(to_jsonb(ARRAY[1724551110457221119, 9007199254740993, 5]::snowflake[])) e
WHERE e::snowflake IN (1724551110457221119, 9007199254740993, 5);
SELECT '{"id": 1}'::jsonb::snowflake;
SELECT '[1]'::jsonb::snowflake;
SELECT 'true'::jsonb::snowflake;
SELECT 'null'::jsonb::snowflake;
SELECT '"12x"'::jsonb::snowflake;
SELECT '9223372036854775808'::jsonb::snowflake;
SELECT '2.5'::jsonb::snowflake AS rounds_like_bigint, '2.5'::jsonb::bigint AS bigint_does;
SELECT ('{"id": null}'::jsonb ->> 'id')::snowflake AS sql_null_stays_null;

-- snowflake[]: a JSON array of strings, and its text form is what clients parse
SELECT to_json(ARRAY[1724551110457221119, 5]::snowflake[]) AS json_array,
       ARRAY[1724551110457221119, 5]::snowflake[]::text AS text_array,
       pg_typeof(array_agg(x)) AS agg_type
FROM (VALUES (1724551110457221119::snowflake)) v(x);

-- publication row filters: PostgreSQL allows only built-in types in them, so a snowflake column
-- cannot be filtered on (not even through a cast); filter on another column
CREATE TABLE pub_t (id snowflake PRIMARY KEY, tenant int NOT NULL);
CREATE PUBLICATION pub_by_id FOR TABLE pub_t WHERE (id > 5);
CREATE PUBLICATION pub_by_id_cast FOR TABLE pub_t WHERE (id::bigint > 5);
SET client_min_messages = error;  -- no wal_level warning
CREATE PUBLICATION pub_by_tenant FOR TABLE pub_t WHERE (tenant = 7);
RESET client_min_messages;
SELECT pubname, rowfilter FROM pg_publication_tables WHERE tablename = 'pub_t';
DROP PUBLICATION pub_by_tenant;

-- a partition key cannot change type in place; the recipe of docs/type.md (a new parent, each
-- partition detached, converted without a rewrite and attached with its bounds) moves it
CREATE TABLE events (id bigint DEFAULT snowflake_next() PRIMARY KEY, payload text) PARTITION BY RANGE (id);
CREATE TABLE events_2024_01 PARTITION OF events
    FOR VALUES FROM (snowflake_min_id('2024-01-01 00:00:00+00')) TO (snowflake_min_id('2024-02-01 00:00:00+00'));
CREATE TABLE events_later PARTITION OF events
    FOR VALUES FROM (snowflake_min_id('2024-02-01 00:00:00+00')) TO (MAXVALUE);
INSERT INTO events (id, payload) VALUES (snowflake_min_id('2024-01-15 00:00:00+00'), 'january'),
                                        (snowflake_min_id('2024-06-01 00:00:00+00'), 'june');
SELECT pg_relation_filenode('events_2024_01') AS filenode_before \gset
DO $$ BEGIN ALTER TABLE events ALTER COLUMN id TYPE snowflake;
EXCEPTION WHEN others THEN
    RAISE NOTICE '% (%)', SQLERRM, SQLSTATE;
END $$;
BEGIN;
ALTER TABLE events RENAME TO events_old;
CREATE TABLE events (id snowflake DEFAULT snowflake_next() PRIMARY KEY, payload text) PARTITION BY RANGE (id);
ALTER TABLE events_old DETACH PARTITION events_2024_01;
ALTER TABLE events_2024_01 ALTER COLUMN id TYPE snowflake;
ALTER TABLE events ATTACH PARTITION events_2024_01
    FOR VALUES FROM (snowflake_min_id('2024-01-01 00:00:00+00')) TO (snowflake_min_id('2024-02-01 00:00:00+00'));
ALTER TABLE events_old DETACH PARTITION events_later;
ALTER TABLE events_later ALTER COLUMN id TYPE snowflake;
ALTER TABLE events ATTACH PARTITION events_later
    FOR VALUES FROM (snowflake_min_id('2024-02-01 00:00:00+00')) TO (MAXVALUE);
DROP TABLE events_old;
COMMIT;
SELECT pg_relation_filenode('events_2024_01') = :filenode_before AS not_rewritten;
SELECT tableoid::regclass AS part, id, payload, jsonb_typeof(to_jsonb(id)) AS id_json FROM events ORDER BY id;
SELECT format_type(atttypid, NULL) AS key_type FROM pg_attribute WHERE attrelid = 'events'::regclass AND attname = 'id';
EXPLAIN (COSTS OFF) SELECT * FROM events
WHERE id >= snowflake_min_id('2024-01-10 00:00:00+00') AND id < snowflake_min_id('2024-01-11 00:00:00+00');
INSERT INTO events (payload) VALUES ('now') RETURNING tableoid::regclass AS routed_to;

-- an object of the user's named snowflake in the extension's schema stops the update to 1.2
-- (which creates the type): the error carries a hint, and the fix it gives (move the object to
-- another schema) lets the update through
\c :regress_db
CREATE DATABASE snowflake_type_name;
\c snowflake_type_name
CREATE EXTENSION snowflake VERSION '1.1';
CREATE TABLE snowflake (id bigint);
\set SHOW_CONTEXT never
ALTER EXTENSION snowflake UPDATE;
\set SHOW_CONTEXT errors
CREATE SCHEMA app;
ALTER TABLE snowflake SET SCHEMA app;
ALTER EXTENSION snowflake UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT to_regclass('app.snowflake') IS NOT NULL AS table_kept, to_regtype('public.snowflake') IS NOT NULL AS type_made;

\c :regress_db
DROP DATABASE snowflake_type_misc;
DROP DATABASE snowflake_type_name;
