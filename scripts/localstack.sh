#!/usr/bin/env bash
# The project's LocalStack (host mode, no Docker) for tests and the local cloud.
#
#   scripts/localstack.sh up        install if needed, start if not running, print the endpoint
#   scripts/localstack.sh down      stop it (SIGTERM, then SIGKILL after 10 s)
#   scripts/localstack.sh endpoint  print the endpoint of the running instance
#   scripts/localstack.sh status    exit 0 when our instance is running and healthy
#   scripts/localstack.sh install   install (or update) the venv and the plugin package only
#   scripts/localstack.sh python    print the venv's interpreter (installed or not)
#
# Everything lives under ${LIVE_CI_WORK:-<repo>/.work}: the venv, LocalStack's
# volume/config/home, its log, pid and endpoint. `up` is idempotent and safe when
# several test processes call it at once (flock).
#
# Step Functions reads SFN_MOCK_CONFIG once, at start, so one instance serves every
# test only if the mock file's path is fixed: `up` copies `SFN_MOCK_CONFIG` (default:
# statemachine/testdata/sfn-mock-config.json) to <work>/localstack/sfn-mock-config.json
# and restarts the instance when its content changed.
#
# The project's LocalStack plugin package (localcloud/, see localcloud/README.md) is
# installed into the venv and enabled: ECS and SES v2 (moto-backed), an ECS agent
# that runs tasks as local processes, and Lambda functions (provided.* runtimes) run
# as local processes (LAMBDA_RUNTIME_EXECUTOR=live-ci-process). The plugin is
# reinstalled, and a running instance restarted, when its sources change.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${LIVE_CI_WORK:-$root/.work}"
# Absolute: LocalStack runs from its state dir.
work="$(mkdir -p "$work" && cd "$work" && pwd)"
# LocalStack's venv: the work dir's, unless LIVE_CI_VENV names one to share (`make
# test`'s several local clouds share one install; `python` prints its interpreter).
venv="${LIVE_CI_VENV:-$work/venv}"
state="$work/localstack"
# Pinned exactly: the local runtime relies on LocalStack internals that have no
# stable interface (see shared DESIGN.md, "Local cloud").
# psycopg: the plugin's rds-data service talks to the local PostgreSQL with it (the
# binary wheel bundles libpq with TLS, so no system library is needed).
requirements=("localstack-core[runtime]==2026.3.0" "cbor2<6" "pyopenssl<26" "cryptography<47" "service-identity"
  "psycopg[binary]==3.3.9")
port="${LIVE_CI_LOCALSTACK_PORT:-4566}"
mock_src="${SFN_MOCK_CONFIG:-$root/statemachine/testdata/sfn-mock-config.json}"
mock="$state/sfn-mock-config.json"
plugin_src="$root/localcloud"
plugin_stamp="$venv/.live-ci-localcloud.sha256"
# The plugin's own files (task logs, Lambda environment logs); also the value of
# LIVE_CI_LOCALCLOUD_OWNER, which every process it starts carries.
plugin_state="$state/localcloud"
image_map="${LIVE_CI_LOCAL_IMAGE_MAP:-$work/localcloud/image-map.json}"
# LIVE_CI_IAM_ENFORCE (default 1): requests signed with credentials the local cloud
# issued for a role are authorised as AWS would (localcloud/README.md, "IAM"); 0 turns
# it off. A running instance started with the other setting is restarted.
iam_enforce="${LIVE_CI_IAM_ENFORCE:-1}"

log() { printf 'localstack: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

find_python() {
  if [ -n "${LIVE_CI_PYTHON:-}" ]; then echo "$LIVE_CI_PYTHON"; return; fi
  # localstack-core 2026.3.0 imports `warnings.deprecated`, new in 3.13: 3.12 fails
  # at start-up ("No component plugins found"), 3.11 already at import.
  local candidate
  # Newest first needs sort -V; pyenv's directory names are plain versions.
  # shellcheck disable=SC2012
  for candidate in $(ls -d /root/.pyenv/versions/3.1[3-9].* 2>/dev/null | sort -V -r); do
    if [ -x "$candidate/bin/python3" ]; then echo "$candidate/bin/python3"; return; fi
  done
  command -v python3.13 || die "no python >= 3.13 found (looked in /root/.pyenv/versions/3.1[3-9].* and PATH; set LIVE_CI_PYTHON)"
}

# A content hash of the plugin package's sources: the install stamp.
plugin_hash() {
  (cd "$plugin_src" && find pyproject.toml src -type f \( -name '*.py' -o -name '*.toml' \) -print0 \
    | sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

plugin_installed() {
  [ "$(cat "$plugin_stamp" 2>/dev/null)" = "$(plugin_hash)" ]
}

install_plugin() {
  if plugin_installed; then return; fi
  log "installing the plugin package from $plugin_src"
  # No build isolation: the venv's setuptools (a LocalStack dependency) builds it
  # offline. --no-deps: it must not touch LocalStack's pins. A copy, not editable:
  # LocalStack never sees a half-edited source tree.
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
    --force-reinstall "$plugin_src" >&2
  rm -rf "$plugin_src/build" "$plugin_src"/src/*.egg-info
  # plux caches the entry points under LocalStack's HOME, keyed without the plugin's
  # own metadata: a new entry point (hook, provider) would stay unseen.
  rm -rf "$state/home/.cache/plux"
  plugin_hash >"$plugin_stamp"
}

installed() {
  [ -x "$venv/bin/python" ] || return 1
  "$venv/bin/python" - <<'EOF' 2>/dev/null
import importlib.metadata as m, sys
def major(name):
    return int(m.version(name).split(".")[0])
ok = (m.version("localstack-core") == "2026.3.0" and major("cbor2") < 6
      and major("pyopenssl") < 26 and major("cryptography") < 47
      and m.version("psycopg") == "3.3.9" and m.version("psycopg-binary") == "3.3.9")
# The [runtime] extra: the gateway, Step Functions' parser and the moto backends.
for name in ("service-identity", "rolo", "hypercorn", "antlr4-python3-runtime", "moto-ext"):
    m.version(name)
sys.exit(0 if ok else 1)
EOF
}

install() {
  if installed; then install_plugin; return; fi
  local python started
  python="$(find_python)"
  started=$(date +%s.%N)
  log "installing ${requirements[*]} into $venv (python: $python)"
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${requirements[@]}" >&2
  installed || die "install into $venv did not give the pinned versions"
  install_plugin
  log "installed in $(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}') s"
}

healthy() { curl -sf -m 2 "$1/_localstack/health" >/dev/null 2>&1; }

# Our instance: the recorded pid is alive and the recorded endpoint answers.
running() {
  [ -f "$state/pid" ] && [ -f "$state/endpoint" ] || return 1
  kill -0 "$(cat "$state/pid")" 2>/dev/null || return 1
  healthy "$(cat "$state/endpoint")"
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
  "$(find_python)" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

checksum() { sha256sum "$1" | cut -d' ' -f1; }

# What a running instance was started with: the mock config and the plugin sources.
config_sum() { printf '%s %s %s %s\n' "$(checksum "$mock_src")" "$(plugin_hash)" "$image_map" "$iam_enforce"; }

# Processes the plugin started for this instance (Lambda inits and runtimes, ECS
# tasks), found by the variable they carry. They watch LocalStack's pid and exit
# within a second of it; anything left after that is killed by pid.
owned_pids() {
  local environ pid
  for environ in /proc/[0-9]*/environ; do
    pid="${environ#/proc/}"; pid="${pid%/environ}"
    [ "$pid" != $$ ] || continue
    grep -qzxF "LIVE_CI_LOCALCLOUD_OWNER=$plugin_state" "$environ" 2>/dev/null && echo "$pid"
  done
  return 0
}

# A process that is exiting has already dropped its memory, environment included, so
# owned_pids no longer lists it, yet it is not a zombie: it still runs.
exiting() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [ "${stat%% *}" != Z ]
}

reap_owned() {
  local waited=0 pids seen="" pid
  while pids="$(owned_pids)" && [ -n "$pids" ] && [ $waited -lt 30 ]; do
    seen="$seen $pids"
    sleep 0.1
    waited=$((waited + 1))
  done
  if [ -n "$pids" ]; then
    log "killing leftover processes: ${pids//$'\n'/ }"
    # shellcheck disable=SC2086 # one pid a word
    kill -KILL $pids 2>/dev/null || true
  fi
  # Return only once every process seen has finished exiting (at most 1 s each).
  for pid in $seen $pids; do
    waited=0
    while exiting "$pid" && [ $waited -lt 20 ]; do sleep 0.05; waited=$((waited + 1)); done
  done
}

stop() {
  [ -f "$state/pid" ] || return 0
  local pid waited=0
  pid="$(cat "$state/pid")"
  if kill -0 "$pid" 2>/dev/null; then
    # Started with setsid: the process group is LocalStack and only its children.
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    # It sometimes hangs on SIGTERM.
    while kill -0 "$pid" 2>/dev/null && [ $waited -lt 100 ]; do sleep 0.1; waited=$((waited + 1)); done
    if kill -0 "$pid" 2>/dev/null; then
      log "pid $pid ignored SIGTERM for 10 s: SIGKILL"
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
    log "stopped (pid $pid)"
  fi
  reap_owned
  rm -f "$state/pid" "$state/endpoint" "$state/mock.sha256" "$state/config.sha256"
}

start() {
  [ -f "$mock_src" ] || die "mock config '$mock_src' does not exist"
  if running && [ "$(cat "$state/config.sha256" 2>/dev/null)" = "$(config_sum)" ]; then
    cat "$state/endpoint"
    return
  fi
  if running; then log "mock config '$mock_src', the plugin or the image map changed: restarting"; fi
  stop
  install
  mkdir -p "$state/volume" "$state/config" "$state/home" "$plugin_state"
  if [ -z "${LIVE_CI_LOCAL_IMAGE_MAP:-}" ] && [ ! -e "$image_map" ]; then
    mkdir -p "$(dirname "$image_map")"
    echo '{}' >"$image_map"
  fi
  cp "$mock_src" "$mock"
  # LocalStack's temp dir (unzipped Lambda code, also the functions' and tasks' TMPDIR)
  # lives with its state and starts empty: Lambda code caches would otherwise pile up
  # in /tmp across runs.
  rm -rf "$state/tmp"
  mkdir -p "$state/tmp"
  local use_port="$port"
  if port_busy "$use_port"; then
    use_port="$(free_port)"
    log "port $port is taken by something that is not ours: using $use_port"
  fi
  local endpoint="http://127.0.0.1:$use_port" started pid
  started=$(date +%s.%N)
  # fd 9 (the flock) is closed in the child, or LocalStack would hold the lock for
  # its whole life. Run from the state dir: a folder in the working dir named like a LocalStack
  # plugin package would shadow it.
  (
    cd "$state"
    # LOCALSTACK_HOST: URLs it hands out (queue URLs, Function URLs) carry the
    # port it really listens on. No SQS metrics: they go to localhost:4566.
    exec env GATEWAY_LISTEN="127.0.0.1:$use_port" GATEWAY_SERVER=live-ci-twisted \
      LOCALSTACK_HOST="localhost.localstack.cloud:$use_port" SQS_DISABLE_CLOUDWATCH_METRICS=1 \
      DNS_ADDRESS=0 DISABLE_EVENTS=1 SKIP_SSL_CERT_DOWNLOAD=1 \
      LOCALSTACK_VOLUME_DIR="$state/volume" CONFIG_DIR="$state/config" \
      HOME="$state/home" TMPDIR="$state/tmp" SFN_MOCK_CONFIG="$mock" \
      LAMBDA_RUNTIME_EXECUTOR=live-ci-process LIVE_CI_LOCALCLOUD_DIR="$plugin_state" \
      LIVE_CI_LOCALCLOUD_OWNER="$plugin_state" LIVE_CI_LOCAL_IMAGE_MAP="$image_map" \
      LIVE_CI_PG_URL_FILE="$work/pg/url" LIVE_CI_IAM_ENFORCE="$iam_enforce" \
      setsid "$venv/bin/python" -m localstack.runtime.main
  ) >"$state/log" 2>&1 </dev/null 9>&- &
  pid=$!
  echo "$pid" >"$state/pid"
  for _ in $(seq 1 600); do
    if healthy "$endpoint"; then break; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$state/log" >&2 || true
      rm -f "$state/pid"
      die "exited during start-up (log: $state/log)"
    fi
    sleep 0.1
  done
  if ! healthy "$endpoint"; then
    tail -n 30 "$state/log" >&2 || true
    stop
    die "not healthy after 60 s at $endpoint (log: $state/log)"
  fi
  echo "$endpoint" >"$state/endpoint"
  config_sum >"$state/config.sha256"
  log "started pid $pid at $endpoint in $(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}') s"
  echo "$endpoint"
}

locked() {
  mkdir -p "$state"
  exec 9>"$state/lock"
  flock 9
  "$@"
}

case "${1:-}" in
  up) locked start ;;
  down) locked stop ;;
  endpoint) running || die "not running (scripts/localstack.sh up)"; cat "$state/endpoint" ;;
  status) running ;;
  install) locked install ;;
  python) echo "$venv/bin/python" ;;
  *) die "usage: $0 up|down|endpoint|status|install|python" ;;
esac
