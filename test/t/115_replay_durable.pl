# 115_replay_durable.pl: a standby publishes only a replayed mark its own
# state file holds.
#
# The standby cannot write its state file (snowflake.state.tmp is a
# directory) while it replays the marks of a primary whose clock runs an hour
# ahead.  Replay must stop at the first such mark, as it does when PostgreSQL
# cannot write its own files: if it went on, a restartpoint past the record and
# a restart would forget the mark, and once promoted, with its clock an hour
# behind, the standby would issue IDs below the old primary's.  Once the file
# can be written, a restart replays the record again, and the promoted standby
# refuses until its clock passes the old primary's IDs.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

use Time::HiRes qw(usleep);

# The clocks step 1 h forward on purpose: the forward-jump check is off (130_boundaries.pl).
my $p = SnowflakeTest->new('primary', allows_streaming => 1, conf => 'snowflake.max_clock_jump_ms = 0');
$p->start;
$p->query('CREATE EXTENSION snowflake; CREATE TABLE t (id bigint PRIMARY KEY)');
$p->query('INSERT INTO t SELECT snowflake_next() FROM generate_series(1, 1000)');
$p->node->backup('b');

my $s = SnowflakeTest->new('standby', from_backup => [ $p, 'b' ], id_key => 'primary',
	conf => 'snowflake.failover_adopt = on');
$s->start;
$p->node->wait_for_catchup($s->node, 'replay');

my $tmpdir = $s->data_dir . '/snowflake.state.tmp';
mkdir $tmpdir or die "could not create $tmpdir: $!";

# The primary's clock an hour ahead: the marks it logs are an hour beyond the
# standby's state file.
$p->set_clock('+1h');
$p->query(q{
INSERT INTO t SELECT snowflake_next() FROM generate_series(1, 20000);
CHECKPOINT;
INSERT INTO t SELECT snowflake_next() FROM generate_series(1, 1000);
});
my $max = $p->query('SELECT max(id) FROM t');
my $lsn = $p->node->lsn('insert');

# Either replay stops (the standby shuts down), or it goes on past the marks.
my $pidfile = $s->data_dir . '/postmaster.pid';
my $stopped = 0;
for (1 .. 600)
{
	if (!-f $pidfile)
	{
		$stopped = 1;
		last;
	}
	my ($ret, $done) = $s->node->psql('postgres',
		"SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn");
	last if $ret == 0 && $done eq 't';
	usleep(100_000);
}
ok($stopped, 'a standby that cannot write a replayed mark to its state file stops replay');
my $log = slurp_file($s->node->logfile);
like($log, qr/could not create snowflake state file "snowflake\.state\.tmp": Is a directory/,
	'the log says which write failed');
like($log, qr/While replaying a durable mark logged by the primary: recovery stops here/,
	'the log says why replay stopped and what to do');

if (!$stopped)
{
	# The old behaviour: replay went on.  A restartpoint past the records,
	# then a restart, and the standby has only its state file.
	$s->query('CHECKPOINT');
	$s->stop;
}
else
{
	$s->node->_update_pid(-1);
}

# The disk repaired: a restart replays the marks again and keeps them.
rmdir $tmpdir or die "could not remove $tmpdir: $!";
my $restart_at = -s $s->node->logfile;
$s->start;
$p->node->wait_for_catchup($s->node, 'replay');
is($s->query('SELECT max(id) FROM t'), $max, 'the restarted standby has every committed ID');
my $reserved = $s->query(
	'SELECT floor(extract(epoch FROM reserved_until) * 1000)::bigint FROM snowflake_state()');
cmp_ok($reserved, '>=', id_unix_ms($max), 'the standby\'s durable mark covers every ID the primary issued');

# The primary dies once the restarted standby has fresh evidence of it: an owner
# record streamed since its restart (the idle primary logs one when a standby
# reconnects), which failover_adopt needs from this run; the standby, its clock
# an hour behind, is promoted.
ok($s->node->wait_for_log(qr/snowflake replayed a record of the owner of the node state \(.*\) streamed from /, $restart_at),
	'the restarted standby replays an owner record the idle primary logged for its reconnection');
$s->wait_witness;
$p->kill9;
$s->promote;
$s->next_refused('promoted standby, clock an hour behind the old primary',
	'SET snowflake.max_wait_ms = 500;', message => qr/clock is behind the IDs already issued/);
$s->set_clock('+1h');
my @ids = $s->ids('SELECT snowflake_next() FROM generate_series(1, 100)',
	'promoted standby, clock caught up', count => 100);
cmp_ok($ids[0], '>', $max, 'the first ID after promotion is above every ID the old primary issued');

$s->stop;
$p->summary;
done_testing();
