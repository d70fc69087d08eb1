# 060_concurrency.pl: IDs made truly at once, by many backends, never collide.
#
# One server preloading snowflake as datacenter 1, machine 1.  Each part runs real concurrent
# load (pgbench clients, parallel workers, a second database) and then checks, in SQL or Perl:
#
# 1. 8 pgbench clients insert into a table keyed by "id bigint PRIMARY KEY DEFAULT
#    snowflake_next()", first with snowflake.max_lead_ms = 0, then with a lead (ALTER SYSTEM +
#    reload) while the clients also take blocks of IDs with snowflake_next_n() so that the
#    generator runs ahead of the clock.  pgbench must end with status 0 and no error (a duplicate
#    would abort a client); rows = distinct IDs = transactions; each client's IDs strictly
#    increase; every ID decodes to node (1,1); no ID's time is later than the clock when its row
#    was inserted plus the lead.
# 2. Two databases of the server, one pgbench each, at the same time: no ID in common.
# 3. Parallel workers (debug_parallel_query, parallel seq scan): IDs made in workers are distinct,
#    above the IDs the leader made before, below those it made after.
# 4. While 4 clients generate on node (1,1), one session SETs node (2,5), generates, RESETs and
#    generates again: every ID decodes to the node its session had set.
#
# No assertion depends on timing, except three that check the test did what it means to: the
# loads of parts 2 and 4 overlap (each lasts far longer than the start-up of the other), and with
# the lead some IDs ran ahead of the clock (in practice 60-98% of them do on this 2-core machine).

use strict;
use warnings FATAL => 'all';

use IPC::Run;
use Time::HiRes qw(usleep);
use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('concurrency');
$node->init;
$node->append_conf(
	'postgresql.conf', q(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 1
snowflake.machine_id = 1
max_connections = 40
max_worker_processes = 8
max_parallel_workers = 8
));
$node->start;

# Everything in a database goes through one statement at a time; dies on error.
sub sql
{
	my ($db, $sql) = @_;
	return $node->safe_psql($db, $sql);
}

# pgbench in the background: returns a handle for pgbench_finish.
sub pgbench_start
{
	my ($db, $opts, $name, $script) = @_;
	my $file = $node->basedir . "/$name.sql";
	PostgreSQL::Test::Utils::append_to_file($file, $script);
	my %run = (name => $name, out => '', err => '');
	my @cmd = (
		'pgbench', '-n', '-h', $node->host, '-p', $node->port,
		split(/\s+/, $opts), '-f', $file, $db);
	note "starting: @cmd";
	$run{h} = IPC::Run::start(\@cmd, '>', \$run{out}, '2>', \$run{err});
	return \%run;
}

# Waits for a background pgbench; checks it ended with status 0, no error and no failed
# transaction; returns the number of transactions it processed.
sub pgbench_finish
{
	my ($run) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	$run->{h}->finish;
	my $rc = $run->{h}->result(0);
	is($rc, 0, "$run->{name}: pgbench exit status 0")
	  or diag("stdout:\n$run->{out}\nstderr:\n$run->{err}");
	is($run->{err}, '', "$run->{name}: pgbench printed no error");
	like($run->{out}, qr/^number of failed transactions: 0 /m,
		"$run->{name}: no failed transaction");
	my ($done) = $run->{out} =~ /^number of transactions actually processed: (\d+)/m;
	ok(defined $done && $done > 0, "$run->{name}: transactions processed")
	  or diag("stdout:\n$run->{out}");
	return $done // 0;
}

# The checks of part 1 on one table filled by pgbench.
sub check_load_table
{
	my ($table, $rows, $clients, $lead_ms) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my ($count, $distinct, $nclients) = split /\|/,
	  sql('postgres', "SELECT count(*), count(DISTINCT id), count(DISTINCT client) FROM $table");
	is($count,    $rows, "$table: one row per transaction ($rows)");
	is($distinct, $rows, "$table: all IDs distinct");
	is($nclients, $clients, "$table: all $clients clients inserted");
	is( sql('postgres', qq{
SELECT count(*) FROM (
  SELECT id <= lag(id) OVER (PARTITION BY client ORDER BY seq) AS bad FROM $table) s
WHERE bad}),
		0, "$table: each client's IDs strictly increase");
	is( sql('postgres', qq{
SELECT count(*) FROM $table
WHERE snowflake_datacenter_id(id) <> 1 OR snowflake_machine_id(id) <> 1 OR id <= 0}),
		0, "$table: every ID is positive and decodes to node (1,1)");
	# made_at (DEFAULT clock_timestamp(), after id) is read just after the ID was made.
	is( sql('postgres', qq{
SELECT count(*) FROM $table
WHERE snowflake_unix_ms(id) > floor(extract(epoch FROM made_at) * 1000)::bigint + $lead_ms}),
		0, "$table: no ID ahead of the clock by more than max_lead_ms ($lead_ms ms)");
	my $ahead = sql('postgres', qq{
SELECT count(*) FROM $table
WHERE snowflake_unix_ms(id) > floor(extract(epoch FROM made_at) * 1000)::bigint});
	note "$table: $ahead of $rows IDs were ahead of the clock when made";
	# With a lead, the blocks of snowflake_next_n() push the generator ahead of the clock (in
	# practice most IDs are ahead): at least one must be, or the lead was never used.
	cmp_ok($ahead, '>', 0, "$table: some IDs were made ahead of the clock (the lead was used)")
	  if $lead_ms > 0;
	return;
}

sql('postgres', 'CREATE EXTENSION snowflake');

# ---------------------------------------------------------------------------------------------
# 1. 8 clients, max_lead_ms = 0 then > 0.

my $load_table_ddl = q{
CREATE TABLE %s (
    id bigint PRIMARY KEY DEFAULT snowflake_next(),
    made_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    client int NOT NULL,
    seq bigserial NOT NULL)};

sql('postgres', sprintf($load_table_ddl, 'load_nolead'));
$node->pgbench(
	'-n -c 8 -j 2 -t 1500',
	0,
	[
		qr{^number of transactions actually processed: 12000/12000$}m,
		qr{^number of failed transactions: 0 }m
	],
	[qr{^$}],
	'8 clients, max_lead_ms = 0',
	{ '060_nolead' => "INSERT INTO load_nolead (client) VALUES (:client_id);\n" });
check_load_table('load_nolead', 12000, 8, 0);

my $lead_ms = 20;
sql('postgres', "ALTER SYSTEM SET snowflake.max_lead_ms = $lead_ms; SELECT pg_reload_conf()");
ok($node->poll_query_until('postgres', 'SHOW snowflake.max_lead_ms', "${lead_ms}ms"),
	"max_lead_ms = $lead_ms after reload");

sql('postgres', sprintf($load_table_ddl, 'load_lead'));
# The block of 1000 IDs per transaction makes the clients ask for more than 4096 IDs per ms,
# so the generator runs ahead of the clock, up to the lead.
$node->pgbench(
	'-n -c 8 -j 2 -t 1000',
	0,
	[
		qr{^number of transactions actually processed: 8000/8000$}m,
		qr{^number of failed transactions: 0 }m
	],
	[qr{^$}],
	"8 clients, max_lead_ms = $lead_ms",
	{
		'060_lead' => "INSERT INTO load_lead (client) VALUES (:client_id);\n"
		  . "SELECT count(*) FROM (SELECT snowflake_next_n(1000)) s;\n"
	});
check_load_table('load_lead', 8000, 8, $lead_ms);

sql('postgres', 'ALTER SYSTEM RESET snowflake.max_lead_ms; SELECT pg_reload_conf()');
ok($node->poll_query_until('postgres', 'SHOW snowflake.max_lead_ms', '0'),
	'max_lead_ms back to 0 after reload');

# ---------------------------------------------------------------------------------------------
# 2. Two databases at once.

my @dbs = ('sf_db1', 'sf_db2');
for my $db (@dbs)
{
	sql('postgres', "CREATE DATABASE $db");
	sql($db,
		'CREATE EXTENSION snowflake; '
		  . 'CREATE TABLE ids (id bigint PRIMARY KEY DEFAULT snowflake_next(), client int NOT NULL)');
}
my @runs = map {
	pgbench_start($_, '-c 4 -j 2 -t 1500', "060_$_",
		"INSERT INTO ids (client) VALUES (:client_id);\n")
} @dbs;
my %rows_of;
for my $i (0 .. $#dbs)
{
	my $db = $dbs[$i];
	is(pgbench_finish($runs[$i]), 6000, "$db: 6000 transactions");
	my @ids = split /\n/, sql($db, 'SELECT id FROM ids ORDER BY id');
	is(scalar(@ids), 6000, "$db: 6000 rows");
	$rows_of{$db} = \@ids;
}
{
	my %db_of;
	my $common = 0;
	for my $db (@dbs)
	{
		for my $id (@{ $rows_of{$db} })
		{
			$common++ if exists $db_of{$id};
			$db_of{$id} = $db;
		}
	}
	is($common, 0, 'two databases: no ID in common');
	is(scalar(keys %db_of), 12000, 'two databases: 12000 distinct IDs together');

	# The loads overlapped: each database's ID range reaches into the other's.
	my ($r1, $r2) = map { $rows_of{$_} } @dbs;
	ok( @$r1 && @$r2 && $r1->[0] < $r2->[-1] && $r2->[0] < $r1->[-1],
		'two databases: the two runs generated at the same time');
	# Merged in ID order, the databases alternate often (IDs were interleaved, not in two runs).
	my @merged = sort { $a <=> $b } keys %db_of;
	my $switches = 0;
	for my $k (1 .. $#merged)
	{
		$switches++ if $db_of{ $merged[$k] } ne $db_of{ $merged[ $k - 1 ] };
	}
	note "two databases: $switches alternations in ID order";
}

# ---------------------------------------------------------------------------------------------
# 3. Parallel workers.

# The scan sleeps 0.1 ms a row (about 2 s in all): without it, under load, the first worker
# took every page before the second started (seen once in a two-versions-at-once CI run), and
# the check that two workers made IDs failed.
# pg_backend_pid() is PARALLEL RESTRICTED because in a worker it returns the worker's pid: here
# that is the point.  plpgsql, so that it is not inlined (and its label is kept).
sql('postgres', q{
CREATE FUNCTION backend_pid_here() RETURNS int LANGUAGE plpgsql VOLATILE PARALLEL SAFE
AS $$ BEGIN RETURN pg_backend_pid(); END $$;
CREATE TABLE par_src AS SELECT g FROM generate_series(1, 20000) g;
ANALYZE par_src});

my $force_parallel = $node->pg_version >= 16 ? 'debug_parallel_query' : 'force_parallel_mode';
my $par_setup = SnowflakeTest::parallel_only_sql($node->pg_version);

my $par_out = sql('postgres', qq{
SELECT 'leader_pid', pg_backend_pid();
SELECT 'before', snowflake_next();
$par_setup
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT snowflake_next();
SELECT 'single', snowflake_next(), backend_pid_here();
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT snowflake_next(), backend_pid_here() FROM par_src WHERE pg_sleep(0.0001) IS NOT NULL;
SELECT 'scan', snowflake_next(), backend_pid_here() FROM par_src WHERE pg_sleep(0.0001) IS NOT NULL;
RESET $force_parallel;
SELECT 'after', snowflake_next();
});
{
	my ($leader) = $par_out =~ /^leader_pid\|(\d+)$/m;
	my ($before) = $par_out =~ /^before\|(\d+)$/m;
	my ($after)  = $par_out =~ /^after\|(\d+)$/m;
	my @single = $par_out =~ /^single\|(\d+)\|(\d+)$/mg;
	my @scan;
	push @scan, [ $1, $2 ] while $par_out =~ /^scan\|(\d+)\|(\d+)$/mg;
	my @plans = split /\n(?=Gather)/, join("\n", grep { !/^(leader_pid|before|after|single|scan)\|/ }
		  split /\n/, $par_out);

	note "parallel plans:\n" . join("\n", @plans);

	ok(defined $leader && defined $before && defined $after, 'parallel: leader IDs made')
	  or diag($par_out);

	# SELECT snowflake_next() alone: a single-copy Gather whose worker ran the Result (PostgreSQL 18
	# prints row counts with two decimals: rows=1.00).
	like($plans[0] // '', qr/^Gather \(actual rows=1(?:\.00)? loops=1\)\n.*Workers Launched: 1\n.*->  Result .*\n.*Worker 0: /s,
		'parallel: SELECT snowflake_next() ran under a Gather in a launched worker')
	  or diag($par_out);
	is(scalar(@single), 2, 'parallel: single-row query returned one ID');
	isnt($single[1] // $leader, $leader, 'parallel: single-row ID made in another process than the leader');
	ok(defined $single[0] && $single[0] > $before && $single[0] < $after,
		'parallel: worker ID above the leader\'s before, below its after');

	# The scan: two workers, the leader not participating.
	like($plans[1] // '', qr/Workers Launched: 2\n.*Parallel Seq Scan on public\.par_src/s,
		'parallel: the scan ran in 2 launched workers')
	  or diag($par_out);
	is(scalar(@scan), 20000, 'parallel: scan returned 20000 IDs');
	my %pids = map { $_->[1] => 1 } @scan;
	ok(!exists $pids{$leader}, 'parallel: no scan ID made by the leader');
	is(scalar(keys %pids), 2, 'parallel: scan IDs made by 2 worker processes');
	my %seen;
	my %last;
	my @problems;
	for my $row (@scan)
	{
		my ($id, $pid) = @$row;
		push @problems, "$id repeated" if $seen{$id}++;
		push @problems, "$id not above $before" if $id <= $before;
		push @problems, "$id not below $after" if $id >= $after;
		push @problems, "$id of worker $pid not above its previous $last{$pid}"
		  if defined $last{$pid} && $id <= $last{$pid};
		push @problems, "$id is the single-row worker's ID" if $id == ($single[0] // -1);
		$last{$pid} = $id;
	}
	is_deeply(\@problems, [],
		'parallel: scan IDs distinct, between the leader\'s before and after, increasing per worker');
}

# ---------------------------------------------------------------------------------------------
# 4. A node switch under load.

sql('postgres', q{
CREATE TABLE switch_ids (
    seq bigserial PRIMARY KEY,
    id bigint NOT NULL UNIQUE DEFAULT snowflake_next(),
    who text NOT NULL DEFAULT 'pgbench',
    set_dc int NOT NULL DEFAULT current_setting('snowflake.datacenter_id')::int,
    set_mc int NOT NULL DEFAULT current_setting('snowflake.machine_id')::int)});

my $switch_run = pgbench_start('postgres', '-c 4 -j 2 -T 4', '060_switch',
	"INSERT INTO switch_ids DEFAULT VALUES;\n");
# Wait for the load to be under way (and stop waiting if pgbench has already ended).
{
	my $rows = 0;
	for (1 .. 300)
	{
		$rows = sql('postgres', 'SELECT count(*) FROM switch_ids');
		last if $rows >= 200 || !$switch_run->{h}->pumpable;
		$switch_run->{h}->pump_nb;
		usleep(100_000);
	}
	cmp_ok($rows, '>=', 200, 'switch: pgbench clients are generating');
}
sql('postgres', q{
SET snowflake.datacenter_id = 2;
SET snowflake.machine_id = 5;
INSERT INTO switch_ids (who) SELECT 'switch' FROM generate_series(1, 500);
INSERT INTO switch_ids (id, who) SELECT snowflake_next_n(500), 'switch';
RESET snowflake.datacenter_id;
RESET snowflake.machine_id;
INSERT INTO switch_ids (who) SELECT 'switch back' FROM generate_series(1, 200);
});
my $switch_done = pgbench_finish($switch_run);

is( sql('postgres', q{
SELECT string_agg(format('%s %s/%s: %s', who, set_dc, set_mc, n), ', ' ORDER BY who, set_dc, set_mc)
FROM (SELECT who, set_dc, set_mc, count(*) AS n FROM switch_ids GROUP BY 1, 2, 3) s}),
	"pgbench 1/1: $switch_done, switch 2/5: 1000, switch back 1/1: 200",
	'switch: rows per session and node as set');
is( sql('postgres', q{
SELECT count(*) FROM switch_ids
WHERE snowflake_datacenter_id(id) <> set_dc OR snowflake_machine_id(id) <> set_mc}),
	0, 'switch: every ID decodes to the node its session had set');
is(sql('postgres', 'SELECT count(*) = count(DISTINCT id) FROM switch_ids'),
	't', 'switch: all IDs distinct');
is( sql('postgres', q{
SELECT count(*) FROM (
  SELECT id <= lag(id) OVER (PARTITION BY set_dc, set_mc ORDER BY seq) AS bad
  FROM switch_ids WHERE who <> 'pgbench') s
WHERE bad}),
	0, 'switch: the switching session\'s IDs strictly increase on each node');
is( sql('postgres', q{
SELECT count(*) FILTER (WHERE seq < (SELECT min(seq) FROM switch_ids WHERE who <> 'pgbench')) > 0
   AND count(*) FILTER (WHERE seq > (SELECT max(seq) FROM switch_ids WHERE who <> 'pgbench')) > 0
FROM switch_ids WHERE who = 'pgbench'}),
	't', 'switch: pgbench inserted before and after the switching session (it ran under load)');

$node->stop;
done_testing();
