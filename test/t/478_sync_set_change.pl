# 478_sync_set_change.pl: with synchronous_standby_names = 'FIRST 1 (a, b)', a dies and b becomes
# the synchronous standby, with no reload (outside attack on issue 19, round 19, F2).
#
# PostgreSQL's confirmed position (WalSndCtl->lsn) only grows: after a's death it still said what
# a had flushed, so the reservation a had confirmed went on being issued although b, synchronous
# now, did not have its record; promoted after the primary's death, its clock behind, b issued
# those IDs again (20,000 to 34,000 of them).  Now the reservation must be on the synchronous
# standbys of now: the writer looks every 100 ms (sessions every 20 ms) and, finding the record of
# the published mark not on them, holds generation until they have a new record of it (logged).
# Here b's link stalls
# (its WAL sender SIGSTOPped), a stops, and not one ID is returned; then the primary is killed and b
# is promoted with its clock a minute behind: its IDs lie above those both standbys had.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

use Time::HiRes qw(usleep);

my ($p, $sa, $sb, $ids) = SnowflakeTest->first_of_two_standbys(conf => 'snowflake.max_wait_ms = 300');
my @ids = @$ids;

my $wb = $p->query(q{SELECT pid FROM pg_stat_replication WHERE application_name = 'b'});
kill 'STOP', $wb;
# a confirms the marks while b's link stalls (IDs on a only, as commits acknowledged now would be:
# promote the standby that was synchronous; they are not compared below).
for (1 .. 10)
{
	$p->ids('SELECT snowflake_next()', "a confirms while b stalls ($_)", count => 1);
	usleep(50_000);
}
my $log_at = -s $p->node->logfile;
$sa->node->stop('immediate');
ok($p->node->poll_query_until('postgres', q{SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'b'}),
	'a gone, b is the synchronous standby (no reload)');
ok($p->node->wait_for_log(qr/snowflake issues no new ID until the synchronous standbys of now confirm the durable mark/, $log_at),
	'the writer holds generation: the mark\'s record is not on b');
my @late;
for (1 .. 5)
{
	my $r = $p->run('SELECT snowflake_next()');
	push @late, $1 if $r->{ret} == 0 && $r->{stdout} =~ /^(\d+)$/m;
	$r = $p->run('SELECT max(x) FROM snowflake_next_n(1000) x');
	push @late, $1 if $r->{ret} == 0 && $r->{stdout} =~ /^(\d+)$/m;
}
is(scalar(@late), 0, 'from then on, not one ID is returned while b has not flushed the mark');

# The postmaster first (the stopped WAL sender never sends again), then the WAL sender.
$p->kill9($wb);
$sb->set_clock_ms(-60_000);
$sb->promote;
my $min_after = $sb->query('SELECT min(x) FROM snowflake_next_n(100000) x');
like($min_after, qr/^\d+$/, 'b promoted, its clock a minute behind, issues IDs');
my ($high_late) = sort { $b <=> $a } @late;
cmp_ok($min_after, '>', $high_late // 0, 'above every ID the primary returned after a\'s death');
cmp_ok($min_after, '>', (sort { $a <=> $b } @ids)[-1], 'and above the IDs taken while both streamed');

done_testing();
