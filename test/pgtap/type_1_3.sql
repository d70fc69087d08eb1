-- type_1_3.sql: pgTAP contract of the snowflake type as version 1.3 leaves it, on every path
-- (fresh, and updates from 1.0, 1.1 and 1.2): its members of PostgreSQL's integer_ops families,
-- the implicit casts from the integers, min()/max() in pg_catalog, the jsonb cast, and that DROP
-- EXTENSION takes its integer_ops members away again.  One transaction, rolled back.

\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;

SET LOCAL client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
DROP EXTENSION IF EXISTS snowflake CASCADE;
CREATE SCHEMA snowflake_pgtap_ext;
SET LOCAL search_path = public, snowflake_pgtap_ext;

-- integer_ops' members (btree and hash) as text, and how many there are without the extension
CREATE TEMP VIEW int_ops AS
SELECT am.amname::text AS am, 'op' AS kind, a.amopstrategy::int AS num,
       format_type(a.amoplefttype, NULL) AS lt, format_type(a.amoprighttype, NULL) AS rt,
       a.amopopr::regoperator::text AS member
FROM pg_catalog.pg_amop a JOIN pg_catalog.pg_opfamily f ON f.oid = a.amopfamily
JOIN pg_catalog.pg_am am ON am.oid = f.opfmethod
WHERE f.opfname = 'integer_ops' AND f.opfnamespace = 'pg_catalog'::regnamespace
UNION ALL
SELECT am.amname::text, 'proc', p.amprocnum::int, format_type(p.amproclefttype, NULL), format_type(p.amprocrighttype, NULL),
       p.amproc::regprocedure::text
FROM pg_catalog.pg_amproc p JOIN pg_catalog.pg_opfamily f ON f.oid = p.amprocfamily
JOIN pg_catalog.pg_am am ON am.oid = f.opfmethod
WHERE f.opfname = 'integer_ops' AND f.opfnamespace = 'pg_catalog'::regnamespace;
CREATE TEMP TABLE builtin AS SELECT * FROM int_ops;

-- what 1.3 adds to them, the casts from the integers, and where min/max live
CREATE TEMP VIEW state AS
SELECT 'family' AS what, am || ' ' || kind || ' ' || num || ' ' || lt || ' ' || rt || ' ' || member AS item
FROM (SELECT * FROM int_ops EXCEPT SELECT * FROM builtin) added
UNION ALL
SELECT 'cast', format_type(castsource, NULL) || ' -> ' || format_type(casttarget, NULL) || ' ' || castcontext::text
FROM pg_catalog.pg_cast WHERE pg_catalog.to_regtype('snowflake') IN (castsource, casttarget)
UNION ALL
SELECT 'aggregate', p.oid::regprocedure::text || ' in ' || p.pronamespace::regnamespace::text
FROM pg_catalog.pg_aggregate a JOIN pg_catalog.pg_proc p ON p.oid = a.aggfnoid
WHERE p.proargtypes[0] = pg_catalog.to_regtype('snowflake');

SELECT plan(27);

CREATE EXTENSION snowflake SCHEMA snowflake_pgtap_ext;
CREATE TEMP TABLE fresh AS SELECT * FROM state;

-- btree integer_ops: snowflake against itself and the three integers, both ways
SELECT is((SELECT count(*) FROM int_ops WHERE am = 'btree' AND kind = 'op' AND 'snowflake' IN (lt, rt)),
          35::bigint, 'btree integer_ops has 5 strategies for each of the 7 pairs of types with snowflake');
SELECT is((SELECT count(*) FROM int_ops WHERE am = 'btree' AND kind = 'proc' AND 'snowflake' IN (lt, rt)),
          8::bigint, 'and a comparison function for each pair, and sort support for snowflake');
SELECT set_eq($$SELECT num, member FROM int_ops WHERE am = 'btree' AND kind = 'op' AND lt = 'snowflake' AND rt = 'snowflake'$$,
              $$VALUES (1, '|<|(snowflake,snowflake)'), (2, '|<=|(snowflake,snowflake)'), (3, '=(snowflake,snowflake)'),
                       (4, '|>=|(snowflake,snowflake)'), (5, '|>|(snowflake,snowflake)')$$,
              'snowflake''s own = is shared; its ordering strategies are the helper operators |<| |<=| |>=| |>|');
SELECT is((SELECT array_agg(f.opfname::text ORDER BY f.opfname) FROM pg_catalog.pg_amop a
           JOIN pg_catalog.pg_opfamily f ON f.oid = a.amopfamily
           WHERE a.amopopr = 'pg_catalog.<(snowflake_pgtap_ext.snowflake,snowflake_pgtap_ext.snowflake)'::regoperator
             AND a.amopmethod = (SELECT oid FROM pg_am WHERE amname = 'btree')),
          ARRAY['snowflake_ops'], 'the type''s < is in snowflake_ops only (ORDER BY id keeps using snowflake indexes)');
SELECT is((SELECT array_agg(f.opfname::text ORDER BY f.opfname) FROM pg_catalog.pg_amop a
           JOIN pg_catalog.pg_opfamily f ON f.oid = a.amopfamily
           WHERE a.amopopr = 'pg_catalog.=(snowflake_pgtap_ext.snowflake,bigint)'::regoperator
             AND a.amopmethod = (SELECT oid FROM pg_am WHERE amname = 'btree')),
          ARRAY['integer_ops', 'snowflake_ops'], 'snowflake = bigint is in both btree families');
SELECT is((SELECT count(*) FROM int_ops WHERE am = 'hash' AND kind = 'op' AND 'snowflake' IN (lt, rt)),
          7::bigint, 'hash integer_ops has = for the 7 pairs with snowflake');
SELECT set_eq($$SELECT member FROM int_ops WHERE am = 'hash' AND kind = 'proc' AND lt = 'snowflake'$$,
              $$VALUES ('snowflake_hash(snowflake)'), ('snowflake_hash_extended(snowflake,bigint)')$$,
              'hash integer_ops hashes a snowflake with int8''s hash functions');
SELECT ok(bool_and(amvalidate(c.oid)), 'integer_ops (btree and hash) still pass amvalidate()')
FROM pg_catalog.pg_opclass c WHERE c.opcname = 'int8_ops' AND c.opcnamespace = 'pg_catalog'::regnamespace
  AND c.opcmethod IN (SELECT oid FROM pg_am WHERE amname IN ('btree', 'hash'));
SELECT ok(bool_and(amvalidate(c.oid)), 'snowflake''s own operator classes still pass amvalidate()')
FROM pg_catalog.pg_opclass c WHERE c.opcintype = 'snowflake'::regtype;

-- casts and aggregates
SELECT set_eq($$SELECT format_type(castsource, NULL), castcontext::text FROM pg_catalog.pg_cast
                WHERE casttarget = 'snowflake'::regtype$$,
              $$VALUES ('bigint', 'i'), ('integer', 'i'), ('smallint', 'i'), ('numeric', 'a'), ('jsonb', 'e')$$,
              'casts to snowflake: implicit from the integers, by assignment from numeric, explicit from jsonb');
SELECT set_eq($$SELECT format_type(casttarget, NULL), castcontext::text FROM pg_catalog.pg_cast
                WHERE castsource = 'snowflake'::regtype$$,
              $$VALUES ('bigint', 'i'), ('numeric', 'a'), ('integer', 'a'), ('smallint', 'a'), ('real', 'a'), ('double precision', 'a')$$,
              'casts from snowflake: implicit to bigint, by assignment to numeric, integer, smallint, real and double precision, none to json');
SELECT set_eq($$SELECT o.oprname::text AS op, format_type(o.oprleft, NULL) AS l, format_type(o.oprright, NULL) AS r, o.oprnamespace::regnamespace::text AS nsp
                FROM pg_catalog.pg_operator o
                WHERE o.oprcode::regproc::text ~ 'snowflake' AND o.oprname IN ('=', '<>', '<', '<=', '>', '>=')$$,
              $$SELECT op, l, r, 'pg_catalog' FROM unnest(ARRAY['=', '<>', '<', '<=', '>', '>=']) op,
                  (VALUES ('snowflake', 'snowflake'), ('snowflake', 'bigint'), ('snowflake', 'integer'), ('snowflake', 'smallint'),
                          ('bigint', 'snowflake'), ('integer', 'snowflake'), ('smallint', 'snowflake'),
                          ('snowflake', 'snowflake_numeric_arg'), ('snowflake_numeric_arg', 'snowflake'),
                          ('snowflake_arg', 'snowflake_float8_arg'), ('snowflake_float8_arg', 'snowflake_arg')) t(l, r)$$,
              'the 66 comparisons (with numeric and double precision through domains) are in pg_catalog');
SELECT set_eq($$SELECT p.proname::text, p.pronamespace::regnamespace::text, format_type(p.prorettype, NULL)
                FROM pg_catalog.pg_aggregate a JOIN pg_catalog.pg_proc p ON p.oid = a.aggfnoid
                WHERE p.proargtypes[0] = 'snowflake'::regtype$$,
              $$VALUES ('max', 'pg_catalog', 'snowflake'), ('min', 'pg_catalog', 'snowflake')$$,
              'min() and max() of a snowflake are in pg_catalog (found whatever search_path says)');
SELECT is(('{"id": "1724551110457221119"}'::jsonb -> 'id')::snowflake, 1724551110457221119::snowflake,
          'jsonb string to snowflake');
SELECT is(('{"id": 1050118621198921728}'::jsonb -> 'id')::snowflake, 1050118621198921728::snowflake,
          'jsonb number to snowflake');
SELECT throws_ok($$SELECT '{"id": 1}'::jsonb::snowflake_pgtap_ext.snowflake$$, '22023',
                 'cannot cast jsonb object to type snowflake', 'jsonb object refused (22023)');
SELECT throws_ok($$SELECT '"12x"'::jsonb::snowflake_pgtap_ext.snowflake$$, '22P02', NULL,
                 'jsonb string that is not a number refused (22P02)');

-- pg_upgrade does not carry the integer_ops members: the repair function adds back what is missing
ALTER OPERATOR FAMILY pg_catalog.integer_ops USING btree
    DROP OPERATOR 3 (snowflake_pgtap_ext.snowflake, bigint), OPERATOR 1 (snowflake_pgtap_ext.snowflake, snowflake_pgtap_ext.snowflake),
         FUNCTION 1 (bigint, snowflake_pgtap_ext.snowflake), FUNCTION 2 (snowflake_pgtap_ext.snowflake, snowflake_pgtap_ext.snowflake);
ALTER OPERATOR FAMILY pg_catalog.integer_ops USING hash
    DROP OPERATOR 1 (snowflake_pgtap_ext.snowflake, integer), FUNCTION 1 (snowflake_pgtap_ext.snowflake);
SELECT is(snowflake_repair_integer_ops(), 6, 'snowflake_repair_integer_ops() adds the 6 missing members');
SELECT set_eq($$SELECT * FROM state$$, $$SELECT * FROM fresh$$, 'and integer_ops is as a fresh install leaves it');
SELECT is(snowflake_repair_integer_ops(), 0, 'a second call adds nothing');
CREATE ROLE sf_pgtap_nobody;
SELECT ok(NOT has_function_privilege('sf_pgtap_nobody', 'snowflake_repair_integer_ops()', 'EXECUTE'),
          'the repair function is not executable by PUBLIC');
DROP ROLE sf_pgtap_nobody;

DROP EXTENSION snowflake;
SELECT set_eq($$SELECT * FROM int_ops$$, $$SELECT * FROM builtin$$,
              'DROP EXTENSION leaves integer_ops as PostgreSQL made it');

-- every update path ends in the same state as a fresh install
CREATE EXTENSION snowflake VERSION '1.0' SCHEMA snowflake_pgtap_ext;
ALTER EXTENSION snowflake UPDATE TO '1.3';
SELECT set_eq($$SELECT * FROM state$$, $$SELECT * FROM fresh$$, 'update from 1.0: the same integer_ops members, casts and aggregates');
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.1' SCHEMA snowflake_pgtap_ext;
ALTER EXTENSION snowflake UPDATE TO '1.3';
SELECT set_eq($$SELECT * FROM state$$, $$SELECT * FROM fresh$$, 'update from 1.1: the same');
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '1.2' SCHEMA snowflake_pgtap_ext;
-- a 1.2 table with an index on the type and a bigint reference: the update keeps them
CREATE TABLE t12 (id snowflake_pgtap_ext.snowflake PRIMARY KEY);
CREATE TABLE c12 (id bigint PRIMARY KEY, t_id bigint REFERENCES t12);
ALTER EXTENSION snowflake UPDATE TO '1.3';
SELECT set_eq($$SELECT * FROM state$$, $$SELECT * FROM fresh$$, 'update from 1.2: the same');
SELECT ok(EXISTS (SELECT FROM pg_catalog.pg_amop a JOIN pg_catalog.pg_opclass c ON c.opcfamily = a.amopfamily
                  WHERE c.oid = (SELECT i.indclass[0] FROM pg_catalog.pg_index i WHERE i.indexrelid = 't12_pkey'::regclass)
                    AND a.amopopr = 'pg_catalog.<(snowflake_pgtap_ext.snowflake,snowflake_pgtap_ext.snowflake)'::regoperator),
          'an index made by 1.2 still orders by the type''s own <');
DROP TABLE c12, t12;
DROP EXTENSION snowflake;
SELECT set_eq($$SELECT * FROM int_ops$$, $$SELECT * FROM builtin$$,
              'and DROP EXTENSION after an update leaves integer_ops as it was');

SELECT * FROM finish();
ROLLBACK;
