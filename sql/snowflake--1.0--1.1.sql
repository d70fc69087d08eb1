/* snowflake--1.0--1.1.sql: upgrade to 1.1: snowflake_migrate_column() and snowflake_format() */

\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.1'" to load this file. \quit

-- Migration of a serial, bigserial, identity or nextval()-keyed column to Snowflake IDs.
--
-- Written in PL/pgSQL with search_path pinned to pg_catalog, pg_temp: every name it builds
-- into DDL comes from regclass/format('%I'), and our own functions are called through
-- @extschema@. It issues DDL only (ALTER TABLE, DROP/CREATE VIEW, DROP SEQUENCE, GRANT, ...)
-- and never writes a system catalog. It runs in the caller's transaction: any error rolls
-- everything back.

CREATE FUNCTION snowflake_migrate_column(tbl regclass, col name DEFAULT 'id')
RETURNS jsonb
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    sf_default  text := '@extschema@.snowflake_next()';
    sf_call     text;       -- how pg_get_expr() shows sf_default
    v_kind      "char";
    v_ispart    bool;
    v_att       record;
    v_def_oid   oid;
    v_def_expr  text;
    v_identity  text;
    v_old_type  text;
    v_seqs      oid[] := '{}';
    v_max       bigint;
    v_min_new   bigint;
    v_root      regclass;
    -- columns to widen: parallel arrays (relation, column name)
    w_rel       oid[] := '{}';
    w_col       name[] := '{}';
    q_rel       oid[];
    q_col       name[];
    c_rel       oid;
    c_col       name;
    r           record;
    v_i         int;
    -- all (relation, attnum) pairs whose type changes, descendants included
    t_rel       oid[] := '{}';
    t_att       int2[] := '{}';
    -- dependent views
    v_views     text[] := '{}';
    v_drops     text[] := '{}';
    v_redo      text[] := '{}';
    v_name      text;
    v_stmt      text;
    v_clauses   text[];
    v_widened   jsonb := '[]';
    v_dropped   jsonb := '[]';
    v_kept      jsonb := '[]';
    v_last      bigint;
    v_reason    text;
    v_acls      jsonb := '{}';
    v_acl       aclitem[];
    v_seq_names text[] := '{}';
    v_seq_last  bigint[] := '{}';
BEGIN
    IF tbl IS NULL THEN
        RAISE EXCEPTION 'tbl must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF col IS NULL THEN
        RAISE EXCEPTION 'col must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;

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
    IF v_att.atttypid NOT IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype) THEN
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
    v_old_type := format_type(v_att.atttypid, NULL);

    SELECT d.oid, pg_get_expr(d.adbin, d.adrelid) INTO v_def_oid, v_def_expr
    FROM pg_attrdef d WHERE d.adrelid = tbl AND d.adnum = v_att.attnum;

    -- With search_path = pg_catalog, pg_temp, pg_get_expr() schema-qualifies our function.
    sf_call := ('@extschema@.snowflake_next()'::regprocedure)::text;

    IF v_att.atttypid = 'int8'::regtype AND v_att.attidentity = '' AND v_def_expr = sf_call THEN
        RAISE NOTICE 'column "%" of table % already takes its default from snowflake_next(); nothing to do', col, tbl;
        RETURN jsonb_build_object('table', tbl::text, 'column', col, 'changed', false);
    END IF;

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

    -- Names and last values of the old sequences, while they exist.
    SELECT coalesce(array_agg(c.oid::regclass::text ORDER BY u.n), '{}'),
           coalesce(array_agg(s.last_value ORDER BY u.n), '{}')
    INTO v_seq_names, v_seq_last
    FROM unnest(v_seqs) WITH ORDINALITY AS u(seq, n)
    JOIN pg_class c ON c.oid = u.seq
    JOIN pg_namespace ns ON ns.oid = c.relnamespace
    LEFT JOIN pg_sequences s ON s.schemaname = ns.nspname AND s.sequencename = c.relname;

    -- Nothing may insert between the check below and the ALTER.
    EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl);

    -- New IDs must sort above every existing one.
    EXECUTE format('SELECT max(%I) FROM %s', col, tbl) INTO v_max;
    v_min_new := @extschema@.snowflake_min_id(clock_timestamp());
    IF v_max >= v_min_new THEN
        RAISE EXCEPTION 'existing values of col "%" of table % are not below the IDs snowflake_next() issues now', col, tbl
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('The largest value is %s; IDs issued now start at %s.', v_max, v_min_new),
                  HINT = format('New IDs must sort above the existing ones. Renumber the rows, or migrate after %s, when IDs pass the largest value.',
                                @extschema@.snowflake_timestamp(v_max));
    END IF;

    -- Columns to widen: the key itself, then every foreign-key column that references a
    -- widened column, recursively. A bigint referencing column is followed too: what
    -- references it must hold the new IDs as well.
    q_rel := ARRAY[tbl::oid];
    q_col := ARRAY[col];
    IF v_att.atttypid <> 'int8'::regtype THEN
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
            SELECT CASE WHEN fc.relispartition THEN pg_partition_root(fc.oid) ELSE fc.oid END AS relid,
                   fa.attname, fa.atttypid
            FROM tree
            JOIN pg_attribute ra ON ra.attrelid = tree.relid AND ra.attname = c_col
            JOIN pg_constraint k ON k.contype = 'f' AND k.conparentid = 0 AND k.confrelid = tree.relid
            JOIN LATERAL generate_subscripts(k.confkey, 1) AS s(i) ON k.confkey[s.i] = ra.attnum
            JOIN pg_class fc ON fc.oid = k.conrelid
            JOIN pg_attribute fa ON fa.attrelid = k.conrelid AND fa.attnum = k.conkey[s.i]
            ORDER BY 1::regclass::text, 2
        LOOP
            IF EXISTS (SELECT 1 FROM unnest(q_rel, q_col) AS q(rel, c)
                       WHERE q.rel = r.relid AND q.c = r.attname) THEN
                CONTINUE;
            END IF;
            q_rel := q_rel || r.relid;
            q_col := q_col || r.attname;
            IF r.atttypid IN ('int2'::regtype, 'int4'::regtype) THEN
                w_rel := w_rel || r.relid;
                w_col := w_col || r.attname;
                v_widened := v_widened || to_jsonb(format('%s.%I', r.relid::regclass, r.attname));
            END IF;
        END LOOP;
    END LOOP;

    -- PostgreSQL cannot change the type of a partition key column.
    FOR r IN
        SELECT w.rel, w.c
        FROM unnest(w_rel, w_col) AS w(rel, c)
        JOIN pg_partitioned_table p ON p.partrelid = w.rel
        JOIN pg_attribute a ON a.attrelid = w.rel AND a.attname = w.c
        WHERE a.attnum = ANY (p.partattrs::int2[])
    LOOP
        RAISE EXCEPTION 'cannot widen column "%" of table % to bigint: it is part of the partition key', r.c, r.rel::regclass
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

    -- Views and materialized views that use those columns, and the views built on them,
    -- block ALTER COLUMN TYPE: save their definitions, owners, options, privileges,
    -- comments, triggers, rules, column defaults and (materialized) indexes, then drop
    -- them (deepest first) and recreate them after the ALTER (shallowest first).
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
               c.reltablespace, c.relispopulated, max(deps.depth) AS depth
        FROM deps JOIN pg_class c ON c.oid = deps.view
        GROUP BY c.oid
        ORDER BY max(deps.depth), c.oid::regclass::text
    LOOP
        v_views := v_views || r.name;
        v_drops := format('DROP %s %s', CASE r.relkind WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END, r.name) || v_drops;

        v_stmt := format('CREATE %s %s', CASE r.relkind WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END, r.name);
        IF r.reloptions IS NOT NULL THEN
            v_stmt := v_stmt || format(' WITH (%s)', array_to_string(r.reloptions, ', '));
        END IF;
        IF r.relkind = 'm' AND r.reltablespace <> 0 THEN
            v_stmt := v_stmt || format(' TABLESPACE %I', (SELECT spcname FROM pg_tablespace WHERE oid = r.reltablespace));
        END IF;
        v_stmt := v_stmt || ' AS ' || regexp_replace(pg_get_viewdef(r.oid), ';\s*$', '');
        IF r.relkind = 'm' THEN
            v_stmt := v_stmt || CASE WHEN r.relispopulated THEN ' WITH DATA' ELSE ' WITH NO DATA' END;
        END IF;
        v_redo := v_redo || v_stmt;
        v_redo := v_redo || format('ALTER %s %s OWNER TO %I',
                                   CASE r.relkind WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END,
                                   r.name, pg_get_userbyid(r.relowner));
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
            SELECT format('COMMENT ON %s %s IS %L', CASE r.relkind WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END,
                          r.name, obj_description(r.oid, 'pg_class'))
            WHERE obj_description(r.oid, 'pg_class') IS NOT NULL);
        v_redo := v_redo || ARRAY(
            SELECT format('COMMENT ON COLUMN %s.%I IS %L', r.name, a.attname, d.description)
            FROM pg_attribute a
            JOIN pg_description d ON d.objoid = r.oid AND d.classoid = 'pg_class'::regclass AND d.objsubid = a.attnum
            WHERE a.attrelid = r.oid AND a.attnum > 0
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
        v_redo := v_redo || ARRAY(
            SELECT pg_get_indexdef(i.indexrelid)
            FROM pg_index i WHERE i.indrelid = r.oid
            ORDER BY i.indexrelid::regclass::text);
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

    -- The key column: identity or sequence default off, bigint, snowflake_next() default.
    -- One ALTER TABLE per table, so each table is rewritten once.
    v_clauses := '{}';
    IF v_identity IS NOT NULL THEN
        v_clauses := v_clauses || format('ALTER COLUMN %I DROP IDENTITY', col);
    ELSIF v_def_oid IS NOT NULL THEN
        v_clauses := v_clauses || format('ALTER COLUMN %I DROP DEFAULT', col);
    END IF;
    v_clauses := v_clauses || ARRAY(
        SELECT format('ALTER COLUMN %I TYPE bigint', w.c)
        FROM unnest(w_rel, w_col) WITH ORDINALITY AS w(rel, c, n)
        WHERE w.rel = tbl ORDER BY w.n);
    v_clauses := v_clauses || format('ALTER COLUMN %I SET DEFAULT %s', col, sf_default);
    EXECUTE format('ALTER TABLE %s %s', tbl, array_to_string(v_clauses, ', '));

    FOR r IN
        SELECT w.rel, array_agg(format('ALTER COLUMN %I TYPE bigint', w.c) ORDER BY w.n) AS clauses
        FROM unnest(w_rel, w_col) WITH ORDINALITY AS w(rel, c, n)
        WHERE w.rel <> tbl
        GROUP BY w.rel
        ORDER BY min(w.n)
    LOOP
        EXECUTE format('ALTER TABLE %s %s', r.rel::regclass, array_to_string(r.clauses, ', '));
    END LOOP;

    -- The old sequence goes when nothing else uses it. An identity sequence went with
    -- DROP IDENTITY already.
    FOR v_i IN 1 .. cardinality(v_seqs) LOOP
        c_rel := v_seqs[v_i];
        v_name := v_seq_names[v_i];
        v_last := v_seq_last[v_i];
        IF NOT EXISTS (SELECT 1 FROM pg_class WHERE oid = c_rel) THEN
            v_dropped := v_dropped || jsonb_build_object('sequence', v_name, 'last_value', v_last::text);
            CONTINUE;
        END IF;
        SELECT string_agg(pg_describe_object(d.classid, d.objid, d.objsubid), ', ' ORDER BY 1)
        INTO v_reason
        FROM pg_depend d
        WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = c_rel;
        IF v_reason IS NOT NULL THEN
            v_reason := 'used by ' || v_reason;
        ELSE
            SELECT CASE d.deptype
                       WHEN 'e' THEN 'member of ' || pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid)
                       ELSE 'owned by ' || pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid) END
            INTO v_reason
            FROM pg_depend d
            WHERE d.classid = 'pg_class'::regclass AND d.objid = c_rel
              AND (d.deptype = 'e' OR (d.deptype = 'a' AND d.refclassid = 'pg_class'::regclass
                                       AND NOT (d.refobjid = tbl AND d.refobjsubid = v_att.attnum)))
            LIMIT 1;
        END IF;
        IF v_reason IS NULL THEN
            EXECUTE format('DROP SEQUENCE %s', v_name);
            v_dropped := v_dropped || jsonb_build_object('sequence', v_name, 'last_value', v_last::text);
        ELSE
            RAISE NOTICE 'sequence % is kept: %', v_name, v_reason;
            v_kept := v_kept || jsonb_build_object('sequence', v_name, 'reason', v_reason);
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

    RETURN jsonb_build_object(
        'table', tbl::text,
        'column', col,
        'changed', true,
        'old_type', v_old_type,
        'old_default', CASE WHEN v_identity IS NOT NULL THEN 'generated ' || v_identity || ' as identity'
                            ELSE v_def_expr END,
        'new_type', 'bigint',
        'new_default', sf_call,
        'max_existing_id', v_max::text,
        'widened_columns', v_widened,
        'dropped_sequences', v_dropped,
        'kept_sequences', v_kept,
        'recreated_views', to_jsonb(v_views));
END
$function$;

COMMENT ON FUNCTION snowflake_migrate_column(regclass, name) IS
'converts a serial, bigserial, identity or nextval() key column (and the integer foreign keys that reference it) to bigint DEFAULT snowflake_next(); returns a jsonb summary';

-- JSON for clients: the ID and its 64-bit Unix ms as strings (JavaScript numbers lose digits
-- above 2^53), the timestamp as ISO 8601 UTC with ms.

CREATE FUNCTION snowflake_format(id bigint)
RETURNS jsonb
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
    SELECT pg_catalog.jsonb_build_object(
        'id', id::pg_catalog.text,
        'ts', pg_catalog.to_char(pg_catalog.timezone('UTC'::pg_catalog.text, d.ts),
                                 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'::pg_catalog.text),
        'unix_ms', d.unix_ms::pg_catalog.text,
        'datacenter_id', d.datacenter_id,
        'machine_id', d.machine_id,
        'sequence', d.sequence)
    FROM @extschema@.snowflake_decode(id) AS d);

COMMENT ON FUNCTION snowflake_format(bigint) IS
'a Snowflake ID and its fields as jsonb, the 64-bit numbers as strings for JavaScript';

-- Fleet operations: a copied data directory adopts the node state it was copied with.

CREATE FUNCTION snowflake_adopt_state()
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_adopt_state'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION snowflake_adopt_state() FROM PUBLIC;

COMMENT ON FUNCTION snowflake_adopt_state() IS
'make this data directory the owner of the node state it was copied with (after failover or a move); true if it was a copy';

-- Fleet operations: a registry of node claims shared by the fleet (a table on one server,
-- reached through postgres_fdw, or a table the fleet replicates). See README, Running a fleet.

CREATE FUNCTION snowflake_server_identity()
RETURNS text
AS 'MODULE_PATHNAME', 'snowflake_server_identity'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_server_identity() IS
'this server''s identity in a node registry: system identifier, data directory device and inode';

CREATE FUNCTION snowflake_note_claim(datacenter_id int, machine_id int, until timestamptz)
RETURNS void
AS 'MODULE_PATHNAME', 'snowflake_note_claim'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION snowflake_note_claim(int, int, timestamptz) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_note_claim(int, int, timestamptz) IS
'internal: records in shared memory a registry lease taken by snowflake_claim_node()';

CREATE FUNCTION snowflake_claim_node(registry regclass, lease interval DEFAULT '5 minutes')
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
    holder  text;
    holder_until timestamptz;
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
    until := t0 + lease;

    -- Renew our own claim, or take over one whose lease has ended.
    EXECUTE format('UPDATE %s SET owner = $1, claimed_at = $2, expires_at = $3'
                   ' WHERE datacenter_id = $4 AND machine_id = $5 AND (owner = $1 OR expires_at < $2)',
                   registry)
        USING me, t0, until, dc, m;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
        BEGIN
            EXECUTE format('INSERT INTO %s (datacenter_id, machine_id, owner, claimed_at, expires_at)'
                           ' VALUES ($1, $2, $3, $4, $5)', registry)
                USING dc, m, me, t0, until;
        EXCEPTION WHEN unique_violation THEN
            EXECUTE format('SELECT owner, expires_at FROM %s WHERE datacenter_id = $1 AND machine_id = $2',
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

    PERFORM @extschema@.snowflake_note_claim(dc, m, until);
    RETURN until;
END
$function$;

REVOKE ALL ON FUNCTION snowflake_claim_node(regclass, interval) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_claim_node(regclass, interval) IS
'claim (or renew) this server''s node in a registry table shared by the fleet; returns when the lease ends';

CREATE FUNCTION snowflake_release_node(registry regclass)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $function$
DECLARE
    dc  int := nullif(current_setting('snowflake.datacenter_id'), '-1')::int;
    m   int := nullif(current_setting('snowflake.machine_id'), '-1')::int;
    n   bigint;
BEGIN
    IF dc IS NULL OR m IS NULL THEN
        RAISE EXCEPTION 'snowflake.datacenter_id and snowflake.machine_id must be set to release a node'
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    PERFORM @extschema@.snowflake_note_claim(dc, m, 'epoch');
    EXECUTE format('DELETE FROM %s WHERE datacenter_id = $1 AND machine_id = $2 AND owner = $3', registry)
        USING dc, m, @extschema@.snowflake_server_identity();
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n > 0;
END
$function$;

REVOKE ALL ON FUNCTION snowflake_release_node(regclass) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_release_node(regclass) IS
'give up this server''s claim on its node in the registry (before moving the node to another server)';

-- Monitoring of the durable state.

CREATE FUNCTION snowflake_state(
    OUT state text,
    OUT detail text,
    OUT reserved_until timestamptz,
    OUT owner_directory text,
    OUT this_directory text,
    OUT worker_running boolean)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_state'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_state() IS
'the durable state: ok, damaged or copy (and why), the durable mark, the owning and this data directory (device:inode), whether the reservation worker runs';
