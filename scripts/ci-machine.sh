#!/usr/bin/env bash
# Makes a bare Debian bookworm (root, as in .github/workflows/*.yml) the machine
# kind the project's scripts are written for, for CI runners outside this
# workplace: what such a machine has before `make test` installs the rest.
#   - Debian packages: a C toolchain, git, PostgreSQL 15, Python 3 with venv, curl, unzip;
#   - the Rust toolchain of Cargo.toml's rust-version, by rustup;
#   - terraform (TERRAFORM_VERSION, checked against HashiCorp's SHA-256 sums) and
#     the AWS provider (AWS_PROVIDER_VERSION) in /opt/tf-plugins, the offline
#     mirror scripts/terraformrc reads;
#   - Python >= 3.13 for LocalStack (scripts/localstack.sh), by uv, named in
#     LIVE_CI_PYTHON (written to $GITHUB_ENV when set).
# Idempotent: each step is skipped when its result is there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TERRAFORM_VERSION=${TERRAFORM_VERSION:-1.11.4}
AWS_PROVIDER_VERSION=${AWS_PROVIDER_VERSION:-5.100.0}
PYTHON_VERSION=${PYTHON_VERSION:-3.13}
rust_version=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
[ -n "$rust_version" ] || { echo "ci-machine: no rust-version in Cargo.toml" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "ci-machine: run as root (the machine kind's user)" >&2; exit 1; }

step() { printf 'ci-machine: %s\n' "$*"; }

step "Debian packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends \
  build-essential pkg-config cmake clang git curl ca-certificates unzip openssl \
  python3 python3-venv python3-pip postgresql-15 procps util-linux sudo

if ! command -v rustup >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/rustup" ]; then
  step "rustup with Rust $rust_version"
  curl -fsSL https://sh.rustup.rs | sh -s -- -y --profile minimal \
    --default-toolchain "$rust_version" --component clippy,rustfmt
fi

if [ "$(terraform version -json 2>/dev/null | sed -n 's/.*"terraform_version": *"\([^"]*\)".*/\1/p')" != "$TERRAFORM_VERSION" ]; then
  step "terraform $TERRAFORM_VERSION"
  tmp=$(mktemp -d)
  zip="terraform_${TERRAFORM_VERSION}_linux_amd64.zip"
  curl -fsSL -o "$tmp/$zip" "https://releases.hashicorp.com/terraform/$TERRAFORM_VERSION/$zip"
  curl -fsSL -o "$tmp/sums" "https://releases.hashicorp.com/terraform/$TERRAFORM_VERSION/terraform_${TERRAFORM_VERSION}_SHA256SUMS"
  (cd "$tmp" && grep " $zip\$" sums | sha256sum -c -)
  unzip -o -q "$tmp/$zip" terraform -d /usr/local/bin
  rm -rf "$tmp"
fi

if [ ! -d "/opt/tf-plugins/registry.terraform.io/hashicorp/aws/$AWS_PROVIDER_VERSION" ]; then
  step "the AWS provider $AWS_PROVIDER_VERSION into /opt/tf-plugins"
  tmp=$(mktemp -d)
  printf 'terraform {\n  required_providers {\n    aws = { source = "hashicorp/aws", version = "%s" }\n  }\n}\n' \
    "$AWS_PROVIDER_VERSION" >"$tmp/main.tf"
  (cd "$tmp" && TF_CLI_CONFIG_FILE=/dev/null terraform providers mirror /opt/tf-plugins)
  rm -rf "$tmp"
fi

python=$(command -v "python$PYTHON_VERSION" || true)
if [ -z "$python" ]; then
  step "Python $PYTHON_VERSION by uv"
  python3 -m venv /opt/uv
  /opt/uv/bin/pip install --quiet uv
  /opt/uv/bin/uv python install "$PYTHON_VERSION"
  python=$(/opt/uv/bin/uv python find "$PYTHON_VERSION")
fi
step "LIVE_CI_PYTHON=$python"
if [ -n "${GITHUB_ENV:-}" ]; then
  echo "LIVE_CI_PYTHON=$python" >>"$GITHUB_ENV"
fi
