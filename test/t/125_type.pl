# 125_type.pl: the snowflake column type travels. pg_dump/pg_restore onto another server keeps
# the columns' type, the rows, the indexes with their operator classes and the foreign keys; a
# logical-replication subscriber with the extension receives inserts, updates and deletes keyed by
# a snowflake column, in text and in binary mode.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

sub snowflake_node
{
	my ($name, $machine, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%opts);
	$node->append_conf(
		'postgresql.conf', qq(
shared_preload_libraries = 'snowflake'
snowflake.datacenter_id = 2
snowflake.machine_id = $machine
));
	$node->start;
	return $node;
}

my $src = snowflake_node('type_source', 1, allows_streaming => 'logical');
my $dst = snowflake_node('type_target', 2);

my $schema = q{
CREATE EXTENSION snowflake;
CREATE TABLE users (id snowflake PRIMARY KEY DEFAULT snowflake_next(), name text NOT NULL);
CREATE TABLE posts (id snowflake PRIMARY KEY DEFAULT snowflake_next(),
                    author snowflake NOT NULL REFERENCES users, body text);
-- a bigint column referencing a snowflake key
CREATE TABLE likes (post_id bigint NOT NULL REFERENCES posts, user_id snowflake NOT NULL REFERENCES users,
                    PRIMARY KEY (post_id, user_id));
CREATE INDEX posts_id_brin ON posts USING brin (id);
CREATE INDEX users_id_hash ON users USING hash (id);
};
$src->safe_psql('postgres', 'CREATE DATABASE app');
$src->safe_psql('app', $schema . q{
INSERT INTO users (id, name) VALUES (1724551110457221119, 'worked example');
INSERT INTO users (name) SELECT 'user ' || g FROM generate_series(1, 50) g;
INSERT INTO posts (author, body) SELECT u.id, 'post by ' || u.name FROM users u, generate_series(1, 4);
INSERT INTO likes SELECT p.id, u.id FROM posts p JOIN users u ON u.id <> p.author
WHERE snowflake_sequence(p.id) % 7 = snowflake_sequence(u.id) % 7;
});

# Each table's rows as JSON (the IDs are strings there), and the catalog facts of the type.
my $fingerprint = q{
SELECT string_agg(t || ':' || n || ':' || h, ' ' ORDER BY t) FROM (
  SELECT 'users' AS t, count(*) AS n, md5(json_agg(u ORDER BY u.id)::text) AS h FROM users u
  UNION ALL SELECT 'posts', count(*), md5(json_agg(p ORDER BY p.id)::text) FROM posts p
  UNION ALL SELECT 'likes', count(*), md5(json_agg(l ORDER BY l.post_id, l.user_id)::text) FROM likes l
) s};
my $catalog = q{
SELECT string_agg(x, E'\n' ORDER BY x) FROM (
  SELECT attrelid::regclass || '.' || attname || ' ' || format_type(atttypid, atttypmod) AS x
  FROM pg_attribute WHERE attrelid IN ('users'::regclass, 'posts'::regclass, 'likes'::regclass) AND attnum > 0
  UNION ALL
  SELECT c.relname || ' ' || am.amname || ' ' || opc.opcname
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
  JOIN pg_opclass opc ON opc.oid = i.indclass[0]
  WHERE i.indrelid IN ('users'::regclass, 'posts'::regclass, 'likes'::regclass)
  UNION ALL
  SELECT conrelid::regclass || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'f'
) s};

my $src_fp = $src->safe_psql('app', $fingerprint);
my $src_cat = $src->safe_psql('app', $catalog);
like($src_cat, qr/^posts\.id snowflake$/m, 'source: posts.id is a snowflake');
like($src_cat, qr/^likes\.post_id bigint$/m, 'source: likes.post_id is a bigint');
like($src_fp, qr/likes:[1-9]\d*:/, 'source: likes has rows');

# --- pg_dump / pg_restore

my $dump = $src->basedir . '/app.dump';
$src->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $src->connstr('app') ], 'pg_dump -Fc');
$dst->safe_psql('postgres', 'CREATE DATABASE app');
$dst->command_ok([ 'pg_restore', '--exit-on-error', '-d', $dst->connstr('app'), $dump ], 'pg_restore');
is($dst->safe_psql('app', $fingerprint), $src_fp, 'restored: every row identical (compared as JSON)');
is($dst->safe_psql('app', $catalog), $src_cat,
	'restored: column types, index operator classes and foreign keys identical');
is($dst->safe_psql('app', q{SELECT to_json(u) FROM users u WHERE id = 1724551110457221119}),
	'{"id":"1724551110457221119","name":"worked example"}', 'restored: the JSON form is still a string');
my $new = $dst->safe_psql('app',
	q{INSERT INTO users (name) VALUES ('after restore') RETURNING snowflake_machine_id(id) || ' ' || (id > (SELECT max(id) FROM users WHERE name <> 'after restore' AND id <> 1724551110457221119))});
is($new, '2 true', 'restored: the default makes this server\'s IDs');
my $err = '';
$dst->psql('app', q{INSERT INTO likes VALUES (5, 1724551110457221119)}, stderr => \$err);
like($err, qr/violates foreign key constraint "likes_post_id_fkey"/,
	'restored: the bigint-to-snowflake foreign key is enforced');

# The restored database has the type in pg_catalog's integer_ops again (CREATE EXTENSION adds it;
# pg_dump does not dump pg_catalog's families): the bigint reference's index serves a lookup by a
# snowflake, and deleting posts checks likes through that index, never by a sequential scan.
like(
	$dst->safe_psql('app', q{SET enable_seqscan = off; SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM likes WHERE post_id = '1724551110457221119'::snowflake}),
	qr/Index (Only )?Scan using likes_pkey on likes\s+Index Cond: \(post_id = /,
	'restored: likes_pkey (bigint, integer_ops) serves post_id = <snowflake>');
is( $dst->safe_psql(
		'app', q{
BEGIN;
INSERT INTO posts (author, body) SELECT id, 'to delete' FROM users ORDER BY id LIMIT 20;
SELECT pg_stat_get_xact_numscans('likes'::regclass) AS seq, pg_stat_get_xact_numscans('likes_pkey'::regclass) AS idx \gset
DELETE FROM posts WHERE body = 'to delete';
SELECT (SELECT count(*) FROM posts WHERE body = 'to delete'), pg_stat_get_xact_numscans('likes'::regclass) - :seq,
       pg_stat_get_xact_numscans('likes_pkey'::regclass) - :idx >= 20;
ROLLBACK;}),
	'0|0|t',
	'restored: deleting 20 posts checks likes through its index, without a sequential scan');

# --- logical replication, text and binary

$src->safe_psql('app', 'CREATE PUBLICATION type_pub FOR TABLE users, posts, likes');
my $sub = PostgreSQL::Test::Cluster->new('type_subscriber');
$sub->init;
$sub->start;    # not preloaded: the subscriber only stores and reads the type
my $src_conn = $src->connstr . ' dbname=app';
for my $mode ('text', 'binary')
{
	$sub->safe_psql('postgres', "CREATE DATABASE sub_$mode");
	$sub->safe_psql("sub_$mode", $schema);
	$sub->safe_psql("sub_$mode",
		"CREATE SUBSCRIPTION type_sub_$mode CONNECTION '$src_conn' PUBLICATION type_pub"
		  . ($mode eq 'binary' ? ' WITH (binary = true)' : ''));
	$sub->wait_for_subscription_sync($src, "type_sub_$mode", "sub_$mode");
	is($sub->safe_psql("sub_$mode", $fingerprint), $src_fp, "$mode subscription: initial copy identical");
}

# Changes after the copy: inserts, an update and deletes found by their snowflake keys.
$src->safe_psql('app', q{
INSERT INTO users (name) SELECT 'late user ' || g FROM generate_series(1, 20) g;
INSERT INTO posts (author, body) SELECT id, 'late post' FROM users WHERE name LIKE 'late user%';
UPDATE users SET name = 'renamed' WHERE id = 1724551110457221119;
DELETE FROM likes WHERE post_id IN (SELECT id FROM posts ORDER BY id LIMIT 10);
UPDATE posts SET body = 'edited ' || body WHERE id IN (SELECT id FROM posts ORDER BY id DESC LIMIT 5);
});
my $src_fp2 = $src->safe_psql('app', $fingerprint);
isnt($src_fp2, $src_fp, 'source changed');
for my $mode ('text', 'binary')
{
	$src->wait_for_catchup("type_sub_$mode");
	is($sub->safe_psql("sub_$mode", $fingerprint), $src_fp2, "$mode subscription: inserts, updates and deletes arrived");
	is($sub->safe_psql("sub_$mode", q{SELECT name FROM users WHERE id = 1724551110457221119}),
		'renamed', "$mode subscription: the update found its row by the snowflake key");
}

done_testing();
