# 491_cascade_timeline.pl: fresh evidence does not survive a timeline switch
# (outside attack on issue 19, round 4, F1).  D, a cascading standby (P -> C
# -> D), replayed records of the owner P relayed by C and witnessed.  C was
# then promoted: with failover_adopt off it refuses as a copy, and P still
# runs.  D followed C onto C's new timeline, from the same host and port as
# before; promoted, it adopted the node state and repeated P's IDs (468,907
# duplicates in the attacker's run).  Now the owner's record must have been
# replayed on the timeline D last replayed and asked its upstream for.
# Round 5, F1: a standby adopts only the node its owner ran as (C2 given new
# node ids and adopted; its standby D2, still configured as P's node, refuses).
# A statement that ran through the reload that gave D2 its new ids adopts nothing
# (round 6).  A real cascading failover still adopts: P dies, S1 is promoted and adopts
# (its record reaches S2 on the new timeline), S1 dies, S2 is promoted and
# adopts above S1's IDs.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $p = SnowflakeTest->new('primary', allows_streaming => 1, conf => 'snowflake.max_clock_jump_ms = 0');
$p->start;
$p->query('CREATE EXTENSION snowflake');
$p->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'primary', count => 1000);
$p->node->backup('pb');

# --- F1: P -> C (failover_adopt off) -> D (failover_adopt on).
my $c = SnowflakeTest->new('c', from_backup => [ $p, 'pb' ], id_key => 'primary', allows_streaming => 1,
	conf => 'snowflake.failover_adopt = off');
$c->start;
$c->wait_witness;
$c->node->backup('cb');
my $d = SnowflakeTest->new('d', from_backup => [ $c, 'cb' ], id_key => 'primary',
	conf => 'snowflake.failover_adopt = on');
$d->start;
ok($d->node->poll_query_until('postgres', "SELECT status = 'streaming' FROM pg_stat_wal_receiver"), 'D streams from C');
# P raises its mark: the record reaches D through C.
$p->query('SELECT count(*) FROM snowflake_next_n(100000)');
$d->wait_witness;
pass('D witnessed the owner P through C');

$c->promote('C promoted');
$c->next_refused('C promoted with failover_adopt off', undef, sqlstate => '55000',
	message => qr/this data directory is a copy of the one that owns the node state/);
ok($d->node->poll_query_until('postgres', 'SELECT received_tli = 2 FROM pg_stat_wal_receiver'),
	'D follows C onto timeline 2, from the same host and port');
$c->query('CREATE TABLE on_c AS SELECT 1 AS x');
ok($d->node->poll_query_until('postgres', "SELECT to_regclass('on_c') IS NOT NULL"), 'D replayed C\'s new timeline');
$d->promote('D promoted');
$d->next_refused('D, promoted after its upstream C was promoted and refused', undef, sqlstate => '55000',
	message => qr/this data directory is a copy of the one that owns the node state/);
is($d->query('SELECT state FROM snowflake_state()'), 'copy', 'D stays a copy: its evidence of P came from before the switch');
unlike(slurp_file($d->node->logfile), qr/node state adopted/, 'D did not adopt the node state');
# The owner goes on; its IDs are checked distinct from everything above.
$p->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'the owner P goes on', count => 1000);
$d->stop;
$c->stop;

# --- Round 5, F1: P -> C2 -> D2.  C2 is promoted and, as the copy refusal's hint
# says for a new server, given its own node ids (ALTER SYSTEM: not replicated)
# and adopted by hand.  D2 follows it onto the new timeline and replays its
# owner record, but D2 is still configured as P's node: promoted, it must
# refuse, or it issues P's node's IDs while P runs (995,904 duplicates in the
# attacker's run).
my $c2 = SnowflakeTest->new('c2', from_backup => [ $p, 'pb' ], id_key => 'primary',
	conf => 'snowflake.failover_adopt = off');
$c2->start;
$c2->wait_witness;
$c2->node->backup('c2b');
my $d2 = SnowflakeTest->new('d2', from_backup => [ $c2, 'c2b' ], id_key => 'primary',
	conf => 'snowflake.failover_adopt = on');
$d2->start;
ok($d2->node->poll_query_until('postgres', "SELECT status = 'streaming' FROM pg_stat_wal_receiver"), 'D2 streams from C2');
$p->query('SELECT count(*) FROM snowflake_next_n(100000)');
$d2->wait_witness;
$c2->promote('C2 promoted');
$c2->query('ALTER SYSTEM SET snowflake.machine_id = 2');
$c2->query('SELECT pg_reload_conf()');
ok($c2->node->poll_query_until('postgres', "SELECT current_setting('snowflake.machine_id') = '2'"), 'C2 runs as machine 2');
is($c2->query('SELECT snowflake_adopt_state()'), 't', 'C2 adopted by hand as a new node');
my $c2_first = $c2->query('SELECT snowflake_next()');
is(SnowflakeTest::id_machine($c2_first), 2, 'C2 issues machine 2\'s IDs');
ok($d2->node->poll_query_until('postgres', 'SELECT received_tli = 2 FROM pg_stat_wal_receiver'), 'D2 follows C2 onto timeline 2');
$c2->node->wait_for_catchup($d2->node, 'replay', $c2->node->lsn('insert'));
$d2->promote('D2 promoted');
$d2->next_refused('D2, configured as P\'s node, promoted after its upstream became machine 2', undef, sqlstate => '55000',
	message => qr/the owner of the node state ran as datacenter 1, machine 2, and this server is configured as datacenter 1, machine 1/);
is($d2->query('SELECT state FROM snowflake_state()'), 'copy', 'D2 stays a copy');
$p->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'the owner P goes on beside C2', count => 1000);
# The hint's remedy: D2 given its primary's node ids, then it adopts, but not in
# a statement that ran through the reload (round 6: the session still ran as
# machine 1 and issued P's node's IDs, 21,000 duplicates).  One statement
# reloads and retries until the writer has read the files: every try is refused.
$d2->query('ALTER SYSTEM SET snowflake.machine_id = 2');
my $stale = $d2->run(q{DO $$
DECLARE
	msg text := '';
BEGIN
	PERFORM pg_reload_conf();
	FOR i IN 1..400 LOOP
		BEGIN
			PERFORM snowflake_next();
			RAISE EXCEPTION 'adopted in a statement that ran through the reload';
		EXCEPTION WHEN object_not_in_prerequisite_state THEN
			msg := SQLERRM;
			EXIT WHEN msg LIKE '%has not read the last configuration reload%';
			PERFORM pg_sleep(0.05);
		END;
	END LOOP;
	RAISE NOTICE 'last refusal: %', msg;
END $$;});
is($stale->{ret}, 0, 'the statement that ran through the reload issued no ID') or diag($stale->{stderr});
like($stale->{stderr}, qr/last refusal: snowflake_next\(\) refused: this session has not read the last configuration reload yet/,
	'it was refused as a session that had not read the reload');
is($d2->query('SELECT state FROM snowflake_state()'), 'copy', 'D2 is still a copy');
ok($d2->node->poll_query_until('postgres', "SELECT current_setting('snowflake.machine_id') = '2'"), 'D2 reloaded as machine 2');
$c2->stop;
my $d2_id;
ok($d2->node->poll_query_until('postgres', "SELECT snowflake_next() IS NOT NULL"), 'D2, now configured as its primary\'s node, adopts')
  or diag('D2 still refuses');
$d2_id = $d2->query('SELECT snowflake_next()');
is(SnowflakeTest::id_machine($d2_id), 2, 'D2 issues machine 2\'s IDs');
cmp_ok($d2_id, '>', $c2_first, 'above C2\'s IDs');
$d2->stop;

# --- A real cascading failover: P -> S1 -> S2, both with failover_adopt on.
my $s1 = SnowflakeTest->new('s1', from_backup => [ $p, 'pb' ], id_key => 'primary', allows_streaming => 1,
	conf => 'snowflake.failover_adopt = on');
$s1->start;
$s1->wait_witness;
$s1->node->backup('s1b');
my $s2 = SnowflakeTest->new('s2', from_backup => [ $s1, 's1b' ], id_key => 'primary',
	conf => 'snowflake.failover_adopt = on');
$s2->start;
ok($s2->node->poll_query_until('postgres', "SELECT status = 'streaming' FROM pg_stat_wal_receiver"), 'S2 streams from S1');
$p->query('SELECT count(*) FROM snowflake_next_n(100000)');
$s2->wait_witness;
$p->node->wait_for_catchup($s1->node, 'replay');
$s1->node->wait_for_catchup($s2->node, 'replay', $p->node->lsn('flush'));
$p->kill9;

$s1->promote('S1 promoted');
$s1->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'S1 adopts after P died', count => 1000);
is($s1->query('SELECT state FROM snowflake_state()'), 'ok', 'S1 owns the node state');
ok($s2->node->poll_query_until('postgres', 'SELECT received_tli = 2 FROM pg_stat_wal_receiver'), 'S2 follows S1 onto timeline 2');
$s1->node->wait_for_catchup($s2->node, 'replay');
$s1->kill9;

$s2->promote('S2 promoted');
$s2->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'S2 adopts after S1 died: S1\'s record reached it on timeline 2',
	count => 1000);
is($s2->query('SELECT state FROM snowflake_state()'), 'ok', 'S2 owns the node state');
$s2->stop;
$p->summary;
done_testing();
