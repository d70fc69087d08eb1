-- snowflake 1.2 -> 1.3
--
-- Each area has a section of its own below; keep changes inside your area's section so
-- that work on different areas merges cleanly.  Schema-qualify everything (pg_catalog.,
-- @extschema@.), as the earlier scripts do.

\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.3'" to load this file. \quit

-- ==== registry: node claims (src/registry.c, docs/fleet.md) ====

-- The registry fails closed (issue 17).  The registry may carry no triggers, rules or row
-- security policies at all; its owner, its schema's owner, the owners of functions its
-- defaults, constraints and indexes call, and (for a foreign table) its foreign server's owner
-- must already have the claiming role's rights.  A takeover refuses a row no genuine holder
-- could have written (no high_water_ms or expires_at, a mark below 0 or beyond the new lease's
-- end plus snowflake.max_lead_ms); a claim never lowers high_water_ms.

CREATE OR REPLACE FUNCTION @extschema@.snowflake_check_registry(registry regclass)
RETURNS void
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    rel     record;
    bad     record;
BEGIN
    -- A schema owned by pg_database_owner (public, since PostgreSQL 15) is the database owner's.
    SELECT c.relkind, c.relowner, c.relowner::regrole AS owner, n.nspowner AS nsp_role,
           CASE WHEN o.rolname = 'pg_database_owner'
                THEN (SELECT d.datdba FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())
                ELSE n.nspowner END AS nspowner,
           n.nspname INTO rel
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_catalog.pg_roles o ON o.oid = n.nspowner
    WHERE c.oid = registry;
    IF NOT FOUND OR rel.relkind NOT IN ('r', 'f') THEN
        RAISE EXCEPTION 'registry % must be a table or a foreign table', registry
            USING ERRCODE = 'wrong_object_type';
    END IF;
    -- Code on the registry runs with the caller's rights: its owner must already have them.
    IF NOT (pg_catalog.pg_has_role(rel.relowner, current_user, 'USAGE')
            OR (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.oid = rel.relowner)) THEN
        RAISE EXCEPTION 'registry % is owned by role %, which does not have the rights of role %',
                        registry, rel.owner, current_user
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'Its defaults and constraints would run with the rights of the role that claims.',
                  HINT = 'Claim as the role that owns the registry (or one it belongs to), or give the registry to a role the claiming role trusts; '
                         'name the registry with its schema.';
    END IF;
    -- The schema's owner can drop the registry and put another table in its place.
    IF NOT (pg_catalog.pg_has_role(rel.nspowner, current_user, 'USAGE')
            OR (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.oid = rel.nspowner)) THEN
        RAISE EXCEPTION 'schema % of registry % is owned by role %, which does not have the rights of role %',
                        pg_catalog.quote_ident(rel.nspname), registry,
                        pg_catalog.concat_ws(' of ', rel.nspowner::regrole::text,
                                             CASE WHEN rel.nsp_role <> rel.nspowner THEN 'pg_database_owner' END),
                        current_user
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'The owner of a schema can replace the tables in it.',
                  HINT = 'Keep the registry in a schema owned by a role the claiming role trusts.';
    END IF;
    -- No triggers (their functions and WHEN clauses), rules or policies at all.
    SELECT t.tgname INTO bad FROM pg_catalog.pg_trigger t WHERE t.tgrelid = registry
    ORDER BY t.tgname LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'registry % carries trigger %', registry, pg_catalog.quote_ident(bad.tgname)
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'A registry may carry no triggers, rules or row security policies: their code would run with the rights of the role that claims.',
                  HINT = format('Drop the trigger (DROP TRIGGER %I ON %s), and claim again.', bad.tgname, registry);
    END IF;
    SELECT r.rulename INTO bad FROM pg_catalog.pg_rewrite r WHERE r.ev_class = registry
    ORDER BY r.rulename LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'registry % carries rule %', registry, pg_catalog.quote_ident(bad.rulename)
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'A registry may carry no triggers, rules or row security policies: their code would run with the rights of the role that claims.',
                  HINT = format('Drop the rule (DROP RULE %I ON %s), and claim again.', bad.rulename, registry);
    END IF;
    SELECT p.polname INTO bad FROM pg_catalog.pg_policy p WHERE p.polrelid = registry
    ORDER BY p.polname LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'registry % carries row security policy %', registry, pg_catalog.quote_ident(bad.polname)
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'A registry may carry no triggers, rules or row security policies: their code would run with the rights of the role that claims.',
                  HINT = format('Drop the policy (DROP POLICY %I ON %s), and claim again.', bad.polname, registry);
    END IF;
    -- Functions its defaults, constraints and indexes call (also through operators).
    SELECT f.oid::regprocedure AS func, f.proowner::regrole AS owner INTO bad
    FROM pg_catalog.pg_depend d
    JOIN pg_catalog.pg_proc f
      ON (d.refclassid = 'pg_catalog.pg_proc'::regclass AND f.oid = d.refobjid)
      OR (d.refclassid = 'pg_catalog.pg_operator'::regclass
          AND f.oid = (SELECT o.oprcode FROM pg_catalog.pg_operator o WHERE o.oid = d.refobjid))
    WHERE ((d.classid = 'pg_catalog.pg_attrdef'::regclass
            AND d.objid IN (SELECT a.oid FROM pg_catalog.pg_attrdef a WHERE a.adrelid = registry))
        OR (d.classid = 'pg_catalog.pg_constraint'::regclass
            AND d.objid IN (SELECT c.oid FROM pg_catalog.pg_constraint c WHERE c.conrelid = registry))
        OR (d.classid = 'pg_catalog.pg_class'::regclass
            AND d.objid IN (SELECT i.indexrelid FROM pg_catalog.pg_index i WHERE i.indrelid = registry)))
      AND NOT (pg_catalog.pg_has_role(f.proowner, current_user, 'USAGE')
               OR (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.oid = f.proowner))
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'registry % calls function % (in a default, constraint or index), owned by role %, which does not have the rights of role %',
                        registry, bad.func, bad.owner, current_user
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Drop that default, constraint or index, or claim as a role whose rights that owner already has.';
    END IF;
    -- A foreign registry: the server's owner decides where it leads (and PUBLIC's mapping).
    IF rel.relkind = 'f' THEN
        SELECT s.srvname, s.srvowner, s.srvowner::regrole AS owner INTO bad
        FROM pg_catalog.pg_foreign_table ft JOIN pg_catalog.pg_foreign_server s ON s.oid = ft.ftserver
        WHERE ft.ftrelid = registry;
        IF NOT (pg_catalog.pg_has_role(bad.srvowner, current_user, 'USAGE')
                OR (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.oid = bad.srvowner)) THEN
            RAISE EXCEPTION 'foreign server % of registry % is owned by role %, which does not have the rights of role %',
                            pg_catalog.quote_ident(bad.srvname), registry, bad.owner, current_user
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = 'The owner of a foreign server can point it, and its user mappings, at another database.',
                      HINT = 'Give the foreign server to a role the claiming role trusts (a superuser).';
        END IF;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a
                   WHERE a.attrelid = registry AND a.attname = 'high_water_ms'
                     AND a.attnum > 0 AND NOT a.attisdropped) THEN
        RAISE EXCEPTION 'registry % has no column high_water_ms', registry
            USING ERRCODE = 'undefined_column',
                  DETAIL = 'Since version 1.2 the registry carries each node''s high-water mark from one holder to the next.',
                  HINT = format('On the server that holds the table run ALTER TABLE %s ADD COLUMN high_water_ms bigint; '
                                'where it is a foreign table, also run ALTER FOREIGN TABLE ... ADD COLUMN high_water_ms bigint on each server.',
                                registry);
    END IF;
END
$function$;

COMMENT ON FUNCTION @extschema@.snowflake_check_registry(regclass) IS
'internal: refuses a registry with triggers, rules or policies, or whose owner, schema owner, foreign server owner or called functions the caller does not trust, or that lacks high_water_ms';

CREATE OR REPLACE FUNCTION @extschema@.snowflake_claim_node(registry regclass, lease interval DEFAULT '5 minutes')
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    dc      int := nullif(current_setting('snowflake.datacenter_id'), '-1')::int;
    m       int := nullif(current_setting('snowflake.machine_id'), '-1')::int;
    me      text := @extschema@.snowflake_server_identity();
    t0      timestamptz := clock_timestamp();
    until   timestamptz;
    n       bigint;
    bound   bigint;
    highest bigint;
    holder  text;
    holder_until timestamptz;
    carried bigint;
BEGIN
    IF registry IS NULL THEN
        RAISE EXCEPTION 'registry must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF lease IS NULL OR lease < interval '1 second' OR lease > interval '1 day' THEN
        RAISE EXCEPTION 'lease must be between 1 second and 1 day, not %', coalesce(lease::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF dc IS NULL OR m IS NULL THEN
        RAISE EXCEPTION 'snowflake.datacenter_id and snowflake.machine_id must be set to claim a node'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Set both in postgresql.conf, then reload.';
    END IF;
    IF pg_is_in_recovery() THEN
        RAISE EXCEPTION 'cannot execute snowflake_claim_node() during recovery'
            USING ERRCODE = 'read_only_sql_transaction';
    END IF;
    PERFORM @extschema@.snowflake_check_registry(registry);
    until := t0 + lease;
    -- The most a genuine holder's row can carry: its lease's end (before now) plus max_lead_ms.
    highest := (extract(epoch FROM until) * 1000)::bigint
               + (SELECT s.setting::bigint FROM pg_catalog.pg_settings s WHERE s.name = 'snowflake.max_lead_ms');

    BEGIN
        EXECUTE format('SELECT owner, expires_at, high_water_ms FROM ONLY %s'
                       ' WHERE datacenter_id = $1 AND machine_id = $2 FOR UPDATE', registry)
            INTO holder, holder_until, carried USING dc, m;
    EXCEPTION WHEN serialization_failure THEN
        RAISE EXCEPTION 'datacenter %, machine % is being claimed by another server at this moment', dc, m
            USING ERRCODE = 'serialization_failure',
                  DETAIL = format('The registry %s row changed while this claim read it.', registry),
                  HINT = 'Claim again: the registry then names the holder.';
    END;
    GET DIAGNOSTICS n = ROW_COUNT;
    -- A row written before 1.2 names its holder as system identifier:device:inode.  It is this
    -- server when the system identifier and the inode agree (the device may have changed since).
    IF holder ~ '^[0-9]+:[0-9]+:[0-9]+$' AND split_part(holder, ':', 1) = split_part(me, ':', 1)
       AND split_part(holder, ':', 3) = split_part(me, ':', 2) THEN
        holder := me;
    END IF;
    IF n > 0 AND holder IS DISTINCT FROM me AND holder_until IS NULL THEN
        RAISE EXCEPTION 'registry row for datacenter %, machine % has no expires_at', dc, m
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = format('The registry %s names holder %s with no lease''s end: whether that lease lasts is unknown.',
                                  registry, coalesce(quote_literal(holder), 'NULL')),
                  HINT = 'Have the holder release the node, or set expires_at once it is stopped for good.';
    END IF;
    IF n > 0 AND holder IS DISTINCT FROM me AND holder_until >= t0 THEN
        RAISE EXCEPTION 'datacenter %, machine % is claimed by another server', dc, m
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('The registry %s names %s as the holder, its lease ending %s; this server is %s.',
                                  registry, coalesce(quote_literal(holder), 'NULL'), holder_until, me),
                  HINT = 'Give this server its own snowflake.datacenter_id and snowflake.machine_id, '
                         'or claim again once the holder is stopped for good and its lease has ended.';
    END IF;
    -- Taking over: the row must carry what a genuine holder could have left, or nothing is known.
    IF n > 0 AND holder IS DISTINCT FROM me AND carried IS NULL THEN
        RAISE EXCEPTION 'registry row for datacenter %, machine % has no high_water_ms', dc, m
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = format('The registry %s row of holder %s does not say up to which ms its IDs ran, so taking the node over could repeat them.',
                                  registry, coalesce(quote_literal(holder), 'NULL')),
                  HINT = 'Once that holder is stopped for good, set high_water_ms to the last Unix ms it may have issued '
                         '(its lease''s end plus its snowflake.max_lead_ms), and claim again.';
    END IF;
    IF n > 0 AND holder IS DISTINCT FROM me AND (carried < 0 OR carried > highest) THEN
        RAISE EXCEPTION 'registry row for datacenter %, machine % carries high_water_ms %, beyond what a holder could have reached (0 to %)',
                        dc, m, carried, highest
            USING ERRCODE = 'numeric_value_out_of_range',
                  DETAIL = format('The registry %s row of holder %s is refused and not applied: no holder issues IDs before the Unix epoch '
                                  'or past this claim''s lease plus snowflake.max_lead_ms.',
                                  registry, coalesce(quote_literal(holder), 'NULL')),
                  HINT = 'Find who edited the row. Once its holder is stopped for good, set high_water_ms to the last Unix ms it may have issued, and claim again.';
    END IF;

    -- Taking over: start above what the previous holder may have issued (durably, before this
    -- transaction commits).  Renewing: nothing to carry (this server's own IDs are above its
    -- durable mark).
    bound := @extschema@.snowflake_note_claim(dc, m, until,
                                              CASE WHEN holder IS DISTINCT FROM me THEN carried END);

    IF n > 0 THEN
        -- Never lower what the row carries (a fence or mark another transaction wrote).
        EXECUTE format('UPDATE ONLY %s SET owner = $1, claimed_at = $2, expires_at = $3,'
                       ' high_water_ms = greatest(high_water_ms, $4)'
                       ' WHERE datacenter_id = $5 AND machine_id = $6', registry)
            USING me, t0, until, bound, dc, m;
    ELSE
        BEGIN
            EXECUTE format('INSERT INTO %s (datacenter_id, machine_id, owner, claimed_at, expires_at, high_water_ms)'
                           ' VALUES ($1, $2, $3, $4, $5, $6)', registry)
                USING dc, m, me, t0, until, bound;
        EXCEPTION WHEN unique_violation THEN
            RAISE EXCEPTION 'datacenter %, machine % is claimed by another server', dc, m
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = format('Another server inserted the registry %s row for this node while this claim ran.', registry),
                      HINT = 'Claim again: the registry then names the holder. Give this server its own snowflake.datacenter_id and snowflake.machine_id '
                             'if another live server holds the node.';
        END;
    END IF;
    RETURN until;
END
$function$;

CREATE OR REPLACE FUNCTION @extschema@.snowflake_release_node(registry regclass)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    dc      int := nullif(current_setting('snowflake.datacenter_id'), '-1')::int;
    m       int := nullif(current_setting('snowflake.machine_id'), '-1')::int;
    me      text := @extschema@.snowflake_server_identity();
    holder  text;
    last_ms bigint;
BEGIN
    IF dc IS NULL OR m IS NULL THEN
        RAISE EXCEPTION 'snowflake.datacenter_id and snowflake.machine_id must be set to release a node'
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    PERFORM @extschema@.snowflake_check_registry(registry);
    -- Fence now (no ID past the last one, until the next claim, even if this transaction rolls
    -- back: a foreign registry may have committed it all the same), lease ended at commit.
    last_ms := @extschema@.snowflake_note_release(dc, m);
    EXECUTE format('SELECT owner FROM ONLY %s WHERE datacenter_id = $1 AND machine_id = $2 FOR UPDATE', registry)
        INTO holder USING dc, m;
    -- A row written before 1.2: see snowflake_claim_node().
    IF holder ~ '^[0-9]+:[0-9]+:[0-9]+$' AND split_part(holder, ':', 1) = split_part(me, ':', 1)
       AND split_part(holder, ':', 3) = split_part(me, ':', 2) THEN
        holder := me;
    END IF;
    IF holder IS DISTINCT FROM me THEN
        RETURN false;
    END IF;
    -- The row stays, free to claim at once, carrying the last ms this server issued.
    EXECUTE format('UPDATE ONLY %s SET expires_at = ''-infinity'', high_water_ms = $1'
                   ' WHERE datacenter_id = $2 AND machine_id = $3', registry)
        USING last_ms, dc, m;
    RETURN true;
END
$function$;

COMMENT ON FUNCTION @extschema@.snowflake_note_claim(int, int, timestamptz, bigint) IS
'internal: records a registry lease taken by snowflake_claim_node(), from the commit of this transaction if its lease has not ended, lifting the node above carried_ms durably before that commit; superuser or the registry worker only; returns the claim''s bound (Unix ms)';

COMMENT ON FUNCTION @extschema@.snowflake_note_release(int, int) IS
'internal: fences the node at its last issued ms until the next claim (a rollback keeps the fence) and ends its lease at commit; returns that ms (Unix ms)';
-- (registry section: end)



-- ==== migration: snowflake_migrate_column() (docs/migration.md) ====
-- (migration section: end)



-- ==== durable state: the mark, adoption, upgrades (src/mark.c, docs/operations.md, docs/failover.md) ====
-- (durable state section: end)



-- ==== clock: the clock watch (src/watch.c, docs/clock.md) ====
-- (clock section: end)



-- ==== type: the snowflake column type (src/type.c, docs/type.md) ====
-- (type section: end)
