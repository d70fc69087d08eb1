# 214_registry_types.pl: a registry whose columns could round or truncate what
# a claim or release writes is refused, nothing counted (attack 17b A1).
#
# A high_water_ms of type real keeps only multiples of 131072 near today's
# Unix ms: a release stored a mark 36 s below the last ID, and the next holder
# repeated 164,376 of 200,000 IDs.  The registry table and a foreign table in
# front of it must have exactly the documented column types (42804 names the
# column, its type and the type required); the types of the table behind a
# foreign table cannot be read from here, so a claim and a release read back
# what they wrote and refuse a registry that did not keep it exactly.
#
# One server: the registries are local tables, and foreign tables that lead
# through postgres_fdw to tables in another database of the same server.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('t');
$node->init;
$node->append_conf(
	'postgresql.conf', q(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 2
snowflake.machine_id = 13
snowflake.require_claim = on
snowflake.max_wait_ms = 0
));
$node->start;
my ($host, $port) = ($node->host, $node->port);
my $su = $node->safe_psql('postgres', 'SELECT current_user');

# The documented CREATE TABLE, with one column's type replaced.
my %documented = (
	datacenter_id => 'int', machine_id => 'int', owner => 'text',
	claimed_at => 'timestamptz', expires_at => 'timestamptz', high_water_ms => 'bigint');
my @columns = qw(datacenter_id machine_id owner claimed_at expires_at high_water_ms);

sub ddl
{
	my (%type) = (%documented, @_);
	return join(",\n", map({ "$_ $type{$_}" . ($_ eq 'high_water_ms' ? '' : ' NOT NULL') } @columns));
}

# psql that must fail: returns stderr (with the SQLSTATE).
sub fails
{
	my ($db, $sql, $what) = @_;
	my ($ret, $out, $err) = $node->psql($db, "\\set VERBOSITY verbose\n$sql");
	isnt($ret, 0, "$what: fails");
	return $err;
}

$node->safe_psql('postgres', qq{
CREATE EXTENSION snowflake;
CREATE EXTENSION postgres_fdw;
CREATE DATABASE fleet;
CREATE SERVER fleet FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '$host', port '$port', dbname 'fleet', connect_timeout '2');
CREATE USER MAPPING FOR CURRENT_USER SERVER fleet OPTIONS (user '$su');
});

# --- The registry table's own columns: each inexact or narrower type is refused.

my @cases = (
	[ high_water_ms => 'real',             'real' ],
	[ high_water_ms => 'double precision', 'double precision' ],
	[ high_water_ms => 'numeric',          'numeric' ],
	[ high_water_ms => 'int',              'integer' ],
	[ expires_at    => 'timestamp',        'timestamp without time zone' ],
	[ expires_at    => 'date',             'date' ],
	[ expires_at    => 'timestamptz(0)',   'timestamp\(0\) with time zone' ],
	[ claimed_at    => 'timestamp',        'timestamp without time zone' ],
	[ owner         => 'varchar(200)',     'character varying\(200\)' ],
	[ datacenter_id => 'bigint',           'bigint' ],
	[ machine_id    => 'numeric',          'numeric' ]);
my %want = (datacenter_id => 'integer', machine_id => 'integer', owner => 'text',
	claimed_at => 'timestamp with time zone', expires_at => 'timestamp with time zone',
	high_water_ms => 'bigint');
for my $case (@cases)
{
	my ($col, $type, $shown) = @$case;
	$node->safe_psql('postgres', 'DROP TABLE IF EXISTS public.reg; CREATE TABLE public.reg (' . ddl($col => $type)
		  . ', PRIMARY KEY (datacenter_id, machine_id))');
	my $err = fails('postgres', "SELECT public.snowflake_claim_node('public.reg'::pg_catalog.regclass, '1 minute'::interval)",
		"a claim of a registry whose $col is $type");
	like($err, qr/42804: registry public.reg column $col has type $shown, not $want{$col}/,
		"refused (42804), naming the column, its type and the type required");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM public.reg'), '0', 'nothing was written');
}
like(fails('postgres', "SELECT public.snowflake_release_node('public.reg'::pg_catalog.regclass)", 'a release of that registry'),
	qr/42804: registry public.reg column machine_id has type numeric, not integer/, 'refused too');
like(fails('postgres', 'SELECT snowflake_next()', 'generation after the refused claims'),
	qr/holds no current registry claim/, 'no claim counted');

# The documented table is accepted (the check refuses only what it must).
$node->safe_psql('postgres', 'DROP TABLE public.reg; CREATE TABLE public.reg (' . ddl() . ', PRIMARY KEY (datacenter_id, machine_id))');
$node->safe_psql('postgres', "SELECT public.snowflake_claim_node('public.reg'::pg_catalog.regclass, '1 minute'::interval)");
ok($node->safe_psql('postgres', 'SELECT snowflake_next()') > 0, 'the documented registry table is claimed');
is($node->safe_psql('postgres', "SELECT public.snowflake_release_node('public.reg'::pg_catalog.regclass)"), 't',
	'and released');

# --- A foreign table in front of the registry: its own columns are checked the same way.

$node->safe_psql('fleet', 'CREATE TABLE public.snowflake_registry (' . ddl() . ', PRIMARY KEY (datacenter_id, machine_id))');
for my $case ([ high_water_ms => 'real', 'real' ], [ expires_at => 'date', 'date' ])
{
	my ($col, $type, $shown) = @$case;
	$node->safe_psql('postgres', 'DROP FOREIGN TABLE IF EXISTS public.freg; CREATE FOREIGN TABLE public.freg ('
		  . ddl($col => $type) . ") SERVER fleet OPTIONS (schema_name 'public', table_name 'snowflake_registry')");
	like(fails('postgres', "SELECT public.snowflake_claim_node('public.freg'::pg_catalog.regclass, '1 minute'::interval)",
			"a claim through a foreign table whose $col is $type"),
		qr/42804: registry public.freg column $col has type $shown, not $want{$col}/, 'refused (42804)');
}
is($node->safe_psql('fleet', 'SELECT count(*) FROM public.snowflake_registry'), '0', 'nothing was written behind it');

# --- The table behind a foreign table rounds what is written: read back, refused.

$node->safe_psql('postgres', 'DROP FOREIGN TABLE public.freg; CREATE FOREIGN TABLE public.freg (' . ddl()
	  . ") SERVER fleet OPTIONS (schema_name 'public', table_name 'snowflake_registry')");
for my $case ([ high_water_ms => 'numeric(16,-5)' ], [ high_water_ms => 'int' ],
	[ expires_at => 'timestamptz(0)' ], [ expires_at => 'date' ])
{
	my ($col, $type) = @$case;
	$node->safe_psql('fleet', 'DROP TABLE public.snowflake_registry; CREATE TABLE public.snowflake_registry ('
		  . ddl($col => $type) . ', PRIMARY KEY (datacenter_id, machine_id))');
	my $err = fails('postgres', "SELECT public.snowflake_claim_node('public.freg'::pg_catalog.regclass, '1 minute'::interval)",
		"a claim through a foreign table whose remote $col is $type");
	like($err, $type eq 'int' ? qr/22003: value "\d+" is out of range for type integer/ : qr/42804: registry public.freg does not keep what a claim writes/, "refused (42804): remote $col $type");
	is($node->safe_psql('fleet', 'SELECT count(*) FROM public.snowflake_registry'), '0', 'and nothing was kept there');
	like(fails('postgres', 'SELECT snowflake_next()', 'generation after it'),
		qr/holds no current registry claim/, 'no claim counted');
}

# A remote timestamp without time zone holds the lease's end in UTC, whatever the time zone of
# the session that claims (a claim in Tokyo stored Tokyo's wall time, which a takeover in another
# time zone read as another instant).
$node->safe_psql('fleet', 'DROP TABLE public.snowflake_registry; CREATE TABLE public.snowflake_registry ('
	  . ddl(expires_at => 'timestamp', claimed_at => 'timestamp') . ', PRIMARY KEY (datacenter_id, machine_id))');
my $until = $node->safe_psql('postgres', "SET TimeZone = 'Asia/Tokyo';
SELECT extract(epoch FROM public.snowflake_claim_node('public.freg'::pg_catalog.regclass, '1 minute'::interval))");
is($node->safe_psql('fleet', "SELECT extract(epoch FROM expires_at) FROM public.snowflake_registry"), $until,
	'a claim from a session in Asia/Tokyo stores the lease\'s end in UTC wall time');
$node->safe_psql('postgres', "SET TimeZone = 'Asia/Tokyo';
SELECT public.snowflake_release_node('public.freg'::pg_catalog.regclass)");

# A release whose remote row rounds the mark it records is refused; the fence stays.
$node->safe_psql('fleet', 'DROP TABLE public.snowflake_registry; CREATE TABLE public.snowflake_registry ('
	  . ddl() . ', PRIMARY KEY (datacenter_id, machine_id))');
$node->safe_psql('postgres', "SELECT public.snowflake_claim_node('public.freg'::pg_catalog.regclass, '1 minute'::interval)");
ok($node->safe_psql('postgres', 'SELECT snowflake_next()') > 0, 'a claim through the exact foreign registry counts');
$node->safe_psql('fleet', 'ALTER TABLE public.snowflake_registry ALTER high_water_ms TYPE numeric(16,-5)');
like(fails('postgres', "SELECT public.snowflake_release_node('public.freg'::pg_catalog.regclass)",
		'a release through a foreign table whose remote high_water_ms is numeric(16,-5)'),
	qr/42804: registry public.freg does not keep what a release writes/, 'refused (42804)');
is($node->safe_psql('fleet', q{SELECT expires_at > now() FROM public.snowflake_registry}), 't',
	'the registry row still names the lease (the next holder waits for its end)');
like(fails('postgres', 'SELECT snowflake_next()', 'generation after the failed release'),
	qr/refused/, 'the release fenced the node all the same');

$node->stop;
done_testing();
