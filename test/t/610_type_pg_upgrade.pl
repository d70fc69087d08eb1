# 610_type_pg_upgrade.pl: pg_upgrade does not carry the snowflake type's members of PostgreSQL's
# integer_ops families (its dump holds the extension's own objects; pg_catalog's families are not
# dumped), as docs/type.md says; snowflake_repair_integer_ops() puts them back, after which a
# bigint index serves lookups by a snowflake again and a foreign key from a bigint column checks
# through its index.  (Same major version on both sides: what is tested is the dump pg_upgrade
# makes, which is the same for every target version.)

use strict;
use warnings;
use Cwd;
use FindBin;
use File::Temp;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

sub node
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf(
		'postgresql.conf', q(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 6
snowflake.machine_id = 10
));
	return $node;
}

my $members = q{
SELECT count(*) FROM (
  SELECT 1 FROM pg_amop a JOIN pg_opfamily f ON f.oid = a.amopfamily
  WHERE f.opfname = 'integer_ops' AND 'snowflake'::regtype IN (a.amoplefttype, a.amoprighttype)
  UNION ALL
  SELECT 1 FROM pg_amproc p JOIN pg_opfamily f ON f.oid = p.amprocfamily
  WHERE f.opfname = 'integer_ops' AND 'snowflake'::regtype IN (p.amproclefttype, p.amprocrighttype)) m};
my $lookup = q{SET enable_seqscan = off; SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM child WHERE parent_id = '5'::snowflake};
my $ri_delete = q{
BEGIN;
SELECT pg_stat_get_xact_numscans('child'::regclass) AS seq \gset
DELETE FROM parent WHERE id <= 10;
SELECT pg_stat_get_xact_numscans('child'::regclass) - :seq;
ROLLBACK;};

my $old = node('type_upgrade_old');
$old->start;
$old->safe_psql('postgres', q{
CREATE EXTENSION snowflake;
CREATE TABLE parent (id snowflake PRIMARY KEY);
CREATE TABLE child (id bigint PRIMARY KEY, parent_id bigint NOT NULL REFERENCES parent ON DELETE CASCADE);
CREATE INDEX child_parent_id_idx ON child (parent_id);
INSERT INTO parent SELECT g FROM generate_series(1, 1000) g;
INSERT INTO child SELECT g, g % 1000 + 1 FROM generate_series(1, 20000) g;
ANALYZE parent, child;
});
is($old->safe_psql('postgres', $members), '52', 'before: 52 integer_ops members for the type');
like($old->safe_psql('postgres', $lookup), qr/Index Scan using child_parent_id_idx/,
	'before: the bigint index serves parent_id = <snowflake>');
$old->stop;

my $new = node('type_upgrade_new');
my $bindir = $new->config_data('--bindir');
my $cwd = getcwd();
my $dir = File::Temp->newdir();
chdir $dir;
command_ok(
	[
		'pg_upgrade', '--no-sync',
		'-d', $old->data_dir, '-D', $new->data_dir,
		'-b', $bindir, '-B', $bindir,
		'-p', $old->port, '-P', $new->port,
		'-s', $new->host
	],
	'pg_upgrade');
chdir $cwd;
$new->start;

is($new->safe_psql('postgres', q{SELECT count(*) FROM parent}), '1000', 'after: the rows arrived');
is($new->safe_psql('postgres', $members), '0', 'after pg_upgrade: the integer_ops members are gone');
like($new->safe_psql('postgres', $lookup), qr/Seq Scan on child/,
	'so the bigint index no longer serves parent_id = <snowflake>');
is($new->safe_psql('postgres', $ri_delete), '10', 'and each deleted parent scans the child');

is($new->safe_psql('postgres', q{SELECT snowflake_repair_integer_ops()}), '52',
	'snowflake_repair_integer_ops() adds the 52 members back');
is($new->safe_psql('postgres', $members), '52', 'after the repair: 52 members');
like($new->safe_psql('postgres', $lookup), qr/Index Scan using child_parent_id_idx/,
	'after the repair: the bigint index serves parent_id = <snowflake> again');
is($new->safe_psql('postgres', $ri_delete), '0', 'and deleting parents scans no child');
is($new->safe_psql('postgres', q{SELECT snowflake_repair_integer_ops()}), '0', 'a second repair adds nothing');

# the comparisons live in pg_catalog (with numeric and double precision too): pg_upgrade carries
# them, as members of the extension
is($new->safe_psql('postgres', q{SELECT count(*) FROM pg_operator
	WHERE oprnamespace = 'pg_catalog'::regnamespace AND oprcode::regproc::text ~ 'snowflake'}), '74',
	'after pg_upgrade: the 66 comparisons and 8 numeric + - * / are in pg_catalog');
is($new->safe_psql('postgres', q{SELECT count(*) FILTER (WHERE id = 5.0) || ' ' || count(*) FILTER (WHERE id < 5.5::float8)
	|| ' ' || pg_typeof(nullif(min(id), 0)) || ' ' || (min(id) + 1.5) FROM parent}), '1 5 snowflake 2.5',
	'after pg_upgrade: comparisons with numeric and double precision work, nullif keeps the type');
my $merge = $new->safe_psql('postgres', q{SET enable_hashjoin = off; SET enable_nestloop = off;
	EXPLAIN (COSTS OFF) SELECT count(*) FROM child c JOIN parent p ON p.id = c.parent_id});
like($merge, qr/Index Only Scan using parent_pkey/, 'after the repair: a merge join reads the snowflake index');
unlike($merge, qr/Sort/, 'and sorts neither side');

# not for anyone else: EXECUTE is revoked from PUBLIC
$new->safe_psql('postgres', q{CREATE ROLE mallory LOGIN});
my ($ret, $out, $err) = $new->psql('postgres', q{SELECT snowflake_repair_integer_ops()}, extra_params => [ '-U', 'mallory' ]);
like($err, qr/permission denied for function snowflake_repair_integer_ops/, 'a role without the grant cannot run it');

# Attack on issue 19, round 13, F2: a database owned by a low-privileged role, in which the superuser runs the
# documented repair.  The owner creates a schema named like the superuser ("$user", first in the default
# search_path) holding a look-alike that would make it superuser.  The documented call (search_path pinned,
# the function qualified with the extension's schema) runs the extension's function, not the look-alike.
my $superuser = $new->safe_psql('postgres', 'SELECT current_user');
$new->safe_psql('postgres', q{CREATE DATABASE app OWNER mallory});
$new->safe_psql('app', q{CREATE EXTENSION snowflake});
$new->safe_psql('app', qq{CREATE SCHEMA "$superuser";
CREATE TABLE public.planted_calls (at timestamptz);
CREATE FUNCTION "$superuser".snowflake_repair_integer_ops() RETURNS integer LANGUAGE plpgsql AS \$\$
BEGIN
	INSERT INTO public.planted_calls VALUES (now());
	EXECUTE 'ALTER ROLE mallory SUPERUSER';
	RETURN -1;
END \$\$;}, extra_params => [ '-U', 'mallory' ]);
# The calls exactly as the documentation gives them: docs/failover.md's psql line (its -c commands)
# and docs/type.md's SQL block.
my $root = "$FindBin::RealBin/../..";
my ($psql_line) = grep { /^psql .*snowflake_repair_integer_ops/ } split /\n/, slurp_file("$root/docs/failover.md");
die 'docs/failover.md has no psql line calling snowflake_repair_integer_ops()' unless defined $psql_line;
my $from_failover = join(";\n", $psql_line =~ /-c '([^']*)'/g) . ';';
my ($from_type) = slurp_file("$root/docs/type.md") =~ /```sql\n((?:(?!```).)*?snowflake_repair_integer_ops(?:(?!```).)*?)```/s;
die 'docs/type.md has no SQL block calling snowflake_repair_integer_ops()' unless defined $from_type;
for my $call ([ 'docs/failover.md', $from_failover ], [ 'docs/type.md', $from_type ])
{
	my ($doc, $sql) = @$call;
	is($new->safe_psql('app', $sql), '0',
		"$doc: the documented call in mallory's database runs the extension's repair (0: nothing missing)");
	is($new->safe_psql('app', q{SELECT count(*) FROM public.planted_calls}), '0', "$doc: the look-alike never ran");
	is($new->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}), 'f',
		"$doc: mallory stays unprivileged");
}

done_testing();
