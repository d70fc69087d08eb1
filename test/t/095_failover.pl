# 095_failover.pl: a promoted physical standby never issues an ID at or below
# one its old primary issued in a transaction that reached it, even when the
# standby's clock is an hour behind the primary's.
#
# The state file is not replicated; the mark travels in WAL.  To make the test
# tell the two apart, the primary's clock runs an hour ahead after the base
# backup: its IDs lie an hour beyond the mark in the copied state file, so a
# standby that knew only that file would issue IDs below them.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;


# The clocks step 1 h forward on purpose: the forward-jump check is off (130_boundaries.pl).
my $p = SnowflakeTest->new('primary', allows_streaming => 1, conf => 'snowflake.max_clock_jump_ms = 0');
$p->start;
$p->query('CREATE EXTENSION snowflake; CREATE TABLE t (id bigint PRIMARY KEY)');
$p->query('INSERT INTO t SELECT snowflake_next() FROM generate_series(1, 1000)');
$p->node->backup('b');

# s: meant to take over (failover_adopt); s2: a copy that must be adopted by hand,
# with a node of its own.
my $s = SnowflakeTest->new('standby', from_backup => [ $p, 'b' ], id_key => 'primary',
	conf => 'snowflake.failover_adopt = on');
my $s2 = SnowflakeTest->new('standby2', from_backup => [ $p, 'b' ],
	conf => 'snowflake.datacenter_id = 9');
$s->start;
$s2->start;

# The primary's clock an hour ahead: its IDs, and the marks it logs, too.
$p->set_clock('+1h');
$p->query(q{
INSERT INTO t SELECT snowflake_next() FROM generate_series(1, 20000);
INSERT INTO t SELECT snowflake_next_n(5000);
CHECKPOINT;
INSERT INTO t SELECT snowflake_next() FROM generate_series(1, 1000);
});
my $max = $p->query('SELECT max(id) FROM t');
cmp_ok(id_unix_ms($max) - $p->query('SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint'), '>', -60_000, 'the primary issued IDs on its clock, an hour ahead');
$p->node->wait_for_catchup($s->node, 'replay');
$p->node->wait_for_catchup($s2->node, 'replay');
is($s->query('SELECT max(id) FROM t'), $max, 'the standby has every committed ID');

# A restartpoint on the standby, then a restart: the marks replayed before it
# are not replayed again, so only the standby's own state file keeps them.
$s->query('CHECKPOINT');
$s->restart;

# The restarted standby has fresh evidence of its primary (a record the primary
# logs when it reconnects) before the primary dies; the standby, its clock an
# hour behind the primary's, is then promoted.
$s->wait_witness;
$p->kill9;
$s->promote;

my $r = $s->next_refused('promoted standby, clock an hour behind the old primary',
	'SET snowflake.max_wait_ms = 500;', message => qr/clock is behind the IDs already issued/);
my $behind = SnowflakeTest::detail_ms($r);
ok(defined $behind && $behind > 3_500_000 && $behind < 3_700_000,
	'the detail says the clock is about an hour behind the old primary\'s IDs')
  or diag('detail: ' . ($r->{detail} // '(none)'));

# Once its clock passes the old primary's IDs, it goes on above them.
$s->set_clock('+1h');
my @ids = $s->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'promoted standby, clock caught up',
	count => 1000);
cmp_ok($ids[0], '>', $max, 'the first ID after promotion is above every ID the old primary issued');
is($s->query("INSERT INTO t SELECT snowflake_next() FROM generate_series(1, 1000) RETURNING 'x'") =~ tr/x//,
	1000, 'new rows go into the replicated table without a key conflict');
ok($s->node->wait_for_log(qr/snowflake node state adopted by this data directory/),
	'failover_adopt adopted the node state on the first ID');

# The other standby: a copy, promoted without failover_adopt.
$s2->promote;
$s2->next_refused('promoted copy without failover_adopt', undef,
	message => qr/this data directory is a copy/);
is($s2->query('SELECT snowflake_adopt_state()'), 't', 'the copy is adopted by hand');
$s2->set_clock('+1h');
my @ids2 = $s2->ids('SELECT snowflake_next() FROM generate_series(1, 100)', 'adopted copy, own node',
	count => 100);
is(id_datacenter($ids2[0]), 9, 'the adopted copy generates under its own node');
cmp_ok($ids2[0], '>', $max, 'and above the old primary\'s IDs all the same');

$s->stop;
$s2->stop;
$p->summary;
done_testing();
