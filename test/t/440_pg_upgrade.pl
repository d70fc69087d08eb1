# 440_pg_upgrade.pl: pg_upgrade carries the durable mark, by the documented
# step (docs/failover.md, "Upgrades"): copy the old cluster's snowflake.state
# to snowflake.state.import in the new data directory before its first start
# (issue 19 item 7).
#
# pg_upgrade copies neither the state file nor WAL.  The old cluster issued
# IDs an hour ahead of the clock the new one runs on: without the step the
# new cluster would start from its clock and issue IDs an hour below the old
# ones.  With it, the new cluster refuses until its clock passes the old IDs,
# then issues above them.  A damaged import file stops generation (it is not
# ignored).

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use File::Copy;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

sub write_bytes
{
	my ($path, $bytes) = @_;
	open my $fh, '>:raw', $path or die "could not write $path: $!";
	print $fh $bytes;
	close $fh or die "could not close $path: $!";
	return;
}

# The clock steps an hour on purpose: the forward-jump check is off.
my $old = SnowflakeTest->new('old', conf => 'snowflake.max_clock_jump_ms = 0');
$old->start;
$old->query('CREATE EXTENSION snowflake; CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next(), v int)');
$old->set_clock('+1h');
$old->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'old cluster, clock an hour ahead', count => 1000);
$old->query('INSERT INTO t (v) SELECT g FROM generate_series(1, 1000) g');
my $max = $old->query('SELECT max(id) FROM t');
$old->record('old cluster, table', split /\n/, $old->query('SELECT id FROM t ORDER BY id'));
$old->stop;
$old->set_clock('+0');

# The new cluster: same node settings, IDs checked in one sequence with the old one's.
my $new = SnowflakeTest->new('new', id_key => 'old', conf => 'snowflake.max_clock_jump_ms = 0');
my $bindir = $old->node->config_data('--bindir');
my $work = PostgreSQL::Test::Utils::tempdir;
chdir $work or die "chdir $work: $!";
# pg_upgrade (same version) from one stopped cluster into a fresh one.
sub upgrade_ok
{
	my ($from, $to, $what) = @_;
	command_ok(
		[
			"$bindir/pg_upgrade", '--no-sync',
			'-d', $from->data_dir, '-D', $to->data_dir,
			'-b', $bindir, '-B', $bindir,
			'-s', $to->node->host,
			'-p', $from->node->port, '-P', $to->node->port
		],
		$what);
	return;
}
upgrade_ok($old, $new, 'pg_upgrade from the old cluster to the new one');
ok(-f $new->data_dir . '/snowflake.state', 'pg_upgrade\'s own starts of the new cluster created a state file');

# A damaged import file: generation stops, it is not ignored.
write_bytes($new->data_dir . '/snowflake.state.import', 'SNOW');
$new->start;
my $r = $new->next_refused('a damaged import file', undef, sqlstate => 'XX001', message => qr/is damaged/);
like($r->{detail} // '', qr/The mark to import, "snowflake\.state\.import", cannot be used/,
	'the detail names the import file');
like($r->{stderr}, qr/HINT:  The damaged file is "snowflake\.state\.import", not "snowflake\.state": leave "snowflake\.state" in place/,
	'the hint names the import file, not the state file, as the one to replace (round 4)');
$new->stop;

# The documented step: the old cluster's state file, copied as snowflake.state.import.
copy($old->data_dir . '/snowflake.state', $new->data_dir . '/snowflake.state.import')
  or die "copy: $!";
$new->start;
like(slurp_file($new->node->logfile), qr/snowflake imported the durable mark \d+ \(Unix ms\) from "snowflake\.state\.import"/,
	'the new cluster imported the old mark at start-up');
ok(-f $new->data_dir . '/snowflake.state.imported' && !-e $new->data_dir . '/snowflake.state.import',
	'the import file was renamed to snowflake.state.imported');
is($new->query('SELECT max(id) FROM t'), $max, 'the upgraded table holds the old IDs');
$r = $new->next_refused('new cluster, clock an hour behind the old IDs', 'SET snowflake.max_wait_ms = 500;',
	message => qr/clock is behind the IDs already issued/);
my $behind = SnowflakeTest::detail_ms($r);
ok(defined $behind && $behind > 3_500_000 && $behind < 3_700_000,
	'the new cluster knows the old IDs lie about an hour ahead of its clock')
  or diag('detail: ' . ($r->{detail} // '(none)'));

# Its clock past the old IDs: it issues above them, also after a restart.
$new->set_clock('+1h');
my @ids = $new->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'new cluster, clock caught up', count => 1000);
cmp_ok($ids[0], '>', $max, 'the first ID of the upgraded cluster is above every ID of the old one');
is($new->query("INSERT INTO t (v) SELECT g FROM generate_series(1, 1000) g RETURNING 'x'") =~ tr/x//, 1000,
	'new rows go into the upgraded table without a key conflict');
$new->restart;
$new->ids('SELECT snowflake_next() FROM generate_series(1, 100)', 'upgraded cluster after a restart', count => 100);

# The way back (pg_upgrade in copy mode leaves the old cluster startable): the
# new cluster issued IDs two hours ahead; the old cluster's own file knows
# nothing of them.  The documented step carries the new cluster's mark back
# (docs/failover.md, "Upgrades"): the old cluster refuses until its clock
# passes them, then issues above them (attack on issue 19, round 2, F4).
$new->set_clock('+2h');
my @new_ids = $new->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'new cluster, clock two hours ahead', count => 1000);
push @new_ids, $new->next_id('new cluster, a node the old one never used (1/2)', 'SET snowflake.machine_id = 2;');
$new->stop;
copy($new->data_dir . '/snowflake.state', $old->data_dir . '/snowflake.state.import')
  or die "copy: $!";
copy($new->data_dir . '/snowflake.nodes', $old->data_dir . '/snowflake.nodes.import')
  or die "copy: $!";
$old->set_clock('+1h');
$old->start;
$r = $old->next_refused('the old cluster again, its clock behind the new cluster\'s IDs', 'SET snowflake.max_wait_ms = 500;',
	message => qr/clock is behind the IDs already issued/);
$old->set_clock('+2h');
my @back = $old->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'the old cluster again, clock caught up', count => 1000);
cmp_ok($back[0], '>', $new_ids[-2], 'the old cluster issues above every ID of the new one');
# The old cluster's file records its own node already: the new cluster's node it never used (1/2) is
# retired, not taken as its own (round 14, F2: an import's used nodes count only at a first start).
like(slurp_file($old->node->logfile), qr/snowflake took in "snowflake\.nodes\.import" after this server recorded nodes of its own.*\n.*DETAIL:  Retired now: datacenter 1, machine 2\./,
	'the old cluster took the new cluster\'s node sets in, retiring 1/2');
$old->next_refused('the old cluster as 1/2', 'SET snowflake.machine_id = 2;',
	message => qr/^snowflake_next\(\) refused: datacenter 1, machine 2 is retired on this server$/);
$old->stop;

# snowflake.nodes through pg_upgrade (the documented step, docs/failover.md "Upgrades": the old
# cluster's snowflake.nodes as snowflake.nodes.import): a copy adopted as a new server (1/3) retired
# the original's nodes (1/1, and 1/2 through a function's SET clause); upgraded, it keeps refusing them.
my $o = SnowflakeTest->new('orig', allows_streaming => 1);
$o->start;
$o->query('CREATE EXTENSION snowflake');
$o->query(q{CREATE FUNCTION gen() RETURNS bigint LANGUAGE sql SET snowflake.machine_id = 2 AS 'SELECT snowflake_next()'});
$o->next_id('the original issues as 1/1');
$o->ids('SELECT gen()', 'the original issues as 1/2 through gen()', count => 1);
$o->node->backup('ob');
my $c = SnowflakeTest->new('copy', from_backup => [ $o, 'ob' ], standby => 0, id_key => 'orig',
	conf => 'snowflake.machine_id = 3');
$c->start;
is($c->query('SELECT snowflake_adopt_state()'), 't', 'the copy adopted by hand as a new server (1/3)');
$c->next_id('the copy issues as 1/3');
$c->stop;
my $u = SnowflakeTest->new('copy_upgraded', id_key => 'orig', conf => 'snowflake.machine_id = 3');
upgrade_ok($c, $u, 'pg_upgrade of the adopted copy');
write_bytes($u->data_dir . '/snowflake.nodes.import', 'SNOW');
$u->start;
$r = $u->next_refused('a damaged snowflake.nodes.import', undef, sqlstate => 'XX001',
	message => qr/^snowflake node file "snowflake\.nodes" is damaged$/);
like($r->{detail} // '', qr/The node sets to import, "snowflake\.nodes\.import", cannot be used: .*bytes long/,
	'the detail names the import file');
$u->stop;
# An import that cannot be read (permissions): refused as unreadable (58030), not damaged.
chmod(0000, $u->data_dir . '/snowflake.nodes.import') or die "chmod: $!";
$u->start;
$r = $u->next_refused('an unreadable snowflake.nodes.import', undef, sqlstate => '58030',
	message => qr/^could not read snowflake node file "snowflake\.nodes"$/);
like($r->{detail} // '', qr/The node sets to import, "snowflake\.nodes\.import", cannot be used: .*Permission denied/,
	'the detail names the import file and the error');
$u->stop;
unlink($u->data_dir . '/snowflake.nodes.import') or die "unlink: $!";
copy($c->data_dir . '/snowflake.state', $u->data_dir . '/snowflake.state.import') or die "copy: $!";
copy($c->data_dir . '/snowflake.nodes', $u->data_dir . '/snowflake.nodes.import') or die "copy: $!";
$u->start;
ok($u->node->wait_for_log(qr/snowflake imported the node sets of "snowflake\.nodes\.import": used datacenter 1, machine 3; retired datacenter 1, machine 1; datacenter 1, machine 2/),
	'the upgraded copy imported the node sets at start-up, and logged them');
ok(-f $u->data_dir . '/snowflake.nodes.imported' && !-e $u->data_dir . '/snowflake.nodes.import',
	'the import file was renamed to snowflake.nodes.imported');
is($u->nodes_file->{retired}, '1/1,1/2', "the upgraded copy's snowflake.nodes retires the original's nodes");
is($u->nodes_file->{used}, '1/3', 'and records its own used node');
my $retired = qr/^snowflake_next\(\) refused: datacenter 1, machine \d is retired on this server$/;
$u->refused('SELECT gen()', 'the upgraded copy: gen() (1/2, the SET clause pg_upgrade carried)', message => $retired);
$u->next_refused('the upgraded copy: SET snowflake.machine_id = 1', 'SET snowflake.machine_id = 1;', message => $retired);
$u->next_id('the upgraded copy issues as 1/3');
$u->restart;
$u->next_refused('the upgraded copy after a restart: 1/1', 'SET snowflake.machine_id = 1;', message => $retired);
$u->stop;
$o->stop;
$new->summary;
done_testing();
