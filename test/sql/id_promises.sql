-- id_promises.sql: what a Snowflake ID does not promise (README "What an ID does not promise").
-- Only booleans and counts are printed, never IDs or times.
CREATE EXTENSION IF NOT EXISTS snowflake;

-- 1. A retried request that takes a new ID makes a second row: the ID is no idempotency key.
CREATE TABLE orders_naive (id bigint PRIMARY KEY DEFAULT snowflake_next(), item text NOT NULL);
INSERT INTO orders_naive (item) VALUES ('book');	-- the request
INSERT INTO orders_naive (item) VALUES ('book');	-- the client's retry after a timeout
SELECT count(*) AS rows_after_retry FROM orders_naive;

-- 2. Idempotency needs the request's own key: unique, and ON CONFLICT returns the first row.
CREATE TABLE orders (
    id bigint PRIMARY KEY DEFAULT snowflake_next(),
    request_key uuid NOT NULL UNIQUE,
    item text NOT NULL
);
CREATE TEMP TABLE answers (attempt int, id bigint);
-- The request and its retry carry the same key; both return the one row's ID.
WITH ins AS (
    INSERT INTO orders (request_key, item) VALUES ('6f1c0a3e-1d2b-4c5d-8e9f-0a1b2c3d4e5f', 'book')
    ON CONFLICT (request_key) DO NOTHING RETURNING id)
INSERT INTO answers SELECT 1, coalesce((SELECT id FROM ins),
    (SELECT id FROM orders WHERE request_key = '6f1c0a3e-1d2b-4c5d-8e9f-0a1b2c3d4e5f'));
WITH ins AS (
    INSERT INTO orders (request_key, item) VALUES ('6f1c0a3e-1d2b-4c5d-8e9f-0a1b2c3d4e5f', 'book')
    ON CONFLICT (request_key) DO NOTHING RETURNING id)
INSERT INTO answers SELECT 2, coalesce((SELECT id FROM ins),
    (SELECT id FROM orders WHERE request_key = '6f1c0a3e-1d2b-4c5d-8e9f-0a1b2c3d4e5f'));
SELECT count(*) AS rows_after_retry FROM orders;
SELECT count(DISTINCT id) = 1 AS retry_answered_with_the_same_id FROM answers;

-- 3. An ID is no secret: it says when and where it was made, and its neighbours are easy to guess.
SELECT snowflake_datacenter_id(id) = current_setting('snowflake.datacenter_id')::int
       AND snowflake_machine_id(id) = current_setting('snowflake.machine_id')::int AS reveals_the_node,
       abs(extract(epoch FROM snowflake_timestamp(id) - clock_timestamp())) < 60 AS reveals_the_time
FROM orders;
-- The next ID of the same ms differs by one; the first of any ms is snowflake_encode(ms, node, 0).
SELECT coalesce(bool_and(b - a = 1), false) AS consecutive_ids_differ_by_one
FROM (SELECT id AS a, lead(id) OVER (ORDER BY id) AS b
      FROM (SELECT snowflake_next_n(3) AS id) s) p
WHERE b IS NOT NULL AND snowflake_unix_ms(a) = snowflake_unix_ms(b);
SELECT snowflake_encode(snowflake_unix_ms(id), snowflake_datacenter_id(id), snowflake_machine_id(id), 0)
       = id - snowflake_sequence(id) AS any_id_of_a_ms_is_guessable
FROM orders;

DROP TABLE orders_naive, orders, answers;
