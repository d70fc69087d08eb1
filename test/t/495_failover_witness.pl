# 495_failover_witness.pl: snowflake.failover_adopt adopts only in a data
# directory that itself streamed from a primary as a standby and was then
# promoted (attack on issue 19, F1/F2).  A timeline switch alone is no proof:
# archive recovery of a copy (recovery.signal), a copy started in standby
# mode with no primary and promoted, and a base backup of a freshly promoted
# standby all switch timeline; before the fix each adopted the node while the
# original could still issue the same IDs.  The real failover (a streaming
# standby promoted) still adopts (also 095, 410).

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use File::Path qw(make_path);
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;


my $p = SnowflakeTest->new('primary', allows_streaming => 1, clock => 'shim');
my $arch = $p->node->archive_dir;
make_path($arch);
$p->node->append_conf('postgresql.conf', "archive_mode = on\narchive_command = 'cp %p \"$arch/%f\"'\n");
$p->start;
$p->query('CREATE EXTENSION snowflake');
$p->query('ALTER SYSTEM SET snowflake.failover_adopt = on');
$p->query('SELECT pg_reload_conf()');
$p->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'primary', count => 1000);
$p->node->backup('b');
$p->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'primary after the backup', count => 1000);
# Some WAL in the current segment first: at a segment's very start pg_switch_wal() does nothing,
# and that segment would never be archived (seen when the IDs above needed no new mark).
$p->query('CREATE TABLE wal_filler AS SELECT 1 AS x');
my $seg = $p->query('SELECT pg_walfile_name(pg_current_wal_lsn())');
$p->query('SELECT pg_switch_wal()');
ok($p->node->poll_query_until('postgres', "SELECT last_archived_wal >= '$seg' FROM pg_stat_archiver"), 'WAL archived');

sub refuses_as_copy
{
	my ($t, $what) = @_;
	is($t->query('SELECT pg_is_in_recovery()'), 'f', "$what: promoted");
	my $r = $t->next_refused($what, undef, sqlstate => '55000',
		message => qr/this data directory is a copy of the one that owns the node state/);
	like($r->{detail} // '', qr/streamed from a primary as a standby/, "$what: the detail says why failover_adopt did not adopt");
	is($t->query('SELECT state FROM snowflake_state()'), 'copy', "$what: still a copy");
	ok(!-e $t->data_dir . '/snowflake.standby', "$what: no standby witness") if $what !~ /backup of/;
}

# --- F1: archive recovery of a copy (recovery.signal), ending on a new timeline.
my $a = SnowflakeTest->new('archive', from_backup => [ $p, 'b' ], standby => 0, restoring => 1, clock => 'shim');
$a->start;
ok($a->node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'), 'archive recovery ended');
is($a->query("SELECT setting FROM pg_settings WHERE name = 'snowflake.failover_adopt'"), 'on', 'failover_adopt = on was copied');
refuses_as_copy($a, 'archive recovery of a copy');
$a->stop;

# --- F1 variant: a copy in standby mode with no primary, promoted.
my $s = SnowflakeTest->new('nostream', from_backup => [ $p, 'b' ], standby => 0, clock => 'shim');
open my $fh, '>', $s->data_dir . '/standby.signal' or die;
close $fh;
$s->start;
is($s->query('SELECT pg_is_in_recovery()'), 't', 'the copy runs in standby mode, with no primary');
$s->promote('promoted');
refuses_as_copy($s, 'a promoted copy that never streamed');
$s->stop;

# --- F2: a base backup of a freshly promoted streaming standby.
my $c = SnowflakeTest->new('standby', from_backup => [ $p, 'b' ], clock => 'shim');
$c->start;
ok($c->node->poll_query_until('postgres', 'SELECT status = \'streaming\' FROM pg_stat_wal_receiver'), 'the standby streams');
my $w = $c->data_dir . '/snowflake.standby';
for (1 .. 100 * $PostgreSQL::Test::Utils::timeout_default) { last if -e $w; select(undef, undef, undef, 0.01); }
ok(-e $w, 'the writer witnessed the streaming standby');
$p->node->wait_for_catchup($c->node);
$p->stop;
$c->promote('the standby promoted');
is($c->query('SELECT state FROM snowflake_state()'), 'copy', 'no ID asked for yet: copy');
$c->node->backup('c');
my $d = SnowflakeTest->new('copy_of_promoted', from_backup => [ $c, 'c' ], standby => 0, clock => 'shim');
$d->start;
refuses_as_copy($d, 'a base backup of the promoted standby');
$d->stop;

# --- The real failover adopts.
$c->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'the promoted streaming standby adopts', count => 1000);
is($c->query('SELECT state FROM snowflake_state()'), 'ok', 'and owns the node state');
$c->stop;
$p->summary;
done_testing();
