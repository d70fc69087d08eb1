-- Encoding and decoding: exact values, boundaries, and every range error.
CREATE EXTENSION IF NOT EXISTS snowflake;
SET timezone = 'UTC';

-- SPEC's worked example, both ways.
SELECT snowflake_encode(1700000000000, 7, 13, 4095) AS worked_example;
SELECT * FROM snowflake_decode(1724551110457221119);
SELECT snowflake_timestamp(1724551110457221119),
       snowflake_unix_ms(1724551110457221119),
       snowflake_datacenter_id(1724551110457221119),
       snowflake_machine_id(1724551110457221119),
       snowflake_sequence(1724551110457221119);
-- The timestamptz form floors to the ms.
SELECT snowflake_encode('2023-11-14 22:13:20+00'::timestamptz, 7, 13, 4095) AS from_ts,
       snowflake_encode('2023-11-14 22:13:20.000999+00'::timestamptz, 7, 13, 4095) AS floored;

-- A real tweet: 2018-10-10 20:19:24.211 UTC, datacenter 10, machine 27, sequence 0.
SELECT * FROM snowflake_decode(1050118621198921728);

-- The epoch, the last instant, and the extreme IDs.
SELECT snowflake_encode(1288834974657, 0, 0, 0) AS zero,
       snowflake_encode(3487858230208, 31, 31, 4095) AS max_id,
       snowflake_encode(3487858230208, 31, 31, 4095) = 9223372036854775807 AS is_int8_max;
SELECT * FROM snowflake_decode(0);
SELECT * FROM snowflake_decode(9223372036854775807);
SELECT snowflake_encode('2010-11-04 01:42:54.657+00'::timestamptz, 0, 0, 0) AS epoch_ts,
       snowflake_encode('2080-07-10 17:30:30.208999+00'::timestamptz, 0, 0, 0) = (2199023255551 << 22) AS last_ts;

-- Every field is independent: fields round-trip over many IDs.
SELECT bool_and(snowflake_encode(d.unix_ms, d.datacenter_id, d.machine_id, d.sequence) = s.id) AS roundtrip,
       bool_and(snowflake_encode(d.ts, d.datacenter_id, d.machine_id, d.sequence) = s.id) AS roundtrip_ts,
       bool_and(snowflake_timestamp(s.id) = d.ts AND snowflake_unix_ms(s.id) = d.unix_ms
                AND snowflake_datacenter_id(s.id) = d.datacenter_id
                AND snowflake_machine_id(s.id) = d.machine_id
                AND snowflake_sequence(s.id) = d.sequence) AS extractors_agree
FROM (SELECT (random() * 9223372036854775807)::bigint AS id FROM generate_series(1, 10000)) s,
     LATERAL snowflake_decode(s.id) d;

-- Range bounds: the ms that holds ts, whole.
SELECT snowflake_min_id('2023-11-14 22:13:20.000999+00') = snowflake_encode(1700000000000, 0, 0, 0) AS min_ok,
       snowflake_max_id('2023-11-14 22:13:20.000999+00') = snowflake_encode(1700000000000, 31, 31, 4095) AS max_ok,
       snowflake_max_id('2023-11-14 22:13:20') + 1 = snowflake_min_id('2023-11-14 22:13:20.001') AS adjacent;
SELECT snowflake_min_id('2010-11-04 01:42:54.657+00') AS first_min,
       snowflake_max_id('2080-07-10 17:30:30.208+00') AS last_max;

-- Out of range: each names its argument and range.
SELECT snowflake_encode(1288834974656, 0, 0, 0);
SELECT snowflake_encode(3487858230209, 0, 0, 0);
SELECT snowflake_encode(-1, 0, 0, 0);
SELECT snowflake_encode(1700000000000, -1, 0, 0);
SELECT snowflake_encode(1700000000000, 32, 0, 0);
SELECT snowflake_encode(1700000000000, 0, -1, 0);
SELECT snowflake_encode(1700000000000, 0, 32, 0);
SELECT snowflake_encode(1700000000000, 0, 0, -1);
SELECT snowflake_encode(1700000000000, 0, 0, 4096);
SELECT snowflake_encode('2010-11-04 01:42:54.656999+00'::timestamptz, 0, 0, 0);
SELECT snowflake_encode('2080-07-10 17:30:30.209+00'::timestamptz, 0, 0, 0);
SELECT snowflake_encode('infinity'::timestamptz, 0, 0, 0);
SELECT snowflake_encode('-infinity'::timestamptz, 0, 0, 0);
SELECT snowflake_encode('2023-01-01'::timestamptz, 0, 0, 99999);
SELECT snowflake_min_id('1970-01-01 00:00:00+00');
SELECT snowflake_max_id('2100-01-01 00:00:00+00');
SELECT snowflake_decode(-1);
SELECT snowflake_timestamp(-1);
SELECT snowflake_unix_ms(-9223372036854775808);
SELECT snowflake_datacenter_id(-2);
SELECT snowflake_machine_id(-3);
SELECT snowflake_sequence(-4);

-- STRICT: NULL in, NULL out.
SELECT snowflake_encode(NULL::bigint, 0, 0, 0) IS NULL AS null_encode,
       snowflake_decode(NULL) IS NULL AS null_decode,
       snowflake_timestamp(NULL) IS NULL AS null_ts;

-- Usable where IMMUTABLE is required: index expressions and generated columns.
CREATE TABLE decode_uses (
    id bigint PRIMARY KEY,
    created timestamptz GENERATED ALWAYS AS (snowflake_timestamp(id)) STORED
);
CREATE INDEX decode_uses_node ON decode_uses ((snowflake_datacenter_id(id)), (snowflake_machine_id(id)));
INSERT INTO decode_uses (id) VALUES (1724551110457221119), (1050118621198921728);
SELECT id, created FROM decode_uses ORDER BY id;

-- Time ranges through the primary key are index range scans.
INSERT INTO decode_uses (id)
SELECT snowflake_encode(1700000000000 + i * 1000, 1, 1, 0) FROM generate_series(1, 10000) i;
ANALYZE decode_uses;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM decode_uses
WHERE id BETWEEN snowflake_min_id('2023-11-14 23:00:00+00') AND snowflake_max_id('2023-11-14 23:59:59.999+00');
SELECT count(*) FROM decode_uses
WHERE id BETWEEN snowflake_min_id('2023-11-14 23:00:00+00') AND snowflake_max_id('2023-11-14 23:59:59.999+00');
DROP TABLE decode_uses;
