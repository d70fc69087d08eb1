-- registry_1_2.sql: pgTAP checks of the registry functions as version 1.2 defines them.
--
-- Each new or changed function with its signature, result type, language, volatility,
-- strictness, parallel label, comment, who may execute it, and for the plpgsql ones that
-- they run as the caller with search_path pinned; the 1.1 note_claim is gone; the setting
-- snowflake.registry_role exists, empty by default; and snowflake_check_registry() refuses
-- what a claim must not touch.  Everything happens in one transaction that is rolled back.

\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;

SET LOCAL client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
DROP EXTENSION IF EXISTS snowflake CASCADE;
CREATE EXTENSION snowflake;
CREATE ROLE snowflake_pgtap_plain;
CREATE ROLE snowflake_pgtap_other;

CREATE TEMP TABLE want (sig text, returns text, lang text, volatility "char", strict boolean,
                        parallel "char", public_execute boolean);
INSERT INTO want VALUES
    ('snowflake_note_claim(integer,integer,timestamp with time zone,bigint)', 'bigint', 'c', 'v', false, 'u', false),
    ('snowflake_note_release(integer,integer)', 'bigint', 'c', 'v', false, 'u', false),
    ('snowflake_check_registry(regclass)', 'void', 'plpgsql', 's', true, 's', true),
    ('snowflake_claim_node(regclass,interval)', 'timestamp with time zone', 'plpgsql', 'v', false, 'u', false),
    ('snowflake_release_node(regclass)', 'boolean', 'plpgsql', 'v', true, 'u', false);

CREATE TEMP VIEW got AS
SELECT w.sig, p.oid AS fn, pg_catalog.format_type(p.prorettype, NULL) AS returns, l.lanname::text AS lang,
       p.provolatile AS volatility, p.proisstrict AS strict, p.proparallel AS parallel,
       p.prosecdef AS secdef, p.proconfig AS config,
       pg_catalog.obj_description(p.oid, 'pg_proc') AS comment
FROM want w
LEFT JOIN pg_catalog.pg_proc p ON p.oid = pg_catalog.to_regprocedure('public.' || w.sig)
LEFT JOIN pg_catalog.pg_language l ON l.oid = p.prolang;

SELECT plan(5 * 8 + 3 * 2 + 3 + 6);

SELECT ok(g.fn IS NOT NULL, g.sig || ' exists') FROM got g ORDER BY g.sig;
SELECT is(g.returns, w.returns, g.sig || ' returns ' || w.returns) FROM got g JOIN want w USING (sig) ORDER BY g.sig;
SELECT is(g.lang, w.lang, g.sig || ' is LANGUAGE ' || w.lang) FROM got g JOIN want w USING (sig) ORDER BY g.sig;
SELECT is(g.volatility, w.volatility, g.sig || ' has volatility ' || w.volatility::text) FROM got g JOIN want w USING (sig) ORDER BY g.sig;
SELECT is(g.strict, w.strict, g.sig || CASE WHEN w.strict THEN ' is' ELSE ' is not' END || ' STRICT')
FROM got g JOIN want w USING (sig) ORDER BY g.sig;
SELECT is(g.parallel, w.parallel, g.sig || ' has parallel label ' || w.parallel::text) FROM got g JOIN want w USING (sig) ORDER BY g.sig;
SELECT ok(coalesce(length(g.comment), 0) > 0, g.sig || ' has a comment') FROM got g ORDER BY g.sig;
SELECT is(g.fn IS NOT NULL AND pg_catalog.has_function_privilege('snowflake_pgtap_plain', g.fn, 'EXECUTE'),
          w.public_execute,
          g.sig || CASE WHEN w.public_execute THEN ' is executable by anyone' ELSE ' is not executable by PUBLIC' END)
FROM got g JOIN want w USING (sig) ORDER BY g.sig;

-- The plpgsql ones run as their caller, never as their owner, with search_path pinned.
SELECT is(g.secdef, false, g.sig || ' is SECURITY INVOKER') FROM got g WHERE g.lang = 'plpgsql' ORDER BY g.sig;
-- (the claim and the release also pin TimeZone: what they write through postgres_fdw reads the same everywhere)
SELECT is(g.config, ARRAY['search_path=pg_catalog, pg_temp'] || CASE WHEN g.sig LIKE 'snowflake_%_node(%' THEN ARRAY['TimeZone=UTC'] ELSE '{}' END,
          g.sig || ' pins search_path')
FROM got g WHERE g.lang = 'plpgsql' ORDER BY g.sig;

SELECT ok(pg_catalog.to_regprocedure('public.snowflake_note_claim(integer,integer,timestamp with time zone)') IS NULL,
          'the 1.1 snowflake_note_claim(int, int, timestamptz) is gone');
SELECT is((SELECT boot_val FROM pg_catalog.pg_settings WHERE name = 'snowflake.registry_role'), '',
          'snowflake.registry_role exists, empty by default');
SELECT is((SELECT context FROM pg_catalog.pg_settings WHERE name = 'snowflake.registry_role'), 'sighup',
          'snowflake.registry_role is changed with a reload');

-- What the registry check refuses.
CREATE TABLE public.reg_ok (datacenter_id int, machine_id int, owner text, claimed_at timestamptz,
                            expires_at timestamptz, high_water_ms bigint, PRIMARY KEY (datacenter_id, machine_id));
CREATE TABLE public.reg_old (datacenter_id int, machine_id int, owner text, claimed_at timestamptz,
                             expires_at timestamptz, PRIMARY KEY (datacenter_id, machine_id));
CREATE VIEW public.reg_view AS SELECT * FROM public.reg_ok;
CREATE TABLE public.reg_theirs (LIKE public.reg_ok);
ALTER TABLE public.reg_theirs OWNER TO snowflake_pgtap_other;
CREATE TABLE public.reg_trig (LIKE public.reg_ok);
CREATE FUNCTION public.reg_trig_fn() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
ALTER FUNCTION public.reg_trig_fn() OWNER TO snowflake_pgtap_other;
CREATE TRIGGER t BEFORE INSERT ON public.reg_trig FOR EACH ROW EXECUTE FUNCTION public.reg_trig_fn();

SELECT lives_ok($$SELECT public.snowflake_check_registry('public.reg_ok')$$,
                'a table the caller trusts, with high_water_ms, passes');
SELECT throws_ok($$SELECT public.snowflake_check_registry('public.reg_old')$$, '42703',
                 'registry public.reg_old has no column high_water_ms',
                 'a 1.1 registry without high_water_ms is refused');
SELECT throws_ok($$SELECT public.snowflake_check_registry('public.reg_view')$$, '42809',
                 'registry public.reg_view must be a table or a foreign table',
                 'a view is refused');
SELECT throws_like($$SELECT public.snowflake_check_registry('public.reg_theirs')$$,
                   'registry public.reg_theirs is owned by role snowflake_pgtap_other, which does not have the rights of role %',
                   'a registry owned by a role without the caller''s rights is refused');
-- Since 1.3 (issue 17) a registry carries no trigger at all, enabled or not.
SELECT throws_ok($$SELECT public.snowflake_check_registry('public.reg_trig')$$, '42501',
                 'registry public.reg_trig carries trigger t',
                 'a trigger whose function such a role owns is refused');
ALTER TABLE public.reg_trig DISABLE TRIGGER t;
SELECT throws_ok($$SELECT public.snowflake_check_registry('public.reg_trig')$$, '42501',
                 'registry public.reg_trig carries trigger t',
                 'a disabled trigger is refused too (since 1.3): its table''s owner can enable it');

SELECT * FROM finish();
ROLLBACK;
