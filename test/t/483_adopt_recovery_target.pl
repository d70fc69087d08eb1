
# Copyright (c) 2026, snowflake contributors
#
# Attack on issue 19, round 14, F1 (229,225 duplicates): a standby with a
# recovery target (recovery_target_xid, recovery_target_action = pause)
# received its primary's WAL past the target but stopped replaying at it;
# promoted after the primary died, it adopted the node state through
# snowflake.failover_adopt from the mark at the target, below IDs the
# primary had issued and streamed to it.  With any recovery target set,
# failover_adopt now refuses, naming the setting; adopting by hand stays the
# operator's decision (docs/failover.md: bring the original's mark, or wait
# until the clock is past its IDs).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $p = SnowflakeTest->new('primary', allows_streaming => 1);
$p->start;
$p->query('CREATE EXTENSION snowflake; CREATE TABLE t (id bigint PRIMARY KEY)');
$p->query('ALTER SYSTEM SET snowflake.failover_adopt = on; SELECT pg_reload_conf()');
$p->ids('SELECT snowflake_next() FROM generate_series(1, 100)', 'the primary issues', count => 100);
my $x = $p->query('SELECT txid_current()');
$p->node->backup('b');

my $target = $x + 3;
my $s = SnowflakeTest->new('standby', from_backup => [ $p, 'b' ], id_key => 'primary',
	conf => "recovery_target_xid = '$target'\nrecovery_target_action = 'pause'");
$s->start;
$s->wait_witness;
is($s->query('SHOW snowflake.failover_adopt'), 'on', 'the standby carries failover_adopt = on');

# Before the target: rows A; then transactions up to and past the target; then rows B, which the
# standby receives but does not replay.
$p->query('INSERT INTO t SELECT snowflake_next() FROM generate_series(1, 1000)');
$p->query('SELECT txid_current()') for 1 .. 3;
$p->query('INSERT INTO t SELECT snowflake_next() FROM generate_series(1, 1000)');
my $max = $p->query('SELECT max(id) FROM t');
my $lsn = $p->query('SELECT pg_current_wal_flush_lsn()');
ok($s->node->poll_query_until('postgres', "SELECT pg_get_wal_replay_pause_state() = 'paused'"),
	'the standby paused at its recovery target');
ok($s->node->poll_query_until('postgres', "SELECT pg_last_wal_receive_lsn() >= '$lsn'::pg_lsn"),
	'the standby received all of the primary\'s WAL');
is($s->query('SELECT count(*) FROM t'), '1000', 'and replayed only the rows before the target');

# The primary dies; the standby is promoted.
$p->kill9;
$s->promote;
my $r = $s->next_refused('the promoted standby, stopped at its recovery target', undef,
	message => qr/^snowflake_next\(\) refused: this data directory is a copy of the one that owns the node state, and recovery_target_xid is set$/);
like($r->{detail}, qr/does not adopt after a recovery with a recovery target/, 'the detail says why');
like($r->{hint}, qr/snowflake_adopt_state\(\)/, 'the hint gives the adoption by hand');
is($s->query('SELECT state FROM snowflake_state()'), 'copy', 'it stays a copy');
unlike(slurp_file($s->node->logfile), qr/node state adopted/, 'it did not adopt the node state');

# The operator adopts by hand once the clock is past the original's IDs (here it is: the real clock).
is($s->query('SELECT snowflake_adopt_state()'), 't', 'adopted by hand');
my $first = $s->next_id('the promoted standby after the adoption by hand');
cmp_ok($first, '>', $max, 'above every ID the primary issued');

$s->stop;

# Round 15, F1: recovery_target_timeline = 'current' (any value but 'latest'): a standby that does not
# follow its upstream onto a new timeline (a cascading standby whose upstream was promoted and issued
# IDs there: 13,030 duplicates) is refused too, naming the setting.
my $p2 = SnowflakeTest->new('primary2', allows_streaming => 1, id_key => 'primary2');
$p2->start;
$p2->query('CREATE EXTENSION snowflake');
$p2->query('ALTER SYSTEM SET snowflake.failover_adopt = on; SELECT pg_reload_conf()');
$p2->ids('SELECT snowflake_next() FROM generate_series(1, 100)', 'the second primary issues', count => 100);
$p2->node->backup('b2');

# The other recovery targets (untested until round 19): each set on a standby of the second primary
# and reached (PostgreSQL refuses a promotion before it), the standby paused there and promoted while
# that primary still runs: with its evidence fresh it would adopt; the target refuses, naming it.
# ('immediate' pauses at consistency, before any record of the owner: no evidence, same refusal.)
my $n2 = 0;
for my $setting ('recovery_target_name', 'recovery_target_lsn', 'recovery_target_time', 'recovery_target')
{
	$n2++;
	my $conf = {
		recovery_target_name => "recovery_target_name = 'sf_target_$n2'",
		recovery_target_lsn => "recovery_target_lsn = '" . $p2->query('SELECT pg_current_wal_insert_lsn()') . "'",
		recovery_target_time => "recovery_target_time = '" . $p2->query('SELECT now()') . "'",
		recovery_target => "recovery_target = 'immediate'",
	}->{$setting};
	my $st = SnowflakeTest->new("standby_$setting", from_backup => [ $p2, 'b2' ], id_key => 'primary2',
		conf => "$conf\nrecovery_target_action = 'pause'");
	$st->start;
	$st->wait_witness unless $setting eq 'recovery_target';
	$p2->query("SELECT pg_create_restore_point('sf_target_$n2')") if $setting eq 'recovery_target_name';
	$p2->query('SELECT txid_current()') if $setting eq 'recovery_target_time';
	ok($st->node->poll_query_until('postgres', "SELECT pg_get_wal_replay_pause_state() = 'paused'"),
		"$setting: the standby paused at its target");
	$st->promote;
	$st->next_refused("a promoted standby with $setting set", undef,
		message => qr/^snowflake_next\(\) refused: this data directory is a copy of the one that owns the node state, and \Q$setting\E is set$/);
	is($st->query('SELECT state FROM snowflake_state()'), 'copy', "$setting: it stays a copy");
	$st->stop;
}
my $s2 = SnowflakeTest->new('standby2', from_backup => [ $p2, 'b2' ], id_key => 'primary2',
	conf => "recovery_target_timeline = 'current'");
$s2->start;
$s2->wait_witness;
$p2->ids('SELECT snowflake_next() FROM generate_series(1, 100)', 'the second primary issues more', count => 100);
$p2->node->wait_for_catchup($s2->node);
$p2->kill9;
$s2->promote;
$s2->next_refused('a promoted standby with recovery_target_timeline = current', undef,
	message => qr/^snowflake_next\(\) refused: this data directory is a copy of the one that owns the node state, and recovery_target_timeline is set$/);
is($s2->query('SELECT state FROM snowflake_state()'), 'copy', 'it stays a copy');
$s2->stop;

$p->summary;
done_testing();
