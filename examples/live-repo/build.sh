#!/usr/bin/env bash
# Builds the sample live repo into DEST as a real git history: the base tree on
# `main`, a feature branch that widens the shared VPC, adds a dev worker and
# removes a legacy unit, merged into `main` with a merge commit (as GitHub does).
# Idempotent: DEST is recreated. Prints the merge commit id.
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="${1:?usage: build.sh DEST}"
rm -rf "$dest"
mkdir -p "$dest"
export GIT_AUTHOR_NAME="Live CI Demo" GIT_AUTHOR_EMAIL="demo@example.com"
export GIT_COMMITTER_NAME="Live CI Demo" GIT_COMMITTER_EMAIL="demo@example.com"
export GIT_AUTHOR_DATE="2026-01-05T10:00:00Z" GIT_COMMITTER_DATE="2026-01-05T10:00:00Z"
g() { git -C "$dest" -c init.defaultBranch=main -c commit.gpgsign=false "$@"; }
cp -R "$src/base/." "$dest/"
g init -q
g add -A
g commit -qm "Initial live repository: shared network, dev app stack"
g checkout -qb feature/bigger-vpc
cp -R "$src/change/files/." "$dest/"
grep -v '^#' "$src/change/REMOVED" | while read -r unit; do
  [ -n "$unit" ] && g rm -rq "$unit"
done
# Re-hash every file: an overlay file with the same size and a copied mtime can
# look unchanged to git's index (same-length edits such as /16 -> /15).
g rm -rq --cached .
g add -A
GIT_AUTHOR_DATE="2026-01-06T10:00:00Z" GIT_COMMITTER_DATE="2026-01-06T10:00:00Z" \
  g commit -qm "Widen the shared VPC, add the dev worker, retire the legacy queue"
g checkout -q main
GIT_AUTHOR_DATE="2026-01-07T10:00:00Z" GIT_COMMITTER_DATE="2026-01-07T10:00:00Z" \
  g merge -q --no-ff -m "Merge pull request #42 from example/feature/bigger-vpc" feature/bigger-vpc
g rev-parse HEAD
