-- snowflake 1.2 -> 1.3
--
-- Each area has a section of its own below; keep changes inside your area's section so
-- that work on different areas merges cleanly.  Schema-qualify everything (pg_catalog.,
-- @extschema@.), as the earlier scripts do.

\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.3'" to load this file. \quit

-- ==== shared: the schema guard ====

-- The functions a superuser runs (the migration, claims and releases, the repair after
-- pg_upgrade) call the extension's other functions by the schema name they were created with.
-- The owner of that schema (on PostgreSQL 15 and later, public belongs to the database's
-- owner) can rename it and make a new schema of the old name, whose look-alikes those calls
-- would then run with the caller's rights (outside attack on issue 19, round 16).  Each of them
-- first calls this guard, by its pg_catalog name (which no other schema can shadow), and
-- refuses while the extension's schema is not named as at its creation.

-- Round 19/20: the schema must not be a member of another extension.  The database's owner made
-- public a member of a trusted extension of its own (tcn), before or after the install; dropping
-- that extension, or the schema that extension was in, or DROP OWNED BY its owner, then dropped
-- public, extension snowflake and the superuser's tables with it, past every refusal that names
-- the schema, and a new public held look-alikes.  The install and updates refuse such a schema,
-- the event trigger refuses making it one, and the functions a superuser runs refuse it first.
CREATE FUNCTION pg_catalog.snowflake_check_schema_member()
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    schema_name name;
    member_of name;
BEGIN
    SELECT n.nspname, x.extname INTO schema_name, member_of
    FROM pg_catalog.pg_extension e
    JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
    JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_namespace'::pg_catalog.regclass AND d.objid = e.extnamespace
                               AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.deptype = 'e'
    JOIN pg_catalog.pg_extension x ON x.oid = d.refobjid
    WHERE e.extname = 'snowflake'
    LIMIT 1;
    IF member_of IS NOT NULL THEN
        RAISE EXCEPTION 'schema % of extension snowflake is a member of extension %', pg_catalog.quote_ident(schema_name), pg_catalog.quote_ident(member_of)
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'Dropping that extension, or whatever it goes with (its own schema, DROP OWNED BY its owner), would drop the schema and extension snowflake with it; a schema made under the name later would run its look-alikes with their callers'' rights.',
                  HINT = format('As the owner of extension %s: ALTER EXTENSION %s DROP SCHEMA %s, then try again.',
                                pg_catalog.quote_ident(member_of), pg_catalog.quote_ident(member_of), pg_catalog.quote_ident(schema_name));
    END IF;
END
$function$;

COMMENT ON FUNCTION pg_catalog.snowflake_check_schema_member() IS
'internal: refuses while the schema extension snowflake is in is a member of another extension (called by the install, updates and snowflake_check_schema())';

SELECT pg_catalog.snowflake_check_schema_member();

CREATE FUNCTION pg_catalog.snowflake_check_schema()
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    now_named name := (SELECT n.nspname FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
                       WHERE e.extname = 'snowflake');
    created text := (pg_catalog.parse_ident('@extschema@'))[1];
    -- In its schema, a function that is not the extension's but has the name of one of its own
    -- (an overload a call by that name may pick), or a type of such a name (round 21: a call
    -- becomes a cast to it); a type first.
    lookalike record;
BEGIN
    PERFORM pg_catalog.snowflake_check_schema_member();
    SELECT l.kind, l.name::text AS name INTO lookalike
    FROM pg_catalog.pg_extension e
    CROSS JOIN LATERAL (SELECT 'type' AS kind, t.typname AS name, t.oid, 'pg_catalog.pg_type'::pg_catalog.regclass AS catalog
                        FROM pg_catalog.pg_type t WHERE t.typnamespace = e.extnamespace
                        UNION ALL
                        SELECT 'function', o.proname, o.oid, 'pg_catalog.pg_proc'::pg_catalog.regclass
                        FROM pg_catalog.pg_proc o WHERE o.pronamespace = e.extnamespace) l
    WHERE e.extname = 'snowflake'
      AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                      WHERE d.classid = l.catalog AND d.objid = l.oid
                        AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
                        AND d.refobjid = e.oid AND d.deptype = 'e')
      AND EXISTS (SELECT FROM pg_catalog.pg_proc m JOIN pg_catalog.pg_depend d
                    ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = m.oid
                   AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
                   AND d.refobjid = e.oid AND d.deptype = 'e'
                  WHERE m.pronamespace = e.extnamespace AND m.proname = l.name)
    ORDER BY l.kind DESC
    LIMIT 1;
    IF lookalike.kind = 'type' THEN
        RAISE EXCEPTION 'schema % holds a type % named like a function of extension snowflake', pg_catalog.quote_ident(now_named), pg_catalog.quote_ident(lookalike.name)
            USING ERRCODE = 'duplicate_object',
                  DETAIL = 'A call of the function whose argument does not match its type exactly is taken for a cast to that type (a domain''s CHECK runs with the caller''s rights).',
                  HINT = 'Drop it, rename it or move it to another schema (a table or view too: its row type has its name), then call again.';
    END IF;
    IF lookalike.kind = 'function' THEN
        RAISE EXCEPTION 'schema % holds a function % that is not extension snowflake''s', pg_catalog.quote_ident(now_named), pg_catalog.quote_ident(lookalike.name)
            USING ERRCODE = 'duplicate_function',
                  DETAIL = 'The extension''s functions call each other by name: an overload of that name could be picked, with the caller''s rights, or make the call ambiguous.',
                  HINT = 'Rename it or move it to another schema, then call again.';
    END IF;
    IF now_named IS DISTINCT FROM created THEN
        RAISE EXCEPTION 'the schema of extension snowflake was renamed from % to %', pg_catalog.quote_ident(created), pg_catalog.quote_ident(now_named)
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('The extension''s functions call each other as %s.name: they would run whatever another role puts in a schema of that name.', pg_catalog.quote_ident(created)),
                  HINT = format('Rename it back (ALTER SCHEMA %s RENAME TO %s, after moving away any schema that took the old name), then call again.',
                                pg_catalog.quote_ident(now_named), pg_catalog.quote_ident(created));
    END IF;
END
$function$;

COMMENT ON FUNCTION pg_catalog.snowflake_check_schema() IS
'internal: refuses while the extension''s schema is not named as when it was created (called first by the functions a superuser runs)';

-- And the schema keeps its name and contents while the extension is in it (round 17): the
-- migration runs the table owner's code (a CHECK function) between the guard above and its
-- later calls, and another session may act at any time, so renaming or dropping the schema
-- (or DROP OWNED BY its owner, or dropping another extension it was made a member of, or making
-- it one: round 19) is refused at ddl_command_start, for every role.  A superuser
-- who must can DROP EXTENSION snowflake first, or disable the trigger for the change.
CREATE FUNCTION pg_catalog.snowflake_schema_guard()
RETURNS event_trigger
LANGUAGE C
AS 'MODULE_PATHNAME', 'snowflake_schema_guard';

COMMENT ON FUNCTION pg_catalog.snowflake_schema_guard() IS
'internal: event trigger refusing to rename or drop the schema extension snowflake is in';

CREATE EVENT TRIGGER snowflake_schema_guard ON ddl_command_start
    WHEN TAG IN ('ALTER SCHEMA', 'DROP SCHEMA', 'DROP OWNED', 'ALTER EXTENSION', 'DROP EXTENSION')
    EXECUTE FUNCTION pg_catalog.snowflake_schema_guard();

-- At ddl_command_end (round 18): no function that is not the extension's may come to have the
-- name of one of its own in its schema (an overload that a call by that name picks, with
-- the caller's rights, or finds ambiguous), whoever makes, renames or moves it.  Look-alikes made
-- before the trigger existed are refused by snowflake_check_schema().  (A rename or drop of the
-- schema racing the extension's creation is refused by the preloaded library's utility hook.)
CREATE FUNCTION pg_catalog.snowflake_schema_guard_end()
RETURNS event_trigger
LANGUAGE C
AS 'MODULE_PATHNAME', 'snowflake_schema_guard_end';

COMMENT ON FUNCTION pg_catalog.snowflake_schema_guard_end() IS
'internal: event trigger refusing look-alikes of extension snowflake''s functions in its schema';

-- Every command, not a list of tags: ALTER INDEX ... RENAME renames a table or a view too (round
-- 22 of the outside attack), and a command a later PostgreSQL adds may make a type or a function.
-- (EXPLAIN ANALYZE of CREATE TABLE AS raises no event: the preloaded library's utility hook
-- makes the same check after it.)
CREATE EVENT TRIGGER snowflake_schema_guard_end ON ddl_command_end
    EXECUTE FUNCTION pg_catalog.snowflake_schema_guard_end();

-- The script itself runs with search_path set to the extension's schema, where the database's
-- owner may create too: its DO blocks run with search_path pg_catalog, pg_temp instead, and put
-- it back at their end for the statements that follow, so that no planted operator or format()
-- is picked (round 15 of the outside attack: an owner's =(oid, regnamespace) ran as the
-- superuser who updated).

-- ==== registry: node claims (src/registry.c, docs/fleet.md) ====

-- The registry fails closed (issue 17).  The registry may carry no triggers, rules or row
-- security policies at all; its owner, its schema's owner, the owners of functions its
-- defaults, constraints and indexes call, and (for a foreign table) its foreign server's owner
-- must already have the claiming role's rights.  A takeover refuses a row no genuine holder
-- could have written (no high_water_ms or expires_at, a mark below 0 or beyond the new lease's
-- end plus snowflake.max_lead_ms); a claim never lowers high_water_ms.  After an outside
-- attack: no role without the caller's rights may create objects in the extension's schema;
-- the registry's columns and expressions use only built-in types (no domains); a foreign
-- registry's server sets connect_timeout, at most half the lease.

CREATE OR REPLACE FUNCTION @extschema@.snowflake_check_registry(registry regclass)
RETURNS void
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    rel     record;
    bad     record;
BEGIN
    -- The extension's own schema: a role that can create functions there can plant overloads
    -- of these functions that an untyped call would prefer.  Every role that can (itself, by a
    -- role it may become, or with CREATEROLE through any role but a superuser) must already
    -- have the caller's rights (pg_database_owner acts only through the database owner).
    SELECT x.rolname, g.rolname AS via, e.extnamespace::regnamespace AS nsp INTO bad
    FROM pg_catalog.pg_extension e, pg_catalog.pg_roles x, pg_catalog.pg_roles g
    WHERE e.extname = 'snowflake' AND NOT x.rolsuper AND x.rolname <> 'pg_database_owner'
      AND NOT pg_catalog.pg_has_role(x.oid, current_user, 'MEMBER')
      AND (pg_catalog.pg_has_role(x.oid, g.oid, 'MEMBER') OR (x.rolcreaterole AND NOT g.rolsuper))
      AND pg_catalog.has_schema_privilege(g.oid, e.extnamespace, 'CREATE')
    ORDER BY x.rolname, g.oid = x.oid, g.rolname LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'role % can create objects in schema % of extension snowflake, and does not have the rights of role %',
                        pg_catalog.quote_ident(bad.rolname), bad.nsp, current_user
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Through role %s it could plant functions named like the extension''s that an untyped call would run with the rights of role %s.',
                                  pg_catalog.quote_ident(bad.via), current_user),
                  HINT = format('Revoke CREATE on schema %s from every role but superusers (for schema public also from PUBLIC, and give it to a superuser: ALTER SCHEMA public OWNER TO a superuser), '
                                'or install the extension in a schema of its own owned by a superuser.', bad.nsp);
    END IF;
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
    -- Column types: a domain's constraints (and a type's functions) run with the caller's rights
    -- on every write; only built-in types, no domains, whoever owns them.
    SELECT a.attname, a.atttypid::regtype AS typ INTO bad
    FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
    WHERE a.attrelid = registry AND a.attnum > 0 AND NOT a.attisdropped
      AND (t.typtype = 'd' OR t.typnamespace <> 'pg_catalog'::regnamespace)
    ORDER BY a.attnum LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'registry % column % has type %, which is not a built-in type', registry,
                        pg_catalog.quote_ident(bad.attname), bad.typ
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'A registry''s columns may use only built-in types of schema pg_catalog, and no domains: a domain''s constraints would run with the rights of the role that claims.',
                  HINT = format('Give the column a built-in type (ALTER TABLE %s ALTER COLUMN %I TYPE ...), and claim again.', registry, bad.attname);
    END IF;
    -- The same for types its defaults, constraints and indexes name (a cast to a domain).
    SELECT dt.oid::regtype AS typ INTO bad
    FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_type dt
      ON d.refclassid = 'pg_catalog.pg_type'::regclass AND dt.oid = d.refobjid
    WHERE ((d.classid = 'pg_catalog.pg_attrdef'::regclass
            AND d.objid IN (SELECT a.oid FROM pg_catalog.pg_attrdef a WHERE a.adrelid = registry))
        OR (d.classid = 'pg_catalog.pg_constraint'::regclass
            AND d.objid IN (SELECT c.oid FROM pg_catalog.pg_constraint c WHERE c.conrelid = registry))
        OR (d.classid = 'pg_catalog.pg_class'::regclass
            AND d.objid IN (SELECT i.indexrelid FROM pg_catalog.pg_index i WHERE i.indrelid = registry)))
      AND (dt.typtype = 'd' OR dt.typnamespace <> 'pg_catalog'::regnamespace)
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'registry % uses type % (in a default, constraint or index), which is not a built-in type', registry, bad.typ
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'A registry may use only built-in types of schema pg_catalog, and no domains: a domain''s constraints would run with the rights of the role that claims.',
                  HINT = 'Drop that default, constraint or index, and claim again.';
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
        -- Connecting has no timeout of its own (and cannot be interrupted): a registry server
        -- that accepts connections but never answers would hang the claim, and the server's
        -- shutdown, for good.
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_options_to_table(
                                     (SELECT s.srvoptions FROM pg_catalog.pg_foreign_server s WHERE s.srvname = bad.srvname)) o
                       WHERE o.option_name = 'connect_timeout' AND o.option_value ~ '^\s*[0-9]{1,9}\s*$'
                         AND o.option_value::int > 0) THEN
            RAISE EXCEPTION 'foreign server % of registry % has no connect_timeout', pg_catalog.quote_ident(bad.srvname), registry
                USING ERRCODE = 'invalid_object_definition',
                      DETAIL = 'Without connect_timeout (a whole number of seconds above 0) a registry server that accepts connections but never answers would hang the claim, and this server''s shutdown, until it answers.',
                      HINT = format('Run ALTER SERVER %I OPTIONS (ADD connect_timeout ''10'') (at most half the lease; also keepalives ''1''), and claim again.', bad.srvname);
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
    -- Exactly the documented column types (attack 17b A1): a real, numeric or int mark, or a
    -- timestamp, date or timestamptz(0) lease, rounds what a claim or release carries.
    SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) AS typ, w.typ AS want INTO bad
    FROM (VALUES ('datacenter_id', 'pg_catalog.int4'::pg_catalog.regtype), ('machine_id', 'pg_catalog.int4'),
                 ('owner', 'pg_catalog.text'), ('claimed_at', 'pg_catalog.timestamptz'),
                 ('expires_at', 'pg_catalog.timestamptz'), ('high_water_ms', 'pg_catalog.int8')) w(col, typ)
    JOIN pg_catalog.pg_attribute a ON a.attrelid = registry AND a.attname = w.col AND a.attnum > 0 AND NOT a.attisdropped
    WHERE a.atttypid <> w.typ OR a.atttypmod <> -1
    ORDER BY a.attnum LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'registry % column % has type %, not %', registry, pg_catalog.quote_ident(bad.attname), bad.typ, bad.want
            USING ERRCODE = 'datatype_mismatch',
                  DETAIL = 'A registry''s columns must have exactly the types of the documented table: another type can round or truncate a lease''s end or a high-water mark, and two servers then issue the same IDs.',
                  HINT = format('Run ALTER TABLE %s ALTER COLUMN %I TYPE %s (for a foreign table, also on the registry server), and claim again.',
                                registry, bad.attname, bad.want);
    END IF;
END
$function$;

COMMENT ON FUNCTION @extschema@.snowflake_check_registry(regclass) IS
'internal: refuses while an untrusted role can create objects in the extension''s schema, and refuses a registry with triggers, rules or policies, with a domain or non-built-in type, whose owner, schema owner, foreign server owner or called functions the caller does not trust, whose foreign server has no connect_timeout, or that lacks high_water_ms';

-- Claim tokens (issue 17, clones): the row names its holder as identity/token, a token this
-- postmaster issued at its last claim.  A block-level clone or snapshot shares the identity but
-- not the tokens (src/registry.c): it never renews the original's claim.  Callable only by a
-- superuser or the registry worker inside its claim (checked in C), so EXECUTE stays with PUBLIC
-- and registry roles of 1.2 need no new grant.
CREATE FUNCTION @extschema@.snowflake_claim_token(datacenter_id int, machine_id int, held text, claiming boolean,
                                                  OUT token text, OUT ours boolean)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_claim_token'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.snowflake_claim_token(int, int, text, boolean) IS
'internal: whether the registry row''s claim token held is one this postmaster issued; claiming: a new token for the row, and a fence (for good, until restart) if held is another server''s token under this server''s identity; superuser or the registry worker only';

CREATE OR REPLACE FUNCTION @extschema@.snowflake_claim_node(registry regclass, lease interval DEFAULT '5 minutes')
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
AS $function$
DECLARE
    dc      int := nullif(current_setting('snowflake.datacenter_id'), '-1')::int;
    m       int := nullif(current_setting('snowflake.machine_id'), '-1')::int;
    me      text;           -- this server's identity (after the schema guard)
    t0      timestamptz := clock_timestamp();
    until   timestamptz;
    n       bigint;
    bound   bigint;
    highest bigint;
    holder  text;
    holder_until timestamptz;
    holder_token text;
    carried bigint;
    fs      record;
    tok     record;
    taking  boolean;
    kept    bigint;
    kept_until timestamptz;
BEGIN
    PERFORM pg_catalog.snowflake_check_schema();   -- first: before any call by the schema's name
    me := @extschema@.snowflake_server_identity();
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
    -- A foreign registry's connect_timeout (checked there) must end well inside the lease.
    SELECT s.srvname, o.option_value::int AS secs INTO fs
    FROM pg_catalog.pg_foreign_table ft JOIN pg_catalog.pg_foreign_server s ON s.oid = ft.ftserver,
         pg_catalog.pg_options_to_table(s.srvoptions) o
    WHERE ft.ftrelid = registry AND o.option_name = 'connect_timeout';
    IF FOUND AND pg_catalog.make_interval(secs => greatest(fs.secs, 2)) * 2 > lease THEN
        RAISE EXCEPTION 'connect_timeout % of foreign server % is too long for a lease of %', fs.secs,
                        pg_catalog.quote_ident(fs.srvname), lease
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A connection attempt to the registry must end well inside the lease: connect_timeout (at least 2 seconds in effect) may be at most half of it.',
                  HINT = format('Lower it (ALTER SERVER %I OPTIONS (SET connect_timeout ''N'')), or claim a longer lease.', fs.srvname);
    END IF;
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
    -- 1.3 names the holder as identity/claim token.
    IF strpos(holder, '/') > 0 THEN
        holder_token := split_part(holder, '/', 2);
        holder := split_part(holder, '/', 1);
    END IF;
    -- A row written before 1.2 names its holder as system identifier:device:inode.  It is this
    -- server when the system identifier and the inode agree (the device may have changed since).
    IF holder ~ '^[0-9]+:[0-9]+:[0-9]+$' AND split_part(holder, ':', 1) = split_part(me, ':', 1)
       AND split_part(holder, ':', 3) = split_part(me, ':', 2) THEN
        holder := me;
    END IF;
    -- This server's identity is not proof enough: a block-level clone or snapshot shares it.  A
    -- renewal needs a claim token this postmaster issued; another token under this identity is
    -- a copy (fenced at once, if this postmaster held the claim), or this server before a
    -- restart, which cannot be told from a copy while that lease lasts.
    SELECT t.token, t.ours INTO tok
    FROM @extschema@.snowflake_claim_token(dc, m, CASE WHEN holder = me THEN coalesce(holder_token, '') END, true) t;
    taking := n > 0 AND (holder IS DISTINCT FROM me OR NOT tok.ours);
    IF n > 0 AND holder = me AND NOT tok.ours AND holder_until >= t0 THEN
        RAISE EXCEPTION 'datacenter %, machine % is claimed under this server''s identity with a claim token this server did not issue', dc, m
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('The registry %s names this server''s identity %s with claim token %s, its lease ending %s. '
                                  'Either this server restarted since that claim without releasing the node (a crash, an immediate shutdown), '
                                  'or a block-level clone or snapshot of this server (the same system identifier, data directory inode and birth time) holds it: '
                                  'nothing tells them apart while that lease lasts.',
                                  registry, me, coalesce(nullif(holder_token, ''), 'none'), holder_until),
                  HINT = 'If this server restarted, wait: it claims the node once that lease has ended. '
                         'If a copy of this server runs, stop it for good or give it its own snowflake.datacenter_id and snowflake.machine_id.';
    END IF;
    IF tok.token IS NULL THEN
        -- Its lease has ended: taken over like another server's row, under a token of this postmaster.
        SELECT t.token INTO tok.token FROM @extschema@.snowflake_claim_token(dc, m, NULL, true) t;
    END IF;
    IF n > 0 AND taking AND holder_until IS NULL THEN
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
    IF n > 0 AND taking AND carried IS NULL THEN
        RAISE EXCEPTION 'registry row for datacenter %, machine % has no high_water_ms', dc, m
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = format('The registry %s row of holder %s does not say up to which ms its IDs ran, so taking the node over could repeat them.',
                                  registry, coalesce(quote_literal(holder), 'NULL')),
                  HINT = 'Once that holder is stopped for good, set high_water_ms to the last Unix ms it may have issued '
                         '(its lease''s end plus its snowflake.max_lead_ms), and claim again.';
    END IF;
    IF n > 0 AND taking AND (carried < 0 OR carried > highest) THEN
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
    bound := @extschema@.snowflake_note_claim(dc, m, until, CASE WHEN taking THEN carried END);

    IF n > 0 THEN
        -- Never lower what the row carries (a fence or mark another transaction wrote).
        EXECUTE format('UPDATE ONLY %s SET owner = $1, claimed_at = $2, expires_at = $3,'
                       ' high_water_ms = greatest(high_water_ms, $4)'
                       ' WHERE datacenter_id = $5 AND machine_id = $6', registry)
            USING me || '/' || tok.token, t0, until, bound, dc, m;
    ELSE
        BEGIN
            EXECUTE format('INSERT INTO %s (datacenter_id, machine_id, owner, claimed_at, expires_at, high_water_ms)'
                           ' VALUES ($1, $2, $3, $4, $5, $6)', registry)
                USING dc, m, me || '/' || tok.token, t0, until, bound;
        EXCEPTION WHEN unique_violation THEN
            RAISE EXCEPTION 'datacenter %, machine % is claimed by another server', dc, m
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = format('Another server inserted the registry %s row for this node while this claim ran.', registry),
                      HINT = 'Claim again: the registry then names the holder. Give this server its own snowflake.datacenter_id and snowflake.machine_id '
                             'if another live server holds the node.';
        END;
    END IF;
    -- Read back what was written: the types behind a foreign table cannot be checked here,
    -- and one that rounds the lease's end or the mark is refused, nothing counted.
    EXECUTE format('SELECT expires_at, high_water_ms FROM ONLY %s WHERE datacenter_id = $1 AND machine_id = $2', registry)
        INTO kept_until, kept USING dc, m;
    IF kept_until IS DISTINCT FROM until OR kept IS DISTINCT FROM greatest(carried, bound) THEN
        RAISE EXCEPTION 'registry % does not keep what a claim writes', registry
            USING ERRCODE = 'datatype_mismatch',
                  DETAIL = format('expires_at %s and high_water_ms %s were written, and read back as %s and %s: a registry that rounds a lease''s end or a high-water mark can let two servers issue the same IDs.',
                                  until, greatest(carried, bound), coalesce(kept_until::text, 'NULL'), coalesce(kept::text, 'NULL')),
                  HINT = 'Give the registry table (on the registry server, for a foreign table) exactly the column types of the documented CREATE TABLE '
                         '(expires_at timestamptz, high_water_ms bigint), and claim again.';
    END IF;
    RETURN until;
END
$function$;

CREATE OR REPLACE FUNCTION @extschema@.snowflake_release_node(registry regclass)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET TimeZone TO 'UTC'
AS $function$
DECLARE
    dc      int := nullif(current_setting('snowflake.datacenter_id'), '-1')::int;
    m       int := nullif(current_setting('snowflake.machine_id'), '-1')::int;
    me      text;           -- this server's identity (after the schema guard)
    holder  text;
    last_ms bigint;
    kept    bigint;
BEGIN
    PERFORM pg_catalog.snowflake_check_schema();   -- first: before any call by the schema's name
    me := @extschema@.snowflake_server_identity();
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
    -- This server's identity with a claim token it did not issue is not this server's claim.
    IF strpos(holder, '/') > 0 THEN
        IF NOT (SELECT t.ours FROM @extschema@.snowflake_claim_token(dc, m, split_part(holder, '/', 2), false) t) THEN
            RETURN false;
        END IF;
        holder := split_part(holder, '/', 1);
    END IF;
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
    -- Read back (see snowflake_claim_node()): a mark kept rounded is refused (the fence stays).
    EXECUTE format('SELECT high_water_ms FROM ONLY %s WHERE datacenter_id = $1 AND machine_id = $2'
                   ' AND expires_at = ''-infinity''', registry)
        INTO kept USING dc, m;
    IF kept IS DISTINCT FROM last_ms THEN
        RAISE EXCEPTION 'registry % does not keep what a release writes', registry
            USING ERRCODE = 'datatype_mismatch',
                  DETAIL = format('expires_at -infinity and high_water_ms %s were written, and read back as %s: a registry that rounds the mark can let the next holder repeat IDs.',
                                  last_ms, coalesce(kept::text, 'NULL (or another expires_at)')),
                  HINT = 'Give the registry table (on the registry server, for a foreign table) exactly the column types of the documented CREATE TABLE '
                         '(expires_at timestamptz, high_water_ms bigint); the node stays fenced until the next claim.';
    END IF;
    RETURN true;
END
$function$;

COMMENT ON FUNCTION @extschema@.snowflake_note_claim(int, int, timestamptz, bigint) IS
'internal: records a registry lease taken by snowflake_claim_node(), from the commit of this transaction if its lease has not ended, lifting the node above carried_ms durably before that commit; superuser or the registry worker only; returns the claim''s bound (Unix ms)';

COMMENT ON FUNCTION @extschema@.snowflake_note_release(int, int) IS
'internal: fences the node at its last issued ms until the next claim (a rollback keeps the fence) and ends its lease at commit; returns that ms (Unix ms)';
-- (registry section: end)



-- ==== migration: snowflake_migrate_column() (docs/migration.md) ====

-- snowflake_migrate_column() runs every step as the key table's owner (issue 18).  1.2 ran its DDL
-- as the caller, usually a superuser, and a role that could only read or reference the table
-- could plant code (a domain's CHECK in a literal, an index predicate, a CHECK constraint, an
-- overload picked when a view is parsed again) that PostgreSQL then ran with the caller's
-- rights.  1.3 refuses, before its first DDL, anything it would change that the key table's
-- owner does not own, and runs all its DDL and REFRESHes as that owner inside a
-- security-restricted operation (snowflake_migrate_exec(), C), so code of another role runs at
-- most with the owner's rights and cannot SET ROLE back.  The max() check uses the time the
-- generator trusts (snowflake_migrate_floor(), C).  The 1.1 and 1.2 bodies (released scripts,
-- unchangeable) call snowflake_min_id(clock_timestamp()) before their first DDL: with this
-- library that call refuses while the extension is older than 1.3 (src/migrate.c).

CREATE FUNCTION snowflake_migrate_exec(role oid, stmts text[])
RETURNS text
AS 'MODULE_PATHNAME', 'snowflake_migrate_exec'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_migrate_exec(oid, text[]) IS
'internal: runs statements as a role whose privileges the caller has, in a security-restricted operation with search_path pg_catalog, pg_temp; returns the first column of the last statement''s first row, as text (used by snowflake_migrate_column())';

CREATE FUNCTION snowflake_migrate_floor()
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_migrate_floor'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowflake_migrate_floor() IS
'internal: the smallest ID snowflake_next() may issue from now on, from the time the generator trusts; refuses while generation is held (used by snowflake_migrate_column())';

CREATE FUNCTION snowflake_migrate_lift(max_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'snowflake_migrate_lift'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_migrate_lift(bigint) IS
'internal: lifts this server''s node and the durable mark above the ms of max_id (at most the time the generator trusts now), so the next ID sorts above it even after the clock comes back (used by snowflake_migrate_column())';

-- The functions and operators a view's rules (its query and any other rule) use, as text.
CREATE FUNCTION snowflake_migrate_rule_refs(view oid)
RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $function$
    SELECT coalesce(jsonb_agg(DISTINCT s.x ORDER BY s.x), '[]')
    FROM (SELECT CASE WHEN d.refclassid = 'pg_proc'::regclass THEN d.refobjid::regprocedure::text
                      ELSE 'operator ' || d.refobjid::regoperator::text END AS x
          FROM pg_rewrite rw
          JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = rw.oid
                          AND d.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass)
          WHERE rw.ev_class = view) AS s
$function$;

COMMENT ON FUNCTION snowflake_migrate_rule_refs(oid) IS
'internal: the functions and operators the rules of a view use (used by snowflake_migrate_column())';

-- The functions and operators that the relations' constraints, defaults, indexes, rules,
-- triggers, policies and statistics use directly, with their owner and what uses them (via).
CREATE FUNCTION snowflake_migrate_direct_refs(rels oid[])
RETURNS TABLE (classid oid, objid oid, owner oid, via oid)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $function$
    WITH sub(classid, objid) AS (
        SELECT 'pg_class'::regclass::oid, r FROM unnest(rels) AS r
        UNION ALL SELECT 'pg_constraint'::regclass::oid, k.oid FROM pg_constraint k WHERE k.conrelid = ANY (rels)
        UNION ALL SELECT 'pg_attrdef'::regclass::oid, ad.oid FROM pg_attrdef ad WHERE ad.adrelid = ANY (rels)
        UNION ALL SELECT 'pg_class'::regclass::oid, i.indexrelid FROM pg_index i WHERE i.indrelid = ANY (rels)
        UNION ALL SELECT 'pg_rewrite'::regclass::oid, rw.oid FROM pg_rewrite rw WHERE rw.ev_class = ANY (rels)
        UNION ALL SELECT 'pg_trigger'::regclass::oid, tg.oid FROM pg_trigger tg WHERE tg.tgrelid = ANY (rels)
        UNION ALL SELECT 'pg_policy'::regclass::oid, p.oid FROM pg_policy p WHERE p.polrelid = ANY (rels)
        UNION ALL SELECT 'pg_statistic_ext'::regclass::oid, s.oid FROM pg_statistic_ext s WHERE s.stxrelid = ANY (rels)
    )
    SELECT DISTINCT d.refclassid, d.refobjid,
           CASE WHEN d.refclassid = 'pg_proc'::regclass THEN (SELECT p.proowner FROM pg_proc p WHERE p.oid = d.refobjid)
                ELSE (SELECT o.oprowner FROM pg_operator o WHERE o.oid = d.refobjid) END,
           sub.classid
    FROM sub
    JOIN pg_depend d ON d.classid = sub.classid AND d.objid = sub.objid
    WHERE d.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass)
$function$;

COMMENT ON FUNCTION snowflake_migrate_direct_refs(oid[]) IS
'internal: the functions and operators that relations'' constraints, defaults, indexes, rules, triggers, policies and statistics use (used by snowflake_migrate_column())';

-- Everything whose code the relations' constraints, defaults, indexes, rules, triggers,
-- policies and statistics may run: functions, operators, types (with their domains'
-- constraints) and the views their rules read, followed through one another; with owners.
CREATE FUNCTION snowflake_migrate_reachable(rels oid[])
RETURNS TABLE (classid oid, objid oid, owner oid)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $function$
    WITH RECURSIVE edges(classid, objid, refclassid, refobjid) AS (
        SELECT d.classid, d.objid, d.refclassid, d.refobjid
        FROM pg_depend d
        WHERE d.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass, 'pg_type'::regclass)
           OR (d.refclassid = 'pg_class'::regclass AND d.classid IN ('pg_rewrite'::regclass, 'pg_proc'::regclass)
               AND EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = d.refobjid AND c.relkind = 'v'))
        UNION ALL
        SELECT 'pg_type'::regclass::oid, k.contypid, 'pg_constraint'::regclass::oid, k.oid
        FROM pg_constraint k WHERE k.contypid <> 0
        UNION ALL
        SELECT 'pg_class'::regclass::oid, rw.ev_class, 'pg_rewrite'::regclass::oid, rw.oid
        FROM pg_rewrite rw
    ),
    sub(classid, objid) AS (
        SELECT 'pg_class'::regclass::oid, r FROM unnest(rels) AS r
        UNION ALL SELECT 'pg_constraint'::regclass::oid, k.oid FROM pg_constraint k WHERE k.conrelid = ANY (rels)
        UNION ALL SELECT 'pg_attrdef'::regclass::oid, ad.oid FROM pg_attrdef ad WHERE ad.adrelid = ANY (rels)
        UNION ALL SELECT 'pg_class'::regclass::oid, i.indexrelid FROM pg_index i WHERE i.indrelid = ANY (rels)
        UNION ALL SELECT 'pg_trigger'::regclass::oid, tg.oid FROM pg_trigger tg WHERE tg.tgrelid = ANY (rels)
        UNION ALL SELECT 'pg_policy'::regclass::oid, p.oid FROM pg_policy p WHERE p.polrelid = ANY (rels)
        UNION ALL SELECT 'pg_statistic_ext'::regclass::oid, s.oid FROM pg_statistic_ext s WHERE s.stxrelid = ANY (rels)
    ),
    reach(classid, objid) AS (
        SELECT sub.classid, sub.objid FROM sub
        UNION
        SELECT e.refclassid, e.refobjid FROM reach JOIN edges e ON e.classid = reach.classid AND e.objid = reach.objid
    )
    SELECT reach.classid, reach.objid, o.owner
    FROM reach
    CROSS JOIN LATERAL (
        SELECT p.proowner FROM pg_proc p WHERE reach.classid = 'pg_proc'::regclass AND p.oid = reach.objid
        UNION ALL SELECT o.oprowner FROM pg_operator o WHERE reach.classid = 'pg_operator'::regclass AND o.oid = reach.objid
        UNION ALL SELECT t.typowner FROM pg_type t WHERE reach.classid = 'pg_type'::regclass AND t.oid = reach.objid
        UNION ALL SELECT c.relowner FROM pg_class c WHERE reach.classid = 'pg_class'::regclass AND c.oid = reach.objid
                                                      AND c.relkind = 'v' AND c.oid <> ALL (rels)
    ) AS o(owner)
$function$;

COMMENT ON FUNCTION snowflake_migrate_reachable(oid[]) IS
'internal: the functions, operators, types and views whose code the relations'' dependent objects may run, with their owners (used by snowflake_migrate_column())';

-- The functions whose bodies PostgreSQL cannot see into (PL/pgSQL, SQL not written with BEGIN
-- ATOMIC, other procedural languages; not C or internal, not an extension's) that the steps may
-- run: from the CHECK constraints and indexes of the changed relations and the queries of the
-- materialized views refreshed (mvs), followed as snowflake_migrate_reachable() does. What such a
-- body reads or calls is recorded nowhere, so nothing behind it can be checked.
CREATE FUNCTION snowflake_migrate_opaque(rels oid[], mvs oid[])
RETURNS TABLE (fn oid, owner oid)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $function$
    WITH RECURSIVE edges(classid, objid, refclassid, refobjid) AS (
        SELECT d.classid, d.objid, d.refclassid, d.refobjid
        FROM pg_depend d
        WHERE d.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass, 'pg_type'::regclass)
           OR (d.refclassid = 'pg_class'::regclass AND d.classid IN ('pg_proc'::regclass, 'pg_rewrite'::regclass)
               AND EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = d.refobjid AND c.relkind = 'v'))
        UNION ALL
        SELECT 'pg_type'::regclass::oid, k.contypid, 'pg_constraint'::regclass::oid, k.oid
        FROM pg_constraint k WHERE k.contypid <> 0
        UNION ALL
        SELECT 'pg_class'::regclass::oid, rw.ev_class, 'pg_rewrite'::regclass::oid, rw.oid
        FROM pg_rewrite rw
    ),
    sub(classid, objid) AS (
        SELECT 'pg_class'::regclass::oid, m FROM unnest(mvs) AS m
        UNION ALL SELECT 'pg_constraint'::regclass::oid, k.oid FROM pg_constraint k WHERE k.conrelid = ANY (rels) AND k.contype = 'c'
        UNION ALL SELECT 'pg_class'::regclass::oid, i.indexrelid FROM pg_index i WHERE i.indrelid = ANY (rels)
    ),
    reach(classid, objid) AS (
        SELECT sub.classid, sub.objid FROM sub
        UNION
        SELECT e.refclassid, e.refobjid FROM reach JOIN edges e ON e.classid = reach.classid AND e.objid = reach.objid
    )
    SELECT p.oid, p.proowner
    FROM reach
    JOIN pg_proc p ON reach.classid = 'pg_proc'::regclass AND p.oid = reach.objid
    JOIN pg_language l ON l.oid = p.prolang
    WHERE l.lanname NOT IN ('internal', 'c')
      AND p.prosqlbody IS NULL
      AND NOT EXISTS (SELECT 1 FROM pg_depend e
                      WHERE e.classid = 'pg_proc'::regclass AND e.objid = p.oid AND e.deptype = 'e')
$function$;

COMMENT ON FUNCTION snowflake_migrate_opaque(oid[], oid[]) IS
'internal: the functions with bodies PostgreSQL cannot see into that the migration of the relations may run (used by snowflake_migrate_column())';

CREATE OR REPLACE FUNCTION snowflake_migrate_column(tbl regclass, col name DEFAULT 'id', new_type regtype DEFAULT 'bigint')
RETURNS jsonb
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET default_tablespace = ''
AS $function$
DECLARE
    sf_default  text := '@extschema@.snowflake_next()';
    sf_call     text;       -- how pg_get_expr() shows sf_default
    sf_type     regtype;    -- the extension's snowflake type, if it has one
    v_type      text;       -- new_type as SQL
    v_kind      "char";
    v_ispart    bool;
    v_att       record;
    v_key_done  bool;       -- the key already is new_type DEFAULT snowflake_next()
    v_def_oid   oid;
    v_def_expr  text;
    v_identity  text;
    v_old_type  text;
    v_seqs      oid[] := '{}';
    v_key_defs  oid[];      -- the key's defaults, on the table and its descendants
    v_max       bigint;
    v_min_new   bigint;
    v_root      regclass;
    v_ctx       text;       -- the call stack (GET DIAGNOSTICS PG_CONTEXT)
    v_line      text;
    v_fn        regprocedure;
    v_csuper    bool;       -- the caller is a superuser
    v_who       text;
    -- columns to widen: parallel arrays (relation, column name)
    w_rel       oid[] := '{}';
    w_col       name[] := '{}';
    q_rel       oid[];
    q_col       name[];
    c_rel       oid;
    c_col       name;
    r           record;
    v_i         int;
    v_n         int;
    v_pid       int;
    -- all (relation, attnum) pairs whose type changes, descendants included
    t_rel       oid[] := '{}';
    t_att       int2[] := '{}';
    -- dependent views
    v_views     text[] := '{}';
    v_drops     text[] := '{}';
    v_redo      text[] := '{}';
    v_refresh   text[] := '{}';
    v_shapes    jsonb := '{}';
    v_shape     jsonb;
    v_changes   jsonb;
    v_name      text;
    v_stmt      text;
    v_clauses   text[];
    v_widened   jsonb := '[]';
    v_dropped   jsonb := '[]';
    v_kept      jsonb := '[]';
    v_reparsed  jsonb := '[]';
    v_reparsed_x jsonb := '[]'; -- CHECK, index and statistics expressions now using other functions or operators
    v_expr_refs jsonb;          -- their functions and operators before the DDL, by object name
    v_last      bigint;
    v_reason    text;
    v_acls      jsonb := '{}';
    v_acl       aclitem[];
    -- the old sequences: name, last value, what becomes of them
    v_seq_names text[] := '{}';
    v_seq_last  bigint[] := '{}';
    v_seq_why   text[] := '{}';     -- why it is kept; NULL: dropped
    v_seq_link  bool[] := '{}';     -- OWNED BY this column, to be unlinked when kept
    -- 1.3: every step runs as the key table's owner
    v_owner     oid;        -- the key table's owner
    v_osuper    bool;       -- that owner is a superuser
    v_tree      oid[];      -- the key table and its inheritance descendants
    v_view_oids oid[] := '{}';
    v_rels      oid[];      -- every relation the call changes
    v_what      text;
    v_cmd       text;
    v_old_refs  jsonb := '{}';  -- per recreated view: the functions and operators its rules use
BEGIN
    PERFORM pg_catalog.snowflake_check_schema();   -- first: before any call by the schema's name
    IF tbl IS NULL THEN
        RAISE EXCEPTION 'tbl must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF col IS NULL THEN
        RAISE EXCEPTION 'col must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF new_type IS NULL THEN
        RAISE EXCEPTION 'new_type must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass bigint (the default), or leave new_type out.';
    END IF;

    -- Who calls. A call that is not schema-qualified and fully typed can resolve to another
    -- role's function of this name in a schema where that role may create; such a function runs
    -- first with the caller's rights. Called from inside a function that belongs to another role
    -- than the caller (current_user or session_user) or the bootstrap superuser, or whose owner
    -- cannot be told (an SQL or other-language function): refused, which rolls back what that
    -- function did unless it catches the error. A tripwire, not a defence: code that already ran
    -- with the caller's rights can catch the error, or change the catalog it is judged by; the
    -- defence is the schema-qualified, fully typed call (docs/migration.md). A DO block is the
    -- caller's own code.
    SELECT ro.rolsuper INTO v_csuper FROM pg_roles ro WHERE ro.rolname = current_user;
    GET DIAGNOSTICS v_ctx = PG_CONTEXT;
    FOR v_line IN
        SELECT t.x FROM regexp_split_to_table(v_ctx, E'\n') WITH ORDINALITY AS t(x, n)
        WHERE t.n > 1 ORDER BY t.n
    LOOP
        CONTINUE WHEN v_line ~ '^PL/pgSQL function inline_code_block line ';
        v_fn := NULL;
        IF v_line ~ '^PL/pgSQL function .+ line [0-9]+ ' THEN
            -- The signature as it was shown when the function was compiled: qualified, or not
            -- if its schema was in that search_path. Every function it may name must be trusted.
            v_name := substring(v_line FROM '^PL/pgSQL function (.+) line [0-9]+ ');
            SELECT p.oid INTO v_fn
            FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE translate(v_name, ' ', '') IN (translate(format('%s(%s)', quote_ident(p.proname), oidvectortypes(p.proargtypes)), ' ', ''),
                                                 translate(format('%s.%s(%s)', quote_ident(n.nspname), quote_ident(p.proname), oidvectortypes(p.proargtypes)), ' ', ''))
              AND p.proowner NOT IN (10, (SELECT x.oid FROM pg_roles x WHERE x.rolname = current_user),
                                     (SELECT x.oid FROM pg_roles x WHERE x.rolname = session_user))
            LIMIT 1;
            CONTINUE WHEN v_fn IS NULL AND EXISTS (
                SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE translate(v_name, ' ', '') IN (translate(format('%s(%s)', quote_ident(p.proname), oidvectortypes(p.proargtypes)), ' ', ''),
                                                     translate(format('%s.%s(%s)', quote_ident(n.nspname), quote_ident(p.proname), oidvectortypes(p.proargtypes)), ' ', '')));
        ELSIF v_line !~ ' function ' THEN
            CONTINUE;       -- a statement of the enclosing function, not a function
        END IF;
        RAISE EXCEPTION 'snowflake_migrate_column() refuses to run inside a function it cannot trust: %', v_line
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = CASE WHEN v_fn IS NOT NULL
                                THEN format('Function %s belongs to role %s, not to you; its code runs with your rights, and may have taken over the call (an overload of snowflake_migrate_column() in a schema that role can create in).',
                                            v_fn, quote_ident(pg_get_userbyid((SELECT p.proowner FROM pg_proc p WHERE p.oid = v_fn))))
                                ELSE 'The owner of the enclosing function cannot be told; its code runs with your rights, and may have taken over the call (an overload of snowflake_migrate_column() in a schema another role can create in).' END,
                  HINT = format('Call the function schema-qualified and fully typed, at top level: SELECT %s.snowflake_migrate_column(''tbl''::pg_catalog.regclass, ''id''::pg_catalog.name, ''bigint''::pg_catalog.regtype);',
                                quote_ident((SELECT n.nspname FROM pg_namespace n JOIN pg_extension e ON e.extnamespace = n.oid WHERE e.extname = 'snowflake')));
    END LOOP;
    -- The extension's schema, writable by a role the caller does not trust: refused below,
    -- with every other schema whose names a re-parse resolves (after the locks are taken).

    -- The snowflake type counts only if it is the extension's own, not a type someone created
    -- under that name in the extension's schema.
    SELECT t.oid INTO sf_type
    FROM pg_type t
    JOIN pg_depend d ON d.classid = 'pg_type'::regclass AND d.objid = t.oid AND d.deptype = 'e'
    JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
    WHERE t.oid = to_regtype('@extschema@.snowflake');
    IF new_type <> 'int8'::regtype AND new_type IS DISTINCT FROM sf_type THEN
        RAISE EXCEPTION 'new_type must be bigint%, not %',
                        CASE WHEN sf_type IS NOT NULL THEN ' or ' || sf_type::text ELSE '' END, new_type
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = CASE WHEN sf_type IS NULL
                                THEN 'Snowflake IDs are stored as bigint; this version of the extension has no snowflake type.'
                                ELSE 'Snowflake IDs are stored as bigint or as the extension''s snowflake type.' END;
    END IF;
    v_type := new_type::text;

    SELECT c.relkind, c.relispartition INTO v_kind, v_ispart
    FROM pg_class c WHERE c.oid = tbl;
    IF v_kind IS NULL THEN
        RAISE EXCEPTION 'tbl % does not exist', tbl::oid
            USING ERRCODE = 'undefined_table';
    END IF;
    IF v_kind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION 'tbl % is not a table', tbl
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'Pass an ordinary or partitioned table.';
    END IF;
    SELECT c.relowner, ro.rolsuper INTO v_owner, v_osuper
    FROM pg_class c JOIN pg_roles ro ON ro.oid = c.relowner WHERE c.oid = tbl;
    IF NOT pg_has_role(current_user, v_owner, 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table % to migrate it', tbl
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Table %s belongs to role %s; every step of the migration runs as that role.', tbl, quote_ident(pg_get_userbyid(v_owner))),
                  HINT = format('Run it as role %s, as a member of it, or as a superuser.', quote_ident(pg_get_userbyid(v_owner)));
    END IF;
    -- Everything below reads the column, its default and what references it only once this lock
    -- is held: a migration or ALTER that another session commits meanwhile is seen, not read
    -- half before and half after (a second migration then finds nothing to do). The lock keeps
    -- writers and DDL out from here on; it is raised to ACCESS EXCLUSIVE before the max() check.
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);

    SELECT a.attnum, a.atttypid, a.attidentity, a.attgenerated, a.attinhcount
    INTO v_att
    FROM pg_attribute a
    WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'col "%" is not a column of table %', col, tbl
            USING ERRCODE = 'undefined_column',
                  HINT = 'Pass the name of the key column as col (the default is "id").';
    END IF;
    IF v_att.attgenerated <> '' THEN
        RAISE EXCEPTION 'col "%" of table % is a generated column', col, tbl
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'A generated column computes its values; it cannot take IDs from snowflake_next().';
    END IF;
    -- A column that already is of the snowflake type keeps it: a call written for 1.1 (new_type
    -- left at bigint) widens its references to that type, or finds nothing to do.
    IF v_att.atttypid = sf_type AND new_type = 'int8'::regtype THEN
        new_type := sf_type;
        v_type := new_type::text;
    END IF;
    IF v_att.atttypid NOT IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype, new_type) THEN
        RAISE EXCEPTION 'col "%" of table % has type %, not an integer type', col, tbl, v_att.atttypid::regtype
            USING ERRCODE = 'datatype_mismatch',
                  HINT = 'Only smallint, integer and bigint columns can be migrated to Snowflake IDs.';
    END IF;
    IF v_att.attinhcount > 0 THEN
        v_root := CASE WHEN v_ispart THEN pg_partition_root(tbl) END;
        RAISE EXCEPTION 'col "%" of table % is inherited', col, tbl
            USING ERRCODE = 'feature_not_supported',
                  HINT = CASE WHEN v_root IS NOT NULL
                              THEN format('Migrate the partitioned table %s instead; its partitions follow.', v_root)
                              ELSE 'Migrate the parent table instead; its children follow.' END;
    END IF;
    -- Above READ COMMITTED the transaction's snapshot may predate the lock taken below, and the
    -- check that new IDs sort above the old ones would miss rows committed in between.
    IF current_setting('transaction_isolation') NOT IN ('read committed', 'read uncommitted') THEN
        RAISE EXCEPTION 'snowflake_migrate_column() cannot run at isolation level %', current_setting('transaction_isolation')
            USING ERRCODE = 'invalid_transaction_state',
                  DETAIL = 'It locks the table, then checks that every existing value is below the new IDs; a snapshot taken before the lock can miss rows.',
                  HINT = 'Run it in a READ COMMITTED transaction (the default).';
    END IF;
    v_old_type := format_type(v_att.atttypid, NULL);

    SELECT d.oid, pg_get_expr(d.adbin, d.adrelid) INTO v_def_oid, v_def_expr
    FROM pg_attrdef d WHERE d.adrelid = tbl AND d.adnum = v_att.attnum;

    -- With search_path = pg_catalog, pg_temp, pg_get_expr() schema-qualifies our function.
    sf_call := ('@extschema@.snowflake_next()'::regprocedure)::text;
    v_key_done := v_att.atttypid = new_type AND v_att.attidentity = '' AND v_def_expr IS NOT DISTINCT FROM sf_call;

    IF v_key_done THEN
        -- Only the references may still need widening. No foreign key may be added meanwhile:
        -- the SHARE ROW EXCLUSIVE lock taken above keeps them out.
        NULL;
    ELSE
        IF v_att.attidentity <> '' THEN
            v_identity := CASE v_att.attidentity WHEN 'a' THEN 'always' ELSE 'by default' END;
            v_def_expr := NULL;
            SELECT array_agg(d.objid) INTO v_seqs
            FROM pg_depend d
            WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
              AND d.refobjid = tbl AND d.refobjsubid = v_att.attnum AND d.deptype = 'i';
        ELSIF v_def_expr IS NOT NULL THEN
            SELECT array_agg(d.refobjid ORDER BY d.refobjid) INTO v_seqs
            FROM pg_depend d JOIN pg_class s ON s.oid = d.refobjid AND s.relkind = 'S'
            WHERE d.classid = 'pg_attrdef'::regclass AND d.objid = v_def_oid
              AND d.refclassid = 'pg_class'::regclass;
            IF v_seqs IS NULL AND v_def_expr <> sf_call THEN
                RAISE EXCEPTION 'col "%" of table % has a default that does not use a sequence%: %', col, tbl,
                                CASE WHEN v_def_expr ~ '^nextval\(' THEN ' it depends on (it names the sequence as text)' ELSE '' END, v_def_expr
                    USING ERRCODE = 'object_not_in_prerequisite_state',
                          HINT = CASE WHEN v_def_expr ~ '^nextval\('
                                      THEN 'A default nextval(''name''::text) looks the sequence up at each call and records no dependency on it. Change it to nextval(''name''::regclass), or drop it, then migrate.'
                                      ELSE 'Only serial, bigserial, identity and nextval() columns are migrated. Drop the default first to migrate this column anyway.' END;
            END IF;
        END IF;
        v_seqs := coalesce(v_seqs, '{}');
        -- ALTER TABLE replaces the column's default on every child and partition too: their own
        -- sequences are decided and reported like the table's; a default of theirs that uses no
        -- sequence is refused like the table's.
        FOR r IN
            WITH RECURSIVE tree(relid) AS (
                SELECT tbl::oid
                UNION ALL
                SELECT i.inhrelid FROM pg_inherits i JOIN tree ON i.inhparent = tree.relid
            )
            SELECT tree.relid::regclass AS rel, pg_get_expr(ad.adbin, ad.adrelid) AS expr,
                   (SELECT array_agg(d.refobjid ORDER BY d.refobjid)
                    FROM pg_depend d JOIN pg_class s ON s.oid = d.refobjid AND s.relkind = 'S'
                    WHERE d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid
                      AND d.refclassid = 'pg_class'::regclass) AS seqs
            FROM tree
            JOIN pg_attribute a ON a.attrelid = tree.relid AND a.attname = col
            JOIN pg_attrdef ad ON ad.adrelid = tree.relid AND ad.adnum = a.attnum
            WHERE tree.relid <> tbl
            ORDER BY tree.relid::regclass::text
        LOOP
            IF r.seqs IS NULL AND r.expr <> sf_call AND r.expr IS DISTINCT FROM v_def_expr THEN
                RAISE EXCEPTION 'col "%" of table % has a default that does not use a sequence: %', col, r.rel, r.expr
                    USING ERRCODE = 'object_not_in_prerequisite_state',
                          DETAIL = format('Migrating %s replaces the default of each of its children and partitions.', tbl),
                          HINT = 'Only serial, bigserial, identity and nextval() columns are migrated. Drop the default first to migrate this column anyway.';
            END IF;
            v_seqs := v_seqs || ARRAY(SELECT x FROM unnest(r.seqs) AS x WHERE x <> ALL (v_seqs));
        END LOOP;

        -- Nothing may insert between the check below and the ALTER.
        EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl);

        -- New IDs must sort above every existing one. Read under a snapshot taken after the lock
        -- (READ COMMITTED), with row-level security off, as the table's owner in a
        -- security-restricted operation like every other step (round 14 of the outside attack:
        -- read as the caller, a superuser, a postgres_fdw foreign table among the children
        -- connected with a superuser's rights, and the remote side ran the owner's code as a
        -- superuser): either every row counts and no policy runs, or a policy forced on the owner
        -- makes this refuse.
        -- A policy forced on the owner would hide rows from it: refuse, naming the way out.  (Only
        -- the key table's policies apply when it is read; its children's and partitions' do not.)
        IF EXISTS (SELECT FROM pg_class c JOIN pg_roles ro ON ro.oid = c.relowner
                   WHERE c.oid = tbl AND c.relrowsecurity AND c.relforcerowsecurity
                     AND NOT ro.rolsuper AND NOT ro.rolbypassrls) THEN
            RAISE EXCEPTION 'row-level security is forced on table % for its owner, role %, as whom the check of existing values reads it',
                            tbl, quote_ident(pg_get_userbyid(v_owner))
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = 'A policy that applies to the owner could hide rows from the check that new IDs sort above every existing one.',
                      HINT = format('In one transaction: ALTER TABLE %s NO FORCE ROW LEVEL SECURITY, then the migration, then ALTER TABLE %s FORCE ROW LEVEL SECURITY.', tbl, tbl);
        END IF;
        v_max := @extschema@.snowflake_migrate_exec(v_owner,
                     ARRAY['SET LOCAL row_security = off', format('SELECT max(%I)::text FROM %s', col, tbl)])::bigint;
        -- The smallest ID the generator may issue from now on, from the time it trusts (not the
        -- wall clock, which may have jumped ahead); refused while generation is held.
        v_min_new := @extschema@.snowflake_migrate_floor();
        IF v_max >= v_min_new THEN
            RAISE EXCEPTION 'existing values of col "%" of table % are not below the IDs snowflake_next() issues now', col, tbl
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = format('The largest value is %s; IDs issued now start at %s.', v_max, v_min_new),
                      HINT = format('New IDs must sort above the existing ones. Renumber the rows, or migrate after %s, when IDs pass the largest value.',
                                    @extschema@.snowflake_timestamp(v_max));
        END IF;
        -- The check used the time the generator trusts, which may have taken in a forward step
        -- of the clock: lift this server's node and the durable mark above v_max, so that IDs
        -- issued after the clock comes back (or after a restart) still sort above every
        -- existing one.
        PERFORM @extschema@.snowflake_migrate_lift(v_max);
    END IF;

    -- Columns to widen: the key itself, then every foreign-key column that references a
    -- widened column, recursively, in the order of the tables' names. A bigint referencing
    -- column is followed too: what references it must hold the new IDs as well. A domain over
    -- smallint or integer cannot change its base type: refused.
    q_rel := ARRAY[tbl::oid];
    q_col := ARRAY[col];
    IF v_att.atttypid <> new_type THEN
        w_rel := ARRAY[tbl::oid];
        w_col := ARRAY[col];
    END IF;
    v_i := 1;
    WHILE v_i <= cardinality(q_rel) LOOP
        c_rel := q_rel[v_i];
        c_col := q_col[v_i];
        v_i := v_i + 1;
        FOR r IN
            WITH RECURSIVE tree(relid) AS (
                SELECT c_rel
                UNION ALL
                SELECT i.inhrelid FROM pg_inherits i JOIN tree ON i.inhparent = tree.relid
            )
            SELECT fk.* FROM (
            SELECT DISTINCT CASE WHEN fc.relispartition THEN pg_partition_root(fc.oid) ELSE fc.oid END::regclass AS relid,
                   fa.attname, fa.atttypid,
                   -- a column an inheritance child inherits can only change with its parent's
                   CASE WHEN NOT fc.relispartition AND fa.attinhcount > 0 THEN
                       (SELECT i.inhparent FROM pg_inherits i WHERE i.inhrelid = fc.oid ORDER BY i.inhseqno LIMIT 1) END AS inh_parent,
                   (WITH RECURSIVE dom(typ, base) AS (
                        SELECT t.oid, t.typbasetype FROM pg_type t WHERE t.oid = fa.atttypid
                        UNION ALL
                        SELECT t.oid, t.typbasetype FROM dom JOIN pg_type t ON t.oid = dom.base
                    )
                    SELECT dom.typ FROM dom WHERE dom.base = 0) AS basetype
            FROM tree
            JOIN pg_attribute ra ON ra.attrelid = tree.relid AND ra.attname = c_col
            JOIN pg_constraint k ON k.contype = 'f' AND k.conparentid = 0 AND k.confrelid = tree.relid
            JOIN LATERAL generate_subscripts(k.confkey, 1) AS s(i) ON k.confkey[s.i] = ra.attnum
            JOIN pg_class fc ON fc.oid = k.conrelid
            JOIN pg_attribute fa ON fa.attrelid = k.conrelid AND fa.attnum = k.conkey[s.i]
            ) AS fk
            ORDER BY fk.relid::text, fk.attname
        LOOP
            IF EXISTS (SELECT 1 FROM unnest(q_rel, q_col) AS q(rel, c)
                       WHERE q.rel = r.relid AND q.c = r.attname) THEN
                CONTINUE;
            END IF;
            IF r.inh_parent IS NOT NULL AND r.atttypid IN ('int2'::regtype, 'int4'::regtype) THEN
                RAISE EXCEPTION 'cannot widen column "%" of table %: it is inherited from table %', r.attname, r.relid, r.inh_parent::regclass
                    USING ERRCODE = 'feature_not_supported',
                          DETAIL = format('The column references %s.%I, which becomes %s; PostgreSQL changes an inherited column''s type only through its parent, for every child at once.',
                                          c_rel::regclass, c_col, v_type),
                          HINT = format('Widen the column on the parent first (ALTER TABLE %s ALTER COLUMN %I TYPE %s), then migrate.',
                                        r.inh_parent::regclass, r.attname, v_type);
            END IF;
            IF r.basetype IN ('int2'::regtype, 'int4'::regtype) AND r.atttypid <> r.basetype THEN
                RAISE EXCEPTION 'cannot widen column "%" of table %: its type % is a domain over %',
                                r.attname, r.relid, r.atttypid::regtype, r.basetype::regtype
                    USING ERRCODE = 'datatype_mismatch',
                          DETAIL = format('The column references %s.%I, which becomes %s; a domain cannot change its base type, and replacing it with %s would drop its constraints.',
                                          c_rel::regclass, c_col, v_type, v_type),
                          HINT = format('Change the column to %s or to a domain over %s (ALTER TABLE %s ALTER COLUMN %I TYPE ...), then migrate.',
                                        v_type, v_type, r.relid, r.attname);
            END IF;
            q_rel := q_rel || r.relid::oid;
            q_col := q_col || r.attname;
            IF r.atttypid IN ('int2'::regtype, 'int4'::regtype) THEN
                w_rel := w_rel || r.relid::oid;
                w_col := w_col || r.attname;
                v_widened := v_widened || to_jsonb(format('%s.%I', r.relid, r.attname));
            END IF;
        END LOOP;
    END LOOP;

    IF v_key_done AND cardinality(w_rel) = 0 THEN
        RAISE NOTICE 'column "%" of table % already takes its default from snowflake_next(); nothing to do', col, tbl;
        RETURN jsonb_build_object('table', tbl::text, 'column', col, 'changed', false);
    END IF;

    -- Every (relation, attnum) whose type changes, inheritance descendants included.
    FOR r IN
        WITH RECURSIVE tree(top, c, relid) AS (
            SELECT w.rel, w.c, w.rel FROM unnest(w_rel, w_col) AS w(rel, c)
            UNION ALL
            SELECT tree.top, tree.c, i.inhrelid FROM pg_inherits i JOIN tree ON i.inhparent = tree.relid
        )
        SELECT tree.relid, a.attnum
        FROM tree JOIN pg_attribute a ON a.attrelid = tree.relid AND a.attname = tree.c
    LOOP
        t_rel := t_rel || r.relid;
        t_att := t_att || r.attnum;
    END LOOP;

    -- Every referencing table (with its children and partitions) is locked ACCESS EXCLUSIVE
    -- now, right after the key table and before any check: no view, index, constraint or
    -- trigger can be added to it while the call decides, and no writer gets half-way in
    -- between the key table's ALTER and its own. A table the caller cannot lock is left to
    -- the ownership check below, which refuses it.
    FOR r IN
        SELECT DISTINCT w.rel FROM unnest(w_rel) AS w(rel) WHERE w.rel <> tbl ORDER BY w.rel
    LOOP
        BEGIN
            EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', r.rel::regclass);
        EXCEPTION WHEN insufficient_privilege THEN
            NULL;
        END;
    END LOOP;

    -- PostgreSQL cannot change the type of a partition key column, nor of one that a partition
    -- key expression uses, at any level of partitioning.
    FOR r IN
        SELECT t.relid, a.attname
        FROM unnest(t_rel, t_att) AS t(relid, attnum)
        JOIN pg_partitioned_table p ON p.partrelid = t.relid
        JOIN pg_attribute a ON a.attrelid = t.relid AND a.attnum = t.attnum
        WHERE t.attnum = ANY (p.partattrs::int2[])
           OR EXISTS (SELECT 1 FROM pg_depend d
                      WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
                        AND ((d.objid = t.relid AND d.objsubid = 0 AND d.refobjid = t.relid AND d.refobjsubid = t.attnum)
                          OR (d.objid = t.relid AND d.objsubid = t.attnum AND d.refobjid = t.relid AND d.refobjsubid = 0)))
        ORDER BY t.relid::regclass::text
        LIMIT 1
    LOOP
        RAISE EXCEPTION 'cannot widen column "%" of table % to %: it is part of the partition key', r.attname, r.relid::regclass, v_type
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'PostgreSQL cannot change the type of a partition key column (or of one a key expression uses). A bigint (bigserial) key column can be migrated; otherwise create a new table keyed by bigint and copy the rows.';
    END LOOP;

    -- ALTER COLUMN TYPE re-checks the CHECK constraints on the column, as the key table's owner
    -- (every step runs as that owner, below). A function in one of them that belongs to a role
    -- without the owner's privileges would run with them: refused. Built-in functions and those of
    -- superusers are trusted (a superuser owner's reach is checked again below).
    FOR r IN
        SELECT ck.* FROM (
        SELECT k.conrelid::regclass AS rel, k.conname, p.oid::regprocedure AS fn, p.proowner
        FROM unnest(t_rel, t_att) AS t(relid, attnum)
        JOIN pg_constraint k ON k.conrelid = t.relid AND k.contype = 'c' AND t.attnum = ANY (k.conkey)
        JOIN pg_depend d ON d.classid = 'pg_constraint'::regclass AND d.objid = k.oid
                        AND d.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass)
        LEFT JOIN pg_operator o ON d.refclassid = 'pg_operator'::regclass AND o.oid = d.refobjid
        JOIN pg_proc p ON p.oid = CASE WHEN d.refclassid = 'pg_proc'::regclass THEN d.refobjid ELSE o.oprcode::oid END
        JOIN pg_roles ro ON ro.oid = p.proowner
        WHERE NOT ro.rolsuper AND NOT pg_has_role(p.proowner, v_owner, 'USAGE')
        ) AS ck
        ORDER BY ck.rel::text, ck.conname, ck.fn::text
        LIMIT 1
    LOOP
        RAISE EXCEPTION 'cannot change the type of a column of table %: its check constraint "%" calls %, which belongs to role %',
                        r.rel, r.conname, r.fn, pg_get_userbyid(r.proowner)
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Changing the column''s type checks the constraint again as the table''s owner, role %s, which would run code that role %s can change with that owner''s rights.', quote_ident(pg_get_userbyid(v_owner)),
                                  pg_get_userbyid(r.proowner)),
                  HINT = format('Drop the constraint, migrate, and let role %s add it back; or have that function owned by a role you trust.',
                                pg_get_userbyid(r.proowner));
    END LOOP;

    -- The old sequences: decide now, while every user of them is still in the catalog, which
    -- go and which stay. A sequence that something else uses stays (the views recreated below
    -- use it again); so does one that belongs to a role whose privileges the caller lacks.
    -- The key's own defaults (ALTER TABLE drops them on every partition or child) do not count.
    WITH RECURSIVE tree(relid) AS (
        SELECT tbl::oid
        UNION ALL
        SELECT i.inhrelid FROM pg_inherits i JOIN tree ON i.inhparent = tree.relid
    )
    SELECT coalesce(array_agg(ad.oid), '{}') INTO v_key_defs
    FROM tree
    JOIN pg_attribute a ON a.attrelid = tree.relid AND a.attname = col
    JOIN pg_attrdef ad ON ad.adrelid = tree.relid AND ad.adnum = a.attnum;
    FOR v_i IN 1 .. cardinality(v_seqs) LOOP
        c_rel := v_seqs[v_i];
        SELECT c.oid::regclass::text, s.last_value INTO v_name, v_last
        FROM pg_class c
        JOIN pg_namespace ns ON ns.oid = c.relnamespace
        LEFT JOIN pg_sequences s ON s.schemaname = ns.nspname AND s.sequencename = c.relname
        WHERE c.oid = c_rel;
        SELECT string_agg(pg_describe_object(d.classid, d.objid, d.objsubid), ', ' ORDER BY 1)
        INTO v_reason
        FROM pg_depend d
        WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = c_rel
          AND NOT (d.classid = 'pg_attrdef'::regclass AND d.objid = ANY (v_key_defs))
          AND NOT (d.classid = 'pg_class'::regclass AND d.objid = c_rel);
        IF v_reason IS NOT NULL THEN
            IF v_identity IS NOT NULL THEN
                -- DROP IDENTITY drops its sequence, and nothing can detach it from the column.
                RAISE EXCEPTION 'cannot drop the identity sequence % of column "%" of table %: other objects use it', v_name, col, tbl
                    USING ERRCODE = 'dependent_objects_still_exist',
                          DETAIL = format('The sequence is used by %s.', v_reason),
                          HINT = 'Migrating drops the identity and its sequence. Drop the objects named above, or make them use another sequence, then migrate.';
            END IF;
            v_reason := 'used by ' || v_reason;
        ELSIF v_identity IS NULL THEN
            SELECT CASE d.deptype
                       WHEN 'e' THEN 'member of ' || pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid)
                       ELSE 'owned by ' || pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid) END
            INTO v_reason
            FROM pg_depend d
            WHERE d.classid = 'pg_class'::regclass AND d.objid = c_rel
              AND (d.deptype = 'e' OR (d.deptype = 'a' AND d.refclassid = 'pg_class'::regclass
                                       AND NOT (d.refobjid = tbl AND d.refobjsubid = v_att.attnum)
                                       AND (d.refobjid, d.refobjsubid) NOT IN (SELECT ad.adrelid, ad.adnum::int FROM pg_attrdef ad
                                                                              WHERE ad.oid = ANY (v_key_defs))))
            LIMIT 1;
            IF v_reason IS NULL THEN
                SELECT 'belongs to role ' || quote_ident(pg_get_userbyid(c.relowner)) INTO v_reason
                FROM pg_class c WHERE c.oid = c_rel AND NOT pg_has_role(v_owner, c.relowner, 'USAGE');
            END IF;
        END IF;
        v_seq_names := v_seq_names || v_name;
        v_seq_last := v_seq_last || v_last;
        v_seq_why := v_seq_why || v_reason;
        v_seq_link := v_seq_link || EXISTS (
            SELECT 1 FROM pg_depend d
            WHERE d.classid = 'pg_class'::regclass AND d.objid = c_rel AND d.deptype = 'a'
              AND d.refclassid = 'pg_class'::regclass
              AND ((d.refobjid = tbl AND d.refobjsubid = v_att.attnum)
                   OR (d.refobjid, d.refobjsubid) IN (SELECT ad.adrelid, ad.adnum::int FROM pg_attrdef ad
                                                      WHERE ad.oid = ANY (v_key_defs))));
    END LOOP;

    -- Views and materialized views that use those columns, and the views built on them,
    -- block ALTER COLUMN TYPE: save their definitions, owners, options, privileges,
    -- comments, triggers, rules, column defaults, (materialized) indexes and statistics, then
    -- drop them (deepest first) and recreate them after the ALTER (shallowest first). Nothing
    -- here runs a view's query: materialized views are created WITH NO DATA, handed to their
    -- owners, and refilled at the end by REFRESH, which runs the query as the owner.
    FOR r IN
        WITH RECURSIVE deps(view, depth) AS (
            SELECT rw.ev_class, 1
            FROM unnest(t_rel, t_att) AS t(relid, attnum)
            JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = t.relid
                            AND d.refobjsubid = t.attnum AND d.classid = 'pg_rewrite'::regclass
            JOIN pg_rewrite rw ON rw.oid = d.objid AND rw.rulename = '_RETURN' AND rw.ev_class <> t.relid
            UNION
            SELECT rw.ev_class, deps.depth + 1
            FROM deps
            JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = deps.view
                            AND d.classid = 'pg_rewrite'::regclass
            JOIN pg_rewrite rw ON rw.oid = d.objid AND rw.rulename = '_RETURN' AND rw.ev_class <> deps.view
        )
        SELECT c.oid, c.oid::regclass::text AS name, c.relkind, c.relowner, c.relacl, c.reloptions,
               c.reltablespace, c.relispopulated, c.relpersistence, c.relnamespace, ns.nspname,
               (SELECT am.amname FROM pg_am am WHERE am.oid = c.relam) AS amname,
               CASE c.relkind WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END AS kind,
               max(deps.depth) AS depth
        FROM deps JOIN pg_class c ON c.oid = deps.view JOIN pg_namespace ns ON ns.oid = c.relnamespace
        GROUP BY c.oid, ns.nspname
        ORDER BY max(deps.depth), c.oid::regclass::text
    LOOP
        -- A temporary view can only be recreated by its own session.
        IF r.relpersistence = 't' THEN
            v_pid := CASE WHEN r.relnamespace = pg_my_temp_schema() THEN pg_backend_pid() END;
            v_n := substring(r.nspname FROM '^pg_temp_([0-9]+)$')::int;
            IF v_pid IS NULL AND current_setting('server_version_num')::int >= 160000 THEN
                SELECT pg_stat_get_backend_pid(b) INTO v_pid FROM pg_stat_get_backend_idset() AS b WHERE b = v_n;
            END IF;
            IF v_pid IS NULL THEN
                -- Before PostgreSQL 16 only a session inside a transaction shows its number.
                SELECT l.pid INTO v_pid FROM pg_locks l
                WHERE l.locktype = 'virtualxid' AND split_part(l.virtualxid, '/', 1) = v_n::text LIMIT 1;
            END IF;
            RAISE EXCEPTION 'temporary view %.% of % depends on a column whose type changes',
                            quote_ident(r.nspname), quote_ident((SELECT relname FROM pg_class WHERE oid = r.oid)),
                            CASE WHEN v_pid = pg_backend_pid() THEN format('this session (pid %s)', v_pid)
                                 WHEN v_pid IS NOT NULL THEN format('the session with pid %s', v_pid)
                                 ELSE 'another session' END
                USING ERRCODE = 'dependent_objects_still_exist',
                      DETAIL = 'Only its own session can recreate a temporary view, and the view blocks the type change.',
                      HINT = CASE WHEN v_pid = pg_backend_pid() THEN 'Drop the temporary view, migrate, then create it again.'
                                  WHEN v_pid IS NOT NULL THEN format('If the session with pid %s still uses schema %s, drop the view there, or end the session (SELECT pg_terminate_backend(%s)). '
                                                                     'If no session uses it any more (a session that crashed leaves its temporary schema behind, and its number goes to the next session, which then has that pid), '
                                                                     'a superuser drops the schema: DROP SCHEMA %s CASCADE. Then migrate.',
                                                                     v_pid, quote_ident(r.nspname), v_pid, quote_ident(r.nspname))
                                  ELSE format('Drop the view in its session, or end that session; if no session uses schema %s any more (a session that crashed leaves it behind), '
                                              'a superuser drops it: DROP SCHEMA %s CASCADE. Then migrate.', quote_ident(r.nspname), quote_ident(r.nspname)) END;
        END IF;

        -- A view that belongs to an extension cannot be dropped (and its re-creation would not
        -- belong to the extension): refused here, before the first DDL, naming the extension.
        SELECT e.extname INTO v_name
        FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
        WHERE d.classid = 'pg_class'::regclass AND d.objid = r.oid
          AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e';
        IF FOUND THEN
            RAISE EXCEPTION 'cannot drop and recreate the dependent view %: it belongs to extension %', r.name, quote_ident(v_name)
                USING ERRCODE = 'dependent_objects_still_exist',
                      DETAIL = format('%s %s uses a column whose type changes; PostgreSQL changes the type only once the view is dropped, and a view of extension %s can only be dropped with the extension.',
                                      initcap(lower(r.kind)), r.name, quote_ident(v_name)),
                      HINT = format('Take the view out of the extension (ALTER EXTENSION %s DROP %s %s) or update the extension so it no longer uses the column, then migrate.',
                                    quote_ident(v_name), r.kind, r.name);
        END IF;
        v_name := NULL;
        v_views := v_views || r.name;
        v_view_oids := v_view_oids || r.oid;
        v_drops := format('DROP %s %s', r.kind, r.name) || v_drops;
        -- What re-parsing may change: the column types, and the functions and operators that
        -- the view's rules (its query and any other rule) use.
        v_shapes := v_shapes || jsonb_build_object(r.name, jsonb_build_object(
            'columns', (SELECT jsonb_object_agg(a.attname, format_type(a.atttypid, a.atttypmod))
                        FROM pg_attribute a WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped),
            'functions', @extschema@.snowflake_migrate_rule_refs(r.oid)));

        v_stmt := format('CREATE %s %s', r.kind, r.name);
        IF r.relkind = 'm' THEN
            v_stmt := v_stmt || format(' USING %I', r.amname);
        END IF;
        IF r.reloptions IS NOT NULL THEN
            v_stmt := v_stmt || format(' WITH (%s)', array_to_string(r.reloptions, ', '));
        END IF;
        IF r.relkind = 'm' AND r.reltablespace <> 0 THEN
            v_stmt := v_stmt || format(' TABLESPACE %I', (SELECT spcname FROM pg_tablespace WHERE oid = r.reltablespace));
        END IF;
        v_stmt := v_stmt || ' AS ' || regexp_replace(pg_get_viewdef(r.oid), ';\s*$', '');
        IF r.relkind = 'm' THEN
            v_stmt := v_stmt || ' WITH NO DATA';
            IF r.relispopulated THEN
                v_refresh := v_refresh || r.name;
            END IF;
        END IF;
        v_redo := v_redo || v_stmt;
        v_redo := v_redo || format('ALTER %s %s OWNER TO %I', r.kind, r.name, pg_get_userbyid(r.relowner));
        -- Privileges: this marker is replaced by a check of the new view's privileges; if
        -- they differ from the saved ones (ALTER DEFAULT PRIVILEGES, for one), every grant
        -- is revoked and the saved ones are granted again.
        v_redo := v_redo || ('-- acl ' || r.name);
        v_acls := v_acls || jsonb_build_object(r.name, coalesce(r.relacl, acldefault('r', r.relowner))::text);
        v_redo := v_redo || ARRAY(
            SELECT format('GRANT %s (%I) ON %s TO %s%s', x.privilege_type, a.attname, r.name,
                          CASE WHEN x.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(x.grantee)) END,
                          CASE WHEN x.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
            FROM pg_attribute a, aclexplode(a.attacl) AS x
            WHERE a.attrelid = r.oid AND a.attnum > 0 AND a.attacl IS NOT NULL
            ORDER BY a.attnum, x.grantee, x.privilege_type);
        v_redo := v_redo || ARRAY(
            SELECT format('COMMENT ON %s %s IS %L', r.kind, r.name, obj_description(r.oid, 'pg_class'))
            WHERE obj_description(r.oid, 'pg_class') IS NOT NULL);
        v_redo := v_redo || ARRAY(
            SELECT format('COMMENT ON COLUMN %s.%I IS %L', r.name, a.attname, d.description)
            FROM pg_attribute a
            JOIN pg_description d ON d.objoid = r.oid AND d.classoid = 'pg_class'::regclass AND d.objsubid = a.attnum
            WHERE a.attrelid = r.oid AND a.attnum > 0
            ORDER BY a.attnum);
        v_redo := v_redo || ARRAY(
            SELECT format('ALTER %s %s ALTER COLUMN %I SET STATISTICS %s', r.kind, r.name, a.attname, a.attstattarget)
            FROM pg_attribute a
            WHERE a.attrelid = r.oid AND a.attnum > 0 AND r.relkind = 'm' AND coalesce(a.attstattarget, -1) >= 0
            ORDER BY a.attnum);
        v_redo := v_redo || ARRAY(
            SELECT format('ALTER %s %s ALTER COLUMN %I SET (%s)', r.kind, r.name, a.attname, o.opts)
            FROM pg_attribute a
            -- (pg_attver, which some PostgreSQL builds keep there, is reserved: not an option)
            CROSS JOIN LATERAL (SELECT string_agg(x, ', ' ORDER BY n) AS opts
                                FROM unnest(a.attoptions) WITH ORDINALITY AS u(x, n)
                                WHERE x NOT LIKE 'pg\_attver=%') AS o
            WHERE a.attrelid = r.oid AND a.attnum > 0 AND r.relkind = 'm' AND o.opts IS NOT NULL
            ORDER BY a.attnum);
        v_redo := v_redo || ARRAY(
            SELECT format('ALTER VIEW %s ALTER COLUMN %I SET DEFAULT %s', r.name, a.attname, pg_get_expr(d.adbin, d.adrelid))
            FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
            WHERE d.adrelid = r.oid
            ORDER BY a.attnum);
        v_redo := v_redo || ARRAY(
            SELECT pg_get_triggerdef(tg.oid)
            FROM pg_trigger tg WHERE tg.tgrelid = r.oid AND NOT tg.tgisinternal
            ORDER BY tg.tgname);
        v_redo := v_redo || ARRAY(
            SELECT format('ALTER TABLE %s DISABLE TRIGGER %I', r.name, tg.tgname)
            FROM pg_trigger tg WHERE tg.tgrelid = r.oid AND NOT tg.tgisinternal AND tg.tgenabled = 'D'
            ORDER BY tg.tgname);
        v_redo := v_redo || ARRAY(
            SELECT regexp_replace(pg_get_ruledef(rw.oid), ';\s*$', '')
            FROM pg_rewrite rw WHERE rw.ev_class = r.oid AND rw.rulename <> '_RETURN'
            ORDER BY rw.rulename);
        -- Indexes (built empty: the view has no rows yet) with their tablespace, comment and
        -- CLUSTER mark.
        v_redo := v_redo || ARRAY(
            SELECT u.stmt
            FROM pg_index i
            JOIN pg_class ic ON ic.oid = i.indexrelid
            CROSS JOIN LATERAL unnest(ARRAY[
                pg_get_indexdef(i.indexrelid),
                CASE WHEN ic.reltablespace <> 0
                     THEN format('ALTER INDEX %s SET TABLESPACE %I', i.indexrelid::regclass,
                                 (SELECT spcname FROM pg_tablespace WHERE oid = ic.reltablespace)) END,
                CASE WHEN obj_description(i.indexrelid, 'pg_class') IS NOT NULL
                     THEN format('COMMENT ON INDEX %s IS %L', i.indexrelid::regclass, obj_description(i.indexrelid, 'pg_class')) END,
                CASE WHEN i.indisclustered
                     THEN format('ALTER %s %s CLUSTER ON %I', r.kind, r.name, ic.relname) END
            ]) WITH ORDINALITY AS u(stmt, n)
            WHERE i.indrelid = r.oid AND u.stmt IS NOT NULL
            ORDER BY i.indexrelid::regclass::text, u.n);
        -- Extended statistics, with their owner, target and comment.
        v_redo := v_redo || ARRAY(
            SELECT u.stmt
            FROM pg_statistic_ext s
            JOIN pg_namespace sn ON sn.oid = s.stxnamespace
            CROSS JOIN LATERAL unnest(ARRAY[
                pg_get_statisticsobjdef(s.oid),
                format('ALTER STATISTICS %I.%I OWNER TO %I', sn.nspname, s.stxname, pg_get_userbyid(s.stxowner)),
                CASE WHEN coalesce(s.stxstattarget, -1) >= 0
                     THEN format('ALTER STATISTICS %I.%I SET STATISTICS %s', sn.nspname, s.stxname, s.stxstattarget) END,
                CASE WHEN obj_description(s.oid, 'pg_statistic_ext') IS NOT NULL
                     THEN format('COMMENT ON STATISTICS %I.%I IS %L', sn.nspname, s.stxname, obj_description(s.oid, 'pg_statistic_ext')) END
            ]) WITH ORDINALITY AS u(stmt, n)
            WHERE s.stxrelid = r.oid AND u.stmt IS NOT NULL
            ORDER BY sn.nspname, s.stxname, u.n);
    END LOOP;

    -- Every step below runs as the key table's owner, in a security-restricted operation
    -- (snowflake_migrate_exec()): code that PostgreSQL runs for it (a CHECK checked again, an
    -- index expression, a domain's check while a view is parsed again, a materialized view's
    -- query) runs with that owner's rights, never with the caller's, and cannot SET ROLE back.
    -- That owner must own everything the call changes; checked here, before the first DDL.
    WITH RECURSIVE tree(relid) AS (
        SELECT tbl::oid
        UNION ALL
        SELECT i.inhrelid FROM pg_inherits i JOIN tree ON i.inhparent = tree.relid
    )
    SELECT array_agg(relid) INTO v_tree FROM tree;
    v_rels := ARRAY(SELECT DISTINCT x FROM unnest(v_tree || t_rel || v_view_oids) AS x);
    FOR r IN
        SELECT o.* FROM (
            SELECT c.oid::regclass::text AS name, c.relowner AS owner,
                   CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'TABLE' END AS kind,
                   CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view'
                                  WHEN 'p' THEN 'partitioned table' ELSE 'table' END AS what
            FROM pg_class c WHERE c.oid = ANY (v_rels)
            UNION ALL
            SELECT format('%I.%I', sn.nspname, s.stxname), s.stxowner, 'STATISTICS', 'statistics object'
            FROM pg_statistic_ext s JOIN pg_namespace sn ON sn.oid = s.stxnamespace
            WHERE s.stxrelid = ANY (v_rels)
        ) AS o
        WHERE o.owner <> v_owner
        ORDER BY o.name
        LIMIT 1
    LOOP
        RAISE EXCEPTION '% % belongs to role %, not to role %, the owner of table %', r.what, r.name,
                        quote_ident(pg_get_userbyid(r.owner)), quote_ident(pg_get_userbyid(v_owner)), tbl
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Migrating %s changes or recreates %s %s. Every step runs as the owner of %s, so that no role''s code runs with more privileges than that role''s own; it must own everything the migration changes.',
                                  tbl, r.what, r.name, tbl),
                  HINT = format('Run ALTER %s %s OWNER TO %s (and back afterwards), or drop the object, migrate, and let role %s create it again.',
                                r.kind, r.name, quote_ident(pg_get_userbyid(v_owner)), quote_ident(pg_get_userbyid(r.owner)));
    END LOOP;

    -- Recreating a view (and a materialized view's statistics objects) needs CREATE on its schema.
    FOR r IN
        SELECT DISTINCT n.nspname
        FROM pg_namespace n
        WHERE (n.oid IN (SELECT c.relnamespace FROM pg_class c WHERE c.oid = ANY (v_view_oids))
               OR n.oid IN (SELECT s.stxnamespace FROM pg_statistic_ext s WHERE s.stxrelid = ANY (v_view_oids)))
          AND NOT has_schema_privilege(v_owner, n.oid, 'CREATE')
        ORDER BY 1
        LIMIT 1
    LOOP
        RAISE EXCEPTION 'role %, the owner of table %, cannot create objects in schema %', quote_ident(pg_get_userbyid(v_owner)), tbl, quote_ident(r.nspname)
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('The migration recreates views of schema %s as the table''s owner.', quote_ident(r.nspname)),
                  HINT = format('GRANT CREATE ON SCHEMA %s TO %s (and revoke it afterwards), then migrate.', quote_ident(r.nspname), quote_ident(pg_get_userbyid(v_owner)));
    END LOOP;

    -- A BEGIN ATOMIC function that uses a changing column or a recreated view blocks the
    -- ALTER or the DROP: refused here rather than after DDL began.
    FOR r IN
        SELECT DISTINCT d.objid::regprocedure AS fn, d.refobjid::regclass AS rel
        FROM pg_depend d
        WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_class'::regclass
          AND ((d.refobjid, d.refobjsubid) IN (SELECT t.relid, t.attnum::int FROM unnest(t_rel, t_att) AS t(relid, attnum))
               OR d.refobjid = ANY (v_view_oids))
        ORDER BY 1, 2
        LIMIT 1
    LOOP
        RAISE EXCEPTION 'function % uses %, which the migration changes', r.fn, r.rel
            USING ERRCODE = 'dependent_objects_still_exist',
                  DETAIL = 'A function written with BEGIN ATOMIC records what it uses; PostgreSQL cannot change the type of a column it uses, nor drop a view it uses.',
                  HINT = 'Drop the function, migrate, then create it again.';
    END LOOP;

    -- Anything else that depends on a view to be dropped and recreated (a rule of another table,
    -- a policy) blocks the DROP: refused here too.
    FOR r IN
        SELECT DISTINCT pg_describe_object(d.classid, d.objid, 0) AS what, d.refobjid::regclass AS rel
        FROM pg_depend d
        WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = ANY (v_view_oids) AND d.deptype = 'n'
          AND d.classid <> 'pg_proc'::regclass
          AND NOT (d.classid = 'pg_rewrite'::regclass
                   AND (SELECT rw.ev_class FROM pg_rewrite rw WHERE rw.oid = d.objid) = ANY (v_view_oids))
        ORDER BY 1, 2
        LIMIT 1
    LOOP
        RAISE EXCEPTION 'cannot drop and recreate the dependent view %: % depends on it', r.rel, r.what
            USING ERRCODE = 'dependent_objects_still_exist',
                  HINT = 'Only views and materialized views are recreated. Drop the object named above, migrate, then create it again.';
    END LOOP;

    -- A publication's row filter or column list on a changing column blocks the ALTER.
    FOR r IN
        SELECT DISTINCT p.pubname, pr.prrelid::regclass AS rel, a.attname
        FROM pg_depend d
        JOIN pg_publication_rel pr ON pr.oid = d.objid
        JOIN pg_publication p ON p.oid = pr.prpubid
        JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
        WHERE d.classid = 'pg_publication_rel'::regclass AND d.refclassid = 'pg_class'::regclass
          AND (d.refobjid, d.refobjsubid) IN (SELECT t.relid, t.attnum::int FROM unnest(t_rel, t_att) AS t(relid, attnum))
        ORDER BY 1, 2, 3
        LIMIT 1
    LOOP
        RAISE EXCEPTION 'publication % filters on or lists column "%" of table %, whose type changes', quote_ident(r.pubname), r.attname, r.rel
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'PostgreSQL cannot change the type of a column that a publication''s row filter or column list uses.',
                  HINT = format('ALTER PUBLICATION %s DROP TABLE %s, migrate, then add the table back with its filter or column list.', quote_ident(r.pubname), r.rel);
    END LOOP;

    -- Code that the steps may run or parse again: the functions, operators and types (with
    -- their domains' constraints) that the changed relations' constraints, defaults, indexes,
    -- statistics, rules, triggers and policies use, and the views those rules read, followed
    -- through every function, operator and type that uses another. As the owner runs it, the
    -- code of another role runs with the owner's rights, not the caller's; when the owner is a
    -- superuser, that would be a superuser's rights: refused.
    IF v_osuper THEN
        FOR r IN
            SELECT x.classid, x.objid, x.owner
            FROM @extschema@.snowflake_migrate_reachable(v_rels) AS x
            JOIN pg_roles ro ON ro.oid = x.owner
            WHERE NOT ro.rolsuper
            ORDER BY pg_describe_object(x.classid, x.objid, 0)
            LIMIT 1
        LOOP
            RAISE EXCEPTION '% belongs to role %, which is not a superuser, and the migration would run it as superuser %',
                            pg_describe_object(r.classid, r.objid, 0), quote_ident(pg_get_userbyid(r.owner)),
                            quote_ident(pg_get_userbyid(v_owner))
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = format('Table %s belongs to a superuser, and an object the migration changes or parses again uses %s: every step runs as the table''s owner, so that code would run with a superuser''s rights.',
                                      tbl, pg_describe_object(r.classid, r.objid, 0)),
                      HINT = format('Have the table owned by a role that is not a superuser (ALTER TABLE %s OWNER TO ...) for the migration, or have that object owned by a superuser, or drop what uses it and create it again afterwards.', tbl);
        END LOOP;
        -- A function body PostgreSQL cannot see into (PL/pgSQL, SQL without BEGIN ATOMIC) records
        -- nothing of what it reads or calls: a view of another role behind it would run as a
        -- superuser. Refused when the steps may run it (a CHECK, an index, a REFRESH).
        FOR r IN
            SELECT x.fn, x.owner
            FROM @extschema@.snowflake_migrate_opaque(v_rels,
                     ARRAY(SELECT c.oid FROM pg_class c WHERE c.oid = ANY (v_view_oids) AND c.relkind = 'm')) AS x
            ORDER BY x.fn::regprocedure::text
            LIMIT 1
        LOOP
            RAISE EXCEPTION 'the migration of table % would run function % as superuser %, and cannot see what it reads or calls',
                            tbl, r.fn::regprocedure, quote_ident(pg_get_userbyid(v_owner))
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = format('Table %s belongs to a superuser, and a CHECK constraint, an index or a materialized view the migration refreshes calls %s (owned by %s), whose body (not written with BEGIN ATOMIC) PostgreSQL records no dependencies for: a view or function of another role that it uses would run with a superuser''s rights.',
                                      tbl, r.fn::regprocedure, quote_ident(pg_get_userbyid(r.owner))),
                      HINT = format('Have the table and what the migration changes owned by a role that is not a superuser (ALTER TABLE %s OWNER TO ...) for the migration, or rewrite %s with BEGIN ATOMIC, or drop what calls it and create it again afterwards.', tbl, r.fn::regprocedure);
        END LOOP;
    END IF;

    -- Every step must be one the owner can do, checked before the first DDL: recreating a view
    -- looks up the names it uses (USAGE on their schemas), and REFRESH runs a materialized
    -- view's query (SELECT on the relations it reads, EXECUTE on the functions it calls, USAGE
    -- on the types).
    FOR r IN
        WITH refs AS (
            SELECT DISTINCT c.oid AS view, c.relkind AS vkind, d.refclassid, d.refobjid
            FROM pg_class c
            JOIN pg_rewrite rw ON rw.ev_class = c.oid
            JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = rw.oid
            WHERE c.oid = ANY (v_view_oids)
              AND d.refclassid IN ('pg_class'::regclass, 'pg_proc'::regclass, 'pg_type'::regclass, 'pg_operator'::regclass)
              AND NOT (d.refclassid = 'pg_class'::regclass AND d.refobjid = c.oid)
        ), objs AS (
            SELECT refs.view, refs.vkind, refs.refclassid, refs.refobjid,
                   CASE refs.refclassid
                       WHEN 'pg_class'::regclass THEN (SELECT x.relnamespace FROM pg_class x WHERE x.oid = refs.refobjid)
                       WHEN 'pg_proc'::regclass THEN (SELECT x.pronamespace FROM pg_proc x WHERE x.oid = refs.refobjid)
                       WHEN 'pg_type'::regclass THEN (SELECT x.typnamespace FROM pg_type x WHERE x.oid = refs.refobjid)
                       ELSE (SELECT x.oprnamespace FROM pg_operator x WHERE x.oid = refs.refobjid) END AS nsp
            FROM refs
        )
        SELECT o.view::regclass AS view, pg_describe_object(o.refclassid, o.refobjid, 0) AS what, w.need, w.grant_stmt
        FROM objs o
        CROSS JOIN LATERAL (
            SELECT 'USAGE on schema ' || quote_ident(n.nspname),
                   format('GRANT USAGE ON SCHEMA %I TO %I', n.nspname, pg_get_userbyid(v_owner))
            FROM pg_namespace n
            WHERE n.oid = o.nsp AND NOT has_schema_privilege(v_owner, n.oid, 'USAGE')
            UNION ALL
            SELECT 'SELECT', format('GRANT SELECT ON %s TO %I', o.refobjid::regclass, pg_get_userbyid(v_owner))
            WHERE o.vkind = 'm' AND o.refclassid = 'pg_class'::regclass
              AND NOT has_any_column_privilege(v_owner, o.refobjid, 'SELECT')
            UNION ALL
            SELECT 'EXECUTE', format('GRANT EXECUTE ON FUNCTION %s TO %I', o.refobjid::regprocedure, pg_get_userbyid(v_owner))
            WHERE o.vkind = 'm' AND o.refclassid = 'pg_proc'::regclass
              AND NOT has_function_privilege(v_owner, o.refobjid, 'EXECUTE')
            UNION ALL
            SELECT 'EXECUTE', format('GRANT EXECUTE ON FUNCTION %s TO %I', x.oprcode::regprocedure, pg_get_userbyid(v_owner))
            FROM pg_operator x
            WHERE o.vkind = 'm' AND o.refclassid = 'pg_operator'::regclass AND x.oid = o.refobjid
              AND NOT has_function_privilege(v_owner, x.oprcode, 'EXECUTE')
            UNION ALL
            SELECT 'USAGE', format('GRANT USAGE ON TYPE %s TO %I', o.refobjid::regtype, pg_get_userbyid(v_owner))
            WHERE o.vkind = 'm' AND o.refclassid = 'pg_type'::regclass
              AND NOT has_type_privilege(v_owner, o.refobjid, 'USAGE')
        ) AS w(need, grant_stmt)
        ORDER BY 1, 2, 3
        LIMIT 1
    LOOP
        RAISE EXCEPTION 'role %, the owner of table %, lacks % on % (used by %)',
                        quote_ident(pg_get_userbyid(v_owner)), tbl, r.need, r.what, r.view
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('The migration recreates %s as role %s (and refreshes it, if it is a materialized view); without that privilege it would fail after the first DDL.',
                                  r.view, quote_ident(pg_get_userbyid(v_owner))),
                  HINT = format('%s (and revoke it afterwards), then migrate.', r.grant_stmt);
    END LOOP;

    -- Parsed again against the new types, a name may resolve to another function or operator of
    -- the same name: one that another role (neither the owner nor a superuser) placed in the same
    -- schema would then run with the owner's rights. Refused before anything is parsed again.
    FOR r IN
        SELECT x.classid, x.objid, o.classid AS oclass, o.objid AS oobj, o.owner
        FROM @extschema@.snowflake_migrate_direct_refs(v_rels) AS x
        CROSS JOIN LATERAL (
            SELECT 'pg_proc'::regclass::oid, q.oid, q.proowner
            FROM pg_proc p JOIN pg_proc q ON q.proname = p.proname AND q.pronamespace = p.pronamespace AND q.oid <> p.oid
            WHERE x.classid = 'pg_proc'::regclass AND p.oid = x.objid
            UNION ALL
            SELECT 'pg_operator'::regclass::oid, q.oid, q.oprowner
            FROM pg_operator p JOIN pg_operator q ON q.oprname = p.oprname AND q.oprnamespace = p.oprnamespace AND q.oid <> p.oid
            WHERE x.classid = 'pg_operator'::regclass AND p.oid = x.objid
        ) AS o(classid, objid, owner)
        JOIN pg_roles ro ON ro.oid = o.owner
        WHERE o.owner <> v_owner AND NOT ro.rolsuper
        ORDER BY pg_describe_object(x.classid, x.objid, 0), pg_describe_object(o.classid, o.objid, 0)
        LIMIT 1
    LOOP
        RAISE EXCEPTION '% has an overload, %, that belongs to role %', pg_describe_object(r.classid, r.objid, 0),
                        pg_describe_object(r.oclass, r.oobj, 0), quote_ident(pg_get_userbyid(r.owner))
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Objects that the migration parses again use %s; with the new column types that name may resolve to %s, which would then run with the rights of role %s.',
                                  pg_describe_object(r.classid, r.objid, 0), pg_describe_object(r.oclass, r.oobj, 0), quote_ident(pg_get_userbyid(v_owner))),
                  HINT = format('Drop %s or have it owned by role %s, then migrate.', pg_describe_object(r.oclass, r.oobj, 0), quote_ident(pg_get_userbyid(v_owner)));
    END LOOP;

    -- Static and sound: CREATE FUNCTION takes no lock a migration can hold, so an overload can
    -- appear at any moment between any check and PostgreSQL's re-parse. Every schema holding a
    -- function, operator or type that an expression parsed again references (CHECK and other
    -- constraints, index expressions and predicates, statistics expressions, defaults and
    -- generated columns of every changed relation, the rules of the views recreated), and the
    -- extension's own schema, must be writable only by trusted roles: superusers, the table's
    -- owner, roles the caller is a member of (not PUBLIC). pg_catalog is fine.
    FOR r IN
        WITH sub(classid, objid) AS (
            SELECT 'pg_constraint'::regclass::oid, k.oid FROM pg_constraint k WHERE k.conrelid = ANY (v_rels)
            UNION ALL SELECT 'pg_attrdef'::regclass::oid, ad.oid FROM pg_attrdef ad WHERE ad.adrelid = ANY (v_rels)
            UNION ALL SELECT 'pg_class'::regclass::oid, i.indexrelid FROM pg_index i WHERE i.indrelid = ANY (v_rels)
            UNION ALL SELECT 'pg_rewrite'::regclass::oid, rw.oid FROM pg_rewrite rw WHERE rw.ev_class = ANY (v_rels)
            UNION ALL SELECT 'pg_statistic_ext'::regclass::oid, s.oid FROM pg_statistic_ext s WHERE s.stxrelid = ANY (v_rels)
        ), refs AS (
            SELECT DISTINCT sub.classid, sub.objid,
                   CASE d.refclassid
                       WHEN 'pg_proc'::regclass THEN (SELECT x.pronamespace FROM pg_proc x WHERE x.oid = d.refobjid)
                       WHEN 'pg_operator'::regclass THEN (SELECT x.oprnamespace FROM pg_operator x WHERE x.oid = d.refobjid)
                       ELSE (SELECT x.typnamespace FROM pg_type x WHERE x.oid = d.refobjid) END AS nsp,
                   pg_describe_object(d.refclassid, d.refobjid, 0) AS what
            FROM sub JOIN pg_depend d ON d.classid = sub.classid AND d.objid = sub.objid
            WHERE d.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass, 'pg_type'::regclass)
            UNION ALL
            SELECT 'pg_extension'::regclass::oid, e.oid, e.extnamespace, 'extension snowflake'
            FROM pg_extension e WHERE e.extname = 'snowflake'
        )
        SELECT n.nspname, refs.what,
               CASE WHEN refs.classid = 'pg_extension'::regclass THEN 'extension snowflake'
                    WHEN refs.classid = 'pg_rewrite'::regclass
                    THEN (SELECT 'view ' || rw.ev_class::regclass::text FROM pg_rewrite rw WHERE rw.oid = refs.objid)
                    ELSE pg_describe_object(refs.classid, refs.objid, 0) END AS user_obj,
               w.who
        FROM refs
        JOIN pg_namespace n ON n.oid = refs.nsp
        CROSS JOIN LATERAL (
            SELECT string_agg(x.who, ', ' ORDER BY x.who) FROM (
                SELECT quote_ident(ro.rolname) AS who
                FROM pg_roles ro
                WHERE has_schema_privilege(ro.oid, n.oid, 'CREATE')
                  AND NOT ro.rolsuper AND ro.oid <> v_owner AND ro.rolname <> 'pg_database_owner'
                  -- a role the caller is a member of (followed through pg_auth_members: a
                  -- superuser counts as a member of every role, and would trust them all)
                  AND ro.oid NOT IN (WITH RECURSIVE mine(r) AS (
                                         SELECT x.oid FROM pg_roles x WHERE x.rolname = current_user
                                         UNION
                                         SELECT m.roleid FROM pg_auth_members m JOIN mine ON m.member = mine.r)
                                     SELECT mine.r FROM mine)
                  AND NOT EXISTS (SELECT 1 FROM aclexplode(n.nspacl) a WHERE a.grantee = 0 AND a.privilege_type = 'CREATE')
                UNION
                SELECT 'PUBLIC' FROM aclexplode(n.nspacl) AS a WHERE a.grantee = 0 AND a.privilege_type = 'CREATE'
            ) AS x
        ) AS w(who)
        WHERE n.nspname <> 'pg_catalog' AND w.who IS NOT NULL
        ORDER BY refs.classid = 'pg_extension'::regclass DESC, 3, 2
        LIMIT 1
    LOOP
        RAISE EXCEPTION 'roles you do not trust may create objects in schema %, which % uses: %', quote_ident(r.nspname), r.user_obj, r.who
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = CASE WHEN r.user_obj = 'extension snowflake'
                                THEN format('Schema %s holds snowflake_migrate_column() and the functions the migration installs; an overload created there takes over a call that is not schema-qualified and fully typed, or what the migration parses again, and runs with the rights of role %s.',
                                            quote_ident(r.nspname), quote_ident(pg_get_userbyid(v_owner)))
                                ELSE format('The migration makes PostgreSQL parse %s again; %s is in schema %s, where role(s) %s may create an overload at any moment, which the new column types would then choose and run with the rights of role %s.',
                                            r.user_obj, r.what, quote_ident(r.nspname), r.who, quote_ident(pg_get_userbyid(v_owner))) END,
                  HINT = format('REVOKE CREATE ON SCHEMA %s FROM %s; or move what it holds that the migration uses into a schema only trusted roles can write; then migrate.',
                                quote_ident(r.nspname), r.who);
    END LOOP;

    -- The functions and operators that CHECK and exclusion constraints, index expressions and
    -- predicates, and statistics expressions use now, by object name (ALTER ... TYPE re-creates
    -- them under new oids): compared after the DDL, and every change reported
    -- (reparsed_expressions).
    SELECT coalesce(jsonb_object_agg(x.obj, x.refs), '{}') FROM (
        SELECT pg_describe_object(o.classid, o.objid, 0) AS obj,
               to_jsonb(ARRAY(SELECT DISTINCT CASE d.refclassid WHEN 'pg_proc'::regclass THEN d.refobjid::regprocedure::text
                                                                ELSE d.refobjid::regoperator::text END
                              FROM pg_depend d
                              WHERE d.classid = o.classid AND d.objid = o.objid
                                AND d.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass) ORDER BY 1)) AS refs
        FROM (
            SELECT 'pg_constraint'::regclass::oid, k.oid FROM pg_constraint k WHERE k.conrelid = ANY (v_rels) AND k.contype IN ('c', 'x')
            UNION ALL SELECT 'pg_class'::regclass::oid, i.indexrelid FROM pg_index i
                      WHERE i.indrelid = ANY (v_rels) AND (i.indexprs IS NOT NULL OR i.indpred IS NOT NULL)
            UNION ALL SELECT 'pg_statistic_ext'::regclass::oid, st.oid FROM pg_statistic_ext st
                      WHERE st.stxrelid = ANY (v_rels) AND st.stxexprs IS NOT NULL
        ) AS o(classid, objid)
    ) AS x INTO v_expr_refs;

    FOREACH v_stmt IN ARRAY v_drops LOOP
        BEGIN
            PERFORM @extschema@.snowflake_migrate_exec(v_owner, ARRAY[v_stmt]);
        EXCEPTION WHEN dependent_objects_still_exist THEN
            GET STACKED DIAGNOSTICS v_reason = PG_EXCEPTION_DETAIL;
            RAISE EXCEPTION 'cannot drop and recreate the dependent view %: other objects depend on it', substr(v_stmt, strpos(v_stmt, ' VIEW ') + 6)
                USING ERRCODE = 'dependent_objects_still_exist',
                      DETAIL = v_reason,
                      HINT = 'Only views and materialized views are recreated. Drop the objects named above, migrate, then create them again.';
        END;
    END LOOP;

    -- The key column: identity or sequence default off, the new type, snowflake_next() default.
    -- One ALTER TABLE per table, so each table is rewritten once.
    v_clauses := '{}';
    IF NOT v_key_done THEN
        IF v_identity IS NOT NULL THEN
            v_clauses := v_clauses || format('ALTER COLUMN %I DROP IDENTITY', col);
        ELSIF v_def_oid IS NOT NULL THEN
            v_clauses := v_clauses || format('ALTER COLUMN %I DROP DEFAULT', col);
        END IF;
    END IF;
    v_clauses := v_clauses || ARRAY(
        SELECT format('ALTER COLUMN %I TYPE %s', w.c, v_type)
               || CASE WHEN new_type <> 'int8'::regtype THEN format(' USING %I::pg_catalog.int8::%s', w.c, v_type) ELSE '' END
        FROM unnest(w_rel, w_col) WITH ORDINALITY AS w(rel, c, n)
        WHERE w.rel = tbl ORDER BY w.n);
    IF NOT v_key_done THEN
        v_clauses := v_clauses || format('ALTER COLUMN %I SET DEFAULT %s', col, sf_default);
    END IF;
    IF cardinality(v_clauses) > 0 THEN
        PERFORM @extschema@.snowflake_migrate_exec(v_owner, ARRAY[format('ALTER TABLE %s %s', tbl, array_to_string(v_clauses, ', '))]);
    END IF;

    FOR r IN
        SELECT w.rel, array_agg(format('ALTER COLUMN %I TYPE %s', w.c, v_type)
               || CASE WHEN new_type <> 'int8'::regtype THEN format(' USING %I::pg_catalog.int8::%s', w.c, v_type) ELSE '' END ORDER BY w.n) AS clauses
        FROM unnest(w_rel, w_col) WITH ORDINALITY AS w(rel, c, n)
        WHERE w.rel <> tbl
        GROUP BY w.rel
        ORDER BY min(w.n)
    LOOP
        PERFORM @extschema@.snowflake_migrate_exec(v_owner, ARRAY[format('ALTER TABLE %s %s', r.rel::regclass, array_to_string(r.clauses, ', '))]);
    END LOOP;

    -- The old sequences, as decided above. An identity sequence went with DROP IDENTITY. A kept
    -- sequence stops claiming the column (OWNED BY), so pg_get_serial_sequence() no longer
    -- names it.
    FOR v_i IN 1 .. cardinality(v_seqs) LOOP
        v_name := v_seq_names[v_i];
        IF v_seq_why[v_i] IS NULL THEN
            IF EXISTS (SELECT 1 FROM pg_class WHERE oid = v_seqs[v_i]) THEN
                PERFORM @extschema@.snowflake_migrate_exec(v_owner, ARRAY[format('DROP SEQUENCE %s', v_name)]);
            END IF;
            v_dropped := v_dropped || jsonb_build_object('sequence', v_name, 'last_value', v_seq_last[v_i]::text);
        ELSE
            IF v_seq_link[v_i] THEN
                PERFORM @extschema@.snowflake_migrate_exec(v_owner, ARRAY[format('ALTER SEQUENCE %s OWNED BY NONE', v_name)]);
            END IF;
            RAISE NOTICE 'sequence % is kept: %', v_name, v_seq_why[v_i];
            v_kept := v_kept || jsonb_build_object('sequence', v_name, 'reason', v_seq_why[v_i]);
        END IF;
    END LOOP;

    FOREACH v_stmt IN ARRAY v_redo LOOP
        IF v_stmt LIKE '-- acl %' THEN
            v_name := substr(v_stmt, 8);
            SELECT coalesce(c.relacl, acldefault('r', c.relowner)) INTO v_acl
            FROM pg_class c WHERE c.oid = v_name::regclass;
            IF v_acl::text = v_acls ->> v_name THEN
                CONTINUE;
            END IF;
            FOR r IN SELECT DISTINCT x.grantee FROM aclexplode(v_acl) AS x LOOP
                PERFORM @extschema@.snowflake_migrate_exec(v_owner, ARRAY[format('REVOKE ALL ON %s FROM %s', v_name,
                               CASE WHEN r.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(r.grantee)) END)]);
            END LOOP;
            FOR r IN
                SELECT x.grantee, x.privilege_type, x.is_grantable
                FROM aclexplode((v_acls ->> v_name)::aclitem[]) AS x
                ORDER BY x.grantee, x.privilege_type
            LOOP
                PERFORM @extschema@.snowflake_migrate_exec(v_owner, ARRAY[format('GRANT %s ON %s TO %s%s', r.privilege_type, v_name,
                               CASE WHEN r.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(r.grantee)) END,
                               CASE WHEN r.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)]);
            END LOOP;
        ELSE
            PERFORM @extschema@.snowflake_migrate_exec(v_owner, ARRAY[v_stmt]);
        END IF;
    END LOOP;

    -- Views are parsed again against the new types: sum(id) turns numeric, f(id) may call
    -- another f, id % 2 another operator. Compared here, before any REFRESH runs a query: a
    -- view whose rules (its query or any other rule) now use a function or operator of a role
    -- that is neither the owner nor a superuser is refused; one whose columns changed to
    -- another type than the key's, or whose rules use other functions or operators, is
    -- reported.
    FOREACH v_name IN ARRAY v_views LOOP
        FOR r IN
            SELECT x.classid, x.objid, x.owner
            FROM @extschema@.snowflake_migrate_direct_refs(ARRAY[v_name::regclass::oid]) AS x
            JOIN pg_roles ro ON ro.oid = x.owner
            WHERE x.via = 'pg_rewrite'::regclass AND x.owner <> v_owner AND NOT ro.rolsuper
              AND NOT (v_shapes -> v_name -> 'functions') ? (CASE WHEN x.classid = 'pg_proc'::regclass THEN x.objid::regprocedure::text
                                                                  ELSE 'operator ' || x.objid::regoperator::text END)
            ORDER BY 1, 2
            LIMIT 1
        LOOP
            RAISE EXCEPTION 'view % parsed again would use %, which belongs to role %', v_name,
                            pg_describe_object(r.classid, r.objid, 0), quote_ident(pg_get_userbyid(r.owner))
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = format('With the new column types the view''s rules resolve to %s instead of what they used before; its code would run with the rights of role %s.',
                                      pg_describe_object(r.classid, r.objid, 0), quote_ident(pg_get_userbyid(v_owner))),
                      HINT = format('Drop %s, or have it owned by role %s, then migrate.', pg_describe_object(r.classid, r.objid, 0), quote_ident(pg_get_userbyid(v_owner)));
        END LOOP;
        v_shape := v_shapes -> v_name;
        SELECT coalesce(jsonb_agg(jsonb_build_object('column', a.attname, 'old_type', v_shape -> 'columns' ->> a.attname,
                                                     'new_type', format_type(a.atttypid, a.atttypmod))
                                  ORDER BY a.attnum), '[]')
        INTO v_changes
        FROM pg_attribute a
        WHERE a.attrelid = v_name::regclass AND a.attnum > 0 AND NOT a.attisdropped
          AND format_type(a.atttypid, a.atttypmod) IS DISTINCT FROM v_shape -> 'columns' ->> a.attname;
        SELECT jsonb_build_object('view', v_name, 'columns', v_changes) ||
               CASE WHEN f.fns IS DISTINCT FROM v_shape -> 'functions'
                    THEN jsonb_build_object('old_functions', v_shape -> 'functions', 'new_functions', f.fns)
                    ELSE '{}' END
        INTO v_shape
        FROM (SELECT @extschema@.snowflake_migrate_rule_refs(v_name::regclass) AS fns) AS f;
        IF v_shape ? 'new_functions'
           OR EXISTS (SELECT 1 FROM jsonb_array_elements(v_changes) AS x WHERE x ->> 'new_type' <> format_type(new_type, NULL)) THEN
            RAISE NOTICE 'view % was parsed again and its result changed: %', v_name, v_shape;
            v_reparsed := v_reparsed || v_shape;
        END IF;
    END LOOP;

    -- CHECK, exclusion, index and statistics expressions that PostgreSQL parsed again and that
    -- now use other functions or operators than before: reported, never silent.
    FOR r IN
        SELECT n.key AS obj, v_expr_refs -> n.key AS before, n.value AS after
        FROM jsonb_each((SELECT coalesce(jsonb_object_agg(x.obj, x.refs), '{}') FROM (
            SELECT pg_describe_object(o.classid, o.objid, 0) AS obj,
                   to_jsonb(ARRAY(SELECT DISTINCT CASE d.refclassid WHEN 'pg_proc'::regclass THEN d.refobjid::regprocedure::text
                                                                    ELSE d.refobjid::regoperator::text END
                                  FROM pg_depend d
                                  WHERE d.classid = o.classid AND d.objid = o.objid
                                    AND d.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass) ORDER BY 1)) AS refs
            FROM (
                SELECT 'pg_constraint'::regclass::oid, k.oid FROM pg_constraint k WHERE k.conrelid = ANY (v_rels) AND k.contype IN ('c', 'x')
                UNION ALL SELECT 'pg_class'::regclass::oid, i.indexrelid FROM pg_index i
                          WHERE i.indrelid = ANY (v_rels) AND (i.indexprs IS NOT NULL OR i.indpred IS NOT NULL)
                UNION ALL SELECT 'pg_statistic_ext'::regclass::oid, st.oid FROM pg_statistic_ext st
                          WHERE st.stxrelid = ANY (v_rels) AND st.stxexprs IS NOT NULL
            ) AS o(classid, objid)
        ) AS x)) AS n
        WHERE v_expr_refs ? n.key AND v_expr_refs -> n.key <> n.value
        ORDER BY n.key
    LOOP
        RAISE NOTICE '% was parsed again and now uses % (before: %)', r.obj, r.after, r.before;
        v_reparsed_x := v_reparsed_x || jsonb_build_object('object', r.obj, 'before', r.before, 'after', r.after);
    END LOOP;

    -- Materialized views that held rows get them again from their query, run by REFRESH as
    -- their owner in a security-restricted operation, shallowest first. One that was never
    -- populated stays so.
    FOREACH v_name IN ARRAY v_refresh LOOP
        PERFORM @extschema@.snowflake_migrate_exec(v_owner, ARRAY[format('REFRESH MATERIALIZED VIEW %s', v_name)]);
    END LOOP;
    IF cardinality(v_refresh) > 0 THEN
        RAISE NOTICE 'materialized views refilled from their queries: %', array_to_string(v_refresh, ', ');
    END IF;

    RETURN jsonb_build_object(
        'table', tbl::text,
        'column', col,
        'changed', true,
        'old_type', v_old_type,
        'old_default', CASE WHEN v_identity IS NOT NULL THEN 'generated ' || v_identity || ' as identity'
                            ELSE v_def_expr END,
        'new_type', format_type(new_type, NULL),
        'new_default', sf_call,
        'max_existing_id', v_max::text,
        'widened_columns', v_widened,
        'dropped_sequences', v_dropped,
        'kept_sequences', v_kept,
        'recreated_views', to_jsonb(v_views),
        'refreshed_matviews', to_jsonb(v_refresh),
        'reparsed_views', v_reparsed,
        'reparsed_expressions', v_reparsed_x);
END
$function$;

COMMENT ON FUNCTION snowflake_migrate_column(regclass, name, regtype) IS
'converts a serial, bigserial, identity or nextval() key column (and the integer foreign keys that reference it) to new_type (bigint, or the snowflake type) DEFAULT snowflake_next(); returns a jsonb summary';

-- (migration section: end)



-- ==== durable state: the mark, adoption, upgrades (src/mark.c, docs/operations.md, docs/failover.md) ====
-- (durable state section: end)



-- ==== clock: the clock watch (src/watch.c, docs/clock.md) ====
-- (clock section: end)



-- ==== type: the snowflake column type (src/type.c, docs/type.md) ====

-- The type joins PostgreSQL's own integer families (btree and hash integer_ops, where int2,
-- int4 and int8 already live together), beside its own snowflake_ops.  An index on a bigint
-- column is in integer_ops: only an operator of that family can be its index condition, so
-- without this a foreign key lookup from a snowflake key into a bigint column
-- (bigint_col = $1::snowflake), a bigint_col = <snowflake> filter and a merge join of the two
-- columns could not use the bigint index.  Every = is in both families, so the planner
-- sees the same families for snowflake = bigint as for bigint = bigint and builds one
-- equivalence class across them (derived equalities, partition pruning).
-- Added members depend on their operators (AUTO): DROP EXTENSION removes them with the operators,
-- and CREATE EXTENSION (on restore) adds them again; pg_dump does not dump pg_catalog's families.

-- The btree family needs snowflake's own comparisons too (an equivalence class that holds a
-- snowflake column and a bigint one sorts the snowflake side with integer_ops' operators for a
-- merge join), but not the type's < and > themselves: ORDER BY id takes its operator from the
-- default operator class (snowflake_ops), and the planner names an ordering operator's family
-- by the first btree family that holds it (integer_ops has the lower OID).  With < in
-- integer_ops, ORDER BY id and max(id) would ask for integer_ops order, which an index of
-- snowflake_ops does not give: every existing snowflake index would stop serving them.  So
-- integer_ops gets four operators of its own for snowflake, |<| |<=| |>=| |>: the same int8
-- functions under other names, members of integer_ops only.  = is shared (equivalence classes
-- need one equality operator for both families).

CREATE OPERATOR |<| (
    LEFTARG = @extschema@.snowflake, RIGHTARG = @extschema@.snowflake, FUNCTION = @extschema@.snowflake_lt,
    COMMUTATOR = OPERATOR(@extschema@.|>|), NEGATOR = OPERATOR(@extschema@.|>=|),
    RESTRICT = pg_catalog.scalarltsel, JOIN = pg_catalog.scalarltjoinsel);
CREATE OPERATOR |<=| (
    LEFTARG = @extschema@.snowflake, RIGHTARG = @extschema@.snowflake, FUNCTION = @extschema@.snowflake_le,
    COMMUTATOR = OPERATOR(@extschema@.|>=|), NEGATOR = OPERATOR(@extschema@.|>|),
    RESTRICT = pg_catalog.scalarlesel, JOIN = pg_catalog.scalarlejoinsel);
CREATE OPERATOR |>=| (
    LEFTARG = @extschema@.snowflake, RIGHTARG = @extschema@.snowflake, FUNCTION = @extschema@.snowflake_ge,
    COMMUTATOR = OPERATOR(@extschema@.|<=|), NEGATOR = OPERATOR(@extschema@.|<|),
    RESTRICT = pg_catalog.scalargesel, JOIN = pg_catalog.scalargejoinsel);
CREATE OPERATOR |>| (
    LEFTARG = @extschema@.snowflake, RIGHTARG = @extschema@.snowflake, FUNCTION = @extschema@.snowflake_gt,
    COMMUTATOR = OPERATOR(@extschema@.|<|), NEGATOR = OPERATOR(@extschema@.|<=|),
    RESTRICT = pg_catalog.scalargtsel, JOIN = pg_catalog.scalargtjoinsel);

-- The members are added by a function, which the script calls: pg_upgrade does not carry them
-- (its dump has the extension's own objects, and pg_catalog's families are not dumped), so after
-- pg_upgrade each database runs SELECT snowflake_repair_integer_ops() (docs/type.md).  It adds
-- only what is missing and says how many it added; it needs a superuser (ALTER OPERATOR FAMILY
-- of pg_catalog), runs with search_path pinned and names every object by its schema.

CREATE FUNCTION snowflake_repair_integer_ops() RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    sf      regtype;        -- the extension's type, and its schema (after the schema guard)
    nsp     text;
    btree   oid := (SELECT f.oid FROM pg_catalog.pg_opfamily f JOIN pg_catalog.pg_am am ON am.oid = f.opfmethod
                    WHERE am.amname = 'btree' AND f.opfname = 'integer_ops' AND f.opfnamespace = 'pg_catalog'::regnamespace);
    hash    oid := (SELECT f.oid FROM pg_catalog.pg_opfamily f JOIN pg_catalog.pg_am am ON am.oid = f.opfmethod
                    WHERE am.amname = 'hash' AND f.opfname = 'integer_ops' AND f.opfnamespace = 'pg_catalog'::regnamespace);
    -- Only the extension's own operators count: a database's owner may create operators of the
    -- same name and types in the extension's schema (round 14 of the outside attack: the lookup
    -- then found two and the repair failed).
    members oid[] := ARRAY(SELECT d.objid FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid
                           WHERE d.classid = 'pg_catalog.pg_operator'::pg_catalog.regclass
                             AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
                             AND e.extname = 'snowflake' AND d.deptype = 'e');
    pair    regtype[];
    st      int;
    added   int := 0;
BEGIN
    PERFORM pg_catalog.snowflake_check_schema();   -- first: before any call by the schema's name
    sf := '@extschema@.snowflake'::regtype;
    nsp := quote_ident((SELECT n.nspname FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_type t ON t.typnamespace = n.oid
                        WHERE t.oid = sf));
    FOREACH pair SLICE 1 IN ARRAY ARRAY[[sf, sf], [sf, 'bigint'], [sf, 'integer'], [sf, 'smallint'],
                                        ['bigint', sf], ['integer', sf], ['smallint', sf]]::regtype[]
    LOOP
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_amproc WHERE amprocfamily = btree AND amproclefttype = pair[1]
                       AND amprocrighttype = pair[2] AND amprocnum = 1) THEN
            EXECUTE format('ALTER OPERATOR FAMILY pg_catalog.integer_ops USING btree ADD FUNCTION 1 (%s, %s) %s.snowflake_cmp(%s, %s)',
                           pair[1], pair[2], nsp, pair[1], pair[2]);
            added := added + 1;
        END IF;
        FOR st IN 1 .. 5 LOOP
            IF NOT EXISTS (SELECT FROM pg_catalog.pg_amop WHERE amopfamily = btree AND amoplefttype = pair[1]
                           AND amoprighttype = pair[2] AND amopstrategy = st) THEN
                -- snowflake against itself: the helper operators, but the shared =
                -- (the operator by its OID: the comparisons are in pg_catalog, the helpers in
                -- the extension's schema)
                EXECUTE format('ALTER OPERATOR FAMILY pg_catalog.integer_ops USING btree ADD OPERATOR %s %s',
                               st,
                               (SELECT o.oid::regoperator::text FROM pg_catalog.pg_operator o
                                WHERE o.oprleft = pair[1] AND o.oprright = pair[2]
                                  AND o.oprnamespace IN ('pg_catalog'::regnamespace, '@extschema@'::regnamespace)
                                  AND o.oid = ANY (members)
                                  AND o.oprname = CASE WHEN pair[1] = pair[2] AND st <> 3
                                                       THEN (ARRAY['|<|', '|<=|', '', '|>=|', '|>|'])[st]
                                                       ELSE (ARRAY['<', '<=', '=', '>=', '>'])[st] END));
                added := added + 1;
            END IF;
        END LOOP;
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_amop WHERE amopfamily = hash AND amoplefttype = pair[1]
                       AND amoprighttype = pair[2] AND amopstrategy = 1) THEN
            EXECUTE format('ALTER OPERATOR FAMILY pg_catalog.integer_ops USING hash ADD OPERATOR 1 %s',
                           (SELECT o.oid::regoperator::text FROM pg_catalog.pg_operator o
                            WHERE o.oprleft = pair[1] AND o.oprright = pair[2] AND o.oprname = '='
                              AND o.oprnamespace IN ('pg_catalog'::regnamespace, '@extschema@'::regnamespace)
                              AND o.oid = ANY (members)));
            added := added + 1;
        END IF;
    END LOOP;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_amproc WHERE amprocfamily = btree AND amproclefttype = sf
                   AND amprocrighttype = sf AND amprocnum = 2) THEN
        EXECUTE format('ALTER OPERATOR FAMILY pg_catalog.integer_ops USING btree ADD FUNCTION 2 (%s, %s) %s.snowflake_sortsupport(internal)',
                       sf, sf, nsp);
        added := added + 1;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_amproc WHERE amprocfamily = hash AND amproclefttype = sf AND amprocnum = 1) THEN
        EXECUTE format('ALTER OPERATOR FAMILY pg_catalog.integer_ops USING hash ADD FUNCTION 1 %s.snowflake_hash(%s)', nsp, sf);
        added := added + 1;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_amproc WHERE amprocfamily = hash AND amproclefttype = sf AND amprocnum = 2) THEN
        EXECUTE format('ALTER OPERATOR FAMILY pg_catalog.integer_ops USING hash ADD FUNCTION 2 %s.snowflake_hash_extended(%s, bigint)',
                       nsp, sf);
        added := added + 1;
    END IF;
    RETURN added;
END
$$;

COMMENT ON FUNCTION snowflake_repair_integer_ops() IS
'adds the snowflake members of pg_catalog.integer_ops that are missing (after pg_upgrade); returns how many';
REVOKE ALL ON FUNCTION snowflake_repair_integer_ops() FROM PUBLIC;

-- The type's 42 comparisons (snowflake against snowflake, bigint, integer, smallint, both orders)
-- move to pg_catalog, as min() and max() did: nullif(id, 0) looks its = up through search_path
-- and returns its first argument as that operator takes it, so with the extension's schema off
-- search_path it found only bigint's = and returned a bigint (a JSON number).  The helper
-- operators |<| |<=| |>=| |>| stay in the extension's schema.

DO $$
DECLARE
    -- pg_catalog, pg_temp while it runs (see the schema guard at the top), put back at the end
    saved_path text := pg_catalog.current_setting('search_path');
    op regoperator;
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);   -- the move to pg_catalog
    -- Only the extension's own operators (round 14 of the outside attack: any role that may
    -- create in the extension's schema, its database's owner for one, planted =(snowflake,
    -- numeric) there, and the update moved it into pg_catalog, where a pinned search_path
    -- finds it, so that it ran as the superuser who queried).
    FOR op IN SELECT o.oid FROM pg_catalog.pg_operator o
              WHERE o.oprnamespace = '@extschema@'::regnamespace AND o.oprname IN ('=', '<>', '<', '<=', '>', '>=')
                AND '@extschema@.snowflake'::regtype IN (o.oprleft, o.oprright)
                AND EXISTS (SELECT FROM pg_catalog.pg_depend d
                            WHERE d.classid = 'pg_catalog.pg_operator'::pg_catalog.regclass AND d.objid = o.oid
                              AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
                              AND d.refobjid = (SELECT e.oid FROM pg_catalog.pg_extension e WHERE e.extname = 'snowflake')
                              AND d.deptype = 'e')
              ORDER BY o.oid
    LOOP
        EXECUTE format('ALTER OPERATOR %s SET SCHEMA pg_catalog', op);
    END LOOP;
    PERFORM pg_catalog.set_config('search_path', saved_path, true);
END
$$;

SELECT @extschema@.snowflake_repair_integer_ops();

-- Casts: integer and smallint -> snowflake become implicit (they were by assignment), so that
-- a snowflake meets integer literals the way a bigint does: coalesce(id, 0), greatest(id, 0),
-- CASE ... ELSE 0, VALUES (id), (0) and UNION with an integer column give a snowflake, and
-- id IN (1, 2, 3) is one id = ANY('{1,2,3}'::snowflake[]) (an index condition) instead of an OR
-- of three.  bigint -> snowflake becomes implicit too: then neither type converts to the other
-- "only one way", and select_common_type() keeps the first argument's type, so
-- coalesce(id, parent_id), greatest(id, b), CASE WHEN .. THEN id ELSE b END and
-- SELECT id ... UNION ALL SELECT b ... stay snowflake (JSON strings) when the snowflake comes
-- first (docs/type.md has the table).  snowflake -> numeric stays by assignment: with it implicit
-- too, id - other_id would be ambiguous (int8 - int8 or numeric - numeric).  There are no
-- comparisons with numeric or double precision either (id = 5.0 is an error, as in 1.2): with
-- integers and bigint converting implicitly to snowflake, a snowflake = numeric operator makes
-- every bigint = numeric and integer < numeric in the database ambiguous (numeric = numeric or
-- snowflake = numeric), which the regression tests showed at once.
-- A cast that is an extension member can only be dropped after leaving the extension; it is
-- created again (a member again) at once, with the same function.

ALTER EXTENSION snowflake DROP CAST (integer AS @extschema@.snowflake);
DROP CAST (integer AS @extschema@.snowflake);
CREATE CAST (integer AS @extschema@.snowflake) WITH FUNCTION @extschema@.snowflake(integer) AS IMPLICIT;
ALTER EXTENSION snowflake DROP CAST (smallint AS @extschema@.snowflake);
DROP CAST (smallint AS @extschema@.snowflake);
CREATE CAST (smallint AS @extschema@.snowflake) WITH FUNCTION @extschema@.snowflake(smallint) AS IMPLICIT;
ALTER EXTENSION snowflake DROP CAST (bigint AS @extschema@.snowflake);
DROP CAST (bigint AS @extschema@.snowflake);
CREATE CAST (bigint AS @extschema@.snowflake) WITHOUT FUNCTION AS IMPLICIT;

-- min() and max() move to pg_catalog, which is searched first whatever search_path says: with
-- the extension in a schema that is not on search_path, max(id) found only max(bigint) (through
-- the implicit cast), returned a bigint and could not use the snowflake index.

ALTER AGGREGATE @extschema@.max(@extschema@.snowflake) SET SCHEMA pg_catalog;
ALTER AGGREGATE @extschema@.min(@extschema@.snowflake) SET SCHEMA pg_catalog;

-- jsonb -> snowflake, explicit only: (doc -> 'id')::snowflake reads a JSON string of digits (the
-- type's own JSON form) or a JSON number (older payloads), as jsonb -> bigint reads a number.
-- Anything else is refused with the kind of JSON value named.

CREATE FUNCTION snowflake(doc jsonb) RETURNS @extschema@.snowflake
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog
AS $$
BEGIN
    CASE jsonb_typeof(doc)
    WHEN 'string' THEN
        RETURN (doc #>> '{}'::text[])::@extschema@.snowflake;
    WHEN 'number' THEN
        RETURN (doc::numeric)::@extschema@.snowflake;
    ELSE
        RAISE EXCEPTION 'cannot cast jsonb % to type snowflake', jsonb_typeof(doc)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A snowflake is read from a JSON string of decimal digits or from a JSON number.',
                  HINT = 'Cast the value of the key, (doc -> ''id'')::snowflake, not the object or array around it.';
    END CASE;
END
$$;

COMMENT ON FUNCTION snowflake(jsonb) IS 'the cast from jsonb (a string of digits or a number) to snowflake';

CREATE CAST (jsonb AS @extschema@.snowflake) WITH FUNCTION @extschema@.snowflake(jsonb);

-- The planner support function of the type's own inequalities: a snowflake constant on one side
-- (id < '1724551110457221119', a parameter sent untyped) becomes a bigint constant with the
-- type's (snowflake, bigint) operator, which the histogram interpolation can read (the estimate
-- hook in src/type.c covers the column's side).  Same bits, same result.

CREATE FUNCTION snowflake_support(internal) RETURNS internal
AS 'MODULE_PATHNAME', 'snowflake_support' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
ALTER FUNCTION @extschema@.snowflake_lt(@extschema@.snowflake, @extschema@.snowflake) SUPPORT @extschema@.snowflake_support;
ALTER FUNCTION @extschema@.snowflake_le(@extschema@.snowflake, @extschema@.snowflake) SUPPORT @extschema@.snowflake_support;
ALTER FUNCTION @extschema@.snowflake_ge(@extschema@.snowflake, @extschema@.snowflake) SUPPORT @extschema@.snowflake_support;
ALTER FUNCTION @extschema@.snowflake_gt(@extschema@.snowflake, @extschema@.snowflake) SUPPORT @extschema@.snowflake_support;

-- Comparisons with numeric and double precision (issue 20): id = 5.0, a numeric or
-- float8 parameter, id IN (1.0, 2.0), id BETWEEN 1.0 AND 2.5 give bigint's answers, computed as
-- bigint computes them (the snowflake as numeric, or as double precision), not index conditions
-- (bigint = numeric is none either).  Each operator is a SQL function that the planner inlines,
-- so the plan holds ((id)::bigint)::numeric = 5.0, bigint's own expression (its estimates, its
-- hash and merge joins on numeric).
-- The other side is a domain, never numeric or double precision themselves: an operator
-- (snowflake, numeric) would be a candidate, as good as numeric = numeric, for every
-- bigint = numeric and integer < numeric (integers convert to snowflake implicitly): ambiguous.
-- A domain never matches an argument exactly, so wherever numeric = numeric matches one side
-- exactly it wins, and only a snowflake (which numeric = numeric cannot take) reaches these.
-- The double precision operators take a domain over snowflake on the left too: numeric converts
-- to double precision implicitly, and id = 5.0 must find the numeric operator (one exact
-- argument) rather than tie with the double precision one.
-- They live in pg_catalog (with the type's other comparisons, below), so they are found
-- whatever search_path says.

CREATE DOMAIN snowflake_numeric_arg AS numeric;
COMMENT ON DOMAIN snowflake_numeric_arg IS 'numeric, as the other side of the snowflake comparisons with numeric';
CREATE DOMAIN snowflake_float8_arg AS double precision;
COMMENT ON DOMAIN snowflake_float8_arg IS 'double precision, as the other side of the snowflake comparisons with double precision';
CREATE DOMAIN snowflake_arg AS @extschema@.snowflake;
COMMENT ON DOMAIN snowflake_arg IS 'a snowflake, as the left side of its comparisons with double precision';

DO $$
DECLARE
    -- pg_catalog, pg_temp while it runs (see the schema guard at the top), put back at the end
    saved_path text := pg_catalog.current_setting('search_path');
    -- operator, function suffix, commutator, negator, restriction and join estimators
    ops text[] := ARRAY[['=', 'eq', '=', '<>', 'eqsel', 'eqjoinsel'],
                        ['<>', 'ne', '<>', '=', 'neqsel', 'neqjoinsel'],
                        ['<', 'lt', '>', '>=', 'scalarltsel', 'scalarltjoinsel'],
                        ['<=', 'le', '>=', '>', 'scalarlesel', 'scalarlejoinsel'],
                        ['>', 'gt', '<', '<=', 'scalargtsel', 'scalargtjoinsel'],
                        ['>=', 'ge', '<=', '<', 'scalargesel', 'scalargejoinsel']];
    -- function name prefix, left type, right type, body's left and right operands
    sides text[] := ARRAY[
        ['snowflake_numeric', '@extschema@.snowflake', '@extschema@.snowflake_numeric_arg',
         '$1::pg_catalog.int8::pg_catalog.numeric', '$2::pg_catalog.numeric'],
        ['numeric_snowflake', '@extschema@.snowflake_numeric_arg', '@extschema@.snowflake',
         '$1::pg_catalog.numeric', '$2::pg_catalog.int8::pg_catalog.numeric'],
        ['snowflake_float8', '@extschema@.snowflake_arg', '@extschema@.snowflake_float8_arg',
         '$1::pg_catalog.int8::pg_catalog.float8', '$2::pg_catalog.float8'],
        ['float8_snowflake', '@extschema@.snowflake_float8_arg', '@extschema@.snowflake_arg',
         '$1::pg_catalog.float8', '$2::pg_catalog.int8::pg_catalog.float8']];
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);   -- the comparisons with numeric and double precision
    FOR s IN 1 .. 4 LOOP
        FOR o IN 1 .. 6 LOOP
            EXECUTE format('CREATE FUNCTION @extschema@.%s_%s(%s, %s) RETURNS boolean LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE '
                           'AS %L', sides[s][1], ops[o][2], sides[s][2], sides[s][3],
                           format('SELECT %s OPERATOR(pg_catalog.%s) %s', sides[s][4], ops[o][1], sides[s][5]));
            EXECUTE format('CREATE OPERATOR pg_catalog.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = @extschema@.%s_%s, '
                           'COMMUTATOR = OPERATOR(pg_catalog.%s), NEGATOR = OPERATOR(pg_catalog.%s), '
                           'RESTRICT = pg_catalog.%s, JOIN = pg_catalog.%s)',
                           ops[o][1], sides[s][2], sides[s][3], sides[s][1], ops[o][2],
                           ops[o][3], ops[o][4], ops[o][5], ops[o][6]);
        END LOOP;
    END LOOP;
    PERFORM pg_catalog.set_config('search_path', saved_path, true);
END
$$;

-- Arithmetic with numeric, the same way: id + 1.5, id / 2.0, 0.5 * id give bigint's numeric
-- answer (the snowflake as numeric).  Both sides are domains: with a plain snowflake on the
-- left, id + 1 would tie between int8 + int4 and this operator (one exact argument each).
-- None with double precision or real: with both, id + 1.5 would tie between them.  No %:
-- bigint has no int8 % int4, so id % 7 would tie between int8 % int8 and this one (0 exact
-- arguments each); type_resolution.sql caught it.

DO $$
DECLARE
    -- pg_catalog, pg_temp while it runs (see the schema guard at the top), put back at the end
    saved_path text := pg_catalog.current_setting('search_path');
    ops text[] := ARRAY[['+', 'pl'], ['-', 'mi'], ['*', 'mul'], ['/', 'div']];
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);   -- the arithmetic with numeric
    FOR o IN 1 .. 4 LOOP
        EXECUTE format('CREATE FUNCTION @extschema@.snowflake_numeric_%s(@extschema@.snowflake_arg, @extschema@.snowflake_numeric_arg) '
                       'RETURNS numeric LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS %L', ops[o][2],
                       format('SELECT $1::pg_catalog.int8::pg_catalog.numeric OPERATOR(pg_catalog.%s) $2::pg_catalog.numeric', ops[o][1]));
        EXECUTE format('CREATE FUNCTION @extschema@.numeric_snowflake_%s(@extschema@.snowflake_numeric_arg, @extschema@.snowflake_arg) '
                       'RETURNS numeric LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS %L', ops[o][2],
                       format('SELECT $1::pg_catalog.numeric OPERATOR(pg_catalog.%s) $2::pg_catalog.int8::pg_catalog.numeric', ops[o][1]));
        EXECUTE format('CREATE OPERATOR pg_catalog.%s (LEFTARG = @extschema@.snowflake_arg, RIGHTARG = @extschema@.snowflake_numeric_arg, '
                       'FUNCTION = @extschema@.snowflake_numeric_%s)', ops[o][1], ops[o][2]);
        EXECUTE format('CREATE OPERATOR pg_catalog.%s (LEFTARG = @extschema@.snowflake_numeric_arg, RIGHTARG = @extschema@.snowflake_arg, '
                       'FUNCTION = @extschema@.numeric_snowflake_%s)', ops[o][1], ops[o][2]);
    END LOOP;
    PERFORM pg_catalog.set_config('search_path', saved_path, true);
END
$$;


-- Casts to integer, smallint, real and double precision, by assignment (bigint's are by
-- assignment or implicit): id::integer, id::double precision and INSERT of an ID into such a
-- column work as for a bigint.  Never implicit: an implicit cast to double precision would win
-- every function that also takes a bigint (abs(id) would become abs(double precision)), as
-- float8 is the preferred numeric type.

CREATE FUNCTION snowflake_int4(@extschema@.snowflake) RETURNS integer LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS 'SELECT $1::pg_catalog.int8::pg_catalog.int4';
CREATE FUNCTION snowflake_int2(@extschema@.snowflake) RETURNS smallint LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS 'SELECT $1::pg_catalog.int8::pg_catalog.int2';
CREATE FUNCTION snowflake_float4(@extschema@.snowflake) RETURNS real LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS 'SELECT $1::pg_catalog.int8::pg_catalog.float4';
CREATE FUNCTION snowflake_float8(@extschema@.snowflake) RETURNS double precision LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS 'SELECT $1::pg_catalog.int8::pg_catalog.float8';
CREATE CAST (@extschema@.snowflake AS integer) WITH FUNCTION @extschema@.snowflake_int4(@extschema@.snowflake) AS ASSIGNMENT;
CREATE CAST (@extschema@.snowflake AS smallint) WITH FUNCTION @extschema@.snowflake_int2(@extschema@.snowflake) AS ASSIGNMENT;
CREATE CAST (@extschema@.snowflake AS real) WITH FUNCTION @extschema@.snowflake_float4(@extschema@.snowflake) AS ASSIGNMENT;
CREATE CAST (@extschema@.snowflake AS double precision) WITH FUNCTION @extschema@.snowflake_float8(@extschema@.snowflake) AS ASSIGNMENT;

-- (type section: end)
