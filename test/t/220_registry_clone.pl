# 220_registry_clone.pl: a block-level clone or snapshot of a registry holder
# must not generate under the holder's claim (issue 17, duplicates through
# copies).  A copy made below the file system keeps the system identifier, the
# data directory's inode and its birth time, so snowflake_server_identity() is
# the same.  Here the copy is a cold file-level copy of the holder whose
# stat() of the data directory is made to report the holder's inode and birth
# time (fake_identity.c): to the extension and the registry it is a clone.
#
# Three servers: the registry (reached through postgres_fdw), the holder and
# its clone; both writers run under the clock shim, so their clocks can stand
# at the same ms (then a clone that generates repeats the holder's IDs) or
# jump past a lease.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(time);

my $LEASE_MS = 3_600_000;    # renewals at a third of it: none by themselves while the test runs

my $dir = PostgreSQL::Test::Utils::tempdir();
my $shim = "$dir/fake_identity.so";
system('cc', '-shared', '-fPIC', '-O2', '-o', $shim, "$FindBin::RealBin/fake_identity.c", '-ldl') == 0
  or BAIL_OUT('could not build the identity shim');

my $r = PostgreSQL::Test::Cluster->new('registry');
$r->init;
$r->start;
$r->safe_psql('postgres', q{CREATE TABLE public.snowflake_registry (
    datacenter_id int NOT NULL, machine_id int NOT NULL, owner text NOT NULL,
    claimed_at timestamptz NOT NULL, expires_at timestamptz NOT NULL, high_water_ms bigint,
    PRIMARY KEY (datacenter_id, machine_id))});
my $r_user = $r->safe_psql('postgres', 'SELECT current_user');
my ($host, $port) = ($r->host, $r->port);

my $h = SnowflakeTest->new(
	'holder',
	clock => 'shim',
	restart_after_crash => 1,
	conf => qq(
snowflake.datacenter_id = 7
snowflake.machine_id = 3
snowflake.require_claim = on
snowflake.registry = 'public.snowflake_registry'
snowflake.registry_role = 'claimer'
snowflake.registry_lease_ms = $LEASE_MS
snowflake.max_clock_jump_ms = 0    # the clocks jump past leases here
));
$h->start;
$h->query(qq{
CREATE EXTENSION snowflake;
CREATE EXTENSION postgres_fdw;
CREATE ROLE claimer;
GRANT EXECUTE ON FUNCTION public.snowflake_claim_node(regclass, interval),
    public.snowflake_note_claim(int, int, timestamptz, bigint),
    public.snowflake_release_node(regclass), public.snowflake_note_release(int, int) TO claimer;
CREATE SERVER fleet FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '$host', port '$port', dbname 'postgres', connect_timeout '10');
CREATE USER MAPPING FOR CURRENT_USER SERVER fleet OPTIONS (user '$r_user');
CREATE USER MAPPING FOR claimer SERVER fleet OPTIONS (user '$r_user', password_required 'false');
IMPORT FOREIGN SCHEMA public LIMIT TO (snowflake_registry) FROM SERVER fleet INTO public;
GRANT SELECT, INSERT, UPDATE ON public.snowflake_registry TO claimer;
});

# Waits until the server generates again (its worker claimed); true if it did.
sub generates
{
	my ($t) = @_;
	return $t->node->poll_query_until('postgres', 'SELECT snowflake_next() > 0');
}

# The same, once what kept the worker from claiming is gone (a clock moved past
# a lease, the extension made): a reload wakes it for a round at once (it sets
# the worker's latch; the configuration stays the same), where its own timer
# would try again only 5 s after the round that failed (a tenth of the lease,
# at most 5 s).  The round is the worker's ordinary one.
sub generates_after_wake
{
	my ($t) = @_;
	$t->node->reload;
	return generates($t);
}

sub owner { return $r->safe_psql('postgres', 'SELECT owner FROM public.snowflake_registry'); }

ok(generates_after_wake($h), 'the holder claims its node and generates');
$h->ids('SELECT snowflake_next() FROM generate_series(1, 100)', 'holder', count => 100);
my $identity = $h->query('SELECT public.snowflake_server_identity()');
like(owner(), qr{^\Q$identity\E/[0-9a-f]{16}$}, 'the registry names the holder as identity/claim token');

# A crash of a server process: the postmaster makes shared memory anew and keeps
# the claim tokens it issued, so the holder renews its own claim at once.
my $before = owner();
my $offset = -s $h->node->logfile;
kill 'KILL', $h->child_pid(qr/snowflake registry claimer/);
ok($h->node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset), 'a crash: shared memory made anew');
ok(generates($h), 'after the crash restart the holder renews its own claim without waiting for its lease');
is(owner(), $before, 'under the same claim token (one per node and postmaster start; the crash restart kept the postmaster)');
$h->ids('SELECT snowflake_next() FROM generate_series(1, 10)', 'the holder after its crash restart', count => 10);

# --- The clone: a cold copy that reports the holder's inode and birth time.

my ($ino, $bsec, $bnsec) = $h->query('SELECT this_directory FROM snowflake_state()') =~ /^(\d+):(\d+)\.(\d{9})$/
  or BAIL_OUT('no birth time for the data directory on this file system');
$h->stop;
$h->node->backup_fs_cold('cold');
$h->start;
ok(generates($h), 'the holder, restarted, generates again');
my $c = SnowflakeTest->new('clone', from_backup => [ $h, 'cold' ], standby => 0, clock => 'shim');
$c->set_env([$shim], SF_FAKE_INO => $ino, SF_FAKE_BTIME => $bsec, SF_FAKE_BTIME_NSEC => $bnsec + 0);
$offset = 0;
my $claimed_at = $r->safe_psql('postgres', 'SELECT claimed_at FROM public.snowflake_registry');
$c->start;
is($c->query('SELECT public.snowflake_server_identity()'), $identity, 'the clone has the holder\'s identity');
is($c->query('SELECT state FROM snowflake_state()'), 'ok', 'and takes its data directory for its own');

# The clone's worker has had its first round once it logged a refusal, or
# (on a build without claim tokens) renewed the holder's claim.
my $round;
for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
{
	$round = 'refused', last
	  if slurp_file($c->node->logfile) =~ /snowflake could not claim this server's node in registry/;
	$round = 'renewed', last
	  if $r->safe_psql('postgres', "SELECT claimed_at > '$claimed_at' FROM public.snowflake_registry") eq 't';
	Time::HiRes::usleep(100_000);
}
is($round, 'refused', 'the clone\'s worker does not renew the holder\'s claim');

# Both clocks at the same ms: a clone that generates repeats the holder's IDs.
my $same_ms = int(time() * 1000) + 120_000;
$h->freeze_clock_ms($same_ms);
$c->freeze_clock_ms($same_ms);
my @hid = $h->ids('SELECT snowflake_next() FROM generate_series(1, 5)', 'the holder at the frozen ms', count => 5);
$c->next_refused('the clone generates nothing under the holder\'s claim (an ID it issued would repeat one of the holder\'s)', undef,
	message => qr/this server holds no current registry claim for datacenter 7, machine 3/);
like(slurp_file($c->node->logfile), qr/snowflake could not claim this server's node in registry "public.snowflake_registry": datacenter 7, machine 3 is claimed under this server's identity with a claim token this server did not issue/,
	'the clone\'s worker says why');
like(slurp_file($c->node->logfile), qr/DETAIL:  The registry public.snowflake_registry names this server's identity \Q$identity\E with claim token [0-9a-f]{16}, its lease ending .*a block-level clone or snapshot of this server/,
	'the detail names the identity, the token and the two explanations');
my ($ret, $out, $err) = $c->node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT public.snowflake_claim_node('public.snowflake_registry'::regclass, '1 hour'::interval)");
like($err, qr/55000: datacenter 7, machine 3 is claimed under this server's identity with a claim token this server did not issue/,
	'a by-hand claim on the clone is refused too (55000)');
like($err, qr/HINT:  If this server restarted, wait: it claims the node once that lease has ended/, 'with a hint for both cases');
($ret, $out, $err) = $c->node->psql('postgres',
	"SELECT public.snowflake_release_node('public.snowflake_registry'::regclass)");
is($out, 'f', 'the clone cannot release the holder\'s claim');
$h->ids('SELECT snowflake_next() FROM generate_series(1, 5)', 'the holder still generates', count => 5);
# On from there (the IDs at the frozen ms are ahead of the real clock).
$h->set_clock_ms(130_000);
$c->set_clock_ms(130_000);

# --- The holder stalls past its lease (as seen by the clone, whose clock is
# ahead); the clone takes the node over.  The holder's next renewal finds the
# clone's token under its own identity: it stops at once, for good.

$offset = -s $c->node->logfile;
$c->set_clock_ms($LEASE_MS + 200_000);
ok(generates_after_wake($c), 'once the holder\'s lease has ended (on the clone\'s clock), the clone takes the node over');
my $clone_owner = owner();
$c->ids('SELECT snowflake_next() FROM generate_series(1, 5)', 'the clone', count => 5);
$h->ids('SELECT snowflake_next()', 'the holder, its lease not ended on its own clock', count => 1);
($ret, $out, $err) = $h->node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT public.snowflake_claim_node('public.snowflake_registry'::regclass, '1 hour'::interval)");
like($err, qr/55000: another server renewed this server's claim on datacenter 7, machine 3: a block-level clone or snapshot of this server may be running/,
	'the holder\'s renewal finds another token under its identity, and names the situation (55000)');
like($err, qr/DETAIL:  The registry row names this server's identity .* with claim token [0-9a-f]{16}, which this server did not issue/,
	'the detail names the token');
$h->next_refused('the holder stops generating at once, its lease not ended', undef,
	message => qr/this server holds no current registry claim/);
is(owner(), $clone_owner, 'the registry row stays the clone\'s');
($ret, $out, $err) = $h->node->psql('postgres',
	"SELECT public.snowflake_claim_node('public.snowflake_registry'::regclass, '1 hour'::interval)");
like($err, qr/another server renewed this server's claim/, 'the holder claims no more');
$h->next_refused('and generates nothing', undef);

# A crash restart (shared memory made anew by the same postmaster) keeps it fenced.
$offset = -s $h->node->logfile;
kill 'KILL', $h->child_pid(qr/snowflake registry claimer/);
ok($h->node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset), 'the holder re-initialises after a crash');
ok($h->node->wait_for_log(qr/another server renewed this server's claim on datacenter 7, machine 3/, $offset),
	'after the crash the holder still refuses to claim');
$h->next_refused('and generates nothing', undef);

# The clone crashes (no release); once its lease ends the holder, restarted, takes the node back.
my @cid = $c->ids('SELECT snowflake_next() FROM generate_series(1, 5)', 'the clone, last IDs', count => 5);
$c->kill9;
$h->stop;
$offset = 0;
$h->start;
ok($h->node->wait_for_log(qr/is claimed under this server's identity with a claim token this server did not issue/, $offset),
	'the restarted holder waits for the clone\'s lease');
$h->set_clock_ms(2 * $LEASE_MS + 400_000);
ok(generates_after_wake($h), 'and takes the node over once it has ended');
my @after = $h->ids('SELECT snowflake_next() FROM generate_series(1, 5)', 'the holder after the clone', count => 5);
cmp_ok($after[0], '>', $cid[-1], 'above every ID the clone issued');

# The postmaster killed (no exit of its own): it keeps no tokens, so the next
# start cannot tell itself from a copy, and waits out its own lease.
my $row = $r->safe_psql('postgres', 'SELECT owner, expires_at FROM public.snowflake_registry');
$h->kill9;
is($r->safe_psql('postgres', 'SELECT owner, expires_at FROM public.snowflake_registry'), $row,
	'a killed postmaster leaves its claim in the registry');
$offset = -s $h->node->logfile;
$h->start;
ok($h->node->wait_for_log(qr/is claimed under this server's identity with a claim token this server did not issue/, $offset),
	'after its postmaster was killed the holder waits for its own lease');
$h->next_refused('and generates nothing meanwhile', undef, message => qr/holds no current registry claim/);
$h->set_clock_ms(3 * $LEASE_MS + 600_000);
ok(generates_after_wake($h), 'it claims the node again once that lease has ended');
my @later = $h->ids('SELECT snowflake_next() FROM generate_series(1, 5)', 'the holder after its unclean restart', count => 5);
cmp_ok($later[0], '>', $after[-1], 'above its own IDs');

# A clean shutdown keeps the claim in the registry and the postmaster's tokens
# in the data directory: the next start renews at once.
$row = $r->safe_psql('postgres', 'SELECT owner, expires_at FROM public.snowflake_registry');
$h->stop;
ok(-e $h->data_dir . '/snowflake.claim_tokens', 'a clean shutdown keeps the claim tokens');
is($r->safe_psql('postgres', 'SELECT owner, expires_at FROM public.snowflake_registry'), $row,
	'and leaves the claim in the registry (no other server takes the node meanwhile)');
$h->start;
ok(generates($h), 'and renews its claim at once');
isnt($r->safe_psql('postgres', 'SELECT owner FROM public.snowflake_registry'), (split /\|/, $row)[0], 'under a new token');

# So does an immediate shutdown (the postmaster exits once all its children have).
$h->stop('immediate');
ok(-e $h->data_dir . '/snowflake.claim_tokens', 'an immediate shutdown keeps the claim tokens too');
$h->start;
ok(generates($h), 'and the next start renews at once');

done_testing();
