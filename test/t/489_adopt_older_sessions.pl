# 489_adopt_older_sessions.pl: a copy that becomes a new server issues no ID
# of the original's nodes after snowflake_adopt_state() (outside attack on
# issue 19, round 7).  The original runs on throughout, as node 1/1 and, in
# database app, 1/2 (ALTER DATABASE), which the copy carries.
#
# F1: a statement that began before the copy's new ids were reloaded kept
#     generating under the old node after another session adopted (24,541
#     and 32,080 duplicates).  Sessions that began before an adoption now
#     issue IDs only while their node is the one a new session of their
#     database and user gets (the files as reloaded, the catalog's settings).
# F2: a connection opened before ALTER DATABASE gave new ids kept the old
#     node (40,136), and a copy carries the original's per-database node
#     settings (68,809).  Adoption refuses while database or role settings
#     give node ids, and older connections issue nothing after it.
# F3: any reload during an adoption retry loop refused every try until the
#     statement ended; a reload that changes no id no longer does.
# Round 8 (on the fix): the adoption in a transaction that removed the
# settings and rolled back (227,283), and a prepared transaction the copy
# carried, committed after the adoption (790,509), brought the original's
# settings back; both are refused now.
# And failover_adopt: a session of the promoted standby opened before a
# replicated ALTER DATABASE changed its node issues nothing; one whose node is
# current issues IDs (no refusal of sessions that kept their settings).

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $o = SnowflakeTest->new('original', allows_streaming => 1, conf => 'max_prepared_transactions = 2');
$o->start;
$o->query('CREATE EXTENSION snowflake');
$o->query('CREATE DATABASE app');
$o->query("\\c app\nCREATE EXTENSION snowflake");
$o->query('ALTER DATABASE app SET snowflake.machine_id = 2');
$o->query('CREATE ROLE bob LOGIN SUPERUSER');
$o->query('ALTER ROLE bob IN DATABASE postgres SET snowflake.datacenter_id = 5');
$o->ids('SELECT snowflake_next() FROM generate_series(1, 100)', 'original', count => 100);
# A prepared transaction that would give bob's sessions the original's node (round 8, F3).
$o->query(q{BEGIN; ALTER ROLE bob SET snowflake.machine_id = 1; PREPARE TRANSACTION 'xa1'});
$o->node->backup('ob');
$o->query(q{ROLLBACK PREPARED 'xa1'});

# The copy, started as a server of its own (id_key: its IDs meet the original's).
my $c = SnowflakeTest->new('copy', from_backup => [ $o, 'ob' ], standby => 0, id_key => 'original');
my $r;
$c->start;
$r = $c->next_refused('the copy', undef, message => qr/is a copy/);
like($r->{hint}, qr/If it is a new server: give it its own snowflake\.datacenter_id and snowflake\.machine_id in its configuration files, remove the node settings it carried \(ALTER DATABASE and ALTER ROLE settings, functions' SET clauses\) and end its prepared transactions, then run SELECT <extension schema>\.snowflake_adopt_state\(\) \(with search_path pinned, as the README\'s section Functions shows\) and open new sessions\./,
	'the copy refusal\'s HINT gives a new server every step (round 9)');
$c->query('CREATE TABLE go (x int)');
$c->query('CREATE TABLE got (id bigint)');

# Sessions open before the copy gets its own ids:
# S1 runs one statement through the reload and the adoption, then generates.
my $s1 = $c->background_on_go('issued', q{
	BEGIN
		INSERT INTO got SELECT snowflake_next() FROM generate_series(1, 1000);
	EXCEPTION WHEN object_not_in_prerequisite_state THEN
		msg := SQLERRM;
	END;});
# A: connected to app, where the carried database setting makes it machine 2.
my $a = $c->node->background_psql('app', on_error_stop => 0);
is($a->query_safe('SHOW snowflake.machine_id'), '2', 'a session in app runs as machine 2, from the carried database setting');
# I: idle between statements, its node from the files.
my $i = $c->background;

# The copy gets its own ids, in its files, and reloads.
$c->query('ALTER SYSTEM SET snowflake.machine_id = 3');
$c->query('SELECT pg_reload_conf()');
ok($c->node->poll_query_until('postgres', 'SHOW snowflake.machine_id', '3'), 'a new session runs as machine 3');

# F2: adoption refuses while database or role settings give node ids.
$r = $c->refused('SELECT snowflake_adopt_state()', 'adopting with carried database and role settings',
	message => qr/^snowflake_adopt_state\(\) refused: database or role settings give node ids$/);
like($r->{detail}, qr/database app, every role: snowflake\.machine_id=2/, 'the detail names the database setting');
like($r->{detail}, qr/database postgres, role bob: snowflake\.datacenter_id=5/, 'and the role setting');
like($r->{hint}, qr/ALTER DATABASE \.\.\. RESET snowflake\.machine_id/, 'the hint says how to remove them');
is($c->query('SELECT state FROM snowflake_state()'), 'copy', 'still a copy');
# Round 8, F5: removed in the adoption's own transaction, the settings came back with its rollback.
$c->refused(q{BEGIN;
ALTER DATABASE app RESET snowflake.machine_id;
ALTER ROLE bob IN DATABASE postgres RESET snowflake.datacenter_id;
SELECT snowflake_adopt_state();}, 'adopting in the transaction that removes the settings', sqlstate => '25001',
	message => qr/^snowflake_adopt_state\(\) must run in a transaction that has changed nothing$/);
$c->refused(q{DO $$ BEGIN
	EXECUTE 'ALTER DATABASE app RESET snowflake.machine_id';
	EXECUTE 'ALTER ROLE bob IN DATABASE postgres RESET snowflake.datacenter_id';
	PERFORM snowflake_adopt_state();
	RAISE EXCEPTION 'and roll back';
END $$}, 'adopting in a DO block that removes the settings', sqlstate => '25001',
	message => qr/must run in a transaction that has changed nothing/);
is($c->query('SELECT state FROM snowflake_state()'), 'copy', 'neither adopted');
$c->query('ALTER DATABASE app RESET snowflake.machine_id');
$c->query('ALTER ROLE bob IN DATABASE postgres RESET snowflake.datacenter_id');
# Round 8, F3: the prepared transaction the copy carried could commit the original's settings later.
$c->refused('SELECT snowflake_adopt_state()', 'adopting while a prepared transaction waits',
	message => qr/^snowflake_adopt_state\(\) refused: 1 prepared transactions wait$/);
$c->query(q{ROLLBACK PREPARED 'xa1'});
# The adoption's checks run as the superuser who calls it: a low-privileged role plants
# look-alikes of what the prepared-transaction count uses, and the caller's search_path puts
# public first; none of them runs.
$c->query(q{CREATE ROLE mallory LOGIN;
GRANT CREATE ON SCHEMA public TO mallory;
CREATE TABLE public.planted (who text);
GRANT INSERT ON public.planted TO mallory;});
$c->query(q{SET ROLE mallory;
CREATE FUNCTION public.pg_prepared_xact(OUT transaction xid, OUT gid text, OUT prepared timestamptz,
		OUT ownerid oid, OUT dbid oid) RETURNS SETOF record LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.planted VALUES ('pg_prepared_xact as ' || current_user);
	EXECUTE 'ALTER ROLE mallory SUPERUSER';
	RETURN;
END $$;
CREATE FUNCTION public.evil_count(int8) RETURNS int8 LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.planted VALUES ('count as ' || current_user);
	EXECUTE 'ALTER ROLE mallory SUPERUSER';
	RETURN $1;
END $$;
CREATE AGGREGATE public.count(*) (SFUNC = public.evil_count, STYPE = int8, INITCOND = '0');});
is($c->query("SET search_path = public, pg_catalog;\nSELECT snowflake_adopt_state()"), 't',
	'adopted once they are removed and the prepared transaction ended (search_path public first)');
is($c->query('SELECT count(*) FROM public.planted'), '0', 'no planted function or aggregate ran in the adoption');
is($c->query(q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}), 'f', 'and the planting role is no superuser');

# The original goes on issuing its nodes' IDs.
$o->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'original after the copy adopted', count => 1000);
$o->ids("\\c app\nSELECT snowflake_next() FROM generate_series(1, 1000)", 'original in app (machine 2)', count => 1000);

# F1: the statement that began before the reload issues nothing.
$c->query('INSERT INTO go VALUES (1)');
$s1->query_until(qr/finished/, "\\echo finished\n");
like($s1->{stderr}, qr/outcome: snowflake_next\(\) refused: this session began before this server adopted the node state, and its node settings are not the current ones/,
	'a statement that began before the reload of the new ids issues no ID after the adoption');
is($c->query('SELECT count(*) FROM got'), '0', 'and inserted none');
# Its next statement has read the reload: machine 3, from the files.
$s1->{stderr} = '';
my @ids = grep { /^\d+$/ } split /\n/, $s1->query_safe('SELECT snowflake_next() FROM generate_series(1, 10)');
$c->_check_recorded('S1, next statement', @ids);
is(scalar(grep { SnowflakeTest::id_machine($_) == 3 } @ids), 10, 'its next statement issues machine 3\'s IDs');
$s1->quit;

# F2: the connection opened before the database setting was removed issues nothing.
$a->query('SELECT snowflake_next()');
like($a->{stderr}, qr/this session began before this server adopted the node state/,
	'a connection to app opened before the adoption (machine 2, the original\'s) issues no ID');
like($a->{stderr}, qr/runs as datacenter 1, machine 2/, 'the detail says the node it runs as');
$a->{stderr} = '';
$a->query('SELECT snowflake_next()');
like($a->{stderr}, qr/this session began before this server adopted the node state/, 'nor in a later statement');
# Nor through parallel workers, which start after the adoption with its settings.
$a->{stderr} = '';
my $out = $a->query("CREATE TABLE rows AS SELECT generate_series(1, 2000) AS n;\n"
	  . SnowflakeTest::parallel_only_sql($c->node->pg_version) . q{
EXPLAIN (COSTS OFF) SELECT snowflake_next() FROM rows;
SELECT snowflake_next() FROM rows;});
like($out, qr/Gather.*Parallel Seq Scan/s, 'the older session\'s query runs in parallel workers');
like($a->{stderr}, qr/this session began before this server adopted the node state/, 'whose IDs are refused too');
@ids = grep { /^\d+$/ } split /\n/, $out;
is(scalar(@ids), 0, 'no ID came back from the workers') or $c->_check_recorded('older session, parallel workers', @ids);
$a->quit;
# A new connection to app reads the settings as they are now: machine 3.
@ids = $c->ids("\\c app\nSELECT snowflake_next() FROM generate_series(1, 10)", 'new session in app', count => 10);
is(scalar(grep { SnowflakeTest::id_machine($_) == 3 } @ids), 10, 'a new connection to app issues machine 3\'s IDs');

# The idle session took the reload between statements: machine 3, no refusal, also
# after SET SESSION AUTHORIZATION to a role whose settings (made after the adoption)
# say machine 6: PostgreSQL applies the settings of the user that logged in only.
$c->query('ALTER ROLE bob SET snowflake.machine_id = 6');
$i->query_safe('SET SESSION AUTHORIZATION bob');
@ids = grep { /^\d+$/ } split /\n/, $i->query_safe('SELECT snowflake_next() FROM generate_series(1, 10)');
$c->_check_recorded('idle session', @ids);
is(scalar(grep { SnowflakeTest::id_machine($_) == 3 } @ids), 10,
	'a session open since before the adoption whose node is the files\' issues machine 3\'s IDs');
$i->quit;
$c->stop;

# F3: a reload that changes no id does not refuse an adoption retry loop.
# This copy was given its own ids before its first start, as the docs say.
my $c2 = SnowflakeTest->new('copy2', from_backup => [ $o, 'ob' ], standby => 0, id_key => 'original',
	conf => 'snowflake.machine_id = 4');
$c2->start;
$c2->query('ALTER DATABASE app RESET snowflake.machine_id');
$c2->query('ALTER ROLE bob IN DATABASE postgres RESET snowflake.datacenter_id');
$c2->query(q{ROLLBACK PREPARED 'xa1'});
$c2->query('CREATE TABLE go (x int)');
my $bg = $c2->background_on_go('', q{
	FOR n IN 1 .. 20 LOOP
		BEGIN
			PERFORM snowflake_adopt_state();
			msg := 'adopted';
			EXIT;
		EXCEPTION WHEN object_not_in_prerequisite_state THEN
			msg := SQLERRM;
			PERFORM pg_sleep(0.1);
		END;
	END LOOP;});
$c2->query('SELECT pg_reload_conf()');
$c2->node->poll_query_until('postgres', q{SELECT pg_sleep(0.2) IS NOT NULL});
$c2->query('INSERT INTO go VALUES (1)');
$bg->query_until(qr/finished/, "\\echo finished\n");
like($bg->{stderr}, qr/outcome: adopted/, 'a retry loop that ran through a reload changing no id adopts');
is($c2->query('SELECT state FROM snowflake_state()'), 'ok', 'the second copy owns its node state');
$bg->{stderr} = '';
@ids = grep { /^\d+$/ } split /\n/, $bg->query_safe('SELECT snowflake_next() FROM generate_series(1, 10)');
$c2->_check_recorded('copy2, the adopting session', @ids);
is(scalar(grep { SnowflakeTest::id_machine($_) == 4 } @ids), 10, 'and its next statement issues machine 4\'s IDs');
$bg->quit;
$c2->stop;

# failover_adopt: sessions of a standby opened before the promotion.
$o->query('ALTER SYSTEM SET snowflake.failover_adopt = on');
$o->query('SELECT pg_reload_conf()');
$o->node->backup('ob2');
my $s = SnowflakeTest->new('standby', from_backup => [ $o, 'ob2' ], id_key => 'original');
$s->start;
$o->node->wait_for_catchup($s->node, 'replay');
$s->wait_witness;
my $b1 = $s->background;                      # postgres: node 1/1 from the files
my $b2 = $s->node->background_psql('app', on_error_stop => 0);    # app: machine 2, ALTER DATABASE
is($b2->query_safe('SHOW snowflake.machine_id'), '2', 'a standby session in app runs as machine 2');
$o->query('ALTER DATABASE app SET snowflake.machine_id = 5');
$o->ids("\\c app\nSELECT snowflake_next() FROM generate_series(1, 100)", 'original in app, machine 5', count => 100);
$o->node->wait_for_catchup($s->node, 'replay');
$o->stop;
$s->promote;
@ids = grep { /^\d+$/ } split /\n/, $b1->query_safe('SELECT snowflake_next() FROM generate_series(1, 10)');
$s->_check_recorded('promoted standby, session from before the promotion', @ids);
is(scalar(grep { SnowflakeTest::id_machine($_) == 1 } @ids), 10,
	'a session from before the promotion whose node is current adopts and issues IDs');
is($s->query('SELECT state FROM snowflake_state()'), 'ok', 'the promoted standby adopted');
$b2->query('SELECT snowflake_next()');
like($b2->{stderr}, qr/this session began before this server adopted the node state/,
	'a session from before the promotion whose database\'s node changed since issues nothing');
$b1->quit;
$b2->quit;
@ids = $s->ids("\\c app\nSELECT snowflake_next() FROM generate_series(1, 10)", 'promoted standby, new session in app', count => 10);
is(scalar(grep { SnowflakeTest::id_machine($_) == 5 } @ids), 10, 'a new session in app issues machine 5\'s IDs');
$s->stop;
$o->summary;
done_testing();
