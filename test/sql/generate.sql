-- Generation: node from settings, strictly increasing IDs, bulk reservation, errors.
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';
SHOW snowflake.datacenter_id;
SHOW snowflake.machine_id;

-- IDs carry this server's node and a timestamp close to now.
CREATE TEMP TABLE ids (n bigserial, id bigint NOT NULL DEFAULT snowflake_next());
INSERT INTO ids DEFAULT VALUES;
INSERT INTO ids (id) SELECT snowflake_next() FROM generate_series(1, 20000);
INSERT INTO ids (id) SELECT snowflake_next_n(5000);
INSERT INTO ids DEFAULT VALUES;
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       bool_and(snowflake_datacenter_id(id) = 1 AND snowflake_machine_id(id) = 1) AS own_node,
       bool_and(snowflake_timestamp(id) BETWEEN now() - interval '1 minute' AND clock_timestamp()) AS recent
FROM ids;
-- Strictly increasing in the order they were made.
SELECT bool_and(id > prev) AS strictly_increasing
FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM ids) s WHERE prev IS NOT NULL;
-- More than 4096 IDs in one statement: sequences never wrap, later ms are taken.
SELECT max(snowflake_sequence(id)) <= 4095 AS seq_in_range,
       count(DISTINCT snowflake_unix_ms(id)) >= 5 AS spans_several_ms
FROM ids;

-- snowflake_next_n: consecutive within a ms, strictly increasing, one node.
SELECT count(*) AS n, bool_and(id > prev) AS increasing,
       bool_and(snowflake_unix_ms(id) > snowflake_unix_ms(prev)
                OR snowflake_sequence(id) = snowflake_sequence(prev) + 1) AS dense
FROM (SELECT id, lag(id) OVER (ORDER BY ord) AS prev
      FROM snowflake_next_n(10000) WITH ORDINALITY AS t(id, ord)) s
WHERE prev IS NOT NULL;
SELECT count(*) FROM snowflake_next_n(1);
-- A run's IDs are exactly the ones reserved: the next call lies above its last.
WITH run AS MATERIALIZED (SELECT array_agg(x ORDER BY x) AS xs FROM snowflake_next_n(3) x)
SELECT snowflake_next() > xs[3] AS next_above_run FROM run;
SELECT snowflake_next_n(0);
SELECT snowflake_next_n(-5);
SELECT snowflake_next_n(10000001);
SELECT count(*) AS strict_null FROM snowflake_next_n(NULL);

-- A table keyed by snowflake_next().
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_next(), item text);
INSERT INTO orders (item) SELECT 'item ' || i FROM generate_series(1, 1000) i;
SELECT count(*), count(DISTINCT id) FROM orders;
SELECT count(*) AS decoded FROM orders, LATERAL snowflake_decode(id) d
WHERE d.datacenter_id = 1 AND d.machine_id = 1;
DROP TABLE orders;

-- Switching node per session: IDs decode to the node set.
SET snowflake.datacenter_id = 31;
SET snowflake.machine_id = 0;
SELECT snowflake_datacenter_id(id) AS dc, snowflake_machine_id(id) AS machine
FROM (SELECT snowflake_next() AS id) s;
SELECT datacenter_id, machine_id, last_id > 0 AS issued,
       reserved_until >= last_ts AS reserved_covers_last,
       clock_rollbacks, refusals
FROM snowflake_status() ORDER BY datacenter_id, machine_id;
RESET snowflake.datacenter_id;
RESET snowflake.machine_id;
-- The durable state at a glance: sound, covering every ID issued, worker running.
SELECT state, detail, reserved_until >= (SELECT max(last_ts) FROM snowflake_status()) AS covers_all,
       owner_directory = this_directory AS owned_here, worker_running
FROM snowflake_state();


-- Settings: ranges and who may set them.
SET snowflake.datacenter_id = 32;
SET snowflake.machine_id = -2;
SET snowflake.reservation_ms = 100;
CREATE ROLE snowflake_regress_user;
GRANT ALL ON TABLE ids TO snowflake_regress_user;
SET ROLE snowflake_regress_user;
SET snowflake.datacenter_id = 2;
SET snowflake.max_lead_ms = 10;
SET snowflake.max_wait_ms = 500;
SHOW snowflake.max_wait_ms;
SELECT snowflake_datacenter_id(snowflake_next()) AS dc_for_plain_user;
RESET ROLE;
RESET snowflake.max_wait_ms;
DROP OWNED BY snowflake_regress_user;
DROP ROLE snowflake_regress_user;

-- Unset node: refused, saying what to set and where.
SET snowflake.datacenter_id = -1;
SELECT snowflake_next();
SELECT snowflake_next_n(3);
RESET snowflake.datacenter_id;
SET snowflake.machine_id = -1;
SELECT snowflake_next();
RESET snowflake.machine_id;

-- No waiting allowed: more IDs than the current ms holds are refused at once.
\set VERBOSITY terse
SET snowflake.max_wait_ms = 0;
SELECT count(*) FROM snowflake_next_n(8193);
RESET snowflake.max_wait_ms;
\set VERBOSITY default

-- A lead lets a burst run ahead of the clock, in one step, without waiting.
SET snowflake.max_lead_ms = 1000;
SET snowflake.max_wait_ms = 0;
SELECT count(*) AS burst FROM snowflake_next_n(100000);
RESET snowflake.max_lead_ms;
RESET snowflake.max_wait_ms;

-- The node can come from the database's or the role's settings too.
SELECT current_database() AS db, current_user AS su \gset
ALTER DATABASE :"db" SET snowflake.datacenter_id = 9;
\c
SHOW snowflake.datacenter_id;
SELECT snowflake_datacenter_id(snowflake_next()) AS dc_from_database;
ALTER DATABASE :"db" RESET snowflake.datacenter_id;
CREATE ROLE snowflake_regress_login LOGIN;
ALTER ROLE snowflake_regress_login SET snowflake.machine_id = 17;
\c - snowflake_regress_login
SHOW snowflake.machine_id;
SELECT snowflake_datacenter_id(id) AS dc, snowflake_machine_id(id) AS machine_from_role
FROM (SELECT snowflake_next() AS id) s;
\c - :su
DROP ROLE snowflake_regress_login;
