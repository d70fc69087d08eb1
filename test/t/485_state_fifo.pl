# 485_state_fifo.pl: a FIFO (or any non-regular file) in place of a state file
# never blocks the server (attack on issue 19, F8).  Before the fix, a FIFO
# at snowflake.state.import blocked the postmaster in open() at start (pg_ctl
# could not stop it), and one at snowflake.state.tmp blocked the writer
# forever.  Now a non-regular state or import file is refused with a clear
# error, and the writer replaces whatever is at its temporary file.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use POSIX qw(mkfifo);

my $t = SnowflakeTest->new('fifo');
$t->start;
$t->query('CREATE EXTENSION snowflake');
my @before = $t->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'before', count => 1000);
my $pgdata = $t->data_dir;
$t->stop;

sub owned_fifo
{
	my ($path) = @_;
	mkfifo($path, 0600) or die "mkfifo $path: $!";
	my ($uid, $gid) = (stat $pgdata)[ 4, 5 ];
	chown $uid, $gid, $path;
}

# --- The state file replaced by a FIFO: refused as unreadable, the server runs.
rename "$pgdata/snowflake.state", "$pgdata/snowflake.state.saved" or die;
owned_fifo("$pgdata/snowflake.state");
$t->start;
my $r = $t->next_refused('a FIFO as the state file', undef, sqlstate => '58030',
	message => qr/could not read snowflake state file "snowflake\.state"/);
like($r->{detail} // '', qr/It is not a regular file \(a FIFO, device or directory\): move what is there away\. If it took the place of this data directory's own state file, that file was removed: the next start takes a complete temporary file of it, if one was left; never put back an older copy\./,
	'the detail says it is not a regular file, to move it away, and never to put back an older copy (round 33: it said "put back the state file")');
is($t->query('SELECT state FROM snowflake_state()'), 'unreadable', 'snowflake_state() says unreadable');
$t->stop;
unlink "$pgdata/snowflake.state";
rename "$pgdata/snowflake.state.saved", "$pgdata/snowflake.state" or die;

# --- A FIFO as the import file: the server starts, generation refuses naming it.
owned_fifo("$pgdata/snowflake.state.import");
$t->start;
$r = $t->next_refused('a FIFO as the import file', undef, sqlstate => 'XX001',
	message => qr/snowflake state file "snowflake\.state" is damaged/);
like($r->{detail} // '', qr/snowflake\.state\.import.*It is not a regular file/, 'the detail names the import and says why');
$t->stop;
unlink "$pgdata/snowflake.state.import";

# --- A FIFO at the writer's temporary file: the writer replaces it and writes.
# IDs are made, in batches, until they pass the mark the server started with by
# a second: the mark is raised past it (at least twice, at the default
# reservation_ms) through snowflake.state.tmp.  How many IDs that takes is the
# clock's business, not a fixed count (3,000,000 IDs took 12 s, and a minute on
# a loaded machine).  A writer blocked by the FIFO (or failing on it) leaves a
# batch waiting snowflake.max_wait_ms, then refused.
owned_fifo("$pgdata/snowflake.state.tmp");
$t->start;
my $mark_ms = q{SELECT floor(extract(epoch FROM reserved_until) * 1000)::bigint FROM snowflake_state()};
my $start_mark = $t->query($mark_ms);
my $writes = $t->query('SELECT mark_writes FROM snowflake_state()');
my ($batches, $last) = (0, 0);
for (1 .. 1000)
{
	$r = $t->run("SET snowflake.max_wait_ms = 20000;\nSELECT max(id) FROM (SELECT snowflake_next() AS id FROM generate_series(1, 50000)) s;");
	last if $r->{ret} != 0;
	$batches++;
	($last) = $r->{stdout} =~ /(\d+)/;
	last if id_unix_ms($last) > $start_mark + 1000;
}
is($r->{ret}, 0, "a FIFO at snowflake.state.tmp: $batches batches of 50,000 IDs") or diag($r->{stderr});
cmp_ok(id_unix_ms($last), '>', $start_mark + 1000, 'the IDs passed the mark the server started with by a second');
cmp_ok($t->query($mark_ms), '>', id_unix_ms($last), 'the mark was raised past them');
cmp_ok($t->query('SELECT mark_writes FROM snowflake_state()'), '>', $writes, 'by the writer');
my @after = $t->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'and after', count => 1000);
cmp_ok($after[0], '>', $before[-1], 'above every earlier ID');
ok(!-p "$pgdata/snowflake.state.tmp", 'the FIFO is gone');
$t->stop;
$t->summary;
done_testing();
