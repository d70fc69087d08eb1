# 615_type_no_preload.pl: the snowflake type's index use does not depend on the module being
# loaded.  In a session that has not loaded the library (a server without
# shared_preload_libraries, a fresh connection that has called no C function of the type) the
# planner hook is absent: ORDER BY id and max(id) must still read the snowflake index backwards
# (the type's own < stays out of integer_ops, docs/type.md), and a merge join with a bigint
# column sorts the snowflake side, as docs/type.md says (the hook that offers the index in
# integer_ops order needs the module loaded).  With the module loaded the same join sorts
# nothing.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('type_no_preload');
$node->init;
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION snowflake;
CREATE TABLE parent (id snowflake PRIMARY KEY);
CREATE TABLE child (id bigint PRIMARY KEY, parent_id bigint NOT NULL);
CREATE INDEX child_parent_id_idx ON child (parent_id);
INSERT INTO parent SELECT g FROM generate_series(1, 2000) g;
INSERT INTO child SELECT g, g % 2000 + 1 FROM generate_series(1, 20000) g;
ANALYZE parent, child;
});

# each safe_psql is a new connection: a backend that has not loaded the library
like($node->safe_psql('postgres', q{EXPLAIN (COSTS OFF) SELECT max(id) FROM parent}),
	qr/Index Only Scan Backward using parent_pkey/, 'without the module: max(id) reads the snowflake index backwards');
like($node->safe_psql('postgres', q{EXPLAIN (COSTS OFF) SELECT id FROM parent ORDER BY id DESC LIMIT 1}),
	qr/Index Only Scan Backward using parent_pkey/, 'without the module: ORDER BY id DESC LIMIT 1 too');
my $merge = q{SET enable_hashjoin = off; SET enable_nestloop = off; SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT count(*) FROM child c JOIN parent p ON p.id = c.parent_id};
my $plan = $node->safe_psql('postgres', $merge);
like($plan, qr/Merge Join/, 'without the module: a merge join');
like($plan, qr/Sort/, 'that sorts one side (the hook is absent)');

# the same in a connection where a function of the module ran (the type's input function loads
# the library, which installs the hook in every process): nothing is sorted
$plan = $node->safe_psql('postgres', q{SELECT '5'::snowflake IS NOT NULL;} . $merge);
like($plan, qr/Index Only Scan using parent_pkey/, 'with the module loaded: the snowflake index is read in order');
unlike($plan, qr/Sort/, 'and neither side is sorted');

$node->stop;
done_testing();
