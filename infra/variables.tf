################################################################################
# General
################################################################################

variable "name" {
  description = "Prefix of every resource name (Lambdas, ECS, state machine, parameters, log groups). Lowercase letters, digits and hyphens."
  type        = string
  default     = "live-ci"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}[a-z0-9]$", var.name))
    error_message = "name must be 3-32 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "tags" {
  description = "Tags added to every resource that takes tags."
  type        = map(string)
  default     = {}
}

################################################################################
# Repository and pipeline behaviour
################################################################################

variable "repo_full_name" {
  description = "The GitHub repository holding the Terragrunt live configuration, as owner/name."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", var.repo_full_name))
    error_message = "repo_full_name must look like owner/name."
  }
}

variable "github_api_url" {
  description = "GitHub REST API base URL (GitHub Enterprise: https://HOST/api/v3)."
  type        = string
  default     = "https://api.github.com"
}

variable "github_web_url" {
  description = "GitHub web base URL, for links in approval e-mails (GitHub Enterprise: https://HOST)."
  type        = string
  default     = "https://github.com"
}

variable "trunk_branch" {
  description = "The branch whose merged pull requests are deployed."
  type        = string
  default     = "main"
}

variable "file_path_pattern" {
  description = "Regular expression of the file paths that make a pull request an infrastructure change (merge lock status, planning)."
  type        = string
  default     = "\\.(hcl|tf|tfvars|json|yaml|yml)$"
}

variable "pr_plan_author_associations" {
  description = "Author associations whose pull requests (from a branch of the repository itself, never a fork) are planned on their own; terraform plan runs the pull request's code. Others get a pending live-ci: plan status until someone with write access comments /live-ci plan. [] makes every pull request wait for that comment."
  type        = list(string)
  default     = ["OWNER", "MEMBER", "COLLABORATOR"]

  validation {
    condition = alltrue([for a in var.pr_plan_author_associations : contains(
      ["OWNER", "MEMBER", "COLLABORATOR", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER", "MANNEQUIN", "NONE"], a
    )])
    error_message = "pr_plan_author_associations takes GitHub author associations: OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, FIRST_TIME_CONTRIBUTOR, FIRST_TIMER, MANNEQUIN, NONE."
  }
}

variable "account_parent_cfg" {
  description = "The AWS accounts of the live repository: each unit belongs to the account with the longest matching path; its voters approve its deployments (by e-mail; github_voters, optional, lists GitHub logins and \"org/team-slug\" teams who may also vote with /live-ci approve|reject <unit> on the merged pull request; the thresholds count against voters alone) and its units wait for every unit of the accounts it depends on. max_parallel (optional, at least 1) caps how many of a run's units run at once in the account (null: the run's max_parallel)."
  type = list(object({
    name                = string
    path                = string
    dependencies        = optional(list(string), [])
    voters              = list(string)
    github_voters       = optional(list(string), [])
    min_approval_count  = number
    min_rejection_count = number
    plan_role_arn       = string
    apply_role_arn      = string
    max_parallel        = optional(number)
  }))

  validation {
    condition     = length(var.account_parent_cfg) > 0
    error_message = "account_parent_cfg must list at least one account."
  }

  validation {
    condition     = length(distinct([for a in var.account_parent_cfg : a.name])) == length(var.account_parent_cfg)
    error_message = "account_parent_cfg: account names must be unique."
  }

  validation {
    condition = alltrue([
      for a in var.account_parent_cfg : alltrue([for d in a.dependencies : contains([for b in var.account_parent_cfg : b.name], d)])
    ])
    error_message = "account_parent_cfg: every dependency must name an account of the list."
  }

  validation {
    condition = alltrue([
      for a in var.account_parent_cfg : length(a.voters) > 0 && a.min_approval_count >= 1 && a.min_rejection_count >= 1 && a.min_approval_count <= length(a.voters) && a.min_rejection_count <= length(a.voters)
    ])
    error_message = "account_parent_cfg: each account needs voters, and min_approval_count and min_rejection_count between 1 and the number of voters."
  }

  validation {
    condition = alltrue(flatten([
      for a in var.account_parent_cfg : [for v in a.github_voters : can(regex("^[A-Za-z0-9](-?[A-Za-z0-9])*(/[A-Za-z0-9_-]+)?$", v)) && length(split("/", v)[0]) <= 39]
    ]))
    error_message = "account_parent_cfg: github_voters takes GitHub logins and \"org/team-slug\" teams; not so for ${join(", ", flatten([for a in var.account_parent_cfg : [for v in a.github_voters : "${jsonencode(a.name)}: ${jsonencode(v)}" if !(can(regex("^[A-Za-z0-9](-?[A-Za-z0-9])*(/[A-Za-z0-9_-]+)?$", v)) && length(split("/", v)[0]) <= 39)]]))}."
  }

  validation {
    condition = alltrue([
      for a in var.account_parent_cfg : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/", a.plan_role_arn)) && can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/", a.apply_role_arn))
    ])
    error_message = "account_parent_cfg: plan_role_arn and apply_role_arn must be IAM role ARNs."
  }

  validation {
    condition = alltrue([
      for a in var.account_parent_cfg : a.max_parallel == null || try(floor(a.max_parallel) == a.max_parallel && a.max_parallel >= 1, false)
    ])
    error_message = "account_parent_cfg: max_parallel must be a whole number of at least 1 (or null: the run's max_parallel); not so for ${join(", ", [for a in var.account_parent_cfg : jsonencode(a.name) if a.max_parallel != null && !(try(floor(a.max_parallel) == a.max_parallel && a.max_parallel >= 1, false))])}."
  }
}

variable "voter_github_logins" {
  description = "One person, one vote across mail and GitHub: each mail voter's GitHub login, e-mail address = login (e.g. { \"alice@example.com\" = \"alice\" }), one person per entry. A pull request vote by a mapped login is recorded as that person's vote, under the address (so mail and GitHub are one vote, changeable until the decision), and a mapped login whose address is one of the account's voters may vote from GitHub without being in github_voters. Every address must be a voter of some account in account_parent_cfg. Empty (the default): nobody is mapped, and a person voting both ways is two voters."
  type        = map(string)
  default     = {}
  nullable    = false

  validation {
    condition     = alltrue([for e, login in var.voter_github_logins : can(regex("^[^@[:space:]<>]+@[^@[:space:]<>]+\\.[^@[:space:]<>]+$", e))])
    error_message = "voter_github_logins: each key must be an e-mail address; not so for ${join(", ", [for e, login in var.voter_github_logins : jsonencode(e) if !can(regex("^[^@[:space:]<>]+@[^@[:space:]<>]+\\.[^@[:space:]<>]+$", e))])}."
  }

  validation {
    condition     = alltrue([for e, login in var.voter_github_logins : can(regex("^[A-Za-z0-9](-?[A-Za-z0-9])*$", login)) && length(login) <= 39])
    error_message = "voter_github_logins: each value must be a GitHub login; not so for ${join(", ", [for e, login in var.voter_github_logins : "${jsonencode(e)} = ${jsonencode(login)}" if !(can(regex("^[A-Za-z0-9](-?[A-Za-z0-9])*$", login)) && length(login) <= 39)])}."
  }

  validation {
    condition     = length(distinct([for e, login in var.voter_github_logins : lower(login)])) == length(var.voter_github_logins)
    error_message = "voter_github_logins: a login may stand for one person only; listed more than once: ${join(", ", distinct([for e, login in var.voter_github_logins : jsonencode(lower(login)) if length([for e2, l2 in var.voter_github_logins : e2 if lower(l2) == lower(login)]) > 1]))}."
  }

  validation {
    condition     = length(distinct([for e, login in var.voter_github_logins : lower(e)])) == length(var.voter_github_logins)
    error_message = "voter_github_logins: an address may be listed once (addresses compare without case); listed more than once: ${join(", ", distinct([for e, login in var.voter_github_logins : jsonencode(lower(e)) if length([for e2, l2 in var.voter_github_logins : e2 if lower(e2) == lower(e)]) > 1]))}."
  }
}

variable "scan_type" {
  description = "How create-deploy-stack finds the affected units: graph (git diff and the dependency graph) or plan (terragrunt plan -detailed-exitcode per unit)."
  type        = string
  default     = "graph"

  validation {
    condition     = contains(["graph", "plan"], var.scan_type)
    error_message = "scan_type must be graph or plan."
  }
}

variable "plan_command" {
  description = "Plan command template terra-run runs with sh -c in the unit's directory; {plan_file} is the saved plan's path (added when missing), {cfg_path} the unit's repository-relative directory."
  type        = string
  default     = "terragrunt plan -input=false -out={plan_file}"
}

variable "apply_command" {
  description = "Apply command template terra-run runs with sh -c in the unit's directory; it must apply {plan_file}, the plan the voters approved (added when missing)."
  type        = string
  default     = "terragrunt apply -input=false -auto-approve {plan_file}"
}

variable "show_command" {
  description = "Command template terra-run and the plan scans run with sh -c in the unit's directory after each plan to read the saved plan as JSON ({plan_file}, added when missing); run through the same tool as plan_command."
  type        = string
  default     = "terragrunt show -json {plan_file}"
}

variable "skip_unchanged" {
  description = "Whether a unit whose plan changes nothing (no resource, no output) succeeds as \"no changes\" without asking its voters or applying."
  type        = bool
  default     = true
}

variable "child_environment_passthrough" {
  description = "Names (or prefixes ending in *) of task environment variables that terraform and terragrunt also get, beyond the allow-list (TF_*, TG_*, PATH, HOME, the region, the assumed role's credentials): proxy settings (HTTPS_PROXY, NO_PROXY) and non-AWS provider credentials (DATADOG_*, CLOUDFLARE_API_TOKEN, VAULT_TOKEN) set through task_environment or task_secrets. Whatever passes is readable by the repository's code, pull requests' plans included: give plan-time credentials read-only scopes. live-ci's own variables and AWS credentials never pass."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for n in var.child_environment_passthrough : can(regex("^[A-Za-z_][A-Za-z0-9_]*[*]?$", n)) && n != "*"])
    error_message = "child_environment_passthrough entries are variable names, or prefixes ending in * (not * alone)."
  }

  validation {
    condition = alltrue([for n in var.child_environment_passthrough :
      !can(regex("^(LIVE_CI_|GITHUB_|GIT_SSH|AWS_CONTAINER_|ECS_|METADB_|CHILD_ENV_PASSTHROUGH|ACCOUNT_PARENT_CFG|AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY|AWS_SESSION_TOKEN|AWS_PROFILE)", n))
    ])
    error_message = "child_environment_passthrough may not name live-ci's own variables or AWS credentials (LIVE_CI_*, GITHUB_*, GIT_SSH*, METADB_*, ECS_*, AWS_CONTAINER_*, AWS keys and profile)."
  }
}

variable "task_environment" {
  description = "Extra plain environment variables for every live-ci-task container (pr-plan, create-deploy-stack, terra-run), e.g. TF_PLUGIN_CACHE_DIR or proxy settings. live-ci's own variables win over a name given here."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for k in keys(var.task_environment) : can(regex("^[A-Za-z_][A-Za-z0-9_]*$", k))])
    error_message = "task_environment keys must be environment variable names (letters, digits, underscores; not starting with a digit)."
  }
}

variable "task_secrets" {
  description = "Extra secret environment variables for every live-ci-task container: name => ARN of an SSM parameter or a Secrets Manager secret (optionally with :json-key:: suffix), injected by ECS at start. The task execution role may read exactly these."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for k, v in var.task_secrets : can(regex("^[A-Za-z_][A-Za-z0-9_]*$", k)) && can(regex("^arn:aws[a-z-]*:(ssm|secretsmanager):[a-z0-9-]+:[0-9]{12}:(parameter/|secret:)", v))])
    error_message = "task_secrets maps environment variable names to ARNs of SSM parameters (arn:aws:ssm:REGION:ACCOUNT:parameter/...) or Secrets Manager secrets (arn:aws:secretsmanager:REGION:ACCOUNT:secret:...)."
  }
}

variable "ssh_known_hosts" {
  description = "known_hosts lines (\"<hosts> <key type> <base64 key>\") that the servers of git::ssh:// module sources must present; ssh runs with StrictHostKeyChecking=yes against exactly these. Empty: GitHub's published host keys (built into live-ci-task, ecs-task/src/git_ssh.rs)."
  type        = string
  default     = ""
  nullable    = false
}

variable "git_ssh_key_arn" {
  description = "ARN of an SSM SecureString parameter or Secrets Manager secret holding an SSH private key (an OpenSSH deploy key) for git::ssh:// module sources. The tasks load it into an ssh-agent run as the child user (which may sign with it, not read it) and give terraform and terragrunt GIT_SSH_COMMAND through that agent, accepting only the host keys of ssh_known_hosts; pr-plan offers it to trusted heads only. Null: no key."
  type        = string
  default     = null

  validation {
    condition     = var.git_ssh_key_arn == null || can(regex("^arn:aws[a-z-]*:(ssm|secretsmanager):[a-z0-9-]+:[0-9]{12}:(parameter/|secret:)", var.git_ssh_key_arn))
    error_message = "git_ssh_key_arn must be the ARN of an SSM parameter or a Secrets Manager secret."
  }
}

variable "max_parallel" {
  description = "Most Step Functions executions (units) of one run deploying at once."
  type        = number
  default     = 10

  validation {
    condition     = var.max_parallel >= 1 && var.max_parallel == floor(var.max_parallel)
    error_message = "max_parallel must be a whole number of at least 1."
  }
}

variable "fail_fast" {
  description = "Stop starting any unit of a run once one of its units failed (otherwise only the failed unit's dependents are skipped)."
  type        = bool
  default     = false
}

variable "allow_destroy" {
  description = "Destroy the units a merge removes (from the checkout before their removal, dependents first, approved like any unit). Off, the merge commit gets a status naming the units that are not destroyed."
  type        = bool
  default     = false
}

variable "deploy_filters" {
  description = "Filter queries (terragrunt's filter language, as live-ci's CLI reads them) that narrow the affected units pr-plan plans and create-deploy-stack deploys. A unit runs only when both these and the repository's .live-ci-filters select it (each list: positive queries a union, negative ones remove). A query that does not parse fails the run before anything is written; leaving out a unit that a kept unit needs first is refused. Empty: no narrowing."
  type        = list(string)
  default     = []
}

variable "policy_dir" {
  description = "A directory of the live repository holding Rego policies (package live_ci or under it, each `deny` a set of strings) that judge every plan of pr-plan and of a run's plan phase, read from the trunk before the change (the pull request's base branch, the run's base commit). A denial fails the unit before anything goes to the vote. Null: no policy checks."
  type        = string
  default     = null

  validation {
    condition     = var.policy_dir == null || can(regex("^[A-Za-z0-9_.][A-Za-z0-9_./-]*$", var.policy_dir))
    error_message = "policy_dir must be a relative path inside the live repository (letters, digits, _ . / -)."
  }
}

variable "policy_override" {
  description = "Whether voters may override a policy denial (policy_dir's Rego or policy_command): on, a unit whose plan is denied in a run's plan phase goes to the vote with its denials recorded and shown (mail, approval page, run page), and an approve vote then needs a non-empty reason, recorded with it; pr-plan says \"denied by policy (voters may override with a reason)\". Off: a denial fails the unit. A policy that cannot judge (does not parse, a policy_command that cannot run) fails the unit either way."
  type        = bool
  default     = false
}

variable "policy_command" {
  description = "A shell command template run after each plan of pr-plan and of a run's plan phase, with {plan_json} replaced by the file of the plan's `show -json` (e.g. \"checkov -f {plan_json}\"). It runs as terraform runs: the same unprivileged user, environment allow-list and plan-role credentials, in the unit's directory. Exit 0 passes; another exit denies the plan, the output's last lines as the message (overridable like a Rego denial, see policy_override); exit 126, 127 or a signal (it could not run) fails the unit. The tool must be in the task image. Empty: none."
  type        = string
  default     = ""

  validation {
    condition     = var.policy_command == "" || strcontains(var.policy_command, "{plan_json}")
    error_message = "policy_command must contain the placeholder {plan_json}."
  }
}

variable "commit_status_config" {
  description = "Which commit statuses live-ci posts: the first value of an SSM parameter (JSON) that operators edit without a deploy. Terraform ignores the value once the parameter exists, so an edit in SSM survives every apply, and so does a later change of this variable: change it in SSM."
  type = object({
    PrPlan            = optional(bool, true)
    CreateDeployStack = optional(bool, true)
    Plan              = optional(bool, true)
    Apply             = optional(bool, true)
  })
  default = {}
}

################################################################################
# Approval
################################################################################

variable "approval_sender_email" {
  description = "The address approval e-mails are sent from; the module creates its SES v2 identity (verify it, or its domain, before the first run)."
  type        = string

  validation {
    condition     = can(regex("^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$", var.approval_sender_email))
    error_message = "approval_sender_email must be an e-mail address."
  }
}

variable "ses_configuration_set" {
  description = "An SES v2 configuration set (its name, created outside the module) the approval mails are sent with, e.g. for event publishing; null sends without one. SES authorises SendEmail on the set too: the approval-request role is granted it."
  type        = string
  default     = null

  validation {
    condition     = var.ses_configuration_set == null || can(regex("^[A-Za-z0-9_-]{1,64}$", var.ses_configuration_set))
    error_message = "ses_configuration_set must be 1 to 64 letters, digits, '_' or '-' (an SES configuration set name)."
  }
}

variable "approval_timeout_seconds" {
  description = "How long voters have to decide before a unit's execution fails with ApprovalTimedOut."
  type        = number
  default     = 86400

  validation {
    condition     = var.approval_timeout_seconds >= 60 && var.approval_timeout_seconds <= 31536000
    error_message = "approval_timeout_seconds must be between 60 and 31536000 (a year, the Step Functions limit)."
  }
}

################################################################################
# State machine timing
################################################################################

variable "plan_timeout_seconds" {
  description = "Longest a terra-run plan may take."
  type        = number
  default     = 3600
}

variable "apply_timeout_seconds" {
  description = "Longest a terra-run apply may take."
  type        = number
  default     = 7200
}

variable "task_heartbeat_seconds" {
  description = "A terra-run task that sends no heartbeat for this long is considered dead (must be shorter than both timeouts)."
  type        = number
  default     = 300

  validation {
    condition     = var.task_heartbeat_seconds >= 30
    error_message = "task_heartbeat_seconds must be at least 30."
  }
}

variable "apply_wait_seconds" {
  description = "Deprecated and ignored: every apply runs in a new terra-run task with the account's apply-phase role (a plan task never waits for its apply). Still accepted so that configurations setting it keep planning; it will be removed."
  type        = number
  default     = 0

  validation {
    condition     = var.apply_wait_seconds >= 0 && var.apply_wait_seconds <= 86400
    error_message = "apply_wait_seconds must be between 0 and 86400."
  }
}

variable "retry_interval_seconds" {
  description = "First wait before the state machine retries a throttled RunTask or SNS publish (doubles each attempt)."
  type        = number
  default     = 10
}

variable "retry_max_attempts" {
  description = "Retries of a throttled RunTask or SNS publish."
  type        = number
  default     = 5
}

variable "sweep_schedule_expression" {
  description = "EventBridge schedule of trigger-sf's sweep (restarts lost claims, records missed status changes, reconciles the merge lock parameter, launches create-deploy-stack for a trunk head whose webhook was lost)."
  type        = string
  default     = "rate(5 minutes)"
}

variable "drift_schedule_expression" {
  description = "EventBridge schedule of the drift check (e.g. \"rate(1 day)\" or \"cron(0 6 ? * MON-FRI *)\"): trigger-sf launches the drift task, which plans every unit of the trunk head with the accounts' plan roles, records the results in the metadb, opens or updates one GitHub issue per drifted unit (closed when the drift is gone) and notifies. null (the default): no drift checks."
  type        = string
  default     = null

  validation {
    condition     = var.drift_schedule_expression == null || can(regex("^(rate|cron)\\(.+\\)$", var.drift_schedule_expression))
    error_message = "drift_schedule_expression must be an EventBridge schedule, rate(...) or cron(...), or null for no drift checks."
  }
}

variable "stale_claim_seconds" {
  description = "A claimed unit whose execution did not start within this many seconds is restarted by the sweep."
  type        = number
  default     = 300
}

variable "trunk_sweep_cooldown_seconds" {
  description = "The sweep launches create-deploy-stack for a trunk head the metadb does not know (a merge whose webhook was lost) at most once per this many seconds per head; longer than create-deploy-stack takes."
  type        = number
  default     = 900

  validation {
    condition     = var.trunk_sweep_cooldown_seconds >= 0 && floor(var.trunk_sweep_cooldown_seconds) == var.trunk_sweep_cooldown_seconds
    error_message = "trunk_sweep_cooldown_seconds must be a whole number of seconds."
  }
}

variable "deploy_direct_pushes" {
  description = "Let the sweep deploy a trunk head that no merged pull request produced (a direct push, run as PR 0). Off: such a head is not deployed and gets a failing live-ci: deploy status saying why."
  type        = bool
  default     = false
}

variable "merge_lock_scope" {
  description = "Which open pull requests the merge lock holds while a run deploys. \"repo\": every pull request touching infrastructure files. \"units\": only those whose units (as their last plan recorded them, closed over dependencies and dependents) share one with the running and queued runs; the others may merge and their runs queue. Runs deploy one at a time in trunk order either way."
  type        = string
  default     = "repo"

  validation {
    condition     = contains(["repo", "units"], var.merge_lock_scope)
    error_message = "merge_lock_scope must be \"repo\" or \"units\"."
  }
}

variable "max_start_attempts" {
  description = "Failed StartExecution calls of one unit before trigger-sf fails it with the error as its reason (instead of retrying forever)."
  type        = number
  default     = 5

  validation {
    condition     = var.max_start_attempts >= 1 && floor(var.max_start_attempts) == var.max_start_attempts
    error_message = "max_start_attempts must be a whole number, at least 1."
  }
}

################################################################################
# Secrets (SSM SecureString)
################################################################################

variable "github_webhook_secret" {
  description = "The GitHub webhook secret (at least 32 characters). Null makes the module generate a 64-character secret in SSM (output github_webhook_secret_ssm_parameter_name) that you configure on the GitHub webhook; the receiver refuses placeholders and short secrets."
  type        = string
  default     = null
  sensitive   = true

  validation {
    condition     = var.github_webhook_secret == null || try(length(var.github_webhook_secret) >= 32, false)
    error_message = "github_webhook_secret must be at least 32 characters (or null to have one generated)."
  }
}

variable "github_token" {
  description = "GitHub token with repo:status and pull request comment rights. Null leaves a placeholder that you set in SSM (Terraform then ignores the value). Must be null with github_app."
  type        = string
  default     = null
  sensitive   = true
}

variable "github_app" {
  description = "Authenticate as a GitHub App instead of with github_token: the App's id and the id of its installation on the live repository's owner. The App's private key (PEM) goes into the SecureString parameter named by the github_app_private_key_ssm_parameter_name output, which the module creates with a placeholder and whose value it ignores (the key never enters the Terraform state). Each job then gets its own installation token, limited to the live repository and to that job's permissions (README: GitHub setup)."
  type = object({
    id              = number
    installation_id = number
  })
  default = null

  validation {
    condition = var.github_app == null || try(
      var.github_app.id >= 1 && floor(var.github_app.id) == var.github_app.id &&
      var.github_app.installation_id >= 1 && floor(var.github_app.installation_id) == var.github_app.installation_id,
      false
    )
    error_message = "github_app: id and installation_id must be whole numbers, at least 1."
  }
}

variable "module_source_repositories" {
  description = "Repositories (owner/name, all of the owner github_app is installed on) that terraform and terragrunt may read private git::https:// module sources from. Needs github_app: the tasks that run repository code then ask for a second installation token, contents: read on exactly these, and give it to terraform through a git credential file only the child user can read (README: Private module sources). Empty: no token (a personal github_token is never given to repository code)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for r in var.module_source_repositories : can(regex("^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", r))])
    error_message = "module_source_repositories: each must look like owner/name."
  }
}

variable "module_sources_for_forks" {
  description = "Give the module_source_repositories token to a maintainer's /live-ci plan of a fork's (or an untrusted author's) pull request too. False: only merged code and trusted authors' branches get it; such a plan's private module sources fail to clone."
  type        = bool
  default     = false
}

variable "vote_link_key" {
  description = "Key that signs the approve/reject links of the e-mails (at least 32 characters, no placeholder such as \"changeme\"). Null (the default) generates a random 64-character key once (Terraform then ignores the parameter's value, so a key rotated in SSM stays)."
  type        = string
  default     = null
  sensitive   = true

  validation {
    condition     = var.vote_link_key == null || try(length(var.vote_link_key) >= 32, false)
    error_message = "vote_link_key must be at least 32 characters."
  }

  # The same placeholders the Lambdas refuse (live_ci_core::webhook::is_placeholder),
  # also repeated to length.
  validation {
    condition = var.vote_link_key == null || !anytrue([
      for p in ["unset", "changeme", "change-me", "change_me", "placeholder", "secret", "todo", "none", "null", "default"] :
      try(length(regexall("^(${p})+$", lower(trimspace(var.vote_link_key)))) > 0, false)
    ])
    error_message = "vote_link_key holds a placeholder, not a key: set a random value of at least 32 characters, or null to have the module generate one."
  }
}

variable "create_kms_key" {
  description = "Create the customer managed KMS key that encrypts SSM secrets, saved plans, the approval topic, logs, the metadb, its secret and the image repository. False uses kms_key_arn."
  type        = bool
  default     = true
}

variable "kms_key_arn" {
  description = "Your KMS key when create_kms_key is false (its policy must let CloudWatch Logs use it for the /<name>/ log groups)."
  type        = string
  default     = null
}

################################################################################
# Lambdas
################################################################################

variable "lambda_architecture" {
  description = "Architecture of the Lambda zips (as built by make package)."
  type        = string
  default     = "x86_64"

  validation {
    condition     = contains(["x86_64", "arm64"], var.lambda_architecture)
    error_message = "lambda_architecture must be x86_64 or arm64."
  }
}

variable "lambda_zip_dir" {
  description = "Directory holding the Lambda zips for receiver, trigger-sf, approval-request, approval-response and (with notification_format set) notifier: a release's assets (<function>.zip) or what `make package` writes (<function>/bootstrap.zip, under target/lambda). One of lambda_zip_dir and lambda_zip_paths must name every function."
  type        = string
  default     = null
}

variable "lambda_zip_paths" {
  description = "Per-function zip paths overriding lambda_zip_dir, keyed by receiver, trigger-sf, approval-request, approval-response, notifier."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for k in keys(var.lambda_zip_paths) : contains(["receiver", "trigger-sf", "approval-request", "approval-response", "notifier"], k)])
    error_message = "lambda_zip_paths keys must be receiver, trigger-sf, approval-request, approval-response or notifier."
  }
}

variable "lambda_memory_size" {
  description = "Memory (MB) of each Lambda."
  type        = number
  default     = 256
}

variable "lambda_timeout_seconds" {
  description = "Timeout of each Lambda (the receiver answers GitHub within 10 s regardless)."
  type        = number
  default     = 60
}

variable "log_level" {
  description = "RUST_LOG filter of the Lambdas and tasks."
  type        = string
  default     = "info"
}

variable "log_retention_in_days" {
  description = "Retention of every CloudWatch log group (Lambdas, tasks, state machine). 30 days by default (storage is billed per GB-month; the metadb keeps each run's record); 365 or more where a policy asks for a year."
  type        = number
  default     = 30

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_in_days)
    error_message = "log_retention_in_days must be a retention CloudWatch Logs accepts (1, 3, 5, 7, 14, 30, … 365, … 3653)."
  }
}

################################################################################
# ECS tasks
################################################################################

variable "create_ecr_repository" {
  description = "Create an ECR repository (immutable tags, scan on push, KMS) for the task image."
  type        = bool
  default     = true
}

variable "task_image" {
  description = "Image URI of the live-ci-task container (ecs-task/Dockerfile). Null uses the module's ECR repository with task_image_tag."
  type        = string
  default     = null
}

variable "task_image_tag" {
  description = "Tag of the image in the module's ECR repository (tags are immutable: push a new tag per release)."
  type        = string
  default     = "0.1.0"
}

variable "terraform_version" {
  description = "Terraform version baked into the task image (build arg TERRAFORM_VERSION; see the task_image_build_command output)."
  type        = string
  default     = "1.11.4"
}

variable "iac_tool" {
  description = "The binary terragrunt runs, terraform or tofu (OpenTofu): the tasks' TG_TF_PATH, and the task image's IAC_TOOL build argument in the task_image_build_command output. Commands that name terraform themselves (plan_command, apply_command, show_command) are not rewritten."
  type        = string
  default     = "terraform"

  validation {
    condition     = contains(["terraform", "tofu"], var.iac_tool)
    error_message = "iac_tool must be terraform or tofu."
  }
}

variable "tofu_version" {
  description = "OpenTofu version baked into the task image when iac_tool = \"tofu\" (build arg TOFU_VERSION)."
  type        = string
  default     = "1.9.1"
}

variable "terragrunt_version" {
  description = "Terragrunt version baked into the task image (build arg TERRAGRUNT_VERSION)."
  type        = string
  default     = "0.77.22"
}

variable "task_cpu_architecture" {
  description = "CPU architecture of the task image (X86_64 or ARM64)."
  type        = string
  default     = "X86_64"

  validation {
    condition     = contains(["X86_64", "ARM64"], var.task_cpu_architecture)
    error_message = "task_cpu_architecture must be X86_64 or ARM64."
  }
}

variable "pr_plan_cpu" {
  description = "Fargate CPU units of the pr-plan task."
  type        = number
  default     = 1024
}

variable "pr_plan_memory" {
  description = "Fargate memory (MiB) of the pr-plan task."
  type        = number
  default     = 2048
}

variable "create_deploy_stack_cpu" {
  description = "Fargate CPU units of the create-deploy-stack task."
  type        = number
  default     = 1024
}

variable "create_deploy_stack_memory" {
  description = "Fargate memory (MiB) of the create-deploy-stack task (it holds the unit graph and the query results)."
  type        = number
  default     = 4096
}

variable "terra_run_cpu" {
  description = "Fargate CPU units of the terra-run task."
  type        = number
  default     = 512
}

variable "terra_run_memory" {
  description = "Fargate memory (MiB) of the terra-run task."
  type        = number
  default     = 1024
}

variable "task_ephemeral_storage_gib" {
  description = "Fargate ephemeral storage (GiB, 21-200) of every task (clones, provider plugins)."
  type        = number
  default     = 30

  validation {
    condition     = var.task_ephemeral_storage_gib >= 21 && var.task_ephemeral_storage_gib <= 200
    error_message = "task_ephemeral_storage_gib must be between 21 and 200."
  }
}

################################################################################
# Network
################################################################################

variable "vpc_id" {
  description = "VPC of the tasks and the metadb."
  type        = string
}

variable "subnet_ids" {
  description = "Subnets of the Fargate tasks (private subnets with a NAT route to GitHub and the AWS APIs, or public subnets with assign_public_ip)."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) > 0
    error_message = "subnet_ids must list at least one subnet."
  }
}

variable "security_group_ids" {
  description = "Security groups of the Fargate tasks (they need outbound HTTPS)."
  type        = list(string)

  validation {
    condition     = length(var.security_group_ids) > 0
    error_message = "security_group_ids must list at least one security group."
  }
}

variable "assign_public_ip" {
  description = "Give the Fargate tasks public IPs (public subnets without NAT)."
  type        = bool
  default     = false
}

################################################################################
# Metadb
################################################################################

variable "metadb_connection" {
  description = "How components reach the metadb: data-api (RDS Data API over HTTPS; no network path needed) or direct (the ECS tasks connect with METADB_URL injected from an SSM SecureString you fill; the Lambdas stay on the Data API)."
  type        = string
  default     = "data-api"

  validation {
    condition     = contains(["data-api", "direct"], var.metadb_connection)
    error_message = "metadb_connection must be data-api or direct."
  }
}

variable "metadb_subnet_ids" {
  description = "Subnets of the metadb's subnet group (at least two availability zones). Null uses subnet_ids."
  type        = list(string)
  default     = null
}

variable "metadb_name" {
  description = "Database name of the metadb."
  type        = string
  default     = "live_ci"
}

variable "metadb_username" {
  description = "Master user name of the metadb (its password is managed by RDS in Secrets Manager)."
  type        = string
  default     = "live_ci"
}

variable "metadb_engine_version" {
  description = "Aurora PostgreSQL engine version (Serverless v2 with the Data API needs 13.12, 14.9, 15.4, 16.1 or later)."
  type        = string
  default     = "16.6"
}

variable "metadb_min_capacity" {
  description = "Minimum Aurora capacity units. 0 (the default) pauses the database after metadb_seconds_until_auto_pause without connections, so an idle pipeline pays no compute for it; the first call after a pause waits for the resume (every Data API caller retries DatabaseResumingException within its own deadline; the receiver answers GitHub within its budget regardless). 0.5 keeps it always on (about 0.5 ACU x 730 h a month)."
  type        = number
  default     = 0

  validation {
    condition     = var.metadb_min_capacity >= 0 && var.metadb_min_capacity <= 256
    error_message = "metadb_min_capacity must be between 0 and 256 ACU."
  }
}

variable "metadb_seconds_until_auto_pause" {
  description = "With metadb_min_capacity = 0: idle seconds before Aurora pauses the metadb (300 to 86400)."
  type        = number
  default     = 300

  validation {
    condition     = var.metadb_seconds_until_auto_pause >= 300 && var.metadb_seconds_until_auto_pause <= 86400
    error_message = "metadb_seconds_until_auto_pause must be between 300 and 86400."
  }
}

variable "container_insights" {
  description = "CloudWatch Container Insights on the ECS cluster (billed as custom metrics per task): off by default."
  type        = bool
  default     = false
}

variable "metadb_max_capacity" {
  description = "Maximum Aurora capacity units."
  type        = number
  default     = 2
}

variable "metadb_deletion_protection" {
  description = "Protect the metadb cluster from deletion."
  type        = bool
  default     = true
}

variable "metadb_backup_retention_days" {
  description = "Days of automated metadb backups."
  type        = number
  default     = 7
}

variable "metadb_skip_final_snapshot" {
  description = "Destroy the metadb without a final snapshot."
  type        = bool
  default     = false
}

################################################################################
# Saved plans
################################################################################

variable "plan_bucket_name" {
  description = "Name of the S3 bucket for saved plans. Null derives one from name, account and region."
  type        = string
  default     = null
}

variable "plan_retention_days" {
  description = "Days saved plans (and their noncurrent versions) are kept."
  type        = number
  default     = 30
}

variable "plan_bucket_force_destroy" {
  description = "Let terraform destroy the plan bucket while it still holds plans."
  type        = bool
  default     = false
}

variable "receiver_reserved_concurrency" {
  description = "Concurrent executions reserved for the public receiver function, which also caps how many a flood of requests to its Function URL can run at once (e.g. 20). -1 (the default) reserves none: AWS keeps at least 10 executions of an account unreserved, so on a new account (quota 10) any reservation fails the apply."
  type        = number
  default     = -1

  validation {
    condition     = var.receiver_reserved_concurrency == -1 || (var.receiver_reserved_concurrency >= 1 && floor(var.receiver_reserved_concurrency) == var.receiver_reserved_concurrency)
    error_message = "receiver_reserved_concurrency must be -1 (no reservation) or a whole number of at least 1 (0 would throttle every request)."
  }
}

variable "approval_response_reserved_concurrency" {
  description = "Concurrent executions reserved for the public approval-response function, which also caps how many a flood of requests to its Function URL can run at once (e.g. 20). -1 (the default) reserves none: AWS keeps at least 10 executions of an account unreserved, so on a new account (quota 10) any reservation fails the apply."
  type        = number
  default     = -1

  validation {
    condition     = var.approval_response_reserved_concurrency == -1 || (var.approval_response_reserved_concurrency >= 1 && floor(var.approval_response_reserved_concurrency) == var.approval_response_reserved_concurrency)
    error_message = "approval_response_reserved_concurrency must be -1 (no reservation) or a whole number of at least 1 (0 would throttle every request)."
  }
}

variable "notification_format" {
  description = "Where notifications (approval pending, run failed, run finished) go: \"slack\" (incoming webhook), \"teams\" (Teams workflow webhook) or \"json\" (a generic HTTPS endpoint). Null (the default) turns notifications off and creates nothing: no topic, no notifier Lambda, no parameter."
  type        = string
  default     = null

  validation {
    condition     = var.notification_format == null || contains(["slack", "teams", "json"], coalesce(var.notification_format, "x"))
    error_message = "notification_format must be slack, teams, json or null."
  }
}

variable "notification_url_ssm_parameter_name" {
  description = "An SSM SecureString parameter (its name, created outside the module) holding the notification endpoint's https URL. Null (the default) has the module create /<name>/notification-url with a placeholder for you to set in SSM. The URL is never a Terraform variable: whoever holds a webhook URL can post to the channel."
  type        = string
  default     = null

  validation {
    condition     = var.notification_url_ssm_parameter_name == null || can(regex("^/[A-Za-z0-9_.\\-/]+$", coalesce(var.notification_url_ssm_parameter_name, "x")))
    error_message = "notification_url_ssm_parameter_name must be an SSM parameter name starting with /."
  }
}
