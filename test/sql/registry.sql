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

-- The bound returned is the lease's end plus snowflake.max_lead_ms, in Unix ms.
SET snowflake.max_lead_ms = 250;
BEGIN;
SELECT snowflake_note_claim(0, 0, '2030-01-01 00:00:00+00', NULL)
       - (extract(epoch FROM timestamptz '2030-01-01 00:00:00+00') * 1000)::bigint AS bound_past_until;
ROLLBACK;
RESET snowflake.max_lead_ms;

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
SELECT split_part(snowflake_server_identity(), ':', 1) AS sysid,
       split_part(snowflake_server_identity(), ':', 2) AS ino \gset
BEGIN;
INSERT INTO regress_registry VALUES (1, 1, :'sysid' || ':12345:' || :'ino', now(), now() + interval '1 hour', 0);
SELECT snowflake_claim_node('regress_registry') > now() AS own_legacy_row_renewed;
SELECT owner = snowflake_server_identity() AS row_names_the_new_identity FROM regress_registry;
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
