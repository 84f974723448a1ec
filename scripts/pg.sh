#!/usr/bin/env bash
# A throwaway PostgreSQL 15 for the tests and the local cloud.
#
#   scripts/pg.sh up     start it (initdb on first use); prints the connection URL
#   scripts/pg.sh url    print the URL of the running server (exit 1 if none)
#   scripts/pg.sh down   stop it
#   scripts/pg.sh with CMD...
#                        run CMD with LIVE_CI_PG_URL set, then stop the server
#                        if this call started it (how `make test` runs cargo test)
#
# State lives in ${LIVE_CI_WORK:-<repo>/.work}/pg. Several test processes may call
# `up` at once: a flock serializes them and the later ones reuse the running server.
# PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${LIVE_CI_WORK:-$ROOT/.work}
DIR=$WORK/pg
DATA=$DIR/data
BIN=${LIVE_CI_PG_BIN:-/usr/lib/postgresql/15/bin}

die() { echo "pg.sh: $*" >&2; exit 1; }

# The server must not inherit fd 9 (the flock): it would hold the lock for its lifetime.
# as_pg CMD...: runs CMD as the server's owner.
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || die "running as root needs a 'postgres' user to own the cluster"
  OWNER=postgres
  as_pg() { runuser -u postgres -- "$@"; }
else
  OWNER=$(id -un)
  as_pg() { "$@"; }
fi

[ -x "$BIN/pg_ctl" ] || die "no PostgreSQL at $BIN (set LIVE_CI_PG_BIN)"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
    || echo $((20000 + RANDOM % 20000))
}

running() {
  [ -f "$DIR/url" ] && as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

up() {
  if running; then
    cat "$DIR/url"
    return
  fi
  if [ ! -f "$DATA/PG_VERSION" ]; then
    rm -rf "$DATA"
    mkdir -p "$DATA"
    chown "$OWNER" "$DATA"
    chmod 700 "$DATA"
    as_pg test -w "$DATA" || die "$DATA: not writable by user '$OWNER' (is a parent directory private? set LIVE_CI_WORK)"
    as_pg "$BIN/initdb" -D "$DATA" -A trust -U postgres -E UTF8 --locale=C --no-sync >"$DIR/initdb.log" 2>&1 \
      || die "initdb failed: see $DIR/initdb.log"
  fi
  # A stale postmaster.pid from a killed server would stop pg_ctl; the status check
  # above already said no server runs on this data directory.
  rm -f "$DATA/postmaster.pid"
  local attempt port
  for attempt in 1 2 3; do
    port=$(free_port)
    if as_pg "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 60 \
      -o "-h 127.0.0.1 -p $port -k $DATA -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
      start >/dev/null 9>&-; then
      echo "postgres://postgres@127.0.0.1:$port/postgres" >"$DIR/url"
      cat "$DIR/url"
      return
    fi
    echo "pg.sh: start on port $port failed (attempt $attempt); see $DATA/server.log" >&2
  done
  die "could not start PostgreSQL"
}

down() {
  if as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null 9>&-
  fi
  rm -f "$DIR/url"
}

cmd=${1:-}
case "$cmd" in
  up | down | url) ;;
  with)
    shift
    [ $# -gt 0 ] || { echo "usage: $0 with CMD..." >&2; exit 2; }
    self=${BASH_SOURCE[0]}
    started_here=true
    bash "$self" url >/dev/null 2>&1 && started_here=false
    url=$(bash "$self" up)
    rc=0
    LIVE_CI_PG_URL=$url "$@" || rc=$?
    if $started_here; then bash "$self" down; fi
    exit "$rc"
    ;;
  *) echo "usage: $0 up|down|url|with CMD..." >&2; exit 2 ;;
esac

mkdir -p "$DIR"
exec 9>"$DIR/lock"
flock 9
case "$cmd" in
  up) up ;;
  down) down ;;
  url) running && cat "$DIR/url" || die "not running (scripts/pg.sh up)" ;;
esac
