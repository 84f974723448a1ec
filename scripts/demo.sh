#!/usr/bin/env bash
# The main job on a local default: build the sample live repo as a real git
# history (a merged pull request), then show what live-ci would deploy for it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${WORK:-$root/.work}/demo"
bin="${CARGO_TARGET_DIR:-$root/target}/debug/live-ci"
# `--bin` alone, not `-p live-ci-cli`: the workspace's feature set, the one `cargo build
# --workspace` compiles, so the dependencies are not compiled a second time.
[ -x "$bin" ] || cargo build --locked -q --bin live-ci
repo="$work/live-repo"
merge=$("$root/examples/live-repo/build.sh" "$repo")
if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
step() { printf '\n%s== %s%s\n$ %s\n' "$bold" "$1" "$plain" "${*:2}"; "${@:2}"; }
echo "sample live repo: $repo (merge commit ${merge:0:12})"
git -C "$repo" log --oneline --graph
step "Units and their dependencies" "$bin" graph --repo "$repo" --format mermaid
step "What the merged pull request affects (removals need --allow-destroy)" \
  "$bin" affected --repo "$repo" --base HEAD^1 --head HEAD --format table
step "The deployment live-ci would run, two units at a time" \
  "$bin" plan --repo "$repo" --base HEAD^1 --head HEAD --allow-destroy \
  --accounts "$root/examples/live-repo/accounts.json" --max-parallel 2 --format table
step "Filter: the shared VPC and everything that depends on it" \
  "$bin" find --repo "$repo" --filter '...vpc' --format table
step "Filter: units changed by the merge, except in the dev account" \
  "$bin" find --repo "$repo" --filter '[HEAD^1...HEAD]' --filter '!./dev/**' --format table
