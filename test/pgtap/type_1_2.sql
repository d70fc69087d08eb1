-- type_1_2.sql: pgTAP contract of the snowflake type as version 1.2 installs it (1.3: type_1_3.sql): its storage, that every
-- function behind it is PostgreSQL's own int8 code, its casts, operators, operator classes and
-- aggregates, and its JSON form. Everything happens in one transaction that is rolled back.

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
CREATE EXTENSION snowflake VERSION '1.2' SCHEMA snowflake_pgtap_ext;  -- the 1.2 contract; type_1_3.sql has 1.3's
SET LOCAL search_path = public, snowflake_pgtap_ext;

CREATE TEMP VIEW sf_type AS
SELECT t.* FROM pg_catalog.pg_type t
WHERE t.typname = 'snowflake' AND t.typnamespace = 'snowflake_pgtap_ext'::regnamespace;

-- Every function whose arguments or result involve the type (the aggregates aside).
CREATE TEMP VIEW sf_funcs AS
SELECT p.oid, p.oid::regprocedure::text AS sig, p.prosrc, substr(p.prosrc, 11) AS wraps, p.probin,
       l.lanname, p.provolatile, p.proisstrict, p.proparallel, p.proleakproof, p.prorettype
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid = p.prolang
WHERE p.prokind = 'f'
  AND ((SELECT oid FROM sf_type) = ANY (p.proargtypes::oid[]) OR p.prorettype = (SELECT oid FROM sf_type));

SELECT plan(36);

-- storage: int8's
SELECT has_type('snowflake_pgtap_ext', 'snowflake', 'the type snowflake is in the extension''s schema');
SELECT is((SELECT ROW(typlen, typbyval, typalign, typstorage, typcategory, typtype)::text FROM sf_type),
          (SELECT ROW(typlen, typbyval, typalign, typstorage, 'N'::"char", typtype)::text
           FROM pg_catalog.pg_type WHERE oid = 'int8'::regtype),
          'snowflake is stored like int8: 8 bytes, by value, double alignment, plain; numeric category');
SELECT is((SELECT ARRAY[typinput::regproc::text, typoutput::regproc::text, typreceive::regproc::text, typsend::regproc::text]
           FROM sf_type),
          ARRAY['snowflake_in', 'snowflake_out', 'snowflake_recv', 'snowflake_send'],
          'its I/O functions');
SELECT is((SELECT array_agg(prosrc ORDER BY prosrc) FROM sf_funcs
           WHERE sig ~ '^snowflake_(in|out|recv|send)\('),
          ARRAY['snowflake_int8in', 'snowflake_int8out', 'snowflake_int8recv', 'snowflake_int8send'],
          'text and binary I/O are int8''s (COPY BINARY and binary-protocol clients see an int8)');
SELECT ok((SELECT typarray <> 0 FROM sf_type), 'snowflake[] exists');
SELECT ok(EXISTS (SELECT 1 FROM pg_catalog.pg_depend d JOIN sf_type t ON d.objid = t.oid
                  WHERE d.classid = 'pg_type'::regclass AND d.deptype = 'e'
                    AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake')),
          'the type is a member of the extension');

-- every function behind the type is PostgreSQL's int8 code (called from src/type.c), labelled like it
SELECT is((SELECT count(*) FROM sf_funcs), 61::bigint, '61 functions take or return a snowflake');
SELECT is((SELECT array_agg(sig ORDER BY sig) FROM sf_funcs
           WHERE lanname <> 'c' OR probin <> '$libdir/snowflake' OR prosrc NOT LIKE 'snowflake\_%'), NULL,
          'every one is a C function snowflake_<f> of the module (src/type.c: it passes the call to int8''s <f>)');
SELECT is((SELECT array_agg(sig ORDER BY sig) FROM sf_funcs
           WHERE NOT (provolatile = 'i' AND proisstrict AND proparallel = 's')), NULL,
          'every one is IMMUTABLE STRICT PARALLEL SAFE');
SELECT is((SELECT array_agg(f.sig ORDER BY f.sig) FROM sf_funcs f
           JOIN pg_catalog.pg_proc core ON core.prosrc = f.wraps AND core.prolang = 12
                                         AND core.pronamespace = 'pg_catalog'::regnamespace
           WHERE f.proleakproof <> core.proleakproof), NULL,
          'each is LEAKPROOF exactly when the int8 function it wraps is');
SELECT is((SELECT array_agg(sig ORDER BY sig) FROM sf_funcs
           WHERE wraps NOT IN (SELECT p.prosrc FROM pg_catalog.pg_proc p
                               WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.prolang = 12)), NULL,
          'each wraps a built-in function');

-- casts
SELECT set_eq(
    $$SELECT format_type(castsource, NULL) AS source, format_type(casttarget, NULL) AS target,
             castcontext::text AS context, castmethod::text AS method, coalesce(p.prosrc, '') AS func
      FROM pg_catalog.pg_cast c LEFT JOIN pg_catalog.pg_proc p ON p.oid = c.castfunc
      WHERE 'snowflake_pgtap_ext.snowflake'::regtype IN (castsource, casttarget)$$,
    $$VALUES ('snowflake', 'bigint', 'i', 'b', ''),
             ('bigint', 'snowflake', 'a', 'b', ''),
             ('integer', 'snowflake', 'a', 'f', 'snowflake_int48'),
             ('smallint', 'snowflake', 'a', 'f', 'snowflake_int28'),
             ('numeric', 'snowflake', 'a', 'f', 'snowflake_numeric_int8'),
             ('snowflake', 'numeric', 'a', 'f', 'snowflake_int8_numeric')$$,
    'casts: to bigint implicit and binary, from bigint by assignment and binary, to and from numeric, from integer and smallint');
SELECT is((SELECT count(*) FROM pg_catalog.pg_cast WHERE castsource = 'snowflake'::regtype
           AND casttarget IN ('json'::regtype, 'jsonb'::regtype)), 0::bigint,
          'no cast to json or jsonb (one would replace the string form)');
SELECT is('1724551110457221119'::text::snowflake::text, '1724551110457221119', 'text casts both ways (I/O conversion)');

-- operators: the six comparisons, for snowflake against snowflake, bigint, integer, smallint, both ways
SELECT is((SELECT array_agg(DISTINCT oprname::text ORDER BY oprname::text) FROM pg_catalog.pg_operator
           WHERE 'snowflake'::regtype IN (oprleft, oprright)),
          ARRAY['<', '<=', '<>', '=', '>', '>='], 'comparison operators only: no arithmetic');
SELECT is((SELECT count(*) FROM pg_catalog.pg_operator WHERE 'snowflake'::regtype IN (oprleft, oprright)),
          42::bigint, '42 operators: 6 comparisons for each of 7 pairs of types');
SELECT is((SELECT array_agg(o.oid::regoperator::text ORDER BY o.oid::regoperator::text COLLATE "C") FROM pg_catalog.pg_operator o
           WHERE 'snowflake'::regtype IN (o.oprleft, o.oprright)
             AND (o.oprcom = 0 OR o.oprnegate = 0 OR o.oprrest = 0 OR o.oprjoin = 0)), NULL,
          'every operator has a commutator, a negator and selectivity estimators');
SELECT is((SELECT array_agg(o.oid::regoperator::text ORDER BY o.oid::regoperator::text COLLATE "C") FROM pg_catalog.pg_operator o
           WHERE 'snowflake'::regtype IN (o.oprleft, o.oprright)
             AND (o.oprname = '=') <> (o.oprcanhash AND o.oprcanmerge)), NULL,
          'the equality operators, and only they, are HASHES and MERGES');
SELECT is((SELECT array_agg(o.oid::regoperator::text ORDER BY o.oid::regoperator::text COLLATE "C") FROM pg_catalog.pg_operator o
           JOIN pg_catalog.pg_proc p ON p.oid = o.oprcode
           JOIN pg_catalog.pg_operator core ON core.oprname = o.oprname
                AND core.oprleft = CASE WHEN o.oprleft = 'snowflake'::regtype THEN 'int8'::regtype ELSE o.oprleft END
                AND core.oprright = CASE WHEN o.oprright = 'snowflake'::regtype THEN 'int8'::regtype ELSE o.oprright END
           JOIN pg_catalog.pg_proc cp ON cp.oid = core.oprcode
           WHERE 'snowflake'::regtype IN (o.oprleft, o.oprright)
             AND (p.prosrc <> 'snowflake_' || cp.prosrc OR o.oprrest <> core.oprrest OR o.oprjoin <> core.oprjoin)), NULL,
          'each operator runs the int8 operator''s code and estimators');

-- operator classes and families
SELECT set_eq(
    $$SELECT am.amname::text, c.opcname::text, c.opcdefault FROM pg_catalog.pg_opclass c
      JOIN pg_catalog.pg_am am ON am.oid = c.opcmethod WHERE c.opcintype = 'snowflake'::regtype$$,
    $$VALUES ('btree', 'snowflake_ops', true), ('hash', 'snowflake_ops', true), ('brin', 'snowflake_minmax_ops', true)$$,
    'default btree, hash and BRIN operator classes');
SELECT ok(amvalidate(c.oid), am.amname || ' operator class ' || c.opcname || ' and its family pass amvalidate()')
FROM pg_catalog.pg_opclass c JOIN pg_catalog.pg_am am ON am.oid = c.opcmethod
WHERE c.opcintype = 'snowflake'::regtype ORDER BY am.amname;
SELECT set_eq(
    $$SELECT DISTINCT format_type(amoplefttype, NULL) FROM pg_catalog.pg_amop a
      JOIN pg_catalog.pg_opclass c ON c.opcfamily = a.amopfamily
      WHERE c.opcintype = 'snowflake'::regtype AND c.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'btree')$$,
    $$VALUES ('snowflake'), ('bigint'), ('integer'), ('smallint')$$,
    'the btree family compares snowflake, bigint, integer and smallint');
SELECT is((SELECT count(*) FROM pg_catalog.pg_amop a JOIN pg_catalog.pg_opclass c ON c.opcfamily = a.amopfamily
           WHERE c.opcintype = 'snowflake'::regtype AND c.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'btree')),
          80::bigint, 'the btree family is complete: 5 strategies for each of 16 pairs of types');
SELECT is((SELECT count(*) FROM pg_catalog.pg_amop a JOIN pg_catalog.pg_opclass c ON c.opcfamily = a.amopfamily
           WHERE c.opcintype = 'snowflake'::regtype AND c.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'hash')),
          16::bigint, 'the hash family has an equality for each of 16 pairs of types');
SELECT is((SELECT array_agg(a.amprocnum::int ORDER BY a.amprocnum) FROM pg_catalog.pg_amproc a
           JOIN pg_catalog.pg_opclass c ON c.opcfamily = a.amprocfamily
           WHERE c.opcintype = 'snowflake'::regtype AND c.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'btree')
             AND a.amproclefttype = 'snowflake'::regtype AND a.amprocrighttype = 'snowflake'::regtype),
          ARRAY[1, 2, 4], 'btree support: comparison, sort support (fast index builds), equalimage (deduplication)');
SELECT is((SELECT array_agg(p.prosrc ORDER BY a.amprocnum) FROM pg_catalog.pg_amproc a
           JOIN pg_catalog.pg_proc p ON p.oid = a.amproc
           JOIN pg_catalog.pg_opclass c ON c.opcfamily = a.amprocfamily
           WHERE c.opcintype = 'snowflake'::regtype AND c.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'hash')
             AND a.amproclefttype = 'snowflake'::regtype),
          ARRAY['snowflake_hashint8', 'snowflake_hashint8extended'], 'hash support: int8''s hash functions');

-- aggregates
SELECT is((SELECT array_agg(p.oid::regprocedure::text || ' ' || format_type(p.prorettype, NULL) || ' ' || a.aggsortop::regoperator::text
                            ORDER BY p.oid::regprocedure::text COLLATE "C")
           FROM pg_catalog.pg_aggregate a JOIN pg_catalog.pg_proc p ON p.oid = a.aggfnoid
           WHERE p.proargtypes[0] = 'snowflake'::regtype),
          ARRAY['max(snowflake) snowflake >(snowflake,snowflake)', 'min(snowflake) snowflake <(snowflake,snowflake)'],
          'min() and max() return a snowflake and can use the index');

-- behaviour the contract names
SELECT is(to_json(1724551110457221119::snowflake)::text, '"1724551110457221119"', 'to_json gives a string');
SELECT is(to_jsonb(1724551110457221119::snowflake), '"1724551110457221119"'::jsonb, 'to_jsonb gives a string');
SELECT is(to_jsonb(1724551110457221119::bigint), '1724551110457221119'::jsonb, 'where a bigint is a number');
SELECT is((json_build_object('id', 1724551110457221119::snowflake) ->> 'id')::snowflake, 1724551110457221119::snowflake,
          'and the string reads back');
SELECT is(snowflake_timestamp(1724551110457221119::snowflake), '2023-11-14 22:13:20+00'::timestamptz,
          'decode functions take a snowflake');
SELECT is(pg_typeof(1724551110457221119::snowflake + 1)::text, 'bigint', 'arithmetic leaves the type (bigint)');
SELECT throws_ok($$SELECT 'x'::snowflake_pgtap_ext.snowflake$$, '22P02', NULL, 'bad input is refused (22P02)');

SELECT * FROM finish();
ROLLBACK;
