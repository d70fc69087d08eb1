
# Copyright (c) 2026, snowflake contributors
#
# Issue 19, round 10: snowflake.nodes records a node's first use BEFORE its
# first ID is returned, and travels in WAL.  Round 10 issued the original's
# nodes from adopted copies (1,051,755 duplicates) through gaps of a record
# written after the ID: a crash or a stopped writer between the first ID and
# its record, an unwritable file, a copy taken from a standby (standbys never
# wrote the file), and a standby built from a copy before the copy's adoption
# as a new server, promoted later.  Each is reproduced here.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);
use IPC::Run;

my $gen = q{CREATE FUNCTION gen() RETURNS bigint LANGUAGE sql SET snowflake.machine_id = 2 AS 'SELECT snowflake_next()'};
my $retired = qr/^snowflake_next\(\) refused: datacenter 1, machine \d+ is retired on this server$/;

my $o = SnowflakeTest->new('original', allows_streaming => 1, conf => 'snowflake.max_wait_ms = 500');
$o->start;
$o->query('CREATE EXTENSION snowflake');
$o->query($gen);
$o->node->backup('early');

# Each node's first ID returns only once the file records the node: read at once, no polling.
$o->next_id('the first ID of 1/1');
is($o->nodes_file->{used}, '1/1', 'when it returns, snowflake.nodes records 1/1');
$o->ids('SELECT gen()', 'the first ID of 1/2 (gen())', count => 1);
is($o->nodes_file->{used}, '1/1,1/2', 'when it returns, snowflake.nodes records 1/2');
for my $m (3 .. 6)
{
	$o->next_id("the first ID of 1/$m", "SET snowflake.machine_id = $m;");
	like($o->nodes_file->{used}, qr{(^|,)1/$m(,|$)}, "when it returns, snowflake.nodes records 1/$m");
}

# Round 10 (5): the writer stopped (SIGSTOP) when a node issues its first ID: refused, nothing issued,
# nothing recorded; once the writer goes on, the node issues and is recorded.
my $writer = $o->writer_pid;
kill('STOP', $writer) or die "kill STOP: $!";
my $r = $o->next_refused('the first ID of 1/9 while the writer is stopped', 'SET snowflake.machine_id = 9;',
	message => qr/^snowflake_next\(\) refused: "snowflake\.nodes" did not record datacenter 1, machine 9 within snowflake\.max_wait_ms \(500 ms\)$/);
like($r->{detail}, qr/the reservation writer has not written it yet/, 'the detail says the writer has not written it');
unlike($o->nodes_file->{used}, qr{1/9}, 'snowflake.nodes does not record 1/9');
kill('CONT', $writer) or die "kill CONT: $!";
$o->next_id('the first ID of 1/9 once the writer goes on', 'SET snowflake.machine_id = 9;');
like($o->nodes_file->{used}, qr{(^|,)1/9$}, 'and snowflake.nodes records 1/9');

# No writer running (it exited; the postmaster, stopped here, cannot restart it yet): the refusal says so.
# The call runs in a session opened before, which needs no postmaster.
my $bg = $o->background;
$bg->query_safe('SET snowflake.max_wait_ms = 200; SET snowflake.machine_id = 8');
my ($pm, $exited) = $o->stop_writer_and_postmaster;
ok($exited, 'the writer exited (not reaped while the postmaster is stopped)');
my $none = $bg->query("SELECT snowflake_next()");
kill('CONT', $pm) or die "kill CONT postmaster: $!";
like($bg->{stderr}, qr/did not record datacenter 1, machine 8 within snowflake\.max_wait_ms \(200 ms\).*\n(.*\n)*?DETAIL:.*no reservation writer is running to write it/,
	'refused: the detail says no reservation writer is running');
is($none, q{}, 'no ID was returned');
$bg->quit;
$o->writer_pid;
$o->next_id('the first ID of 1/8 once the writer is back', 'SET snowflake.machine_id = 8; SET snowflake.max_wait_ms = 30000;');
like($o->nodes_file->{used}, qr{(^|,)1/8(,|$)}, 'and snowflake.nodes records 1/8');

# Round 10 (4): the server crashes right after a node's first ID: the node is recorded.
for my $m (10 .. 12)
{
	$o->next_id("the first ID of 1/$m, then a crash", "SET snowflake.machine_id = $m;");
	$o->kill9;
	$o->start;
	like($o->nodes_file->{used}, qr{(^|,)1/$m(,|$)}, "after the crash snowflake.nodes records 1/$m");
}

# Round 10 (6): a write that fails (a directory planted at snowflake.nodes.tmp; strace counts the writer's
# attempts): the first ID of a new node is refused with the failure; nodes already recorded issue IDs; one
# WARNING for the episode; callers never make the writer try again before its scheduled retry (it backs off),
# so twenty calls in a row make a few attempts (and NODES records), not twenty.
$writer = $o->writer_pid;
my $at = -s $o->node->logfile;
my $trace = $o->node->basedir . '/strace.log';
mkdir($o->data_dir . '/snowflake.nodes.tmp') or die "mkdir: $!";
my $h = strace_start($trace, '-e', 'trace=unlink,unlinkat', '-p', $writer);
$r = $o->next_refused('the first ID of 1/13 while the file cannot be written', 'SET snowflake.machine_id = 13;',
	sqlstate => '42809', message => qr/^could not create snowflake node file "snowflake\.nodes\.tmp": Is a directory$/);
like($r->{detail}, qr/issues no ID under datacenter 1, machine 13 before "snowflake\.nodes" records that this server uses it/,
	'the detail says the node waits for its record');
$o->ids('SELECT snowflake_next() FROM generate_series(1, 10)', '1/1, recorded, issues while the file cannot be written',
	count => 10);
for my $i (1 .. 20)
{
	my $x = $o->run("SET snowflake.machine_id = 13;\nSELECT snowflake_next();");
	die "call $i issued an ID as 1/13 while the file cannot be written" if $x->{ret} == 0;
}
unlike($o->nodes_file->{used}, qr{1/13}, 'after twenty more refused calls snowflake.nodes does not record 1/13');
strace_stop($h);
rmdir($o->data_dir . '/snowflake.nodes.tmp') or die "rmdir: $!";
my $attempts = () = slurp_file($trace) =~ /"snowflake\.nodes\.tmp".*= -1 EISDIR/g;
cmp_ok($attempts, q{>=}, 1, "strace saw the writer's failed attempts ($attempts)");
cmp_ok($attempts, "<", 12, "twenty-one calls made fewer than twelve write attempts ($attempts: the writer backs off)");
ok($o->node->wait_for_log(qr/snowflake node file "snowflake\.nodes" written again, after \d+ failed attempts/, $at),
	'the writer writes the file again at its next scheduled attempt, and logs it');
$o->next_id('the first ID of 1/13 once the file can be written', 'SET snowflake.machine_id = 13;');
like($o->nodes_file->{used}, qr{(^|,)1/13$}, 'and snowflake.nodes records 1/13');
my $warnings = () = substr(slurp_file($o->node->logfile), $at) =~ /WARNING:  could not create snowflake node file/g;
is($warnings, 1, 'one WARNING for the episode');

# WAL: a standby (from a backup taken before most nodes were used) replays the sets into its own file.
my $s = SnowflakeTest->new('standby', from_backup => [ $o, 'early' ], id_key => 'original');
$s->start;
$o->next_id('the first ID of 1/14', 'SET snowflake.machine_id = 14;');
$o->node->wait_for_catchup($s->node);
is($s->nodes_file->{used}, $o->nodes_file->{used}, "the standby's snowflake.nodes holds the primary's used nodes (replayed)");

# Round 10 (1): a copy taken from the standby, adopted by hand as a new server (1/20), retires them all.
$s->node->backup('from_standby');
my $c = SnowflakeTest->new('copy_of_standby', from_backup => [ $s, 'from_standby' ], standby => 0, id_key => 'original',
	conf => 'snowflake.machine_id = 20');
# The standby's base backup carries its standby.signal: started as a server of its own, it goes without.
unlink($c->data_dir . '/standby.signal');
$c->start;
ok($c->node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'), 'the copy of the standby runs as a primary');
is($c->query('SELECT snowflake_adopt_state()'), 't', 'the copy of the standby adopted by hand as a new server (1/20)');
is($c->nodes_file->{retired}, '1/1,1/2,1/3,1/4,1/5,1/6,1/8,1/9,1/10,1/11,1/12,1/13,1/14',
	"it retired every node the primary used");
$c->refused('SELECT gen()', 'the copy of the standby: gen() (1/2)', message => $retired);
$c->next_refused('the copy of the standby: 1/14', 'SET snowflake.machine_id = 14;', message => $retired);
$c->next_id('the copy of the standby issues as 1/20');
$c->stop;

# Round 11, F1: a base backup taken while the writer's write of snowflake.nodes for a new node stalls (each
# rename of the writer held 5 s by strace), and a standby built from it that streams on.  The file is written
# before its NODES record is logged, so the record lies after the backup's checkpoint and the standby replays
# it: the standby, and a copy taken from it later, know the node.  (With the record first, the backup held the
# old file, the record lay before its checkpoint, and the standby never learned it: 286,871 duplicates.)
$writer = $o->writer_pid;
$h = strace_start($o->node->basedir . '/strace-stall.log', '-e', 'trace=rename,renameat,renameat2',
	'-e', 'inject=rename,renameat,renameat2:delay_enter=5000000', '-p', $writer);
my ($out, $err) = ('', '');
my $call = IPC::Run::start(
	[ 'psql', '-X', '-A', '-t', '-d', $o->node->connstr('postgres'), '-c', 'SET snowflake.machine_id = 16',
		'-c', 'SET snowflake.max_wait_ms = 60000', '-c', 'SELECT snowflake_next()' ],
	'<', \undef, '>', \$out, '2>', \$err);
ok($o->node->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_ls_dir('.') f WHERE f = 'snowflake.nodes.tmp'}),
	"the writer is in its stalled write of snowflake.nodes for 1/16 (its temporary file exists)");
$o->node->backup('during_write');
$call->finish;
strace_stop($h);
my ($id16) = $out =~ /^(\d+)$/m;
ok(defined $id16, 'the first ID of 1/16 was issued once the write completed') or diag("output: $out $err");
$o->record('1/16 after the stalled write', $id16) if defined $id16;
my $s2 = SnowflakeTest->new('standby_during_write', from_backup => [ $o, 'during_write' ], id_key => 'original');
$s2->start;
$o->node->wait_for_catchup($s2->node);
like($s2->nodes_file->{used}, qr{(^|,)1/16(,|$)}, "the standby built from that backup records 1/16 (replayed)");
$s2->node->backup('during_write_standby');
my $c3 = SnowflakeTest->new('copy_during_write', from_backup => [ $s2, 'during_write_standby' ], standby => 0,
	id_key => 'original', conf => "snowflake.machine_id = 22\nsnowflake.max_wait_ms = 30000");
unlink($c3->data_dir . '/standby.signal');
$c3->start;
ok($c3->node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'), 'its copy runs as a primary');
is($c3->query('SELECT snowflake_adopt_state()'), 't', 'the copy adopted by hand as a new server (1/22)');
like($c3->nodes_file->{retired}, qr{(^|,)1/16(,|$)}, 'it retired 1/16');
$c3->next_refused('the copy: 1/16', 'SET snowflake.machine_id = 16;', message => $retired);
$c3->stop;
$s2->stop;

# Round 11, F2: a standby whose snowflake.nodes cannot be written (a directory planted at its temporary file)
# crashes and starts again: the NODES records it replays again are ones its file holds, so nothing is written
# and recovery goes on (it stayed down).  A record the file does not hold stops recovery, naming the file, and
# replay resumes there once the file can be written.
$o->node->wait_for_catchup($s->node);
mkdir($s->data_dir . '/snowflake.nodes.tmp') or die "mkdir: $!";
$s->kill9;
$s->start;
is($s->query('SELECT pg_is_in_recovery()'), 't', 'the standby started again and replays, its file unwritable');
$at = -s $s->node->logfile;
$o->next_id('the first ID of 1/17', 'SET snowflake.machine_id = 17;');
ok($s->node->wait_for_log(qr/could not create snowflake node file "snowflake\.nodes\.tmp": Is a directory/, $at),
	'the standby cannot record 1/17: the error names the file');
ok($s->node->wait_for_log(qr/recovery stops here/, $at), 'and says recovery stops there');
for (1 .. 600) { last unless -e $s->data_dir . '/postmaster.pid'; usleep(100_000); }
ok(!-e $s->data_dir . '/postmaster.pid', 'the standby stopped');
$s->node->_update_pid(0);
rmdir($s->data_dir . '/snowflake.nodes.tmp') or die "rmdir: $!";
$s->start;
$o->node->wait_for_catchup($s->node);
like($s->nodes_file->{used}, qr{(^|,)1/17(,|$)}, 'started again with the file writable, the standby records 1/17');

# Round 10 (2): a standby D of a copy C, built before C was adopted as a new server; C's adoption and its
# first use of 1/21 reach D in WAL; D promoted with failover_adopt refuses what C retired.
$o->node->backup('ob');
my $c2 = SnowflakeTest->new('copy2', from_backup => [ $o, 'ob' ], standby => 0, id_key => 'original',
	conf => "snowflake.machine_id = 21\nsnowflake.failover_adopt = on\nsnowflake.max_wait_ms = 30000");
$c2->start;
$c2->node->backup('c2b');
my $d = SnowflakeTest->new('copy2_standby', from_backup => [ $c2, 'c2b' ], id_key => 'original',
	conf => 'snowflake.max_wait_ms = 30000');
$d->start;
is($c2->query('SELECT snowflake_adopt_state()'), 't', 'C adopted by hand as a new server (1/21)');
$c2->next_id('C issues as 1/21');
$c2->node->wait_for_catchup($d->node);
is($d->nodes_file->{retired}, $c2->nodes_file->{retired}, "C's standby replayed the retired nodes");
is($d->nodes_file->{used}, '1/21', "and C's used node");
$d->wait_witness;
$c2->stop;
$d->promote;
$d->next_id('D, promoted (failover_adopt), issues as 1/21');
$d->refused('SELECT gen()', 'D: gen() (1/2, retired by C)', message => $retired);
$d->next_refused('D: 1/1', 'SET snowflake.machine_id = 1;', message => $retired);
$d->stop;

# Crash recovery replays NODES records: the file is removed while the server is down after a crash (the
# records since the last checkpoint rebuild it).
$o->query('CHECKPOINT');
$o->next_id('the first ID of 1/15', 'SET snowflake.machine_id = 15;');
my $used = $o->nodes_file->{used};
$o->kill9;
unlink($o->data_dir . '/snowflake.nodes') or die "unlink: $!";
$o->start;
is($o->nodes_file->{used}, $used, 'crash recovery wrote the last NODES record into a new snowflake.nodes');
# (The slow writes under strace widened the writer's margin: the mark after the crash lies seconds ahead.)
$o->next_id('the original issues as 1/1 after the crash', 'SET snowflake.max_wait_ms = 60000;');

# The standby was built from a backup of the script's first seconds: it streamed all the WAL since
# because the primary keeps it (SnowflakeTest sets wal_keep_size).  Without that the primary removed a
# segment the standby still needed, and the standby stopped catching up (timed out on 17 in CI).
unlike(slurp_file($s->node->logfile), qr/requested WAL segment \S+ has already been removed/,
	'the standby never asked for WAL the primary had removed');
$s->stop;
$o->stop;
SnowflakeTest::summary();
done_testing();
