# 493_rewind_rejoin.pl: an old primary rejoining as a standby of the promoted
# one (after pg_rewind) follows the new owner (attack on issue 19, round 2,
# F1/F2 follow-up).  The rewound directory takes the new primary's state file
# (pg_rewind copies it, and writes backup_label) or, when no rewind was
# needed, keeps its own file naming itself: in both cases, once it has
# replayed, streaming, a record of the new owner, its file names that owner,
# it is a copy and it witnesses; promoted in turn (with failover_adopt) it
# adopts and issues above every ID of the new primary.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;


my $conf = "snowflake.max_clock_jump_ms = 0\nwal_log_hints = on\n";
my $p = SnowflakeTest->new('old_primary', allows_streaming => 1, clock => 'shim', conf => $conf);
$p->start;
$p->query('CREATE EXTENSION snowflake');
$p->query('ALTER SYSTEM SET snowflake.failover_adopt = on');
$p->query('SELECT pg_reload_conf()');
$p->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'old primary', count => 1000);
$p->node->backup('pb');
my $s = SnowflakeTest->new('new_primary', from_backup => [ $p, 'pb' ], clock => 'shim', id_key => 'old_primary');
$s->start;
$s->wait_witness;
$p->node->wait_for_catchup($s->node);
$p->stop;
$s->promote('the standby is promoted');
$s->set_clock('+10');
$s->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'the new primary adopts, clock 10 s ahead', count => 1000);
is($s->query('SELECT state FROM snowflake_state()'), 'ok', 'the new primary owns the node state');
$s->query('CHECKPOINT');

# The old primary rejoins as a standby of the new one.
my $bindir = $p->node->config_data('--bindir');
my ($out, $err) = run_command([ "$bindir/pg_rewind", '--target-pgdata', $p->data_dir,
	'--source-server', $s->node->connstr('postgres') ]);
note("pg_rewind: $out $err");
$p->node->enable_streaming($s->node);
$p->start;
$p->wait_witness;
pass('the rejoined old primary witnesses the new owner');
is($p->query('SELECT state FROM snowflake_state()'), 'copy', 'the rejoined old primary is a copy of the new owner');
is($p->query('SELECT owner_directory FROM snowflake_state()'), $s->query('SELECT this_directory FROM snowflake_state()'),
	'its state file names the new primary');

# Failover back.
$s->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'the new primary goes on', count => 1000);
$s->node->wait_for_catchup($p->node);
$s->stop;
$p->set_clock('+10');
$p->promote('the old primary is promoted again');
$p->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'it adopts again, above the new primary\'s IDs', count => 1000);
is($p->query('SELECT state FROM snowflake_state()'), 'ok', 'and owns the node state');
$p->stop;
$p->summary;
done_testing();
