-- Settings with a unit: out-of-range values are refused, naming the range.
-- The message differs by server version: PostgreSQL 17 and later print the unit with the range
-- bounds ("(0 ms .. 3600000 ms)"), so this file has two expected outputs (settings_units.out for
-- 15 and 16, settings_units_1.out for 17 on).  Keep messages that do not vary out of this file.
SET snowflake.max_lead_ms = -1;
SET snowflake.max_lead_ms = 3600001;
SET snowflake.max_wait_ms = -1;
SHOW snowflake.max_lead_ms;
SHOW snowflake.max_wait_ms;
