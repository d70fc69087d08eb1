#!/bin/bash
# run.sh PORT [HOST]: the web path of Snowflake IDs in a real browser (Debian's chromium,
# headless). A server (server.js, node-postgres) serves `SELECT json_agg(t) FROM t` as an API
# does; page.html parses it with JSON.parse, shows the IDs and sends each back; check.py asserts
# that a snowflake column keeps every ID and that a bigint column loses them. Needs a server on
# HOST:PORT (a directory means a Unix socket) with snowflake preloaded; creates and drops its own
# database. Everything listens on 127.0.0.1 only and is bounded in time. Installs chromium,
# nodejs and npm with apt-get if missing (as root), and node modules in test/clients/node.
set -u
PORT=${1:?usage: test/browser/run.sh PORT [HOST]}
HOST=${2:-localhost}
HERE=$(cd "$(dirname "$0")" && pwd)
DB=snowflake_browser
export PGHOST=$HOST PGPORT=$PORT PGUSER=postgres PGDATABASE=$DB
PYTHON=/usr/bin/python3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/snowflake-browser.XXXXXX")
server_pid=

cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
	echo "FAIL browser: $*"
	for f in "$WORK"/server.log "$WORK"/chromium-*.log; do [ -s "$f" ] && { echo "---- $f"; tail -n 40 "$f"; }; done
	exit 1
}

apt_install() {
	[ "$(id -u)" = 0 ] || fail "$* missing and not root to apt-get install it"
	echo "browser: apt-get install -y $*"
	{ apt-get install -y --no-install-recommends "$@" || { apt-get update && apt-get install -y --no-install-recommends "$@"; }; } >/dev/null 2>&1 ||
		fail "apt-get install $* failed"
}
command -v chromium >/dev/null || apt_install chromium
command -v node >/dev/null && command -v npm >/dev/null || apt_install nodejs npm
if [ ! -d "$HERE/../clients/node/node_modules/pg" ]; then
	(cd "$HERE/../clients/node" && npm ci --no-audit --no-fund) >/dev/null 2>&1 || fail "npm could not install test/clients/node"
fi
export NODE_PATH=$HERE/../clients/node/node_modules

PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 -d postgres \
	-c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" || fail "cannot create database $DB"
psql -X -q -v ON_ERROR_STOP=1 <<'SQL' || fail "setup of $DB failed"
CREATE EXTENSION snowflake;
CREATE TABLE sf_items (id snowflake PRIMARY KEY DEFAULT snowflake_next(), name text NOT NULL);
INSERT INTO sf_items (id, name) VALUES
    (1724551110457221119, 'worked example'),
    (1050118621198921728, 'a real tweet ID'),
    (9223372036854775807, 'largest ID'),
    (9007199254740993, '2^53 + 1');
INSERT INTO sf_items (name) SELECT 'generated ' || g FROM generate_series(1, 20) g;
-- the same rows with a bigint key
CREATE TABLE big_items (id bigint PRIMARY KEY, name text NOT NULL);
INSERT INTO big_items SELECT id, name FROM sf_items;
SQL

LIFETIME_MS=120000 node "$HERE/server.js" >"$WORK/server.log" 2>&1 &
server_pid=$!
http_port=
for _ in $(seq 1 40); do
	http_port=$(sed -n 's/^listening \([0-9]*\)$/\1/p' "$WORK/server.log")
	[ -n "$http_port" ] && break
	kill -0 "$server_pid" 2>/dev/null || fail "server.js exited"
	sleep 0.25
done
[ -n "$http_port" ] || fail "server.js did not start listening"
echo "browser: server.js on 127.0.0.1:$http_port"

for table in sf_items big_items; do
	# --virtual-time-budget lets the page's fetches finish before the DOM is dumped.
	timeout 90 chromium --headless=new --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$WORK/profile-$table" --virtual-time-budget=60000 \
		--dump-dom "http://127.0.0.1:$http_port/?table=$table" >"$WORK/dom-$table.html" 2>"$WORK/chromium-$table.log" ||
		fail "chromium on $table failed or timed out"
	echo "browser: chromium rendered $table: $(grep -o '<p id="status">[^<]*' "$WORK/dom-$table.html" | sed 's/.*>//')"
done

"$PYTHON" -c "import urllib.request, sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$http_port/api/results', timeout=10).read().decode())" \
	>"$WORK/results.json" || fail "cannot read the server's results"
echo "browser: the worked example at each hop:"
for table in sf_items big_items; do
	i=$(sed -n "s/^hop=db table=$table index=\([0-9]*\) id=1724551110457221119$/\1/p" "$WORK/server.log")
	grep -E "^hop=[a-z]+ table=$table index=${i:-x} " "$WORK/server.log" | sed 's/^/  /'
done
"$PYTHON" "$HERE/check.py" "$WORK/results.json" "$WORK/server.log" "$WORK/dom-sf_items.html" "$WORK/dom-big_items.html"
