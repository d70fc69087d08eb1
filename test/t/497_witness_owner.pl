# 497_witness_owner.pl: the standby witness needs the node state's owner
# upstream (attack on issue 19, round 2, F1).  A standby of a refused copy
# streamed from SOME server; before the fix that was enough: promoted with
# snowflake.failover_adopt = on it adopted the node while the original still
# issued the same IDs.  Now a standby witnesses only once it has replayed, while
# streaming, a record written by the owner its state file names (every MARK
# record carries its writer's data directory; an owning primary logs one when
# its writer starts and when a standby connects).  A refused copy writes none.
# Direct standbys of an idle primary, and cascading standbys (P -> S1 -> S2),
# still witness and adopt.  The evidence must be fresh (round 3, 19c F3): a
# standby restarted after its primary stopped, or re-pointed to a refused
# copy, refuses after its promotion although its witness file names it, also
# when the reservation writer never looked while it streamed from the copy.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

use Time::HiRes qw(usleep);

my $conf = 'snowflake.max_clock_jump_ms = 0';
my $p = SnowflakeTest->new('primary', allows_streaming => 1, clock => 'shim', conf => $conf);
$p->start;
$p->query('CREATE EXTENSION snowflake');
$p->query('ALTER SYSTEM SET snowflake.failover_adopt = on');
$p->query('SELECT pg_reload_conf()');
$p->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'primary', count => 1000);
$p->node->backup('pb');

# --- F1: T, a base backup of P started as a server of its own, refuses; C, a
# standby of T, must not witness, and refuses after its promotion.
my $t = SnowflakeTest->new('copy', from_backup => [ $p, 'pb' ], standby => 0, clock => 'shim', id_key => 'primary');
$t->start;
$t->next_refused('the copy T', undef, sqlstate => '55000',
	message => qr/this data directory is a copy of the one that owns the node state/);
$t->node->backup('tb');
my $c = SnowflakeTest->new('standby_of_copy', from_backup => [ $t, 'tb' ], clock => 'shim', id_key => 'primary');
$c->start;
ok($c->node->poll_query_until('postgres', "SELECT status = 'streaming' FROM pg_stat_wal_receiver"), 'C streams from T');
$t->query('CREATE TABLE filler AS SELECT 1 AS x');
$t->node->wait_for_catchup($c->node);
# Absence: no event marks "the writer looked and decided"; give it 5 s (it looks every 50 ms).
my $w = $c->data_dir . '/snowflake.standby';
for (1 .. 100) { last if -e $w; usleep(50_000); }
ok(!-e $w, 'a standby of a refused copy writes no standby witness');
$c->promote('C promoted');
my $r = $c->next_refused('the promoted standby of a copy', undef, sqlstate => '55000',
	message => qr/this data directory is a copy of the one that owns the node state/);
is($c->query('SELECT state FROM snowflake_state()'), 'copy', 'C stays a copy: failover_adopt did not adopt');
# The original goes on issuing its IDs (checked distinct from everything above).
$p->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'the original goes on', count => 1000);
$c->stop;
$t->stop;

# --- 19c F3: the evidence must be fresh.  S3 and S4 witness P; P stops.
# S4 is restarted, then promoted: its witness file alone no longer adopts.
# S3 is re-pointed (primary_conninfo, reload) to T2, a refused copy of S3
# itself, streams from it, then is promoted: it refuses too.
my $s3 = SnowflakeTest->new('s3', from_backup => [ $p, 'pb' ], clock => 'shim', id_key => 'primary');
$s3->start;
$s3->wait_witness;
my $s4 = SnowflakeTest->new('s4', from_backup => [ $p, 'pb' ], clock => 'shim', id_key => 'primary');
$s4->start;
$s4->wait_witness;
my $s5 = SnowflakeTest->new('s5', from_backup => [ $p, 'pb' ], clock => 'shim', id_key => 'primary');
$s5->start;
$s5->wait_witness;
$p->node->wait_for_catchup($s3->node);
$p->node->wait_for_catchup($s4->node);
$p->node->wait_for_catchup($s5->node);
$p->stop;

$s4->restart;
$s4->promote('S4 promoted after a restart');
ok(-e $s4->data_dir . '/snowflake.standby', 'S4 still has its witness file');
$s4->next_refused('a standby restarted after its primary stopped, then promoted', undef, sqlstate => '55000',
	message => qr/this data directory is a copy of the one that owns the node state/);
is($s4->query('SELECT state FROM snowflake_state()'), 'copy', 'S4 stays a copy: the witness file alone does not adopt');
$s4->stop;

$s3->node->backup('s3b');
my $t2 = SnowflakeTest->new('copy2', from_backup => [ $s3, 's3b' ], standby => 0, clock => 'shim', id_key => 'primary');
unlink $t2->data_dir . '/standby.signal';    # a backup of a standby carries it: T2 is a server of its own
$t2->start;
$t2->next_refused('the copy T2 of S3', undef, sqlstate => '55000',
	message => qr/this data directory is a copy of the one that owns the node state/);
my $t2_port = $t2->node->port;
$s3->query("ALTER SYSTEM SET primary_conninfo = '" . $t2->node->connstr . "'");
$s3->query('SELECT pg_reload_conf()');
ok($s3->node->poll_query_until('postgres',
		"SELECT status = 'streaming' AND sender_port = $t2_port FROM pg_stat_wal_receiver"), 'S3 streams from the copy T2');
$t2->query('CREATE TABLE filler2 AS SELECT 1 AS x');
ok($s3->node->poll_query_until('postgres', "SELECT to_regclass('filler2') IS NOT NULL"), 'S3 replayed T2\'s table');
$s3->promote('S3 promoted');
$s3->next_refused('a standby re-pointed from the owner to a refused copy, then promoted', undef, sqlstate => '55000',
	message => qr/this data directory is a copy of the one that owns the node state/);
is($s3->query('SELECT state FROM snowflake_state()'), 'copy', 'S3 stays a copy: its evidence of the owner was stale');
$s3->stop;

# S5 is re-pointed to T2 the same way while its reservation writer is stopped
# (SIGSTOP), so the writer's looks never see that connection; T2 then stops,
# and S5 is promoted after a failed attempt to reconnect, before its writer
# runs again.  PostgreSQL 19 clears the WAL receiver's upstream when a receiver
# starts (15-18 keep it until one connects): what the receiver logged when it
# began streaming from T2 is then what tells that its last upstream was not the
# owner.
my $s5_writer = $s5->writer_pid;
kill 'STOP', $s5_writer;
$s5->query("ALTER SYSTEM SET primary_conninfo = '" . $t2->node->connstr . "'");
$s5->query('SELECT pg_reload_conf()');
ok($s5->node->poll_query_until('postgres',
		"SELECT status = 'streaming' AND sender_port = $t2_port FROM pg_stat_wal_receiver"), 'S5 streams from the copy T2');
my $s5_log = -s $s5->node->logfile;
$t2->stop;
$s5->node->wait_for_log(qr/could not connect to the primary server/, $s5_log);
$s5->promote('S5 promoted');
kill 'CONT', $s5_writer;
$s5->next_refused('a standby re-pointed to a refused copy while its writer was stopped, then promoted', undef,
	sqlstate => '55000', message => qr/this data directory is a copy of the one that owns the node state/);
is($s5->query('SELECT state FROM snowflake_state()'), 'copy', 'S5 stays a copy: its WAL receiver\'s last upstream was the copy');
$s5->stop;
$p->start;

# --- A direct standby of an idle primary, and a cascading one, still witness.
my $s1 = SnowflakeTest->new('s1', from_backup => [ $p, 'pb' ], clock => 'shim', id_key => 'primary');
$s1->start;
$s1->wait_witness;
pass('a direct standby of an idle primary witnesses (the owner record logged when it connected)');
$s1->node->backup('s1b');
my $s2 = SnowflakeTest->new('s2', from_backup => [ $s1, 's1b' ], clock => 'shim', id_key => 'primary');
$s2->start;
ok($s2->node->poll_query_until('postgres', "SELECT status = 'streaming' FROM pg_stat_wal_receiver"), 'S2 streams from S1');
# P raises its mark (its clock 10 s ahead): the record reaches S2 through S1.
$p->set_clock('+10');
$p->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'primary, clock 10 s ahead', count => 1000);
$s2->wait_witness;
pass('a cascading standby witnesses the owner\'s record relayed by S1');
$p->node->wait_for_catchup($s1->node);
$s1->node->wait_for_catchup($s2->node, 'replay', $p->node->lsn('flush'));
my $high = $p->query('SELECT max(snowflake_next()) FROM generate_series(1, 1)');
$p->record('primary, last', $high);
$p->node->wait_for_catchup($s1->node);
$s1->node->wait_for_catchup($s2->node, 'replay', $p->node->lsn('flush'));
$p->stop;
$s1->stop;
$s2->set_clock('+10');
$s2->promote('S2 promoted');
my @ids = $s2->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'the promoted cascading standby adopts', count => 1000);
is($s2->query('SELECT state FROM snowflake_state()'), 'ok', 'S2 owns the node state');
$s2->stop;
$p->summary;
done_testing();
