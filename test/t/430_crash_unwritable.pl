# 430_crash_unwritable.pl: a state file that cannot be written (a volume gone
# read-only: every rename onto snowflake.state fails with EROFS) plus a crash
# of one backend: the server comes back up (issue 19 item 3).
#
# While the file cannot be written, each attempt of the writer logs a MARK
# record and fails; none of those marks was published.  After a backend is
# killed, the postmaster re-initialises and the startup process replays those
# records in crash recovery: it must not stop on them (before the fix,
# recovery ended with FATAL and PostgreSQL stayed down).  No ID beyond the
# file's mark is issued until the file can be written again; then generation
# resumes above every ID issued.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

my $t = SnowflakeTest->new('unwritable', restart_after_crash => 1);
$t->start;
$t->query('CREATE EXTENSION snowflake');
$t->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'before the volume goes read-only', count => 1000);
my $postmaster = $t->node->{_pid};
my $writer = $t->writer_pid;
my $dir = PostgreSQL::Test::Utils::tempdir;
my $failures0 = $t->query('SELECT mark_write_failures FROM snowflake_state()');

# Every rename of snowflake.state.tmp by the postmaster's children (present
# and future, -f) fails; PostgreSQL's own files stay writable (-P).
my $st = SnowflakeTest::strace_start("$dir/erofs.strace", '-f', '-P', 'snowflake.state.tmp',
	'-e', 'trace=rename,renameat,renameat2',
	'-e', 'inject=rename,renameat,renameat2:error=EROFS', '-p', $postmaster, '-p', $writer);

my $bg = $t->background;
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
$bg->query('SET snowflake.max_wait_ms = 2000');
$bg->query('SELECT count(snowflake_next()) FROM (SELECT generate_series(1, 4000000)) s');
my $r = SnowflakeTest::parse_error({ stderr => $bg->{stderr} });
like($r->{message} // '', qr/could not rename snowflake state file "snowflake\.state\.tmp": Read-only file system/,
	'the write fails: generation errors')
  or diag("stderr: $bg->{stderr}");
$bg->{stderr} = '';
cmp_ok($t->query('SELECT mark_write_failures FROM snowflake_state()'), '>', $failures0,
	'failed writes were counted (each logged a MARK record first)');
my $mark_before = $t->state_file_mark;

# One backend dies (the OOM killer): a crash re-initialisation.
kill 'KILL', $pid;
$bg->quit;
ok($t->node->poll_query_until('postgres', 'SELECT 1', '1'), 'the server comes back up after the crash');
my $log = slurp_file($t->node->logfile);
like($log, qr/all server processes terminated; reinitializing/, 'it was a crash re-initialisation');
unlike($log, qr/startup process \(PID \d+\) exited with exit code 1/, 'the startup process did not fail');
like($log, qr/WARNING:.*could not rename snowflake state file.*\n(.*\n)?.*DETAIL:.*The file covers every ID issued before the crash/,
	'recovery logged the unwritable file and went on');
is($t->state_file_mark, $mark_before, 'the state file is as it was');

# Still unwritable: no ID beyond the file's mark.
# (The call waits for the clock to pass the replayed mark first: max_wait_ms 10 s.)
$r = $t->next_refused('the file still cannot be written', 'SET snowflake.max_wait_ms = 10000;' . "\n" .
	'SELECT count(snowflake_next()) FROM (SELECT generate_series(1, 4000000)) s;', sqlstate => '42501',
	message => qr/could not rename snowflake state file/);

SnowflakeTest::strace_stop($st);
$t->ids('SET snowflake.max_wait_ms = 10000; SELECT snowflake_next() FROM generate_series(1, 1000)',
	'the volume writable again', count => 1000);
$t->restart;
$t->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'after a restart', count => 1000);

# --- Round 28, F3: no write failed before the crash.  An immediate stop: the
# postmaster lowers the file to the exact last ID issued, below the marks its
# WAL holds; the next start's crash recovery replays those and, the file
# unwritable now, cannot write them.  The WARNING must not say their writes
# failed before the crash (it sent an operator looking for a storage failure
# that never happened); it says the file covers every ID issued.
my $failures1 = $t->query('SELECT mark_write_failures FROM snowflake_state()');
$t->stop('immediate');
my $log_offset = -s $t->node->logfile;
my $st2;
{
	my %fake = $t->_faketime_env;
	local @ENV{ keys %fake } = values %fake;
	# strace runs pg_ctl (-I 1: a signal ends it, and it detaches from the server).
	$st2 = IPC::Run::start(
		[
			'strace', '-I', '1', '-o', "$dir/erofs2.strace", '-f', '-P', 'snowflake.state.tmp',
			'-e', 'trace=rename,renameat,renameat2',
			'-e', 'inject=rename,renameat,renameat2:error=EROFS',
			'pg_ctl', '-w', '-D', $t->data_dir, '-l', $t->node->logfile, 'start'
		],
		'<', '/dev/null', '>', "$dir/strace2.out", '2>', "$dir/strace2.err");
}
ok($t->node->poll_query_until('postgres', 'SELECT 1', '1'), 'the server started after the immediate stop');
$t->node->_update_pid(1);
$log = substr(slurp_file($t->node->logfile), $log_offset);
like($log, qr/database system was interrupted|crash recovery|redo starts/, 'the start ran crash recovery');
like($log, qr/DETAIL:  While replaying durable marks in crash recovery: \d+ marks above the state file's could not be written\. The file covers every ID issued before the crash/,
	'the WARNING says the file covers every ID issued');
unlike($log, qr/their writes failed before the crash/, 'it does not say writes failed before the crash (none did)');
is($failures1, '0', 'no write had failed since the restart before the stop');
$st2->signal('TERM');
$st2->finish;
$t->ids('SET snowflake.max_wait_ms = 10000; SELECT snowflake_next() FROM generate_series(1, 1000)',
	'after the immediate stop, the file writable again', count => 1000);

$t->stop;
$t->summary;
done_testing();
