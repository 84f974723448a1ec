#![allow(clippy::unwrap_used)]
//! The contract between the Terraform module (`infra/`) and the binaries it
//! deploys: (a) every environment variable a binary reads is set by the module
//! (or deliberately left to its default, with the reason here), and the module
//! sets nothing the binary does not read; (b) every AWS action a binary calls is
//! allowed by the policy of its role; (c) the state machine's `templatefile`
//! passes exactly `DeploymentVars`' variables.
//!
//! Data-driven: one [`Binary`] per deployed binary. A binary's crate declares
//! `ENV_VARS` and `AWS_ACTIONS` next to its configuration code; binaries not
//! built yet carry the expected lists here.

use std::collections::BTreeSet;
use std::path::PathBuf;

use live_ci_contract::{Found, Module, allows, format_expr};

/// Where a binary's environment is written in the module.
enum EnvSource {
    /// The object keys of an attribute of a block (the `environment` of a Lambda's module call).
    Attr {
        block: &'static [&'static str],
        attr: &'static [&'static str],
    },
    /// The object keys of `local.<name>` (the tasks' environment by kind).
    LocalKeys(&'static str),
    /// The `name`s of the list `local.<name>` (the tasks' injected secrets).
    LocalNames(&'static str),
}

/// How the binary's role gets its policy document.
enum Attachment {
    /// `local.<map>["<key>"]` is `data.aws_iam_policy_document.<doc>.json`.
    LocalMapEntry(&'static str, &'static str),
    /// `resource "aws_iam_role_policy" "<name>"`'s `policy` is
    /// `data.aws_iam_policy_document.<doc>[each.key].json` (one document per
    /// role of a `for_each`).
    PerRoleResource(&'static str),
}

struct Binary {
    name: &'static str,
    env_vars: &'static [&'static str],
    aws_actions: &'static [&'static str],
    env: &'static [EnvSource],
    policy_document: &'static str,
    attachment: Attachment,
    /// Read by the binary, deliberately not set by the module: (name, why).
    defaults: &'static [(&'static str, &'static str)],
}

/// Set by the Lambda and ECS runtimes themselves.
const RUNTIME_VARS: &[&str] = &["AWS_REGION"];

/// Set by the module for every binary, read outside `Config::from_lookup`
/// (`tracing_subscriber::EnvFilter::try_from_default_env`: the Lambdas'
/// `live_ci_boot::subscriber`, the task's `main.rs`).
const LOGGING_VARS: &[&str] = &["RUST_LOG"];

/// What the module sets for the tasks' children, not for live-ci's settings:
/// the binary terragrunt runs (`iac_tool`), passed to terraform/terragrunt by
/// the `TG_` prefix of `core::child_env`, and the names `core::child_env` lets
/// through besides (`child_environment_passthrough`), which it reads from the
/// process environment when it builds a child's, never through the config.
const CHILD_VARS: &[&str] = &["TG_TF_PATH", live_ci_task::child_env::PASSTHROUGH_ENV];

const METADB_URL_IN_LAMBDAS: (&str, &str) = (
    "METADB_URL",
    "Lambdas use the Data API: a URL would put the metadb password in plain environment",
);

/// What the task reads that the module rightly leaves unset.
const BY_RECEIVER: &str = "set per task by the receiver's RunTask overrides";
const BY_STATE_MACHINE: &str = "set per execution by the state machine's container overrides (crates/stepfunctions checks them)";
const TASK_DEFAULTS: &[(&str, &str)] = &[
    (
        "REPO_CLONE_URL",
        "local runs only: in AWS the clone URL follows from REPO_FULL_NAME",
    ),
    (
        "HEARTBEAT_SECONDS",
        "the 60 s default is well under the states' heartbeat",
    ),
    ("AWS_REGION", "set by Fargate"),
    (
        "LIVE_CI_CHILD_UID",
        "set by the task image (ecs-task/Dockerfile's ENV), with the user it names",
    ),
    (
        "LIVE_CI_CHILD_GID",
        "set by the task image (ecs-task/Dockerfile's ENV), with the group it names",
    ),
    ("ECS_CONTAINER_METADATA_URI_V4", "set by Fargate"),
    (live_ci_core::task::env::PR_NUMBER, BY_RECEIVER),
    (live_ci_core::task::env::COMMIT, BY_RECEIVER),
    (live_ci_core::task::env::BASE_REF, BY_RECEIVER),
    (live_ci_core::task::env::HEAD_REF, BY_RECEIVER),
    (live_ci_core::task::env::BASE_SHA, BY_RECEIVER),
    (live_ci_core::task::env::HEAD_SHA, BY_RECEIVER),
    (live_ci_core::task::env::DELIVERY_ID, BY_RECEIVER),
    (live_ci_core::task::env::HEAD_TRUSTED, BY_RECEIVER),
    (
        "MODULE_SOURCES_GIT_URL",
        "follows from GITHUB_API_URL (github.com or the GitHub Enterprise host); the tests point it at their git server",
    ),
    (
        live_ci_stepfunctions::payload::task_env::PHASE,
        BY_STATE_MACHINE,
    ),
    (
        live_ci_stepfunctions::payload::task_env::TASK_TOKEN,
        BY_STATE_MACHINE,
    ),
    (
        live_ci_stepfunctions::payload::task_env::EXECUTION_ID,
        BY_STATE_MACHINE,
    ),
    (
        live_ci_stepfunctions::payload::task_env::SFN_EXECUTION_ARN,
        BY_STATE_MACHINE,
    ),
    (
        live_ci_stepfunctions::payload::task_env::CFG_PATH,
        BY_STATE_MACHINE,
    ),
    (
        live_ci_stepfunctions::payload::task_env::COMMAND,
        BY_STATE_MACHINE,
    ),
    (
        live_ci_stepfunctions::payload::task_env::ROLE_ARN,
        BY_STATE_MACHINE,
    ),
    (
        live_ci_stepfunctions::payload::task_env::PLAN_ARTIFACT,
        BY_STATE_MACHINE,
    ),
];

fn binaries() -> Vec<Binary> {
    vec![
        Binary {
            name: "receiver",
            env_vars: live_ci_receiver::ENV_VARS,
            aws_actions: live_ci_receiver::AWS_ACTIONS,
            env: &[EnvSource::Attr {
                block: &["module", "receiver"],
                attr: &["environment"],
            }],
            policy_document: "receiver",
            attachment: Attachment::LocalMapEntry("lambda_policies", "receiver"),
            defaults: &[
                (
                    "MAX_BODY_BYTES",
                    "the default 5 MiB sits under the Function URL's 6 MB payload limit",
                ),
                METADB_URL_IN_LAMBDAS,
            ],
        },
        Binary {
            name: "trigger-sf",
            env_vars: live_ci_trigger_sf::ENV_VARS,
            aws_actions: live_ci_trigger_sf::AWS_ACTIONS,
            env: &[EnvSource::Attr {
                block: &["module", "trigger_sf"],
                attr: &["environment"],
            }],
            policy_document: "trigger_sf",
            attachment: Attachment::LocalMapEntry("lambda_policies", "trigger-sf"),
            defaults: &[METADB_URL_IN_LAMBDAS],
        },
        Binary {
            name: "approval-request",
            env_vars: live_ci_approval_request::ENV_VARS,
            aws_actions: live_ci_approval_request::AWS_ACTIONS,
            env: &[EnvSource::Attr {
                block: &["module", "approval_request"],
                attr: &["environment"],
            }],
            policy_document: "approval_request",
            attachment: Attachment::LocalMapEntry("lambda_policies", "approval-request"),
            defaults: &[METADB_URL_IN_LAMBDAS],
        },
        Binary {
            name: "approval-response",
            env_vars: live_ci_approval_response::ENV_VARS,
            aws_actions: live_ci_approval_response::AWS_ACTIONS,
            env: &[EnvSource::Attr {
                block: &["module", "approval_response"],
                attr: &["environment"],
            }],
            policy_document: "approval_response",
            attachment: Attachment::LocalMapEntry("lambda_policies", "approval-response"),
            defaults: &[METADB_URL_IN_LAMBDAS],
        },
        Binary {
            name: "notifier",
            env_vars: live_ci_notifier::ENV_VARS,
            aws_actions: live_ci_notifier::AWS_ACTIONS,
            env: &[EnvSource::Attr {
                block: &["module", "notifier"],
                attr: &["environment"],
            }],
            policy_document: "notifier",
            attachment: Attachment::LocalMapEntry("lambda_policies", "notifier"),
            defaults: &[],
        },
        // One binary, one role per subcommand (infra/iam.tf task_policies).
        task_job("pr-plan", live_ci_task::PR_PLAN_AWS_ACTIONS, "task_pr_plan"),
        task_job(
            "create-deploy-stack",
            live_ci_task::CREATE_DEPLOY_STACK_AWS_ACTIONS,
            "task_create_deploy_stack",
        ),
        // drift: plan roles, its own metadb login, the notification topic.
        task_job("drift", live_ci_task::DRIFT_AWS_ACTIONS, "task_drift"),
        // terra-run: one role per account and phase, each with its own
        // document (infra/iam.tf terra_run_roles).
        Binary {
            attachment: Attachment::PerRoleResource("terra_run"),
            ..task_job(
                "terra-run",
                live_ci_task::TERRA_RUN_AWS_ACTIONS,
                "task_terra_run",
            )
        },
    ]
}

fn task_job(
    job: &'static str,
    aws_actions: &'static [&'static str],
    policy_document: &'static str,
) -> Binary {
    Binary {
        name: job,
        env_vars: live_ci_task::ENV_VARS,
        aws_actions,
        env: &[
            EnvSource::LocalKeys("task_env_by_kind"),
            EnvSource::LocalNames("task_secrets"),
            EnvSource::LocalNames("task_ssh_key_secret"),
        ],
        policy_document,
        attachment: Attachment::LocalMapEntry("task_policies", job),
        defaults: TASK_DEFAULTS,
    }
}

/// Statements every Lambda role carries for its runtime rather than for its
/// code (`lambda_base`): its own log group, X-Ray, the dead-letter queue and
/// its key.
const RUNTIME_STATEMENTS: &[&str] = &["OwnLogs", "Tracing", "DeadLetters", "DeadLettersKey"];

pub(crate) fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn module() -> Module {
    Module::load(repo_root().join("infra")).unwrap_or_else(|e| panic!("{e}"))
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn env_set_by_module(m: &Module, b: &Binary) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for source in b.env {
        let found = match source {
            EnvSource::Attr { block, attr } => {
                let (kind, labels) = block.split_first().unwrap();
                let block = m
                    .block(kind, labels)
                    .unwrap_or_else(|e| panic!("{}: {e}", b.name));
                m.object_keys(
                    m.attr(block, attr)
                        .unwrap_or_else(|e| panic!("{}: {e}", b.name)),
                )
            }
            EnvSource::LocalKeys(local) => m.object_keys(m.local(local).unwrap()),
            EnvSource::LocalNames(local) => m.list_names(m.local(local).unwrap()),
        };
        names.extend(found.unwrap_or_else(|e| panic!("{}: {e}", b.name)));
    }
    names
}

#[test]
fn every_variable_a_binary_reads_is_set_and_nothing_else() {
    let m = module();
    let mut problems = Vec::new();
    for b in binaries() {
        let set_by_module = env_set_by_module(&m, &b);
        let defaults: BTreeSet<String> = b.defaults.iter().map(|(n, _)| n.to_string()).collect();
        for name in b.env_vars {
            let name = name.to_string();
            if !set_by_module.contains(&name)
                && !defaults.contains(&name)
                && !RUNTIME_VARS.contains(&name.as_str())
            {
                problems.push(format!(
                    "{}: reads {name}, which the module does not set",
                    b.name
                ));
            }
            if set_by_module.contains(&name) && defaults.contains(&name) {
                problems.push(format!(
                    "{}: {name} is set by the module but listed as left to its default",
                    b.name
                ));
            }
        }
        let read = set(b.env_vars);
        for name in &set_by_module {
            if !read.contains(name)
                && !LOGGING_VARS.contains(&name.as_str())
                && !CHILD_VARS.contains(&name.as_str())
            {
                problems.push(format!(
                    "{}: the module sets {name}, which the binary never reads",
                    b.name
                ));
            }
        }
        for (name, _) in b.defaults {
            if !read.contains(*name) {
                problems.push(format!(
                    "{}: default listed for {name}, which the binary never reads",
                    b.name
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "environment contract broken:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_action_a_binary_calls_is_allowed_to_its_role() {
    let m = module();
    let mut problems = Vec::new();
    for b in binaries() {
        let allowed = m
            .policy_actions(b.policy_document)
            .unwrap_or_else(|e| panic!("{}: {e}", b.name));
        for action in b.aws_actions {
            if !allows(&allowed, action) {
                problems.push(format!(
                    "{}: calls {action}, not allowed by data.aws_iam_policy_document.{}",
                    b.name, b.policy_document
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "IAM contract broken:\n{}",
        problems.join("\n")
    );
}

/// The other way round: a role is granted nothing its binary does not call,
/// so an action added to a policy "just in case" fails here.
#[test]
fn every_action_a_role_is_granted_is_one_its_binary_calls() {
    let m = module();
    let mut problems = Vec::new();
    for b in binaries() {
        let granted = m
            .policy_actions_except(b.policy_document, RUNTIME_STATEMENTS)
            .unwrap_or_else(|e| panic!("{}: {e}", b.name));
        for action in &granted {
            if !b.aws_actions.contains(&action.as_str()) {
                problems.push(format!(
                    "{}: data.aws_iam_policy_document.{} grants {action}, which the binary never calls (not in its AWS_ACTIONS)",
                    b.name, b.policy_document
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "IAM contract broken (least privilege):\n{}",
        problems.join("\n")
    );
}

#[test]
fn each_role_gets_the_document_the_contract_checks() {
    let m = module();
    for b in binaries() {
        let want = format!("data.aws_iam_policy_document.{}.json", b.policy_document);
        let got = match b.attachment {
            Attachment::LocalMapEntry(map, key) => {
                let local = m.local(map).unwrap();
                let hcl::Expression::Object(object) = local.item else {
                    panic!("local.{map} is not an object");
                };
                let value = object
                    .iter()
                    .find(|(k, _)| match k {
                        hcl::expr::ObjectKey::Identifier(id) => id.as_str() == key,
                        hcl::expr::ObjectKey::Expression(hcl::Expression::String(s)) => s == key,
                        _ => false,
                    })
                    .map(|(_, v)| v)
                    .unwrap_or_else(|| panic!("local.{map} has no {key:?}"));
                format_expr(value)
            }
            Attachment::PerRoleResource(name) => {
                let attach = m.block("resource", &["aws_iam_role_policy", name]).unwrap();
                let policy = format_expr(m.attr(attach, &["policy"]).unwrap().item);
                assert_eq!(
                    policy.trim(),
                    format!(
                        "data.aws_iam_policy_document.{}[each.key].json",
                        b.policy_document
                    ),
                    "{}: role policy",
                    b.name
                );
                continue;
            }
        };
        assert_eq!(got.trim(), want, "{}: role policy", b.name);
    }
    // The Lambda roles apply the map by function name, one inline policy each.
    let attach = m
        .block("resource", &["aws_iam_role_policy", "lambda"])
        .unwrap();
    let policy = format_expr(m.attr(attach, &["policy"]).unwrap().item);
    assert_eq!(policy.trim(), "local.lambda_policies[each.key]");
    // So do the task roles, by job; and each task definition runs as its own.
    let attach = m
        .block("resource", &["aws_iam_role_policy", "task"])
        .unwrap();
    let policy = format_expr(m.attr(attach, &["policy"]).unwrap().item);
    assert_eq!(policy.trim(), "local.task_policies[each.key]");
    let def = m
        .block("resource", &["aws_ecs_task_definition", "this"])
        .unwrap();
    let role = format_expr(m.attr(def, &["task_role_arn"]).unwrap().item);
    assert_eq!(
        role.trim(),
        "each.key == \"terra-run\" ? null : aws_iam_role.task[each.key].arn",
        "terra-run's definition names no role: the state machine names the phase's"
    );
}

#[test]
fn the_tasks_run_with_the_environment_the_contract_checks() {
    let m = module();
    let def = m
        .block("resource", &["aws_ecs_task_definition", "this"])
        .unwrap();
    let containers = format_expr(m.attr(def, &["container_definitions"]).unwrap().item);
    for local in [
        "local.task_env_by_kind[each.key]",
        "local.task_secrets",
        "local.task_ssh_key_secret",
    ] {
        assert!(
            containers.contains(local),
            "container_definitions does not use {local}:\n{containers}"
        );
    }
    // The state machine's per-execution overrides go to the same binary: every
    // LIVE_CI_* name it sets is one that crates/stepfunctions documents.
    let asl =
        std::fs::read_to_string(repo_root().join("statemachine/deployment.asl.json")).unwrap();
    for name in [
        "LIVE_CI_PHASE",
        "LIVE_CI_TASK_TOKEN",
        "LIVE_CI_EXECUTION_ID",
        "LIVE_CI_SFN_EXECUTION_ARN",
        "LIVE_CI_CFG_PATH",
        "LIVE_CI_COMMAND",
        "LIVE_CI_ROLE_ARN",
        "LIVE_CI_PLAN_ARTIFACT",
    ] {
        assert!(
            asl.contains(&format!("\"Name\": \"{name}\"")),
            "{name} missing from the ASL"
        );
    }
}

#[test]
fn the_state_machine_template_gets_exactly_the_deployment_vars() {
    let m = module();
    let sm = m
        .block("resource", &["aws_sfn_state_machine", "deployment"])
        .unwrap();
    let definition: Found<'_, hcl::Expression> = m.attr(sm, &["definition"]).unwrap();
    let (template, passed) = m
        .templatefile_vars(definition)
        .unwrap_or_else(|e| panic!("{e}"));
    // The module renders infra/deployment.asl.json, the one file (not a link:
    // the module must work from a git source of infra/ alone), which
    // statemachine/deployment.asl.json links to and live_ci_stepfunctions embeds.
    assert!(
        template.contains("${path.module}/deployment.asl.json"),
        "templatefile renders {template}, not infra/deployment.asl.json"
    );
    let definition_file = repo_root().join("infra/deployment.asl.json");
    assert!(
        !std::fs::symlink_metadata(&definition_file)
            .unwrap()
            .file_type()
            .is_symlink(),
        "{} must be the definition itself, not a link out of the module",
        definition_file.display()
    );
    assert_eq!(
        std::fs::canonicalize(&definition_file).unwrap(),
        std::fs::canonicalize(repo_root().join("statemachine/deployment.asl.json")).unwrap(),
        "statemachine/deployment.asl.json must be a link to {}",
        definition_file.display()
    );
    let vars = live_ci_stepfunctions::DeploymentVars {
        ecs_cluster_arn: "c".into(),
        terra_run_task_definition_arn: "t".into(),
        terra_run_container_name: "terra-run".into(),
        terra_run_role_arn_prefix: "arn:aws:iam::1:role/x-".into(),
        subnet_ids: vec!["s".into()],
        security_group_ids: vec!["g".into()],
        assign_public_ip: false,
        approval_topic_arn: "a".into(),
        approval_timeout_seconds: 60,
        plan_heartbeat_seconds: 1,
        plan_timeout_seconds: 2,
        apply_heartbeat_seconds: 1,
        apply_timeout_seconds: 2,
        retry_interval_seconds: 1,
        retry_max_attempts: 1,
    };
    let expected: BTreeSet<String> = vars.to_template_vars().unwrap().into_keys().collect();
    let missing: Vec<_> = expected.difference(&passed).collect();
    let extra: Vec<_> = passed.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "infra/statemachine.tf templatefile: missing {missing:?}, not in DeploymentVars {extra:?}"
    );
}

#[test]
fn the_terra_run_container_is_the_one_the_state_machine_overrides() {
    let m = module();
    let sm = m
        .block("resource", &["aws_sfn_state_machine", "deployment"])
        .unwrap();
    let definition = format_expr(m.attr(sm, &["definition"]).unwrap().item);
    // Container names are the task kinds (ecs.tf: name = each.key).
    assert!(
        definition.contains("terra_run_container_name = \"terra-run\""),
        "{definition}"
    );
    let kinds = m.object_keys(m.local("task_kinds").unwrap()).unwrap();
    assert_eq!(
        kinds,
        set(&["create-deploy-stack", "drift", "pr-plan", "terra-run"])
    );
}

/// The attribute names of the `object({…})` inside a variable's type
/// (`list(object({…}))` or `object({…})`).
fn object_type_attrs(m: &Module, variable: &str) -> BTreeSet<String> {
    let block = m.block("variable", &[variable]).unwrap();
    let mut expr = m.attr(block, &["type"]).unwrap().item;
    loop {
        match expr {
            hcl::Expression::FuncCall(call) if call.args.len() == 1 => expr = &call.args[0],
            hcl::Expression::Object(object) => {
                return object
                    .keys()
                    .map(|k| match k {
                        hcl::expr::ObjectKey::Identifier(id) => id.to_string(),
                        other => panic!("variable {variable}: attribute {other:?} is not a name"),
                    })
                    .collect();
            }
            other => panic!(
                "variable {variable}: type {} is not an object type",
                format_expr(other)
            ),
        }
    }
}

/// The JSON object keys a value serializes to.
fn json_keys(value: impl serde::Serialize) -> BTreeSet<String> {
    match serde_json::to_value(value).unwrap() {
        serde_json::Value::Object(map) => map.keys().cloned().collect(),
        other => panic!("{other} is not an object"),
    }
}

#[test]
fn the_json_the_module_passes_has_the_binaries_field_names() {
    let m = module();
    // ACCOUNT_PARENT_CFG = jsonencode(var.account_parent_cfg): Account denies
    // unknown fields, so a renamed attribute would fail every task at start.
    let account = live_ci_core::account::Account {
        name: "dev".into(),
        path: "dev".into(),
        dependencies: vec![],
        voters: vec![],
        github_voters: vec![],
        min_approval_count: 1,
        min_rejection_count: 1,
        plan_role_arn: "p".into(),
        apply_role_arn: "a".into(),
        max_parallel: Some(1),
    };
    assert_eq!(
        object_type_attrs(&m, "account_parent_cfg"),
        json_keys(&account)
    );
    // The commit status parameter = jsonencode(var.commit_status_config).
    assert_eq!(
        object_type_attrs(&m, "commit_status_config"),
        json_keys(live_ci_core::status::CommitStatusConfig::default())
    );
}

/// The module's command defaults are the task's own: terra-run runs them in
/// the unit's directory, so a default written for another working directory
/// (`--terragrunt-working-dir {cfg_path}`) would plan the wrong path.
#[test]
fn the_command_defaults_are_the_tasks() {
    let m = module();
    let default = |name: &str| {
        m.variables()
            .into_iter()
            .find(|v| v.name == name)
            .and_then(|v| v.default)
            .unwrap_or_else(|| panic!("variable {name:?} has no default"))
    };
    assert_eq!(
        default("plan_command"),
        format!("{:?}", live_ci_core::terraform::DEFAULT_PLAN_COMMAND)
    );
    assert_eq!(
        default("apply_command"),
        format!("{:?}", live_ci_core::terraform::DEFAULT_APPLY_COMMAND)
    );
    assert_eq!(
        default("show_command"),
        format!("{:?}", live_ci_core::terraform::DEFAULT_SHOW_COMMAND)
    );
    // The task's own default for SKIP_UNCHANGED is the module's.
    use live_ci_task::FromLookup;
    let task = live_ci_task::Common::from_lookup(|k| {
        (k == "REPO_FULL_NAME").then(|| "acme/live".to_string())
    })
    .unwrap();
    assert_eq!(default("skip_unchanged"), task.skip_unchanged.to_string());
}

/// `task_environment` and `task_secrets` reach every task: each container's
/// environment merges the user's map under live-ci's own (whose names win),
/// its secrets add the user's, and the task execution role may read exactly
/// those parameters and secrets.
#[test]
fn the_users_environment_and_secrets_reach_every_task() {
    let m = module();
    for name in ["task_environment", "task_secrets", "git_ssh_key_arn"] {
        assert!(
            m.variables().iter().any(|v| v.name == name),
            "no variable {name:?}"
        );
    }
    let def = || {
        m.block("resource", &["aws_ecs_task_definition", "this"])
            .unwrap()
    };
    // One definition per task kind (for_each), so what it holds reaches all three.
    let for_each = format_expr(m.attr(def(), &["for_each"]).unwrap().item);
    assert_eq!(for_each.trim(), "local.task_kinds");
    let containers = format_expr(m.attr(def(), &["container_definitions"]).unwrap().item);
    let compact: String = containers.split_whitespace().collect();
    assert!(
        compact.contains("merge(var.task_environment,local.task_env_by_kind[each.key])"),
        "the user's environment must come first in the merge (live-ci's names win):\n{containers}"
    );
    assert!(
        compact.contains("local.task_user_secrets"),
        "container secrets do not add task_secrets:\n{containers}"
    );
    let user_secrets = format_expr(m.local("task_user_secrets").unwrap().item);
    assert!(user_secrets.contains("var.task_secrets"), "{user_secrets}");
    let arns = format_expr(m.local("task_user_secret_arns").unwrap().item);
    assert!(
        arns.contains("var.task_secrets") && arns.contains("var.git_ssh_key_arn"),
        "{arns}"
    );
    let iam = std::fs::read_to_string(repo_root().join("infra/iam.tf")).unwrap();
    assert_eq!(
        iam.matches("local.task_user_secret_arns").count(),
        4,
        "the task execution role reads the user's parameters and secrets (ssm and secretsmanager)"
    );
}

/// Task tokens (issue 12, requirement 4): the task-token key's own policy is
/// what decides who may use it, so it must name approval-response alone for
/// `kms:Decrypt` and approval-request alone for `kms:Encrypt`, delegate no
/// use to the account (an IAM policy of any other role would then count) and
/// allow no grant or re-encryption that could extend it. No other role's IAM
/// policy names the key.
#[test]
fn only_approval_response_can_decrypt_task_tokens() {
    let m = module();
    let key = m.block("resource", &["aws_kms_key", "task_token"]).unwrap();
    let policy = format_expr(m.attr(key, &["policy"]).unwrap().item);
    assert_eq!(
        policy.trim(),
        "data.aws_iam_policy_document.task_token_key.json"
    );
    let compact = |s: &str| s.split_whitespace().collect::<String>();
    let statements = m.statements("task_token_key").unwrap();
    let who = |action: &str| -> Vec<String> {
        statements
            .iter()
            .filter(|s| !s.deny && allows(&s.actions, action))
            .flat_map(|s| s.principals.iter().map(|p| compact(p)))
            .collect()
    };
    assert_eq!(
        who("kms:Decrypt"),
        [r#"[aws_iam_role.lambda["approval-response"].arn]"#]
    );
    assert_eq!(
        who("kms:Encrypt"),
        [r#"[aws_iam_role.lambda["approval-request"].arn]"#]
    );
    for action in [
        "kms:CreateGrant",
        "kms:ReEncryptFrom",
        "kms:ReEncryptTo",
        "kms:GenerateDataKey",
        "kms:GenerateDataKeyWithoutPlaintext",
    ] {
        assert!(
            who(action).is_empty(),
            "the task-token key policy allows {action} to {:?}",
            who(action)
        );
    }
    // The Lambdas are configured with this key.
    for env in ["approval_request_env", "approval_response_env"] {
        let text = compact(&format_expr(m.local(env).unwrap().item));
        assert!(
            text.contains("TASK_TOKEN_KEY_ID=aws_kms_key.task_token.arn"),
            "{env}: {text}"
        );
    }
    // IAM: only the two Lambdas' documents name the key, each for its one use.
    let mut named = Vec::new();
    for doc in m.policy_documents() {
        if doc == "task_token_key" {
            continue;
        }
        for s in m.statements(&doc).unwrap() {
            if s.resources.contains("aws_kms_key.task_token") {
                named.push((doc.clone(), s.actions.into_iter().collect::<Vec<_>>()));
            }
        }
    }
    named.sort();
    assert_eq!(
        named,
        [
            (
                "approval_request".to_string(),
                vec!["kms:Encrypt".to_string()]
            ),
            (
                "approval_response".to_string(),
                vec!["kms:Decrypt".to_string()]
            ),
        ]
    );
}

/// approval-request holds the task token of every waiting approval (SNS hands
/// it over) but may only fail it: `states:SendTaskFailure`, for a voter SES
/// refuses for good (issue 28 item 4). Completing the state is the voters'
/// decision, through approval-response: approval-request's role allows no
/// `states:SendTaskSuccess` (nor a wildcard that would), and its binary lists
/// none. The SendTask* actions have no resource type in the Service
/// Authorization Reference, so the grants name "*".
#[test]
fn approval_request_may_fail_a_task_token_but_never_complete_it() {
    let m = module();
    let granted = m.policy_actions("approval_request").unwrap();
    assert!(allows(&granted, "states:SendTaskFailure"), "{granted:?}");
    for action in ["states:SendTaskSuccess", "states:SendTaskHeartbeat"] {
        assert!(
            !allows(&granted, action),
            "approval-request's role allows {action}: {granted:?}"
        );
        assert!(!live_ci_approval_request::AWS_ACTIONS.contains(&action));
    }
    for s in m.statements("approval_request").unwrap() {
        if allows(&s.actions, "states:SendTaskFailure") {
            let resources: String = s.resources.split_whitespace().collect();
            assert_eq!(resources, r#"["*"]"#, "{s:?}");
        }
    }
}
