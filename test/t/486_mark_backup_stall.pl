
# Copyright (c) 2026, snowflake contributors
#
# Issue 19, round 12 of the outside attack (26,181 and 69,450 duplicates): the
# reservation writer logged a MARK record, then wrote snowflake.state.  A base
# backup whose checkpoint came between the two (the file's rename stalled)
# copied the old file and never replayed the record; the primary then issued
# IDs up to the new mark, their commits reached a standby built from that
# backup, and the standby, promoted and adopted by hand, issued them again.
# The writer now logs the mark again once the file holds it, before any ID
# beyond the old one: that record lies after the backup's checkpoint.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use Time::HiRes;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

# A 15 s reservation and no forward-jump hold: the clock is stepped past the mark on purpose.
my $o = SnowflakeTest->new('primary', allows_streaming => 1,
	conf => "snowflake.reservation_ms = 15000\nsnowflake.max_clock_jump_ms = 0");
$o->start;
$o->query('CREATE EXTENSION snowflake; CREATE TABLE t (id bigint PRIMARY KEY)');
$o->query('INSERT INTO t SELECT snowflake_next() FROM generate_series(1, 1000)');

# The writer's renames held 5 s, and once it has written the higher mark, the wake-up it sends (kill) held
# 30 s after it is sent, so that it logs no later mark meanwhile (as in the attack).  The clock steps 60 s,
# past the mark: the load needs a higher one; a base backup is taken while that write stalls.
my $writer = $o->writer_pid;
my $h = strace_start($o->node->basedir . '/strace.log', '-e', 'trace=rename,renameat,renameat2,kill',
	'-e', 'inject=rename,renameat,renameat2:delay_enter=5000000', '-e', 'inject=kill:delay_exit=30000000',
	'-p', $writer);
$o->set_clock('+60');
my ($out, $err) = ('', '');
my $load = IPC::Run::start(
	[ 'psql', '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', $o->node->connstr('postgres'),
		'-c', 'SET snowflake.max_wait_ms = 60000',
		'-c', 'INSERT INTO t SELECT snowflake_next() FROM generate_series(1, 100000)' ],
	'<', \undef, '>', \$out, '2>', \$err);
ok($o->node->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_ls_dir('.') f WHERE f = 'snowflake.state.tmp'}),
	'the writer is in a stalled write of a higher mark (its temporary file exists)');
$o->node->backup('during_mark_write');
my $loaded = $load->finish;
ok($loaded, 'the load, which needed the higher mark, committed') or diag("$out $err");
my $max = $o->query('SELECT max(id) FROM t');

# A standby from that backup streams the load's commits.
my $s = SnowflakeTest->new('standby', from_backup => [ $o, 'during_mark_write' ], id_key => 'primary');
$s->start;
$o->node->wait_for_catchup($s->node);
is($s->query('SELECT max(id) FROM t'), $max, "the standby replayed the load's rows");
$o->kill9;
strace_stop($h);

# Promoted, adopted by hand, its clock 2 s behind the primary's last ID (past the mark in the backup's state
# file): it issues above every ID of the primary that reached it.
$s->promote;
is($s->query('SELECT snowflake_adopt_state()'), 't', 'the promoted standby adopted the node state by hand');
my $behind_s = (SnowflakeTest::id_unix_ms($max) - 2000) / 1000 - Time::HiRes::time();
$s->set_clock(sprintf('%+.3f', $behind_s));
my $id = $s->next_id('the promoted standby, its clock 2 s behind the last ID', 'SET snowflake.max_wait_ms = 60000;');
cmp_ok($id, '>', $max, 'its first ID is above every ID the primary issued (it knew the mark logged after the write)');
is($s->query("INSERT INTO t SELECT snowflake_next() FROM generate_series(1, 1000) RETURNING 'x'") =~ tr/x//, 1000,
	'new rows go into the table without a key conflict');
$s->stop;
done_testing();
