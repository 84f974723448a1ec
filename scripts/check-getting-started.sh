#!/usr/bin/env bash
# Runs docs/getting-started.md literally: its ```sh blocks, in order, in one bash
# shell (set -euo pipefail) from the repository root, then checks the run ended
# `succeeded`. The local cloud is its own: its LocalStack port
# (LIVE_CI_WALKTHROUGH_PORT, default 4590) and its work dir (LIVE_CI_WALKTHROUGH_WORK,
# default <LIVE_CI_WORK>/walkthrough: its PostgreSQL, LocalStack state and image map),
# so it runs beside the tests' local cloud without touching it (`make test` runs it
# beside the test binaries). LocalStack's venv is the main work dir's (LIVE_CI_VENV,
# unless set: the same pinned packages, not installed twice). Prints the
# time it took. On failure the local cloud is stopped. A local cloud already running
# under the walk-through's work dir is left alone: the check is skipped, saying so.
#
#   scripts/check-getting-started.sh [DOC]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
doc="${1:-$root/docs/getting-started.md}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Every ```sh block's lines, in document order; nothing else.
python3 - "$doc" >"$tmp/walkthrough.sh" <<'PY'
import re, sys
inside = False
for line in open(sys.argv[1], encoding="utf-8"):
    fence = re.match(r"^```(\w*)\s*$", line)
    if fence:
        inside = not inside and fence.group(1) == "sh"
        continue
    if inside:
        sys.stdout.write(line)
PY
[ -s "$tmp/walkthrough.sh" ] || { echo "getting-started: no sh block in $doc" >&2; exit 1; }

export LIVE_CI_LOCALSTACK_PORT="${LIVE_CI_WALKTHROUGH_PORT:-4590}"
main_work="${LIVE_CI_WORK:-$root/.work}"
export LIVE_CI_WORK="${LIVE_CI_WALKTHROUGH_WORK:-$main_work/walkthrough}"
mkdir -p "$LIVE_CI_WORK"
# LocalStack's venv: the main work dir's (scripts/localstack.sh), not a second install.
export LIVE_CI_VENV="${LIVE_CI_VENV:-$main_work/venv}"
cd "$root"
# The walk-through starts the local cloud and stops it: one someone else started
# (under the same LIVE_CI_WORK) is not taken over.
if bash scripts/local-cloud.sh status >/dev/null 2>&1; then
  echo "getting-started: SKIPPED: the local cloud of ${LIVE_CI_WORK:-$root/.work} already runs (scripts/local-cloud.sh down, then run this again)" >&2
  exit 0
fi
start=$(date +%s)
if ! bash -euo pipefail "$tmp/walkthrough.sh" 2>&1 | tee "$tmp/out"; then
  echo "getting-started: the walk-through failed (output above); stopping the local cloud" >&2
  bash scripts/local-cloud.sh down >/dev/null 2>&1 || true
  exit 1
fi
for expected in "receiver answered 200" "succeeded"; do
  grep -q "$expected" "$tmp/out" || {
    echo "getting-started: the output lacks \"$expected\"" >&2
    exit 1
  }
done
if bash scripts/local-cloud.sh status >/dev/null 2>&1; then
  echo "getting-started: the local cloud still runs after the tear-down step" >&2
  exit 1
fi
echo "getting-started: ok in $(($(date +%s) - start)) s"
