# 305_migrate_lift.pl: after its max() check, snowflake_migrate_column() lifts this server's node
# and the durable mark above the largest existing ID (attack on issue 18's fix, F4).
#
# A forward step of the clock smaller than snowflake.max_clock_jump_ms is taken in silently: the
# generator trusts the new time, and the check accepts IDs from up to that time.  Rows from that
# "future" (written by another node, or planted) pass the check.  When the clock comes back, the
# generator would issue IDs below them (duplicates, or new IDs that sort below old ones).  With
# the lift, the next ID sorts above every existing one: it waits or refuses while the clock is
# behind, and the mark that survives a restart covers the lifted time.
use strict;
use warnings FATAL => 'all';
use FindBin;
use lib $FindBin::RealBin;
use SnowflakeTest;
use Test::More;

my $t = SnowflakeTest->new('miglift');
$t->start;
$t->query('CREATE EXTENSION snowflake');
$t->query(q{CREATE TABLE t3 (id bigserial PRIMARY KEY, note text);
INSERT INTO t3 (note) VALUES ('a')});
$t->query('SELECT snowflake_next()');

# 50 s forward: under snowflake.max_clock_jump_ms (60 s), taken in silently.
# No ID is issued at the new time: the generator's word stays behind the rows below.
$t->set_clock('+50s');
is($t->query('SELECT bool_or(clock_held) FROM snowflake_status()'), 'f', 'a 50 s step is not held');
$t->query(q{INSERT INTO t3 (id, note)
SELECT snowflake_encode(g, 1, 1, 0), 'planted'
FROM generate_series(now() - interval '48 s', now() - interval '5 s', interval '1 ms') AS g});
my $max = $t->query(q{SELECT snowflake_migrate_column('t3') ->> 'max_existing_id'});
is($max, $t->query('SELECT max(id) FROM t3 WHERE note = \'planted\''),
	'the migration accepts the rows from up to the trusted time');

# Durably: the mark written to disk covers the largest existing ID's ms.
my $st = $t->status(1, 1);
cmp_ok($st->{reserved_until_ms}, '>=', SnowflakeTest::id_unix_ms($max),
	'the durable mark is at or above the largest existing ID when the call returns');

# The clock comes back: no new ID below the largest existing one.
$t->set_clock('+0');
my $r = $t->run(q{SET snowflake.max_wait_ms = 0;
INSERT INTO t3 (note) VALUES ('new') RETURNING id;});
isnt($r->{sqlstate} // '', '23505', 'clock back: no duplicate key');
ok(($r->{ret} == 0 && $r->{stdout} =~ /^(\d+)$/m && $1 > $max) || ($r->{ret} != 0 && ($r->{sqlstate} // '') eq '55000'),
	'clock back: the next ID sorts above the largest existing one, or waits and refuses (55000)')
  or diag("ret $r->{ret}, stdout $r->{stdout}, stderr $r->{stderr}, max $max");

# Past the largest existing ID again: new rows sort above it.
$t->set_clock('+55s');
my $new = $t->query(q{INSERT INTO t3 (note) VALUES ('later') RETURNING id});
cmp_ok($new, '>', $max, 'once the clock passes it, new rows sort above the largest existing ID');

# snowflake_migrate_lift() never lifts past the time the generator trusts.
$r = $t->run(q{SELECT snowflake_migrate_lift(snowflake_encode(now() + interval '1 hour', 1, 1, 0))});
is($r->{sqlstate}, '22023', 'lifting past the trusted time is refused (22023)');
like($r->{message}, qr/max_id \d+ is above the IDs snowflake_next\(\) issues now/, 'the message names max_id');

$t->stop;
done_testing();
