# tools/lib.sh: shared steps of run-demo, run-tests and bench/run (sourced, not run).
#
# Installs what a fresh Debian machine with PostgreSQL 15 lacks, builds and
# installs the extension, and starts throwaway servers as an unprivileged user
# (PostgreSQL refuses to run as root).  Never touches a server it did not start.

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PG_CONFIG=${PG_CONFIG:-$PG_BIN/pg_config}
[ -x "$PG_CONFIG" ] || PG_CONFIG=pg_config
SF_USER=${SF_USER:-postgres}

sf_log() { printf '==> %s\n' "$*" >&2; }

# Take the machine's test lock for the rest of the calling script (file descriptor 9): every
# run-tests and bench/run installs into the same PostgreSQL, so they take turns.  A script started
# by one that holds it (SF_LOCK_HELD=1 in its environment) does not wait for its own parent.
SF_LOCK=${SF_LOCK:-/tmp/snowflake-run-tests.lock}
sf_lock() {
	[ "${SF_LOCK_HELD:-0}" = 1 ] && return 0
	exec 9>>"$SF_LOCK" || { echo "cannot open the lock file $SF_LOCK" >&2; return 1; }
	if ! flock -n 9; then
		sf_log "waiting for $SF_LOCK (another test or benchmark run on this machine)"
		flock 9
	fi
	export SF_LOCK_HELD=1
}

# Run a command as root (directly, or through sudo).
sf_as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Run a command as the unprivileged server user.
sf_as_user() {
	if [ "$(id -un)" = "$SF_USER" ]; then "$@"; else sf_as_root runuser -u "$SF_USER" -- "$@"; fi
}

# Install Debian packages that are missing (apt-get update only when needed).
sf_install_packages() {
	local missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	sf_log "installing ${missing[*]}"
	sf_as_root apt-get update -qq
	sf_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Build (warnings are errors) and install the extension from the top directory.
sf_build_install() {
	sf_log "building and installing the extension"
	make -s clean >/dev/null
	make -s PG_CONFIG="$PG_CONFIG" >/dev/null
	sf_as_root make -s PG_CONFIG="$PG_CONFIG" install >/dev/null
}

# sf_private_pg DIR MAJOR: a private, relocated copy of this machine's PostgreSQL MAJOR in DIR
# (binaries, share, headers), made once under a lock of its own and reused: builds install
# into it and tests run from it, so the host's installation is never touched.
sf_private_pg() {
	local base=$1 major=$2 d
	mkdir -p "$base"
	(
		flock 8
		[ -f "$base/.complete" ] && exit 0
		sf_log "making a private copy of PostgreSQL $major in $base"
		for d in "/usr/lib/postgresql/$major" "/usr/share/postgresql/$major" /usr/include/postgresql; do
			sf_as_root rm -rf "$base$d"
			sf_as_root mkdir -p "$(dirname "$base$d")"
			sf_as_root cp -a "$d" "$base$d" || exit 1
		done
		[ "$("$base/usr/lib/postgresql/$major/bin/pg_config" --bindir)" = "$base/usr/lib/postgresql/$major/bin" ] ||
			{ echo "the copy of PostgreSQL $major in $base is not relocatable" >&2; exit 1; }
		touch "$base/.complete"
	) 8>>"$base.lock"
}

# A fresh directory owned by the server user.
sf_user_dir() {
	local d
	d=$(mktemp -d "${TMPDIR:-/tmp}/snowflake-$1.XXXXXX")
	chmod 755 "$d"
	sf_as_root chown "$SF_USER": "$d"
	echo "$d"
}

# sf_server_start DIR PORT [extra postgresql.conf lines...]: initdb and start, preloaded.
sf_server_start() {
	local dir=$1 port=$2
	shift 2
	sf_as_user "$PG_BIN/initdb" -D "$dir/data" -A trust -U postgres --no-sync >/dev/null
	{
		echo "port = $port"
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$dir'"
		echo "shared_preload_libraries = 'snowflake'"
		for line in "$@"; do echo "$line"; done
	} | sf_as_user tee -a "$dir/data/postgresql.conf" >/dev/null
	sf_as_user "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
}

sf_server_stop() {
	local dir=$1
	[ -f "$dir/data/postmaster.pid" ] || return 0
	sf_as_user "$PG_BIN/pg_ctl" -D "$dir/data" -w stop -m fast >/dev/null || true
}

# sf_psql DIR PORT [psql args...]
sf_psql() {
	local dir=$1 port=$2
	shift 2
	sf_as_user "$PG_BIN/psql" -X -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres "$@"
}
