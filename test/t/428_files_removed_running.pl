
# Copyright (c) 2026, snowflake contributors
#
# 428_files_removed_running.pl: snowflake.state or snowflake.nodes removed
# under a running server (round 34 of the outside attack).
#
# F1: on an adopted copy, snowflake.nodes removed while the server ran and no
# node was new: nothing wrote the file again, neither the writer nor the clean
# stop (which wrote it only for new nodes), the stop said nothing, and the
# next start took the sets as empty: the copy issued the original's retired
# node again (195,904 duplicates).  Now the writer writes a missing file again
# from memory, and a clean stop writes a file that is not there (with the
# WARNING of 426/427 when it cannot).  The same for snowflake.state when
# nothing was issued since the start.
#
# F2: a start with no state file whose creation failed (a directory at the
# temporary file's name) called the file "damaged" (XX001) with the remedy to
# remove it, and did not recover once the directory was moved away.  Now it is
# the write's failure (42809 here), and the writer retries by itself.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use File::Copy;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $retired = qr/^snowflake_next\(\) refused: datacenter 1, machine 1 is retired on this server$/;

my ($p, $c) = SnowflakeTest::original_and_copy();
$c->query('SELECT snowflake_adopt_state()');
my @before = $c->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'the adopted copy, 9/1', count => 1000);
is($c->nodes_file->{retired}, '1/1', "the adopted copy retires the original's node 1/1");

my $nodes = $c->data_dir . '/snowflake.nodes';
my $state = $c->data_dir . '/snowflake.state';
my $ntmp = $c->data_dir . '/snowflake.nodes.tmp';
my $stmp = $c->data_dir . '/snowflake.state.tmp';

sub wait_file
{
	my ($path) = @_;
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		return 1 if -f $path;
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

# The writer writes a removed snowflake.nodes again, with the retired node.
my $log_offset = -s $c->node->logfile;
unlink $nodes or die "could not remove $nodes: $!";
ok(wait_file($nodes), 'snowflake.nodes removed under the running server is written again');
is($c->nodes_file->{retired}, '1/1', 'with the retired node');
ok($c->node->wait_for_log(qr/snowflake node file "snowflake\.nodes" was missing: written again from this server's memory/, $log_offset),
	'and the log says so');

# Round 35, F6: the rewrite fails (no space): its WARNING says the file is
# missing and the sets are in memory only; once the disk has room, it is written.
my $dir = PostgreSQL::Test::Utils::tempdir;
my $st = SnowflakeTest::strace_start("$dir/enospc.strace", '-f', '-P', 'snowflake.nodes.tmp',
	'-P', $c->data_dir . '/snowflake.nodes.tmp',
	'-e', 'trace=write,pwrite64', '-e', 'inject=write,pwrite64:error=ENOSPC', '-p', $c->writer_pid);
$log_offset = -s $c->node->logfile;
unlink $nodes or die "could not remove $nodes: $!";
ok($c->node->wait_for_log(qr/WARNING:  could not write snowflake node file "snowflake\.nodes\.tmp": No space left on device\n(.*\n)?.*DETAIL:  The file is missing: until it is written again, the node sets are in this server's memory only/,
		$log_offset),
	'a failed rewrite says the file is missing and the sets are in memory only');
SnowflakeTest::strace_stop($st);
ok(wait_file($nodes), 'once the write succeeds, the file is there');
is($c->nodes_file->{retired}, '1/1', 'with the retired node');

# The writer writes a removed snowflake.state again, with the mark.
$log_offset = -s $c->node->logfile;
unlink $state or die "could not remove $state: $!";
ok(wait_file($state), 'snowflake.state removed under the running server is written again');
ok($c->node->wait_for_log(qr/snowflake state file "snowflake\.state" was missing: written again from this server's memory/, $log_offset),
	'and the log says so');
cmp_ok($c->state_file_mark + $SnowflakeTest::EPOCH_UNIX_MS, '>=', SnowflakeTest::id_unix_ms($before[-1]),
	'it holds a mark at or above the last ID issued');

# Both removed and the server stopped at once: whoever writes them (the writer
# or the clean stop), the next start has both, and 1/1 stays retired; no ID
# was issued since this start, so the stop wrote them only because they were
# missing.
$c->restart;
unlink $nodes or die "could not remove $nodes: $!";
unlink $state or die "could not remove $state: $!";
$c->stop('fast');
ok(-f $nodes && -f $state, 'after a clean stop with nothing issued since the start, both files are there');
$c->set_clock('-5s');    # a start from the clock would go below the last ID
$c->start;
$c->next_refused('1/1 after the start', 'SET snowflake.datacenter_id = 1;', message => $retired);
my @after = $c->ids('SET snowflake.max_wait_ms = 30000; SELECT snowflake_next() FROM generate_series(1, 1000)',
	'9/1 after the start', count => 1000);
cmp_ok($after[0], '>', $before[-1], 'above every ID issued before');
$c->set_clock('+0');

# A directory in place of each, put there while the server runs with nothing
# new to write: the writer cannot heal that, so the clean stop writes both, and
# its WARNINGs say the complete temporary files hold them.
$c->restart;
unlink $nodes or die;
mkdir $nodes or die;
unlink $state or die;
mkdir $state or die;
$log_offset = -s $c->node->logfile;
$c->stop('fast');
my $log = substr(slurp_file($c->node->logfile), $log_offset);
like($log, qr/DETAIL:  At shutdown: "snowflake\.nodes" is not there \(removed, or something in its place\), and the complete "snowflake\.nodes\.tmp" left holds the node sets/,
	'the stop wrote snowflake.nodes though no node was new, and says the temporary file holds the sets');
like($log, qr/DETAIL:  At shutdown: "snowflake\.state" is not there \(removed, or something in its place\), and the complete "snowflake\.state\.tmp" left holds the exact mark/,
	'the stop wrote snowflake.state though nothing was issued since the start, and says the temporary file holds the mark');
rmdir $nodes or die;
rmdir $state or die;
$c->start;
$c->next_refused('1/1 after the directories were moved away', 'SET snowflake.datacenter_id = 1;', message => $retired);
$c->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', '9/1 then', count => 1000);

# F2: no state file, and a directory at the temporary file's name at start.
$c->stop;
unlink $state or die;
unlink $stmp if -e $stmp;
mkdir $stmp or die;
$log_offset = -s $c->node->logfile;
$c->start;
like(substr(slurp_file($c->node->logfile), $log_offset),
	qr/WARNING:  could not create snowflake state file "snowflake\.state\.tmp": Is a directory\n(.*\n)?.*DETAIL:  At start: the state file does not exist and could not be created\. No ID is issued until the reservation writer writes it; it retries by itself\./,
	'the start reports the failed write, not a damaged file');
is($c->query('SELECT state FROM snowflake_state()'), 'ok', 'snowflake_state() is not "damaged"');
$c->next_refused('9/1 while the directory is in the way', undef, sqlstate => '42809',
	message => qr/could not create snowflake state file "snowflake\.state\.tmp": Is a directory/);
rmdir $stmp or die;
ok($c->node->poll_query_until('postgres', "SELECT count(*) = 10 FROM (SELECT snowflake_next() FROM generate_series(1, 10)) s"),
	'once it is moved away, generation resumes by itself');
ok(-f $state, 'and the state file is there');

# Round 35, F1 and F2: the same on a copy waiting for adoption.  Nothing wrote
# its files again (only an owner's writer did); adopted as a new server after
# its snowflake.nodes was removed, the copy issued the original's node
# (145,995 duplicates), and a crash after its snowflake.state was removed made
# it an owner of the original's node (166,330).  A copy's files are written
# again as they were loaded: still a copy, with the original's nodes.
my $k = SnowflakeTest->new('copy2', from_backup => [ $p, 'b' ], standby => 0,
	conf => "snowflake.datacenter_id = 7\nsnowflake.max_wait_ms = 500");
$k->start;
is($k->query('SELECT state FROM snowflake_state()'), 'copy', 'a second base backup is a copy');
my $kn = $k->data_dir . '/snowflake.nodes';
my $ks = $k->data_dir . '/snowflake.state';
my $kused = $k->nodes_file->{used};
$log_offset = -s $k->node->logfile;
unlink $kn or die "could not remove $kn: $!";
unlink $ks or die "could not remove $ks: $!";
ok(wait_file($kn) && wait_file($ks), "the copy's removed files are written again");
ok($k->node->wait_for_log(qr/snowflake state file "snowflake\.state" was missing: written again from this server's memory/, $log_offset),
	'the log says so');
is($k->nodes_file->{used}, $kused, "snowflake.nodes holds the original's used nodes, as loaded");
$k->kill9;
$k->start;
is($k->query('SELECT state FROM snowflake_state()'), 'copy', 'after a crash the copy is still a copy (the file names the original)');
$k->next_refused('1/1 on the copy', 'SET snowflake.datacenter_id = 1;', message => qr/refused/);
# Removed again, and a clean stop at once: the stop writes both.
unlink $kn or die;
unlink $ks or die;
$k->stop('fast');
ok(-f $kn && -f $ks, "a clean stop writes the copy's removed files");
$k->start;
is($k->query('SELECT state FROM snowflake_state()'), 'copy', 'and it is still a copy');

# Round 36, F2: the copy's state file lost at a stop (directories at both
# names): the WARNING says the record that it is a copy is lost with it.
copy($ks, "$dir/copy.state") or die "copy: $!";
unlink $ks or die;
mkdir $ks or die;
mkdir $k->data_dir . '/snowflake.state.tmp' or die;
$log_offset = -s $k->node->logfile;
$k->stop('fast');
like(substr(slurp_file($k->node->logfile), $log_offset),
	qr/the mark is lost, and with it the record that this data directory is a copy: the next start would take it for a new server, the owner of the original's node\. Before the next start, put back this copy's state file, or the original's/,
	"a copy's stop that loses its state file says it would no longer be a copy");
rmdir $ks or die;
rmdir $k->data_dir . '/snowflake.state.tmp' or die;
copy("$dir/copy.state", $ks) or die "copy: $!";    # as the WARNING says

# Round 36, F1: the copy's snowflake.nodes removed while it was stopped.  The
# start's warning is for a copy (put the original's file in place before
# adopting), and nothing writes an empty file over the evidence.
unlink $kn or die;
$log_offset = -s $k->node->logfile;
$k->start;
is($k->query('SELECT state FROM snowflake_state()'), 'copy', 'with its state file put back, still a copy');
like(substr(slurp_file($k->node->logfile), $log_offset),
	qr/DETAIL:  This data directory is a copy waiting for adoption: adopted as a new server without the file of the data directory it was copied from, it would retire none of the nodes that one issued IDs under.*\n(.*\n)?.*HINT:  Stop the server and put the original's "snowflake\.nodes" in its place before snowflake_adopt_state\(\)\./,
	"a copy without its node file: the warning says to put the original's in place before adopting");
sleep(2);
ok(!-e $kn, 'a node file missing at start is not written again as empty');
$k->stop;
ok(!-e $kn, 'not by the stop either');
copy($p->data_dir . '/snowflake.nodes', $kn) or die "copy: $!";    # as the hint says
$k->start;
$k->query('SELECT snowflake_adopt_state()');
$k->next_refused('1/1 once the copy is adopted as a new server', 'SET snowflake.datacenter_id = 1;', message => $retired);
$k->next_id('7/1, its own node');
$k->stop;

# Round 35, F3: a base backup taken in the second before a removed file is
# written again carries none; started, it took itself for a new server and
# issued the original's IDs again (233,786 duplicates).  The backup's files are
# removed here, as if taken in that second: it is a copy, and stays one once
# backup_label is gone, until adopted.
$p->node->backup('b3');
unlink($p->node->backup_dir . "/b3/$_") or die "could not remove $_ from the backup: $!" for ('snowflake.state', 'snowflake.nodes');
my $b = SnowflakeTest->new('bare', from_backup => [ $p, 'b3' ], standby => 0, conf => 'snowflake.datacenter_id = 5');
# The record of the copy cannot be written (a directory in the way): the start
# fails, and backup_label stays, so that the next start records it.
mkdir $b->data_dir . '/snowflake.state.tmp' or die;
ok(!$b->node->start(fail_ok => 1), 'a backup with no state file whose copy record cannot be written does not start');
like(slurp_file($b->node->logfile),
	qr/FATAL:  could not create snowflake state file "snowflake\.state\.tmp" of a restored data directory: Is a directory\n(.*\n)?.*DETAIL:  This data directory was restored from a base backup \(it has "backup_label"\) that carries no state file: it is a copy until snowflake_adopt_state\(\)/,
	'the FATAL says why');
ok(-e $b->data_dir . '/backup_label', 'backup_label stays');
rmdir $b->data_dir . '/snowflake.state.tmp' or die;
$b->start;
like(slurp_file($b->node->logfile),
	qr/WARNING:  snowflake state file "snowflake\.state" created in a data directory restored from a base backup that carries none: this one is a copy/,
	'a base backup with no state file: the start warns that it is a copy');
is($b->query('SELECT state FROM snowflake_state()'), 'copy', 'snowflake_state() says copy');
# Round 37, F1: the backup carried no snowflake.nodes either; an empty one was
# written at once, with no warning, and the copy adopted retired nothing.
ok(!-e $b->data_dir . '/snowflake.nodes', 'no empty snowflake.nodes is written in a backup that carries none');
like(slurp_file($b->node->logfile),
	qr/HINT:  Stop the server and put the original's "snowflake\.nodes" in its place before snowflake_adopt_state\(\)\./,
	"the start warns to put the original's node file in place before adoption");
$b->next_refused('1/1 on it', 'SET snowflake.datacenter_id = 1;', message => qr/refused/);
$b->restart;
ok(!-e $b->data_dir . '/backup_label', 'backup_label is gone after the first start');
is($b->query('SELECT state FROM snowflake_state()'), 'copy', 'and it is still a copy');
$b->stop;
copy($p->data_dir . '/snowflake.nodes', $b->data_dir . '/snowflake.nodes') or die "copy: $!";    # as the hint says
$b->start;
$b->query('SELECT snowflake_adopt_state()');
$b->next_refused("1/1 once adopted with the original's node file", 'SET snowflake.datacenter_id = 1;', message => $retired);
$b->next_id('5/1 once adopted');
$b->stop;

# A server that never used a node, started again: no warning of a missing node
# file (round 34: the LOG line of round 33 came at every start of such a server).
my $f = SnowflakeTest->new('fresh');
$f->start;
ok(-f $f->data_dir . '/snowflake.nodes', 'the first start creates snowflake.nodes');
$f->stop;
unlike(slurp_file($f->node->logfile), qr/snowflake node file "snowflake\.nodes" was missing/,
	'so the writer does not write it as missing');
$log_offset = -s $f->node->logfile;
$f->start;
unlike(substr(slurp_file($f->node->logfile), $log_offset), qr/snowflake node file "snowflake\.nodes" is not there/,
	'a server that never used a node does not warn of a missing node file at its next start');
$f->stop;

$c->stop;
$p->stop;
$c->summary;
done_testing();
