# 499_import_unwritable.pl: an own state file that cannot be written while
# the import (snowflake.state.import) is applied is a write failure, not a
# damaged file (attack on issue 19, round 2, F5).  Before the fix the server
# said "damaged" (XX001), with a hint to remove the file, and stayed so until a
# restart.  Now generation fails with the write error (42501 here) without
# ever going below the imported mark, the writer retries as for any failed
# write, and once the file is writable the import is recorded and generation
# resumes by itself.  The failure: every rename of snowflake.state.tmp by the
# server fails with EPERM (as with chattr +i), strace -f from pg_ctl on.
#
# The same start-up imports snowflake.nodes.import (a copy of the old cluster
# adopted as a new server retired its node, 1/1) while snowflake.nodes cannot
# be written either: the imported retirement holds in memory at once (1/1 is
# refused, not issued), the import file stays, and once the file is writable
# the writer records the sets and the import is renamed.  The new cluster
# issued before the import, so the import's used node is retired here too.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use File::Copy;
use IPC::Run;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $conf = 'snowflake.max_clock_jump_ms = 0';

# The old cluster issued IDs an hour ahead of the clock.
my $old = SnowflakeTest->new('old', allows_streaming => 1, conf => $conf);
$old->start;
$old->query('CREATE EXTENSION snowflake');
$old->set_clock('+1h');
my @old_ids = $old->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'old cluster, clock an hour ahead', count => 1000);
$old->node->backup('ob');
$old->stop;
my $old_max_ms = SnowflakeTest::id_unix_ms($old_ids[-1]);

# A copy of the old cluster adopted as a new server (1/3): its snowflake.nodes
# retires 1/1.
my $c = SnowflakeTest->new('copy', from_backup => [ $old, 'ob' ], standby => 0, id_key => 'old',
	conf => "$conf\nsnowflake.machine_id = 3");
$c->start;
$c->set_clock('+1h');
is($c->query('SELECT snowflake_adopt_state()'), 't', 'the copy adopted as a new server (1/3)');
$c->next_id('the copy issues as 1/3');
$c->stop;
is($c->nodes_file->{retired}, '1/1', "the copy's snowflake.nodes retires 1/1");

# The new cluster issues as 1/2; its own snowflake.nodes records 1/2.
my $t = SnowflakeTest->new('new', id_key => 'old', conf => "$conf\nsnowflake.machine_id = 2");
$t->start;
$t->query('CREATE EXTENSION snowflake');
$t->next_id('the new cluster issues as 1/2');
$t->stop;
copy($old->data_dir . '/snowflake.state', $t->data_dir . '/snowflake.state.import') or die "copy: $!";
copy($c->data_dir . '/snowflake.nodes', $t->data_dir . '/snowflake.nodes.import') or die "copy: $!";
$t->set_clock('+1h');    # past the old IDs: only the write stands in the way

# Start under strace: the postmaster's import and every later write fail.
my $dir = PostgreSQL::Test::Utils::tempdir;
my $st;
{
	my %fake = $t->_faketime_env;
	local @ENV{ keys %fake } = values %fake;
	# strace runs pg_ctl: -I 1 lets a signal end it (it then detaches from the
	# server); its output goes to files, not to pipes the server would inherit.
	$st = IPC::Run::start(
		[
			'strace', '-I', '1', '-o', "$dir/eperm.strace", '-f', '-P', 'snowflake.state.tmp', '-P', 'snowflake.nodes.tmp',
			'-e', 'trace=rename,renameat,renameat2',
			'-e', 'inject=rename,renameat,renameat2:error=EPERM',
			'pg_ctl', '-w', '-D', $t->data_dir, '-l', $t->node->logfile, '-o', '--cluster-name=new', 'start'
		],
		'<', '/dev/null', '>', "$dir/strace.out", '2>', "$dir/strace.err");
}
ok($t->node->poll_query_until('postgres', 'SELECT 1', '1'), 'the server started');
$t->node->_update_pid(1);

is($t->query('SELECT state FROM snowflake_state()'), 'ok', 'the state is not "damaged"');
my $r = $t->next_refused('the own file cannot be written', 'SET snowflake.max_wait_ms = 500;', sqlstate => '42501',
	message => qr/could not rename snowflake state file "snowflake\.state\.tmp": Operation not permitted/);
ok(-e $t->data_dir . '/snowflake.state.import', 'the import file stays until its mark is written');
$t->next_refused('1/1, retired by the import that could not be written',
	'SET snowflake.max_wait_ms = 500; SET snowflake.machine_id = 1;',
	message => qr/^snowflake_next\(\) refused: datacenter 1, machine 1 is retired on this server$/);
ok(-e $t->data_dir . '/snowflake.nodes.import', 'snowflake.nodes.import stays until its sets are written');
like(slurp_file($t->node->logfile), qr/could not rename snowflake node file "snowflake\.nodes\.tmp".*\n(.*\n)?.*DETAIL:  The imported node sets hold until the reservation writer next writes the file/,
	'the start-up logged the failed write of the imported node sets');
like(slurp_file($t->node->logfile), qr/could not rename snowflake state file "snowflake\.state\.tmp".*\n(.*\n)?.*DETAIL:.*snowflake\.state\.import/,
	'the start-up logged the failed write of the import');

# Writable again: the writer's next attempt records the mark, generation resumes.
$st->signal('TERM');
$st->finish;
ok($t->node->poll_query_until('postgres', 'SELECT state = \'ok\' AND mark_write_failures > 0 FROM snowflake_state()'),
	'write failures were counted');
my @ids = $t->ids('SET snowflake.max_wait_ms = 30000; SELECT snowflake_next() FROM generate_series(1, 1000)',
	'the file writable again', count => 1000);
cmp_ok(SnowflakeTest::id_unix_ms($ids[0]), '>', $old_max_ms, 'above every ID of the old cluster');
cmp_ok($t->state_file_mark + $SnowflakeTest::EPOCH_UNIX_MS, '>=', $old_max_ms, 'the state file holds the imported mark');
ok($t->node->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_ls_dir('.') f WHERE f = 'snowflake.state.import'"),
	'the import file is renamed once its mark is written');
ok(-e $t->data_dir . '/snowflake.state.imported', 'to snowflake.state.imported');
# A node's first use makes the writer write snowflake.nodes: it carries the
# imported sets held in memory.
$t->next_id('a new node, 1/4, once the file is writable', 'SET snowflake.machine_id = 4; SET snowflake.max_wait_ms = 30000;');
# The new cluster had issued (1/2) before the import: the import's used node (1/3) is retired here,
# not used (round 14, F2).
is($t->nodes_file->{retired}, '1/1,1/3', "snowflake.nodes now records the imported retirement, and the import's used node as retired");
is($t->nodes_file->{used}, '1/2,1/4', "and this cluster's own used nodes");
ok(-e $t->data_dir . '/snowflake.nodes.import', 'the import file stays until a start-up writes its sets');

$t->restart;
ok(!-e $t->data_dir . '/snowflake.nodes.import' && -e $t->data_dir . '/snowflake.nodes.imported',
	'the next start-up writes the sets and renames the import to snowflake.nodes.imported');
$t->next_refused('1/1 after the restart', 'SET snowflake.machine_id = 1;',
	message => qr/^snowflake_next\(\) refused: datacenter 1, machine 1 is retired on this server$/);
$t->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'after a restart', count => 1000);
$t->stop;
$t->summary;
done_testing();
