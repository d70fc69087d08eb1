/* snowflake--1.0.sql: install script for version 1.0 (released; never edit, ship upgrades) */

\echo Use "CREATE EXTENSION snowflake" to load this file. \quit

-- Generation: needs the library in shared_preload_libraries.

CREATE FUNCTION snowflake_next()
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_next'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_next() IS
'a new Snowflake ID for this server''s node (snowflake.datacenter_id, snowflake.machine_id)';

CREATE FUNCTION snowflake_next_n(n int)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'snowflake_next_n'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE
ROWS 1000;

COMMENT ON FUNCTION snowflake_next_n(int) IS
'n new Snowflake IDs for this server''s node, strictly increasing, reserved in one step (1 <= n <= 10000000)';

-- Encoding: pure bit arithmetic, works without preloading.

CREATE FUNCTION snowflake_encode(unix_ms bigint, datacenter_id int, machine_id int, sequence int)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_encode_unix_ms'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_encode(bigint, int, int, int) IS
'the Snowflake ID made of a Unix time in ms, a datacenter id, a machine id and a sequence';

CREATE FUNCTION snowflake_encode(ts timestamptz, datacenter_id int, machine_id int, sequence int)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_encode_timestamptz'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_encode(timestamptz, int, int, int) IS
'the Snowflake ID made of a timestamp (floored to the ms), a datacenter id, a machine id and a sequence';

-- Decoding.

CREATE FUNCTION snowflake_decode(id bigint,
    OUT ts timestamptz,
    OUT unix_ms bigint,
    OUT datacenter_id int,
    OUT machine_id int,
    OUT sequence int)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_decode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_decode(bigint) IS
'the fields of a Snowflake ID: timestamp, Unix ms, datacenter id, machine id, sequence';

CREATE FUNCTION snowflake_timestamp(id bigint)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'snowflake_timestamp'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_timestamp(bigint) IS
'the creation time of a Snowflake ID';

CREATE FUNCTION snowflake_unix_ms(id bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_unix_ms'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_unix_ms(bigint) IS
'the creation time of a Snowflake ID in ms since 1970-01-01 00:00:00 UTC';

CREATE FUNCTION snowflake_datacenter_id(id bigint)
RETURNS int
AS 'MODULE_PATHNAME', 'snowflake_datacenter_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_datacenter_id(bigint) IS
'the datacenter id (0..31) of a Snowflake ID';

CREATE FUNCTION snowflake_machine_id(id bigint)
RETURNS int
AS 'MODULE_PATHNAME', 'snowflake_machine_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_machine_id(bigint) IS
'the machine id (0..31) of a Snowflake ID';

CREATE FUNCTION snowflake_sequence(id bigint)
RETURNS int
AS 'MODULE_PATHNAME', 'snowflake_sequence'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_sequence(bigint) IS
'the per-ms sequence (0..4095) of a Snowflake ID';

-- Range bounds, for index range scans on an ID column.

CREATE FUNCTION snowflake_min_id(ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_min_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_min_id(timestamptz) IS
'the smallest Snowflake ID of the ms that holds ts';

CREATE FUNCTION snowflake_max_id(ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_max_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_max_id(timestamptz) IS
'the largest Snowflake ID of the ms that holds ts';

-- Monitoring.

CREATE FUNCTION snowflake_status(
    OUT datacenter_id int,
    OUT machine_id int,
    OUT last_id bigint,
    OUT last_ts timestamptz,
    OUT last_sequence int,
    OUT clock_rollbacks bigint,
    OUT max_rollback_ms bigint,
    OUT waits bigint,
    OUT refusals bigint,
    OUT reserved_until timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'snowflake_status'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_status() IS
'one row per node slot used since the server started: last ID, clock rollbacks, waits, refusals, durable reservation end';
