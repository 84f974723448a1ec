#!/usr/bin/env bash
# Deploys live-ci (the infra/ module, through examples/local) into the local cloud:
# packages the debug binaries as Lambda zips whose bootstrap is a small wrapper,
# points the ECS task image at target/debug/live-ci-task, migrates the local
# metadb and runs `terraform apply`, then creates the target accounts' plan and apply
# roles trusting the task roles (scripts/target-account-roles.py: the local cloud
# enforces IAM) and verifies the voters' addresses in SES (scripts/ses-verify-voters.py:
# the local cloud's SES is in the sandbox, as a new account's). Idempotent: a second
# run applies no change unless an input changed.
#
#   scripts/deploy-local.sh apply     build, package, migrate, apply; print the outputs as JSON
#   scripts/deploy-local.sh destroy   terraform destroy of examples/local
#
# Needs the local cloud (scripts/local-cloud.sh up; its env is read from it).
# Inputs (environment; defaults in brackets):
#   LIVE_CI_GITHUB_API_URL   the GitHub API the components call (required for apply)
#   LIVE_CI_REPO_CLONE_URL   the live repository the tasks clone (required for apply)
#   LIVE_CI_WEBHOOK_SECRET [local-webhook-secret-for-the-local-cloud]  LIVE_CI_GITHUB_TOKEN [local-token]
#   LIVE_CI_VOTE_LINK_KEY  [local-vote-link-key-of-at-least-32-chars]
#   LIVE_CI_STATE_DIR      [$LIVE_CI_WORK/e2e/tfstate]  the sample units' terraform state
#   LIVE_CI_METADB_URL     [$LIVE_CI_PG_URL]  the metadb (a database of the local PostgreSQL)
#   LIVE_CI_METADB_CONNECTION [data-api]  data-api (the module default) or direct
#   LIVE_CI_LOG_LEVEL      [info]   LIVE_CI_SKIP_BUILD=1 skips `cargo build`
#   LIVE_CI_PROFILE        [debug]  the cargo profile whose binaries the wrappers and the
#                          task run: debug, or release (what AWS runs; make bench-pipeline
#                          BENCH_PROFILE=release)
#   LIVE_CI_ALLOW_DESTROY  [false]  the module's allow_destroy (true: merges destroy the units they remove)
#   LIVE_CI_MAX_PARALLEL   [4]      units deployed at once
#   LIVE_CI_DRIFT_SCHEDULE [unset]  the module's drift_schedule_expression (unset: no drift checks)
#   LIVE_CI_NOTIFICATION_FORMAT [unset]  the module's notification_format (unset: none; the
#                          URL parameter keeps the module's placeholder until you set it)
#   LIVE_CI_ACCOUNTS_FILE  [unset]  the accounts (JSON, as accounts.json); unset:
#                          examples/live-repo/accounts.json
#   LIVE_CI_GITHUB_APP_ID, LIVE_CI_GITHUB_APP_INSTALLATION_ID, LIVE_CI_GITHUB_APP_PRIVATE_KEY_FILE
#                          [unset]  all three: authenticate as this GitHub App instead of with
#                          LIVE_CI_GITHUB_TOKEN (the module's github_app); after the apply the
#                          key file's PEM goes into the SecureString the module names
#                          (github_app_private_key_ssm_parameter_name), as an operator puts it
#   LIVE_CI_LAMBDA_ZIPS    [unset]  a directory of `make package` zips (<function>/bootstrap.zip)
#                          deployed as they are instead of the debug wrappers (make e2e-release);
#                          they reach the metadb the way the module configures it, so they
#                          need a metadb_connection the local cloud serves without METADB_URL
#
# The metadb: with `data-api` (the module default) every component reaches it as in
# AWS, through the RDS Data API, which the local cloud serves from the local
# PostgreSQL (its database: the one LIVE_CI_METADB_URL names). With `direct`, the
# Lambda wrappers and the task's image-map entry hand METADB_URL to the binaries
# (in AWS the tasks get it from SSM, and the Lambdas stay on the Data API).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The debug binaries the local cloud runs (cargo's target dir, wherever it is).
profile="${LIVE_CI_PROFILE:-debug}"
case "$profile" in
  debug) profile_flag="" ;;
  release) profile_flag="--release" ;;
  *) printf 'deploy-local: LIVE_CI_PROFILE %s: expected debug or release\n' "'$profile'" >&2; exit 2 ;;
esac
bin_dir="${CARGO_TARGET_DIR:-$root/target}/$profile"
work="${LIVE_CI_WORK:-$root/.work}"
work="$(mkdir -p "$work" && cd "$work" && pwd)"
export LIVE_CI_WORK="$work"
deploy="$work/deploy-local"
tf_dir="$root/examples/local"
export TF_CLI_CONFIG_FILE="$root/scripts/terraformrc"
export TF_IN_AUTOMATION=1
# The plugin cache would copy the 600 MB AWS provider per init; the mirror is local.
unset TF_PLUGIN_CACHE_DIR

log() { printf 'deploy-local: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

cloud_env() {
  local env
  env="$(bash "$root/scripts/local-cloud.sh" env)" || die "the local cloud is not running: scripts/local-cloud.sh up"
  eval "$env"
}

# A zip whose bootstrap execs the debug binary: LocalStack copies and unzips
# every upload, and the debug binaries are hundreds of MB.
package_lambda() {
  local fn="$1" bin="$2" dir="$deploy/lambda/$1"
  mkdir -p "$dir/src"
  if [ -n "${LIVE_CI_LAMBDA_ZIPS:-}" ]; then
    local zip="$LIVE_CI_LAMBDA_ZIPS/$fn/bootstrap.zip"
    [ -f "$zip" ] || die "no $zip: run make package"
    cmp -s "$zip" "$dir/bootstrap.zip" || cp "$zip" "$dir/bootstrap.zip"
    rm -f "$dir/src/bootstrap"
    return
  fi
  cat >"$dir/src/bootstrap.new" <<EOF
#!/bin/sh
# live-ci local deployment: the debug build of $bin$metadb_note.
$metadb_export
exec '$bin_dir/$bin' "\$@"
EOF
  chmod 755 "$dir/src/bootstrap.new"
  # Rezip only on change, so a re-apply sees the same hash and updates nothing.
  if ! cmp -s "$dir/src/bootstrap.new" "$dir/src/bootstrap" || [ ! -f "$dir/bootstrap.zip" ]; then
    mv "$dir/src/bootstrap.new" "$dir/src/bootstrap"
    rm -f "$dir/bootstrap.zip"
    # Fixed mtime: the zip's bytes depend on the content only.
    touch -d 2026-01-01T00:00:00Z "$dir/src/bootstrap"
    (cd "$dir/src" && zip -qX "$dir/bootstrap.zip" bootstrap)
  else
    rm -f "$dir/src/bootstrap.new"
  fi
}

# The plugin re-reads the image map on every RunTask: the task image runs the
# debug live-ci-task with the metadb URL (ECS injects it from SSM in AWS) and the
# local clone URL.
write_image_map() {
  mkdir -p "$(dirname "$LIVE_CI_LOCAL_IMAGE_MAP")"
  python3 - "$LIVE_CI_LOCAL_IMAGE_MAP" <<EOF
import json, sys
argv = ["/usr/bin/env"] + (["METADB_URL=$metadb_url"] if "$metadb_connection" == "direct" else []) + ["REPO_CLONE_URL=$repo_clone_url",
        "TF_CLI_CONFIG_FILE=$root/scripts/terraformrc", "$bin_dir/live-ci-task"]
path = sys.argv[1]
try:
    current = json.load(open(path))
except Exception:
    current = {}
current["live-ci-task:local"] = argv
current["live-ci-task"] = argv
json.dump(current, open(path, "w"), indent=2)
EOF
}

apply() {
  cloud_env
  : "${LIVE_CI_GITHUB_API_URL:?set LIVE_CI_GITHUB_API_URL (the GitHub API, e.g. the fake)}"
  : "${LIVE_CI_REPO_CLONE_URL:?set LIVE_CI_REPO_CLONE_URL (the live repository to clone)}"
  repo_clone_url="$LIVE_CI_REPO_CLONE_URL"
  metadb_url="${LIVE_CI_METADB_URL:-$LIVE_CI_PG_URL}"
  metadb_connection="${LIVE_CI_METADB_CONNECTION:-data-api}"
  # The database the URL names (its path, without the TLS parameters).
  metadb_name="${metadb_url%%\?*}"
  metadb_name="${metadb_name##*/}"
  case "$metadb_connection" in
    data-api) metadb_export=""; metadb_note="" ;;
    direct) metadb_export="export METADB_URL='$metadb_url'"; metadb_note=", with the local metadb" ;;
    *) die "LIVE_CI_METADB_CONNECTION=$metadb_connection: expected data-api or direct" ;;
  esac
  local state_dir="${LIVE_CI_STATE_DIR:-$work/e2e/tfstate}"
  local allow_destroy="${LIVE_CI_ALLOW_DESTROY:-false}"
  case "$allow_destroy" in
    true|false) ;;
    *) die "LIVE_CI_ALLOW_DESTROY must be true or false, not \"$allow_destroy\"" ;;
  esac
  # A GitHub App (all three settings) or the token.
  local app_id="${LIVE_CI_GITHUB_APP_ID:-}" app_installation="${LIVE_CI_GITHUB_APP_INSTALLATION_ID:-}"
  local app_key_file="${LIVE_CI_GITHUB_APP_PRIVATE_KEY_FILE:-}" github_app=null
  if [ -n "$app_id$app_installation$app_key_file" ]; then
    [[ "$app_id" =~ ^[1-9][0-9]*$ ]] || die "LIVE_CI_GITHUB_APP_ID must be a github app id (a whole number), not \"$app_id\""
    [[ "$app_installation" =~ ^[1-9][0-9]*$ ]] || die "LIVE_CI_GITHUB_APP_INSTALLATION_ID must be an installation id (a whole number), not \"$app_installation\""
    [ -r "$app_key_file" ] || die "LIVE_CI_GITHUB_APP_PRIVATE_KEY_FILE \"$app_key_file\" is not a readable file (the app's private key, pem)"
    github_app="{\"id\": $app_id, \"installation_id\": $app_installation}"
  fi
  mkdir -p "$state_dir"
  # The units' state stands for a remote backend that the commands' own user (the
  # task image's child user, not root) writes to: anyone may add to it, as in /tmp.
  chmod 1777 "$state_dir"
  if [ "${LIVE_CI_SKIP_BUILD:-0}" != 1 ]; then
    log "cargo build ($profile binaries)"
    # shellcheck disable=SC2086 # an empty flag is no argument
    (cd "$root" && cargo build --locked --workspace --bins -q $profile_flag) >&2
  fi
  package_lambda receiver receiver
  package_lambda trigger-sf trigger-sf
  package_lambda approval-request approval-request
  package_lambda approval-response approval-response
  package_lambda notifier notifier
  write_image_map
  log "migrating the metadb"
  "$bin_dir/live-ci" migrate --database-url "$metadb_url" >&2

  # The sample units have no backend block: the templates add a local backend
  # whose state lives per commit and unit under the state dir, outside the
  # task's throwaway clone (printf's octal escapes, since {…} are placeholders).
  local backend="printf 'terraform \\173\\n  backend \"local\" \\173\\175\\n\\175\\n' > live_ci_backend.tf"
  local state="$state_dir/\$(git -C \"\$LIVE_CI_REPO_DIR\" rev-parse HEAD)"
  local init="$backend && mkdir -p \"$state\" && terraform init -input=false -no-color -backend-config=path=\"$state/\$(echo \"\$LIVE_CI_CFG_PATH\" | tr / _).tfstate\" >/dev/null"
  local plan="$init && terraform plan -input=false -no-color -out={plan_file}"
  local apply_cmd="$init && terraform apply -input=false -no-color -auto-approve {plan_file}"

  cat >"$deploy/local.auto.tfvars.json.new" <<EOF
{
  "endpoint": "$AWS_ENDPOINT_URL",
  "github_api_url": "$LIVE_CI_GITHUB_API_URL",
  "github_webhook_secret": "${LIVE_CI_WEBHOOK_SECRET:-local-webhook-secret-for-the-local-cloud}",
  "github_token": "${LIVE_CI_GITHUB_TOKEN:-local-token}",
  "github_app": $github_app,
  "vote_link_key": "${LIVE_CI_VOTE_LINK_KEY:-local-vote-link-key-of-at-least-32-chars}",
  "lambda_zip_dir": "$deploy/lambda",
  "log_level": "${LIVE_CI_LOG_LEVEL:-info}",
  "allow_destroy": $allow_destroy,
  "metadb_connection": "$metadb_connection",
  "metadb_name": "$metadb_name",
  "max_parallel": ${LIVE_CI_MAX_PARALLEL:-4},
  "account_parent_cfg": $(if [ -n "${LIVE_CI_ACCOUNTS_FILE:-}" ]; then cat "$LIVE_CI_ACCOUNTS_FILE"; else echo null; fi),
  "plan_command": $(printf '%s' "$plan" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'),
  "apply_command": $(printf '%s' "$apply_cmd" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'),
  "notification_format": $(if [ -n "${LIVE_CI_NOTIFICATION_FORMAT:-}" ]; then printf '"%s"' "$LIVE_CI_NOTIFICATION_FORMAT"; else echo null; fi),
  "drift_schedule_expression": $(if [ -n "${LIVE_CI_DRIFT_SCHEDULE:-}" ]; then printf '%s' "$LIVE_CI_DRIFT_SCHEDULE" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'; else echo null; fi)
}
EOF
  mv "$deploy/local.auto.tfvars.json.new" "$deploy/local.tfvars.json"
  local tf=(terraform -chdir="$tf_dir")
  export TF_DATA_DIR="$deploy/tf-data"
  log "terraform init"
  "${tf[@]}" init -input=false -no-color >&2
  log "terraform apply (about 90 s the first time)"
  "${tf[@]}" apply -input=false -no-color -auto-approve -state="$deploy/terraform.tfstate" \
    -var-file="$deploy/local.tfvars.json" >&2
  local outputs python
  outputs="$("${tf[@]}" output -json -state="$deploy/terraform.tfstate")"
  # LocalStack's venv has boto3.
  python="$(bash "$root/scripts/localstack.sh" python)"
  if [ "$github_app" != null ]; then
    # The module creates the key's parameter with a placeholder and ignores its
    # value: the key is put in SSM, never in the Terraform state.
    local key_param
    key_param="$(printf '%s' "$outputs" | python3 -c 'import json,sys; print(json.load(sys.stdin)["github_app_private_key_ssm_parameter_name"]["value"])')"
    log "putting the github app's private key into $key_param"
    "$python" - "$AWS_ENDPOINT_URL" "$key_param" "$app_key_file" <<'PY' >&2
import sys

import boto3

endpoint, name, key_file = sys.argv[1:4]
ssm = boto3.client("ssm", endpoint_url=endpoint, region_name="us-east-1")
# Encrypted under the module's key, as the parameter was created (an overwrite
# without KeyId would use the account's aws/ssm key, which no role may decrypt).
found = ssm.describe_parameters(ParameterFilters=[{"Key": "Name", "Values": [name]}])
key_id = found["Parameters"][0]["KeyId"]
with open(key_file, encoding="ascii") as f:
    ssm.put_parameter(
        Name=name, Value=f.read(), Type="SecureString", KeyId=key_id, Overwrite=True
    )
PY
  fi
  # The target accounts' plan/apply roles, trusting this deployment's task roles (the
  # local cloud's IAM refuses an AssumeRole its trust policy does not allow).
  "$python" "$root/scripts/target-account-roles.py" "$AWS_ENDPOINT_URL" \
    "${LIVE_CI_ACCOUNTS_FILE:-$root/examples/live-repo/accounts.json}" \
    "$(printf '%s' "$outputs" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["task_role_arns"]["value"]))')" \
    "$(printf '%s' "$outputs" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["terra_run_role_arns"]["value"]))')" >&2
  # The local cloud's SES is in the sandbox, as a new account's: the voters'
  # addresses are verified identities before any approval mail is sent.
  "$python" "$root/scripts/ses-verify-voters.py" "$AWS_ENDPOINT_URL" \
    "${LIVE_CI_ACCOUNTS_FILE:-$root/examples/live-repo/accounts.json}" >&2
  printf '%s\n' "$outputs"
}

destroy() {
  cloud_env
  [ -f "$deploy/terraform.tfstate" ] || { log "nothing deployed"; return 0; }
  export TF_DATA_DIR="$deploy/tf-data"
  terraform -chdir="$tf_dir" destroy -input=false -no-color -auto-approve \
    -state="$deploy/terraform.tfstate" -var-file="$deploy/local.tfvars.json" >&2
}

mkdir -p "$deploy"
case "${1:-}" in
  apply) apply ;;
  destroy) destroy ;;
  *) die "usage: $0 apply|destroy" ;;
esac
