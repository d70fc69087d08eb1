# 490_unwritable_flood.pl: while the state file cannot be written, no role can
# turn its calls into write attempts and MARK records, and crash recovery logs
# one WARNING with a count, not one per record (attack on issue 19, F7).
#
# Before the fix each call woke the writer past its backoff: 2000 calls by a
# plain role made about 2000 failed writes, each after a flushed MARK record,
# and crash recovery then logged a WARNING (with DETAIL and HINT) per record.
# Now a call in a failure episode waits for the writer's next scheduled
# attempt or gets the last failure's error at once.  Counts, not timings: the
# writer's schedule (100, 200, 400 ms, ... up to 10 s) allows a few dozen
# attempts at most while 2000 calls run, however slow the machine.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $t = SnowflakeTest->new('flood', restart_after_crash => 1);
$t->start;
$t->query('CREATE EXTENSION snowflake');
$t->query('CREATE ROLE plain LOGIN');
$t->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'before the volume goes read-only', count => 1000);
my $postmaster = $t->node->{_pid};
my $writer = $t->writer_pid;
my $dir = PostgreSQL::Test::Utils::tempdir;
my $bindir = $t->node->config_data('--bindir');

sub failures { return $t->query('SELECT mark_write_failures FROM snowflake_state()'); }

sub mark_records
{
	my ($from, $to) = @_;
	my ($stdout, $stderr) = run_command([ "$bindir/pg_waldump", '-p', $t->data_dir . '/pg_wal', '-s', $from, '-e', $to ]);
	my $n = () = $stdout =~ /^rmgr:\s+(custom128|snowflake)\b/mig;
	return $n;
}

my $st = SnowflakeTest::strace_start("$dir/erofs.strace", '-f', '-P', 'snowflake.state.tmp',
	'-e', 'trace=rename,renameat,renameat2',
	'-e', 'inject=rename,renameat,renameat2:error=EROFS', '-p', $postmaster, '-p', $writer);

my $lsn_start = $t->query('SELECT pg_current_wal_insert_lsn()');
# Exhaust the reservation: the write fails.
$t->refused("SET snowflake.max_wait_ms = 500;\nSELECT count(snowflake_next()) FROM (SELECT generate_series(1, 4000000)) s;",
	'the write fails', sqlstate => '42501', message => qr/could not rename snowflake state file/);

my $f0 = failures();
my $lsn0 = $t->query('SELECT pg_current_wal_insert_lsn()');
# 2000 calls by a plain role, each catching its error.
my $r = $t->run(q{SET ROLE plain;
SET snowflake.max_wait_ms = 0;
DO $$
DECLARE
	errors int := 0;
	write_errors int := 0;
BEGIN
	FOR i IN 1 .. 2000 LOOP
		BEGIN
			PERFORM snowflake_next();
		EXCEPTION
			WHEN insufficient_privilege THEN
				errors := errors + 1;
				write_errors := write_errors + 1;
			WHEN object_not_in_prerequisite_state THEN
				errors := errors + 1;
		END;
	END LOOP;
	RAISE NOTICE 'errors: %, write errors: %', errors, write_errors;
END
$$;});
my ($errors) = ($r->{stderr} // '') =~ /errors: (\d+)/;
is($r->{ret}, 0, 'the plain role\'s loop ran') or diag($r->{stderr});
cmp_ok($errors // 0, '>=', 1900, 'its calls were refused (' . ($errors // 'none') . ' of 2000)');
my ($write_errors) = ($r->{stderr} // '') =~ /write errors: (\d+)/;
cmp_ok($write_errors // 0, '>=', 1900, 'with the last failure\'s error (42501, read-only file system), not a wait running out');
my $lsn1 = $t->query('SELECT pg_current_wal_insert_lsn()');
my $f1 = failures();
my $attempts = $f1 - $f0;
my $marks = mark_records($lsn0, $lsn1);
note "failed attempts: $attempts, MARK records: $marks";
cmp_ok($attempts, '<=', 40, "2000 refused calls: $attempts failed write attempts (before the fix, about one per call)");
cmp_ok($marks, '<=', 40, "and $marks MARK records in WAL");
cmp_ok(mark_records($lsn_start, $lsn1), '>=', 1, 'each attempt of the episode logged its MARK record first');

# Crash recovery replays every MARK record since the checkpoint: one WARNING.
my $total = mark_records($t->query("SELECT redo_lsn FROM pg_control_checkpoint()"), $t->query('SELECT pg_current_wal_insert_lsn()'));
cmp_ok($total, '>=', 2, "$total MARK records to replay");
my $bg = $t->background;
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
my $log_offset = -s $t->node->logfile;
kill 'KILL', $pid;
$bg->quit;
ok($t->node->poll_query_until('postgres', 'SELECT 1', '1'), 'the server comes back up after the crash');
my $log = substr(slurp_file($t->node->logfile), $log_offset);
like($log, qr/all server processes terminated; reinitializing/, 'it was a crash re-initialisation');
my $warnings = () = $log =~ /WARNING:.*could not rename snowflake state file/g;
is($warnings, 1, "recovery logged one WARNING for $total unwritable replayed marks");
like($log, qr/DETAIL:.*While replaying durable marks in crash recovery: \d+ marks above the state file.s could not be written/,
	'with their count');

SnowflakeTest::strace_stop($st);
$t->ids('SET snowflake.max_wait_ms = 20000; SELECT snowflake_next() FROM generate_series(1, 1000)',
	'the volume writable again', count => 1000);
$t->stop;
$t->summary;
done_testing();
