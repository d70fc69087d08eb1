# 128_install_hostile_schema.pl: CREATE EXTENSION snowflake and ALTER EXTENSION snowflake UPDATE run
# by a superuser in a database whose owner planted operators and functions in the extension's schema
# (outside attack on issue 19, round 15, F1).
#
# On PostgreSQL 15 the schema public belongs to pg_database_owner: a database's owner may create in
# it, and an extension script runs with search_path set to that schema.  The owner planted
# =(oid, regnamespace) there; the update script's catalog query compared oprnamespace with
# '...'::regnamespace, picked the planted operator (an exact match, where pg_catalog's needs a
# coercion), and ran it as the superuser, 42 times.  The scripts' statements that run at install
# time now run with search_path pg_catalog, pg_temp.  Planted here: = and <> for every pair of oid
# with regclass, regtype, regnamespace, regproc and regoperator, "char" = text, name = text, and
# format() with 1 to 7 text arguments after the format string.
use strict;
use warnings FATAL => 'all';
use FindBin;
use lib $FindBin::RealBin;
use SnowflakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('install_hostile');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'snowflake'\nsnowflake.datacenter_id = 1\nsnowflake.machine_id = 1\n");
$node->start;
$node->safe_psql('postgres', 'CREATE ROLE low LOGIN');

my $plant = q{
CREATE TABLE public.planted_calls (what text);
GRANT INSERT ON public.planted_calls TO PUBLIC;
} . SnowflakeTest::planted_pwn_sql('public', 'public.planted_calls', 'low');
my @pairs;
for my $t (qw(regclass regtype regnamespace regproc regoperator))
{
	push @pairs, [ 'oid', $t ], [ $t, 'oid' ];
}
push @pairs, [ '"char"', 'text' ], [ 'name', 'text' ];
my $i = 0;
for my $p (@pairs)
{
	my ($l, $r) = @$p;
	for my $op ('=', '<>')
	{
		$i++;
		my $real = $op eq '=' ? 'OPERATOR(pg_catalog.=)' : 'OPERATOR(pg_catalog.<>)';
		$plant .= qq{CREATE FUNCTION public.p$i($l, $r) RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN PERFORM public.pwn('$op($l, $r)'); RETURN \$1::text $real \$2::text; END \$\$;
CREATE OPERATOR public.$op (LEFTARG = $l, RIGHTARG = $r, FUNCTION = public.p$i);
};
	}
}
for my $n (1 .. 7)
{
	my $args = join(', ', ('text') x ($n + 1));
	my $pass = join(', ', map { '$' . $_ } 2 .. $n + 1);
	$plant .= qq{CREATE FUNCTION public.format($args) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN PERFORM public.pwn('format/$n'); RETURN pg_catalog.format(\$1, VARIADIC ARRAY[$pass]::text[]); END \$\$;
};
}

sub planted
{
	my ($db) = @_;
	return $node->safe_psql($db, q{SELECT coalesce(string_agg(DISTINCT what COLLATE "C", ', ' ORDER BY what COLLATE "C"), 'none') FROM public.planted_calls});
}

for my $from ('', '1.0', '1.1', '1.2')
{
	my $db = $from eq '' ? 'fresh' : 'from_' . ($from =~ tr/./_/r);
	$node->safe_psql('postgres', "CREATE DATABASE $db OWNER low");
	if ($from ne '')
	{
		# The older version was installed before the owner planted anything.
		$node->safe_psql($db, "CREATE EXTENSION snowflake VERSION '$from'");
	}
	$node->safe_psql($db, $plant, extra_params => [ '-U', 'low' ]);
	my $what = $from eq '' ? 'CREATE EXTENSION snowflake' : "ALTER EXTENSION snowflake UPDATE from $from";
	my ($ret, $out, $err) = $node->psql($db, $from eq '' ? 'CREATE EXTENSION snowflake' : 'ALTER EXTENSION snowflake UPDATE');
	is($ret, 0, "$what succeeds") or diag($err);
	is($node->safe_psql($db, q{SELECT extversion FROM pg_extension WHERE extname = 'snowflake'}), '1.3', "$what: at 1.3");
	is(planted($db), 'none', "$what: the planted operators and functions never ran");
	is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'low'}), 'f', "$what: the owner stays unprivileged");
	$node->safe_psql('postgres', 'ALTER ROLE low NOSUPERUSER');
}

# Control: the plant works (an unqualified comparison of the kind the script made runs it).
$node->safe_psql('fresh', q{SELECT count(*) FROM pg_catalog.pg_operator o WHERE o.oprnamespace = 'public'::regnamespace});
is(planted('fresh'), '=(oid, regnamespace)', 'control: an unpinned comparison of oid with regnamespace runs the planted operator');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'low'}), 't', 'control: as the superuser');

done_testing();
