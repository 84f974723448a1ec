#!/usr/bin/env bash
# The project's local cloud: PostgreSQL (scripts/pg.sh) + LocalStack with the
# live-ci plugin (scripts/localstack.sh): Lambda functions and ECS tasks run as
# local processes, ECS and SES v2 are served, no Docker.
#
#   scripts/local-cloud.sh up      start both (idempotent); print the client env
#   scripts/local-cloud.sh env     print the client env of the running cloud
#   scripts/local-cloud.sh status  exit 0 when both run; say what runs
#   scripts/local-cloud.sh down    stop both; no process of theirs is left
#   scripts/local-cloud.sh smoke [PYTEST ARGS]
#                                  the start-up smoke tests (localcloud/tests);
#                                  start the cloud for the run and stop it after,
#                                  unless it was already running
#
# The env is printed as `export NAME=value` lines: `eval "$(scripts/local-cloud.sh up)"`
# (LIVE_CI_PG_URL single-quoted: its TLS parameters hold `&`).
# State lives under ${LIVE_CI_WORK:-<repo>/.work} like the two scripts it drives.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${LIVE_CI_WORK:-$root/.work}"
work="$(mkdir -p "$work" && cd "$work" && pwd)"
export LIVE_CI_WORK="$work"
# Pinned: the smoke tests run in LocalStack's venv (boto3 comes with LocalStack).
pytest_requirement="pytest==9.2.0"
region="${AWS_REGION:-us-east-1}"

log() { printf 'local-cloud: %s\n' "$*" >&2; }

print_env() {
  local endpoint="$1" pg_url="$2"
  local image_map="${LIVE_CI_LOCAL_IMAGE_MAP:-$work/localcloud/image-map.json}"
  cat <<EOF
export AWS_ENDPOINT_URL=$endpoint
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export AWS_REGION=$region
export AWS_DEFAULT_REGION=$region
export LIVE_CI_AWS_ENDPOINT=$endpoint
export LIVE_CI_PG_URL='$pg_url'
export LIVE_CI_LOCAL_IMAGE_MAP=$image_map
export LIVE_CI_LOCALCLOUD_DIR=$work/localstack/localcloud
export LIVE_CI_SES_MAILBOX_URL=$endpoint/_aws/ses
EOF
}

up() {
  local pg_url endpoint
  pg_url="$(bash "$root/scripts/pg.sh" up)"
  endpoint="$(bash "$root/scripts/localstack.sh" up)"
  print_env "$endpoint" "$pg_url"
}

env_of_running() {
  local pg_url endpoint
  pg_url="$(bash "$root/scripts/pg.sh" url)" || exit 1
  endpoint="$(bash "$root/scripts/localstack.sh" endpoint)" || exit 1
  print_env "$endpoint" "$pg_url"
}

status() {
  local rc=0
  if bash "$root/scripts/pg.sh" url >/dev/null 2>&1; then log "postgres: $(bash "$root/scripts/pg.sh" url)"; else log "postgres: down"; rc=1; fi
  if bash "$root/scripts/localstack.sh" status; then log "localstack: $(bash "$root/scripts/localstack.sh" endpoint)"; else log "localstack: down"; rc=1; fi
  return $rc
}

down() {
  # LocalStack first: its Lambda and ECS processes may be using the database.
  bash "$root/scripts/localstack.sh" down
  bash "$root/scripts/pg.sh" down
}

smoke() {
  local python was_up=0 rc=0
  python="$(bash "$root/scripts/localstack.sh" python)"
  bash "$root/scripts/localstack.sh" install
  if ! "$python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("pytest") != "9.2.0")' 2>/dev/null; then
    "$python" -m pip install -q --disable-pip-version-check "$pytest_requirement" >&2
  fi
  status 2>/dev/null && was_up=1
  # The env the tests get is the one a client gets.
  eval "$(up)"
  # With a cloud someone else started, the teardown test is skipped (it would stop it).
  LIVE_CI_LOCALCLOUD_SMOKE_OWNS=$((1 - was_up)) LIVE_CI_LOCALCLOUD_SCRIPT="$root/scripts/local-cloud.sh" \
    "$python" -m pytest -q -p no:cacheprovider "$root/localcloud/tests" "$@" || rc=$?
  if [ $was_up = 0 ]; then down; fi
  return $rc
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  up) up ;;
  env) env_of_running ;;
  status) status ;;
  down) down ;;
  smoke) smoke "$@" ;;
  *) echo "usage: $0 up|env|status|down|smoke [PYTEST ARGS]" >&2; exit 2 ;;
esac
