
# Copyright (c) 2026, snowflake contributors
#
# 427_nodes_tmp_finish.pl: a start with no snowflake.nodes but a complete
# snowflake.nodes.tmp finishes the write (renames it into place), as 426 does
# for the state file.  Before, the start took the node sets as empty: on a copy
# adopted as a new server that forgot the original's nodes it had retired, and
# the copy issued the original's node again (duplicates).  The steps, as round
# 30's on the state file: a directory takes the place of snowflake.nodes, a
# write of the file fails on its rename and leaves the temporary file, the
# server stops, the directory is moved away (as the 42809 hint says), and the
# server starts.  A temporary file that cannot be read is never removed and
# stops generation; one cut short is not taken.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use Cwd ();
use File::Copy;
use IPC::Run;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $retired = qr/^snowflake_next\(\) refused: datacenter 1, machine 1 is retired on this server$/;

my ($p, $c) = SnowflakeTest::original_and_copy(conf => 'fsync = on');
is($c->query('SELECT state FROM snowflake_state()'), 'copy', 'the base backup is a copy');
$c->query('SELECT snowflake_adopt_state()');
is($c->nodes_file->{retired}, '1/1', "the adopted copy retires the original's node 1/1");
$c->next_refused('1/1 on the adopted copy', 'SET snowflake.datacenter_id = 1;', message => $retired);

my $nodes = $c->data_dir . '/snowflake.nodes';
my $tmp = $c->data_dir . '/snowflake.nodes.tmp';

# A directory in the way: the first use of 9/2 makes the writer write the file,
# and the rename fails.  The call is refused (the node is not recorded).
unlink $nodes or die "could not remove $nodes: $!";
mkdir $nodes or die "could not create $nodes: $!";
my $r = $c->next_refused('the first ID of 9/2 with a directory at snowflake.nodes', 'SET snowflake.machine_id = 2;',
	sqlstate => '42809', message => qr/could not rename snowflake node file "snowflake\.nodes\.tmp": Is a directory/);
like($r->{hint}, qr/If "snowflake\.nodes" itself is gone, the node sets are in this server's memory only until the file is written again/,
	'the hint says the node sets (not the mark) are in memory only');
ok(-f $tmp, 'the failed write left its temporary file');
my $log_offset = -s $c->node->logfile;
$c->stop('fast');
like(substr(slurp_file($c->node->logfile), $log_offset),
	qr/WARNING:  could not rename snowflake node file "snowflake\.nodes\.tmp": Is a directory\n(.*\n)?.*DETAIL:  At shutdown: "snowflake\.nodes" is not there \(removed, or something in its place\), and the complete "snowflake\.nodes\.tmp" left holds the node sets: the next start renames it into place\. Do not remove it\./,
	"the stop's write (9/2 pending) met the directory: a WARNING says the temporary file holds the sets");
rmdir $nodes or die "could not remove the directory $nodes: $!";

$log_offset = -s $c->node->logfile;
$c->start;
like(substr(slurp_file($c->node->logfile), $log_offset),
	qr/snowflake node file "snowflake\.nodes" was missing: its complete temporary file "snowflake\.nodes\.tmp" was renamed into place/,
	'the start finished the write');
is($c->nodes_file->{retired}, '1/1', 'snowflake.nodes holds the retired node again');
$c->next_refused("1/1, the original's node, after the start", 'SET snowflake.datacenter_id = 1;', message => $retired);
$c->next_id('9/2 once the file is in place', 'SET snowflake.machine_id = 2;');
like($c->nodes_file->{used}, qr{(^|,)9/2(,|$)}, 'and it records 9/2');

# A temporary file the start cannot read may hold the sets: never removed,
# generation stops until it can be read.
unlink $nodes or die "could not remove $nodes: $!";
mkdir $nodes or die "could not create $nodes: $!";
$c->next_refused('the first ID of 9/3 with a directory at snowflake.nodes', 'SET snowflake.machine_id = 3;',
	sqlstate => '42809');
$c->stop('fast');
rmdir $nodes or die "could not remove the directory $nodes: $!";
chmod 0, $tmp or die "could not chmod $tmp: $!";
$c->start;
$r = $c->next_refused('9/1 while the temporary file cannot be read', undef, sqlstate => '58030',
	message => qr/^could not read snowflake node file "snowflake\.nodes"$/);
like($r->{detail}, qr/It does not exist, and its temporary file "snowflake\.nodes\.tmp", which may hold the node sets, could not be read\./,
	'the detail names the temporary file');
$c->next_refused('1/1 too', 'SET snowflake.datacenter_id = 1;', sqlstate => '58030');
ok(-e $tmp, 'the temporary file is not removed');
ok(!-e $nodes, 'and nothing took its place');
$c->stop;
chmod 0600, $tmp or die "could not chmod $tmp: $!";
$c->start;
is($c->nodes_file->{retired}, '1/1', 'once it can be read, the next start takes it');
$c->next_refused('1/1 then', 'SET snowflake.datacenter_id = 1;', message => $retired);
$c->next_id('9/3 then', 'SET snowflake.machine_id = 3;');
my $dir = PostgreSQL::Test::Utils::tempdir;
copy($nodes, "$dir/nodes.saved") or die "copy: $!";

# A directory at both names: the stop's write leaves no temporary file, and
# its WARNING says the sets are lost (it said only that the nodes used since
# the last write are not recorded).
unlink $nodes or die "could not remove $nodes: $!";
mkdir $nodes or die "could not create $nodes: $!";
mkdir $tmp or die "could not create $tmp: $!";
$c->next_refused('the first ID of 9/4 with directories at both names', 'SET snowflake.machine_id = 4;', sqlstate => '42809');
$log_offset = -s $c->node->logfile;
$c->stop('fast');
like(substr(slurp_file($c->node->logfile), $log_offset),
	qr/DETAIL:  At shutdown: "snowflake\.nodes" is not there \(removed, or something in its place\), and no complete temporary file was left: the node sets are lost, the nodes retired here among them; put back this data directory's own file before the next start\./,
	'a stop with directories at both names warns that the node sets are lost');
like(substr(slurp_file($c->node->logfile), $log_offset),
	qr/HINT:  Something that is not a regular file \(a directory\?\) is in the way at "snowflake\.nodes\.tmp" or "snowflake\.nodes" in the data directory: move it away before the next start\./,
	"the stop's hint does not speak of a running server (round 34: \"do not stop the server before that\")");
rmdir $tmp or die;
rmdir $nodes or die;
# Put back the data directory's own file, as the WARNING says (kept from above).
copy("$dir/nodes.saved", $nodes) or die "copy: $!";
$c->start;
$c->next_refused('1/1 with the own file put back', 'SET snowflake.datacenter_id = 1;', message => $retired);

# Round 33, F2: the start's rename succeeds, the fsync after it fails (EIO on
# the renamed file): the detail said the rename failed, and sent the operator
# looking for a temporary file that was gone.  It fails closed all the same,
# and the next start reads the file.
$c->stop;
rename($nodes, $tmp) or die "rename: $!";
my $st;
{
	my %fake = $c->_faketime_env;
	local @ENV{ keys %fake } = values %fake;
	$st = IPC::Run::start(
		[
			'strace', '-I', '1', '-o', "$dir/fsync.strace", '-f', '-P', 'snowflake.nodes', '-P', Cwd::realpath($c->data_dir) . '/snowflake.nodes',
			'-e', 'trace=fsync,fdatasync', '-e', 'inject=fsync,fdatasync:error=EIO',
			'pg_ctl', '-w', '-D', $c->data_dir, '-l', $c->node->logfile, 'start'
		],
		'<', '/dev/null', '>', "$dir/strace.out", '2>', "$dir/strace.err");
}
ok($c->node->poll_query_until('postgres', 'SELECT 1', '1'), 'the server started with the fsync failing');
$c->node->_update_pid(1);
$r = $c->next_refused('9/1 after the failed sync', undef, sqlstate => '58030',
	message => qr/^could not read snowflake node file "snowflake\.nodes"$/);
like($r->{detail}, qr/It did not exist; its complete temporary file "snowflake\.nodes\.tmp" was renamed into place, but could not be synced to disk: Input\/output error\. The next start reads it\./,
	'the detail says the rename was done and the sync failed');
ok(-f $nodes && !-e $tmp, 'the file is in place, the temporary file gone');
$st->signal('TERM');
$st->finish;
$c->restart;
$c->next_refused('1/1 after a restart', 'SET snowflake.datacenter_id = 1;', message => $retired);

# Round 33, F1: a FIFO or a dangling symbolic link at the temporary file, or
# nothing, with snowflake.nodes missing, emptied the sets without a word.
for my $case ([ 'a FIFO', sub { system('mkfifo', $tmp) == 0 or die "mkfifo: $?" } ],
	[ 'a dangling symbolic link', sub { symlink('/nonexistent/snowflake.nodes.tmp', $tmp) or die "symlink: $!" } ])
{
	my ($what, $make) = @$case;
	$c->stop;
	unlink $nodes or die "could not remove $nodes: $!";
	$make->();
	$log_offset = -s $c->node->logfile;
	$c->start;
	my $log = substr(slurp_file($c->node->logfile), $log_offset);
	like($log, qr/snowflake temporary node file "snowflake\.nodes\.tmp" is not taken: it is not a regular file/,
		"$what at the temporary file: not taken, and the log says so");
	like($log, qr/WARNING:  snowflake node file "snowflake\.nodes" is not there: no node is recorded as used or as retired in this data directory\n(.*\n)?.*DETAIL:  It was removed \(or this data directory was last run by a version of snowflake before the file\)\. If this data directory issued IDs, or was adopted as a new server/,
		"$what: the log says no node is recorded, and what that means");
	$c->stop;
	unlink $tmp;    # the writer may have replaced it already (it writes a missing file again)
	copy("$dir/nodes.saved", $nodes) or die "copy: $!";
	$c->start;
}
$c->next_refused('1/1 with the own file put back again', 'SET snowflake.datacenter_id = 1;', message => $retired);
unlike(slurp_file($p->node->logfile), qr/snowflake node file "snowflake\.nodes" is not there/,
	'the start that created the state file does not log a missing node file');

# A temporary file cut short (a write that never reached its fsync) holds
# nothing that was published: not taken, and the log says so.
$c->stop;
unlink $nodes or die "could not remove $nodes: $!";
open my $fh, '>:raw', $tmp or die "could not write $tmp: $!";
print $fh "short";
close $fh;
$log_offset = -s $c->node->logfile;
$c->start;
like(substr(slurp_file($c->node->logfile), $log_offset), qr/snowflake temporary node file "snowflake\.nodes\.tmp" is not taken: /,
	'a temporary file cut short is not taken, and the log says so');
like(substr(slurp_file($c->node->logfile), $log_offset), qr/snowflake node file "snowflake\.nodes" is not there/,
	'and that no node is recorded');

# Round 34, F4: a sparse 1 GB temporary file was "281 bytes long".  (The file
# missing at the last start is not written again: round 36.)
$c->stop;
ok(!-e $nodes, 'a node file missing at start stays missing (no empty file over the evidence)');
open my $sh, '>', $tmp or die "could not create $tmp: $!";
close $sh;
truncate($tmp, 1 << 30) or die "truncate: $!";
$log_offset = -s $c->node->logfile;
$c->start;
like(substr(slurp_file($c->node->logfile), $log_offset),
	qr/snowflake temporary node file "snowflake\.nodes\.tmp" is not taken: It is more than 280 bytes long, expected 280\./,
	'a temporary file far too long is "more than 280 bytes long"');

$c->stop;
$p->stop;
$c->summary;
done_testing();
