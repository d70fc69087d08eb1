# 460_writer_backoff.pl: while the state file cannot be written, the
# reservation writer backs off (doubling, capped at 10 s) instead of retrying
# every 100 ms forever, and logs one failure per episode, then one line with
# the count when a write succeeds again (issue 19 item 5).  Each attempt logs a
# MARK record to WAL (and so writes on every standby): fewer attempts, fewer
# records.  Counts, not timings: over an idle stretch of 3 s the old writer
# made about 30 attempts (and 30 LOG entries); with the backoff, the stretch
# starting at an attempt at least 200 ms after the first, it makes at most 4
# (200 + 400 + 800 + 1600 ms > 3 s; the bound below leaves one for a slow
# machine, where the stretch runs long).

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

my $t = SnowflakeTest->new('backoff');
$t->start;
$t->query('CREATE EXTENSION snowflake');
$t->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'before the fault', count => 1000);
my $writer = $t->writer_pid;
my $dir = PostgreSQL::Test::Utils::tempdir;

sub failures { return $t->query('SELECT mark_write_failures FROM snowflake_state()'); }

my $before = failures();
my $log_offset = -s $t->node->logfile;
my $st = SnowflakeTest::strace_start("$dir/erofs.strace", '-P', 'snowflake.state.tmp',
	'-e', 'trace=rename,renameat,renameat2', '-e', 'inject=rename,renameat,renameat2:error=EROFS', '-p', $writer);

# One call asks for a higher mark; it gets the error.  No client after it.
$t->refused("SET snowflake.max_wait_ms = 500;\nSELECT count(snowflake_next()) FROM (SELECT generate_series(1, 4000000)) s;",
	'the write fails', sqlstate => '42501', message => qr/could not rename snowflake state file/);
my $f0 = failures();
cmp_ok($f0, '>', $before, 'the writer\'s writes fail');
# The writer's next attempt with no client at all (a generous guard: the
# backoff is capped at 10 s), then an idle stretch of 3 s from there.
my $f1 = $f0;
for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
{
	$f1 = failures();
	last if $f1 > $f0;
	usleep(100_000);
}
cmp_ok($f1, '>', $f0, 'the writer still retries while idle');
sleep 3;
my $idle = failures() - $f1;
note "attempts while idle for 3 s: $idle";
cmp_ok($idle, '<=', 5, "it backs off: $idle attempts in 3 s (every 100 ms would be about 30)");

my $log = substr(slurp_file($t->node->logfile), $log_offset);
my $lines = () = $log =~ /\[$writer\] LOG:  could not rename snowflake state file/g;
is($lines, 1, 'the writer logged the episode once');

# The fault ends: a waiting call waits for the writer's next scheduled attempt (490: calls never wake it into one).
SnowflakeTest::strace_stop($st);
$t->ids("SET snowflake.max_wait_ms = 10000;\nSELECT snowflake_next() FROM generate_series(1, 1000)", 'the file writable again',
	count => 1000);
my $total = failures() - $before;
$log = substr(slurp_file($t->node->logfile), $log_offset);
like($log, qr/snowflake state file "snowflake\.state" written again, after $total failed attempts/,
	"the end of the episode is logged once, with its count ($total)");

# A second episode is logged again.
$log_offset = -s $t->node->logfile;
$st = SnowflakeTest::strace_start("$dir/erofs2.strace", '-P', 'snowflake.state.tmp',
	'-e', 'trace=rename,renameat,renameat2', '-e', 'inject=rename,renameat,renameat2:error=EROFS', '-p', $writer);
$t->refused("SET snowflake.max_wait_ms = 500;\nSELECT count(snowflake_next()) FROM (SELECT generate_series(1, 4000000)) s;",
	'the write fails again', sqlstate => '42501', message => qr/could not rename snowflake state file/);
SnowflakeTest::strace_stop($st);
$log = substr(slurp_file($t->node->logfile), $log_offset);
$lines = () = $log =~ /\[$writer\] LOG:  could not rename snowflake state file/g;
is($lines, 1, 'a new episode is logged once');
$t->ids("SET snowflake.max_wait_ms = 10000;\nSELECT snowflake_next() FROM generate_series(1, 100)", 'writable again', count => 100);

$t->stop;
$t->summary;
done_testing();
