
# 015_end_of_time.pl: the generator at the end of the ID space, and before its start.
#
# The last Snowflake timestamp is tick 2^41 - 1: Unix ms 3487858230208,
# 2080-07-10 17:30:30.208 UTC.  With the clock frozen at .207 (and a lead of
# 1 ms) the last two ms are issued to the ID, exactly; then every call refuses
# with 22003, at once, including a snowflake_next_n() that would cross the end
# while IDs are left; the durable mark never passes the last tick (the state
# file stays loadable across a restart).  A call that looped there (issue 14
# item 3) would be uncancellable, so each call runs under a client-side timeout.
# A clock before the epoch (2009) refuses and never issues an ID.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $MAX_TICK = 2**41 - 1;
my $LAST_MS = $SnowflakeTest::EPOCH_UNIX_MS + $MAX_TICK;    # 3487858230208
my $NODE_BITS = (1 << 17) | (1 << 12);                     # datacenter 1, machine 1
sub id_of { my ($tick, $seq) = @_; return ($tick << 22) | $NODE_BITS | $seq; }

is($LAST_MS, 3487858230208, 'the last Snowflake ms is Unix ms 3487858230208');

# The clock jumps 54 years forward on purpose: the forward-jump hold is off here (130 tests it).
my $t = SnowflakeTest->new('end', conf => 'snowflake.max_clock_jump_ms = 0');
$t->start;
$t->query('CREATE EXTENSION snowflake');
$t->next_id('true time: one ID');

# Runs $sql with a client-side timeout (a looping backend ignores
# statement_timeout); returns the parsed result, timed_out set if it hung.
sub bounded
{
	my ($sql) = @_;
	my $timed_out;
	my $script = "\\set VERBOSITY verbose\nSET statement_timeout = '20s';\n$sql\n";
	my ($ret, $stdout, $stderr) = $t->node->psql(
		'postgres', $script,
		on_error_stop => 1,
		timeout => 60,
		timed_out => \$timed_out);
	my $r = SnowflakeTest::parse_error(
		{ ret => $ret, stdout => $stdout, stderr => $stderr });
	$r->{timed_out} = $timed_out;
	$r->{ids} = [ grep { /^\d+$/ } split /\n/, $stdout // '' ];
	return $r;
}

# A call that must refuse with 22003 at once and return no ID.
sub end_refused
{
	my ($sql, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $r = bounded($sql);
	if ($r->{timed_out})
	{
		fail("$what: returned (it hung: an uncancellable loop?)");
		# The looping backend ignores a fast shutdown.
		$t->node->stop('immediate');
		done_testing();
		exit 0;
	}
	is($r->{sqlstate}, '22003', "$what: refused at once with 22003")
	  or diag("stderr: $r->{stderr}");
	like($r->{message} // '', qr/2080-07-10 17:30:30\.208/,
		"$what: the message names the last Snowflake timestamp");
	is(scalar(@{ $r->{ids} }), 0, "$what: no ID returned");
	return $r;
}

# IDs from a call that must succeed (under the same client-side timeout).
sub end_ids
{
	my ($sql, $what, $count) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $r = bounded($sql);
	ok(!$r->{timed_out} && $r->{ret} == 0, "$what: succeeds")
	  or diag("stderr: $r->{stderr}");
	is(scalar(@{ $r->{ids} }), $count, "$what: $count IDs");
	ok(!$t->record($what, @{ $r->{ids} }), "$what: IDs new and increasing");
	return @{ $r->{ids} };
}

# --- Frozen at .207, the last ms but one.

$t->set_clock('2080-07-10 17:30:30.207');
my $lead1 = 'SET snowflake.max_lead_ms = 1;';

end_refused("$lead1 SELECT snowflake_next_n(8193);",
	'frozen at .207, lead 1 ms: snowflake_next_n(8193) would cross the end');

my @a = end_ids('SELECT snowflake_next_n(4096);',
	'frozen at .207: snowflake_next_n(4096)', 4096);
is($a[0], id_of($MAX_TICK - 1, 0), 'the first ID of .207 is ' . id_of($MAX_TICK - 1, 0));
is($a[-1], id_of($MAX_TICK - 1, 4095), 'the last ID of .207 is ' . id_of($MAX_TICK - 1, 4095));

# Not the end yet: .208 is free, but the clock has to reach it first.
my $r = bounded('SET snowflake.max_wait_ms = 200; SELECT snowflake_next();');
is($r->{sqlstate}, '55000', 'frozen at .207, lead 0: refused for want of a free timestamp, not as the end')
  or diag("stderr: $r->{stderr}");
like($r->{message} // '', qr/no timestamp free/, 'frozen at .207, lead 0: the message says so');

my @b = end_ids("$lead1 SELECT snowflake_next_n(4095);",
	'frozen at .207, lead 1 ms: snowflake_next_n(4095) in the last ms', 4095);
is($b[0], id_of($MAX_TICK, 0), 'the first ID of .208 is ' . id_of($MAX_TICK, 0));

end_refused("$lead1 SELECT snowflake_next_n(2);",
	'one ID left: snowflake_next_n(2) would cross the end');

my @c = end_ids("$lead1 SELECT snowflake_next();", 'the very last ID', 1);
is($c[0], id_of($MAX_TICK, 4095), 'the last ID is ' . id_of($MAX_TICK, 4095));
is(id_unix_ms($c[0]), $LAST_MS, 'the last ID decodes to Unix ms 3487858230208');

end_refused("$lead1 SELECT snowflake_next();", 'after the last ID: snowflake_next()');
end_refused("$lead1 SELECT snowflake_next_n(1);", 'after the last ID: snowflake_next_n(1)');

# --- The clock at the last ms, then past it.

$t->set_clock('2080-07-10 17:30:30.208');
end_refused('SELECT snowflake_next();', 'frozen at .208, lead 0');
$t->set_clock('2081-01-01 00:00:00');
end_refused('SET snowflake.max_lead_ms = 3600000; SELECT snowflake_next();',
	'clock in 2081, lead 1 h');
end_refused('SELECT snowflake_next_n(10);', 'clock in 2081: snowflake_next_n(10)');

my $s = $t->status;
cmp_ok($s->{reserved_until_ms}, '<=', $LAST_MS,
	'snowflake_status(): the durable mark does not pass the last Snowflake ms');
is($s->{last_id}, $c[0], 'snowflake_status(): the last ID issued is the last one');

cmp_ok($t->state_file_mark, '<=', $MAX_TICK, 'the state file\'s mark does not pass the last tick');

# A clean restart at the end: the file written at shutdown loads (not damaged).
$t->restart;
is($t->query('SELECT state FROM snowflake_state()'), 'ok',
	'after a clean restart at the end: the state file is sound');
cmp_ok($t->state_file_mark, '<=', $MAX_TICK, 'after the restart: the mark does not pass the last tick');
end_refused('SELECT snowflake_next();', 'after a clean restart at the end');

# --- A clock before the epoch, on a fresh cluster (mark 0, nothing issued).

my $e = SnowflakeTest->new('before_epoch');
$e->start;
$e->query('CREATE EXTENSION snowflake');
for my $case (
	[ '2009-01-01 00:00:00', 'clock in 2009', '' ],
	[ '2009-01-01 00:00:00', 'clock in 2009, lead 1 h', 'SET snowflake.max_lead_ms = 3600000;' ],
	[
		'2010-11-04 01:32:54.657', 'clock 10 min before the epoch, lead 1 h',
		'SET snowflake.max_lead_ms = 3600000;'
	])
{
	my ($clock, $what, $setup) = @$case;
	$e->set_clock($clock);
	my $r = $e->run("SET snowflake.max_wait_ms = 200; $setup SELECT snowflake_next();");
	my @got = grep { /^\d+$/ } split /\n/, $r->{stdout};
	{
		isnt($r->{ret}, 0, "$what: refused");
		is(scalar(@got), 0, "$what: no ID returned")
		  or diag('returned ' . join(' ', map { "$_ (Unix ms " . id_unix_ms($_) . ')' } @got));
	}
	ok(!grep({ id_unix_ms($_) <= $SnowflakeTest::EPOCH_UNIX_MS } @got),
		"$what: no ID stamped with the epoch itself");
	next unless $r->{ret};
	is($r->{sqlstate}, '55000', "$what: SQLSTATE 55000");
	like(($r->{message} // '') . ' ' . ($r->{detail} // ''), qr/epoch|2010-11-04/,
		"$what: the error says the clock is before the epoch");
}
$e->stop;

$t->summary;
$t->stop;
done_testing();
