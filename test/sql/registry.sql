-- The registry's internal helpers (called by snowflake_claim_node and snowflake_release_node):
-- their arguments are checked, and the bound a claim returns.  (Claims, releases, commit-time
-- recording and the registry itself: test/t/091_registry_security.pl, 097_registry_handover.pl.)

SELECT snowflake_note_claim(32, 0, now(), NULL);
SELECT snowflake_note_claim(0, -1, now(), NULL);
SELECT snowflake_note_claim(0, 0, 'infinity', NULL);
SELECT snowflake_note_claim(0, 0, NULL, NULL);
SELECT snowflake_note_claim(NULL, 0, now(), NULL);
SELECT snowflake_note_release(0, 32);
SELECT snowflake_note_release(NULL, 0);

-- Only what a claim could have produced: a lease of at most a day, a carried mark between 0
-- and the lease's end plus snowflake.max_lead_ms (issue 17).
-- (Numbers of 7 digits and more, which follow the clock, print as N.)
CREATE FUNCTION pg_temp.refusal(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'accepted';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, '[0-9]{7,}', 'N', 'g');
END $$;
SELECT pg_temp.refusal($$SELECT snowflake_note_claim(0, 0, now() + interval '25 hours', NULL)$$);
SELECT pg_temp.refusal($$SELECT snowflake_note_claim(0, 0, now() + interval '1 hour', -1)$$);
SELECT pg_temp.refusal($$SELECT snowflake_note_claim(0, 0, now() + interval '1 hour', -9223372036854775808)$$);
SELECT pg_temp.refusal($$SELECT snowflake_note_claim(0, 0, now() + interval '1 hour', 3471292800000)$$);

-- The bound returned is the lease's end plus snowflake.max_lead_ms, in Unix ms.
SET snowflake.max_lead_ms = 250;
BEGIN;
SELECT date_trunc('second', now()) + interval '1 hour' AS until \gset
SELECT snowflake_note_claim(0, 0, :'until', NULL)
       - (extract(epoch FROM timestamptz :'until') * 1000)::bigint AS bound_past_until;
ROLLBACK;
RESET snowflake.max_lead_ms;

-- A session of a role that is not a superuser cannot record a claim, even if granted EXECUTE.
CREATE ROLE regress_registry_claimer;
GRANT EXECUTE ON FUNCTION snowflake_note_claim(int, int, timestamptz, bigint) TO regress_registry_claimer;
SET ROLE regress_registry_claimer;
SELECT snowflake_note_claim(0, 0, now() + interval '1 minute', NULL);
-- Nor take a claim token (EXECUTE stays with PUBLIC: the check is the function's own).
SELECT * FROM snowflake_claim_token(0, 0, NULL, true);
RESET ROLE;
-- A superuser asking about a token no postmaster issued: not this server's; no new token.
SELECT * FROM snowflake_claim_token(0, 0, '0123456789abcdef', false);
SELECT * FROM snowflake_claim_token(0, 0, 'not a token', false);
SELECT * FROM snowflake_claim_token(0, 0, NULL, NULL);
SELECT * FROM snowflake_claim_token(0, 32, NULL, false);
REVOKE ALL ON FUNCTION snowflake_note_claim(int, int, timestamptz, bigint) FROM regress_registry_claimer;
DROP ROLE regress_registry_claimer;

-- The 1.1 form is gone.
SELECT to_regprocedure('snowflake_note_claim(int, int, timestamptz)') IS NULL AS three_argument_form_gone;

-- A registry row written before 1.2 names its holder as system identifier:device:inode; the
-- identity is now system identifier:inode:birth time.  The server still knows its own old rows
-- (the device may have changed since, as after a reboot), and only its own.
CREATE TABLE regress_registry (
    datacenter_id int NOT NULL,
    machine_id    int NOT NULL,
    owner         text NOT NULL,
    claimed_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    high_water_ms bigint,
    PRIMARY KEY (datacenter_id, machine_id)
);
-- The identity is the system identifier, then the data directory's inode and birth time.
SELECT split_part(snowflake_server_identity(), ':', 1) = (SELECT system_identifier::text FROM pg_control_system()) AS identity_starts_with_system_identifier,
       snowflake_server_identity() ~ '^[0-9]+:[0-9]+:([0-9]+\.[0-9]{9}|-)$' AS identity_has_inode_and_birth_time;
SELECT split_part(snowflake_server_identity(), ':', 1) AS sysid,
       split_part(snowflake_server_identity(), ':', 2) AS ino \gset
-- Such a row carries no claim token: while its lease lasts, it could be a block-level copy's of
-- this server as well as this server's own (issue 17), so the claim waits for its end.
BEGIN;
INSERT INTO regress_registry VALUES (1, 1, :'sysid' || ':12345:' || :'ino', now(), now() + interval '1 hour', 0);
\set VERBOSITY terse
SELECT snowflake_claim_node('regress_registry');
\set VERBOSITY default
ROLLBACK;
BEGIN;
INSERT INTO regress_registry VALUES (1, 1, :'sysid' || ':12345:' || :'ino', now() - interval '2 hours', now() - interval '1 hour', 0);
SELECT snowflake_claim_node('regress_registry') > now() AS own_legacy_row_taken_over_once_its_lease_ended;
SELECT split_part(owner, '/', 1) = snowflake_server_identity() AS row_names_the_new_identity,
       split_part(owner, '/', 2) ~ '^[0-9a-f]{16}$' AS row_carries_a_claim_token
FROM regress_registry;
ROLLBACK;
BEGIN;
INSERT INTO regress_registry VALUES (1, 1, :'sysid' || ':12345:' || (:'ino'::bigint + 1), now(), now() + interval '1 hour', 0);
\set VERBOSITY terse
SELECT snowflake_claim_node('regress_registry');
\set VERBOSITY default
ROLLBACK;
BEGIN;
INSERT INTO regress_registry VALUES (1, 1, :'sysid' || ':12345:' || :'ino', now(), now() + interval '1 hour', 0);
SELECT snowflake_release_node('regress_registry') AS own_legacy_row_released;
ROLLBACK;
DROP TABLE regress_registry;
