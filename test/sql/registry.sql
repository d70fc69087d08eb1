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
