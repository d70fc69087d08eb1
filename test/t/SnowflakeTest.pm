
# SnowflakeTest.pm: shared helpers for the snowflake TAP tests (test/t/0*.pl).
#
# A SnowflakeTest object wraps one PostgreSQL::Test::Cluster node that preloads
# snowflake and runs under libfaketime, so a test can step every server
# process's wall clock at once (set_clock) while the monotonic clock stays
# real, like an NTP step.  Client processes (psql, pg_basebackup, this Perl
# script) are never faked: LD_PRELOAD is only in the environment of pg_ctl
# start/restart, and the postmaster hands it on to every child it forks,
# including those forked after a crash re-initialisation.
#
# Every ID a test gets back goes through record(): it must be new (never seen
# before in this test script) and strictly greater than the last ID of the
# same node (server, datacenter, machine), across restarts and crashes.
#
# libfaketime facts (0.9.10, checked on this machine): with FAKETIME_NO_CACHE=1
# a change to the file reaches every backend and auxiliary process at its next
# time call; "+0", "-10m", "-1h", "+2d" and fractional seconds ("-1.5") are
# offsets; "YYYY-MM-DD hh:mm:ss" (local time, UTC here) freezes the clock;
# "@YYYY-MM-DD hh:mm:ss" starts a clock ticking from that time (not used).
# The file name must be absolute: every server process resolves it against
# its own working directory (the data directory), and a missing file silently
# means real time.  The postmaster process itself keeps the time it saw at
# start: its own log lines ignore later changes (its children do not); the
# extension only reads the clock there at clean shutdown.

package SnowflakeTest;

use strict;
use warnings FATAL => 'all';

use Carp;
use Exporter 'import';
use File::Spec;
use POSIX qw(strftime);
use Time::HiRes qw(usleep);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(id_unix_ms id_datacenter id_machine id_sequence frozen_time syscw strace_start strace_stop);

our $FAKETIME_LIB = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
our $EPOCH_UNIX_MS = 1288834974657;

# Guard against hangs: every script run by query()/ids()/refused() starts with
# this statement_timeout unless the script sets its own after it.
our $GUARD_TIMEOUT = '60s';


# poll_query_until() feeds its query to psql on stdin.  While the server is
# down (starting, or re-initialising after a crash) psql can fail to connect
# and exit before IPC::Run writes the query; PostgreSQL::Test::Utils ignores
# SIGPIPE, so the write fails with EPIPE and IPC::Run dies ("ack Broken pipe:
# write(...)"), ending the script with exit status 32 and no plan.  CI saw that
# in 430 and 499 on 17 and 19 under load (stop 32).  The query never reached
# psql, so polling again is what the caller asked for: retry on that error only.
{
	no warnings 'redefine';
	my $poll = \&PostgreSQL::Test::Cluster::poll_query_until;
	*PostgreSQL::Test::Cluster::poll_query_until = sub {
		for (my $try = 1;; $try++)
		{
			my $r;
			return $r if eval { $r = $poll->(@_); 1 };
			croak $@ unless $@ =~ /Broken pipe/ && $try < 10 * $PostgreSQL::Test::Utils::timeout_default;
			usleep(100_000);
		}
	};
}
my %all_ids;     # every ID returned in this test script => where it came from
my %last_id;     # "server dc/machine" => last ID returned for it

# Field extraction, in Perl (the server's decode functions are tested elsewhere).
sub id_unix_ms    { return ($_[0] >> 22) + $EPOCH_UNIX_MS; }
sub id_datacenter { return ($_[0] >> 17) & 31; }
sub id_machine    { return ($_[0] >> 12) & 31; }
sub id_sequence   { return $_[0] & 4095; }

# A faketime spec that freezes the clock at the given Unix time (whole seconds).
sub frozen_time
{
	my ($unix_s) = @_;
	return strftime('%Y-%m-%d %H:%M:%S', localtime($unix_s));
}

=pod

=item SnowflakeTest->new($name, %params)

Creates (initdb) a node preloading snowflake, datacenter 1, machine 1, and its
faketime file at "+0".  Params: clock => 'shim' runs it under clockshim.c
instead of libfaketime (every process follows the clock, the postmaster too:
set_clock takes offsets, set_clock_ms and freeze_clock_ms exact values);
allows_streaming => 1; restart_after_crash => 1;
conf => 'extra postgresql.conf lines'; from_backup => [$primary_test, $backup]
(a streaming standby made from a backup of another SnowflakeTest node;
standby => 0: a copy started as a server of its own);
id_key => 'name' checks this node's IDs in one sequence with the IDs of the
node of that name (a standby that takes over its primary's node).

=cut

sub new
{
	my ($class, $name, %params) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);

	if ($params{from_backup})
	{
		my ($primary, $backup) = @{ $params{from_backup} };
		$node->init_from_backup($primary->node, $backup, has_streaming => $params{standby} // 1,
			has_restoring => $params{restoring} // 0, standby => $params{standby} // 1);
	}
	else
	{
		$node->init(allows_streaming => $params{allows_streaming} // 0);
		$node->append_conf(
			'postgresql.conf', qq(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 1
snowflake.machine_id = 1
));
		# A standby started from a backup taken long before (487 starts one from the
		# first minutes of its script, after crashes, backups and checkpoints) needs
		# the primary to keep its WAL: without this the primary may remove a segment
		# the standby has yet to stream ("requested WAL segment ... has already been
		# removed"), and the standby never catches up (487 timed out so on 17 in CI).
		# The tests write little WAL; 1GB keeps all of it.
		$node->append_conf('postgresql.conf', 'wal_keep_size = 1GB')
		  if $params{allows_streaming};
	}
	$node->append_conf('postgresql.conf', 'restart_after_crash = on')
	  if $params{restart_after_crash};
	$node->append_conf('postgresql.conf', $params{conf})
	  if defined $params{conf};

	my $self = bless {
		node => $node,
		name => $name,
		id_key => $params{id_key} // $name,
		clock_file => File::Spec->rel2abs($node->basedir . '/faketime'),
		shim => ($params{clock} // '') eq 'shim' ? clock_shim() : undef,
	}, $class;
	$self->set_clock('+0');
	# Under the shim the kernel's clock is unsynchronized unless a test says
	# otherwise: the same on every machine, whether or not a time service runs.
	$self->set_clock_sync('unsynchronized') if $self->{shim};
	return $self;
}

sub node     { return $_[0]->{node}; }

# The major version of the PostgreSQL under test (postgres on PATH).
sub pg_major
{
	my $v = `postgres --version`;
	return $v =~ /\(PostgreSQL\) (\d+)/ ? $1 : 0;
}

# set_env(\@preload, %env): more libraries to preload into the server, and
# environment for it, from the next start or restart on.
sub set_env
{
	my ($self, $preload, %env) = @_;
	$self->{preload} = $preload;
	$self->{env} = \%env;
	return;
}
sub name     { return $_[0]->{name}; }
sub data_dir { return $_[0]->{node}->data_dir; }

# clockshim.c, built once per test script; returns the library's path.
my $clock_shim_so;
sub clock_shim
{
	return $clock_shim_so if defined $clock_shim_so;
	my $so = PostgreSQL::Test::Utils::tempdir() . '/clockshim.so';
	system('cc', '-shared', '-fPIC', '-O2', '-o', $so, "$FindBin::RealBin/clockshim.c", '-ldl') == 0
	  or BAIL_OUT('could not build clockshim.c');
	return $clock_shim_so = $so;
}

# The environment that fakes the wall clock of pg_ctl and the server, plus
# what set_env() added (more preloaded libraries, their settings).
sub _faketime_env
{
	my ($self) = @_;
	my %extra = %{ $self->{env} // {} };
	return (%extra,
		LD_PRELOAD => join(' ', @{ $self->{preload} // [] }, $self->{shim}),
		SF_CLOCK_SHIM_FILE => $self->{clock_file},
		SF_CLOCK_SHIM_SYNC => "$self->{clock_file}.sync")
	  if $self->{shim};
	# Ours first: libfaketime wraps stat() too, and hands on to the next one.
	my $preload = join ' ', @{ $self->{preload} // [] }, $FAKETIME_LIB;
	return (
		%extra,
		LD_PRELOAD => $preload,
		FAKETIME_TIMESTAMP_FILE => $self->{clock_file},
		FAKETIME_NO_CACHE => '1',
		FAKETIME_DONT_FAKE_MONOTONIC => '1',
		# File times stay real: libfaketime of 2024 on (Debian trixie, sid) fakes statx() too,
		# which moved the data directory's birth time with the clock, and the server took
		# its own data directory for a copy after the clock stepped.
		NO_FAKE_STAT => '1');
}

=pod

=item $t->start(%params)

Starts the node under libfaketime.  fail_ok => 1 returns 0 on failure instead
of bailing out.

=cut

sub start
{
	my ($self, %params) = @_;
	my %fake = $self->_faketime_env;
	local @ENV{ keys %fake } = values %fake;
	$self->{log_at_start} = -s $self->{node}->logfile // 0;
	return $self->{node}->start(%params);
}

sub restart
{
	my ($self) = @_;
	my %fake = $self->_faketime_env;
	local @ENV{ keys %fake } = values %fake;
	$self->{log_at_start} = -s $self->{node}->logfile // 0;
	$self->{node}->restart;
	return;
}

sub stop  { my ($self, @args) = @_; return $self->{node}->stop(@args); }

# Waits until the reservation writer of a streaming standby has written the
# standby witness (snowflake.standby), and the standby has replayed, in this
# postmaster's life, a record of the owner streamed from its upstream (the
# fresh evidence): snowflake.failover_adopt needs both.  After a restart the
# witness file is there at once; the evidence comes when the owner's record
# does.
sub wait_witness
{
	my ($self) = @_;
	my $w = $self->data_dir . '/snowflake.standby';
	for (1 .. 100 * $PostgreSQL::Test::Utils::timeout_default)
	{
		last if -e $w;
		usleep(10_000);
	}
	croak "no standby witness in " . $self->data_dir unless -e $w;
	$self->{node}->wait_for_log(qr/snowflake replayed a record of the owner of the node state \(.*\) streamed from /,
		$self->{log_at_start} // 0)
	  or croak "$self->{name}: no record of the owner replayed since its start";
	return 1;
}

# SIGKILL to the postmaster, then to @also (processes the test stopped, such as
# a SIGSTOPped WAL sender, which must not send again once the postmaster is
# gone); returns once every server process that was there has exited (so that
# a new start does not find the old shared memory in use), or after 30 s (the
# caller checks what must be gone).
sub kill9
{
	my ($self, @also) = @_;
	my @pids = split /\n/, $self->query('SELECT pid FROM pg_stat_activity');
	$self->{node}->kill9;
	kill 'KILL', @also if @also;
	for (1 .. 300)
	{
		return unless grep { kill(0, $_) } @pids;
		usleep(100_000);
	}
	diag('server processes still alive 30 s after the postmaster was killed: '
		  . join(' ', grep { kill(0, $_) } @pids));
	return;
}

=pod

=item $t->set_clock($spec)

Writes $spec ("+0", "-10m", "-1.5", "2027-01-01 00:00:00", ...) to the node's
faketime file, atomically (rename), so every server process's wall clock moves
at its next time call.

=cut

sub set_clock
{
	my ($self, $spec) = @_;
	if ($self->{shim})
	{
		my %unit = ('' => 1000, s => 1000, ms => 1, m => 60_000, h => 3_600_000, d => 86_400_000);
		$spec =~ /^([+-]?[0-9.]+)(ms|s|m|h|d|)$/
		  or croak "clock shim: \"$spec\" is no offset";
		return $self->set_clock_ms(int($1 * $unit{$2}));
	}
	my $tmp = "$self->{clock_file}.tmp";
	open my $fh, '>', $tmp or croak "could not write $tmp: $!";
	print $fh "$spec\n";
	close $fh or croak "could not close $tmp: $!";
	rename $tmp, $self->{clock_file}
	  or croak "could not rename $tmp: $!";
	note "$self->{name}: clock set to \"$spec\"";
	return;
}

=pod

=item $t->set_clock_ms($ms), $t->freeze_clock_ms($unix_ms)

Under the clock shim: every server process's wall clock becomes the real one
plus $ms, or stands still at $unix_ms, from its next clock read.  The file is
rewritten in place (each process maps it once), the value written twice so
that a read during the write is retried.

=cut

sub set_clock_ms    { my ($self, $ms) = @_; return $self->_shim_write('O', $ms); }

# Under the clock shim: what adjtimex() tells the server of the kernel's clock
# synchronization from now on: 'synchronized', 'unsynchronized', or undef for
# the kernel's own answer.
sub set_clock_sync
{
	my ($self, $state) = @_;
	croak 'not under the clock shim' unless $self->{shim};
	my $file = "$self->{clock_file}.sync";
	if (!defined $state)
	{
		unlink $file;
	}
	else
	{
		croak "clock sync: \"$state\" is neither synchronized nor unsynchronized"
		  unless $state =~ /^(synchronized|unsynchronized)$/;
		open my $fh, '>', "$file.tmp" or croak "could not write $file.tmp: $!";
		print $fh substr($state, 0, 1) eq 's' ? "s\n" : "u\n";
		close $fh or croak "could not close $file.tmp: $!";
		rename "$file.tmp", $file or croak "could not rename $file.tmp: $!";
	}
	note "$self->{name}: kernel clock synchronization: " . ($state // 'the kernel\'s');
	return;
}
sub freeze_clock_ms { my ($self, $ms) = @_; return $self->_shim_write('F', $ms); }

sub _shim_write
{
	my ($self, $mode, $ms) = @_;
	croak 'not under the clock shim' unless $self->{shim};
	my $line = sprintf("%s %+021d %+021d\n", $mode, $ms, $ms);
	my $fh;
	open($fh, '+<', $self->{clock_file}) or open($fh, '>', $self->{clock_file})
	  or croak "could not write $self->{clock_file}: $!";
	sysseek($fh, 0, 0);
	syswrite($fh, $line) == length($line) or croak "could not write $self->{clock_file}: $!";
	close $fh;
	note "$self->{name}: clock shim $mode $ms";
	return;
}

# Runs an SQL script with verbose errors; returns a hash with ret, stdout,
# stderr and, on error, sqlstate, message, detail, hint.
sub run
{
	my ($self, $sql, %params) = @_;
	my $script = "\\set VERBOSITY verbose\nSET statement_timeout = '$GUARD_TIMEOUT';\n$sql\n";
	my ($ret, $stdout, $stderr) =
	  $self->{node}->psql($params{dbname} // 'postgres', $script, on_error_stop => 1);
	return parse_error({ ret => $ret, stdout => $stdout, stderr => $stderr });
}

# Adds sqlstate/message/detail/hint to a hash holding psql's stderr.
sub parse_error
{
	my ($r) = @_;
	my $err = $r->{stderr} // '';
	($r->{sqlstate}, $r->{message}) = ($1, $2)
	  if $err =~ /(?:ERROR|FATAL):\s+([0-9A-Z]{5}):\s+(.*)/;
	$r->{detail} = $1 if $err =~ /^DETAIL:\s+(.*)$/m;
	$r->{hint}   = $1 if $err =~ /^HINT:\s+(.*)$/m;
	return $r;
}

# Like safe_psql: dies on error; returns stdout.
sub query
{
	my ($self, $sql, %params) = @_;
	my $r = $self->run($sql, %params);
	croak "query failed on $self->{name}: $r->{stderr}\nquery: $sql"
	  if $r->{ret} != 0;
	return $r->{stdout};
}

=pod

=item $t->record($what, @ids)

Records IDs returned by the node, in the order they were returned; returns a
list of problems (an ID seen before, or not above the previous ID of the same
server (id_key), datacenter and machine).

=cut

sub record
{
	my ($self, $what, @ids) = @_;
	my @problems;
	for my $id (@ids)
	{
		if ($id !~ /^\d+$/)
		{
			push @problems, "not an ID: \"$id\"";
			next;
		}
		my $key = sprintf('%s %d/%d', $self->{id_key}, id_datacenter($id), id_machine($id));
		push @problems, "$id already returned ($all_ids{$id})"
		  if exists $all_ids{$id};
		push @problems, "$id not above $key\'s previous ID $last_id{$key}"
		  if defined $last_id{$key} && $id <= $last_id{$key};
		$all_ids{$id} //= "$key, $what";
		$last_id{$key} = $id
		  if !defined $last_id{$key} || $id > $last_id{$key};
	}
	return @problems;
}

sub _check_recorded
{
	my ($self, $what, @ids) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my @problems = $self->record($what, @ids);
	ok(!@problems, "$what: IDs new and above all earlier of their node")
	  or diag(join("\n", @problems[ 0 .. ($#problems < 9 ? $#problems : 9) ]));
	return;
}

=pod

=item $t->ids($sql, $what, %params)

Runs $sql, which must succeed and print only IDs (one a line); checks and
records them; returns them.  count => N also checks how many came back.

=cut

sub ids
{
	my ($self, $sql, $what, %params) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $r = $self->run($sql);
	my @ids = grep { $_ ne '' } split /\n/, $r->{stdout};
	is($r->{ret}, 0, "$what: succeeds")
	  or diag("stderr: $r->{stderr}");
	is(scalar(@ids), $params{count}, "$what: $params{count} IDs")
	  if defined $params{count};
	$self->_check_recorded($what, @ids);
	return @ids;
}

# One new ID from snowflake_next(), after optional setup statements.
sub next_id
{
	my ($self, $what, $setup) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my @ids = $self->ids(($setup // '') . "\nSELECT snowflake_next();", $what, count => 1);
	return $ids[0];
}

=pod

=item $t->refused($sql, $what, %params)

Runs $sql, which must fail with SQLSTATE sqlstate => (default 55000); message
=> qr// also checks the message; todo_sqlstate => 'known bug' marks only the
SQLSTATE check TODO.  IDs printed before the error are recorded
and checked too.  Returns the parsed result (sqlstate, message, detail, hint).

=cut

sub refused
{
	my ($self, $sql, $what, %params) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $r = $self->run($sql);
	my @ids = grep { /^\d+$/ } split /\n/, $r->{stdout};
	$self->_check_recorded("$what (before the error)", @ids);
	$r->{ids} = \@ids;
	my $state = $params{sqlstate} // '55000';
	isnt($r->{ret}, 0, "$what: fails");
	Test::More->builder->todo_start($params{todo_sqlstate})
	  if defined $params{todo_sqlstate};
	is($r->{sqlstate}, $state, "$what: SQLSTATE $state")
	  or diag("stderr: $r->{stderr}");
	Test::More->builder->todo_end if defined $params{todo_sqlstate};
	like($r->{message}, $params{message}, "$what: message")
	  if defined $params{message};
	return $r;
}

# snowflake_next() refused after optional setup; returns the parsed result.
sub next_refused
{
	my ($self, $what, $setup, %params) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	return $self->refused(($setup // '') . "\nSELECT snowflake_next();", $what, %params);
}

# How far behind the last issued ID the clock is, from a refusal's detail
# ("... it is N ms behind the last ID ..."); else the first "N ms" in it.
sub detail_ms
{
	my ($r) = @_;
	return undef unless defined $r->{detail};
	return $1 if $r->{detail} =~ /(\d+) ms behind/;
	return $r->{detail} =~ /(\d+)\s*ms\b/ ? $1 : undef;
}

# How far the clock went back, from a refusal's detail ("The clock went back N ms").
sub detail_back_ms
{
	my ($r) = @_;
	return undef unless defined $r->{detail};
	return $r->{detail} =~ /went back (\d+) ms/ ? $1 : undef;
}

=pod

=item $t->status($datacenter, $machine)

The snowflake_status() row of that slot as a hash (undef if not in use), with
reserved_until_ms and last_unix_ms added.

=cut

sub status
{
	my ($self, $dc, $mc) = @_;
	$dc //= 1;
	$mc //= 1;
	my @cols = qw(datacenter_id machine_id last_id last_sequence clock_rollbacks
	  max_rollback_ms waits refusals reserved_until_ms);
	my $out = $self->query(qq{
SELECT datacenter_id, machine_id, last_id, last_sequence, clock_rollbacks,
       max_rollback_ms, waits, refusals,
       floor(extract(epoch FROM reserved_until) * 1000)::bigint
FROM snowflake_status() WHERE datacenter_id = $dc AND machine_id = $mc});
	return undef if $out eq '';
	my %row;
	@row{@cols} = split /\|/, $out;
	$row{last_unix_ms} = id_unix_ms($row{last_id})
	  if defined $row{last_id} && $row{last_id} ne '';
	return \%row;
}

=pod

=item $t->background()

A background psql session on the node (not faked, errors do not end it,
verbose errors).

=cut

sub background
{
	my ($self) = @_;
	my $bg = $self->{node}->background_psql('postgres', on_error_stop => 0);
	$bg->query_safe('\set VERBOSITY verbose');
	return $bg;
}

# A background session (returned) that runs one DO block: it waits until the
# table go (which must exist) has a row, then runs $body (PL/pgSQL that may set
# msg, which starts as $msg), then raises NOTICE 'outcome: <msg>'.  Returns
# once the block is running; insert into go to let it go on, then read the
# outcome with $bg->query_until(qr/finished/, "\\echo finished\n").
sub background_on_go
{
	my ($self, $msg, $body) = @_;
	my $bg = $self->background;
	$bg->query_until(qr/waiting/, "\\echo waiting\n" . qq{DO \$\$
DECLARE
	msg text := '$msg';
BEGIN
	WHILE NOT EXISTS (SELECT 1 FROM go) LOOP
		PERFORM pg_sleep(0.05);
	END LOOP;
$body
	RAISE NOTICE 'outcome: %', msg;
END \$\$;
});
	$self->wait_for_active('DO %');
	return $bg;
}

# SET commands that make a session's queries run in parallel workers only
# (PostgreSQL 16 renamed force_parallel_mode to debug_parallel_query).
sub parallel_only_sql
{
	my ($pg_version) = @_;
	my $force = $pg_version >= 16 ? 'debug_parallel_query' : 'force_parallel_mode';
	return qq{SET $force = on;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
};
}

# Promotes the standby and waits until it is out of recovery (checked: $what, or
# "NAME promoted").
sub promote
{
	my ($self, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	$self->{node}->promote;
	return ok($self->{node}->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'),
		$what // "$self->{name} promoted");
}

# Waits until another backend is active in a statement matching $like (and
# meets the extra SQL condition $cond, if given); returns its pid.
sub wait_for_active
{
	my ($self, $like, $cond) = @_;
	$cond //= 'true';
	my $sql = qq{SELECT pid FROM pg_stat_activity
WHERE state = 'active' AND query LIKE '$like' AND pid <> pg_backend_pid()
  AND ($cond) LIMIT 1};
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		my $pid = $self->query($sql);
		return $pid if $pid =~ /^\d+$/;
		usleep(100_000);
	}
	croak "no active backend running $like";
}

# Waits until the node accepts connections again (after a crash re-init).
sub wait_ready
{
	my ($self) = @_;
	$self->{node}->poll_query_until('postgres', 'SELECT 1', '1')
	  or croak "$self->{name} did not come back";
	return;
}

=pod

=item $t->child_pid($title_re)

The pid of the server process (a child of the postmaster) whose process title
matches $title_re, or undef.  Background workers without a database
connection are not in pg_stat_activity; this finds them.

=cut

sub child_pid
{
	my ($self, $title_re) = @_;
	my $postmaster = $self->{node}->{_pid};
	foreach my $stat (glob '/proc/[0-9]*/stat')
	{
		open my $fh, '<', $stat or next;
		my $line = <$fh>;
		close $fh;
		next unless defined $line && $line =~ /^(\d+) \(.*\) \S (\d+) /;
		my ($pid, $ppid) = ($1, $2);
		next unless $ppid == $postmaster;
		open my $cmd, '<', "/proc/$pid/cmdline" or next;
		my $title = <$cmd> // '';
		close $cmd;
		return $pid if $title =~ $title_re;
	}
	return undef;
}

# A primary (failover_adopt on, extra postgresql.conf lines in conf) and two standbys of one
# backup, a and b (their application_name), with synchronous_standby_names = 'FIRST 1 (a, b)':
# a synchronous, b potential, b's clock a shim that may lead by two minutes.  Returns the three
# and the 100,000 IDs the primary issued while both streamed (b's witness written).
sub first_of_two_standbys
{
	my ($class, %params) = @_;
	my $p = $class->new('primary', allows_streaming => 1, conf => $params{conf});
	$p->start;
	$p->query('CREATE EXTENSION snowflake');
	$p->query('ALTER SYSTEM SET snowflake.failover_adopt = on; SELECT pg_reload_conf()');
	$p->node->backup('b');
	my $sa = $class->new('a', from_backup => [ $p, 'b' ], id_key => 'primary');
	my $sb = $class->new('b', from_backup => [ $p, 'b' ], id_key => 'primary', clock => 'shim',
		conf => 'snowflake.max_lead_ms = 120000');
	$sa->start;
	$sb->start;
	$p->query(q{ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 (a, b)'; SELECT pg_reload_conf()});
	$p->node->poll_query_until('postgres',
		q{SELECT string_agg(application_name || ':' || sync_state, ',' ORDER BY application_name) = 'a:sync,b:potential' FROM pg_stat_replication WHERE state = 'streaming'})
	  or croak 'a is not the synchronous standby';
	my @ids = $p->ids('SELECT snowflake_next_n(100000)', 'the primary, a synchronous, b potential', count => 100_000);
	$sb->wait_witness;
	return ($p, $sa, $sb, \@ids);
}

# No writer running: SIGSTOP the postmaster (so it cannot restart the writer),
# SIGTERM the writer, and wait until it has exited (a zombie, not reaped while
# the postmaster is stopped).  Returns the postmaster's pid (SIGCONT it to go on)
# and whether the writer exited.  Calls must run in sessions opened before.
sub stop_writer_and_postmaster
{
	my ($self) = @_;
	my $pm = $self->{node}->{_pid};
	my $writer = $self->writer_pid;
	kill('STOP', $pm) or croak "kill STOP postmaster: $!";
	kill('TERM', $writer) or croak "kill TERM writer: $!";
	for (1 .. 300)
	{
		my $stat = PostgreSQL::Test::Utils::slurp_file("/proc/$writer/stat");
		return ($pm, 1) if $stat =~ /^\d+ \(.*\) Z /;
		usleep(100_000);
	}
	return ($pm, 0);
}

# The pid of the reservation writer (waits up to 30 s for it to run).
sub writer_pid
{
	my ($self) = @_;
	for (1 .. 300)
	{
		my $pid = $self->child_pid(qr/snowflake reservation writer/);
		return $pid if defined $pid;
		usleep(100_000);
	}
	croak "$self->{name}: no snowflake reservation writer running";
}

# How many write-type system calls process $pid has made (/proc/PID/io syscw).
sub syscw
{
	my ($pid) = @_;
	open my $fh, '<', "/proc/$pid/io" or croak "could not read /proc/$pid/io: $!";
	local $/;
	my $io = <$fh>;
	close $fh;
	return $1 if $io =~ /^syscw:\s+(\d+)/m;
	croak "no syscw in /proc/$pid/io";
}

=pod

=item strace_start($log, @args) / strace_stop($h)

Runs strace writing to $log, with @args (e.g. -p PID, -e ...); returns once
strace has attached to every process named by -p (the server processes run as
the same user as the tests, so no privilege is needed).  strace_stop ends it,
which lets every traced process go on at once.

=cut

sub strace_start
{
	my ($log, @args) = @_;
	my @pids = map { $args[ $_ + 1 ] } grep { $args[$_] eq '-p' } 0 .. $#args;
	my ($out, $err) = ('', '');
	my @cmd = ('strace', '-o', $log, @args);
	my $h = IPC::Run::start(\@cmd, '<', \undef, '>', \$out, '2>', \$err);
	for (1 .. 300)
	{
		$h->pump_nb;
		my $attached = () = $err =~ /Process \d+ attached/g;
		return $h if $attached >= scalar(@pids);
		croak "strace failed: $err" unless $h->pumpable;
		usleep(100_000);
	}
	croak "strace did not attach: $err";
}

# SIGTERM, not SIGINT: a test run started in the background of a shell without job control
# inherits SIGINT ignored, and strace then never detaches (seen in rehearsal ci22: 499 hung).
sub strace_stop
{
	my ($h) = @_;
	$h->signal('TERM');
	$h->finish;
	return;
}

=pod

=item SnowflakeTest::original_and_copy(%params)

An original server issuing 1,000 IDs as 1/1 (streaming allowed), and a base
backup of it started as a server of its own: datacenter 9, max_wait_ms 500,
plus $params{conf}; a copy waiting for adoption.  Returns both, started.

=cut

sub original_and_copy
{
	my (%params) = @_;
	my $p = SnowflakeTest->new('original', allows_streaming => 1);
	$p->start;
	$p->query('CREATE EXTENSION snowflake');
	$p->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'the original, 1/1', count => 1000);
	$p->node->backup('b');
	my $c = SnowflakeTest->new('copy', from_backup => [ $p, 'b' ], standby => 0,
		conf => join("\n", grep { defined } $params{conf}, 'snowflake.datacenter_id = 9', 'snowflake.max_wait_ms = 500'));
	$c->start;
	return ($p, $c);
}

=pod

=item $t->summary()

A final check: every ID returned in this script is distinct, and each node's
IDs strictly increased (record() saw them in order).

=cut

sub summary
{
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $n = scalar(keys %all_ids);
	ok($n > 0, "summary: $n distinct IDs returned, each above its node's previous one");
	return;
}


=pod

=item SnowflakeTest::step_ok($r, $step_ms, $t0, $t1, $what, @which)

Checks the numbers in a refusal's detail against a step of the clock the test
made ($step_ms back): "went back N ms" (which 'back') and "N ms behind"
(which 'behind'; both by default) must each lie in [$step_ms - slack, $step_ms],
where slack is only the test's own elapsed time, from $t0 (Time::HiRes::time
just before the last ID issued before the step) to $t1 (just after the refusal),
plus 2 ms for rounding to whole ms.

=cut

sub step_ok
{
	my ($r, $step_ms, $t0, $t1, $what, @which) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	@which = qw(back behind) unless @which;
	my $slack = int(($t1 - $t0) * 1000) + 2;
	for my $which (@which)
	{
		my $n = $which eq 'back' ? detail_back_ms($r) : detail_ms($r);
		my $label = $which eq 'back' ? 'went back N ms' : 'N ms behind';
		ok( defined $n && $n >= $step_ms - $slack && $n <= $step_ms,
			"$what: the detail's \"$label\" is the $step_ms ms step, less at most the test's own $slack ms")
		  or diag('detail: ' . ($r->{detail} // '(none)'));
	}
	return;
}

=pod

=item $t->state_file_mark()

The mark (a tick: ms since the Snowflake epoch) in the node's state file, read
from the file itself (src/state.c, SnowflakeStateFile: a u64 at offset 16).

=cut

sub state_file_mark
{
	my ($self) = @_;
	my $path = $self->data_dir . '/snowflake.state';
	open my $fh, '<:raw', $path or croak "could not read $path: $!";
	local $/;
	my $bytes = <$fh>;
	close $fh;
	croak "$path is too short" if length($bytes) < 24;
	return unpack('Q<', substr($bytes, 16, 8));
}

=pod

=item $t->nodes_file() / $t->wait_nodes_used($want)

snowflake.nodes as { used => "D/M,...", retired => "D/M,..." } (both
"(no file)" when there is none or its size is wrong); its layout: magic,
version, system identifier, used[1024 bits], retired[1024 bits], crc, pad.
wait_nodes_used polls (no timing assertion) until the used set is $want.

=cut

sub nodes_file
{
	my ($self) = @_;
	my $path = $self->data_dir . '/snowflake.nodes';
	my $none = { used => '(no file)', retired => '(no file)' };
	open my $fh, '<:raw', $path or return $none;
	local $/;
	my $bytes = <$fh>;
	close $fh;
	return $none unless defined $bytes && length($bytes) == 280;
	my $bits = sub {
		my ($off) = @_;
		my @n;
		my $v = unpack('b*', substr($bytes, $off, 128));
		for my $i (0 .. 1023) { push @n, sprintf('%d/%d', int($i / 32), $i % 32) if substr($v, $i, 1) eq '1'; }
		return join(',', @n);
	};
	return { used => $bits->(16), retired => $bits->(144) };
}

# SQL that creates SCHEMA.pwn(what text), the payload of the hostile-role tests: it records each
# call in TABLE (which must exist, insertable by the caller) and, when a superuser runs it, makes
# ROLE superuser.
sub planted_pwn_sql
{
	my ($schema, $table, $role) = @_;
	return qq{CREATE FUNCTION $schema.pwn(what text) RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
	INSERT INTO $table VALUES (what);
	IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		EXECUTE 'ALTER ROLE $role SUPERUSER';
	END IF;
END \$\$;
};
}

sub wait_nodes_used
{
	my ($self, $want) = @_;
	for (1 .. 600)
	{
		return 1 if $self->nodes_file->{used} eq $want;
		usleep(100_000);
	}
	return 0;
}

1;
