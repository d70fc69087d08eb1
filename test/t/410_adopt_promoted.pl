# 410_adopt_promoted.pl: snowflake.failover_adopt adopts the node state only on
# a server that was promoted (its timeline is past the one its state file
# records), never on a copy started as a server of its own (issue 19 item 2).
#
# The setting is in postgresql.auto.conf, as an HA recipe puts it, so every
# base backup of the primary carries it.  A base backup started as an
# independent server must refuse (else it and the primary issue the same IDs
# under one node); a streaming standby made from the same backup and promoted
# adopts, and issues above every ID of its old primary.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

use Time::HiRes qw(usleep);

my $p = SnowflakeTest->new('primary', allows_streaming => 1);
$p->start;

# The state file's timeline (version 3: a u32 at offset 88).
sub file_timeline
{
	my ($t) = @_;
	my $path = $t->data_dir . '/snowflake.state';
	open my $fh, '<:raw', $path or die "could not read $path: $!";
	local $/;
	my $bytes = <$fh>;
	close $fh;
	return length($bytes) == 104 ? unpack('V', substr($bytes, 88, 4)) : -1;
}

# A new file is created by the postmaster, which does not know the timeline:
# the writer records it at once, before the extension exists or any ID is issued.
my $tli;
for (1 .. 300)
{
	$tli = file_timeline($p);
	last if $tli == 1;
	usleep(100_000);
}
is($tli, 1, 'the new state file records timeline 1 before any ID is issued');

$p->query('CREATE EXTENSION snowflake; CREATE TABLE t (id bigint PRIMARY KEY)');
$p->query('ALTER SYSTEM SET snowflake.failover_adopt = on; SELECT pg_reload_conf()');

$p->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'primary before the backup', count => 1000);
$p->query('INSERT INTO t SELECT snowflake_next() FROM generate_series(1, 1000)');
$p->node->backup('b');

# c: the base backup started as a server of its own (no standby.signal).
my $c = SnowflakeTest->new('copy', from_backup => [ $p, 'b' ], standby => 0);
# s: a streaming standby from the same backup, meant to take over.
my $s = SnowflakeTest->new('standby', from_backup => [ $p, 'b' ], id_key => 'primary');
$c->start;
$s->start;

is($c->query('SHOW snowflake.failover_adopt'), 'on', 'the copy carries failover_adopt = on from postgresql.auto.conf');
is($c->query('SELECT pg_is_in_recovery()'), 'f', 'the copy runs as a primary of its own');
my $r = $c->next_refused('a base backup started on its own, failover_adopt = on', undef,
	message => qr/this data directory is a copy/);
like($r->{detail}, qr/only after this data directory streamed from a primary as a standby and was then promoted/, 'the detail says failover_adopt waits for a standby\'s promotion');
$c->refused('SELECT snowflake_next_n(10)', 'the copy, snowflake_next_n', message => qr/is a copy/);
is($c->query('SELECT state FROM snowflake_state()'), 'copy', 'the copy stays a copy');
unlike(slurp_file($c->node->logfile), qr/node state adopted/, 'the copy did not adopt the node state');

# The primary goes on; the copy still refuses, whatever it is asked.
$p->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'primary while the copy runs', count => 1000);
$c->next_refused('the copy, asked again', undef, message => qr/is a copy/);
$c->restart;
$c->next_refused('the copy after a restart', undef, message => qr/is a copy/);

# The standby is promoted: it adopts on its first ID, above the primary's IDs.
$p->query('INSERT INTO t SELECT snowflake_next() FROM generate_series(1, 1000)');
my $max = $p->query('SELECT max(id) FROM t');
$p->node->wait_for_catchup($s->node, 'replay');
$p->kill9;
$s->wait_witness;
$s->promote;
is(file_timeline($s), 1, 'before its first ID the promoted standby\'s file still records timeline 1 (replayed)');
my @ids = $s->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'promoted standby, failover_adopt = on',
	count => 1000);
cmp_ok($ids[0], '>', $max, 'the promoted standby issues above its old primary\'s IDs');
ok($s->node->wait_for_log(qr/snowflake node state adopted by this data directory/),
	'the promoted standby adopted the node state');
is($s->query('SELECT state FROM snowflake_state()'), 'ok', 'and owns it now');
is(file_timeline($s), 2, 'its state file records its new timeline, 2');

# The adopted state file records the new timeline: a base backup of the new
# primary, started on its own with failover_adopt = on, refuses too.
$s->restart;
$s->ids('SELECT snowflake_next() FROM generate_series(1, 10)', 'promoted standby after a restart', count => 10);
$s->node->backup('b2');
my $c2 = SnowflakeTest->new('copy2', from_backup => [ $s, 'b2' ], standby => 0);
$c2->start;
$c2->next_refused('a base backup of the promoted standby, started on its own', undef,
	message => qr/this data directory is a copy/);

$c->stop;
$c2->stop;
$s->stop;
$p->summary;
done_testing();
