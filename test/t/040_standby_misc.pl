
# 040_standby_misc.pl: a hot standby, DROP/CREATE EXTENSION, rolled-back IDs,
# and a failover to a standby whose clock is behind.
#
# A hot standby refuses snowflake_next() (25006) but decodes.  DROP EXTENSION
# and CREATE EXTENSION do not reset the generator, even with the clock set
# back.  An ID handed out in a rolled-back transaction is never issued again.
# The primary then stops (immediate); the standby is promoted with its clock
# 10 min behind: it refuses as a copy until snowflake_adopt_state(), and then
# issues IDs of the same node above every ID the old primary issued (the mark
# reached it through WAL), never below.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

my $primary = SnowflakeTest->new('primary', allows_streaming => 1);
$primary->start;
$primary->query('CREATE EXTENSION snowflake');
$primary->ids('SELECT snowflake_next() FROM generate_series(1, 10)',
	'primary: 10 IDs before the base backup', count => 10);

# --- A hot standby refuses, like nextval().

$primary->node->backup('base');
my $standby = SnowflakeTest->new(
	'standby',
	from_backup => [ $primary, 'base' ],
	id_key => 'primary');
$standby->start;
is($standby->query('SELECT pg_is_in_recovery()'), 't', 'standby: in recovery');
$standby->next_refused('standby: snowflake_next()', '',
	sqlstate => '25006', message => qr/recovery/);
$standby->refused('SELECT snowflake_next_n(3)', 'standby: snowflake_next_n(3)',
	sqlstate => '25006', message => qr/recovery/);
is( $standby->query(
		'SELECT snowflake_unix_ms(1724551110457221119), snowflake_machine_id(1724551110457221119)'),
	'1700000000000|13',
	'standby: decoding works');

# --- DROP EXTENSION and CREATE EXTENSION do not reset the state.

my @a = $primary->ids('SELECT snowflake_next() FROM generate_series(1, 10)',
	'before DROP EXTENSION', count => 10);
$primary->query('DROP EXTENSION snowflake');
$primary->query('CREATE EXTENSION snowflake');
my $s = $primary->status;
is($s->{last_id}, $a[-1], 'after DROP and CREATE EXTENSION: last_id kept');
$primary->set_clock('-1.5');
$primary->ids('SELECT snowflake_next() FROM generate_series(1, 10)',
	'after DROP and CREATE EXTENSION, clock 1.5 s back: IDs above all earlier',
	count => 10);
$primary->set_clock('+0');

# --- An ID handed out in a rolled-back transaction is never issued again.

$primary->query(
	'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next(), v int)');
my @rb = $primary->ids(
	"BEGIN;\nSELECT snowflake_next();\nINSERT INTO t (v) VALUES (1) RETURNING id;\nROLLBACK;",
	'IDs handed out in a rolled-back transaction', count => 2);
my @kept = $primary->ids(
	'INSERT INTO t (v) SELECT g FROM generate_series(1, 100) g RETURNING id',
	'100 rows inserted after the rollback', count => 100);
cmp_ok($kept[0], '>', $rb[-1],
	'the first ID after the rollback lies above the rolled-back ones');
is($primary->query("SELECT count(*) FROM t WHERE id IN ($rb[0], $rb[1])"),
	'0', 'the rolled-back IDs are in no row');
# Across a clean restart with the clock a little back, too.
$primary->stop;
$primary->set_clock('-1.5');
$primary->start;
$primary->ids('INSERT INTO t (v) VALUES (3) RETURNING id',
	'after a restart with the clock 1.5 s back: above the rolled-back IDs',
	count => 1);
$primary->set_clock('+0');
is($primary->query('SELECT count(DISTINCT id) = count(*) FROM t'),
	't', 'all IDs in the table are distinct');

# --- Failover to the standby, whose clock is 10 min behind.

# IDs for 1.5 s more, so that the primary's mark moves past the one in the
# base backup (reservation_ms 1000).
my @last;
for (1 .. 6)
{
	@last = $primary->ids(
		'INSERT INTO t (v) SELECT g FROM generate_series(1, 10) g RETURNING id',
		'primary: 10 more rows', count => 10);
	usleep(250_000);
}
my $primary_mark = $primary->status->{reserved_until_ms};
$primary->node->wait_for_catchup($standby->node);
$primary->stop('immediate');

$standby->set_clock('-10m');
$standby->node->promote;
$standby->node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby was not promoted';
is($standby->query('SELECT count(*) FROM t WHERE id = ' . $last[-1]),
	'1', 'promoted: the old primary\'s last row arrived');

my $r = $standby->next_refused('promoted standby, a copy not adopted yet', '',
	message => qr/copy/);
like($r->{hint} // '', qr/snowflake_adopt_state/,
	'the hint names snowflake_adopt_state()');
is($standby->query('SELECT snowflake_adopt_state()'), 't',
	'snowflake_adopt_state() adopts the node state');
$standby->next_refused('promoted standby, clock 10 min behind the old primary\'s IDs');
my @taken = $standby->ids(
	'SET snowflake.max_lead_ms = 3600000; '
	  . 'INSERT INTO t (v) SELECT g FROM generate_series(1, 10) g RETURNING id',
	'promoted standby, max_lead_ms 1 h: IDs above every ID of the old primary',
	count => 10);
cmp_ok(id_unix_ms($taken[0]), '>', $primary_mark,
	'promoted standby: its first ID lies above the old primary\'s mark (from WAL)');
is($standby->query('SELECT count(DISTINCT id) = count(*) FROM t'),
	't', 'promoted standby: all IDs in the table are distinct');

$primary->summary;
$standby->stop;
done_testing();
