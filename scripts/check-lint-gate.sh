#!/usr/bin/env bash
# Checks that `make test`'s build lints: the compiler of the workspace's crates
# (RUSTC_WORKSPACE_WRAPPER) is clippy-driver with -D warnings (CLIPPY_ARGS), so a
# clippy lint fails the build as `cargo clippy -- -D warnings` would. Compiles two
# one-function crates through that wrapper: one clean (must pass), one with a
# clippy lint (clone_on_copy: must fail naming it). Without the gate, a lint
# would pass `make test` unseen.
#
#   RUSTC_WORKSPACE_WRAPPER=clippy-driver CLIPPY_ARGS=-Dwarnings scripts/check-lint-gate.sh
set -euo pipefail

wrapper="${RUSTC_WORKSPACE_WRAPPER:-}"
[ -n "$wrapper" ] || { echo "lint gate: RUSTC_WORKSPACE_WRAPPER is not set: the build would not lint" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

compile() {
  # As cargo calls it: the wrapper, then the compiler, then rustc's arguments.
  "$wrapper" "${RUSTC:-rustc}" --edition 2024 --crate-type lib --crate-name probe \
    --emit=metadata -o "$tmp/libprobe.rmeta" "$1" 2>"$tmp/stderr"
}

printf '%s\n' '//! Probe.' '/// Probe.' 'pub fn probe(x: u32) -> u32 {' '    x' '}' >"$tmp/clean.rs"
printf '%s\n' '//! Probe.' '/// Probe.' 'pub fn probe(x: u32) -> u32 {' '    x.clone()' '}' >"$tmp/linted.rs"

compile "$tmp/clean.rs" || { echo "lint gate: a clean crate failed through $wrapper:" >&2; cat "$tmp/stderr" >&2; exit 1; }
if compile "$tmp/linted.rs"; then
  echo "lint gate: a crate with a clippy lint (clone_on_copy) compiled through $wrapper (CLIPPY_ARGS=${CLIPPY_ARGS:-}): lints would not fail the build" >&2
  exit 1
fi
grep -q "clone_on_copy" "$tmp/stderr" || {
  echo "lint gate: the linted crate failed, but not on clippy's clone_on_copy:" >&2
  cat "$tmp/stderr" >&2
  exit 1
}
echo "lint gate: ok ($wrapper, CLIPPY_ARGS=${CLIPPY_ARGS:-}: a clippy lint fails the build)"
