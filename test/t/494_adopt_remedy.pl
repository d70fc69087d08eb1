# 494_adopt_remedy.pl: the copy refusal's remedy, followed literally, repeats
# no ID (outside attack on issue 19, round 4, F2).  The HINT used to say
# "stop the original, then run SELECT snowflake_adopt_state()": a base backup
# adopted that way starts from the backup's mark, and the original's IDs
# issued after the backup (ahead of the clock under max_lead_ms, or with the
# clock stepped back) came again (2,148 and 1,142,093 duplicates in the
# attacker's runs).  The HINT now names the step that carries the original's
# mark (its snowflake.state as snowflake.state.import, then a restart) or the
# clock condition; following it, the adopted copy issues above every ID of the
# original, also when its clock is an hour behind them (it waits for it).
# Adopting while the import file still waits for the restart is refused
# (round 5, F2).

use strict;
use warnings FATAL => 'all';

use File::Copy qw(copy);
use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $conf = 'snowflake.max_clock_jump_ms = 0';
my $o = SnowflakeTest->new('original', allows_streaming => 1, clock => 'shim', conf => $conf);
$o->start;
$o->query('CREATE EXTENSION snowflake');
$o->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'original', count => 1000);
$o->node->backup('ob');

# N: the base backup started as a server of its own; it refuses, with the remedy.
my $n = SnowflakeTest->new('copy', from_backup => [ $o, 'ob' ], standby => 0, clock => 'shim', id_key => 'original',
	conf => $conf);
$n->start;
my $r = $n->next_refused('the copy', undef, sqlstate => '55000',
	message => qr/this data directory is a copy of the one that owns the node state/);
like($r->{stderr}, qr/HINT:  If this server replaces that one for good \(failover, move\): stop the original, bring its mark here \(put its "snowflake\.state" into this data directory as "snowflake\.state\.import" and restart this server, or wait until the clock here is past the timestamp of every ID it issued\), then run SELECT <extension schema>\.snowflake_adopt_state\(\) \(with search_path pinned, as the README\'s section Functions shows\)/,
	'the HINT names how to bring the original\'s mark before adopting');
unlike($r->{stderr}, qr/HINT:  If this server replaces that one for good \(failover, move\), run SELECT snowflake_adopt_state\(\)/,
	'the HINT no longer offers adopting at once');

# The original runs on, its clock an hour ahead, and stops for good.
$o->set_clock('+1h');
$o->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'original, an hour ahead after the backup', count => 1000);
my $max = $o->query('SELECT max(x) FROM (SELECT snowflake_next() AS x) s');
$o->record('original, last', $max);
$o->stop;

# The HINT, first way: the original's state file as the import, a restart, then adoption.
# Adopting before the restart is refused (round 5, F2: it returned t and the copy
# then issued 200,000 of the original's IDs again; the import is read only at start).
copy($o->data_dir . '/snowflake.state', $n->data_dir . '/snowflake.state.import') or die "copy: $!";
$n->refused('SELECT snowflake_adopt_state()', 'adopting while the import waits to be read', sqlstate => '55000',
	message => qr/snowflake cannot adopt the node state while "snowflake\.state\.import" waits to be imported/);
is($n->query('SELECT state FROM snowflake_state()'), 'copy', 'still a copy: the refused call adopted nothing');
$n->restart;
like(slurp_file($n->node->logfile), qr/snowflake imported the durable mark/, 'the copy imported the original\'s mark');
is($n->query('SELECT state FROM snowflake_state()'), 'copy', 'the import does not adopt: still a copy');
is($n->query('SELECT snowflake_adopt_state()'), 't', 'adopted by hand');
$r = $n->next_refused('adopted copy, clock an hour behind the original\'s last IDs', 'SET snowflake.max_wait_ms = 500;',
	message => qr/clock is behind the IDs already issued/);
$n->set_clock('+1h');
my @ids = $n->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'adopted copy, clock caught up', count => 1000);
cmp_ok($ids[0], '>', $max, 'the adopted copy issues above every ID of the original');
$n->stop;

# A copy that becomes a new server gets its own node ids first, then adopts: not in a
# statement that ran through the reload of those ids (round 6: it adopted and
# issued the original's node's IDs, 19,000 duplicates).
my $n2 = SnowflakeTest->new('copy2', from_backup => [ $o, 'ob' ], standby => 0, clock => 'shim', conf => $conf);
$n2->start;
$n2->next_refused('the second copy', undef, sqlstate => '55000', message => qr/is a copy/);
# Session X waits inside one statement; the ids change and are reloaded (a new
# session runs as machine 3); then X adopts, still in that statement.
$n2->query('CREATE TABLE go (x int)');
my $bg = $n2->background_on_go('adopted', q{
	BEGIN
		PERFORM snowflake_adopt_state();
		msg := 'adopted; next: ' || snowflake_next();
	EXCEPTION WHEN object_not_in_prerequisite_state THEN
		msg := msg || ': ' || SQLERRM;
	END;});
$n2->query('ALTER SYSTEM SET snowflake.machine_id = 3');
$n2->query('SELECT pg_reload_conf()');
ok($n2->node->poll_query_until('postgres', 'SHOW snowflake.machine_id', '3'), 'a new session runs as machine 3');
$n2->query('INSERT INTO go VALUES (1)');
$bg->query_until(qr/finished/, "\\echo finished\n");
# Refused at the adoption (the writer has read the new ids: the session's differ), or,
# if the writer had not read them yet, adopted but refused at the next ID (round 7: the
# session began before the adoption and has not read the reload): never an ID of machine 1.
like($bg->{stderr}, qr/outcome: adopted: (snowflake_adopt_state\(\) refused: this session has not read the last configuration reload yet|snowflake_next\(\) refused: this session began before this server adopted the node state)/,
	'a statement that ran through the reload of the new ids issues no ID');
unlike($bg->{stderr}, qr/adopted; next: \d/, 'not one');
$bg->quit;
like($n2->query('SELECT snowflake_adopt_state()'), qr/^[tf]$/, 'a new statement adopts (if that statement did not)');
is($n2->query('SELECT state FROM snowflake_state()'), 'ok', 'the second copy owns its node state');
is(SnowflakeTest::id_machine($n2->query('SELECT snowflake_next()')), 3, 'and issues IDs of its own node, machine 3');
$n2->stop;
$o->summary;
done_testing();
