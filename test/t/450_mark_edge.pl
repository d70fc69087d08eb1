# 450_mark_edge.pl: the durable mark's edges (issue 23's durable-state mutants).
#
# - No ID in the first ms past the durable mark is issued before the mark is
#   raised: with the writer stalled and the clock frozen, generation running
#   ahead of the clock (max_lead_ms) fills every ms up to the mark and stops
#   there; after a crash the server starts in the first ms past the mark, so
#   an ID issued there before the crash would be issued again.
# - A failed fsync of the temporary state file is a failed write: the rename
#   does not happen, the mark is not raised, the call gets the error.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

# fsync on (the stall and the error are injected into fsync).  The clock is
# frozen: generation fills every ms up to the mark, 4096 IDs each, running
# ahead of the clock (max_lead_ms), whatever the machine's speed.
my $t = SnowflakeTest->new('edge', restart_after_crash => 1,
	conf => "fsync = on\nsnowflake.max_lead_ms = 60000\nsnowflake.reservation_ms = 10");
$t->set_clock(SnowflakeTest::frozen_time(time()));
$t->start;
$t->query('CREATE EXTENSION snowflake');
$t->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'before the stall', count => 1000);
my $dir = PostgreSQL::Test::Utils::tempdir;
my $writer = $t->writer_pid;
my $data = $t->data_dir;

sub mark_ms
{
	return $t->query('SELECT floor(extract(epoch FROM reserved_until) * 1000)::bigint FROM snowflake_state()');
}

# --- The first ms past the mark.  Every fsync of the writer stalls for 60 s.
my $bg = $t->background;
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
my $stall = SnowflakeTest::strace_start("$dir/stall.strace", '-f', '-e', 'trace=fsync,fdatasync',
	'-e', 'inject=fsync,fdatasync:delay_enter=60000000', '-p', $writer);
my $mark = mark_ms();
$bg->query('SET snowflake.max_wait_ms = 0');
# Runs ahead of the clock (4096 IDs a ms) until the mark stops it.
$bg->query('SELECT count(snowflake_next()) FROM (SELECT generate_series(1, 100000000)) s');
my $r = SnowflakeTest::parse_error({ stderr => $bg->{stderr} });
like($r->{message} // '', qr/durable mark could not be raised|clock/, 'generation stopped while the writer is stalled')
  or diag("stderr: $bg->{stderr}");
note 'the call ended with: ' . ($r->{message} // '(none)') . ' / ' . ($r->{detail} // '');
$bg->{stderr} = '';
is(mark_ms(), $mark, 'the mark did not move (the write is stalled)');
my $s = $t->status;
is($s->{last_unix_ms}, $mark, 'generation reached the mark: the last ID lies in the mark\'s ms');
cmp_ok($s->{last_unix_ms}, '<=', $s->{reserved_until_ms}, 'no ID in the first ms past the durable mark');
# What was issued last, before the crash.
$t->record('last ID before the crash', $s->{last_id});

# A crash while the write is stalled: the file holds the old mark, the WAL the
# record of the stalled write (logged before it); the restarted server starts
# past the mark, above every ID issued before the crash.
$bg->quit;
# Every server process is killed at once, the writer while strace still holds
# it before its fsync (so it never completes the write), as a power loss would.
# (Killing the postmaster alone is not enough here: on PostgreSQL 18 the
# walwriter outlived it by more than 30 s, the stalled writer having been let
# go by strace went on to finish its write, and the restart could not begin.)
my @pids = split /\n/, $t->query('SELECT pid FROM pg_stat_activity');
$t->node->kill9;
kill 'KILL', @pids, $writer;
SnowflakeTest::strace_stop($stall);
for (1 .. 300)
{
	last unless grep { kill(0, $_) } @pids, $writer;
	usleep(100_000);
}
ok(!(grep { kill(0, $_) } @pids, $writer), 'every server process is gone after the crash')
  or diag(join("\n", map { my $p = $_; "pid $p: " . (eval { slurp_file("/proc/$p/cmdline") } // '') . ' ' . join(' ', grep { /^(Name|State|PPid|TracerPid)/ } split /\n/, (slurp_file("/proc/$p/status") // '')) } grep { kill(0, $_) } @pids, $writer));
$t->start;
my @after = $t->ids('SELECT snowflake_next() FROM generate_series(1, 10000)',
	'after the crash', count => 10000);
cmp_ok(SnowflakeTest::id_unix_ms($after[0]), '>', $mark,
	'the restarted server starts past the mark (crash recovery replays the stalled write\'s WAL record, which was logged before the write)');

# --- A failed fsync of the temporary file (and only of it: -P), on the real clock.
$t->set_clock('+0');
$t->restart;
$t->next_id('before the fsync error');
$writer = $t->writer_pid;
$mark = mark_ms();
my $eio = SnowflakeTest::strace_start("$dir/eio.strace", '-f', '-P', "$data/snowflake.state.tmp",
	'-e', 'trace=fsync', '-e', 'inject=fsync:error=EIO', '-p', $writer);
$r = $t->refused("SET snowflake.max_wait_ms = 5000;\nSELECT count(snowflake_next()) FROM (SELECT generate_series(1, 50000000)) s;",
	'a failed fsync of the temporary state file', sqlstate => '58030',
	message => qr/could not fsync snowflake state file "snowflake\.state\.tmp": Input\/output error/);
is(mark_ms(), $mark, 'the failed fsync did not raise the mark');
my $s2 = $t->status;
cmp_ok($s2->{last_unix_ms}, '<=', $mark, 'no ID past the mark while the fsync fails');
SnowflakeTest::strace_stop($eio);
$t->ids("SET snowflake.max_wait_ms = 10000;\nSELECT snowflake_next() FROM generate_series(1, 1000)",
	'fsync works again', count => 1000);
$t->restart;
$t->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'after a restart', count => 1000);

$t->stop;
$t->summary;
done_testing();
