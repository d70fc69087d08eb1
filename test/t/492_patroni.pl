# 492_patroni.pl: docs/failover.md's failover story under a real HA manager
# (issue 19 item 8): Patroni with etcd (DCS module etcd3: etcd 3.4's v3 API,
# no --enable-v2), two PostgreSQL servers with snowflake preloaded and the
# same node on both, snowflake.failover_adopt = on and synchronous_mode from
# Patroni's YAML (docs/failover.md's recipe).  Clients insert rows with
# DEFAULT snowflake_next() through a multi-host connection string with
# target_session_attrs=read-write.  The primary's Patroni and postmaster are
# killed (kill -9); Patroni promotes the standby; the clients go on there.
# Then: no ID twice among the new primary's table and every ID a client saw
# acknowledged; every ID of the new primary above the old primary's highest
# acknowledged one (the standby's clock runs 40 s behind, longer than the
# failover takes, so only the mark carried in WAL keeps it above); the old
# primary, its Patroni started again, rejoins as a standby by pg_rewind (after
# Patroni's crash recovery in single-user mode) and follows the new timeline.
# Last, a switchover back to it: with the state file pg_rewind copied from the
# new primary and nothing done by hand, it adopts and issues above every ID.
#
# Ports: PostgreSQL 6401/6402, Patroni's REST API 6405/6406, etcd 23790
# (clients) and 23791 (peers); never the defaults.  Skipped when Patroni or
# etcd is not installed (run-tests installs them on the host; the roots of
# other versions do not have them).

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use File::Path qw(make_path);
use HTTP::Tiny;
use IO::Socket::INET;
use POSIX qw(WNOHANG);
use Time::HiRes qw(usleep time);
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $patroni = '/usr/bin/patroni';
my $etcd = '/usr/bin/etcd';
for my $need ([ $patroni, 'patroni' ], [ $etcd, 'etcd-server' ])
{
	plan skip_all => "$need->[1] is not installed (Debian package $need->[1]; run-tests installs it on the host)"
	  unless -x $need->[0];
}
plan skip_all => 'python3-psycopg2 (Patroni) or python3-psycopg (the clients) is not installed'
  if system('python3', '-c', 'import psycopg2, psycopg') != 0;

my $t0 = time;
my $bindir = `pg_config --bindir`;
chomp $bindir;
# Data directories under tmp_check (a mutation run that kills this file mid-way stops the
# postmasters it finds there; Patroni starts them in sessions of their own), sockets in a short
# directory (the length limit of a socket path).
my $base = PostgreSQL::Test::Utils::tempdir();
my $sockets = PostgreSQL::Test::Utils::tempdir_short();
my $logdir = $PostgreSQL::Test::Utils::log_path;
# The bound of every wait, not a measurement; not PG_TEST_TIMEOUT_DEFAULT (a mutation run sets
# it to 30 s, and node2 legitimately waits about that long for its clock after the failover).
# A failover that does not adopt fails at once (refused_as_copy).
my $timeout = 180;
my $stop_file = "$base/stop-clients";
my @ports = (6401, 6402);
my @api = (6405, 6406);
my $behind_ms = 40_000;    # node2's wall clock, behind node1's
my $http = HTTP::Tiny->new(timeout => 3);

# Children we started (etcd, Patroni, clients): stopped at the end, whatever happens.  They stay
# in this script's process group, so a runner that kills the group takes them along.
my %kids;
sub spawn
{
	my ($name, $log, %env) = (shift, shift, %{ shift() });
	my @cmd = @_;
	my $pid = fork // die "fork: $!";
	if (!$pid)
	{
		@ENV{ keys %env } = values %env;
		open STDIN, '<', '/dev/null';
		open STDOUT, '>>', $log or die;
		open STDERR, '>&', \*STDOUT or die;
		exec @cmd or POSIX::_exit(127);
	}
	$kids{$pid} = $name;
	note "started $name (pid $pid): @cmd";
	return $pid;
}
sub reap { my ($pid) = @_; waitpid($pid, 0); delete $kids{$pid}; return $?; }

sub wait_until
{
	my ($what, $cond) = @_;
	my $deadline = time + $timeout;
	while (time < $deadline)
	{
		my $r = $cond->() || 0;
		return $r if $r > 0;
		last if $r < 0;    # a definitive failure: no use waiting
		usleep(200_000);
	}
	diag "gave up waiting: $what";    # (or saw it fail for good)
	return 0;
}

sub psql
{
	my ($i, $sql) = @_;
	my ($out, $err);
	IPC::Run::run([ "$bindir/psql", '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', $ports[$i],
		'-U', 'postgres', '-d', 'postgres', '-c', $sql ], '>', \$out, '2>', \$err);
	return $? == 0 ? (chomp($out), $out)[1] : undef;
}

sub api
{
	my ($i) = @_;
	my $r = $http->get("http://127.0.0.1:$api[$i]/patroni");
	return undef unless $r->{success} || $r->{status} == 503;
	my %h;
	$h{$1} = $2 while $r->{content} =~ /"(role|state|timeline)": "?([^",}]*)"?/g;
	return \%h;
}

# Fixed ports (a run beside another of this file would collide): say so at once, not after waits.
for my $p (@ports, @api, 23790, 23791)
{
	my $sock = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $p, Proto => 'tcp', ReuseAddr => 1);
	BAIL_OUT("port $p is in use (another run of 492_patroni.pl, or a leftover of one?)") unless $sock;
	close $sock;
}

# --- etcd, single member.
my $etcd_pid = spawn('etcd', "$logdir/etcd.log", {}, $etcd, '--name', 'sf', '--data-dir', "$base/etcd",
	'--listen-client-urls', 'http://127.0.0.1:23790', '--advertise-client-urls', 'http://127.0.0.1:23790',
	'--listen-peer-urls', 'http://127.0.0.1:23791', '--initial-advertise-peer-urls', 'http://127.0.0.1:23791',
	'--initial-cluster', 'sf=http://127.0.0.1:23791', '--initial-cluster-state', 'new');
ok(wait_until('etcd', sub { ($http->get('http://127.0.0.1:23790/health')->{content} // '') =~ /"health":\s*"true"/ }),
	'etcd is up (127.0.0.1:23790)');

# --- node2 runs its postgres under the clock shim, $behind_ms behind: a bin_dir whose
# "postgres" starts the real one with the shim preloaded (Patroni's own clock stays real).
my $shim = SnowflakeTest::clock_shim();
my $clock2 = "$base/clock2";
{
	open my $fh, '>', $clock2 or die;
	printf $fh "O %+021d %+021d\n", -$behind_ms, -$behind_ms;
	close $fh;
}
my @bin_dirs = ($bindir, "$base/bin2");
make_path("$base/bin2");
for my $f (glob "$bindir/*")
{
	my $n = (split m{/}, $f)[-1];
	next if $n eq 'postgres';
	symlink $f, "$base/bin2/$n" or die;
}
{
	open my $fh, '>', "$base/bin2/postgres" or die;
	print $fh "#!/bin/sh\nLD_PRELOAD=$shim SF_CLOCK_SHIM_FILE=$clock2 exec $bindir/postgres \"\$@\"\n";
	close $fh;
	chmod 0755, "$base/bin2/postgres";
}

# --- The Patroni YAML of docs/failover.md's recipe, one per node.
my $scope = "sf$$";
sub patroni_yaml
{
	my ($i) = @_;
	my $n = $i + 1;
	my $dir = "$base/node$n";
	make_path($dir);
	chmod 0700, $dir;
	open my $fh, '>', "$dir/patroni.yml" or die;
	print $fh <<"EOF";
scope: $scope
namespace: /snowflake-test/
name: node$n
log:
  level: INFO
restapi:
  listen: 127.0.0.1:$api[$i]
  connect_address: 127.0.0.1:$api[$i]
etcd3:
  hosts: 127.0.0.1:23790
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      parameters:
        shared_preload_libraries: snowflake
        snowflake.datacenter_id: 1
        snowflake.machine_id: 1
        snowflake.failover_adopt: 'on'
        fsync: 'off'
  initdb:
    - encoding: UTF8
    - auth: trust
postgresql:
  listen: 127.0.0.1:$ports[$i]
  connect_address: 127.0.0.1:$ports[$i]
  data_dir: $dir/data
  bin_dir: $bin_dirs[$i]
  pgpass: $dir/pgpass
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
    rewind:
      username: postgres
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
  parameters:
    unix_socket_directories: '$sockets'
watchdog:
  mode: 'off'
EOF
	close $fh;
	return "$dir/patroni.yml";
}
my @yaml = map { patroni_yaml($_) } 0, 1;
my @data = map { "$base/node" . ($_ + 1) . '/data' } 0, 1;
my %penv = (PATH => "$bindir:$ENV{PATH}");
my @patroni_pid;

$patroni_pid[0] = spawn('patroni node1', "$logdir/patroni_node1.log", \%penv, $patroni, $yaml[0]);
ok(wait_until('node1 leads', sub { my $s = api(0); $s && ($s->{role} // '') =~ /^(master|primary)$/ && ($s->{state} // '') eq 'running' }),
	'Patroni bootstrapped node1 as the primary');
ok(defined psql(0, 'CREATE EXTENSION snowflake'), 'CREATE EXTENSION on the primary');
psql(0, 'CREATE TABLE sf_rows (id bigint DEFAULT snowflake_next(), client text, seq int, srv int DEFAULT inet_server_port())');
is(psql(0, "SELECT current_setting('snowflake.failover_adopt') || ' ' || current_setting('shared_preload_libraries')"),
	'on snowflake', 'Patroni wrote the settings of its YAML');

$patroni_pid[1] = spawn('patroni node2', "$logdir/patroni_node2.log", \%penv, $patroni, $yaml[1]);
ok(wait_until('node2 streams', sub { my $s = api(1); $s && ($s->{role} // '') eq 'replica' && ($s->{state} // '') eq 'running'
	&& (psql(1, "SELECT status FROM pg_stat_wal_receiver") // '') eq 'streaming' }),
	'Patroni cloned node2 and it streams from node1');
ok(wait_until('witness', sub { -e "$data[1]/snowflake.standby" }), 'node2\'s writer recorded the standby witness');
my $lag = psql(1, "SELECT (extract(epoch FROM now()) * 1000)::bigint") - psql(0, "SELECT (extract(epoch FROM now()) * 1000)::bigint");
cmp_ok($lag, '<', -$behind_ms / 2, "node2's clock runs behind node1's ($lag ms)");

# --- Clients: insert through the multi-host connection string, reconnect on any error.
my $client_py = "$base/client.py";
{
	open my $fh, '>', $client_py or die;
	print $fh <<'EOF';
import os, sys, time
import psycopg
conninfo, tag, stop = sys.argv[1:4]
seq = 0
while not os.path.exists(stop):
    try:
        with psycopg.connect(conninfo, autocommit=True) as c:
            print(f"connected {tag} {c.info.port}", flush=True)
            while not os.path.exists(stop):
                seq += 1
                r = c.execute("INSERT INTO sf_rows (client, seq) VALUES (%s, %s) RETURNING id, inet_server_port()",
                              (tag, seq)).fetchone()
                print(f"ack {tag} {seq} {r[0]} {r[1]}", flush=True)
                time.sleep(0.005)
    except Exception as e:
        first = (str(e).splitlines() or [''])[0]
        print(f"err {tag} {seq} {getattr(e, 'sqlstate', None)} {type(e).__name__}: {first}", flush=True)
        time.sleep(0.2)
EOF
	close $fh;
}
my $conninfo = "host=127.0.0.1,127.0.0.1 port=$ports[0],$ports[1] user=postgres dbname=postgres "
  . 'target_session_attrs=read-write connect_timeout=2';
my @clients = map { [ "c$_", "$logdir/client_c$_.log" ] } 1 .. 3;
unlink $_->[1] for @clients;
my @client_pid = map { spawn("client $_->[0]", $_->[1], {}, 'python3', '-u', $client_py, $conninfo, $_->[0], $stop_file) } @clients;

sub acks
{
	my %acks;    # "client/seq" => [id, port]
	for my $c (@clients)
	{
		open my $fh, '<', $c->[1] or next;
		while (<$fh>) { $acks{"$1/$2"} = [ $3, $4 ] if /^ack (\S+) (\d+) (\d+) (\d+)$/; }
	}
	return \%acks;
}

# IDs by phase: node1 (before the kill), node2 (its port), node1 again (node1's port, from the
# seq each client had reached when the switchover began).  Table rows carry the client, its seq
# and the port, so rows and acks are told apart the same way.
my %phase_seq;    # phase name => { client => first seq }
my @phases = ('node1', 'node2', 'node1 again');
sub start_phase
{
	my ($name) = @_;
	my $now = acks();
	my %first;
	for my $c (@clients)
	{
		my ($max) = sort { $b <=> $a } map { (split m{/})[1] } grep { m{^$c->[0]/} } keys %$now;
		$first{ $c->[0] } = ($max // 0) + 1;
	}
	$phase_seq{$name} = \%first;
}
sub phase_of
{
	my ($tag, $port) = @_;
	my ($c, $s) = split m{/}, $tag;
	return 'node2' if $port == $ports[1];
	return $phase_seq{'node1 again'} && $s >= $phase_seq{'node1 again'}{$c} ? 'node1 again' : 'node1';
}
sub acked_on
{
	my ($port, $phase) = @_;
	my $a = acks();
	return scalar grep { $a->{$_}[1] == $port && (!$phase || phase_of($_, $port) eq $phase) } keys %$a;
}
# A client refused as a copy after a promotion: failover_adopt did not adopt; no use waiting.
sub refused_as_copy
{
	for my $c (@clients)
	{
		return 1 if grep { /^err .* 55000 .*is a copy/ } split /\n/, slurp_file($c->[1]);
	}
	return 0;
}

ok(wait_until('acks on node1', sub { acked_on($ports[0]) >= 600 }), 'the clients insert on node1');
ok(wait_until('node2 sync', sub { (psql(0, 'SELECT application_name, sync_state FROM pg_stat_replication') // '') eq 'node2|sync' }),
	'node2 is the synchronous standby (acknowledged means on node2)');

# --- The failure: node1's Patroni, then its postmaster, kill -9, while the clients insert.
open my $pidf, '<', "$data[0]/postmaster.pid" or die;
my $pm1 = <$pidf>;
chomp $pm1;
close $pidf;
kill 'KILL', $patroni_pid[0];
reap($patroni_pid[0]);
kill 'KILL', $pm1;
note 'killed node1: Patroni and postmaster ' . $pm1;
my $t_kill = time;
ok(wait_until('node1 gone', sub { !kill 0, $pm1 }), 'node1\'s postmaster is gone');

ok(wait_until('node2 promoted', sub { my $s = api(1); $s && ($s->{role} // '') =~ /^(master|primary)$/ }),
	'Patroni promoted node2');
ok(wait_until('node2 out of recovery', sub { (psql(1, 'SELECT pg_is_in_recovery()') // '') eq 'f' }), 'node2 left recovery');
my $new_tli = psql(1, "SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int");    # the timeline it writes
note sprintf('node2 promoted %.1f s after the kill, timeline %s', time - $t_kill, $new_tli // '?');
ok(wait_until('acks on node2', sub { refused_as_copy() ? -1 : acked_on($ports[1]) >= 600 }),
	'the clients go on inserting on node2 (failover_adopt adopted)');
is(psql(1, 'SELECT state FROM snowflake_state()'), 'ok', 'node2 owns the node state');

# --- The old primary comes back under Patroni and rejoins as a standby.
$patroni_pid[0] = spawn('patroni node1', "$logdir/patroni_node1.log", \%penv, $patroni, $yaml[0]);
ok(wait_until('node1 rejoins', sub { my $s = api(0); $s && ($s->{role} // '') eq 'replica' && ($s->{state} // '') eq 'running'
	&& (psql(0, "SELECT status || ' ' || received_tli FROM pg_stat_wal_receiver") // '') eq "streaming $new_tli" }),
	"node1 rejoined as a standby, streaming timeline $new_tli from node2");
my $plog = slurp_file("$logdir/patroni_node1.log");
like($plog, qr/pg_rewind exit code=0/, 'Patroni rewound node1 with pg_rewind');
ok($plog !~ /reinitializ|removing data directory/i, 'node1 was not re-cloned');
like($plog, qr/snowflake state file "snowflake.state" was written by another data directory/,
	'node1 starts with the state file pg_rewind copied from node2, taken for a copy (as a standby, no matter)');
ok(wait_until('node1 witness', sub { slurp_file("$logdir/patroni_node1.log") =~ /snowflake recorded in "snowflake.standby"/ }),
	'node1\'s writer recorded its own standby witness (the one pg_rewind copied names node2)');
# Patroni switches over only to the standby its DCS names synchronous (a request before that is
# refused), which comes a loop after pg_stat_replication says so.
ok(wait_until('node1 sync', sub { ($http->get("http://127.0.0.1:$api[1]/cluster")->{content} // '')
	=~ /"name":\s*"node1",\s*"role":\s*"sync_standby"/ }), 'node1 is node2\'s synchronous standby (in Patroni\'s DCS)');

# --- A switchover back to node1: nothing done by hand after the rewind.
start_phase('node1 again');
my $so_out;
ok(wait_until('switchover', sub {
	IPC::Run::run([ 'patronictl', '-c', $yaml[1], 'switchover', '--leader', 'node2', '--candidate', 'node1', '--force' ],
		'>', \$so_out, '2>&1');
	note $so_out unless $so_out =~ /Successfully switched over/;
	return $so_out =~ /Successfully switched over/ }), 'patronictl switchover to node1');
ok(wait_until('node1 promoted', sub { my $s = api(0); $s && ($s->{role} // '') =~ /^(master|primary)$/ }), 'node1 leads again');
ok(wait_until('acks on node1 again', sub { refused_as_copy() ? -1 : acked_on($ports[0], 'node1 again') >= 300 }),
	'the clients go on inserting on node1 (the rewound standby adopted)');
ok(wait_until('node2 rejoins', sub { my $s = api(1); $s && ($s->{role} // '') eq 'replica' && ($s->{state} // '') eq 'running' }),
	'node2 follows node1');

# Stop the clients; every row must be on both.
open my $sf, '>', $stop_file or die;
close $sf;
reap($_) for @client_pid;
my $lsn2 = psql(0, 'SELECT pg_current_wal_lsn()');
ok(wait_until('node2 follows', sub { (psql(1, "SELECT pg_last_wal_replay_lsn() >= '$lsn2'") // '') eq 't' }),
	'node2 replays the primary\'s WAL');
is(psql(1, 'SELECT count(*) FROM sf_rows'), psql(0, 'SELECT count(*) FROM sf_rows'), 'node2 has every row of node1');

# --- The checks.
my $acks = acks();
my %by_id;    # id => "client/seq"
my ($dup, $seen) = (0, 0);
my %ids;      # phase => [ IDs ]
sub one
{
	my ($id, $tag, $port, $where) = @_;
	if (exists $by_id{$id} && $by_id{$id} ne $tag)
	{
		diag "ID $id twice: $by_id{$id} and $tag ($where)" if $dup++ < 10;
	}
	$by_id{$id} //= $tag;
	$seen++;
	push @{ $ids{ phase_of($tag, $port) } }, $id;
}
my $rows = 0;
for (split /\n/, psql(0, 'SELECT id, client, seq, srv FROM sf_rows'))
{
	my ($id, $c, $s, $srv) = split /\|/;
	one($id, "$c/$s", $srv, 'table');
	$rows++;
}
one($acks->{$_}[0], $_, $acks->{$_}[1], 'acknowledged') for keys %$acks;
note "rows: $rows; acknowledged: " . scalar(keys %$acks) . "; IDs checked: $seen, distinct: " . scalar(keys %by_id)
  . '; by phase: ' . join(', ', map { "$_ " . scalar(@{ $ids{$_} // [] }) } @phases);
is($dup, 0, 'no ID twice among the table and the acknowledged IDs');
my $max_before = 0;
for my $i (0 .. $#phases)
{
	my @p = sort { $a <=> $b } @{ $ids{ $phases[$i] } // [] };
	if ($i > 0)
	{
		ok(@p && $p[0] > $max_before, "every ID issued after the switch to $phases[$i] is above every ID before it")
		  or diag "highest before: $max_before, lowest of $phases[$i]: " . ($p[0] // 'none');
	}
	$max_before = $p[-1] if @p && $p[-1] > $max_before;
}
my @errs = map { grep { /^err / } split /\n/, slurp_file($_->[1]) } @clients;
note scalar(@errs) . ' client errors, e.g.: ' . join(' | ', map { $errs[$_] } grep { $_ < @errs } 0, $#errs);

# --- Done: stop Patroni (which stops its PostgreSQL), then etcd.
END
{
	local $?;
	for my $sig ('TERM', 'KILL')
	{
		kill $sig, $_ for grep { $kids{$_} !~ /^etcd/ } keys %kids;
		for my $pid (grep { $kids{$_} !~ /^etcd/ } keys %kids)
		{
			for (1 .. 300) { last if waitpid($pid, WNOHANG) != 0; usleep(100_000); }
			delete $kids{$pid} if waitpid($pid, WNOHANG) != 0 || !kill 0, $pid;
		}
	}
	# A postmaster left behind by a killed Patroni (never our child).
	for my $d (@data)
	{
		next unless defined $d && open my $fh, '<', "$d/postmaster.pid";
		my $pm = <$fh>;
		chomp $pm;
		kill 'KILL', $pm if $pm && kill 0, $pm;
	}
	kill 'TERM', $_ for keys %kids;
	waitpid($_, 0) for keys %kids;
}
note sprintf('wall time %.0f s', time - $t0);
done_testing();
