#!/bin/bash
# run.sh PORT [HOST]: real client libraries against a running server on HOST:PORT that has
# snowflake in shared_preload_libraries (user postgres, database postgres reachable). HOST
# defaults to localhost; a directory (starting with /) means that Unix-socket directory.
# Creates and drops its own database. Installs what it needs: node modules with npm
# (test/clients/node/node_modules), nodejs/npm and python3-psycopg with apt-get if missing.
# Exits non-zero if any check fails.
set -u
PORT=${1:?usage: test/clients/run.sh PORT [HOST]}
HOST=${2:-localhost}
HERE=$(cd "$(dirname "$0")" && pwd)
DB=snowflake_clients
export PGHOST=$HOST PGPORT=$PORT PGUSER=postgres PGDATABASE=$DB
PYTHON=/usr/bin/python3   # Debian's python3-psycopg lives here, not in a pyenv or venv

apt_install() {
	if [ "$(id -u)" != 0 ]; then
		echo "FAIL clients: $* missing and not root to apt-get install it"
		exit 1
	fi
	echo "clients: apt-get install -y $*"
	{ apt-get install -y "$@" || { apt-get update && apt-get install -y "$@"; }; } >/dev/null || {
		echo "FAIL clients: apt-get install $* failed"
		exit 1
	}
}

command -v node >/dev/null && command -v npm >/dev/null || apt_install nodejs npm
"$PYTHON" -c 'import psycopg' 2>/dev/null || apt_install python3-psycopg
command -v psql >/dev/null || apt_install postgresql-client

echo "clients: installing node modules (pg)"
(cd "$HERE/node" && if [ -f package-lock.json ]; then npm ci --no-audit --no-fund; else npm install --no-audit --no-fund; fi) >/dev/null 2>&1 || {
	echo "FAIL clients: npm could not install test/clients/node"
	exit 1
}

PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" || {
	echo "FAIL clients: cannot create database $DB on $HOST:$PORT"
	exit 1
}
psql -X -q -v ON_ERROR_STOP=1 <<'SQL' || { echo "FAIL clients: setup of $DB failed"; exit 1; }
CREATE EXTENSION snowflake;
CREATE TABLE items (id bigint PRIMARY KEY DEFAULT snowflake_next(), name text NOT NULL);
INSERT INTO items (id, name) VALUES
    (1724551110457221119, 'worked example'),
    (1050118621198921728, 'a real tweet ID'),
    (9223372036854775807, 'largest ID'),
    (9007199254740993, '2^53 + 1');
INSERT INTO items (name) SELECT 'generated ' || g FROM generate_series(1, 20) g;
-- the same rows in a column of the snowflake type (JSON form: a string)
CREATE TABLE sf_items (id snowflake PRIMARY KEY DEFAULT snowflake_next(), name text NOT NULL);
INSERT INTO sf_items SELECT id, name FROM items;
SQL

status=0
suites_passed=0
suites_failed=0
run_suite() {
	local name=$1
	shift
	echo "clients: running $name"
	if "$@"; then
		echo "PASS clients: $name"
		suites_passed=$((suites_passed + 1))
	else
		echo "FAIL clients: $name"
		suites_failed=$((suites_failed + 1))
		status=1
	fi
}
run_suite "node (pg)" node "$HERE/node/test.js"
run_suite "python (psycopg)" "$PYTHON" "$HERE/python/test_ids.py"

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" || status=1
echo "clients: $suites_passed passed, $suites_failed failed"
exit $status
