# 222_registry_tokens.pl: the claim tokens against a holder's own failures
# (outside attack on issue 17, round 3).
#
# - Claims that fail or roll back, however many, do not make a holder take its
#   own row for a copy's: a postmaster claims a node with one token, drawn at
#   its first claim of the node (the ring of the tokens it counts as its own
#   held 64: 64 rolled-back claims pushed the row's token out, and the holder
#   fenced itself until a restart, with no copy running).
# - A FIFO in place of snowflake.claim_tokens does not hold the postmaster in
#   open(): the server starts (and stops), the tokens count as lost, and the
#   claim waits out the lease as after a crash.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $t = SnowflakeTest->new('tokens', conf => "snowflake.require_claim = on\nsnowflake.max_wait_ms = 0\n");
$t->start;
$t->query(q{
CREATE EXTENSION snowflake;
CREATE TABLE public.reg (
    datacenter_id int NOT NULL,
    machine_id    int NOT NULL,
    owner         text NOT NULL,
    claimed_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    high_water_ms bigint,
    PRIMARY KEY (datacenter_id, machine_id)
);
});
my $claim = q{SELECT public.snowflake_claim_node('public.reg'::pg_catalog.regclass, '1 minute'::interval) IS NOT NULL;};

is($t->query($claim), 't', 'the first claim');
my $owner = $t->query('SELECT owner FROM public.reg');
$t->ids('SELECT snowflake_next() FROM generate_series(1, 10)', 'under the claim', count => 10);

# 70 claims that roll back (more than the ring holds), then 70 that fail in the registry.
my $rb = $t->run(join("\n", map { "BEGIN; $claim ROLLBACK;" } 1 .. 70));
is($rb->{ret}, 0, '70 claims that roll back, one after another, all renew') or diag($rb->{stderr});
$t->query(q{ALTER TABLE public.reg ADD CONSTRAINT outage CHECK (claimed_at < '2000-01-01') NOT VALID;});
for (1 .. 70)
{
	my $r = $t->run($claim);
	like($r->{stderr}, qr/violates check constraint "outage"/, "failed claim $_ fails in the registry") if $_ == 1 || $_ == 70;
}
$t->query('ALTER TABLE public.reg DROP CONSTRAINT outage;');
my $r = $t->run($claim);
is($r->{ret}, 0, 'after 70 rolled-back and 70 failed claims, the holder still renews its own claim')
  or diag($r->{stderr});
is($t->query('SELECT owner FROM public.reg'), $owner, 'under the same token (one per node and postmaster start)');
$t->ids('SELECT snowflake_next() FROM generate_series(1, 10)', 'and generates', count => 10);

# A clean restart draws a new token (a copy of the running server holds none of them).
$t->restart;
is($t->query($claim), 't', 'after a clean restart the claim renews at once');
isnt($t->query('SELECT owner FROM public.reg'), $owner, 'under a token of the new start');

# A FIFO in place of the tokens file: the server starts and stops; the claim waits.
$t->stop;
my $tokens = $t->data_dir . '/snowflake.claim_tokens';
unlink $tokens;
system('mkfifo', $tokens) == 0 or die "mkfifo: $!";
chmod 0600, $tokens;
my ($uid, $gid) = (stat($t->data_dir))[4, 5];
chown $uid, $gid, $tokens;
is($t->start(fail_ok => 1), 1, 'a FIFO at snowflake.claim_tokens: the server starts');
$r = $t->run($claim);
like($r->{stderr}, qr/claimed under this server's identity with a claim token this server did not issue/,
	'its tokens count as lost: the claim waits out the lease, as after a crash');
$t->stop;
is($t->start(fail_ok => 1), 1, 'and starts again with the FIFO still there (it held no claim to keep)');
$t->stop;

$t->summary;
done_testing();
