# 710_pg_upgrade: a major-version pg_upgrade of a cluster that uses snowflake (issue 21).
#
# The old cluster runs the binaries in $SF_UPGRADE_OLD (e.g. /usr/lib/postgresql/18, with the
# extension built and installed for that version), the new one the version under test (the same
# major version works too: 15 -> 15 on the host).  Without SF_UPGRADE_OLD the test is skipped:
# run-tests' "upgrade" suite sets it (in the 19 root, where Debian installs 18 and 19 side by side,
# to 18).
#
# What it checks: the old cluster makes IDs (a table keyed by snowflake_next()); pg_upgrade
# --check accepts the pair, pg_upgrade runs; on the new version the rows are there, the extension
# is at the same version and works (encode/decode agree, a new ID is above every old one), and the
# node's settings carried in postgresql.conf still apply.
#
# The durable mark: pg_upgrade copies neither the state file nor WAL, so the documented step
# (docs/failover.md, "Upgrades") copies the old cluster's snowflake.state to
# snowflake.state.import in the new data directory before its first start.  The old cluster runs
# with its clock an hour ahead (libfaketime), so its IDs lie an hour ahead of the new cluster's
# clock: the new cluster must start above them (refusing until its clock passes them), never
# below.
use strict;
use warnings FATAL => 'all';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $old_path = $ENV{SF_UPGRADE_OLD} // '';
plan skip_all => 'SF_UPGRADE_OLD (the old PostgreSQL installation) is not set' unless $old_path;
plan skip_all => "no PostgreSQL in $old_path" unless -x "$old_path/bin/postgres";

my $conf = join("\n",
	"shared_preload_libraries = 'snowflake'",
	'snowflake.datacenter_id = 7',
	'snowflake.machine_id = 13');

my $old = PostgreSQL::Test::Cluster->new('old', install_path => $old_path);
$old->init;
$old->append_conf('postgresql.conf', $conf . "\nsnowflake.max_clock_jump_ms = 0");
my $faketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
BAIL_OUT("no libfaketime at $faketime") unless -f $faketime;
{
	local $ENV{LD_PRELOAD} = $faketime;
	local $ENV{FAKETIME} = '+1h';
	local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
	local $ENV{FAKETIME_NO_CACHE} = '1';
	local $ENV{NO_FAKE_STAT} = '1';
	$old->start;
}
my $old_version = $old->safe_psql('postgres', 'SHOW server_version_num');
$old->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_next(), item int NOT NULL);
	INSERT INTO orders (item) SELECT g FROM generate_series(1, 1000) g;
});
my $old_ext = $old->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'snowflake'});
my $old_max = $old->safe_psql('postgres', 'SELECT max(id) FROM orders');
my $old_sum = $old->safe_psql('postgres', 'SELECT sum(id)::text FROM orders');
ok($old_max > 0, "the old cluster (server_version_num $old_version) made IDs");
my $old_max_ms = $old->safe_psql('postgres', 'SELECT snowflake_unix_ms(max(id)) FROM orders');
cmp_ok($old_max_ms, '>', time() * 1000 + 1_800_000, 'the old cluster made IDs an hour ahead of the real clock');
$old->stop;

my $new = PostgreSQL::Test::Cluster->new('new');
$new->init;
$new->append_conf('postgresql.conf', $conf);
my $new_version = $new->pg_version;
cmp_ok($new_version->major, '>=', int($old_version / 10000), "the new cluster is the same or a later major version ($new_version)");

# pg_upgrade writes its logs into the current directory (pg_upgrade_output.d in the new data
# directory from 15 on): run it from a directory of our own.
my $work = PostgreSQL::Test::Utils::tempdir;
my @upgrade = (
	'pg_upgrade', '--no-sync',
	'-d', $old->data_dir, '-D', $new->data_dir,
	'-b', $old->config_data('--bindir'), '-B', $new->config_data('--bindir'),
	'-s', $new->host, '-p', $old->port, '-P', $new->port);
chdir $work or die "chdir $work: $!";
command_ok([ @upgrade, '--check' ], 'pg_upgrade --check accepts a cluster that uses snowflake');
command_ok(\@upgrade, 'pg_upgrade upgrades it');

# The documented step: the old state file, as snowflake.state.import, before the first start.
PostgreSQL::Test::Utils::system_or_bail('cp', $old->data_dir . '/snowflake.state',
	$new->data_dir . '/snowflake.state.import');
PostgreSQL::Test::Utils::system_or_bail('cp', $old->data_dir . '/snowflake.nodes',
	$new->data_dir . '/snowflake.nodes.import');
$new->start;
like(slurp_file($new->logfile), qr/snowflake imported the durable mark \d+ \(Unix ms\) from "snowflake\.state\.import"/,
	'the new cluster imported the old durable mark');
like(slurp_file($new->logfile), qr/snowflake imported the node sets of "snowflake\.nodes\.import": used datacenter 7, machine 13; retired none/,
	'and the old node sets (snowflake.nodes.import)');
my $mark_sql = 'SELECT floor(extract(epoch FROM reserved_until) * 1000)::bigint FROM snowflake_state()';
cmp_ok($new->safe_psql('postgres', $mark_sql), '>=', $old_max_ms,
	'the new cluster starts with the old durable mark, at the old IDs an hour ahead of its clock');
my ($rc, $out, $err) = $new->psql('postgres', 'SET snowflake.max_wait_ms = 500; SELECT snowflake_next();');
like($err, qr/refused: the system clock is behind the IDs already issued/,
	'a new ID refuses while the clock is behind the old IDs, instead of repeating them');
is($new->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'snowflake'}),
	$old_ext, "the extension is at the same version after the upgrade ($old_ext)");
is($new->safe_psql('postgres', 'SELECT count(*) FROM orders'), '1000', 'every row came over');
is($new->safe_psql('postgres', 'SELECT sum(id)::text FROM orders'), $old_sum, 'with the same IDs');
is($new->safe_psql('postgres', qq{
	SELECT count(*) FROM orders
	WHERE snowflake_encode(snowflake_unix_ms(id), snowflake_datacenter_id(id),
	                       snowflake_machine_id(id), snowflake_sequence(id)) <> id
	   OR snowflake_datacenter_id(id) <> 7 OR snowflake_machine_id(id) <> 13}),
	'0', 'the old IDs decode on the new version to the node that made them');
is($new->safe_psql('postgres', 'SELECT datacenter_id || \'/\' || machine_id FROM snowflake_status() LIMIT 1'),
	'7/13', "the node's settings apply on the new version");
$new->restart;
cmp_ok($new->safe_psql('postgres', $mark_sql), '>=', $old_max_ms, 'and keeps it across a restart');
$new->stop;

done_testing();
