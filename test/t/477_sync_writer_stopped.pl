# 477_sync_writer_stopped.pl: FIRST 1 (a, b) loses a while the reservation writer does not run
# (outside attack on issue 19, round 21).
#
# 478 covers the change of synchronous standbys with the writer running: it looks every 100 ms, and
# holds generation.  With the writer SIGSTOPped (or starved) nothing looked, and sessions went on
# issuing a reservation of 10 s whose record only a had: the promoted b issued 438,112 of those IDs
# again.  Now a session looks itself when nobody has found the published mark's record on the
# synchronous standbys of now for SF_SYNC_STALE_MS (20 ms).  Here a new mark is published while b's
# link stalls (so only a has its record), the writer is stopped, a stops, and not one ID is returned;
# b, promoted with its clock a minute behind, issues above every ID the primary returned.  And with
# the writer stopped and the standbys unchanged, sessions go on issuing (their looks find the record).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

use Time::HiRes qw(usleep);

my ($p, $sa, $sb, $ids) = SnowflakeTest->first_of_two_standbys(conf => "snowflake.max_wait_ms = 300\nsnowflake.reservation_ms = 10000");
my @ids = @$ids;

# [1] The writer stopped, the standbys unchanged: sessions look themselves, find the record on a,
# and go on issuing.
my $log_at = -s $p->node->logfile;
my $writer = $p->writer_pid;
kill 'STOP', $writer;
my @kept;
for (1 .. 5)
{
	usleep(30_000);    # longer than SF_SYNC_STALE_MS: the writer's last look is old
	push @kept, $p->ids('SELECT snowflake_next()', "writer stopped, a still synchronous ($_)", count => 1);
}
is(scalar(@kept), 5, 'with the writer stopped and the standbys unchanged, every call is answered');
kill 'CONT', $writer;
ok(!$p->node->log_contains(qr/snowflake issues no new ID/, $log_at), 'and nothing was held');

# [2] b's link stalls; the writer raises the mark (10 s ahead) while it does, so only a has the
# record of the mark published now.
my $wb = $p->query(q{SELECT pid FROM pg_stat_replication WHERE application_name = 'b'});
kill 'STOP', $wb;
my $mark_before = $p->status->{reserved_until_ms};
my $raised = 0;
for (1 .. 150)
{
	$p->ids('SELECT snowflake_next()', 'a confirms while b stalls', count => 1);
	if ($p->status->{reserved_until_ms} > $mark_before)
	{
		$raised = 1;
		last;
	}
	usleep(100_000);
}
ok($raised, 'a new mark is published while b stalls: only a has its record');

# [3] The writer stops; a stops, so b is the synchronous standby (no reload), and nothing looks but
# the sessions.
kill 'STOP', $writer;
$log_at = -s $p->node->logfile;
$sa->node->stop('immediate');
ok($p->node->poll_query_until('postgres', q{SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'b'}),
	'a gone, b is the synchronous standby (no reload)');
my (@late, @refused);
for (1 .. 5)
{
	for my $sql ('SELECT snowflake_next()', 'SELECT max(x) FROM snowflake_next_n(1000) x')
	{
		my $r = $p->run($sql);
		if ($r->{ret} == 0 && $r->{stdout} =~ /^(\d+)$/m)
		{
			push @late, $1;
		}
		else
		{
			push @refused, $r;
		}
	}
}
is(scalar(@late), 0, 'with the writer stopped, not one ID is returned while b has not flushed the mark');
is($refused[0]{sqlstate}, '55000', 'each call is refused (55000)');
like($refused[0]{message}, qr/refused: the durable mark could not be raised within snowflake\.max_wait_ms \(300 ms\)/,
	'because the durable mark is not confirmed');
ok($p->node->log_contains(qr/snowflake issues no new ID until the synchronous standbys of now confirm the durable mark/, $log_at),
	'a session held generation itself, and logged it');

# The postmaster first (the stopped WAL sender never sends again), then the stopped processes.
$p->kill9($wb, $writer);
$sb->set_clock_ms(-60_000);
$sb->promote;
my $min_after = $sb->query('SELECT min(x) FROM snowflake_next_n(100000) x');
like($min_after, qr/^\d+$/, 'b promoted, its clock a minute behind, issues IDs');
cmp_ok($min_after, '>', (sort { $a <=> $b } @ids, @kept)[-1], 'above the IDs taken while both streamed');

done_testing();
