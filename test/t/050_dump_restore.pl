# 050_dump_restore.pl: a database that uses Snowflake defaults survives pg_dump/pg_restore onto
# another server: rows identical, defaults and extension version restored, and the IDs the new
# server issues sort above the restored ones.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

sub snowflake_node
{
	my ($name, $machine) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf(
		'postgresql.conf', qq(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 1
snowflake.machine_id = $machine
));
	$node->start;
	return $node;
}

my $src = snowflake_node('source', 1);
my $dst = snowflake_node('target', 2);

$src->safe_psql('postgres', 'CREATE DATABASE app');
$src->safe_psql(
	'app', q{
CREATE EXTENSION snowflake;
-- born with Snowflake IDs
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_next(), payload text NOT NULL);
INSERT INTO events (payload) SELECT 'event ' || g FROM generate_series(1, 500) g;
-- migrated from serial, with a foreign key and a view
CREATE TABLE users (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE posts (id bigint PRIMARY KEY DEFAULT snowflake_next(), user_id int NOT NULL REFERENCES users (id), body text);
INSERT INTO users (name) SELECT 'user ' || g FROM generate_series(1, 50) g;
SELECT snowflake_migrate_column('users');
INSERT INTO users (name) SELECT 'new user ' || g FROM generate_series(1, 10) g;
INSERT INTO posts (user_id, body) SELECT u.id, 'post by ' || u.name FROM users u;
CREATE VIEW user_posts AS SELECT u.id AS user_id, p.id AS post_id, snowflake_timestamp(p.id) AS posted FROM users u JOIN posts p ON p.user_id = u.id;
-- range-partitioned by ID
CREATE TABLE logs (id bigint DEFAULT snowflake_next(), line text) PARTITION BY RANGE (id);
CREATE TABLE logs_old PARTITION OF logs FOR VALUES FROM (MINVALUE) TO (snowflake_min_id('2024-01-01 00:00:00+00'));
CREATE TABLE logs_new PARTITION OF logs FOR VALUES FROM (snowflake_min_id('2024-01-01 00:00:00+00')) TO (MAXVALUE);
INSERT INTO logs VALUES (snowflake_encode('2023-06-01 00:00:00+00'::timestamptz, 3, 4, 5), 'old');
INSERT INTO logs (line) SELECT 'line ' || g FROM generate_series(1, 100) g;
});

my $fingerprint = q{
SELECT string_agg(t || ':' || h, ' ' ORDER BY t) FROM (
  SELECT 'events' AS t, md5(string_agg(e::text, ',' ORDER BY e.id)) AS h FROM events e
  UNION ALL SELECT 'users', md5(string_agg(u::text, ',' ORDER BY u.id)) FROM users u
  UNION ALL SELECT 'posts', md5(string_agg(p::text, ',' ORDER BY p.id)) FROM posts p
  UNION ALL SELECT 'logs', md5(string_agg(l::text || l.tableoid::regclass::text, ',' ORDER BY l.id)) FROM logs l
  UNION ALL SELECT 'user_posts', md5(string_agg(v::text, ',' ORDER BY v.post_id)) FROM user_posts v
) s};
my $defaults = q{
SELECT string_agg(c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || pg_get_expr(d.adbin, d.adrelid), '; ' ORDER BY c.relname, a.attname)
FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum JOIN pg_class c ON c.oid = d.adrelid
WHERE c.relname IN ('events', 'users', 'posts', 'logs')};

my $before = $src->safe_psql('app', $fingerprint);
my $before_defaults = $src->safe_psql('app', $defaults);
my $max_before = $src->safe_psql('app',
	'SELECT greatest((SELECT max(id) FROM events), (SELECT max(id) FROM users), (SELECT max(id) FROM posts), (SELECT max(id) FROM logs))');
like($before_defaults, qr/users\.id bigint snowflake_next\(\)/, 'users.id was migrated before the dump');

my $dump = PostgreSQL::Test::Utils::tempdir() . '/app.dump';
$src->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $src->connstr('app') ], 'pg_dump -Fc');

$dst->safe_psql('postgres', 'CREATE DATABASE app');
$dst->command_ok([ 'pg_restore', '--exit-on-error', '-d', $dst->connstr('app'), $dump ], 'pg_restore');

is($dst->safe_psql('app', "SELECT extversion FROM pg_extension WHERE extname = 'snowflake'"),
	'1.3', 'extension restored at version 1.3');
is($dst->safe_psql('app', $fingerprint), $before, 'every row identical after restore (md5 of ordered rows)');
is($dst->safe_psql('app', $defaults), $before_defaults, 'column types and snowflake_next() defaults restored');
is($dst->safe_psql('app', "SELECT count(*) FROM pg_class WHERE relkind = 'S'"), '0', 'no sequence came back');

# New IDs on the target server sort above every restored one.
$dst->safe_psql(
	'app', q{
INSERT INTO events (payload) SELECT 'after restore ' || g FROM generate_series(1, 100) g;
INSERT INTO users (name) VALUES ('after restore');
INSERT INTO posts (user_id, body) SELECT max(id), 'after restore' FROM users;
INSERT INTO logs (line) VALUES ('after restore');
});
is( $dst->safe_psql(
		'app', qq{
SELECT bool_and(ok) FROM (
  SELECT min(id) > $max_before AS ok FROM events WHERE payload LIKE 'after restore%'
  UNION ALL SELECT min(id) > $max_before FROM users WHERE name = 'after restore'
  UNION ALL SELECT min(id) > $max_before FROM posts WHERE body = 'after restore'
  UNION ALL SELECT min(id) > $max_before FROM logs WHERE line = 'after restore'
) s}), 't', 'new IDs after restore are above the restored ones');
is( $dst->safe_psql(
		'app', q{
SELECT count(*) = count(DISTINCT id) AND bool_and(snowflake_machine_id(id) = 2)
FROM events WHERE payload LIKE 'after restore%'}), 't', 'new IDs come from the target node, all distinct');
is($dst->safe_psql('app', "SELECT tableoid::regclass FROM logs WHERE line = 'after restore'"),
	'logs_new', 'a new row lands in the partition bounded by snowflake_min_id()');
is($dst->safe_psql('app', q{SELECT snowflake_format(max(id)) ->> 'id' = max(id)::text FROM events}),
	't', 'snowflake_format works on the restored server');

# Migrating again on the restored copy is a no-op.
my ($ret, $stdout, $stderr) = $dst->psql('app', "SELECT snowflake_migrate_column('users') ->> 'changed'");
is($stdout, 'false', 'migration is a no-op on the restored table');
like($stderr, qr/nothing to do/, 'with a NOTICE');

$src->stop;
$dst->stop;
done_testing();
