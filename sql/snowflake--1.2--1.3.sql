-- snowflake 1.2 -> 1.3
--
-- Each area has a section of its own below; keep changes inside your area's section so
-- that work on different areas merges cleanly.  Schema-qualify everything (pg_catalog.,
-- @extschema@.), as the earlier scripts do.

\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.3'" to load this file. \quit

-- ==== registry: node claims (src/registry.c, docs/fleet.md) ====
-- (registry section: end)



-- ==== migration: snowflake_migrate_column() (docs/migration.md) ====
-- (migration section: end)



-- ==== durable state: the mark, adoption, upgrades (src/mark.c, docs/operations.md, docs/failover.md) ====
-- (durable state section: end)



-- ==== clock: the clock watch (src/watch.c, docs/clock.md) ====
-- (clock section: end)



-- ==== type: the snowflake column type (src/type.c, docs/type.md) ====
-- (type section: end)
