# 499_import_unwritable.pl: an own state file that cannot be written while
# the import (snowflake.state.import) is applied is a write failure, not a
# damaged file (attack on issue 19, round 2, F5).  Before the fix the server
# said "damaged" (XX001), with a hint to remove the file, and stayed so until a
# restart.  Now generation fails with the write error (42501 here) without
# ever going below the imported mark, the writer retries as for any failed
# write, and once the file is writable the import is recorded and generation
# resumes by itself.  The failure: every rename of snowflake.state.tmp by the
# server fails with EPERM (as with chattr +i), strace -f from pg_ctl on.

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
my $old = SnowflakeTest->new('old', conf => $conf);
$old->start;
$old->query('CREATE EXTENSION snowflake');
$old->set_clock('+1h');
my @old_ids = $old->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'old cluster, clock an hour ahead', count => 1000);
$old->stop;
my $old_max_ms = SnowflakeTest::id_unix_ms($old_ids[-1]);

my $t = SnowflakeTest->new('new', id_key => 'old', conf => $conf);
$t->start;
$t->query('CREATE EXTENSION snowflake');
$t->stop;
copy($old->data_dir . '/snowflake.state', $t->data_dir . '/snowflake.state.import') or die "copy: $!";
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
			'strace', '-I', '1', '-o', "$dir/eperm.strace", '-f', '-P', 'snowflake.state.tmp',
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
like(slurp_file($t->node->logfile), qr/could not rename snowflake state file "snowflake\.state\.tmp".*\n(.*\n)?.*DETAIL:.*snowflake\.state\.import/,
	'the start-up logged the failed write of the import');

# Writable again: the writer's next attempt records the mark, generation resumes.
$st->signal('INT');
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

$t->restart;
$t->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'after a restart', count => 1000);
$t->stop;
$t->summary;
done_testing();
