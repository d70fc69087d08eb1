# 300_migrate_clock.pl: snowflake_migrate_column()'s check that existing values sort below
# new IDs uses the time the generator trusts, not the wall clock (issue 18, item 6).
#
# The clock jumps 2 h forward and generation is held.  A table already holds an ID from 1 h
# ahead (rows written by another node, or before a restore).  Compared with the wall clock
# (1.2), that ID looks old and the column migrates; once the hold ends the generator issues IDs
# below it.  1.3 refuses while generation is held, and after the hold compares with the
# generator's time; once the new time is accepted, the same table migrates.
use strict;
use warnings FATAL => 'all';
use FindBin;
use lib $FindBin::RealBin;
use SnowflakeTest;
use Test::More;

my $t = SnowflakeTest->new('migclock');
$t->start;
$t->query('CREATE EXTENSION snowflake');
$t->query('SELECT snowflake_next()');
my $ahead = $t->query(q{SELECT snowflake_encode(now() + interval '1 hour', 31, 31, 0)});
$t->query(qq{CREATE TABLE m (id bigserial PRIMARY KEY, v text);
INSERT INTO m (v) VALUES ('old');
INSERT INTO m VALUES ($ahead, 'from 1 h ahead')});

my $log_at = -s $t->node->logfile;
$t->set_clock('+2h');
ok($t->node->wait_for_log(qr/the system clock jumped \d+ ms forward, more than snowflake\.max_clock_jump_ms/, $log_at),
	'the 2 h jump holds generation');
is($t->query('SELECT bool_or(clock_held) FROM snowflake_status()'), 't', 'snowflake_status(): held');

# Held: refused, nothing changed.
my $r = $t->run(q{SELECT snowflake_migrate_column('m');});
is($r->{sqlstate}, '55000', 'while generation is held the migration refuses (55000)');
like($r->{message}, qr/cannot check existing values while generation is held for a forward clock jump/,
	'the message says generation is held');
like($r->{hint}, qr/SELECT <extension schema>\.snowflake_accept_clock\(\) \(with search_path pinned, as the README's section Functions shows\)/, 'the hint names snowflake_accept_clock(), qualified (round 15)');
is($t->query(q{SELECT format_type(atttypid, NULL) || ' ' || pg_get_expr(adbin, adrelid)
FROM pg_attribute JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum
WHERE attrelid = 'm'::regclass AND attname = 'id'}),
	q{bigint nextval('m_id_seq'::regclass)}, 'the column is unchanged');

# The clock comes back: the hold ends, and the ID from 1 h ahead is above the new IDs.
$log_at = -s $t->node->logfile;
$t->set_clock('+0');
$t->query('SELECT snowflake_next()');
is($t->query('SELECT bool_or(clock_held) FROM snowflake_status()'), 'f', 'the clock back: no longer held');
$r = $t->run(q{SELECT snowflake_migrate_column('m');});
is($r->{sqlstate}, '55000', 'back on the trusted time, the ID from 1 h ahead is refused');
like($r->{message}, qr/existing values of col "id" of table public\.m are not below the IDs snowflake_next\(\) issues now/,
	'the message says the values are not below the new IDs');

# Jump again and accept the new time: the generator's time is 2 h ahead, and the table migrates.
$log_at = -s $t->node->logfile;
$t->set_clock('+2h');
ok($t->node->wait_for_log(qr/the system clock jumped \d+ ms forward/, $log_at), 'held again');
$t->query('SELECT snowflake_accept_clock()');
is($t->query('SELECT bool_or(clock_held) FROM snowflake_status()'), 'f', 'accepted: not held');
is($t->query(q{SELECT snowflake_migrate_column('m') ->> 'max_existing_id'}), $ahead,
	'with the new time accepted, the column migrates: its largest value sorts below the new IDs');
my $new = $t->query(q{INSERT INTO m (v) VALUES ('new') RETURNING id});
cmp_ok($new, '>', $ahead, 'a new row sorts above the ID from 1 h ahead');

$t->stop;
done_testing();
