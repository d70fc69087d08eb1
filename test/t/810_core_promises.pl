# 810_core_promises.pl: README promises (test/promises.txt, core rows) that no other test
# noticed breaking, with a faked wall clock (libfaketime; the boot clock stays real).
#
# - P18: a clock exactly 1 ms before the epoch is refused as before the epoch (55000), with
#   and without a lead, and no ID is made up;
# - P10: snowflake_status() under a frozen clock: clock_offset_ms is exactly the frozen ms
#   minus the last ID's ms (negative while IDs run ahead), refusals count refused calls and
#   waits does not; a step back sets clock_rollbacks and max_rollback_ms to the step;
# - P24: the WARNINGs of docs/operations.md#monitoring: a rollback's start and end, the 10th
#   refused call in a row and the first ID after the streak;
# - P16: snowflake.reservation_ms refuses 9 (its range starts at 10) and takes 10;
# - the registry check (README errors table, 42501; outsiders' mutants X37, X38): a trigger
#   enabled ALWAYS or REPLICA whose function an untrusted role owns is refused, a view is no
#   registry.  The registry's own rows (R) are its owner's; this only kills the two mutants.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

# --- P18: 1 ms before the epoch (the epoch is 2010-11-04 01:42:54.657 UTC).

my $e = SnowflakeTest->new('epoch_minus_1');
$e->start;
$e->query('CREATE EXTENSION snowflake');
$e->set_clock('2010-11-04 01:42:54.6565');
is($e->query(q{SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint}),
	'1288834974656', 'the faked clock reads exactly 1 ms before the epoch');
for my $case ([ 'lead 0', '' ], [ 'lead 1 h', 'SET snowflake.max_lead_ms = 3600000;' ])
{
	my ($what, $setup) = @$case;
	my $r = $e->run("SET snowflake.max_wait_ms = 200; $setup SELECT snowflake_next();");
	my @got = grep { /^\d+$/ } split /\n/, $r->{stdout};
	is(scalar(@got), 0, "1 ms before the epoch, $what: no ID")
	  or diag("returned @got");
	is($r->{sqlstate}, '55000', "1 ms before the epoch, $what: SQLSTATE 55000");
	like($r->{message} // '', qr/refused: the system clock is before the Snowflake epoch, 2010-11-04 01:42:54\.657\+00/,
		"1 ms before the epoch, $what: the message says the clock is before the epoch")
	  or diag("stderr: $r->{stderr}");
	like($r->{detail} // '', qr/reads 1 ms before the epoch/, "1 ms before the epoch, $what: the detail says by 1 ms");
}
$e->stop;

# --- P10, P24: a frozen clock in the future (set before start, so the frozen clock only
# falls behind the boot clock and the clock watch sees no forward jump).

my $t = SnowflakeTest->new('status');
$t->set_clock('2030-01-01 00:00:00');
$t->start;
$t->query('CREATE EXTENSION snowflake');

my $out = $t->query(q{
SET snowflake.max_lead_ms = 3600000;
SELECT max(id) FROM snowflake_next_n(40960) id;
});
my $last = $out;
is($t->query(qq{
SELECT clock_offset_ms < 0,
       clock_offset_ms = floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - snowflake_unix_ms($last),
       last_id = $last, last_ts = snowflake_timestamp($last), last_sequence = snowflake_sequence($last)
FROM snowflake_status() WHERE datacenter_id = 1 AND machine_id = 1}),
	't|t|t|t|t', 'P10: IDs 9 ms ahead of a frozen clock: clock_offset_ms is the clock minus the last ID\'s ms, negative; last_id, last_ts, last_sequence are the last ID\'s');

# Refusals: more IDs than the frozen ms allows, no wait allowed.
my $before = $t->status;
my $r = $t->run('SET snowflake.max_wait_ms = 0; SELECT count(*) FROM snowflake_next_n(4097);');
isnt($r->{ret}, 0, 'P10: a run the frozen clock cannot hold is refused');
my $after = $t->status;
is($after->{refusals} - $before->{refusals}, 1, 'P10: the refusal is counted in refusals');
is($after->{waits} - $before->{waits}, 0, 'P10: a refusal that never slept is not counted in waits');

# A slot that only refused has a row too.
$r = $t->run('SET snowflake.datacenter_id = 30; SET snowflake.machine_id = 29; SET snowflake.max_wait_ms = 0; '
	  . 'SELECT count(*) FROM snowflake_next_n(4097);');
isnt($r->{ret}, 0, 'P10: a run on a fresh slot refused');
my $only = $t->status(30, 29);
ok(defined $only, 'P10: a slot that only refused has a snowflake_status() row');
is($only->{refusals}, 1, 'P10: ... with its refusal counted') if defined $only;

# A step back of 5 s: counted, its size recorded, one WARNING when it begins.
$t->set_clock('2030-01-01 00:00:00.1005');
$t->query('SELECT snowflake_next()');
$t->set_clock('2029-12-31 23:59:55');
$before = $t->status;
$r = $t->run('SET snowflake.max_wait_ms = 0; SELECT snowflake_next();');
isnt($r->{ret}, 0, 'P24: a call 5 s behind the IDs, no wait allowed: refused');
like($r->{stderr}, qr/WARNING:.*the system clock went back \d+ ms for datacenter 1, machine 1/,
	'P24: the call that sees the step back gets the rollback WARNING');
$after = $t->status;
is($after->{clock_rollbacks} - $before->{clock_rollbacks}, 1, 'P10: the step back is counted in clock_rollbacks');
cmp_ok($after->{max_rollback_ms}, '>=', 5000, 'P10: max_rollback_ms holds the 5 s step');

# Refused calls in a row: the 10th gets the streak WARNING (the one above was the first).
my $streak = 0;
for my $n (2 .. 10)
{
	$r = $t->run('SET snowflake.max_wait_ms = 0; SELECT snowflake_next();');
	$streak++ if $r->{stderr} =~ /WARNING:.*10 calls in a row refused for datacenter 1, machine 1/;
	is($streak, 0, "P24: no streak WARNING at refused call $n") if $n < 10;
}
is($streak, 1, 'P24: the 10th refused call in a row gets the streak WARNING');

# The clock back past the IDs: the rollback ends and the node issues again, each with a WARNING.
$t->set_clock('2030-01-01 00:00:01');
$r = $t->run('SELECT snowflake_next();');
is($r->{ret}, 0, 'P24: with the clock past the IDs again, an ID is issued');
like($r->{stderr}, qr/WARNING:.*the system clock is back at the highest time seen for datacenter 1, machine 1/,
	'P24: the rollback\'s end is a WARNING');
like($r->{stderr}, qr/WARNING:.*datacenter 1, machine 1 issues IDs again after \d+ refused calls in a row/,
	'P24: the end of the refusal streak is a WARNING');

# P17: the IDs are at the frozen ms itself (not ahead of it): a run that needs the next ms,
# with no wait allowed, is "no timestamp free", not "the clock is behind the IDs".
$r = $t->run('SET snowflake.max_wait_ms = 0; SELECT count(*) FROM snowflake_next_n(4096);');
is($r->{sqlstate}, '55000', 'P17: a run past the frozen ms, no wait allowed: 55000');
like($r->{message} // '', qr/refused: no timestamp free within snowflake\.max_wait_ms \(0 ms\)/,
	'P17: ... "no timestamp free" when the last ID is at the clock\'s ms')
  or diag("stderr: $r->{stderr}");

# --- P16: snowflake.reservation_ms starts at 10 ms.
$r = $t->run('ALTER SYSTEM SET snowflake.reservation_ms = 9;');
is($r->{sqlstate}, '22023', 'P16: reservation_ms = 9 is refused (22023)');
like($r->{message} // '', qr/9( ms)? is outside the valid range for parameter "snowflake\.reservation_ms" \(10( ms)? \.\. 3600000( ms)?\)/,
	'P16: ... naming its range');
$r = $t->run('ALTER SYSTEM SET snowflake.reservation_ms = 10; ALTER SYSTEM RESET snowflake.reservation_ms;');
is($r->{ret}, 0, 'P16: reservation_ms = 10 is accepted');

# --- README errors table (42501): since 1.3 a registry may carry no trigger at all, whoever
# owns its function, whether enabled as usual, ALWAYS or REPLICA (a replica trigger fires under
# session_replication_role = replica), or disabled (it can be enabled again at any time).
$t->query(q{
CREATE ROLE sf_810_untrusted;
CREATE TABLE public.reg810 (datacenter_id int, machine_id int, owner text, claimed_at timestamptz,
    expires_at timestamptz, high_water_ms bigint, PRIMARY KEY (datacenter_id, machine_id));
CREATE FUNCTION public.f810() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
ALTER FUNCTION public.f810() OWNER TO sf_810_untrusted;
CREATE TRIGGER t810 BEFORE UPDATE ON public.reg810 FOR EACH ROW EXECUTE FUNCTION public.f810();
});
for my $mode ('ENABLE', 'ENABLE ALWAYS', 'ENABLE REPLICA', 'DISABLE')
{
	$r = $t->run("ALTER TABLE public.reg810 $mode TRIGGER t810; SELECT snowflake_check_registry('public.reg810');");
	is($r->{sqlstate}, '42501', "a registry trigger ($mode): 42501");
	like($r->{message} // '', qr/registry public\.reg810 carries trigger t810/,
		"... ($mode) naming the registry and the trigger");
}
$r = $t->run("CREATE VIEW public.v810 AS SELECT * FROM public.reg810; SELECT snowflake_check_registry('public.v810');");
is($r->{sqlstate}, '42809', 'a view as registry: refused (42809)');
$r = $t->run("DROP VIEW public.v810; DROP TRIGGER t810 ON public.reg810; ALTER TABLE public.reg810 DROP COLUMN high_water_ms; "
	  . "SELECT snowflake_check_registry('public.reg810');");
is($r->{sqlstate}, '42703', 'a registry made for 1.1 (no high_water_ms): refused (42703)');
like($r->{message} // '', qr/registry public\.reg810 has no column high_water_ms/, '... saying so');

$t->stop;
done_testing();
