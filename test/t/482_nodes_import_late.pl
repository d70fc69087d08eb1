
# Copyright (c) 2026, snowflake contributors
#
# Attack on issue 19, round 14, F2 (268,234 duplicates): a base backup of a
# running primary (1/1) was given another cluster's snowflake.nodes as
# snowflake.nodes.import (that cluster ran as 3/3) and configured as 3/3.
# The import made 3/3 a node "this data directory used", so
# snowflake_adopt_state() took the copy for the original's replacement and
# retired nothing, and the copy issued the primary's node (1/1) beside it.
# An import's used nodes now count as used only in a cluster whose own file
# records no node yet (the first start after pg_upgrade); taken in later,
# they are retired: a wrong file only refuses more.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use File::Copy;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $retired = qr/^snowflake_next\(\) refused: datacenter \d, machine \d is retired on this server$/;

my $p = SnowflakeTest->new('primary', allows_streaming => 1);
$p->start;
$p->query('CREATE EXTENSION snowflake');
$p->ids('SELECT snowflake_next() FROM generate_series(1, 100)', 'the primary issues as 1/1', count => 100);
$p->node->backup('b');

# Another cluster, run as 3/3.
my $x = SnowflakeTest->new('other', conf => "snowflake.datacenter_id = 3\nsnowflake.machine_id = 3");
$x->start;
$x->query('CREATE EXTENSION snowflake');
$x->next_id('the other cluster issues as 3/3');
$x->stop;
is($x->nodes_file->{used}, '3/3', "the other cluster's snowflake.nodes records 3/3");

# The copy, configured as 3/3, given the other cluster's file as its import.
my $c = SnowflakeTest->new('copy', from_backup => [ $p, 'b' ], standby => 0, id_key => 'primary',
	conf => "snowflake.datacenter_id = 3\nsnowflake.machine_id = 3");
copy($x->data_dir . '/snowflake.nodes', $c->data_dir . '/snowflake.nodes.import') or die "copy: $!";
$c->start;
ok($c->node->wait_for_log(qr/WARNING:  snowflake took in "snowflake\.nodes\.import" after this server recorded nodes of its own: the nodes it used are retired here, not used\n.*DETAIL:  Retired now: datacenter 3, machine 3\./),
	'the copy took the import in late, and says it retired its used node');
is($c->nodes_file->{used}, '1/1', "the copy's snowflake.nodes: used is still the primary's node only");
is($c->nodes_file->{retired}, '3/3', 'and the import\'s used node is retired');
ok(!-e $c->data_dir . '/snowflake.nodes.import', 'the import was renamed');

# Adopted by hand: its configured node is not one this data directory used, so it is a new server
# and retires the primary's node.
is($c->query('SELECT snowflake_adopt_state()'), 't', 'the copy adopted by hand');
like(slurp_file($c->node->logfile), qr/snowflake node state adopted as a new server \(datacenter 3, machine 3 in the configuration files\): retired datacenter 1, machine 1/,
	'as a new server: the primary\'s node is retired');
$c->next_refused('the copy as the primary\'s node (1/1)', 'SET snowflake.datacenter_id = 1; SET snowflake.machine_id = 1;',
	message => $retired);
$c->next_refused('the copy as its configured node (3/3), retired by the wrong import', undef, message => $retired);
$p->ids('SELECT snowflake_next() FROM generate_series(1, 100)', 'the primary goes on as 1/1', count => 100);

# Taken in again at the next start (the import put back): nothing changes.
copy($x->data_dir . '/snowflake.nodes', $c->data_dir . '/snowflake.nodes.import') or die "copy: $!";
$c->restart;
is($c->nodes_file->{retired}, '1/1,3/3', 'after the import again: the retired nodes stay');
my $warned = () = slurp_file($c->node->logfile) =~ /WARNING:  snowflake took in "snowflake\.nodes\.import"/g;
is($warned, 1, 'the import taken in again retires nothing new, and warns of nothing (round 16: it said "Retired now: none")');
is($c->nodes_file->{used}, '', 'and none is used');
$c->next_refused('the copy as 1/1 after a restart', 'SET snowflake.datacenter_id = 1; SET snowflake.machine_id = 1;',
	message => $retired);

$c->stop;
$p->stop;
$p->summary;
done_testing();
