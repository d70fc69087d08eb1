# 498_import_standby.pl: a mark imported on a primary reaches its standbys
# (attack on issue 19, round 2, F3).  After pg_upgrade, a standby is often
# made by copying the upgraded cluster before its first start (PostgreSQL's
# rsync step); the import (snowflake.state.import) is applied by the
# primary's postmaster, in its own state file only.  Before the fix the
# standby never learned the imported mark: promoted, it issued IDs below it,
# then the old cluster's IDs again.  Now the primary's writer logs its
# published mark (imported included) when it starts and when a standby
# connects: the standby's file holds it, and a promoted standby starts above
# it.  (The old cluster is a server of its own here; pg_upgrade itself is
# in 440 and 710.)

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use File::Copy;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;


my $conf = 'snowflake.max_clock_jump_ms = 0';

# The old cluster issued IDs an hour ahead of the clock the new one runs on.
my $old = SnowflakeTest->new('old', conf => $conf);
$old->start;
$old->query('CREATE EXTENSION snowflake');
$old->set_clock('+1h');
my @old_ids = $old->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'old cluster, clock an hour ahead', count => 1000);
$old->stop;
$old->set_clock('+0');
my $old_max_ms = SnowflakeTest::id_unix_ms($old_ids[-1]);

# The new cluster, and a standby copied from it before the import.
my $u = SnowflakeTest->new('new', allows_streaming => 1, id_key => 'old', conf => $conf);
$u->start;
$u->query('CREATE EXTENSION snowflake');
$u->query('ALTER SYSTEM SET snowflake.failover_adopt = on');
$u->stop;
$u->node->backup_fs_cold('cold');
my $sb = SnowflakeTest->new('standby', from_backup => [ $u, 'cold' ], id_key => 'old');

copy($old->data_dir . '/snowflake.state', $u->data_dir . '/snowflake.state.import') or die "copy: $!";
$u->start;
like(slurp_file($u->node->logfile), qr/snowflake imported the durable mark/, 'the primary imported the old mark');
$u->next_refused('the primary, clock an hour behind the imported mark', 'SET snowflake.max_wait_ms = 200;',
	message => qr/clock is behind the IDs already issued/);

$sb->start;
$sb->wait_witness;
$u->node->wait_for_catchup($sb->node);
cmp_ok($sb->state_file_mark + $SnowflakeTest::EPOCH_UNIX_MS, '>=', $old_max_ms,
	'the standby\'s state file holds the imported mark');

# Failover: the primary dies, the standby is promoted.
$u->kill9;
$sb->promote('standby promoted');
$sb->next_refused('the promoted standby, clock an hour behind the imported mark', 'SET snowflake.max_wait_ms = 200;',
	message => qr/clock is behind the IDs already issued/);
$sb->set_clock('+1h');
my @ids = $sb->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'the promoted standby, clock caught up', count => 1000);
cmp_ok($ids[0], '>', $old_ids[-1], 'its first ID is above every ID of the old cluster');
$sb->stop;
$old->summary;
done_testing();
