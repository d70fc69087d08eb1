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
    sf      regtype := '@extschema@.snowflake'::regtype;
    nsp     text := quote_ident((SELECT n.nspname FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_type t ON t.typnamespace = n.oid
                                 WHERE t.oid = '@extschema@.snowflake'::regtype));
    btree   oid := (SELECT f.oid FROM pg_catalog.pg_opfamily f JOIN pg_catalog.pg_am am ON am.oid = f.opfmethod
                    WHERE am.amname = 'btree' AND f.opfname = 'integer_ops' AND f.opfnamespace = 'pg_catalog'::regnamespace);
    hash    oid := (SELECT f.oid FROM pg_catalog.pg_opfamily f JOIN pg_catalog.pg_am am ON am.oid = f.opfmethod
                    WHERE am.amname = 'hash' AND f.opfname = 'integer_ops' AND f.opfnamespace = 'pg_catalog'::regnamespace);
    pair    regtype[];
    st      int;
    added   int := 0;
BEGIN
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
                EXECUTE format('ALTER OPERATOR FAMILY pg_catalog.integer_ops USING btree ADD OPERATOR %s %s.%s (%s, %s)',
                               st, nsp,
                               CASE WHEN pair[1] = pair[2] AND st <> 3
                                    THEN (ARRAY['|<|', '|<=|', '', '|>=|', '|>|'])[st]
                                    ELSE (ARRAY['<', '<=', '=', '>=', '>'])[st] END,
                               pair[1], pair[2]);
                added := added + 1;
            END IF;
        END LOOP;
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_amop WHERE amopfamily = hash AND amoplefttype = pair[1]
                       AND amoprighttype = pair[2] AND amopstrategy = 1) THEN
            EXECUTE format('ALTER OPERATOR FAMILY pg_catalog.integer_ops USING hash ADD OPERATOR 1 %s.= (%s, %s)',
                           nsp, pair[1], pair[2]);
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

-- (type section: end)
