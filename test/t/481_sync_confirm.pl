# 481_sync_confirm.pl: with synchronous_standby_names set, no ID beyond a mark
# is returned before the synchronous standbys have flushed the MARK record that
# carries it (issue 19, round 16 of the outside attack).
#
# PostgreSQL waits for a synchronous standby only at the commit of a
# transaction that wrote.  IDs returned by a SELECT, or by a transaction that
# rolls back, were covered by a mark on the primary alone: a standby promoted
# after the primary's death, its clock behind, issued them again (1,882,368
# duplicates from one snowflake_next_n(4000000) read while the standby's link
# stalled).  Here the link stalls for real (the primary's WAL sender is
# SIGSTOPped, so nothing more reaches the standby), the primary is killed, and
# the standby, its clock a minute behind, is promoted and adopts: every ID it
# issues lies above every ID the primary returned.  Also: a stalled
# synchronous standby refuses IDs beyond the confirmed mark (a detail naming
# it, one LOG), a session's synchronous_commit does not bypass it, clearing
# synchronous_standby_names lets generation go on, and the standby's return
# ends the wait.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

use Time::HiRes qw(usleep);

my $p = SnowflakeTest->new('primary', allows_streaming => 1, conf => 'snowflake.max_wait_ms = 2000');
$p->start;
$p->query('CREATE EXTENSION snowflake');
$p->query('ALTER SYSTEM SET snowflake.failover_adopt = on; SELECT pg_reload_conf()');
$p->node->backup('b');

# The standby's application_name is its node name ('standby').
# Its IDs may lead its clock by two minutes: promoted with the clock behind, it
# issues from the mark it adopted, as the attacker's standby did.
my $s = SnowflakeTest->new('standby', from_backup => [ $p, 'b' ], id_key => 'primary', clock => 'shim',
	conf => 'snowflake.max_lead_ms = 120000');
$s->start;

sub set_sync
{
	my ($value) = @_;
	$p->query("ALTER SYSTEM SET synchronous_standby_names = '$value'; SELECT pg_reload_conf()");
}

sub wait_sync
{
	$p->node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming'")
	  or die 'the standby did not become synchronous';
}

set_sync('standby');
wait_sync();

# Confirmed at once while the standby streams: IDs far beyond the first mark.
my @ids = $p->ids('SELECT snowflake_next_n(1000000)', 'the primary, synchronous standby streaming', count => 1_000_000);
$s->wait_witness;

my $big = 'SELECT max(x) FROM snowflake_next_n(4000000) x';

# Takes IDs until refused; returns the highest ID returned and the refusal.
sub until_refused
{
	my ($what, $setup) = @_;
	my ($high, $r);
	for my $try (1 .. 20)
	{
		$r = $p->run(($setup // '') . "\n$big");
		if ($r->{ret} == 0)
		{
			my ($max) = grep { /^\d+$/ } split /\n/, $r->{stdout};
			$high = $max if defined $max && (!defined $high || $max > $high);
			next;
		}
		last;
	}
	isnt($r->{ret}, 0, "$what: refused within 20 calls of 4,000,000 IDs");
	is($r->{sqlstate}, '55000', "$what: SQLSTATE 55000");
	like($r->{detail} // '', qr/has waited \d+ ms for the synchronous standbys \(synchronous_standby_names\) to flush its WAL record/,
		"$what: the detail names the wait for the synchronous standbys");
	like($r->{hint} // '', qr/Check the synchronous standbys/, "$what: the hint says where to look");
	return $high;
}

sub walsender
{
	my $pid = $p->query("SELECT pid FROM pg_stat_replication WHERE application_name = 'standby'");
	die "no WAL sender for the standby" unless $pid =~ /^\d+$/;
	return $pid;
}

# 1. The link stalls: nothing beyond the confirmed mark, whatever the session says.
my $ws = walsender();
kill 'STOP', $ws;
my $log_at = -s $p->node->logfile;
until_refused('stalled standby');
my $writes = $p->query('SELECT mark_writes FROM snowflake_state()');
until_refused('stalled standby, the session with synchronous_commit = local', 'SET synchronous_commit = local;');
is($p->query('SELECT mark_writes FROM snowflake_state()'), $writes,
	'while the mark waits for confirmation, nothing new is written (no write, no MARK record per look or call)');
ok($p->node->wait_for_log(qr/snowflake waits for the synchronous standbys to confirm the durable mark/, $log_at),
	'the writer logs the wait');
my $waits = () = slurp_file($p->node->logfile, $log_at) =~ /snowflake waits for the synchronous standbys/g;
is($waits, 1, 'the wait is logged once, not at every look');

# No writer running (it exited; the postmaster, stopped here, cannot restart it): a
# waiting call in a session opened before waits for the standbys too, and writes
# nothing new while a mark waits for them (not one write per look).
my $bg = $p->background;
$bg->query_safe('SET snowflake.max_wait_ms = 1000');
my $cw = $p->query('SELECT caller_writes FROM snowflake_state()');
my ($pm, $exited) = $p->stop_writer_and_postmaster;
ok($exited, 'the writer exited (not reaped while the postmaster is stopped)');
my $none = $bg->query($big);
like($bg->{stderr}, qr/has waited \d+ ms for the synchronous standbys/, 'no writer: the call is refused, waiting for the standbys');
$bg->query($big);
my $cw_after = $bg->query('SELECT caller_writes FROM snowflake_state()');
kill('CONT', $pm) or die "kill CONT postmaster: $!";
is($none, q{}, 'no writer: no ID returned');
is($cw_after, $cw, 'no writer: the waiting calls wrote nothing while the mark waits for the standbys');
$bg->quit;
$p->writer_pid;

# 2. The standby comes back: the wait ends, IDs flow again.
kill 'CONT', $ws;
$p->ids($big, 'the standby back', count => 1);
ok($p->node->wait_for_log(qr/durable mark is confirmed by the synchronous standbys/, $log_at),
	'the end of the wait is logged');

# 3. Stalled again, then synchronous_standby_names cleared: generation goes on.
kill 'STOP', $ws;
until_refused('stalled again');
set_sync('');
$p->ids($big, 'synchronous_standby_names cleared', count => 1);
set_sync('standby');
kill 'CONT', $ws;
wait_sync();
$p->ids($big, 'synchronous again', count => 1);

# Small calls: each returned ID counted (none expected while a mark waits for the standby).
sub small_calls
{
	my ($n, $run) = @_;
	my ($returned, $high) = (0, 0);
	for (1 .. $n)
	{
		my ($ok, $out) = $run->('SELECT snowflake_next()');
		if ($ok && $out =~ /^(\d+)$/m)
		{
			$returned++;
			$high = $1 if $1 > $high;
		}
	}
	return ($returned, $high);
}
sub new_session_call
{
	my $r = $p->run("SET snowflake.max_wait_ms = 300;\n$_[0]");
	return ($r->{ret} == 0, $r->{stdout});
}

# 3b. Round 19: the change taken in where no writer saw the reload.  The link stalls under
# asynchronous replication; then, with the postmaster stopped and no writer running, the setting
# comes to name the standby.  (a) A session that took in the reload takes the change in: from then
# on not even an ID below the published mark is returned.  (b) A writer started after the change
# (it never gets the reload) takes it in at its first look.  Before, only a writer's own reload
# compared the setting with what it had before.
set_sync('');
$ws = walsender();
kill 'STOP', $ws;
like($p->query('SELECT snowflake_next()'), qr/^\d+$/, "asynchronous, the link stalled: an ID ($_)") for 1 .. 3;
$log_at = -s $p->node->logfile;
$bg = $p->background;
my $bpid = $bg->query('SELECT pg_backend_pid()');
($pm, $exited) = $p->stop_writer_and_postmaster;
ok($exited, '(a) the writer exited');
$bg->query(q{ALTER SYSTEM SET synchronous_standby_names = 'standby'});
kill('HUP', $bpid) or die "kill HUP session: $!";
$bg->query('SELECT 1');
is($bg->query('SHOW synchronous_standby_names'), 'standby', '(a) the session took in the new setting');
$bg->query_safe('SET snowflake.max_wait_ms = 1000');
is($bg->query($big), q{}, '(a) no writer: a call that needs a new mark is refused');
like($bg->{stderr}, qr/has waited \d+ ms for the synchronous standbys/, '(a) no writer: refused, waiting for the standbys');
$bg->query('SET snowflake.max_wait_ms = 300');
my ($ret_a) = small_calls(5, sub { my $o = $bg->query($_[0]); return ($o ne q{}, $o) });
kill('CONT', $pm) or die "kill CONT postmaster: $!";
is($ret_a, 0, '(a) no writer: from then on not one snowflake_next() is returned, though the published mark would cover it');
like(slurp_file($p->node->logfile, $log_at), qr/snowflake issues no new ID until the synchronous standbys named now confirm the durable mark/,
	'(a) the hold is logged');
$bg->quit;
$p->writer_pid;
set_sync('');
$p->ids('SELECT snowflake_next()', '(a) the setting cleared: IDs again', count => 1);
like($p->query('SELECT snowflake_next()'), qr/^\d+$/, "(b) asynchronous, the link stalled: an ID ($_)") for 1 .. 3;
$log_at = -s $p->node->logfile;
$bg = $p->background;
($pm, $exited) = $p->stop_writer_and_postmaster;
ok($exited, '(b) the writer exited');
$bg->query(q{ALTER SYSTEM SET synchronous_standby_names = 'standby'; SELECT pg_reload_conf()});
kill('CONT', $pm) or die "kill CONT postmaster: $!";
$bg->quit;
ok($p->node->wait_for_log(qr/snowflake issues no new ID until the synchronous standbys named now confirm the durable mark/, $log_at),
	'(b) the restarted writer, which never got the reload, holds generation');
my ($ret_b) = small_calls(5, \&new_session_call);
is($ret_b, 0, '(b) not one snowflake_next() is returned while the standby has not flushed the mark');
kill 'CONT', $ws;
wait_sync();
$p->ids($big, '(b) the standby back: IDs again', count => 1);

# 3c. Round 19, F1: the writer cannot look (stalled in a write; stopped here), and the setting
# comes to name the standby, whose link stalls: a session that took in the reload does not issue
# from the reservation confirmed under the old setting.  It takes the change in itself (or, with the
# writer holding the lock, waits for it) and is refused.  Before, IDs went on for as long as the
# writer's write stalled (seconds).
set_sync('');
like($p->query('SELECT snowflake_next()'), qr/^\d+$/, "(c) asynchronous: an ID ($_)") for 1 .. 3;
$ws = walsender();
kill 'STOP', $ws;
my $writer = $p->writer_pid;
kill('STOP', $writer) or die "kill STOP writer: $!";
$log_at = -s $p->node->logfile;
$p->query(q{ALTER SYSTEM SET synchronous_standby_names = 'standby'; SELECT pg_reload_conf()});
$p->node->poll_query_until('postgres', q{SELECT current_setting('synchronous_standby_names') = 'standby'})
  or die 'the reload did not reach the sessions';
my ($ret_c) = small_calls(5, \&new_session_call);
is($ret_c, 0, '(c) the writer stopped: not one snowflake_next() is returned under the new setting');
like(slurp_file($p->node->logfile, $log_at), qr/snowflake issues no new ID until the synchronous standbys named now confirm the durable mark/,
	'(c) the session took the change in and logged the hold');
kill('CONT', $writer) or die "kill CONT writer: $!";
kill 'CONT', $ws;
wait_sync();
$p->ids($big, '(c) the writer and the standby back: IDs again', count => 1);

# 4. The failover (round 17 of the outside attack): replication runs asynchronously and the link
# stalls, so the marks the primary writes meanwhile reach no standby (the documented exposure of
# asynchronous replication: those IDs are not compared below); then synchronous_standby_names
# names the standby.  The mark was published with no standby named: from the writer's reload on,
# no ID is returned until the standby has flushed a new record of it.  Before the fix the primary
# went on issuing from the published mark, and the promoted standby issued those IDs again.
set_sync('');
$ws = walsender();
kill 'STOP', $ws;
for (1 .. 15)
{
	like($p->query('SELECT snowflake_next()'), qr/^\d+$/, "asynchronous, the link stalled: an ID ($_)");
	usleep(100_000);
}
$log_at = -s $p->node->logfile;
set_sync('standby');
ok($p->node->wait_for_log(qr/snowflake issues no new ID until the synchronous standbys named now confirm the durable mark/, $log_at),
	'the writer holds generation when synchronous_standby_names names the standby');
# Small calls first: the published mark (about reservation_ms ahead of the clock) would cover them.
my ($returned, $high) = small_calls(5, \&new_session_call);
is($returned, 0, 'from the setting on, not one snowflake_next() is returned while the standby has not flushed the mark');
my $big_high = until_refused('synchronous_standby_names set while the link stalls');
is($big_high, undef, 'nor any snowflake_next_n()');
$high = $big_high if defined $big_high && $big_high > $high;
# The postmaster first (the stopped WAL sender never sends again), then the WAL sender.
$p->kill9($ws);

# The standby's clock is a minute behind the primary's IDs: only the adopted
# mark keeps it above them.
$s->set_clock_ms(-60_000);
$s->promote;
my @after = $s->ids('SELECT snowflake_next_n(100000)', 'the promoted standby, its clock a minute behind', count => 100_000);
my ($min_after) = sort { $a <=> $b } @after;
cmp_ok($min_after, '>', $high, 'every ID of the promoted standby lies above every ID the primary returned');
cmp_ok($min_after, '>', (sort { $a <=> $b } @ids)[-1], 'and above the IDs taken while the standby streamed');

done_testing();
