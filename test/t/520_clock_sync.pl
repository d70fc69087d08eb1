# 520_clock_sync.pl: the clock watch and the time service's first
# synchronization (W7, docs/clock.md).
#
# After a reboot whose RTC left the clock behind (longer than the RTC's lag,
# so the clock is past the state file's time), or in a new cluster started
# before the clock was set, the watch arms on a clock that is still behind; the
# time service's correction is a forward step.  The kernel reports the clock
# unsynchronized until a time service has set it (adjtimex: STA_UNSYNC), and
# this is what tells the correction from a jump:
#
#  - armed while unsynchronized, the step the kernel then reports synchronized
#    is taken in without a hold, whether the service marks the clock
#    synchronized before the step reaches a call or after a call was held;
#  - once synchronized (with or without a step), later steps are held;
#  - armed while synchronized, or on a kernel that never reports the clock
#    synchronized, a step is held as before;
#  - a clean restart and a crash on the same boot keep what the watch knew
#    (the state file records it).
#
# The clock and the kernel's answer are faked for every server process by
# clockshim.c (SnowflakeTest->set_clock_ms, set_clock_sync).

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $TOL = 5000;
my $DAY = 86_400_000;
my $JUMP = qr/^snowflake_next(_n)?\(\) refused: the system clock jumped (\d+) ms forward$/;
my $TOOK = qr/a time service synchronized the system clock, which it had not synchronized when the watch armed/;

# The ms of the last ID this node issued, relative to the real clock now (ms).
sub last_lag_ms
{
	my ($t) = @_;
	my $s = $t->status(1, $t->{machine});
	return int(Time::HiRes::time() * 1000) - $s->{last_unix_ms};
}

my $nodes = 0;
# A new cluster whose clock is a day behind when it starts, armed there by its
# first ID; the kernel's answer is $sync when the watch arms.
sub behind
{
	my ($what, $sync) = @_;
	$nodes++;
	my $t = SnowflakeTest->new("sync$nodes", clock => 'shim', restart_after_crash => 1,
		conf => "snowflake.max_clock_jump_ms = $TOL\nsnowflake.reservation_ms = 1000\nsnowflake.machine_id = $nodes\n");
	$t->{machine} = $nodes;
	$t->set_clock_sync($sync);
	$t->set_clock_ms(-$DAY);
	$t->start;
	$t->query('CREATE EXTENSION snowflake');
	$t->next_id("$what: the first ID arms the watch a day behind");
	cmp_ok(last_lag_ms($t), '>', $DAY - 60_000, "$what: that ID lies a day behind");
	return $t;
}

# The time service marks the clock synchronized and steps it, as one event for the watch: the
# writer, which looks every second, is stopped meanwhile (a look between the two writes of the
# shim would see a synchronization without a step, [4], and hold the step: seen once under load).
sub sync_and_step
{
	my ($t) = @_;
	my $w = $t->writer_pid;
	kill('STOP', $w) or die "kill STOP writer: $!";
	$t->set_clock_sync('synchronized');
	$t->set_clock_ms(0);
	kill('CONT', $w) or die "kill CONT writer: $!";
}

# --- 1. The service marks the clock synchronized, then the step reaches a call.
my $t = behind('[1] synchronized, then stepped', 'unsynchronized');
my $log_at = -s $t->node->logfile;
sync_and_step($t);
$t->next_id('[1] the correction is no jump');
cmp_ok(last_lag_ms($t), '<', 60_000, '[1] the ID after the correction lies at the corrected time');
ok($t->node->wait_for_log(qr/snowflake: $TOOK: its \d+ ms lead over the time trusted is taken as the correction/, $log_at),
	'[1] the server log says the synchronization was taken in');
# --- 3. Once synchronized, a step is held.
$t->set_clock_ms(2 * $TOL);
$t->refused('SELECT snowflake_next();', '[3] after the synchronization, a step is held', message => $JUMP);
$t->set_clock_ms(0);
$t->next_id('[3] back');
$t->stop;

# --- 2. The step reaches a call first (the kernel still says unsynchronized):
# --- held; the writer ends the hold when the kernel reports it synchronized.
$t = behind('[2] stepped, then synchronized', 'unsynchronized');
$log_at = -s $t->node->logfile;
$t->set_clock_ms(0);
$t->refused('SELECT snowflake_next();', '[2] a step the kernel does not call synchronized is held', message => $JUMP);
$t->set_clock_sync('synchronized');
ok($t->node->wait_for_log(qr/WARNING:  snowflake: $TOOK: its \d+ ms forward step is taken as the correction of a clock that was behind, and generation resumes/, $log_at),
	'[2] the writer ends the hold once the kernel reports the clock synchronized');
$t->next_id('[2] generation resumes at the corrected time');
cmp_ok(last_lag_ms($t), '<', 60_000, '[2] at the corrected time');
$t->stop;

# --- 4. Synchronized without a step: from then on steps are held.
$t = behind('[4] synchronized in place', 'unsynchronized');
$log_at = -s $t->node->logfile;
$t->set_clock_sync('synchronized');
ok($t->node->wait_for_log(qr/LOG:  snowflake: a time service synchronized the system clock; forward steps are held from here on/, $log_at),
	'[4] the writer sees the synchronization without a step');
$t->set_clock_ms(-$DAY + 2 * $TOL);
$t->refused('SELECT snowflake_next();', '[4] a later step is held', message => $JUMP);
$t->stop;

# --- 5. Armed while synchronized: the step is held, whatever the kernel says after.
$t = behind('[5] armed synchronized', 'synchronized');
$t->set_clock_ms(0);
$t->refused('SELECT snowflake_next();', '[5] a step of a clock armed synchronized is held', message => $JUMP);
$t->stop;

# --- 6. Never synchronized: the step is held, and stays held.
$t = behind('[6] never synchronized', 'unsynchronized');
$t->set_clock_ms(0);
$t->refused('SELECT snowflake_next();', '[6] a step on a kernel that never synchronizes is held', message => $JUMP);
sleep 2;    # the writer looks every second: it must not end the hold
my $r = $t->refused('SELECT snowflake_next();', '[6] still held after the writer looked', message => $JUMP);
my ($held_ms) = $r->{message} =~ /jumped (\d+) ms forward/;
is($t->query('SELECT snowflake_accept_clock()'), $held_ms,
	'[6] snowflake_accept_clock() returns the ms the refusal named (both rounded alike)');
$t->next_id('[6] after the accept');
$t->stop;

# --- 7. A clean restart, then a crash, on the same boot keep what the watch
# --- knew (the state file records it): the later synchronization is taken in.
$t = behind('[7] restart before the synchronization', 'unsynchronized');
$t->restart;
$t->next_id('[7] after a clean restart, still a day behind');
$t->kill9;
$t->start;
$t->next_id('[7] after a crash, still a day behind');
cmp_ok(last_lag_ms($t), '>', $DAY - 60_000, '[7] that ID lies a day behind');
sync_and_step($t);
$t->next_id('[7] the synchronization after the restarts is no jump');
cmp_ok(last_lag_ms($t), '<', 60_000, '[7] at the corrected time');
$t->stop;

$t->summary;
done_testing();
