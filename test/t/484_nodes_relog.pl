
# Copyright (c) 2026, snowflake contributors
#
# snowflake.nodes is written first and its NODES record logged after (issue
# 19, round 11, F1).  A crash between the two leaves a node in the primary's
# file that no WAL record carries: a standby never learns it, and a copy of
# that standby adopted as a new server would issue it again.  So after every
# start the reservation writer logs the sets its file holds, before any node
# issues.  Here the writer is killed right after the rename of
# snowflake.nodes.tmp (killshim.c, an LD_PRELOAD shim), before the record of
# a node's first use; after the crash re-initialisation the standby's own
# snowflake.nodes records the node all the same.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $dir = PostgreSQL::Test::Utils::tempdir;
my $shim = "$dir/killshim.so";
system('cc', '-shared', '-fPIC', '-O2', '-o', $shim, "$FindBin::RealBin/killshim.c", '-ldl') == 0
  or BAIL_OUT('could not build killshim.c');
my $trigger = "$dir/kill-at-rename";

my $p = SnowflakeTest->new('primary', allows_streaming => 1, restart_after_crash => 1);
$p->set_env([$shim], SF_KILL_SHIM_RENAME => 'snowflake.nodes.tmp', SF_KILL_SHIM_TRIGGER => $trigger);
$p->start;
$p->query('CREATE EXTENSION snowflake');
$p->next_id('the primary issues as 1/1');
$p->node->backup('b');
my $s = SnowflakeTest->new('standby', from_backup => [ $p, 'b' ], id_key => 'primary');
$s->start;
$p->node->wait_for_catchup($s->node);
ok($s->wait_nodes_used('1/1'), "the standby's snowflake.nodes records 1/1");

# The first use of 1/2: the writer renames snowflake.nodes.tmp into place, then dies before the NODES record.
my $log_at = -s $p->node->logfile;
open(my $fh, '>', $trigger) or die "open $trigger: $!";
close $fh;
my $r = $p->run("SET snowflake.machine_id = 2;\nSELECT snowflake_next();");
isnt($r->{ret}, 0, 'the first call of 1/2 ends with the crash');
ok(!-e $trigger, 'the shim fired');
ok($p->node->wait_for_log(qr/"snowflake reservation writer".* was terminated by signal 9/, $log_at),
	'the reservation writer was killed (a crash re-initialisation)');
is($p->nodes_file->{used}, '1/1,1/2', "the primary's file records 1/2 (written before the kill)");
ok($p->node->poll_query_until('postgres', 'SELECT 1', '1'), 'the primary is back');

# After the re-initialisation the writer logs the sets its file holds: the standby learns 1/2.
$p->next_id('the primary issues as 1/2 after the crash', 'SET snowflake.machine_id = 2;');
$p->node->wait_for_catchup($s->node);
ok($s->wait_nodes_used('1/1,1/2'), "the standby's snowflake.nodes records 1/2 (from the writer's record after the start)")
  or diag('standby: used ' . $s->nodes_file->{used});

$s->stop;
$p->stop;
$p->summary;
done_testing();
