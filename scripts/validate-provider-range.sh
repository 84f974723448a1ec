#!/usr/bin/env bash
# terraform validate of the module (infra/) with the AWS provider pinned to one
# version: `min` (the lower bound infra/versions.tf declares), `mirror` (the
# newest in the offline mirror /opt/tf-plugins) or an exact version such as
# 5.81.0. The module's constraint is a range; validating only with whatever
# init picks would never exercise its lower end.
#
# Providers come from the offline mirror (scripts/terraformrc) unless
# LIVE_CI_PROVIDER_REGISTRY=1, which installs from the Terraform registry: the
# project's machines have only the mirror's 5.100.0, so `min` runs where the
# registry is reachable (the `provider-range` job of .github/workflows/ci.yml)
# and `mirror` runs in `make lint` (scripts/infra-check.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
mirror=/opt/tf-plugins/registry.terraform.io/hashicorp/aws

which=${1:?usage: validate-provider-range.sh min|mirror|<version>}
case $which in
  min)
    # The `>= X.Y.Z` of the aws entry in infra/versions.tf.
    version=$(sed -n 's/^ *version *= *">= *\([0-9][0-9.]*\).*/\1/p' infra/versions.tf | head -n 1)
    [ -n "$version" ] || { echo "validate-provider-range: no '>= x.y.z' aws constraint in infra/versions.tf" >&2; exit 1; }
    ;;
  mirror)
    version=$(find "$mirror" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort -V | tail -n 1)
    [ -n "$version" ] || { echo "validate-provider-range: no aws provider in the offline mirror $mirror" >&2; exit 1; }
    ;;
  *)
    [[ $which =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "validate-provider-range: not a version: '$which'" >&2; exit 1; }
    version=$which
    ;;
esac

if [ "${LIVE_CI_PROVIDER_REGISTRY:-0}" = 1 ]; then
  unset TF_CLI_CONFIG_FILE
else
  export TF_CLI_CONFIG_FILE=$root/scripts/terraformrc
  if [ ! -d "$mirror/$version" ]; then
    echo "validate-provider-range: hashicorp/aws $version is not in the offline mirror $mirror (set LIVE_CI_PROVIDER_REGISTRY=1 where the registry is reachable)" >&2
    exit 1
  fi
fi
export TF_IN_AUTOMATION=1 TF_INPUT=0 CHECKPOINT_DISABLE=1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A copy of the module as a git::…//infra source would fetch it (no
# .terraform, no state), with an override file that narrows the range to the
# one version: Terraform merges an override's required_providers entry into the
# module's, so the module's own constraint must admit it or init fails.
tar -C infra --exclude=.terraform --exclude='.terraform.lock.hcl' --exclude='*.tfstate*' -cf - . | tar -C "$work" -xf -
cat >"$work/zz_provider_pin_override.tf" <<TF
terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "= $version"
    }
  }
}
TF
if ! out=$(terraform -chdir="$work" init -backend=false -input=false -no-color 2>&1); then
  printf '%s\n' "$out" >&2
  echo "validate-provider-range: init with hashicorp/aws $version failed" >&2
  exit 1
fi
selected=$(sed -n '/registry.terraform.io\/hashicorp\/aws/,/}/s/^ *version *= *"\(.*\)"/\1/p' "$work/.terraform.lock.hcl")
[ "$selected" = "$version" ] || { echo "validate-provider-range: init selected hashicorp/aws '$selected', not $version" >&2; exit 1; }
terraform -chdir="$work" validate -no-color
echo "validate-provider-range: infra/ validates with hashicorp/aws $version"
