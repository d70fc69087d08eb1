# 127_type_hostile_owner.pl: a database owner who plants operators in the extension's schema, then
# waits for the superuser to do what the documentation says (outside attack on issue 19, round 14).
#
# F2: ALTER EXTENSION snowflake UPDATE from 1.2 moved every = <> < <= > >= operator on the snowflake
# type in the extension's schema into pg_catalog, the owner's too; there a pinned search_path finds
# them, and the owner's =(snowflake, numeric) ran as the superuser who queried.  Only the
# extension's own operators move now.
# F4: snowflake_repair_integer_ops() looked its operators up by name and types in pg_catalog or the
# extension's schema: an owner's <(integer, snowflake) made the lookup find two, and the documented
# repair failed.  It takes the extension's own operators only.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('hostile_owner');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'snowflake'\nsnowflake.datacenter_id = 1\nsnowflake.machine_id = 1\n");
$node->start;
$node->safe_psql('postgres', q{CREATE ROLE dbo LOGIN; CREATE DATABASE r2 OWNER dbo});
$node->safe_psql('r2', q{CREATE EXTENSION snowflake VERSION '1.2'});

# What the owner plants: a function that makes it superuser when a superuser runs it, and records
# each call; operators on the snowflake type in the extension's schema (public).
my $pwn = q{
CREATE TABLE public.planted_calls (what text, at timestamptz DEFAULT now());
GRANT INSERT ON public.planted_calls TO PUBLIC;
CREATE FUNCTION public.f(public.snowflake, numeric) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.planted_calls (what) VALUES ('=(snowflake, numeric)');
	IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		EXECUTE 'ALTER ROLE dbo SUPERUSER';
	END IF;
	RETURN false;
END $$;
CREATE OPERATOR public.= (leftarg = public.snowflake, rightarg = numeric, function = public.f);
CREATE FUNCTION public.g(public.snowflake, text) RETURNS boolean LANGUAGE sql AS 'SELECT false';
CREATE OPERATOR public.< (leftarg = public.snowflake, rightarg = text, function = public.g);
};
$node->safe_psql('r2', $pwn, extra_params => [ '-U', 'dbo' ]);

$node->safe_psql('r2', 'ALTER EXTENSION snowflake UPDATE');
is($node->safe_psql('r2', q{SELECT extversion FROM pg_extension WHERE extname = 'snowflake'}), '1.3', 'updated to 1.3');
is($node->safe_psql('r2', q{SELECT string_agg(o.oprname || ' in ' || o.oprnamespace::regnamespace::text, ', ' ORDER BY o.oid)
	FROM pg_operator o WHERE pg_get_userbyid(o.oprowner) = 'dbo'}),
	'= in public, < in public', "the owner's operators stayed in the extension's schema");
is($node->safe_psql('r2', q{SELECT count(*) FILTER (WHERE o.oprnamespace = 'pg_catalog'::regnamespace) = count(*) AND count(*) >= 42
	FROM pg_operator o JOIN pg_depend d ON d.classid = 'pg_operator'::regclass AND d.objid = o.oid
	AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
	WHERE o.oprname IN ('=', '<>', '<', '<=', '>', '>=')}),
	't', "the extension's comparisons moved to pg_catalog, all of them");
my ($ret, $out, $err) = $node->psql('r2', q{SET search_path = pg_catalog, pg_temp;
SELECT 1 FROM (VALUES ('5'::public.snowflake)) v(id) WHERE id = 5.0});
is($node->safe_psql('r2', 'SELECT count(*) FROM public.planted_calls'), '0', "the owner's operator never ran");
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'dbo'}), 'f', 'the owner stays unprivileged');

# F4: members missing from integer_ops (as after pg_upgrade), and a look-alike of one in public.
$node->safe_psql('r2', q{ALTER OPERATOR FAMILY pg_catalog.integer_ops USING btree DROP OPERATOR 1 (integer, public.snowflake);
ALTER OPERATOR FAMILY pg_catalog.integer_ops USING hash DROP OPERATOR 1 (integer, public.snowflake)});
$node->safe_psql('r2', q{CREATE FUNCTION public.h(integer, public.snowflake) RETURNS boolean LANGUAGE sql AS 'SELECT false';
CREATE OPERATOR public.< (leftarg = integer, rightarg = public.snowflake, function = public.h);
CREATE OPERATOR public.= (leftarg = integer, rightarg = public.snowflake, function = public.h);}, extra_params => [ '-U', 'dbo' ]);
is($node->safe_psql('r2', q{SET search_path = pg_catalog, pg_temp; SELECT public.snowflake_repair_integer_ops()}), '2',
	'the documented repair adds the two missing members back');
is($node->safe_psql('r2', q{SELECT string_agg(a.amopopr::regoperator::text || ' ' || pg_get_userbyid(o.oprowner), ', ' ORDER BY a.amopopr)
	FROM pg_amop a JOIN pg_operator o ON o.oid = a.amopopr
	WHERE a.amopfamily IN (SELECT f.oid FROM pg_opfamily f WHERE f.opfname = 'integer_ops')
	  AND a.amoplefttype = 'integer'::regtype AND a.amoprighttype = 'public.snowflake'::regtype AND a.amopstrategy = 1}),
	$node->safe_psql('r2', q{SELECT string_agg(o.oid::regoperator::text || ' ' || pg_get_userbyid(o.oprowner), ', ' ORDER BY o.oid)
	FROM pg_operator o WHERE o.oprnamespace = 'pg_catalog'::regnamespace AND o.oprleft = 'integer'::regtype
	  AND o.oprright = 'public.snowflake'::regtype AND o.oprname IN ('<', '=')}),
	"the members added are the extension's operators, not the owner's");

done_testing();
