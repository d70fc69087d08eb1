# 080_fleet.pl: a fleet of three generating servers and one logical-replication subscriber.
#
# Three publishers preload snowflake, each as its own node: (1,1), (2,5), (3,9), with
# cluster_name set.  Each has the same table,
#     events (id bigint PRIMARY KEY DEFAULT snowflake_next(),
#             origin text DEFAULT current_setting('cluster_name'),
#             created_at timestamptz DEFAULT clock_timestamp(), payload text)
# and publishes it.  A fourth server (not preloaded: it only decodes) subscribes to all three
# with built-in logical replication, one subscription each, into the same table with no
# defaults and, on purpose, no unique constraint on id: a duplicate ID must arrive and be
# counted by the assertion below instead of stalling the apply worker.
#
# The three publishers insert at the same time (pgbench, 4 clients each, 3 s, 10 rows per
# transaction: one single-row INSERT and one 9-row INSERT).  Then:
#  - each pgbench run succeeded with no failed transaction; each publisher holds 10 rows per
#    transaction, all of its own origin;
#  - the subscriber holds exactly the publishers' rows: total count, and per origin the count,
#    min, max and sum of the IDs equal those of the publisher;
#  - no ID repeats on the subscriber (count(DISTINCT id) = count(*));
#  - every row decodes (snowflake_datacenter_id / snowflake_machine_id) to its origin's node;
#  - ordering by ID agrees with ordering by insert time: every row's |snowflake_timestamp(id) -
#    created_at| is below $TOLERANCE_MS (1 s; in practice a few ms: the ID and created_at are
#    computed in the same INSERT and all servers share this machine's clock), and, over the rows
#    ordered by ID, created_at never falls below the latest created_at before it by more than
#    2 x $TOLERANCE_MS.  The largest values seen are printed;
#  - the runs overlapped: the three origins' ID time ranges share an interval, and in ID order
#    the origin changes many times (sequential runs would change it twice).

use strict;
use warnings FATAL => 'all';

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $TOLERANCE_MS  = 1000;
my $ROWS_PER_XACT = 10;
my $PGBENCH_OPTS  = '-c 4 -j 2 -T 3';

# name => [datacenter, machine]
my @NODES = ([ 'fleet_a', 1, 1 ], [ 'fleet_b', 2, 5 ], [ 'fleet_c', 3, 9 ]);

my $TABLE_PUB = q{
CREATE TABLE events (
    id bigint PRIMARY KEY DEFAULT snowflake_next(),
    origin text NOT NULL DEFAULT current_setting('cluster_name'),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    payload text);
};
# The subscriber receives every column from the publishers, so defaults would never be used
# (and snowflake_next() would refuse there: not preloaded, no node).  No PRIMARY KEY/UNIQUE on
# id: inserts need no replica identity on the subscriber, and a repeated ID must be countable.
my $TABLE_SUB = q{
CREATE TABLE events (
    id bigint NOT NULL,
    origin text NOT NULL,
    created_at timestamptz NOT NULL,
    payload text);
CREATE INDEX events_id ON events (id);
};

# --- The publishers.  (PostgreSQL::Test::Cluster starts every server with --cluster-name=<its
# name>, which wins over postgresql.conf: so cluster_name is the node's name; checked below.)

my %pub;    # name => node
for my $n (@NODES)
{
	my ($name, $dc, $mc) = @$n;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(allows_streaming => 'logical');
	$node->append_conf(
		'postgresql.conf', qq(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = $dc
snowflake.machine_id = $mc
max_connections = 20
));
	$node->start;
	is($node->safe_psql('postgres', 'SHOW cluster_name'), $name, "$name: cluster_name is set");
	$node->safe_psql('postgres', "CREATE EXTENSION snowflake; $TABLE_PUB");
	$node->safe_psql('postgres', 'CREATE PUBLICATION fleet_pub FOR TABLE events');
	$pub{$name} = $node;
}

# --- The subscriber: not preloaded, so it can decode but not generate.

my $sub = PostgreSQL::Test::Cluster->new('fleet_sub');
$sub->init;
$sub->append_conf('postgresql.conf', "max_connections = 20\n");
$sub->start;
$sub->safe_psql('postgres', "CREATE EXTENSION snowflake; $TABLE_SUB");
for my $n (@NODES)
{
	my $name = $n->[0];
	my $connstr = $pub{$name}->connstr . ' dbname=postgres';
	$sub->safe_psql('postgres',
		"CREATE SUBSCRIPTION sub_$name CONNECTION '$connstr' PUBLICATION fleet_pub");
}
# Initial sync of the (empty) tables, so that the load below streams through the apply workers.
for my $n (@NODES)
{
	my $name = $n->[0];
	$sub->wait_for_subscription_sync($pub{$name}, "sub_$name");
}
is($sub->safe_psql('postgres', 'SELECT count(*) FROM pg_subscription'),
	3, 'subscriber: three subscriptions');

# --- The load: one pgbench per publisher, all three at once.

my $script = qq{BEGIN;
INSERT INTO events (payload) VALUES ('single ' || :client_id);
INSERT INTO events (payload) SELECT 'batch ' || :client_id FROM generate_series(1, }
  . ($ROWS_PER_XACT - 1) . qq{);
COMMIT;
};

my %run;
for my $n (@NODES)
{
	my $name = $n->[0];
	my $node = $pub{$name};
	my $file = $node->basedir . '/load.sql';
	PostgreSQL::Test::Utils::append_to_file($file, $script);
	my @cmd = (
		'pgbench', '-n', '-h', $node->host, '-p', $node->port,
		split(/\s+/, $PGBENCH_OPTS), '-f', $file, 'postgres');
	note "starting on $name: @cmd";
	my %r = (out => '', err => '');
	$r{h} = IPC::Run::start(\@cmd, '>', \$r{out}, '2>', \$r{err});
	$run{$name} = \%r;
}

my %xacts;    # name => transactions pgbench processed
for my $n (@NODES)
{
	my $name = $n->[0];
	my $r = $run{$name};
	$r->{h}->finish;
	is($r->{h}->result(0), 0, "$name: pgbench exit status 0")
	  or diag("stdout:\n$r->{out}\nstderr:\n$r->{err}");
	is($r->{err}, '', "$name: pgbench printed no error");
	like($r->{out}, qr/^number of failed transactions: 0 /m, "$name: no failed transaction");
	my ($done) = $r->{out} =~ /^number of transactions actually processed: (\d+)/m;
	ok(defined $done && $done > 0, "$name: transactions processed")
	  or diag("stdout:\n$r->{out}");
	$xacts{$name} = $done // 0;
}

# --- Each publisher: its rows, all of its own origin.

my %pub_sum;    # name => "count|min|max|sum"
my $total = 0;
for my $n (@NODES)
{
	my $name = $n->[0];
	my $node = $pub{$name};
	my $count = $node->safe_psql('postgres', 'SELECT count(*) FROM events');
	is($count, $xacts{$name} * $ROWS_PER_XACT,
		"$name: $ROWS_PER_XACT rows per pgbench transaction ($xacts{$name} transactions)");
	is( $node->safe_psql(
			'postgres', q{SELECT count(*) FROM events WHERE origin <> current_setting('cluster_name')}),
		0, "$name: every row's origin is $name");
	$pub_sum{$name} = $node->safe_psql('postgres',
		'SELECT count(*), min(id), max(id), sum(id::numeric) FROM events');
	$total += $count;
}
note "publishers inserted $total rows in all ("
  . join(', ', map { "$_->[0]: " . (split /\|/, $pub_sum{ $_->[0] })[0] } @NODES) . ')';
cmp_ok($total, '>=', 10_000, 'the fleet inserted at least 10000 rows');

# --- Wait for the subscriber to apply everything.

for my $n (@NODES)
{
	my $name = $n->[0];
	$pub{$name}->wait_for_catchup("sub_$name");
}
ok($sub->poll_query_until('postgres', "SELECT count(*) >= $total FROM events"),
	'subscriber: caught up');

# --- The subscriber holds exactly the publishers' rows.

is($sub->safe_psql('postgres', 'SELECT count(*) FROM events'),
	$total, 'subscriber: row count = sum of the publishers\' row counts');
for my $n (@NODES)
{
	my $name = $n->[0];
	is( $sub->safe_psql(
			'postgres',
			"SELECT count(*), min(id), max(id), sum(id::numeric) FROM events WHERE origin = '$name'"),
		$pub_sum{$name},
		"subscriber: rows from $name match the publisher (count, min, max, sum of IDs)");
}
my $origins = join(', ', map { "'$_->[0]'" } @NODES);
is( $sub->safe_psql('postgres', "SELECT count(*) FROM events WHERE origin NOT IN ($origins)"),
	0, 'subscriber: no row of an unknown origin');

my ($rows, $distinct) = split /\|/,
  $sub->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM events');
is($distinct, $rows, "subscriber: no ID repeats ($rows rows, $distinct distinct IDs)");
is($sub->safe_psql('postgres', 'SELECT count(*) FROM events WHERE id <= 0'),
	0, 'subscriber: every ID is positive');

# --- Every row decodes to its origin's node.

my $node_map = join(', ', map { "('$_->[0]', $_->[1], $_->[2])" } @NODES);
my $wrong = $sub->safe_psql(
	'postgres', qq{
SELECT count(*) FROM events e JOIN (VALUES $node_map) n(origin, dc, mc) USING (origin)
WHERE snowflake_datacenter_id(e.id) <> n.dc OR snowflake_machine_id(e.id) <> n.mc});
is($wrong, 0, 'subscriber: every ID decodes to the node of its origin');
is( $sub->safe_psql(
		'postgres', q{
SELECT string_agg(node, ' ' ORDER BY node)
FROM (SELECT DISTINCT format('%s=(%s,%s)', origin, snowflake_datacenter_id(id),
                             snowflake_machine_id(id)) AS node
      FROM events) s}),
	join(' ', map { "$_->[0]=($_->[1],$_->[2])" } @NODES),
	'subscriber: the (origin, node) pairs are exactly the configured ones');

# --- Ordering by ID agrees with ordering by insert time, within the clocks' skew.

# Skew of each row: its ID's time (floored to the ms) against created_at, in ms.
my ($max_abs_skew, $min_skew, $max_skew, $over) = split /\|/,
  $sub->safe_psql(
	'postgres', qq{
SELECT round(max(abs(d)), 3), round(min(d), 3), round(max(d), 3),
       count(*) FILTER (WHERE abs(d) >= $TOLERANCE_MS)
FROM (SELECT extract(epoch FROM created_at - snowflake_timestamp(id)) * 1000 AS d FROM events) s});
note "skew created_at - snowflake_timestamp(id): from $min_skew ms to $max_skew ms "
  . "(largest absolute value $max_abs_skew ms)";
is($over, 0, "subscriber: every row's ID time is within $TOLERANCE_MS ms of its created_at");

# Over the rows in ID order, how far created_at falls below the latest created_at before it.
my $back_limit = 2 * $TOLERANCE_MS;
my ($max_back, $n_back, $over_back) = split /\|/,
  $sub->safe_psql(
	'postgres', qq{
SELECT round(coalesce(max(b), 0), 3), count(*) FILTER (WHERE b > 0),
       count(*) FILTER (WHERE b >= $back_limit)
FROM (SELECT extract(epoch FROM max(created_at) OVER w - created_at) * 1000 AS b
      FROM events
      WINDOW w AS (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)) s});
note "in ID order, created_at went back $n_back times, at most by $max_back ms";
is($over_back, 0,
	"subscriber: in ID order, created_at never goes back by $back_limit ms or more");

# --- The runs overlapped: the origins' ID times interleave.

my ($overlap_ms, $switches) = split /\|/,
  $sub->safe_psql(
	'postgres', q{
SELECT (SELECT min(hi) - max(lo)
        FROM (SELECT min(snowflake_unix_ms(id)) AS lo, max(snowflake_unix_ms(id)) AS hi
              FROM events GROUP BY origin) r),
       (SELECT count(*) FROM (SELECT origin <> lag(origin) OVER (ORDER BY id) AS sw FROM events) s
        WHERE sw)});
note "the three origins' ID time ranges share $overlap_ms ms; in ID order the origin changes "
  . "$switches times";
cmp_ok($overlap_ms, '>', 0, 'the three origins\' ID time ranges overlap');
cmp_ok($switches, '>=', 100, 'in ID order, the origins interleave (the origin changes often)');

# --- Done.

$sub->stop;
$pub{ $_->[0] }->stop for @NODES;

done_testing();
