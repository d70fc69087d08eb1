# 212_registry_overload.pl: the documented by-hand calls cannot be turned to a
# function planted in the extension's own schema, and a registry column's type
# cannot run a hostile role's code (outside attack on issue 17, F1 and F2).
#
# F1: a role that owns the database (so, on PostgreSQL 15, schema public)
# plants public.snowflake_claim_node(text, text), (text, interval) and
# public.snowflake_release_node(text).  An untyped call prefers (text, text)
# over the extension's (regclass, interval); the documentation's calls, with
# typed arguments, must match the extension's functions exactly.
# F2: a domain whose constraint calls a hostile function, on a registry column
# (or named in a constraint), is refused before anything is written.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('s');
$node->init;
$node->append_conf(
	'postgresql.conf', q(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 4
snowflake.machine_id = 2
snowflake.require_claim = on
));
$node->start;

sub fails
{
	my ($db, $sql, $what) = @_;
	my ($ret, $out, $err) = $node->psql($db, "\\set VERBOSITY verbose\n$sql");
	isnt($ret, 0, "$what: fails");
	return $err;
}

sub is_superuser
{
	my ($role) = @_;
	return $node->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = '$role'");
}

my $registry_ddl = q{
    datacenter_id int NOT NULL,
    machine_id    int NOT NULL,
    owner         text NOT NULL,
    claimed_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    high_water_ms bigint,
    PRIMARY KEY (datacenter_id, machine_id)
};

# --- F1: the attacker owns the database, so it can create functions in public.
$node->safe_psql('postgres', q{CREATE ROLE app LOGIN; CREATE DATABASE appdb OWNER app;});
$node->safe_psql('appdb', qq{CREATE EXTENSION snowflake; CREATE TABLE public.snowflake_registry ($registry_ddl);});
# Since round 18 the extension's event trigger refuses such look-alikes at their creation
# (131_schema_guard.pl); the superuser disables it here to check the defences beneath it.
my ($ret, $out, $err) = $node->psql('appdb',
	q{CREATE FUNCTION public.snowflake_claim_node(r text, l text) RETURNS timestamptz LANGUAGE sql AS 'SELECT now()'},
	extra_params => [ '-U', 'app' ]);
like($err, qr/cannot have "snowflake_claim_node" in schema "public": extension snowflake has a function of that name there/,
	'the look-alike is refused at its creation');
$node->safe_psql('appdb', 'ALTER EVENT TRIGGER snowflake_schema_guard_end DISABLE');
$node->safe_psql(
	'appdb', q{
CREATE FUNCTION public.escalate() RETURNS boolean LANGUAGE plpgsql AS
$$BEGIN IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN EXECUTE 'ALTER ROLE app SUPERUSER'; END IF; RETURN true; END$$;
CREATE FUNCTION public.snowflake_claim_node(r text, l text) RETURNS timestamptz LANGUAGE plpgsql AS
$$BEGIN PERFORM public.escalate(); RETURN now(); END$$;
CREATE FUNCTION public.snowflake_claim_node(r text, l interval) RETURNS timestamptz LANGUAGE plpgsql AS
$$BEGIN PERFORM public.escalate(); RETURN now(); END$$;
CREATE FUNCTION public.snowflake_claim_node(r text) RETURNS timestamptz LANGUAGE plpgsql AS
$$BEGIN PERFORM public.escalate(); RETURN now(); END$$;
CREATE FUNCTION public.snowflake_release_node(r text) RETURNS boolean LANGUAGE plpgsql AS
$$BEGIN RETURN public.escalate(); END$$;
}, extra_params => [ '-U', 'app' ]);
$node->safe_psql('appdb', 'ALTER EVENT TRIGGER snowflake_schema_guard_end ENABLE');
is(is_superuser('app'), 'f', 'app starts unprivileged');

# The trap is real: an untyped call, as the documentation gave it before, runs the plant.
$node->psql('appdb', "SELECT public.snowflake_claim_node('public.snowflake_registry', '5 minutes')");
is(is_superuser('app'), 't', 'control: an untyped qualified call runs the planted (text, text)');
$node->safe_psql('postgres', 'ALTER ROLE app NOSUPERUSER');

# Every by-hand call the documentation gives (README, docs/fleet.md, the pg_cron recipe, hints).
my @lines;
for my $doc ('README.md', 'docs/fleet.md', 'docs/failover.md', 'docs/operations.md', 'src/registry.c')
{
	my $text = slurp_file("$FindBin::RealBin/../../$doc");
	push @lines, map { [ $doc, $_ ] }
	  ($text =~ /(snowflake_(?:claim|release)_node\('[^']*'(?:::[\w.]+)?(?:,\s*'[^']*'(?:::[\w.]+)?)?\))/g);
}
my %kinds = map { ($_->[1] =~ /(claim|release)/)[0] => 1 } @lines;
ok($kinds{claim} && $kinds{release}, 'the documentation gives by-hand claim and release calls (' . scalar(@lines) . ')');
for my $l (@lines)
{
	my ($doc, $call) = @$l;
	# (a hint's placeholder names the extension's schema)
	$call =~ s/<extension schema>\./public./g;
	$call =~ s/'<[^']*>'/'public.snowflake_registry'/;
	like($call, qr/^snowflake_\w+\('[^']*'::pg_catalog\.regclass(, '[^']*'::interval)?\)$/, "$doc: \"$call\" types every argument exactly");
	$node->psql('appdb', "SELECT public.$call") unless $call =~ /^public\./;
	$node->psql('appdb', "SELECT $call") if $call =~ /^public\./;
	is(is_superuser('app'), 'f', "$doc: \"$call\" run by a superuser runs no planted function");
}
# The exact typed call reaches the extension's functions, which refuse before doing anything
# while a role that does not have the caller's rights can create functions in their schema.
$node->safe_psql('appdb', "CREATE SCHEMA reg; CREATE TABLE reg.snowflake_registry ($registry_ddl)");
for my $call ("public.snowflake_claim_node('reg.snowflake_registry'::regclass, '5 minutes'::interval)",
	"public.snowflake_release_node('reg.snowflake_registry'::regclass)")
{
	my $err = fails('appdb', "SELECT $call", "$call while app's look-alikes are in the extension's schema");
	like($err, qr/42723: schema public holds a function snowflake_(claim|release)_node that is not extension snowflake's/,
		'refused first: a look-alike of the extension\'s functions is in its schema (round 18)');
	like($err, qr/HINT:  Rename it or move it to another schema/, 'the hint gives the fix');
}
is($node->safe_psql('appdb', 'SELECT count(*) FROM reg.snowflake_registry'), '0', 'nothing was claimed');
# The same for a role given CREATE on the schema, or a member of such a role.
$node->safe_psql('postgres', q{CREATE ROLE writer NOLOGIN; CREATE ROLE member LOGIN IN ROLE writer; CREATE EXTENSION snowflake;
CREATE TABLE public.snowflake_registry (datacenter_id int NOT NULL, machine_id int NOT NULL, owner text NOT NULL,
    claimed_at timestamptz NOT NULL, expires_at timestamptz NOT NULL, high_water_ms bigint, PRIMARY KEY (datacenter_id, machine_id));
GRANT CREATE ON SCHEMA public TO writer;});
like(fails('postgres', "SELECT public.snowflake_claim_node('public.snowflake_registry'::regclass, '5 minutes'::interval)", 'a claim while writer has CREATE on public'),
	qr/42501: role member can create objects in schema public of extension snowflake.*\n.*Through role writer/, 'refused, naming the member and the role it acts through');
$node->safe_psql('postgres', 'REVOKE CREATE ON SCHEMA public FROM writer');
like($node->safe_psql('postgres', "SELECT public.snowflake_claim_node('public.snowflake_registry'::regclass, '5 minutes'::interval)"),
	qr/^\d{4}-/, 'claimed once CREATE is revoked');
is($node->safe_psql('postgres', "SELECT public.snowflake_release_node('public.snowflake_registry'::regclass)"), 't', 'and released');
$node->safe_psql('postgres', 'DROP TABLE public.snowflake_registry');
# With the look-alikes moved out and the schema given to a superuser (app can create no more): the
# extension's own check of the schema's CREATE rights passes, and the typed calls run its functions.
$node->safe_psql('appdb', q{CREATE SCHEMA planted;
ALTER FUNCTION public.snowflake_claim_node(text, text) SET SCHEMA planted;
ALTER FUNCTION public.snowflake_claim_node(text, interval) SET SCHEMA planted;
ALTER FUNCTION public.snowflake_claim_node(text) SET SCHEMA planted;
ALTER FUNCTION public.snowflake_release_node(text) SET SCHEMA planted;});
like(fails('appdb', "SELECT public.snowflake_claim_node('reg.snowflake_registry'::regclass, '5 minutes'::interval)", 'a claim while app can create in public'),
	qr/42501: role app can create objects in schema public of extension snowflake, and does not have the rights of role/,
	'refused: the extension\'s schema is writable by an untrusted role');
$node->safe_psql('appdb', 'ALTER SCHEMA public OWNER TO CURRENT_USER');
like($node->safe_psql('appdb', "SELECT public.snowflake_claim_node('reg.snowflake_registry'::regclass, '5 minutes'::interval)"),
	qr/^\d{4}-/, 'the typed claim is the extension\'s');
is($node->safe_psql('appdb', q{SELECT split_part(owner, '/', 1) = public.snowflake_server_identity() FROM reg.snowflake_registry}), 't',
	'and wrote the registry');
is($node->safe_psql('appdb', "SELECT public.snowflake_release_node('reg.snowflake_registry'::regclass)"), 't',
	'the typed release is the extension\'s');
is(is_superuser('app'), 'f', 'app never became superuser');

# --- F2: a domain on a registry column whose constraint calls a hostile function.
$node->safe_psql('postgres', q{CREATE ROLE dom LOGIN; GRANT CREATE ON DATABASE postgres TO dom;});
$node->safe_psql(
	'postgres', q{
CREATE SCHEMA dom;
CREATE FUNCTION dom.f(bigint) RETURNS boolean LANGUAGE plpgsql AS $$BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN EXECUTE 'ALTER ROLE dom SUPERUSER'; END IF; RETURN true; END$$;
CREATE DOMAIN dom.ms AS bigint;
GRANT USAGE ON SCHEMA dom TO PUBLIC;
}, extra_params => [ '-U', 'dom' ]);
$node->safe_psql('postgres', q{CREATE TABLE public.reg2 (datacenter_id int NOT NULL, machine_id int NOT NULL, owner text NOT NULL,
    claimed_at timestamptz NOT NULL, expires_at timestamptz NOT NULL, high_water_ms dom.ms,
    PRIMARY KEY (datacenter_id, machine_id));});
$node->safe_psql('postgres', 'ALTER DOMAIN dom.ms ADD CONSTRAINT c CHECK (dom.f(VALUE))', extra_params => [ '-U', 'dom' ]);
like(fails('postgres', "SELECT public.snowflake_claim_node('public.reg2'::regclass, '5 minutes'::interval)", 'a claim of a registry with a domain column'),
	qr/42501: registry public.reg2 column high_water_ms has type dom.ms, which is not a built-in type/, 'a domain-typed column is refused');
like(fails('postgres', "SELECT public.snowflake_release_node('public.reg2'::regclass)", 'a release of that registry'),
	qr/42501: registry public.reg2 column high_water_ms has type dom.ms/, 'so is a release');
is(is_superuser('dom'), 'f', 'the domain\'s constraint did not run as superuser');
is($node->safe_psql('postgres', 'SELECT count(*) FROM public.reg2'), '0', 'nothing was written');

# An array of the domain, and a cast to the domain in a constraint, the same.
$node->safe_psql('postgres', 'ALTER TABLE public.reg2 ALTER COLUMN high_water_ms TYPE bigint; ALTER TABLE public.reg2 ADD COLUMN extra dom.ms[]');
like(fails('postgres', "SELECT public.snowflake_claim_node('public.reg2'::regclass, '5 minutes'::interval)", 'a registry with a column of an array of the domain'),
	qr/42501: registry public.reg2 column extra has type dom.ms\[\], which is not a built-in type/, 'an array of a domain is refused');
$node->safe_psql('postgres', 'ALTER TABLE public.reg2 DROP COLUMN extra; ALTER TABLE public.reg2 ADD CONSTRAINT k CHECK ((high_water_ms::dom.ms) IS NOT NULL OR true)');
like(fails('postgres', "SELECT public.snowflake_claim_node('public.reg2'::regclass, '5 minutes'::interval)", 'a registry whose constraint casts to the domain'),
	qr/42501: registry public.reg2 uses type dom.ms \(in a default, constraint or index\), which is not a built-in type/, 'a cast to a domain in a constraint is refused');
is(is_superuser('dom'), 'f', 'dom never became superuser');
$node->safe_psql('postgres', 'ALTER TABLE public.reg2 DROP CONSTRAINT k');
like($node->safe_psql('postgres', "SELECT public.snowflake_claim_node('public.reg2'::regclass, '5 minutes'::interval)"),
	qr/^\d{4}-/, 'with built-in types only, the same registry is claimed');

done_testing();
