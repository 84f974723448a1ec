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
#
# TLS as on Aurora (rds.force_ssl): the server takes TLS connections only, with a
# certificate for 127.0.0.1 and localhost signed by a test CA generated here once
# (openssl; <work>/pg/ca.pem). The URL carries what a client needs to verify it:
#   postgres://postgres@127.0.0.1:<port>/postgres?sslmode=verify-full&sslrootcert=<work>/pg/ca.pem
# (libpq and psql read it as it is; the Rust side through live_ci_metadb::tls).
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

# The test CA (kept across data directories) and the server's certificate in the
# data directory (the server's owner must own its key). Idempotent.
ensure_tls() {
  if [ ! -s "$DIR/ca.pem" ] || [ ! -s "$DIR/ca.key" ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=live-ci test CA" \
      -keyout "$DIR/ca.key" -out "$DIR/ca.pem" >/dev/null 2>&1 || die "openssl: cannot create the test CA"
    chmod 600 "$DIR/ca.key"
    chmod 644 "$DIR/ca.pem"
    rm -f "$DATA/server.crt"
  fi
  if [ ! -s "$DATA/server.crt" ] || [ ! -s "$DATA/server.key" ]; then
    local tmp
    tmp=$(mktemp -d)
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$tmp/ext"
    if ! { openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$tmp/server.key" -out "$tmp/server.csr" >/dev/null 2>&1 \
      && openssl x509 -req -in "$tmp/server.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca.key" -CAcreateserial \
        -days 3650 -extfile "$tmp/ext" -out "$tmp/server.crt" >/dev/null 2>&1; }; then
      rm -rf "$tmp"
      die "openssl: cannot create the server certificate"
    fi
    install -m 600 -o "$OWNER" "$tmp/server.key" "$DATA/server.key"
    install -m 644 -o "$OWNER" "$tmp/server.crt" "$DATA/server.crt"
    rm -rf "$tmp"
  fi
  # TLS only, from loopback; the socket (pg_ctl's own checks) stays open. The
  # server's own user logs in without a password (the tests' and the local cloud's
  # admin); every other user with its password, as on Aurora: the local Data API
  # (localcloud rds_data.py) must refuse a job's role whose secret is wrong.
  cat >"$DATA/pg_hba.conf" <<'HBA'
local     all all                trust
hostssl   all postgres 127.0.0.1/32   trust
hostssl   all postgres ::1/128        trust
hostssl   all all 127.0.0.1/32   scram-sha-256
hostssl   all all ::1/128        scram-sha-256
hostnossl all all 0.0.0.0/0      reject
hostnossl all all ::/0           reject
HBA
  chown "$OWNER" "$DATA/pg_hba.conf"
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
  ensure_tls
  # A stale postmaster.pid from a killed server would stop pg_ctl; the status check
  # above already said no server runs on this data directory.
  rm -f "$DATA/postmaster.pid"
  local attempt port
  for attempt in 1 2 3; do
    port=$(free_port)
    if as_pg "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 60 \
      -o "-h 127.0.0.1 -p $port -k $DATA -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key" \
      start >/dev/null 9>&-; then
      echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=verify-full&sslrootcert=$DIR/ca.pem" >"$DIR/url"
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
  url) if running; then cat "$DIR/url"; else die "not running (scripts/pg.sh up)"; fi ;;
esac
