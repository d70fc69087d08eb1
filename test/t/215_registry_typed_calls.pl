# 215_registry_typed_calls.pl: the documented typed calls cannot be taken over
# through the TYPE name of their casts (attack 17b A3).
#
# '...'::regclass finds the type regclass through search_path like any other
# name: the owner of a database (not a superuser) plants a domain named
# regclass, whose CHECK calls its function, in a schema named after the
# superuser, and puts that schema before pg_catalog in the database's
# search_path.  The claim and release lines of README.md and docs/fleet.md,
# the pg_cron recipe and the hints the errors print, run by a superuser as
# they are printed, must never run that CHECK.  And no document, hint or
# detail may print an unqualified ::regclass (nor a hint or detail ::regtype).

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $top = "$FindBin::RealBin/../..";

# --- The text itself: documents, C hints and the SQL's hints and details.

my @bad;
for my $file ('README.md', glob("$top/docs/*.md"))
{
	my $path = $file =~ m{^/} ? $file : "$top/$file";
	my $n = 0;
	for my $line (split /\n/, slurp_file($path))
	{
		$n++;
		# (PostgreSQL's own output of a sequence default is quoted as it prints it)
		next if $line =~ /nextval\('[\w.]+'::regclass\)/ && $line !~ /snowflake_/;
		push @bad, "$path:$n: $line" if $line =~ /::regclass\b/;
	}
}
for my $file (glob("$top/src/*.c"), "$top/sql/snowflake--1.2--1.3.sql")
{
	my $n = 0;
	for my $line (split /\n/, slurp_file($file))
	{
		$n++;
		push @bad, "$file:$n: $line"
		  if $line =~ /(?:errhint|errdetail|errmsg|HINT|DETAIL)/ && $line =~ /::(?:regclass|regtype)\b/;
	}
}
is(join("\n", @bad), '', 'no document, hint or detail prints an unqualified ::regclass (nor a hint ::regtype)');

# --- The plant.

my $node = PostgreSQL::Test::Cluster->new('c');
$node->init;
$node->append_conf(
	'postgresql.conf', q(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 3
snowflake.machine_id = 9
snowflake.require_claim = on
));
$node->start;
my $su = $node->safe_psql('postgres', 'SELECT current_user');

$node->safe_psql('postgres', 'CREATE ROLE alice LOGIN; CREATE DATABASE app OWNER alice');
# The extension and the registry in a schema of their own, owned by the superuser (as docs/fleet.md asks).
$node->safe_psql('app', q{
CREATE SCHEMA sf;
CREATE EXTENSION snowflake SCHEMA sf;
CREATE TABLE sf.snowflake_registry (
    datacenter_id int NOT NULL,
    machine_id    int NOT NULL,
    owner         text NOT NULL,
    claimed_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    high_water_ms bigint,
    PRIMARY KEY (datacenter_id, machine_id)
);
});
$node->safe_psql(
	'app', qq{
CREATE SCHEMA "$su";
CREATE FUNCTION "$su".evil(x pg_catalog.regclass) RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE alice SUPERUSER';
    END IF;
    RETURN true;
END\$\$;
CREATE DOMAIN "$su".regclass AS pg_catalog.regclass CHECK ("$su".evil(VALUE));
CREATE DOMAIN "$su".regtype AS pg_catalog.regtype CHECK ("$su".evil(NULL));
GRANT USAGE ON SCHEMA "$su" TO PUBLIC;
ALTER DATABASE app SET search_path = "\$user", public, pg_catalog;
}, extra_params => [ '-U', 'alice' ]);

sub alice_is_superuser
{
	return $node->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = 'alice'");
}
is(alice_is_superuser(), 'f', 'alice starts unprivileged');
# The plant works: an unqualified cast, run by a superuser, runs alice's CHECK.
$node->safe_psql('app', "SELECT 'sf.snowflake_registry'::regclass");
is(alice_is_superuser(), 't', 'an unqualified ::regclass run by a superuser there runs the planted CHECK (the attack)');
$node->safe_psql('postgres', 'ALTER ROLE alice NOSUPERUSER');

# --- The documented lines, as printed (with the extension's and the registry's schema sf).

my @lines;
for my $doc ('README.md', 'docs/fleet.md')
{
	my $text = slurp_file("$top/$doc");
	push @lines, map { [ $doc, $_ ] }
	  ($text =~ /((?:public\.|<extension schema>\.)snowflake_(?:claim|release)_node\('(?:public\.snowflake_registry|<schema>\.<registry(?: table)?>)'[^)]*\))/g);
}
cmp_ok(scalar(@lines), '>=', 6, 'README.md and docs/fleet.md give typed claim and release lines (' . scalar(@lines) . ')');
my $cron = 0;
for my $l (@lines)
{
	my ($doc, $call) = @$l;
	(my $sql = $call) =~ s/^(public|<extension schema>)\./sf./;
	$sql =~ s/'(public\.snowflake_registry|<schema>\.<registry(?: table)?>)'/'sf.snowflake_registry'/;
	$node->psql('app', "SELECT $sql");
	is(alice_is_superuser(), 'f', "$doc: \"$call\" run by a superuser runs no planted CHECK");
	$node->safe_psql('postgres', 'ALTER ROLE alice NOSUPERUSER');
}

# The hints the errors print, run as they say.
my ($ret, $out, $err) = $node->psql('app', 'SELECT sf.snowflake_release_node(\'sf.snowflake_registry\'::pg_catalog.regclass); SELECT sf.snowflake_next()');
like($err, qr/HINT:  Run SELECT <extension schema>\.snowflake_claim_node/, 'a refused ID hints at the claim');
# (as to a registry role: the function itself then refuses, with a hint)
$node->safe_psql('app', 'GRANT USAGE ON SCHEMA sf TO alice; GRANT EXECUTE ON FUNCTION sf.snowflake_note_claim(int, int, timestamptz, bigint) TO alice');
($ret, $out, $err) = $node->psql('app', "SELECT sf.snowflake_note_claim(3, 9, now() + interval '1 minute', NULL)",
	extra_params => [ '-U', 'alice' ]);
like($err, qr/HINT:  Claim with <extension schema>\.snowflake_claim_node/, 'a refused note_claim hints at the claim');
my @hints = ((scalar(slurp_file($node->logfile)) =~ /HINT:  ([^\n]*snowflake_claim_node[^\n]*)/g));
cmp_ok(scalar(@hints), '>=', 2, 'the hints were logged');
for my $hint (@hints)
{
	next unless $hint =~ /(<extension schema>\.snowflake_claim_node\('<schema>\.<registry table>'[^)]*\))/;
	my $call = $1;
	(my $sql = $call) =~ s/^<extension schema>\./sf./;
	$sql =~ s/'<schema>\.<registry table>'/'sf.snowflake_registry'/;
	$node->psql('app', "SELECT $sql");
	is(alice_is_superuser(), 'f', "the hint \"$call\" run by a superuser runs no planted CHECK");
	$node->safe_psql('postgres', 'ALTER ROLE alice NOSUPERUSER');
}

$node->stop;
done_testing();
