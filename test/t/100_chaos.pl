# 100_chaos.pl: many sessions generate at once while the wall clock jumps
# back and forth under them (libfaketime) and the reservation window is tiny,
# so the worker and the callers raise the mark all the time.
#
# Whatever the clock does, no ID repeats (the primary key would abort the
# run), each session's IDs strictly increase, every refusal is a clean 55000
# error, and the faults really happened (refusals, waits and rollbacks
# counted).  No timing is asserted.

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep time);

my $t = SnowflakeTest->new('chaos', conf => qq(
snowflake.reservation_ms = 20
snowflake.max_wait_ms = 300
max_connections = 40
));
$t->start;
my $node = $t->node;

# Each call of gen(k) inserts k IDs, one subtransaction each; a refusal
# (55000) is counted and the loop goes on; any other error (a duplicate key
# above all) ends the pgbench client, which the test then sees.
$t->query(q{
CREATE EXTENSION snowflake;
CREATE TABLE ids (n bigserial, client int NOT NULL, id bigint PRIMARY KEY);
CREATE TABLE refusals (client int NOT NULL, sqlstate text NOT NULL, message text NOT NULL);
CREATE FUNCTION gen(client int, k int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1 .. k LOOP
    BEGIN
      INSERT INTO ids (client, id) VALUES (client, snowflake_next());
    EXCEPTION WHEN object_not_in_prerequisite_state THEN
      INSERT INTO refusals VALUES (client, SQLSTATE, SQLERRM);
    END;
  END LOOP;
END $$;
});

my $script = $node->basedir . '/gen.sql';
PostgreSQL::Test::Utils::append_to_file($script, "SELECT gen(:client_id, 20);\n");

my ($out, $err) = ('', '');
my $pgbench = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '12', '-j', '2', '-T', '6', '-f', $script,
	  '-h', $node->host, '-p', $node->port, 'postgres' ],
	'>', \$out, '2>', \$err);

# The clock, stepped every 150 ms: back by small and large amounts, forward,
# and back to true time; then true time for the last second.
my @steps = ('-0.05', '+0', '-0.4', '+0', '+0.3', '-2', '+0', '-0.01', '+1', '+0', '-0.2', '+0',
	'-5', '+0', '+0.05', '-0.1', '+0', '-1', '+0', '+0.5', '+0', '-0.3', '+0', '-3', '+0');
my $t0 = time;
foreach my $s (@steps)
{
	last if time - $t0 > 4.5;
	$t->set_clock($s);
	usleep(150_000);
}
$t->set_clock('+0');
$pgbench->finish;
my $rc = $?;

is($rc, 0, 'pgbench: every client finished (no duplicate key, no other error)')
  or diag("pgbench stderr:\n$err");
unlike($err, qr/duplicate key|ERROR/, 'pgbench: no error reported');
my ($done) = $out =~ /number of transactions actually processed: (\d+)/;
cmp_ok($done // 0, '>', 0, 'pgbench processed transactions')
  or diag($out);

my ($rows, $distinct, $clients) = split /\|/,
  $t->query('SELECT count(*), count(DISTINCT id), count(DISTINCT client) FROM ids');
cmp_ok($rows, '>', 1000, "$rows IDs were issued");
is($distinct, $rows, 'every ID is distinct');
is($clients, 12, 'all 12 clients issued IDs');
is( $t->query(q{
SELECT count(*) FROM (
  SELECT id, lag(id) OVER (PARTITION BY client ORDER BY n) AS prev FROM ids) s
WHERE prev IS NOT NULL AND id <= prev}),
	'0', 'each session\'s IDs strictly increase');
is($t->query('SELECT count(*) FROM ids WHERE snowflake_datacenter_id(id) <> 1 OR snowflake_machine_id(id) <> 1'),
	'0', 'every ID decodes to the node');

# The faults happened, and every refusal was a clean one.
my ($refused, $kinds) = split /\|/, $t->query(
	q{SELECT count(*), string_agg(DISTINCT regexp_replace(message, ':.*', ''), '; ') FROM refusals});
cmp_ok($refused, '>', 0, "calls were refused while the clock was back ($refused)");
like($kinds // '', qr/^(snowflake_next\(\) refused[^;]*)(; snowflake_next\(\) refused[^;]*)*$/,
	'every refusal is a snowflake_next() refusal') or diag($kinds);
my $s = $t->status;
cmp_ok($s->{clock_rollbacks}, '>', 0, "rollbacks counted ($s->{clock_rollbacks})");
cmp_ok($s->{waits}, '>', 0, "waits counted ($s->{waits})");
cmp_ok($s->{refusals}, '>=', $refused, 'status counts at least the refusals the sessions saw');
cmp_ok($s->{reserved_until_ms}, '>=', SnowflakeTest::id_unix_ms($t->query('SELECT max(id) FROM ids')),
	'the durable mark covers every ID');

# And after all that, a restart: IDs go on above every one issued.
$t->restart;
my $max = $t->query('SELECT max(id) FROM ids');
cmp_ok($t->query('SELECT snowflake_next()'), '>', $max, 'after a restart, IDs are above all earlier');

$t->stop;
done_testing();
