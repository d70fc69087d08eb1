# 306_migrate_foreign_child.pl: the max() check of snowflake_migrate_column() reads the table as its
# owner, like every other step (outside attack on issue 19, round 14, F1).
#
# The check read the table as the caller.  A table owner with USAGE on postgres_fdw gave the key
# table an inheritance child that is a foreign table on a loopback server, with a user mapping for
# PUBLIC naming a superuser and no password: postgres_fdw lets a superuser connect so, and the remote
# side read a view that ran the owner's function as that superuser.  The superuser who ran the
# documented migration made the owner superuser.  Read as the owner, the connection needs a password
# and the call fails; nothing runs as the caller.
use strict;
use warnings FATAL => 'all';
use FindBin;
use lib $FindBin::RealBin;
use SnowflakeTest;
use Test::More;

my $t = SnowflakeTest->new('migfdw');
$t->start;
my $super = $t->query('SELECT current_user');
my $host = $t->node->host;
my $port = $t->node->port;
$t->query(q{CREATE ROLE mallory LOGIN; CREATE DATABASE app2;});
$t->node->safe_psql('app2', q{CREATE EXTENSION snowflake; CREATE EXTENSION postgres_fdw;
GRANT USAGE ON FOREIGN DATA WRAPPER postgres_fdw TO mallory; GRANT CREATE ON DATABASE app2 TO mallory;});
$t->node->safe_psql('app2', qq{CREATE SCHEMA m;
CREATE TABLE m.planted_calls (who name, at timestamptz DEFAULT now());
GRANT INSERT ON m.planted_calls TO PUBLIC;
GRANT USAGE ON SCHEMA m TO PUBLIC;
CREATE FUNCTION m.pwn() RETURNS int LANGUAGE plpgsql AS \$\$
BEGIN
	INSERT INTO m.planted_calls (who) VALUES (current_user);
	IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		EXECUTE 'ALTER ROLE mallory SUPERUSER';
	END IF;
	RETURN 1;
END \$\$;
CREATE VIEW m.evil WITH (security_invoker = true) AS SELECT m.pwn() AS id;
GRANT SELECT ON m.evil TO PUBLIC;
CREATE SERVER loop FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$host', port '$port', dbname 'app2');
CREATE USER MAPPING FOR PUBLIC SERVER loop OPTIONS (user '$super');
CREATE TABLE m.p (id serial PRIMARY KEY);
CREATE FOREIGN TABLE m.c (id int) INHERITS (m.p) SERVER loop OPTIONS (schema_name 'm', table_name 'evil');},
	extra_params => [ '-U', 'mallory' ]);

my ($ret, $out, $err) = $t->node->psql('app2',
	q{BEGIN; SELECT public.snowflake_migrate_column('m.p'::pg_catalog.regclass, 'id'::pg_catalog.name, 'bigint'::pg_catalog.regtype); COMMIT;});
isnt($ret, 0, 'the migration of a tree with a foreign child the owner cannot read fails');
like($err, qr/password is required|password or GSSAPI delegated credentials required/, 'as the owner: postgres_fdw asks the owner for a password');
is($t->node->safe_psql('app2', 'SELECT count(*) FROM m.planted_calls'), '0', "the owner's function never ran");
is($t->query(q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}), 'f', 'mallory stays unprivileged');
is($t->node->safe_psql('app2', q{SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'm.p'::regclass AND attname = 'id'}),
	'integer', 'and nothing was migrated');

# A tree the owner can read migrates as before: here without the foreign child.
$t->node->safe_psql('app2', 'DROP FOREIGN TABLE m.c; INSERT INTO m.p DEFAULT VALUES', extra_params => [ '-U', 'mallory' ]);
is($t->node->safe_psql('app2',
	q{SELECT public.snowflake_migrate_column('m.p'::pg_catalog.regclass, 'id'::pg_catalog.name, 'bigint'::pg_catalog.regtype) ->> 'max_existing_id'}),
	'1', 'the max() check read as the owner: the largest existing ID');

$t->stop;
done_testing();
