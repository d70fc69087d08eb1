# 488_retired_nodes.pl: a copy adopted as a NEW server never issues IDs under
# the nodes the data directory it was copied from issued IDs under (outside
# attack on issue 19, rounds 7-8).  The copy carried the original's node ids
# in its catalog (a function's SET clause: 60,745 duplicate IDs) or got them
# from applications (PGOPTIONS, SET, set_config()); none of these can all be
# found by inspecting settings.  The node state now remembers, in
# snowflake.nodes, the nodes its owner issued IDs under; an adoption by hand
# as a new server (its configured node not among them) retires them.
#
# Also: a replacement (same node) retires nothing; a copy of an adopted copy
# keeps the retired nodes and retires the copy's own; snowflake.failover_adopt
# retires nothing; a damaged snowflake.nodes fails closed, and its hint works.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $gen = q{CREATE FUNCTION gen() RETURNS bigint LANGUAGE sql SET snowflake.machine_id = 2 AS 'SELECT snowflake_next()'};

# O: the original, 1/1, and 1/2 through a function's SET clause.
my $o = SnowflakeTest->new('original', allows_streaming => 1);
$o->start;
$o->query('CREATE EXTENSION snowflake');
$o->query($gen);
$o->ids('SELECT snowflake_next() FROM generate_series(1, 100)', 'original 1/1', count => 100);
$o->ids('SELECT gen() FROM generate_series(1, 100)', 'original 1/2 through gen()', count => 100);
is($o->nodes_file->{used}, '1/1,1/2',
	"the original's snowflake.nodes records 1/1 and 1/2 as used (before their first IDs returned: no wait)");
is($o->nodes_file->{retired}, '', 'the original retired nothing');
$o->node->backup('ob');

# C: the copy made a NEW server, 1/3 in its configuration files, adopted by hand.
my $c = SnowflakeTest->new('copy', from_backup => [ $o, 'ob' ], standby => 0, id_key => 'original',
	conf => 'snowflake.machine_id = 3');
$c->start;
$c->next_refused('the copy before adoption', undef, message => qr/is a copy/);
is($c->query('SELECT snowflake_adopt_state()'), 't', 'the copy adopted by hand as a new server (1/3)');
ok($c->node->wait_for_log(qr/retired datacenter 1, machine 1; datacenter 1, machine 2/),
	'the log line names the retired nodes');
my $retired = qr/^snowflake_next\(\) refused: datacenter 1, machine \d is retired on this server$/;
my $r = $c->refused('SELECT gen()', 'the copy: gen() (1/2 from the carried SET clause)', message => $retired);
like($r->{detail}, qr/adopted as a new server/, 'the detail says why');
like($r->{hint}, qr/SET clause/, 'the hint names where the setting came from');
$c->next_refused('the copy: SET snowflake.machine_id = 1', 'SET snowflake.machine_id = 1;', message => $retired);
$c->next_refused('the copy: set_config() to 1/1', q{SELECT set_config('snowflake.machine_id', '1', false);},
	message => $retired);
{
	local $ENV{PGOPTIONS} = '-c snowflake.machine_id=1';
	$c->next_refused('the copy: PGOPTIONS -c snowflake.machine_id=1', undef, message => $retired);
}
my $id = $c->next_id('the copy issues as 1/3');
is(SnowflakeTest::id_machine($id), 3, 'as machine 3');
$id = $c->next_id('the copy issues as 1/4, a node never used', 'SET snowflake.machine_id = 4;');
is(SnowflakeTest::id_machine($id), 4, 'as machine 4');
is($c->nodes_file->{used}, '1/3,1/4', "the copy's snowflake.nodes records its own used nodes");
is($c->nodes_file->{retired}, '1/1,1/2', 'and the retired ones');
$c->restart;
$c->refused('SELECT gen()', 'the copy after a restart: gen()', message => $retired);
$c->next_refused('the copy after a restart: 1/1', 'SET snowflake.machine_id = 1;', message => $retired);
$c->next_id('the copy after a restart issues as 1/3');

# A failed write of snowflake.nodes (a directory planted at its temporary file): one WARNING; a node the file
# records goes on issuing, a node's first ID is refused (nothing issued) until the file records it.
mkdir($c->data_dir . '/snowflake.nodes.tmp') or die "mkdir: $!";
chmod(0777, $c->data_dir . '/snowflake.nodes.tmp');
my $at = -s $c->node->logfile;
$r = $c->next_refused('the first ID of 1/7 while snowflake.nodes cannot be written', 'SET snowflake.machine_id = 7;',
	sqlstate => '42809', message => qr/^could not create snowflake node file "snowflake\.nodes\.tmp": Is a directory$/);
like($r->{detail}, qr/issues no ID under datacenter 1, machine 7 before "snowflake\.nodes" records that this server uses it/,
	'the detail says the node waits for its record');
ok($c->node->wait_for_log(qr/WARNING:  could not create snowflake node file "snowflake\.nodes\.tmp"/, $at),
	'the failed write is logged as a WARNING');
is($c->nodes_file->{used}, '1/3,1/4', 'the file is unchanged while it cannot be written');
$c->ids('SELECT snowflake_next() FROM generate_series(1, 10)', 'the copy goes on issuing as 1/3, a recorded node', count => 10);
$c->next_refused('the first ID of 1/7, again', 'SET snowflake.machine_id = 7;', sqlstate => '42809');
rmdir($c->data_dir . '/snowflake.nodes.tmp') or die "rmdir: $!";
$c->ids('SET snowflake.machine_id = 7; SELECT snowflake_next() FROM generate_series(1, 10)',
	'once the file can be written: the copy issues as 1/7', count => 10);
is($c->nodes_file->{used}, '1/3,1/4,1/7', 'and the file records 1/7');
ok($c->node->wait_for_log(qr/snowflake node file "snowflake\.nodes" written again/, $at), 'the writer logs that it is written again');
my $warnings = () = substr(slurp_file($c->node->logfile), $at) =~ /WARNING:  could not create snowflake node file/g;
is($warnings, 1, 'one WARNING for the episode');

# C3: a copy of the adopted copy, made a new server (1/5): retires C's used, keeps O's retired.
$c->node->backup('cb');
my $c3 = SnowflakeTest->new('copy3', from_backup => [ $c, 'cb' ], standby => 0, id_key => 'original',
	conf => 'snowflake.machine_id = 5');
$c3->start;
is($c3->query('SELECT snowflake_adopt_state()'), 't', 'the copy of the copy adopted as a new server (1/5)');
is($c3->nodes_file->{retired}, '1/1,1/2,1/3,1/4,1/7', "it retired the copy's used nodes and kept the original's retired ones");
for my $m (1 .. 4)
{
	$c3->next_refused("the copy of the copy: 1/$m", "SET snowflake.machine_id = $m;", message => $retired);
}
$c3->next_id('the copy of the copy issues as 1/5');
$c3->stop;

# Damaged snowflake.nodes: generation refuses; the hint (stop, remove, start) works where it is right (C3 stopped
# for good, and O is a server that was never adopted as a new one).
$o->stop;
{
	my $path = $o->data_dir . '/snowflake.nodes';
	open my $fh, '+<:raw', $path or die "open $path: $!";
	seek($fh, 40, 0);
	my $b;
	read($fh, $b, 1);
	seek($fh, 40, 0);
	print $fh chr(ord($b) ^ 0x55);
	close $fh;
}
$o->start;
$r = $o->next_refused('the original with a damaged snowflake.nodes', undef,
	sqlstate => 'XX001', message => qr/^snowflake node file "snowflake\.nodes" is damaged$/);
like($r->{detail}, qr/checksum/, 'the detail says what is wrong');
like($r->{hint}, qr/remove it/, 'the hint says what to do');
like($r->{hint}, qr/put back a copy of this data directory's own file written after its last adoption/,
	'a copy to put back must postdate the last adoption (round 10, F3: the original\'s file undid the retirement)');
like($r->{hint}, qr/and is not a copy waiting for adoption: a copy needs the original's file/,
	'removing it is not for a copy waiting for adoption (round 15, F2: the copy then retired nothing)');
like($o->query("SELECT state || ' ' || detail FROM snowflake_state()"), qr/^damaged snowflake node file "snowflake\.nodes": .*checksum/,
	'snowflake_state() says damaged, naming the node file (round 10, F8: it said ok)');
$o->stop;
unlink($o->data_dir . '/snowflake.nodes') or die "unlink: $!";
$o->start;
$o->next_id('the original after removing the damaged file');
# Unreadable (EACCES): refuses too, until it can be read.
$o->stop;
chmod(0, $o->data_dir . '/snowflake.nodes') or die "chmod: $!";
$o->start;
$r = $o->next_refused('the original with an unreadable snowflake.nodes', undef,
	sqlstate => '58030', message => qr/^could not read snowflake node file "snowflake\.nodes"$/);
like($r->{detail}, qr/Permission denied/, 'the detail says why it could not be read');
is($o->query('SELECT state FROM snowflake_state()'), 'unreadable', 'snowflake_state() says unreadable');
$o->stop;
chmod(0600, $o->data_dir . '/snowflake.nodes') or die "chmod: $!";
$o->start;
$o->next_id('the original once the file can be read again');
$o->stop;

# Replacement: C2 keeps 1/1 (the original is stopped); nothing is retired, gen() issues 1/2.
my $c2 = SnowflakeTest->new('copy2', from_backup => [ $o, 'ob' ], standby => 0, id_key => 'original');
$c2->start;
is($c2->query('SELECT snowflake_adopt_state()'), 't', 'the replacement adopted by hand (1/1)');
is($c2->nodes_file->{retired}, '', 'a replacement retires nothing');
$id = $c2->ids('SELECT gen()', 'the replacement: gen()', count => 1);
$c2->stop;

# A copy whose snowflake.nodes is damaged cannot be adopted by hand: which nodes to retire is unknown.
my $c4 = SnowflakeTest->new('copy4', from_backup => [ $o, 'ob' ], standby => 0, id_key => 'original',
	conf => 'snowflake.machine_id = 6');
{
	my $path = $c4->data_dir . '/snowflake.nodes';
	open my $fh, '+<:raw', $path or die "open $path: $!";
	print $fh 'XXXX';
	close $fh;
}
$c4->start;
$r = $c4->refused('SELECT snowflake_adopt_state()', 'adopting by hand with a damaged snowflake.nodes', sqlstate => 'XX001',
	message => qr/^snowflake node file "snowflake\.nodes" is damaged$/);
like($r->{detail}, qr/bad magic number/, 'the detail says what is wrong');
is($c4->query('SELECT state FROM snowflake_state()'), 'damaged', 'snowflake_state() says damaged (the node file)');
$c4->stop;

# Round 10, F7: an adoption as a new server that fails (the state file cannot be written) retires nothing:
# the same directory adopted afterwards as the original's replacement issues its nodes.
my $c5 = SnowflakeTest->new('copy5', from_backup => [ $o, 'ob' ], standby => 0, id_key => 'original',
	conf => 'snowflake.machine_id = 7');
$c5->start;
mkdir($c5->data_dir . '/snowflake.state.tmp') or die "mkdir: $!";
$c5->refused('SELECT snowflake_adopt_state()', 'adopting as a new server while the state file cannot be written',
	sqlstate => '42809', message => qr/snowflake state file/);
is($c5->nodes_file->{retired}, '', 'the failed adoption retired nothing in snowflake.nodes');
is($c5->query('SELECT state FROM snowflake_state()'), 'copy', 'and the directory stays a copy');
rmdir($c5->data_dir . '/snowflake.state.tmp') or die "rmdir: $!";
$c5->query('ALTER SYSTEM SET snowflake.machine_id = 1');
$c5->query('SELECT pg_reload_conf()');
ok($c5->node->poll_query_until('postgres', 'SHOW snowflake.machine_id', '1'), 'configured as the original (1/1)');
is($c5->query('SELECT snowflake_adopt_state()'), 't', 'adopted as the replacement');
$c5->ids('SELECT gen()', 'the replacement after a failed new-server adoption: gen() (1/2)', count => 1);
$c5->stop;

# failover_adopt: a standby of O promoted after O stops retires nothing, also where O issued IDs only under a
# node other than the one it runs as (1/2 through gen(), never 1/1), which an adoption by hand would take for a
# new server.  O's file is removed while it is stopped (O was never adopted as a new server): it starts afresh.
unlink($o->data_dir . '/snowflake.nodes') or die "unlink: $!";
$o->start;
$o->ids('SELECT gen() FROM generate_series(1, 10)', 'the original, only 1/2 through gen()', count => 10);
ok($o->wait_nodes_used('1/2'), "the original's snowflake.nodes records only 1/2") or diag(explain($o->nodes_file));
$o->node->backup('ob2');
my $s = SnowflakeTest->new('standby', from_backup => [ $o, 'ob2' ], id_key => 'original',
	conf => 'snowflake.failover_adopt = on');
$s->start;
is($s->nodes_file->{used}, '1/2', "the standby's snowflake.nodes came with its base backup");
$o->ids('SELECT gen()', 'the original before the failover: gen()', count => 1);
$o->node->wait_for_catchup($s->node);
$s->wait_witness;
$o->stop;
$s->promote;
$s->next_id('the promoted standby issues as 1/1');
$s->ids('SELECT gen()', 'the promoted standby (failover_adopt): gen() issues 1/2', count => 1);
is($s->nodes_file->{retired}, '', 'failover_adopt retired nothing');
unlike(slurp_file($s->node->logfile), qr/adopted as a new server/, 'and logged no retirement');
ok($s->wait_nodes_used('1/1,1/2'), 'the promoted standby records its used nodes') or diag(explain($s->nodes_file));

SnowflakeTest::summary();
done_testing();
