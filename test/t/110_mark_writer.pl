# 110_mark_writer.pl: the durable mark is raised by the reservation writer, off
# the callers' path, and a stalled write never hangs a caller.
#
# - In steady generation the reservation writer raises the mark (it makes the
#   write calls); a generating session makes no write call of its own.
# - The writer's syscalls, in order: create the temp file, write it, fsync it,
#   rename it over the state file, fsync the directory.
# - With every fsync stalled (strace's inject, as a slow or failing cloud
#   volume does), a caller that needs a raised mark waits at most
#   snowflake.max_wait_ms, then refuses with an error naming the stalled write;
#   a cancel ends its wait at once, while the write is still stalled; no ID
#   beyond the durable mark is ever returned.
# - The mark is sized from how long writes take: after slow writes it is
#   written further ahead.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep time);

# fsync = on: PostgreSQL::Test::Cluster turns it off, and with it off the
# state file is not fsynced either (as PostgreSQL's own files are not).
my $t = SnowflakeTest->new('writer', conf => qq(
fsync = on
snowflake.reservation_ms = 200
));
$t->start;
$t->query('CREATE EXTENSION snowflake');
my $writer = $t->writer_pid;
my $dir = PostgreSQL::Test::Utils::tempdir();

# The mark, in Unix ms, as snowflake_state() shows it (empty before the first).
sub mark_ms
{
	return $t->query(
		'SELECT floor(extract(epoch FROM reserved_until) * 1000)::bigint FROM snowflake_state()');
}

# An idle writer sleeps: nothing issued since start-up, nobody waits.
sub wakeups
{
	my ($p) = @_;
	return $1 if slurp_file("/proc/$p/status") =~ /^voluntary_ctxt_switches:\s+(\d+)/m;
	die "no voluntary_ctxt_switches in /proc/$p/status";
}
my $wake0 = wakeups($writer);
sleep 2;
my $idle_wakeups = wakeups($writer) - $wake0;
# It looks every half window (100 ms here): about 20 wake-ups; a writer that
# polled at its 10 ms floor would make about 200.
cmp_ok($idle_wakeups, '<', 40, "an idle reservation writer sleeps: $idle_wakeups wake-ups in 2 s (window 200 ms)");

my $bg = $t->background;
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
$t->record('first ID', $bg->query_safe('SELECT snowflake_next()'));

# --- Steady generation: the writer raises the mark, the session writes nothing.

# The control: the same statement without the generator; what it writes (the
# statement's own bookkeeping) is not the generator's.
my $control_w0 = syscw($pid);
$bg->query_safe('SELECT count(*) FROM (SELECT 1 AS id, pg_sleep(0.0005) FROM generate_series(1, 4000)) s');
my $control = syscw($pid) - $control_w0;

my $log = "$dir/steady.strace";
my $st = strace_start($log, '-tt', '-e', 'trace=openat,write,fsync,fdatasync,rename', '-p', $writer);
my $session_log = "$dir/session.strace";
my $sst = strace_start($session_log, '-e', 'trace=%file,write,pwrite64,writev,pwritev,pwritev2,fsync,fdatasync', '-p', $pid);
my ($session_w0, $writer_w0) = (syscw($pid), syscw($writer));
my $mark0 = mark_ms();
my $out = $bg->query_safe(
	'SELECT string_agg(id::text, chr(10)) FROM (SELECT snowflake_next() AS id, pg_sleep(0.0005) FROM generate_series(1, 4000)) s');
my @steady = split /\n/, $out;
my ($session_w1, $writer_w1) = (syscw($pid), syscw($writer));
strace_stop($st);
strace_stop($sst);
is(scalar(@steady), 4000, 'steady generation: 4000 IDs');
ok(!$t->record('steady generation', @steady), 'steady generation: IDs new and increasing');
my $span = SnowflakeTest::id_unix_ms($steady[-1]) - SnowflakeTest::id_unix_ms($steady[0]);
cmp_ok($span, '>', 1000, "steady generation spans $span ms, more than 5 reservation windows");
cmp_ok(mark_ms(), '>', $mark0 + 1000, 'the durable mark moved on with generation');
is($session_w1 - $session_w0, $control,
	"the generating session made no write call of its own (/proc/PID/io syscw, as the control's $control)")
  or diag('the session\'s file and write calls: ' . slurp_file($session_log));
unlike(slurp_file($session_log), qr/snowflake\.state|fsync|fdatasync/,
	'the generating session did not touch the state file, nor fsync anything');
cmp_ok($writer_w1 - $writer_w0, '>=', 5, 'the reservation writer made the write calls');

# The order of the writer's syscalls for each raise: every call on the temp
# file, the rename and the directory, in order (log lines and the WAL flush,
# which comes first, are other calls and files).
my (@rounds, $cur);
foreach my $line (split /\n/, slurp_file($log))
{
	next unless $line =~ /^\S+ (\w+)\((.*)\) += (-?\d+)/;
	my ($call, $args, $ret) = ($1, $2, $3);
	if ($call eq 'openat' && $args =~ /"snowflake\.state\.tmp"/)
	{
		$cur = { fd => $ret, seq => ['create'] };
		push @rounds, $cur;
		next;
	}
	next unless $cur;
	my ($fd) = $args =~ /^(\d+)/;
	if ($call eq 'write' && defined $fd && $fd == $cur->{fd} && !$cur->{renamed}) { push @{ $cur->{seq} }, 'write' }
	elsif ($call =~ /^f(data)?sync$/ && defined $fd && $fd == $cur->{fd} && !$cur->{renamed}) { push @{ $cur->{seq} }, 'fsync temp' }
	elsif ($call eq 'rename' && $args =~ /^"snowflake\.state\.tmp", "snowflake\.state"$/) { push @{ $cur->{seq} }, 'rename'; $cur->{renamed} = 1 }
	elsif ($call eq 'openat' && $args =~ /^\w+, "\."/ && $cur->{renamed}) { push @{ $cur->{seq} }, 'open dir'; $cur->{dir} = $ret }
	elsif ($call =~ /^f(data)?sync$/ && defined $cur->{dir} && defined $fd && $fd == $cur->{dir}) { push @{ $cur->{seq} }, 'fsync dir'; undef $cur }
}
cmp_ok(scalar(@rounds), '>=', 5, 'the writer raised the mark at least 5 times: ' . scalar(@rounds));
my @bad = grep { join(', ', @{ $_->{seq} }) ne 'create, write, fsync temp, rename, open dir, fsync dir' } @rounds;
# The last round may be cut by the end of the trace.
pop @bad if @bad && $bad[-1] == $rounds[-1] && !defined $rounds[-1]{dir};
is(scalar(@bad), 0, 'every raise: create temp, write it, fsync it, rename, fsync the directory')
  or diag('got: ' . join(', ', @{ $bad[0]{seq} }));

# --- A stalled disk: every fsync of the writer and of the session takes 60 s.

my $stall = strace_start("$dir/stall.strace", '-f', '-e', 'trace=fsync,fdatasync',
	'-e', 'inject=fsync,fdatasync:delay_enter=60000000', '-p', $writer, '-p', $pid);
my $stalled_mark = mark_ms();
my $t0 = time;
my $r = SnowflakeTest::parse_error({ stderr => '' });
$bg->query_safe("SET statement_timeout = '1500ms'");
$bg->query_safe("SET snowflake.max_wait_ms = 300");
$out = $bg->query(
	'SELECT string_agg(id::text, chr(10)) FROM (SELECT snowflake_next() AS id, pg_sleep(0.001) FROM generate_series(1, 3000)) s');
my $elapsed = time - $t0;
$r = SnowflakeTest::parse_error({ stderr => $bg->{stderr} });
is($r->{sqlstate}, '55000', 'stalled write: the call is refused (55000), not ended by statement_timeout')
  or diag("stderr: $bg->{stderr}");
like($r->{message}, qr/snowflake_next\(\) refused: the durable mark could not be raised within snowflake\.max_wait_ms \(300 ms\)/,
	'stalled write: the error says the mark could not be raised in time');
like($r->{detail} // '', qr/writing "snowflake\.state" for \d+ ms/,
	'stalled write: the detail names the stalled write');
note "stalled write: refused after $elapsed s";
$bg->{stderr} = '';

# A cancel ends the wait at once, while the write is still stalled.
$bg->query_safe("SET statement_timeout = 0");
$bg->query_safe("SET snowflake.max_wait_ms = 600000");
$bg->query_until(qr/waiting/, "\\echo waiting\nSELECT count(snowflake_next()) FROM generate_series(1, 100000);\n");
my $waiting = $t->wait_for_active('SELECT count(snowflake_next())%', "wait_event_type = 'Extension'");
is($waiting, $pid, 'the session waits for the mark');
is($t->query("SELECT pg_cancel_backend($pid)"), 't', 'pg_cancel_backend sent');
is($bg->query('SELECT 1'), '1', 'the cancelled call ended');
like($bg->{stderr}, qr/ERROR:\s+57014:\s+canceling statement due to user request/,
	'the waiting call ends with the cancel error (57014)');
is(mark_ms(), $stalled_mark, 'the cancel came while the write was still stalled (the mark has not moved)');
$bg->{stderr} = '';

# Nothing beyond the mark came out while it was stalled.
my $ids = $t->query('SELECT count(*) FROM snowflake_status() WHERE floor(extract(epoch FROM last_ts) * 1000) > '
	  . $stalled_mark);
is($ids, '0', 'no ID beyond the durable mark was issued while the write stalled');

strace_stop($stall);
ok($t->node->poll_query_until('postgres', "SELECT floor(extract(epoch FROM reserved_until) * 1000)::bigint > $stalled_mark FROM snowflake_state()"),
	'the disk back: the stalled write completes and the mark moves on');
$bg->query_safe('SET snowflake.max_wait_ms = 10000');
my @after = split /\n/, $bg->query_safe('SELECT snowflake_next() FROM generate_series(1, 10)');
ok(!$t->record('after the stall', @after), 'after the stall: IDs new and above all earlier');

# The writer measured the stalled write: it now writes the mark further ahead.
my ($slow, $ahead) = split /\|/, $t->query(
	q{SELECT round(slowest_recent_write_ms), floor(extract(epoch FROM reserved_until - clock_timestamp()) * 1000)::bigint FROM snowflake_state()});
cmp_ok($slow, '>=', 300, "the writer measured the stalled write: slowest recent write $slow ms");
cmp_ok($ahead, '>', 1000, "after a slow write the mark is written further ahead: $ahead ms ahead of the clock, window 200 ms");

$bg->quit;
$t->summary;
$t->stop;
done_testing();
