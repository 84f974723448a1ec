#!/usr/bin/env bash
# The Terraform module's checks (make lint): formatting, init + validate of the
# module and its example with providers from the offline mirror only, and
# checkov. The contract between the module and the binaries is a cargo test
# (crates/contract), run with the others.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
work=${LIVE_CI_WORK:-$root/.work}

# The machine points TF_CLI_CONFIG_FILE at a file that does not exist; ours
# installs providers from /opt/tf-plugins and never from the registry.
export TF_CLI_CONFIG_FILE=$root/scripts/terraformrc
export TF_IN_AUTOMATION=1 TF_INPUT=0 CHECKPOINT_DISABLE=1

CHECKOV_VERSION=3.3.30
checkov_venv=$work/checkov-venv

mkdir -p "$work"

step() { printf 'infra: %s\n' "$*"; }

command -v terraform >/dev/null || { echo "infra: terraform is not installed" >&2; exit 1; }

step "terraform fmt -check"
terraform fmt -check -recursive infra
terraform fmt -check -recursive examples/local

# examples/local: the module as deployed into the local cloud (scripts/deploy-local.sh).
for dir in infra infra/examples/complete examples/local; do
  step "terraform init + validate $dir"
  start=$(date +%s)
  if ! out=$(terraform -chdir="$dir" init -backend=false -input=false -no-color 2>&1); then
    printf '%s\n' "$out" >&2
    exit 1
  fi
  terraform -chdir="$dir" validate -no-color
  step "$dir validated in $(($(date +%s) - start)) s"
done

# The module pinned to one provider version of its range: the mirror's here,
# the range's minimum in the provider-range job of .github/workflows/ci.yml.
step "terraform validate infra with the mirror's aws provider pinned"
bash scripts/validate-provider-range.sh mirror

# The module's own tests (infra/tests/*.tftest.hcl): plans against a mocked
# AWS provider, no account and no network.
step "terraform test infra"
terraform -chdir=infra test -no-color

# checkov from PyPI into a project venv, once (pyenv's 3.12 is the one it was
# tried with; 3.13 next).
if [ "$("$checkov_venv/bin/checkov" --version 2>/dev/null)" != "$CHECKOV_VERSION" ]; then
  python=
  for candidate in /root/.pyenv/versions/3.12*/bin/python /root/.pyenv/versions/3.13*/bin/python; do
    if [ -x "$candidate" ]; then python=$candidate; break; fi
  done
  [ -n "$python" ] || python=$(command -v python3)
  step "installing checkov $CHECKOV_VERSION into $checkov_venv ($python)"
  rm -rf "$checkov_venv"
  "$python" -m venv "$checkov_venv"
  "$checkov_venv/bin/pip" install --quiet --disable-pip-version-check "checkov==$CHECKOV_VERSION"
fi

step "checkov (offline)"
# The example calls the module, so one scan covers both with the example's values.
"$checkov_venv/bin/checkov" --directory infra --framework terraform --skip-download \
  --quiet --compact > "$work/checkov.txt" 2>&1 || {
  cat "$work/checkov.txt" >&2
  echo "infra: checkov reports failed checks (fix them, or skip with #checkov:skip=ID:reason)" >&2
  exit 1
}
# --quiet lists only failures: the summary line is the figure worth showing.
grep -E '^Passed checks' "$work/checkov.txt"
step "ok"
