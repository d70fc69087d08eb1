# 620_docs_hostile_schema.pl: what the documentation tells a superuser to run, run exactly as written
# in a database where another role may create objects (outside attack on issue 19, round 14, F3).
#
# A role with CREATE on the database makes a schema named like the superuser ("$user" comes first in
# the default search_path) and plants there what an unpinned, unqualified query would pick before
# PostgreSQL's own: ||(name, name) (docs/failover.md's query for carried settings joined names with
# ||), setval(text, bigint) (docs/migration.md's way back to a sequence), look-alikes of
# snowflake_status(), snowflake_state(), snowflake_adopt_state() and snowflake_accept_clock().  Each
# records its call and makes the role superuser when a superuser runs it.  The blocks as documented
# (search_path pinned, names qualified) run none of it; the old forms of two of them, as a control,
# do.
use strict;
use warnings FATAL => 'all';
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $root = "$FindBin::RealBin/../..";

# The ```sql block of a document (indented or not) whose text matches $re.
sub doc_block
{
	my ($doc, $re) = @_;
	my $text = slurp_file("$root/$doc");
	while ($text =~ /^([ \t]*)```sql\n(.*?)^\1```/msg)
	{
		my ($indent, $block) = ($1, $2);
		$block =~ s/^\Q$indent\E//mg;
		return $block if $block =~ $re;
	}
	die "$doc has no SQL block matching $re";
}

my $t = SnowflakeTest->new('docs_hostile');
$t->start;
my $super = $t->query('SELECT current_user');
$t->query(q{CREATE ROLE mallory LOGIN; CREATE DATABASE app});
my $n = $t->node;
$n->safe_psql('app', q{CREATE EXTENSION snowflake; GRANT CREATE ON DATABASE app TO mallory;
CREATE TABLE public.orders (id bigint PRIMARY KEY); INSERT INTO public.orders VALUES (41), (42);
CREATE TABLE public.planted_calls (what text); GRANT INSERT ON public.planted_calls TO PUBLIC;
ALTER ROLE mallory IN DATABASE app SET snowflake.max_wait_ms = '5000'});
$n->safe_psql('app', qq{CREATE SCHEMA "$super";
CREATE FUNCTION "$super".pwn(what text) RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
	INSERT INTO public.planted_calls VALUES (what);
	IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		EXECUTE 'ALTER ROLE mallory SUPERUSER';
	END IF;
END \$\$;
CREATE FUNCTION "$super".cat(name, name) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN PERFORM "$super".pwn('||(name, name)'); RETURN \$1::text || \$2::text; END \$\$;
CREATE OPERATOR "$super".|| (leftarg = name, rightarg = name, function = "$super".cat);
CREATE FUNCTION "$super".eqreg(oid, regclass) RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN PERFORM "$super".pwn('=(oid, regclass)'); RETURN \$1 OPERATOR(pg_catalog.=) \$2::oid; END \$\$;
CREATE OPERATOR "$super".= (leftarg = oid, rightarg = regclass, function = "$super".eqreg);
CREATE FUNCTION "$super".setval(text, bigint) RETURNS bigint LANGUAGE plpgsql AS \$\$
BEGIN PERFORM "$super".pwn('setval(text, bigint)'); RETURN \$2; END \$\$;
CREATE FUNCTION "$super".snowflake_adopt_state() RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN PERFORM "$super".pwn('snowflake_adopt_state()'); RETURN false; END \$\$;
CREATE FUNCTION "$super".snowflake_accept_clock() RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN PERFORM "$super".pwn('snowflake_accept_clock()'); RETURN false; END \$\$;
CREATE FUNCTION "$super".snowflake_status()
RETURNS TABLE (datacenter_id int, machine_id int, clock_held boolean, clock_offset_ms bigint, max_clock_jump_ms bigint, refusals bigint)
LANGUAGE plpgsql AS \$\$ BEGIN PERFORM "$super".pwn('snowflake_status()'); END \$\$;
CREATE FUNCTION "$super".snowflake_state()
RETURNS TABLE (state text, detail text, mark_write_failures bigint, write_in_progress_ms float8, slowest_recent_write_ms float8, worker_running boolean)
LANGUAGE plpgsql AS \$\$ BEGIN PERFORM "$super".pwn('snowflake_state()'); END \$\$;}, extra_params => [ '-U', 'mallory' ]);

sub planted
{
	return $n->safe_psql('app', q{SELECT coalesce(string_agg(DISTINCT what COLLATE "C", ', ' ORDER BY what COLLATE "C"), 'none') FROM public.planted_calls});
}
sub mallory_super
{
	return $n->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'});
}

# Control: the old forms run the planted code as the superuser (so the checks below can fail).
$n->safe_psql('app', q{SELECT count(*) FROM snowflake_status()});
$n->safe_psql('app', q{SELECT 'x', coalesce(d.datname, 'every database') || ', ' || coalesce(r.rolname, 'every role')
FROM pg_catalog.pg_db_role_setting s LEFT JOIN pg_catalog.pg_database d ON d.oid = s.setdatabase
LEFT JOIN pg_catalog.pg_roles r ON r.oid = s.setrole});
is(planted(), 'snowflake_status(), ||(name, name)', 'control: the unpinned forms run the planted code');
is(mallory_super(), 't', 'control: and make mallory superuser');
$n->safe_psql('app', q{ALTER ROLE mallory NOSUPERUSER; TRUNCATE public.planted_calls});

# The documented blocks, exactly as written.
my @blocks = (
	[ 'README.md (administrative calls)', doc_block('README.md', qr/SET LOCAL search_path = pg_catalog, pg_temp;\nSELECT public\.snowflake_state\(\)/) ],
	[ 'docs/failover.md (carried settings)', doc_block('docs/failover.md', qr/pg_db_role_setting/) ],
	[ 'docs/operations.md (clock alert)', doc_block('docs/operations.md', qr/snowflake_status\(\)/) ],
	[ 'docs/operations.md (state alert)', doc_block('docs/operations.md', qr/snowflake_state\(\)/) ],
	[ 'docs/migration.md (back to a sequence)', doc_block('docs/migration.md', qr/setval/) ],
);
# The single calls the documentation and the hints give.
for my $doc ('README.md', 'docs/failover.md', 'docs/clock.md', 'docs/operations.md')
{
	my %seen;
	for my $call (slurp_file("$root/$doc") =~ /`(SELECT [^`]*snowflake_(?:adopt_state|accept_clock|status|state)\(\)[^`]*)`/g)
	{
		push @blocks, [ "$doc: $call", $call =~ /;$/ ? $call : "$call;" ] unless $seen{$call}++;
	}
}
# The query README gives for the extension's schema (instead of psql's \dx), with the search_path pinned.
my ($schema_query) = slurp_file("$root/README.md") =~ /`(SELECT e\.extnamespace[^`]*)`/;
die 'README.md gives no query for the extension\'s schema' unless defined $schema_query;
push @blocks, [ 'README.md: the query for the extension\'s schema', "SET search_path = pg_catalog, pg_temp;\n$schema_query;" ];
cmp_ok(scalar(@blocks), '>=', 7, 'the documentation gives the blocks and calls (' . scalar(@blocks) . ')');
for my $b (@blocks)
{
	my ($what, $sql) = @$b;
	my ($ret, $out, $err) = $n->psql('app', $sql);
	is($ret, 0, "$what runs") or diag($err);
	is(planted(), 'none', "$what: the planted code never ran");
	is(mallory_super(), 'f', "$what: mallory stays unprivileged");
}
is($n->safe_psql('app', "SET search_path = pg_catalog, pg_temp;\n$schema_query;"), 'public', 'README.md: the query names the extension\'s schema');

# Control: psql's \dx, which the documentation no longer gives, runs the planted =(oid, regclass).
$n->psql('app', '\dx snowflake');
is(planted(), '=(oid, regclass)', 'control: psql\'s \dx runs the planted operator (why README gives a pinned query)');
$n->safe_psql('app', q{ALTER ROLE mallory NOSUPERUSER; TRUNCATE public.planted_calls});

is($n->safe_psql('app', q{SELECT pg_catalog.nextval('public.orders_id_seq')}), '43',
	'docs/migration.md: the sequence was set above the largest ID');

# README's remedy for a damaged state file (round 19, F3): its query for the last timestamp, as
# written (every name qualified), runs no snowflake_timestamp(bigint) planted in a schema named like
# the superuser; the old form, as a control, does.
my ($remedy) = slurp_file("$root/README.md") =~ /`(SELECT pg_catalog\.max\(public\.snowflake_timestamp\(id\)\)[^`]*)`/;
die 'README.md gives no query for the last timestamp' unless defined $remedy;
$n->safe_psql('app', qq{CREATE FUNCTION "$super".snowflake_timestamp(bigint) RETURNS timestamptz LANGUAGE plpgsql AS \$\$
BEGIN PERFORM "$super".pwn('snowflake_timestamp(bigint)'); RETURN now(); END \$\$;}, extra_params => [ '-U', 'mallory' ]);
like($n->safe_psql('app', "$remedy;"), qr/^20\d\d-/, 'README.md: the damaged-file remedy query runs');
is(planted(), 'none', 'README.md: the damaged-file remedy query runs no planted code');
is(mallory_super(), 'f', 'README.md: the damaged-file remedy query: mallory stays unprivileged');
$n->safe_psql('app', 'SELECT max(snowflake_timestamp(id)) FROM orders');
is(planted(), 'snowflake_timestamp(bigint)', 'control: the old, unqualified remedy query runs the planted function');
$n->safe_psql('app', q{ALTER ROLE mallory NOSUPERUSER; TRUNCATE public.planted_calls});

# README's CREATE EXTENSION (round 17, F3): a role with CREATE on the database made a schema
# named like the superuser first; the block names the schema, so the extension goes to public,
# where every documented call looks for it.  Control: without SCHEMA it goes to "$user".
my $install = doc_block('README.md', qr/^CREATE EXTENSION snowflake/m);
like($install, qr/CREATE EXTENSION snowflake SCHEMA public;/, 'README.md: the install block names the schema');
my $ext_schema = q{SELECT e.extnamespace::pg_catalog.regnamespace FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'snowflake'};
for my $db ('app2', 'app3')
{
	$t->query(qq{CREATE DATABASE $db});
	$n->safe_psql($db, 'GRANT CREATE ON DATABASE ' . $db . ' TO mallory');
	$n->safe_psql($db, qq{CREATE SCHEMA "$super"}, extra_params => [ '-U', 'mallory' ]);
}
$n->safe_psql('app2', $install);
is($n->safe_psql('app2', $ext_schema), 'public', 'README.md: the install block puts the extension in public, not in a schema named like the superuser');
$n->safe_psql('app3', 'CREATE EXTENSION snowflake;');
is($n->safe_psql('app3', $ext_schema), qq{"$super"} =~ s/"//gr, 'control: without SCHEMA the extension goes to the schema named like the superuser');

# docs/fleet.md's writer and meeting-place blocks and docs/migration.md's several-owners blocks
# (round 18, F4: their CREATE TABLE was unpinned): a role with CREATE on the database planted
# snowflake_next() in a schema named like the superuser.  Control: the old writer block binds the
# table's default to the planted function, which then runs as every role that inserts.
$t->query(q{CREATE DATABASE app4});
$n->safe_psql('app4', q{GRANT CREATE ON DATABASE app4 TO mallory;
CREATE TABLE public.planted_calls (what text); GRANT INSERT ON public.planted_calls TO PUBLIC});
$n->safe_psql('app4', qq{CREATE SCHEMA "$super";
CREATE FUNCTION "$super".snowflake_next() RETURNS bigint LANGUAGE plpgsql AS \$\$
BEGIN
	INSERT INTO public.planted_calls VALUES ('snowflake_next()');
	IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		EXECUTE 'ALTER ROLE mallory SUPERUSER';
	END IF;
	RETURN 1;
END \$\$;}, extra_params => [ '-U', 'mallory' ]);
sub planted4
{
	return $n->safe_psql('app4', q{SELECT coalesce(string_agg(what, ', '), 'none') FROM public.planted_calls});
}
my $meet = doc_block('docs/fleet.md', qr/CREATE SUBSCRIPTION/);
$meet =~ s/^CREATE SUBSCRIPTION.*\n//mg;    # no writers to subscribe to here
like($meet, qr/SET LOCAL search_path = pg_catalog, pg_temp;/, 'docs/fleet.md: the meeting-place block pins the search_path');
$n->safe_psql('app4', $meet);
is($n->safe_psql('app4', q{SELECT pg_catalog.format_type(atttypid, atttypmod) FROM pg_catalog.pg_attribute WHERE attrelid = 'public.events'::pg_catalog.regclass AND attname = 'payload'}),
	'text', 'docs/fleet.md: the meeting place\'s table is public.events with pg_catalog\'s text');
my $writer = doc_block('docs/fleet.md', qr/CREATE PUBLICATION/);
like($writer, qr/SET LOCAL search_path = pg_catalog, pg_temp;/, 'docs/fleet.md: the writer block pins the search_path');
$n->safe_psql('app4', q{DROP TABLE public.events});
$n->safe_psql('app4', $writer);
$n->safe_psql('app4', q{INSERT INTO public.events (payload) VALUES ('x')});
is(planted4(), 'none', 'docs/fleet.md: the writer block\'s default runs no planted snowflake_next()');
is(mallory_super(), 'f', 'docs/fleet.md: mallory stays unprivileged');
for my $m (doc_block('docs/migration.md', qr/CREATE ROLE app_owner/))
{
	my ($ret, $out, $err) = $n->psql('app4', $m);
	is($ret, 0, 'docs/migration.md: the several-owners blocks run') or diag($err);
	is($n->safe_psql('app4', q{SELECT pg_catalog.format_type(atttypid, atttypmod) FROM pg_catalog.pg_attribute WHERE attrelid = 'app.accounts'::pg_catalog.regclass AND attname = 'id'}),
		'bigint', 'docs/migration.md: the several-owners migration ran');
}
is(planted4(), 'none', 'docs/migration.md: the several-owners blocks run no planted code');
$n->safe_psql('app4', q{DROP PUBLICATION events_pub; DROP TABLE public.events});
$n->safe_psql('app4', q{CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_next(), payload text); INSERT INTO events (payload) VALUES ('x')});
is(planted4(), 'snowflake_next()', 'control: the old, unpinned writer block binds the planted snowflake_next()');
is(mallory_super(), 't', 'control: which makes mallory superuser when a superuser inserts');

$t->stop;
done_testing();
