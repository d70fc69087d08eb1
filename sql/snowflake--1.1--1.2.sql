/* snowflake--1.1--1.2.sql: upgrade to 1.2 (hardening of the registry and the migration). */

\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.2'" to load this file. \quit

-- Each part below is owned by one area of the code; keep the marker lines so that work on
-- different parts merges cleanly.

-- ==== registry: node claims (src/registry.c, README "Running a fleet") ====

-- A claim counts from the commit of its transaction; a release fences the node at once and
-- ends the lease at commit.  The registry row carries each node's high-water mark
-- (high_water_ms) from one holder to the next, and claiming is safe for a superuser: the
-- registry and the code that runs on it must belong to roles the caller trusts.

DROP FUNCTION snowflake_note_claim(int, int, timestamptz);

CREATE FUNCTION snowflake_note_claim(datacenter_id int, machine_id int, until timestamptz,
                                     carried_ms bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_note_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION snowflake_note_claim(int, int, timestamptz, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_note_claim(int, int, timestamptz, bigint) IS
'internal: records a registry lease taken by snowflake_claim_node(), from the commit of this transaction, lifting the node above carried_ms at once; returns the claim''s bound (Unix ms)';

CREATE FUNCTION snowflake_note_release(datacenter_id int, machine_id int)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_note_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION snowflake_note_release(int, int) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_note_release(int, int) IS
'internal: fences the node at its last issued ms and ends its lease at commit; returns that ms (Unix ms)';

CREATE FUNCTION snowflake_check_registry(registry regclass)
RETURNS void
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    rel     record;
    trig    record;
BEGIN
    SELECT c.relkind, c.relowner, c.relowner::regrole AS owner INTO rel
    FROM pg_catalog.pg_class c WHERE c.oid = registry;
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
                  DETAIL = 'Its triggers, rules and defaults would run with the rights of the role that claims.',
                  HINT = 'Claim as the role that owns the registry (or one it belongs to), or give the registry to a role the claiming role trusts; '
                         'name the registry with its schema.';
    END IF;
    FOR trig IN
        SELECT t.tgname, p.oid::regprocedure AS func, p.proowner::regrole AS owner
        FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_proc p ON p.oid = t.tgfoid
        WHERE t.tgrelid = registry AND NOT t.tgisinternal AND t.tgenabled <> 'D'
          AND NOT (pg_catalog.pg_has_role(p.proowner, current_user, 'USAGE')
                   OR (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.oid = p.proowner))
    LOOP
        RAISE EXCEPTION 'trigger % on registry % runs function %, owned by role %, which does not have the rights of role %',
                        trig.tgname, registry, trig.func, trig.owner, current_user
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Drop or disable the trigger, or claim as a role whose rights that owner already has.';
    END LOOP;
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

COMMENT ON FUNCTION snowflake_check_registry(regclass) IS
'internal: refuses a registry whose owner or triggers the caller does not trust, or that lacks high_water_ms';

CREATE OR REPLACE FUNCTION snowflake_claim_node(registry regclass, lease interval DEFAULT '5 minutes')
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

    EXECUTE format('SELECT owner, expires_at, high_water_ms FROM ONLY %s'
                   ' WHERE datacenter_id = $1 AND machine_id = $2 FOR UPDATE', registry)
        INTO holder, holder_until, carried USING dc, m;
    GET DIAGNOSTICS n = ROW_COUNT;
    -- A row written before 1.2 names its holder as system identifier:device:inode.  It is this
    -- server when the system identifier and the inode agree (the device may have changed since).
    IF holder ~ '^[0-9]+:[0-9]+:[0-9]+$' AND split_part(holder, ':', 1) = split_part(me, ':', 1)
       AND split_part(holder, ':', 3) = split_part(me, ':', 2) THEN
        holder := me;
    END IF;
    IF n > 0 AND holder IS DISTINCT FROM me AND holder_until >= t0 THEN
        RAISE EXCEPTION 'datacenter %, machine % is claimed by another server', dc, m
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('The registry %s names %s as the holder, its lease ending %s; this server is %s.',
                                  registry, holder, holder_until, me),
                  HINT = 'Give this server its own snowflake.datacenter_id and snowflake.machine_id, '
                         'or claim again once the holder is stopped for good and its lease has ended.';
    END IF;

    -- Taking over: start above what the previous holder may have issued.  Renewing: nothing
    -- to carry (this server's own IDs are above its durable mark).
    bound := @extschema@.snowflake_note_claim(dc, m, until,
                                              CASE WHEN holder IS DISTINCT FROM me THEN carried END);

    IF n > 0 THEN
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
            EXECUTE format('SELECT owner, expires_at FROM ONLY %s WHERE datacenter_id = $1 AND machine_id = $2',
                           registry)
                INTO holder, holder_until USING dc, m;
            RAISE EXCEPTION 'datacenter %, machine % is claimed by another server', dc, m
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = format('The registry %s names %s as the holder, its lease ending %s; this server is %s.',
                                      registry, holder, holder_until, me),
                      HINT = 'Give this server its own snowflake.datacenter_id and snowflake.machine_id, '
                             'or claim again once the holder is stopped for good and its lease has ended.';
        END;
    END IF;
    RETURN until;
END
$function$;

CREATE OR REPLACE FUNCTION snowflake_release_node(registry regclass)
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
    -- Fence now (no ID past the last one), lease ended at commit, whoever the registry names.
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

-- ==== end registry ====

-- ==== migration: snowflake_migrate_column() (README "Migrating a column") ====

-- snowflake_migrate_column() gains new_type (bigint, or the extension's snowflake type) and is
-- rewritten for schemas that other roles built (issue 12).  The 1.1 signature goes: calls with
-- one or two arguments resolve to this one through its defaults.
--
-- Written in PL/pgSQL with search_path pinned to pg_catalog, pg_temp: every name it builds into
-- DDL comes from regclass/format('%I'), and our own objects are named through @extschema@.  It
-- runs in the caller's transaction (any error rolls everything back), issues DDL only and never
-- writes a system catalog.  It runs as the caller, usually a superuser, so it must never run code
-- that a less privileged role could plant or change: it creates views without running their
-- queries and hands them to their owners, fills materialized views with REFRESH (which runs the
-- query as the owner, in a security-restricted operation), reads max() with row-level security
-- off, and refuses to rewrite a table whose CHECK constraints on a changing column would run a
-- function of a less privileged role.  Everything it would lose, or cannot keep, it decides and
-- refuses before the first DDL.

DROP FUNCTION snowflake_migrate_column(regclass, name);

CREATE FUNCTION snowflake_migrate_column(tbl regclass, col name DEFAULT 'id', new_type regtype DEFAULT 'bigint')
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
    v_rowsec    text;
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
    v_last      bigint;
    v_reason    text;
    v_acls      jsonb := '{}';
    v_acl       aclitem[];
    -- the old sequences: name, last value, what becomes of them
    v_seq_names text[] := '{}';
    v_seq_last  bigint[] := '{}';
    v_seq_why   text[] := '{}';     -- why it is kept; NULL: dropped
    v_seq_link  bool[] := '{}';     -- OWNED BY this column, to be unlinked when kept
BEGIN
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
        -- Only the references may still need widening. No foreign key may be added meanwhile.
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);
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
                RAISE EXCEPTION 'col "%" of table % has a default that does not use a sequence: %', col, tbl, v_def_expr
                    USING ERRCODE = 'object_not_in_prerequisite_state',
                          HINT = 'Only serial, bigserial, identity and nextval() columns are migrated. Drop the default first to migrate this column anyway.';
            END IF;
        END IF;
        v_seqs := coalesce(v_seqs, '{}');

        -- Nothing may insert between the check below and the ALTER.
        EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl);

        -- New IDs must sort above every existing one. Read under a snapshot taken after the lock
        -- (READ COMMITTED), with row-level security off: the caller holds the owner's privileges
        -- (ALTER TABLE needs them), so either every row counts and no policy runs, or a policy
        -- forced on the owner makes this refuse.
        v_rowsec := current_setting('row_security');
        PERFORM set_config('row_security', 'off', true);
        EXECUTE format('SELECT max(%I) FROM %s', col, tbl) INTO v_max;
        PERFORM set_config('row_security', v_rowsec, true);
        v_min_new := @extschema@.snowflake_min_id(clock_timestamp());
        IF v_max >= v_min_new THEN
            RAISE EXCEPTION 'existing values of col "%" of table % are not below the IDs snowflake_next() issues now', col, tbl
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = format('The largest value is %s; IDs issued now start at %s.', v_max, v_min_new),
                      HINT = format('New IDs must sort above the existing ones. Renumber the rows, or migrate after %s, when IDs pass the largest value.',
                                    @extschema@.snowflake_timestamp(v_max));
        END IF;
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

    -- PostgreSQL cannot change the type of a partition key column.
    FOR r IN
        SELECT w.rel, w.c
        FROM unnest(w_rel, w_col) AS w(rel, c)
        JOIN pg_partitioned_table p ON p.partrelid = w.rel
        JOIN pg_attribute a ON a.attrelid = w.rel AND a.attname = w.c
        WHERE a.attnum = ANY (p.partattrs::int2[])
    LOOP
        RAISE EXCEPTION 'cannot widen column "%" of table % to %: it is part of the partition key', r.c, r.rel::regclass, v_type
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'PostgreSQL cannot change the type of a partition key column. A bigint (bigserial) key column can be migrated; otherwise create a new table keyed by bigint and copy the rows.';
    END LOOP;

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

    -- ALTER COLUMN TYPE re-checks the CHECK constraints on the column as the caller. A function
    -- in one of them that belongs to a role without the caller's privileges could do anything
    -- with them: refused. Built-in functions and those of superusers are trusted.
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
        WHERE NOT ro.rolsuper AND NOT pg_has_role(p.proowner, current_user, 'USAGE')
        ) AS ck
        ORDER BY ck.rel::text, ck.conname, ck.fn::text
        LIMIT 1
    LOOP
        RAISE EXCEPTION 'cannot change the type of a column of table %: its check constraint "%" calls %, which belongs to role %',
                        r.rel, r.conname, r.fn, pg_get_userbyid(r.proowner)
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Changing the column''s type checks the constraint again with your privileges, which would run code that role %s can change.',
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
                                       AND NOT (d.refobjid = tbl AND d.refobjsubid = v_att.attnum)))
            LIMIT 1;
            IF v_reason IS NULL THEN
                SELECT 'belongs to role ' || quote_ident(pg_get_userbyid(c.relowner)) INTO v_reason
                FROM pg_class c WHERE c.oid = c_rel AND NOT pg_has_role(current_user, c.relowner, 'USAGE');
            END IF;
        END IF;
        v_seq_names := v_seq_names || v_name;
        v_seq_last := v_seq_last || v_last;
        v_seq_why := v_seq_why || v_reason;
        v_seq_link := v_seq_link || EXISTS (
            SELECT 1 FROM pg_depend d
            WHERE d.classid = 'pg_class'::regclass AND d.objid = c_rel AND d.deptype = 'a'
              AND d.refclassid = 'pg_class'::regclass AND d.refobjid = tbl AND d.refobjsubid = v_att.attnum);
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
                                  WHEN v_pid IS NOT NULL THEN format('Drop the view in that session, or end the session (SELECT pg_terminate_backend(%s)), then migrate.', v_pid)
                                  ELSE 'Drop the view in its session, or end that session, then migrate.' END;
        END IF;

        v_views := v_views || r.name;
        v_drops := format('DROP %s %s', r.kind, r.name) || v_drops;
        -- What re-parsing may change: the column types and the functions the query calls.
        v_shapes := v_shapes || jsonb_build_object(r.name, jsonb_build_object(
            'columns', (SELECT jsonb_object_agg(a.attname, format_type(a.atttypid, a.atttypmod))
                        FROM pg_attribute a WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped),
            'functions', (SELECT coalesce(jsonb_agg(DISTINCT d.refobjid::regprocedure::text), '[]')
                          FROM pg_rewrite rw JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = rw.oid
                                                             AND d.refclassid = 'pg_proc'::regclass
                          WHERE rw.ev_class = r.oid AND rw.rulename = '_RETURN')));

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

    FOREACH v_stmt IN ARRAY v_drops LOOP
        BEGIN
            EXECUTE v_stmt;
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
        EXECUTE format('ALTER TABLE %s %s', tbl, array_to_string(v_clauses, ', '));
    END IF;

    FOR r IN
        SELECT w.rel, array_agg(format('ALTER COLUMN %I TYPE %s', w.c, v_type)
               || CASE WHEN new_type <> 'int8'::regtype THEN format(' USING %I::pg_catalog.int8::%s', w.c, v_type) ELSE '' END ORDER BY w.n) AS clauses
        FROM unnest(w_rel, w_col) WITH ORDINALITY AS w(rel, c, n)
        WHERE w.rel <> tbl
        GROUP BY w.rel
        ORDER BY min(w.n)
    LOOP
        EXECUTE format('ALTER TABLE %s %s', r.rel::regclass, array_to_string(r.clauses, ', '));
    END LOOP;

    -- The old sequences, as decided above. An identity sequence went with DROP IDENTITY. A kept
    -- sequence stops claiming the column (OWNED BY), so pg_get_serial_sequence() no longer
    -- names it.
    FOR v_i IN 1 .. cardinality(v_seqs) LOOP
        v_name := v_seq_names[v_i];
        IF v_seq_why[v_i] IS NULL THEN
            IF EXISTS (SELECT 1 FROM pg_class WHERE oid = v_seqs[v_i]) THEN
                EXECUTE format('DROP SEQUENCE %s', v_name);
            END IF;
            v_dropped := v_dropped || jsonb_build_object('sequence', v_name, 'last_value', v_seq_last[v_i]::text);
        ELSE
            IF v_seq_link[v_i] THEN
                EXECUTE format('ALTER SEQUENCE %s OWNED BY NONE', v_name);
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
                EXECUTE format('REVOKE ALL ON %s FROM %s', v_name,
                               CASE WHEN r.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(r.grantee)) END);
            END LOOP;
            FOR r IN
                SELECT x.grantee, x.privilege_type, x.is_grantable
                FROM aclexplode((v_acls ->> v_name)::aclitem[]) AS x
                ORDER BY x.grantee, x.privilege_type
            LOOP
                EXECUTE format('GRANT %s ON %s TO %s%s', r.privilege_type, v_name,
                               CASE WHEN r.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(r.grantee)) END,
                               CASE WHEN r.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
            END LOOP;
        ELSE
            EXECUTE v_stmt;
        END IF;
    END LOOP;

    -- Materialized views that held rows get them again from their query, run by REFRESH as
    -- their owner in a security-restricted operation, shallowest first. One that was never
    -- populated stays so.
    FOREACH v_name IN ARRAY v_refresh LOOP
        EXECUTE format('REFRESH MATERIALIZED VIEW %s', v_name);
    END LOOP;
    IF cardinality(v_refresh) > 0 THEN
        RAISE NOTICE 'materialized views refilled from their queries: %', array_to_string(v_refresh, ', ');
    END IF;

    -- Views are parsed again against the new types: sum(id) turns numeric, f(id) may call
    -- another f. Report each view whose columns changed to another type than the key's, or
    -- whose query calls other functions.
    FOREACH v_name IN ARRAY v_views LOOP
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
        FROM (SELECT coalesce(jsonb_agg(DISTINCT d.refobjid::regprocedure::text), '[]') AS fns
              FROM pg_rewrite rw JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = rw.oid
                                                 AND d.refclassid = 'pg_proc'::regclass
              WHERE rw.ev_class = v_name::regclass AND rw.rulename = '_RETURN') AS f;
        IF v_shape ? 'new_functions'
           OR EXISTS (SELECT 1 FROM jsonb_array_elements(v_changes) AS x WHERE x ->> 'new_type' <> format_type(new_type, NULL)) THEN
            RAISE NOTICE 'view % was parsed again and its result changed: %', v_name, v_shape;
            v_reparsed := v_reparsed || v_shape;
        END IF;
    END LOOP;

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
        'reparsed_views', v_reparsed);
END
$function$;

COMMENT ON FUNCTION snowflake_migrate_column(regclass, name, regtype) IS
'converts a serial, bigserial, identity or nextval() key column (and the integer foreign keys that reference it) to new_type (bigint, or the snowflake type) DEFAULT snowflake_next(); returns a jsonb summary';


-- ==== end migration ====

-- ==== type: the snowflake column type (README "The snowflake type") ====

-- The snowflake type: a bigint in storage (8 bytes, passed by value, aligned like int8), in
-- text and binary I/O, in comparisons and indexes, whose JSON form is a string.
--
-- Every function below is PostgreSQL's own int8 function, called by a C function of ours that
-- passes the call on unchanged (src/type.c): nothing of ours decides how a snowflake is read,
-- written, compared or hashed. (Not LANGUAGE internal aliases of the int8 functions: fmgr finds
-- an alias by a linear search of every built-in function each time it looks one up, which
-- json_agg() and to_json() do once per row, making them 9x slower.)
--
-- json_categorize_type() gives a non-built-in base type without a cast to json the category
-- "other", so to_json(), to_jsonb(), row_to_json(), json_agg() and jsonb_build_object() print its
-- output function's text as a JSON string. A domain over bigint would not do that: domains are
-- looked through to their base type.
--
-- Casts: snowflake -> bigint is binary-coercible and implicit, so every function that takes a
-- bigint (every decode function) takes a snowflake; bigint -> snowflake is binary-coercible and
-- by assignment, so INSERT ... VALUES (1724551110457221119) and DEFAULT snowflake_next() store
-- into a snowflake column. Arithmetic (id + 1) therefore gives a bigint: the type itself has
-- no arithmetic operators. Text casts are PostgreSQL's automatic I/O conversion casts.

CREATE TYPE snowflake;

CREATE FUNCTION snowflake_in(cstring) RETURNS @extschema@.snowflake
AS 'MODULE_PATHNAME', 'snowflake_int8in' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_out(@extschema@.snowflake) RETURNS cstring
AS 'MODULE_PATHNAME', 'snowflake_int8out' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_recv(internal) RETURNS @extschema@.snowflake
AS 'MODULE_PATHNAME', 'snowflake_int8recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_send(@extschema@.snowflake) RETURNS bytea
AS 'MODULE_PATHNAME', 'snowflake_int8send' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE snowflake (
    INPUT = @extschema@.snowflake_in,
    OUTPUT = @extschema@.snowflake_out,
    RECEIVE = @extschema@.snowflake_recv,
    SEND = @extschema@.snowflake_send,
    LIKE = pg_catalog.int8,
    CATEGORY = 'N'
);

COMMENT ON TYPE snowflake IS
'a Snowflake ID: a bigint whose JSON form is a string of its decimal digits';

-- Casts.

CREATE CAST (@extschema@.snowflake AS bigint) WITHOUT FUNCTION AS IMPLICIT;
CREATE CAST (bigint AS @extschema@.snowflake) WITHOUT FUNCTION AS ASSIGNMENT;

CREATE FUNCTION snowflake(integer) RETURNS @extschema@.snowflake
AS 'MODULE_PATHNAME', 'snowflake_int48' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake(smallint) RETURNS @extschema@.snowflake
AS 'MODULE_PATHNAME', 'snowflake_int28' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake(numeric) RETURNS @extschema@.snowflake
AS 'MODULE_PATHNAME', 'snowflake_numeric_int8' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_numeric(@extschema@.snowflake) RETURNS numeric
AS 'MODULE_PATHNAME', 'snowflake_int8_numeric' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;

COMMENT ON FUNCTION snowflake(integer) IS 'the cast from integer to snowflake';
COMMENT ON FUNCTION snowflake(smallint) IS 'the cast from smallint to snowflake';
COMMENT ON FUNCTION snowflake(numeric) IS 'the cast from numeric to snowflake (rounds, like numeric to bigint)';
COMMENT ON FUNCTION snowflake_numeric(@extschema@.snowflake) IS 'the cast from snowflake to numeric';

CREATE CAST (integer AS @extschema@.snowflake) WITH FUNCTION @extschema@.snowflake(integer) AS ASSIGNMENT;
CREATE CAST (smallint AS @extschema@.snowflake) WITH FUNCTION @extschema@.snowflake(smallint) AS ASSIGNMENT;
CREATE CAST (numeric AS @extschema@.snowflake) WITH FUNCTION @extschema@.snowflake(numeric) AS ASSIGNMENT;
CREATE CAST (@extschema@.snowflake AS numeric) WITH FUNCTION @extschema@.snowflake_numeric(@extschema@.snowflake) AS ASSIGNMENT;

-- Comparison functions: int8's own, one per pair of argument types.
-- LEAKPROOF like the int8 functions they wrap, so row-level security and security-barrier views
-- can still use an index on a snowflake column.

CREATE FUNCTION snowflake_eq(@extschema@.snowflake, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8eq' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_ne(@extschema@.snowflake, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8ne' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_lt(@extschema@.snowflake, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8lt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_le(@extschema@.snowflake, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8le' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_gt(@extschema@.snowflake, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8gt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_ge(@extschema@.snowflake, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8ge' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_cmp(@extschema@.snowflake, @extschema@.snowflake) RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_btint8cmp' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;

CREATE FUNCTION snowflake_eq(@extschema@.snowflake, bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8eq' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_ne(@extschema@.snowflake, bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8ne' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_lt(@extschema@.snowflake, bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8lt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_le(@extschema@.snowflake, bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8le' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_gt(@extschema@.snowflake, bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8gt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_ge(@extschema@.snowflake, bigint) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8ge' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_cmp(@extschema@.snowflake, bigint) RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_btint8cmp' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;

CREATE FUNCTION snowflake_eq(bigint, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8eq' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_ne(bigint, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8ne' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_lt(bigint, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8lt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_le(bigint, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8le' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_gt(bigint, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8gt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_ge(bigint, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int8ge' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_cmp(bigint, @extschema@.snowflake) RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_btint8cmp' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;

CREATE FUNCTION snowflake_eq(@extschema@.snowflake, integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int84eq' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_ne(@extschema@.snowflake, integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int84ne' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_lt(@extschema@.snowflake, integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int84lt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_le(@extschema@.snowflake, integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int84le' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_gt(@extschema@.snowflake, integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int84gt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_ge(@extschema@.snowflake, integer) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int84ge' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_cmp(@extschema@.snowflake, integer) RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_btint84cmp' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;

CREATE FUNCTION snowflake_eq(integer, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int48eq' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_ne(integer, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int48ne' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_lt(integer, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int48lt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_le(integer, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int48le' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_gt(integer, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int48gt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_ge(integer, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int48ge' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_cmp(integer, @extschema@.snowflake) RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_btint48cmp' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;

CREATE FUNCTION snowflake_eq(@extschema@.snowflake, smallint) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int82eq' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_ne(@extschema@.snowflake, smallint) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int82ne' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_lt(@extschema@.snowflake, smallint) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int82lt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_le(@extschema@.snowflake, smallint) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int82le' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_gt(@extschema@.snowflake, smallint) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int82gt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_ge(@extschema@.snowflake, smallint) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int82ge' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_cmp(@extschema@.snowflake, smallint) RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_btint82cmp' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;

CREATE FUNCTION snowflake_eq(smallint, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int28eq' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_ne(smallint, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int28ne' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_lt(smallint, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int28lt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_le(smallint, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int28le' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_gt(smallint, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int28gt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_ge(smallint, @extschema@.snowflake) RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_int28ge' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION snowflake_cmp(smallint, @extschema@.snowflake) RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_btint28cmp' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;

-- Operators: = <> < <= > >= between snowflake and snowflake, bigint, integer, smallint (both
-- orders), so that comparisons with integer values and literals need no cast and use an index.
-- No arithmetic operators.

CREATE OPERATOR = (
    LEFTARG = @extschema@.snowflake, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_eq,
    COMMUTATOR = OPERATOR(@extschema@.=), NEGATOR = OPERATOR(@extschema@.<>),
    RESTRICT = pg_catalog.eqsel, JOIN = pg_catalog.eqjoinsel, HASHES, MERGES);
CREATE OPERATOR <> (
    LEFTARG = @extschema@.snowflake, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_ne,
    COMMUTATOR = OPERATOR(@extschema@.<>), NEGATOR = OPERATOR(@extschema@.=),
    RESTRICT = pg_catalog.neqsel, JOIN = pg_catalog.neqjoinsel);
CREATE OPERATOR < (
    LEFTARG = @extschema@.snowflake, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_lt,
    COMMUTATOR = OPERATOR(@extschema@.>), NEGATOR = OPERATOR(@extschema@.>=),
    RESTRICT = pg_catalog.scalarltsel, JOIN = pg_catalog.scalarltjoinsel);
CREATE OPERATOR <= (
    LEFTARG = @extschema@.snowflake, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_le,
    COMMUTATOR = OPERATOR(@extschema@.>=), NEGATOR = OPERATOR(@extschema@.>),
    RESTRICT = pg_catalog.scalarlesel, JOIN = pg_catalog.scalarlejoinsel);
CREATE OPERATOR > (
    LEFTARG = @extschema@.snowflake, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_gt,
    COMMUTATOR = OPERATOR(@extschema@.<), NEGATOR = OPERATOR(@extschema@.<=),
    RESTRICT = pg_catalog.scalargtsel, JOIN = pg_catalog.scalargtjoinsel);
CREATE OPERATOR >= (
    LEFTARG = @extschema@.snowflake, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_ge,
    COMMUTATOR = OPERATOR(@extschema@.<=), NEGATOR = OPERATOR(@extschema@.<),
    RESTRICT = pg_catalog.scalargesel, JOIN = pg_catalog.scalargejoinsel);

CREATE OPERATOR = (
    LEFTARG = @extschema@.snowflake, RIGHTARG = bigint, FUNCTION = snowflake_eq,
    COMMUTATOR = OPERATOR(@extschema@.=), NEGATOR = OPERATOR(@extschema@.<>),
    RESTRICT = pg_catalog.eqsel, JOIN = pg_catalog.eqjoinsel, HASHES, MERGES);
CREATE OPERATOR <> (
    LEFTARG = @extschema@.snowflake, RIGHTARG = bigint, FUNCTION = snowflake_ne,
    COMMUTATOR = OPERATOR(@extschema@.<>), NEGATOR = OPERATOR(@extschema@.=),
    RESTRICT = pg_catalog.neqsel, JOIN = pg_catalog.neqjoinsel);
CREATE OPERATOR < (
    LEFTARG = @extschema@.snowflake, RIGHTARG = bigint, FUNCTION = snowflake_lt,
    COMMUTATOR = OPERATOR(@extschema@.>), NEGATOR = OPERATOR(@extschema@.>=),
    RESTRICT = pg_catalog.scalarltsel, JOIN = pg_catalog.scalarltjoinsel);
CREATE OPERATOR <= (
    LEFTARG = @extschema@.snowflake, RIGHTARG = bigint, FUNCTION = snowflake_le,
    COMMUTATOR = OPERATOR(@extschema@.>=), NEGATOR = OPERATOR(@extschema@.>),
    RESTRICT = pg_catalog.scalarlesel, JOIN = pg_catalog.scalarlejoinsel);
CREATE OPERATOR > (
    LEFTARG = @extschema@.snowflake, RIGHTARG = bigint, FUNCTION = snowflake_gt,
    COMMUTATOR = OPERATOR(@extschema@.<), NEGATOR = OPERATOR(@extschema@.<=),
    RESTRICT = pg_catalog.scalargtsel, JOIN = pg_catalog.scalargtjoinsel);
CREATE OPERATOR >= (
    LEFTARG = @extschema@.snowflake, RIGHTARG = bigint, FUNCTION = snowflake_ge,
    COMMUTATOR = OPERATOR(@extschema@.<=), NEGATOR = OPERATOR(@extschema@.<),
    RESTRICT = pg_catalog.scalargesel, JOIN = pg_catalog.scalargejoinsel);

CREATE OPERATOR = (
    LEFTARG = bigint, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_eq,
    COMMUTATOR = OPERATOR(@extschema@.=), NEGATOR = OPERATOR(@extschema@.<>),
    RESTRICT = pg_catalog.eqsel, JOIN = pg_catalog.eqjoinsel, HASHES, MERGES);
CREATE OPERATOR <> (
    LEFTARG = bigint, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_ne,
    COMMUTATOR = OPERATOR(@extschema@.<>), NEGATOR = OPERATOR(@extschema@.=),
    RESTRICT = pg_catalog.neqsel, JOIN = pg_catalog.neqjoinsel);
CREATE OPERATOR < (
    LEFTARG = bigint, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_lt,
    COMMUTATOR = OPERATOR(@extschema@.>), NEGATOR = OPERATOR(@extschema@.>=),
    RESTRICT = pg_catalog.scalarltsel, JOIN = pg_catalog.scalarltjoinsel);
CREATE OPERATOR <= (
    LEFTARG = bigint, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_le,
    COMMUTATOR = OPERATOR(@extschema@.>=), NEGATOR = OPERATOR(@extschema@.>),
    RESTRICT = pg_catalog.scalarlesel, JOIN = pg_catalog.scalarlejoinsel);
CREATE OPERATOR > (
    LEFTARG = bigint, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_gt,
    COMMUTATOR = OPERATOR(@extschema@.<), NEGATOR = OPERATOR(@extschema@.<=),
    RESTRICT = pg_catalog.scalargtsel, JOIN = pg_catalog.scalargtjoinsel);
CREATE OPERATOR >= (
    LEFTARG = bigint, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_ge,
    COMMUTATOR = OPERATOR(@extschema@.<=), NEGATOR = OPERATOR(@extschema@.<),
    RESTRICT = pg_catalog.scalargesel, JOIN = pg_catalog.scalargejoinsel);

CREATE OPERATOR = (
    LEFTARG = @extschema@.snowflake, RIGHTARG = integer, FUNCTION = snowflake_eq,
    COMMUTATOR = OPERATOR(@extschema@.=), NEGATOR = OPERATOR(@extschema@.<>),
    RESTRICT = pg_catalog.eqsel, JOIN = pg_catalog.eqjoinsel, HASHES, MERGES);
CREATE OPERATOR <> (
    LEFTARG = @extschema@.snowflake, RIGHTARG = integer, FUNCTION = snowflake_ne,
    COMMUTATOR = OPERATOR(@extschema@.<>), NEGATOR = OPERATOR(@extschema@.=),
    RESTRICT = pg_catalog.neqsel, JOIN = pg_catalog.neqjoinsel);
CREATE OPERATOR < (
    LEFTARG = @extschema@.snowflake, RIGHTARG = integer, FUNCTION = snowflake_lt,
    COMMUTATOR = OPERATOR(@extschema@.>), NEGATOR = OPERATOR(@extschema@.>=),
    RESTRICT = pg_catalog.scalarltsel, JOIN = pg_catalog.scalarltjoinsel);
CREATE OPERATOR <= (
    LEFTARG = @extschema@.snowflake, RIGHTARG = integer, FUNCTION = snowflake_le,
    COMMUTATOR = OPERATOR(@extschema@.>=), NEGATOR = OPERATOR(@extschema@.>),
    RESTRICT = pg_catalog.scalarlesel, JOIN = pg_catalog.scalarlejoinsel);
CREATE OPERATOR > (
    LEFTARG = @extschema@.snowflake, RIGHTARG = integer, FUNCTION = snowflake_gt,
    COMMUTATOR = OPERATOR(@extschema@.<), NEGATOR = OPERATOR(@extschema@.<=),
    RESTRICT = pg_catalog.scalargtsel, JOIN = pg_catalog.scalargtjoinsel);
CREATE OPERATOR >= (
    LEFTARG = @extschema@.snowflake, RIGHTARG = integer, FUNCTION = snowflake_ge,
    COMMUTATOR = OPERATOR(@extschema@.<=), NEGATOR = OPERATOR(@extschema@.<),
    RESTRICT = pg_catalog.scalargesel, JOIN = pg_catalog.scalargejoinsel);

CREATE OPERATOR = (
    LEFTARG = integer, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_eq,
    COMMUTATOR = OPERATOR(@extschema@.=), NEGATOR = OPERATOR(@extschema@.<>),
    RESTRICT = pg_catalog.eqsel, JOIN = pg_catalog.eqjoinsel, HASHES, MERGES);
CREATE OPERATOR <> (
    LEFTARG = integer, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_ne,
    COMMUTATOR = OPERATOR(@extschema@.<>), NEGATOR = OPERATOR(@extschema@.=),
    RESTRICT = pg_catalog.neqsel, JOIN = pg_catalog.neqjoinsel);
CREATE OPERATOR < (
    LEFTARG = integer, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_lt,
    COMMUTATOR = OPERATOR(@extschema@.>), NEGATOR = OPERATOR(@extschema@.>=),
    RESTRICT = pg_catalog.scalarltsel, JOIN = pg_catalog.scalarltjoinsel);
CREATE OPERATOR <= (
    LEFTARG = integer, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_le,
    COMMUTATOR = OPERATOR(@extschema@.>=), NEGATOR = OPERATOR(@extschema@.>),
    RESTRICT = pg_catalog.scalarlesel, JOIN = pg_catalog.scalarlejoinsel);
CREATE OPERATOR > (
    LEFTARG = integer, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_gt,
    COMMUTATOR = OPERATOR(@extschema@.<), NEGATOR = OPERATOR(@extschema@.<=),
    RESTRICT = pg_catalog.scalargtsel, JOIN = pg_catalog.scalargtjoinsel);
CREATE OPERATOR >= (
    LEFTARG = integer, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_ge,
    COMMUTATOR = OPERATOR(@extschema@.<=), NEGATOR = OPERATOR(@extschema@.<),
    RESTRICT = pg_catalog.scalargesel, JOIN = pg_catalog.scalargejoinsel);

CREATE OPERATOR = (
    LEFTARG = @extschema@.snowflake, RIGHTARG = smallint, FUNCTION = snowflake_eq,
    COMMUTATOR = OPERATOR(@extschema@.=), NEGATOR = OPERATOR(@extschema@.<>),
    RESTRICT = pg_catalog.eqsel, JOIN = pg_catalog.eqjoinsel, HASHES, MERGES);
CREATE OPERATOR <> (
    LEFTARG = @extschema@.snowflake, RIGHTARG = smallint, FUNCTION = snowflake_ne,
    COMMUTATOR = OPERATOR(@extschema@.<>), NEGATOR = OPERATOR(@extschema@.=),
    RESTRICT = pg_catalog.neqsel, JOIN = pg_catalog.neqjoinsel);
CREATE OPERATOR < (
    LEFTARG = @extschema@.snowflake, RIGHTARG = smallint, FUNCTION = snowflake_lt,
    COMMUTATOR = OPERATOR(@extschema@.>), NEGATOR = OPERATOR(@extschema@.>=),
    RESTRICT = pg_catalog.scalarltsel, JOIN = pg_catalog.scalarltjoinsel);
CREATE OPERATOR <= (
    LEFTARG = @extschema@.snowflake, RIGHTARG = smallint, FUNCTION = snowflake_le,
    COMMUTATOR = OPERATOR(@extschema@.>=), NEGATOR = OPERATOR(@extschema@.>),
    RESTRICT = pg_catalog.scalarlesel, JOIN = pg_catalog.scalarlejoinsel);
CREATE OPERATOR > (
    LEFTARG = @extschema@.snowflake, RIGHTARG = smallint, FUNCTION = snowflake_gt,
    COMMUTATOR = OPERATOR(@extschema@.<), NEGATOR = OPERATOR(@extschema@.<=),
    RESTRICT = pg_catalog.scalargtsel, JOIN = pg_catalog.scalargtjoinsel);
CREATE OPERATOR >= (
    LEFTARG = @extschema@.snowflake, RIGHTARG = smallint, FUNCTION = snowflake_ge,
    COMMUTATOR = OPERATOR(@extschema@.<=), NEGATOR = OPERATOR(@extschema@.<),
    RESTRICT = pg_catalog.scalargesel, JOIN = pg_catalog.scalargejoinsel);

CREATE OPERATOR = (
    LEFTARG = smallint, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_eq,
    COMMUTATOR = OPERATOR(@extschema@.=), NEGATOR = OPERATOR(@extschema@.<>),
    RESTRICT = pg_catalog.eqsel, JOIN = pg_catalog.eqjoinsel, HASHES, MERGES);
CREATE OPERATOR <> (
    LEFTARG = smallint, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_ne,
    COMMUTATOR = OPERATOR(@extschema@.<>), NEGATOR = OPERATOR(@extschema@.=),
    RESTRICT = pg_catalog.neqsel, JOIN = pg_catalog.neqjoinsel);
CREATE OPERATOR < (
    LEFTARG = smallint, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_lt,
    COMMUTATOR = OPERATOR(@extschema@.>), NEGATOR = OPERATOR(@extschema@.>=),
    RESTRICT = pg_catalog.scalarltsel, JOIN = pg_catalog.scalarltjoinsel);
CREATE OPERATOR <= (
    LEFTARG = smallint, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_le,
    COMMUTATOR = OPERATOR(@extschema@.>=), NEGATOR = OPERATOR(@extschema@.>),
    RESTRICT = pg_catalog.scalarlesel, JOIN = pg_catalog.scalarlejoinsel);
CREATE OPERATOR > (
    LEFTARG = smallint, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_gt,
    COMMUTATOR = OPERATOR(@extschema@.<), NEGATOR = OPERATOR(@extschema@.<=),
    RESTRICT = pg_catalog.scalargtsel, JOIN = pg_catalog.scalargtjoinsel);
CREATE OPERATOR >= (
    LEFTARG = smallint, RIGHTARG = @extschema@.snowflake, FUNCTION = snowflake_ge,
    COMMUTATOR = OPERATOR(@extschema@.<=), NEGATOR = OPERATOR(@extschema@.<),
    RESTRICT = pg_catalog.scalargesel, JOIN = pg_catalog.scalargejoinsel);

-- Support functions of the operator classes.

CREATE FUNCTION snowflake_sortsupport(internal) RETURNS void
AS 'MODULE_PATHNAME', 'snowflake_btint8sortsupport' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_hash(@extschema@.snowflake) RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_hashint8' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_hash_extended(@extschema@.snowflake, bigint) RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_hashint8extended' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- btree: one family for snowflake, bigint, integer and smallint. It holds PostgreSQL's own
-- integer operators too, so that it is complete (amvalidate), a foreign key from a bigint column
-- to a snowflake key finds its equality operators, and merge joins and derived equalities
-- between the types work.

CREATE OPERATOR FAMILY snowflake_ops USING btree;

CREATE OPERATOR CLASS snowflake_ops
DEFAULT FOR TYPE @extschema@.snowflake USING btree FAMILY @extschema@.snowflake_ops AS
    OPERATOR 1 @extschema@.< ,
    OPERATOR 2 @extschema@.<= ,
    OPERATOR 3 @extschema@.= ,
    OPERATOR 4 @extschema@.>= ,
    OPERATOR 5 @extschema@.> ,
    FUNCTION 1 @extschema@.snowflake_cmp(@extschema@.snowflake, @extschema@.snowflake),
    FUNCTION 2 @extschema@.snowflake_sortsupport(internal),
    FUNCTION 4 pg_catalog.btequalimage(oid);

ALTER OPERATOR FAMILY snowflake_ops USING btree ADD
    OPERATOR 1 @extschema@.< (@extschema@.snowflake, bigint),
    OPERATOR 2 @extschema@.<= (@extschema@.snowflake, bigint),
    OPERATOR 3 @extschema@.= (@extschema@.snowflake, bigint),
    OPERATOR 4 @extschema@.>= (@extschema@.snowflake, bigint),
    OPERATOR 5 @extschema@.> (@extschema@.snowflake, bigint),
    FUNCTION 1 @extschema@.snowflake_cmp(@extschema@.snowflake, bigint),
    OPERATOR 1 @extschema@.< (@extschema@.snowflake, integer),
    OPERATOR 2 @extschema@.<= (@extschema@.snowflake, integer),
    OPERATOR 3 @extschema@.= (@extschema@.snowflake, integer),
    OPERATOR 4 @extschema@.>= (@extschema@.snowflake, integer),
    OPERATOR 5 @extschema@.> (@extschema@.snowflake, integer),
    FUNCTION 1 @extschema@.snowflake_cmp(@extschema@.snowflake, integer),
    OPERATOR 1 @extschema@.< (@extschema@.snowflake, smallint),
    OPERATOR 2 @extschema@.<= (@extschema@.snowflake, smallint),
    OPERATOR 3 @extschema@.= (@extschema@.snowflake, smallint),
    OPERATOR 4 @extschema@.>= (@extschema@.snowflake, smallint),
    OPERATOR 5 @extschema@.> (@extschema@.snowflake, smallint),
    FUNCTION 1 @extschema@.snowflake_cmp(@extschema@.snowflake, smallint),
    OPERATOR 1 @extschema@.< (bigint, @extschema@.snowflake),
    OPERATOR 2 @extschema@.<= (bigint, @extschema@.snowflake),
    OPERATOR 3 @extschema@.= (bigint, @extschema@.snowflake),
    OPERATOR 4 @extschema@.>= (bigint, @extschema@.snowflake),
    OPERATOR 5 @extschema@.> (bigint, @extschema@.snowflake),
    FUNCTION 1 @extschema@.snowflake_cmp(bigint, @extschema@.snowflake),
    OPERATOR 1 pg_catalog.< (bigint, bigint),
    OPERATOR 2 pg_catalog.<= (bigint, bigint),
    OPERATOR 3 pg_catalog.= (bigint, bigint),
    OPERATOR 4 pg_catalog.>= (bigint, bigint),
    OPERATOR 5 pg_catalog.> (bigint, bigint),
    FUNCTION 1 pg_catalog.btint8cmp(bigint, bigint),
    FUNCTION 2 (bigint, bigint) pg_catalog.btint8sortsupport(internal),
    OPERATOR 1 pg_catalog.< (bigint, integer),
    OPERATOR 2 pg_catalog.<= (bigint, integer),
    OPERATOR 3 pg_catalog.= (bigint, integer),
    OPERATOR 4 pg_catalog.>= (bigint, integer),
    OPERATOR 5 pg_catalog.> (bigint, integer),
    FUNCTION 1 pg_catalog.btint84cmp(bigint, integer),
    OPERATOR 1 pg_catalog.< (bigint, smallint),
    OPERATOR 2 pg_catalog.<= (bigint, smallint),
    OPERATOR 3 pg_catalog.= (bigint, smallint),
    OPERATOR 4 pg_catalog.>= (bigint, smallint),
    OPERATOR 5 pg_catalog.> (bigint, smallint),
    FUNCTION 1 pg_catalog.btint82cmp(bigint, smallint),
    OPERATOR 1 @extschema@.< (integer, @extschema@.snowflake),
    OPERATOR 2 @extschema@.<= (integer, @extschema@.snowflake),
    OPERATOR 3 @extschema@.= (integer, @extschema@.snowflake),
    OPERATOR 4 @extschema@.>= (integer, @extschema@.snowflake),
    OPERATOR 5 @extschema@.> (integer, @extschema@.snowflake),
    FUNCTION 1 @extschema@.snowflake_cmp(integer, @extschema@.snowflake),
    OPERATOR 1 pg_catalog.< (integer, bigint),
    OPERATOR 2 pg_catalog.<= (integer, bigint),
    OPERATOR 3 pg_catalog.= (integer, bigint),
    OPERATOR 4 pg_catalog.>= (integer, bigint),
    OPERATOR 5 pg_catalog.> (integer, bigint),
    FUNCTION 1 pg_catalog.btint48cmp(integer, bigint),
    OPERATOR 1 pg_catalog.< (integer, integer),
    OPERATOR 2 pg_catalog.<= (integer, integer),
    OPERATOR 3 pg_catalog.= (integer, integer),
    OPERATOR 4 pg_catalog.>= (integer, integer),
    OPERATOR 5 pg_catalog.> (integer, integer),
    FUNCTION 1 pg_catalog.btint4cmp(integer, integer),
    FUNCTION 2 (integer, integer) pg_catalog.btint4sortsupport(internal),
    OPERATOR 1 pg_catalog.< (integer, smallint),
    OPERATOR 2 pg_catalog.<= (integer, smallint),
    OPERATOR 3 pg_catalog.= (integer, smallint),
    OPERATOR 4 pg_catalog.>= (integer, smallint),
    OPERATOR 5 pg_catalog.> (integer, smallint),
    FUNCTION 1 pg_catalog.btint42cmp(integer, smallint),
    OPERATOR 1 @extschema@.< (smallint, @extschema@.snowflake),
    OPERATOR 2 @extschema@.<= (smallint, @extschema@.snowflake),
    OPERATOR 3 @extschema@.= (smallint, @extschema@.snowflake),
    OPERATOR 4 @extschema@.>= (smallint, @extschema@.snowflake),
    OPERATOR 5 @extschema@.> (smallint, @extschema@.snowflake),
    FUNCTION 1 @extschema@.snowflake_cmp(smallint, @extschema@.snowflake),
    OPERATOR 1 pg_catalog.< (smallint, bigint),
    OPERATOR 2 pg_catalog.<= (smallint, bigint),
    OPERATOR 3 pg_catalog.= (smallint, bigint),
    OPERATOR 4 pg_catalog.>= (smallint, bigint),
    OPERATOR 5 pg_catalog.> (smallint, bigint),
    FUNCTION 1 pg_catalog.btint28cmp(smallint, bigint),
    OPERATOR 1 pg_catalog.< (smallint, integer),
    OPERATOR 2 pg_catalog.<= (smallint, integer),
    OPERATOR 3 pg_catalog.= (smallint, integer),
    OPERATOR 4 pg_catalog.>= (smallint, integer),
    OPERATOR 5 pg_catalog.> (smallint, integer),
    FUNCTION 1 pg_catalog.btint24cmp(smallint, integer),
    OPERATOR 1 pg_catalog.< (smallint, smallint),
    OPERATOR 2 pg_catalog.<= (smallint, smallint),
    OPERATOR 3 pg_catalog.= (smallint, smallint),
    OPERATOR 4 pg_catalog.>= (smallint, smallint),
    OPERATOR 5 pg_catalog.> (smallint, smallint),
    FUNCTION 1 pg_catalog.btint2cmp(smallint, smallint),
    FUNCTION 2 (smallint, smallint) pg_catalog.btint2sortsupport(internal);

-- hash: the same types, with hash functions that agree on equal values (hashint8 is what
-- hashint4 and hashint2 compute for the same number), so hash joins between a snowflake and a
-- bigint column work.

CREATE OPERATOR FAMILY snowflake_ops USING hash;

CREATE OPERATOR CLASS snowflake_ops
DEFAULT FOR TYPE @extschema@.snowflake USING hash FAMILY @extschema@.snowflake_ops AS
    OPERATOR 1 @extschema@.= ,
    FUNCTION 1 @extschema@.snowflake_hash(@extschema@.snowflake),
    FUNCTION 2 @extschema@.snowflake_hash_extended(@extschema@.snowflake, bigint);

ALTER OPERATOR FAMILY snowflake_ops USING hash ADD
    FUNCTION 1 pg_catalog.hashint8(bigint),
    FUNCTION 2 pg_catalog.hashint8extended(bigint, bigint),
    FUNCTION 1 pg_catalog.hashint4(integer),
    FUNCTION 2 pg_catalog.hashint4extended(integer, bigint),
    FUNCTION 1 pg_catalog.hashint2(smallint),
    FUNCTION 2 pg_catalog.hashint2extended(smallint, bigint),
    OPERATOR 1 @extschema@.= (@extschema@.snowflake, bigint),
    OPERATOR 1 @extschema@.= (@extschema@.snowflake, integer),
    OPERATOR 1 @extschema@.= (@extschema@.snowflake, smallint),
    OPERATOR 1 @extschema@.= (bigint, @extschema@.snowflake),
    OPERATOR 1 pg_catalog.= (bigint, bigint),
    OPERATOR 1 pg_catalog.= (bigint, integer),
    OPERATOR 1 pg_catalog.= (bigint, smallint),
    OPERATOR 1 @extschema@.= (integer, @extschema@.snowflake),
    OPERATOR 1 pg_catalog.= (integer, bigint),
    OPERATOR 1 pg_catalog.= (integer, integer),
    OPERATOR 1 pg_catalog.= (integer, smallint),
    OPERATOR 1 @extschema@.= (smallint, @extschema@.snowflake),
    OPERATOR 1 pg_catalog.= (smallint, bigint),
    OPERATOR 1 pg_catalog.= (smallint, integer),
    OPERATOR 1 pg_catalog.= (smallint, smallint);

-- BRIN minmax, with the cross-type comparisons, so that id BETWEEN snowflake_min_id(a) AND
-- snowflake_max_id(b) can use a BRIN index on an append-only table.

CREATE OPERATOR FAMILY snowflake_minmax_ops USING brin;

CREATE OPERATOR CLASS snowflake_minmax_ops
DEFAULT FOR TYPE @extschema@.snowflake USING brin FAMILY @extschema@.snowflake_minmax_ops AS
    OPERATOR 1 @extschema@.< ,
    OPERATOR 2 @extschema@.<= ,
    OPERATOR 3 @extschema@.= ,
    OPERATOR 4 @extschema@.>= ,
    OPERATOR 5 @extschema@.> ,
    FUNCTION 1 pg_catalog.brin_minmax_opcinfo(internal),
    FUNCTION 2 pg_catalog.brin_minmax_add_value(internal, internal, internal, internal),
    FUNCTION 3 pg_catalog.brin_minmax_consistent(internal, internal, internal),
    FUNCTION 4 pg_catalog.brin_minmax_union(internal, internal, internal);

ALTER OPERATOR FAMILY snowflake_minmax_ops USING brin ADD
    OPERATOR 1 @extschema@.< (@extschema@.snowflake, bigint),
    OPERATOR 2 @extschema@.<= (@extschema@.snowflake, bigint),
    OPERATOR 3 @extschema@.= (@extschema@.snowflake, bigint),
    OPERATOR 4 @extschema@.>= (@extschema@.snowflake, bigint),
    OPERATOR 5 @extschema@.> (@extschema@.snowflake, bigint),
    OPERATOR 1 @extschema@.< (@extschema@.snowflake, integer),
    OPERATOR 2 @extschema@.<= (@extschema@.snowflake, integer),
    OPERATOR 3 @extschema@.= (@extschema@.snowflake, integer),
    OPERATOR 4 @extschema@.>= (@extschema@.snowflake, integer),
    OPERATOR 5 @extschema@.> (@extschema@.snowflake, integer),
    OPERATOR 1 @extschema@.< (@extschema@.snowflake, smallint),
    OPERATOR 2 @extschema@.<= (@extschema@.snowflake, smallint),
    OPERATOR 3 @extschema@.= (@extschema@.snowflake, smallint),
    OPERATOR 4 @extschema@.>= (@extschema@.snowflake, smallint),
    OPERATOR 5 @extschema@.> (@extschema@.snowflake, smallint);

-- min() and max() that return a snowflake (and use a btree index), so their JSON is a string too.

CREATE FUNCTION snowflake_larger(@extschema@.snowflake, @extschema@.snowflake) RETURNS @extschema@.snowflake
AS 'MODULE_PATHNAME', 'snowflake_int8larger' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_smaller(@extschema@.snowflake, @extschema@.snowflake) RETURNS @extschema@.snowflake
AS 'MODULE_PATHNAME', 'snowflake_int8smaller' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE AGGREGATE max(@extschema@.snowflake) (
    SFUNC = @extschema@.snowflake_larger, STYPE = @extschema@.snowflake,
    COMBINEFUNC = @extschema@.snowflake_larger, SORTOP = OPERATOR(@extschema@.>), PARALLEL = SAFE);
CREATE AGGREGATE min(@extschema@.snowflake) (
    SFUNC = @extschema@.snowflake_smaller, STYPE = @extschema@.snowflake,
    COMBINEFUNC = @extschema@.snowflake_smaller, SORTOP = OPERATOR(@extschema@.<), PARALLEL = SAFE);

COMMENT ON AGGREGATE max(@extschema@.snowflake) IS 'the largest snowflake';
COMMENT ON AGGREGATE min(@extschema@.snowflake) IS 'the smallest snowflake';


-- ==== end type ====

-- ==== clock: clock health (README "Monitoring") ====

-- snowflake_status() gains the clock's health: how far the wall clock is from the last ID's ms,
-- the largest forward step of the clock seen, and whether generation is held for a forward jump.
-- Its row gains columns, so it is dropped and created again (nothing of the extension depends on
-- it; a user's view over it must be dropped before the update and created again after).
DROP FUNCTION snowflake_status();

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
    OUT reserved_until timestamptz,
    OUT clock_offset_ms bigint,
    OUT max_clock_jump_ms bigint,
    OUT clock_held boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'snowflake_status'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_status() IS
'one row per node slot that issued or refused since the server started: last ID, clock rollbacks, waits, refusals, durable reservation end, the wall clock''s offset from the last ID (ms), the largest forward clock step seen (ms) and whether generation is held for a forward jump';

-- An operator accepts the wall clock as it is now, after a forward jump held generation.
-- Superusers only: it lets IDs carry the new time.  A superuser may GRANT it to an operator role.
CREATE FUNCTION snowflake_accept_clock()
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_accept_clock'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION snowflake_accept_clock() FROM PUBLIC;

COMMENT ON FUNCTION snowflake_accept_clock() IS
'accept the wall clock as it is now, ending a hold of generation for a forward jump; returns how many ms the trusted time moved forward';

-- ==== end clock ====

-- ==== mark: the durable mark and its writer (src/mark.c, README "Monitoring") ====

-- snowflake_state() reports how the reservation writer's writes go. Its row gains columns,
-- so it is dropped and created again (nothing of the extension depends on it).
DROP FUNCTION snowflake_state();

CREATE FUNCTION snowflake_state(
    OUT state text,
    OUT detail text,
    OUT reserved_until timestamptz,
    OUT owner_directory text,
    OUT this_directory text,
    OUT worker_running boolean,
    OUT mark_writes bigint,
    OUT mark_write_failures bigint,
    OUT caller_writes bigint,
    OUT slowest_recent_write_ms double precision,
    OUT write_in_progress_ms double precision)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_state'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_state() IS
'the durable state: ok, damaged or copy (and why), the durable mark, the owning and this data directory (inode:birth time), whether the reservation writer runs, its writes, failures, writes callers had to make, its recent slowest write and how long the current one has run';

-- ==== end mark ====
