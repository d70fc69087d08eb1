# 496_restore_in_place.pl: a base backup restored into the SAME (emptied)
# data directory is a copy, whether started at once or after archive
# recovery to a new timeline (PITR in place) (attack on issue 19, round 2,
# F2).  The directory keeps its identity (inode, birth time), so the state
# file alone cannot tell; backup_label can: PostgreSQL finds it only in a
# data directory restored from a base backup (pg_basebackup, a PITR restore;
# pg_rewind writes one too).  Before the fix the restored server took itself
# for the original and issued again IDs the original had issued after the
# backup.  The restored directory was once a promoted standby, so its
# backup carries a standby witness naming this very directory: a PITR in
# place must not let snowflake.failover_adopt adopt through it.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use File::Path qw(remove_tree);
use IPC::Run;
use Time::HiRes qw(usleep);
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;


my $p = SnowflakeTest->new('primary', allows_streaming => 1, clock => 'shim', conf => 'snowflake.max_clock_jump_ms = 0');
$p->start;
$p->query('CREATE EXTENSION snowflake');
$p->query('ALTER SYSTEM SET snowflake.failover_adopt = on');
$p->query('SELECT pg_reload_conf()');
$p->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'primary', count => 1000);
$p->node->backup('pb');

# s: a streaming standby, promoted; it adopts and owns the node state, and its
# data directory holds a witness naming itself.
my $s = SnowflakeTest->new('restored', from_backup => [ $p, 'pb' ], clock => 'shim', id_key => 'primary');
$s->start;
$s->wait_witness;
$p->node->wait_for_catchup($s->node);
$p->stop;
$s->promote('standby promoted');
$s->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'promoted standby adopts', count => 1000);
is($s->query('SELECT state FROM snowflake_state()'), 'ok', 'the promoted standby owns the node state');
my $this = $s->query('SELECT this_directory FROM snowflake_state()');
$s->node->backup('sb');
ok(-e $s->node->backup_dir . '/sb/snowflake.standby', 'the backup carries the witness naming this directory');

# After the backup: IDs 50 s ahead of the clock (a clock step back follows).
$s->set_clock('+50');
$s->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'after the backup, clock 50 s ahead', count => 1000);
$s->set_clock('+0');
$s->stop;

# Restore the backup into the same data directory (emptied, not removed).
sub restore_in_place
{
	my $dir = $s->data_dir;
	my $ino = (stat $dir)[1];
	opendir my $dh, $dir or die;
	for my $e (grep { $_ ne '.' && $_ ne '..' } readdir $dh) { remove_tree("$dir/$e"); }
	closedir $dh;
	system('cp', '-a', $s->node->backup_dir . '/sb/.', $dir) == 0 or die 'cp failed';
	chmod 0700, $dir;
	is((stat $dir)[1], $ino, 'restored into the same directory (same inode)');
	ok(-e "$dir/backup_label", 'the restored directory has backup_label');
	return;
}

sub refuses_as_copy
{
	my ($what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	is($s->query('SELECT this_directory FROM snowflake_state()'), $this, "$what: the same data directory identity");
	is($s->query('SELECT state FROM snowflake_state()'), 'copy', "$what: a copy");
	$s->next_refused($what, undef, sqlstate => '55000',
		message => qr/this data directory is a copy of the one that owns the node state/);
	ok(!-e $s->data_dir . '/snowflake.standby', "$what: the restored standby witness is gone");
	return;
}

# A start under strace that injects EPERM into the given calls on one file
# (as chattr +i or a read-only volume would).  Returns whether the start
# failed (the postmaster exited); a server that started anyway is stopped.
sub start_faulted
{
	my ($file, $calls) = @_;
	my %fake = $s->_faketime_env;
	local @ENV{ keys %fake } = values %fake;
	my $tmp = PostgreSQL::Test::Utils::tempdir;
	# -I 1: a signal ends strace, which then detaches from a server that started.
	my $h = IPC::Run::start(
		[
			'strace', '-I', '1', '-o', "$tmp/strace", '-f', '-P', $file, '-e', "trace=$calls",
			'-e', "inject=$calls:error=EPERM",
			'pg_ctl', '-w', '-t', '60', '-D', $s->data_dir, '-l', $s->node->logfile, '-o', '--cluster-name=restored', 'start'
		],
		'<', '/dev/null', '>', "$tmp/out", '2>', "$tmp/err");
	# The postmaster exits (strace ends with it), or it answers: one of them happens.
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		if (!$h->pumpable)
		{
			$h->finish;
			return 1;
		}
		if (system('pg_isready', '-q', '-h', $s->node->host, '-p', $s->node->port) == 0)
		{
			$h->signal('TERM');
			$h->finish;
			$s->node->_update_pid(1);
			$s->stop;
			return 0;
		}
		usleep(100_000);
	}
	die 'the faulted start neither failed nor answered';
}

# --- A restored base backup whose witness or state file cannot be changed at
# its first start (19c F1/F2): the start fails, loud, and backup_label stays;
# once writable, the next start records the copy.
restore_in_place();
ok(start_faulted('snowflake.standby', 'unlink,unlinkat'), 'the start fails when the restored witness cannot be removed');
like(slurp_file($s->node->logfile),
	qr/FATAL:  could not remove snowflake standby witness "snowflake\.standby" of a restored data directory: Operation not permitted\n(.*\n)*.*HINT:  Make the file and the data directory writable, then start the server again/,
	'FATAL names the witness, the reason, and the remedy');
ok(-e $s->data_dir . '/backup_label', 'backup_label stays after the failed start (witness)');
ok(start_faulted('snowflake.state.tmp', 'rename,renameat,renameat2'), 'the start fails when the state file cannot record the copy');
like(slurp_file($s->node->logfile),
	qr/FATAL:  could not rename snowflake state file "snowflake\.state\.tmp" of a restored data directory: Operation not permitted\n(.*\n)*.*HINT:  Make "snowflake\.state" and the data directory writable, then start the server again/,
	'FATAL names the state file, the reason, and the remedy');
ok(-e $s->data_dir . '/backup_label', 'backup_label stays after the failed start (state file)');
$s->start;
refuses_as_copy('a base backup restored in place, after failed starts');
$s->stop;

# --- A restored base backup started at once.
restore_in_place();
$s->start;
refuses_as_copy('a base backup restored in place');
$s->restart;    # backup_label is gone now: the state file says "copy" by itself
refuses_as_copy('the same after a restart');
$s->stop;

# --- PITR in place: archive recovery ending on a new timeline, failover_adopt = on.
restore_in_place();
open my $fh, '>', $s->data_dir . '/recovery.signal' or die;
close $fh;
$s->node->append_conf('postgresql.conf', "restore_command = 'false'\n");
$s->start;
ok($s->node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'), 'archive recovery ended');
is($s->query("SELECT setting FROM pg_settings WHERE name = 'snowflake.failover_adopt'"), 'on', 'failover_adopt is on');
refuses_as_copy('PITR in place, promoted to a new timeline');

# The operator's adoption, once the clock is past the original's IDs.
$s->set_clock('+60');
$s->query('SELECT snowflake_adopt_state()');
is($s->query('SELECT state FROM snowflake_state()'), 'ok', 'snowflake_adopt_state() adopts the restored directory');
$s->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'after adoption, clock past the original IDs', count => 1000);
$s->stop;
$p->summary;
done_testing();
