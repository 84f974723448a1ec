//! The rendered deployment definition, checked without a cloud: valid JSON,
//! every state reachable, every Task catching, every placeholder substituted,
//! and the names the other components rely on present.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use live_ci_stepfunctions::outcome::{self, state};
use live_ci_stepfunctions::payload::task_env;
use live_ci_stepfunctions::{
    ApplyResult, DEPLOYMENT_TEMPLATE, DeploymentVars, PlanResult, SfnInput, WorkflowError, asl,
    placeholders, render,
};
use serde_json::Value;

fn vars() -> DeploymentVars {
    DeploymentVars {
        ecs_cluster_arn: "arn:aws:ecs:us-west-2:111111111111:cluster/live-ci".into(),
        terra_run_task_definition_arn:
            "arn:aws:ecs:us-west-2:111111111111:task-definition/live-ci-terra-run:3".into(),
        terra_run_container_name: "terra-run".into(),
        terra_run_role_arn_prefix: "arn:aws:iam::111111111111:role/live-ci-".into(),
        subnet_ids: vec!["subnet-0a".into(), "subnet-0b".into()],
        security_group_ids: vec!["sg-01".into()],
        assign_public_ip: false,
        approval_topic_arn: "arn:aws:sns:us-west-2:111111111111:live-ci-approval".into(),
        approval_timeout_seconds: 86_400,
        plan_heartbeat_seconds: 300,
        plan_timeout_seconds: 3_600,
        apply_heartbeat_seconds: 300,
        apply_timeout_seconds: 7_200,
        retry_interval_seconds: 10,
        retry_max_attempts: 5,
    }
}

fn rendered() -> Value {
    serde_json::from_str(&vars().render_deployment().unwrap()).unwrap()
}

#[test]
fn the_typed_variables_are_exactly_the_templates_placeholders() {
    let given: BTreeSet<String> = vars().to_template_vars().unwrap().into_keys().collect();
    assert_eq!(given, placeholders(DEPLOYMENT_TEMPLATE).unwrap());
}

#[test]
fn renders_to_json_with_every_placeholder_substituted() {
    let text = vars().render_deployment().unwrap();
    assert!(!text.contains("${"), "{text}");
    let doc: Value = serde_json::from_str(&text).unwrap();
    let plan = &doc["States"]["Plan"];
    assert_eq!(
        plan["Parameters"]["Cluster"],
        "arn:aws:ecs:us-west-2:111111111111:cluster/live-ci"
    );
    assert_eq!(
        plan["Parameters"]["NetworkConfiguration"]["AwsvpcConfiguration"]["Subnets"],
        serde_json::json!(["subnet-0a", "subnet-0b"])
    );
    assert_eq!(plan["HeartbeatSeconds"], 300);
    assert_eq!(plan["TimeoutSeconds"], 3_600);
    assert_eq!(doc["States"]["Request Approval"]["TimeoutSeconds"], 86_400);
    assert_eq!(doc["States"]["Apply"]["TimeoutSeconds"], 7_200);
}

#[test]
fn every_state_is_reachable_and_every_task_catches() {
    let text = vars().render_deployment().unwrap();
    let names = asl::check(&text).unwrap();
    let expected: BTreeSet<String> = [
        state::PLAN,
        state::REQUEST_APPROVAL,
        state::APPROVAL_RESULTS,
        state::APPLY,
        state::SUCCESS,
        state::REJECT,
        state::PLAN_FAILED,
        state::APPROVAL_TIMED_OUT,
        state::APPROVAL_FAILED,
        state::INVALID_DECISION,
        state::APPLY_FAILED,
        state::PLAN_CHANGES,
        state::NO_CHANGES,
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(names, expected);
    let doc = rendered();
    for (name, st) in doc["States"].as_object().unwrap() {
        if st["Type"] == "Task" {
            let catches = st["Catch"].as_array().unwrap();
            let last = catches.last().unwrap();
            assert_eq!(
                last["ErrorEquals"],
                serde_json::json!(["States.ALL"]),
                "{name}"
            );
            assert!(
                st["Retry"].as_array().is_some_and(|r| !r.is_empty()),
                "{name}"
            );
        }
    }
}

#[test]
fn fail_states_carry_the_error_names_trigger_sf_classifies() {
    let doc = rendered();
    for (st, error) in [
        (state::REJECT, outcome::REJECTED),
        (state::PLAN_FAILED, outcome::PLAN_FAILED),
        (state::APPROVAL_TIMED_OUT, outcome::APPROVAL_TIMED_OUT),
        (state::APPROVAL_FAILED, outcome::APPROVAL_FAILED),
        (state::INVALID_DECISION, outcome::INVALID_DECISION),
        (state::APPLY_FAILED, outcome::APPLY_FAILED),
    ] {
        assert_eq!(doc["States"][st]["Type"], "Fail", "{st}");
        assert_eq!(doc["States"][st]["Error"], error, "{st}");
    }
    assert_eq!(doc["States"][state::SUCCESS]["Type"], "Succeed");
}

#[test]
fn task_overrides_set_exactly_the_documented_environment() {
    let doc = rendered();
    for (st, expected) in [
        (state::PLAN, &task_env::PLAN[..]),
        (state::APPLY, &task_env::APPLY[..]),
    ] {
        let overrides = &doc["States"][st]["Parameters"]["Overrides"]["ContainerOverrides"][0];
        assert_eq!(overrides["Name"], "terra-run");
        let names: BTreeSet<&str> = overrides["Environment"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["Name"].as_str().unwrap())
            .collect();
        assert_eq!(names, expected.iter().copied().collect(), "{st}");
        assert_eq!(
            doc["States"][st]["Resource"],
            "arn:aws:states:::ecs:runTask.waitForTaskToken"
        );
    }
}

/// Each phase's task runs as its account's role of that phase (ECS's
/// `overrides.taskRoleArn`), named from the execution's `account_name`; no
/// other state starts a task, so no task holds an apply-phase role during a
/// plan.
#[test]
fn each_phase_runs_as_its_accounts_task_role_of_that_phase() {
    let doc = rendered();
    for (st, phase) in [(state::PLAN, "plan"), (state::APPLY, "apply")] {
        assert_eq!(
            doc["States"][st]["Parameters"]["Overrides"]["TaskRoleArn.$"],
            format!(
                "States.Format('arn:aws:iam::111111111111:role/live-ci-{phase}-{{}}', $.account_name)"
            ),
            "{st}"
        );
    }
    // Sorted: serde_json's map order depends on the workspace's features
    // (`preserve_order` keeps the definition's order, the default sorts).
    let mut runs_tasks: Vec<&String> = doc["States"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, st)| {
            st["Resource"]
                .as_str()
                .is_some_and(|r| r.contains(":ecs:") || r.contains(":sqs:"))
        })
        .map(|(name, _)| name)
        .collect();
    runs_tasks.sort();
    assert_eq!(runs_tasks, [state::APPLY, state::PLAN]);
    let mut v = vars();
    v.terra_run_role_arn_prefix = "arn:aws:iam::1:role/x', $.other)".into();
    let err = v.render_deployment().unwrap_err().to_string();
    assert!(err.contains("terra_run_role_arn_prefix"), "{err}");
}

#[test]
fn string_values_are_json_escaped() {
    let mut v = vars();
    v.terra_run_container_name = r#"odd "name"\"#.into();
    let doc: Value = serde_json::from_str(&v.render_deployment().unwrap()).unwrap();
    assert_eq!(
        doc["States"]["Plan"]["Parameters"]["Overrides"]["ContainerOverrides"][0]["Name"],
        r#"odd "name"\"#
    );
}

#[test]
fn invalid_variables_are_named() {
    let mut v = vars();
    v.plan_heartbeat_seconds = 3_600;
    assert_eq!(
        v.render_deployment().unwrap_err().to_string(),
        r#"variable "plan_heartbeat_seconds": invalid value "3600": must be shorter than the task's timeout"#
    );
    let mut v = vars();
    v.subnet_ids.clear();
    assert!(matches!(
        v.render_deployment(),
        Err(WorkflowError::InvalidValue { name, .. }) if name == "subnet_ids"
    ));
}

#[test]
fn check_rejects_broken_definitions() {
    let cases = [
        (
            r#"{"StartAt":"A","States":{"A":{"Type":"Pass","End":true},"B":{"Type":"Succeed"}}}"#,
            "unreachable states: [\"B\"]",
        ),
        (
            r#"{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"x","End":true}}}"#,
            "does not catch",
        ),
        (
            r#"{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"Nope"}}}"#,
            "which does not exist",
        ),
        (
            r#"{"StartAt":"A","States":{"A":{"Type":"Pass"}}}"#,
            "neither",
        ),
        (r#"{"a": "${x}"}"#, "unrendered placeholder"),
        ("{", "not json"),
    ];
    for (text, expected) in cases {
        let err = asl::check(text).unwrap_err().to_string();
        assert!(err.contains(expected), "{text}: {err}");
    }
}

#[test]
fn render_is_the_plain_substitution_terraform_does() {
    let vars = vars().to_template_vars().unwrap();
    let text = render(DEPLOYMENT_TEMPLATE, &vars).unwrap();
    // JSONPath and context references pass through untouched.
    assert!(text.contains(r#""Value.$": "$$.Task.Token""#));
    assert!(text.contains(r#""Variable": "$.approval.decision""#));
}

#[test]
fn the_seeds_sample_input_decodes() {
    let sample = r#"{
      "execution_id": "run-1-c8c5-dev-baz-729", "is_rollback": false, "pr_id": 1,
      "commit_id": "c8c5f6afc7345bd21cd79acaf740dc18b60755e3",
      "base_ref": "refs/heads/master", "head_ref": "refs/heads/feature-1",
      "cfg_path": "directory_dependency/dev-account/us-west-2/env-one/baz",
      "cfg_deps": ["directory_dependency/dev-account/global"], "status": "running",
      "plan_command": "terragrunt plan", "apply_command": "terragrunt apply -auto-approve",
      "new_providers": ["registry.terraform.io/hashicorp/null"], "new_resources": ["null_resource.this"],
      "account_name": "dev", "account_path": "directory_dependency/dev-account",
      "account_deps": ["shared_services"], "voters": ["voter@example.com"],
      "approval_voters": [], "min_approval_count": 1, "rejection_voters": [],
      "min_rejection_count": 1,
      "plan_role_arn": "arn:aws:iam::111111111111:role/plan",
      "apply_role_arn": "arn:aws:iam::111111111111:role/apply"
    }"#;
    let input: SfnInput =
        live_ci_stepfunctions::payload::decode("execution input", sample).unwrap();
    assert_eq!(input.action, live_ci_stepfunctions::Action::Apply);
    let again: SfnInput = serde_json::from_str(&serde_json::to_string(&input).unwrap()).unwrap();
    assert_eq!(again, input);
    let err = live_ci_stepfunctions::payload::decode::<SfnInput>("execution input", "{}")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("execution input: invalid json: missing field"),
        "{err}"
    );
}

#[test]
fn the_mock_configs_responses_are_valid_payloads() {
    let path = live_ci_testkit::repo_root().join("statemachine/testdata/sfn-mock-config.json");
    let config: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut seen = 0;
    for (name, attempts) in config["MockedResponses"].as_object().unwrap() {
        for attempt in attempts.as_object().unwrap().values() {
            let Some(ret) = attempt.get("Return") else {
                continue;
            };
            if name.starts_with("Plan") {
                serde_json::from_value::<PlanResult>(ret.clone()).unwrap();
            } else {
                serde_json::from_value::<ApplyResult>(ret.clone()).unwrap();
            }
            seen += 1;
        }
    }
    assert!(seen >= 3);
}

/// The claim that Terraform and Rust render the template identically, checked
/// with the real `templatefile` (Terraform needs no provider for it).
#[test]
fn terraform_templatefile_renders_the_same_definition() {
    let Some(terraform) = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("terraform"))
            .find(|p| p.is_file())
    }) else {
        eprintln!("terraform is not on PATH: skipped");
        return;
    };
    let mut v = vars();
    v.terra_run_container_name = r#"odd "name" \ %{y} $x"#.into();
    let tf_vars: String = v
        .to_template_vars()
        .unwrap()
        .iter()
        .map(|(name, value)| format!("    {name} = \"{}\"\n", hcl_escape(value)))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let template = live_ci_testkit::repo_root().join("statemachine/deployment.asl.json");
    std::fs::write(
        dir.path().join("main.tf"),
        format!(
            "output \"definition\" {{\n  value = templatefile({:?}, {{\n{tf_vars}  }})\n}}\n",
            template.canonicalize().unwrap()
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("cli.tfrc"), "").unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&terraform)
            .args(args)
            .current_dir(dir.path())
            .env("TF_CLI_CONFIG_FILE", dir.path().join("cli.tfrc"))
            .env("TF_IN_AUTOMATION", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "terraform {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    run(&["apply", "-auto-approve", "-input=false", "-no-color"]);
    let by_terraform = run(&["output", "-raw", "definition"]);
    assert_eq!(by_terraform, v.render_deployment().unwrap());
}

fn hcl_escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace("${", "$${")
        .replace("%{", "%%{")
}

/// Plan retries exactly the name terra-run sends for a failure that may pass
/// on a second try (core's one constant), besides ECS's own throttling; Apply
/// does not (a task that failed after terraform applied must not run again:
/// its Catch reports the real cause). Neither retries the permanent name or
/// everything: those reach the Catch and the step's Fail state.
#[test]
fn plan_retries_the_retryable_error_name_and_both_steps_catch_the_rest() {
    use live_ci_core::port::{PERMANENT_ERROR, RETRYABLE_ERROR};
    let doc = rendered();
    let retried = |st: &str| -> Vec<String> {
        doc["States"][st]["Retry"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["ErrorEquals"].as_array().unwrap())
            .filter_map(|e| e.as_str().map(str::to_owned))
            .collect()
    };
    assert!(
        retried(state::PLAN).iter().any(|e| e == RETRYABLE_ERROR),
        "{:?}",
        retried(state::PLAN)
    );
    assert!(
        !retried(state::APPLY).iter().any(|e| e == RETRYABLE_ERROR),
        "{:?}",
        retried(state::APPLY)
    );
    for st in [state::PLAN, state::APPLY] {
        for never in [PERMANENT_ERROR, "States.ALL", "States.TaskFailed"] {
            assert!(
                !retried(st).iter().any(|e| e == never),
                "{st} retries {never}"
            );
        }
    }
}
