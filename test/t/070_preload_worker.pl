# 070_preload_worker.pl: without preloading, and the reservation worker.
#
# Not preloaded: CREATE EXTENSION works, encoding and decoding work, and every
# function that needs shared memory raises 55000 with a hint naming
# shared_preload_libraries.  Preloaded: the worker keeps the durable mark ahead
# of generation; with the worker gone, callers raise the mark themselves.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

# --- Not preloaded.

my $plain = PostgreSQL::Test::Cluster->new('plain');
$plain->init;
$plain->append_conf('postgresql.conf', "snowflake.datacenter_id = 1\nsnowflake.machine_id = 1\n");
$plain->start;
$plain->safe_psql('postgres', 'CREATE EXTENSION snowflake');

is($plain->safe_psql('postgres', 'SELECT snowflake_encode(1700000000000, 7, 13, 4095)'),
	'1724551110457221119', 'not preloaded: encoding works');
is( $plain->safe_psql(
		'postgres', 'SELECT datacenter_id, machine_id, sequence FROM snowflake_decode(1724551110457221119)'),
	'7|13|4095',
	'not preloaded: decoding works');

foreach my $call ('snowflake_next()', 'snowflake_next_n(3)', 'snowflake_status()')
{
	my ($ret, $out, $err) = $plain->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT * FROM $call");
	isnt($ret, 0, "not preloaded: $call fails");
	like($err, qr/ERROR:  55000: snowflake must be loaded via shared_preload_libraries/,
		"not preloaded: $call raises 55000 naming shared_preload_libraries");
	like($err, qr/HINT:  Add snowflake to shared_preload_libraries/,
		"not preloaded: $call hints what to do");
}
# Neither preloaded nor a node set: the preload error comes first (SPEC rule 6).
my ($r2, $o2, $e2) = $plain->psql('postgres',
	"\\set VERBOSITY verbose\nSET snowflake.datacenter_id = -1;\nSELECT snowflake_next();");
like($e2, qr/ERROR:  55000: snowflake must be loaded via shared_preload_libraries/,
	'not preloaded and no node: the preload error comes first');
$plain->stop;

# --- Preloaded: the worker raises the mark.

my $node = PostgreSQL::Test::Cluster->new('worker');
$node->init;
$node->append_conf(
	'postgresql.conf', qq(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 2
snowflake.machine_id = 3
snowflake.reservation_ms = 200
));
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

# The worker has no database connection, so it is not in pg_stat_activity:
# find it among the postmaster's children by its process title.
sub worker_pid
{
	my $postmaster = $node->{_pid};
	foreach my $stat (glob '/proc/[0-9]*/stat')
	{
		open my $fh, '<', $stat or next;
		my $line = <$fh>;
		close $fh;
		next unless defined $line && $line =~ /^(\d+) \(.*\) \S (\d+) /;
		my ($pid, $ppid) = ($1, $2);
		next unless $ppid == $postmaster;
		open my $cmd, '<', "/proc/$pid/cmdline" or next;
		my $title = <$cmd> // '';
		close $cmd;
		return $pid if $title =~ /snowflake reservation writer/;
	}
	return undef;
}

my $worker_pid = worker_pid();
ok(defined $worker_pid, 'the reservation worker runs');

# Generate for about a second, in steps: the mark must always cover the last
# ID, and it moves forward with the clock.
my $first = $node->safe_psql('postgres',
	"SELECT snowflake_next(), (SELECT reserved_until FROM snowflake_status())");
my $covered = $node->safe_psql(
	'postgres', q{
DO $$
DECLARE
  ok boolean := true;
BEGIN
  FOR i IN 1 .. 50 LOOP
    PERFORM snowflake_next() FROM generate_series(1, 100);
    ok := ok AND (SELECT reserved_until >= last_ts FROM snowflake_status());
    PERFORM pg_sleep(0.02);
  END LOOP;
  RAISE NOTICE 'covered %', ok;
END $$;
SELECT bool_and(reserved_until >= last_ts) FROM snowflake_status();
});
is($covered, 't', 'the durable mark covers every ID issued');
my $advanced = $node->safe_psql('postgres',
	"SELECT (SELECT reserved_until FROM snowflake_status()) > '" . (split /\|/, $first)[1] . "'::timestamptz");
is($advanced, 't', 'the mark moved forward while IDs were made');

# The worker, not the caller, wrote the file: the caller never waited for
# the lock (no way to see that directly), but the worker's process did the
# raises: with the worker stopped, generation still works because callers
# raise the mark themselves.
kill 'TERM', $worker_pid;
for (1 .. 100)
{
	my $pid = worker_pid();
	last unless defined $pid && $pid == $worker_pid;
	usleep(100_000);
}
my $ids = $node->safe_psql(
	'postgres', q{
SELECT count(*) = count(DISTINCT id) AND count(*) = 20000
FROM (SELECT snowflake_next() AS id FROM generate_series(1, 20000)) s;
SELECT pg_sleep(0.5);
SELECT count(*) FROM snowflake_next_n(5000);
SELECT bool_and(reserved_until >= last_ts) FROM snowflake_status();
});
is($ids, "t\n\n5000\nt", 'with the worker gone, callers raise the mark themselves');

# The postmaster restarts the worker.
my $restarted;
foreach (1 .. 100)
{
	$restarted = worker_pid();
	last if defined $restarted && $restarted != $worker_pid;
	usleep(100_000);
}
ok(defined $restarted && $restarted != $worker_pid, 'the postmaster restarts the worker');

$node->stop;
done_testing();
