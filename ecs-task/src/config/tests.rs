//! The configuration read from lookups: defaults, every problem named at
//! once, nothing read outside [`ENV_VARS`](super::ENV_VARS).

use super::aws_actions::METADB_ACTIONS;
use super::*;
use live_ci_core::settings::ConfigError;
use live_ci_core::terraform::{DEFAULT_PLAN_COMMAND, DEFAULT_SHOW_COMMAND};
use live_ci_github::GitHubAuth;
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

/// A policy command without `{plan_json}` is refused at start-up,
/// naming POLICY_COMMAND and quoting the template; empty means none.
#[test]
fn a_policy_command_without_its_placeholder_is_refused_at_start() {
    let err = common(&[(POLICY_COMMAND, "checkov -f plan.json")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("POLICY_COMMAND"), "{err}");
    assert!(
        err.contains("lacks the placeholder {plan_json}")
            && err.contains("\"checkov -f plan.json\""),
        "{err}"
    );
    let none = common(&[(POLICY_COMMAND, "")]).unwrap();
    assert_eq!(none.policy_command, None);
    assert!(!none.policy_override, "off by default");
    let on = common(&[
        (POLICY_COMMAND, "checkov -f {plan_json}"),
        (POLICY_OVERRIDE, "true"),
    ])
    .unwrap();
    assert!(on.policy_command.is_some() && on.policy_override);
}

#[test]
fn reads_nothing_outside_env_vars() {
    let read = RefCell::new(BTreeSet::new());
    // Every variable set but the GitHub App's (a token and an App at
    // once is refused) and the module sources (an App's only), so every
    // optional branch is taken; then again without METADB_URL and the
    // token, for the Data API, App and module-source branches, and with
    // the plan phase.
    let lookup = |without: &'static [&'static str], phase: &'static str| {
        let read = &read;
        move |k: &str| {
            read.borrow_mut().insert(k.to_string());
            if without.contains(&k) {
                return None;
            }
            Some(match k {
                "MAX_PARALLEL" | "HEARTBEAT_SECONDS" | "LIVE_CI_PR_NUMBER" => "3".to_string(),
                "LIVE_CI_CHILD_UID" | "LIVE_CI_CHILD_GID" => "10002".to_string(),
                "FAIL_FAST" | "SKIP_UNCHANGED" | "ALLOW_DESTROY" => "true".into(),
                "SHOW_COMMAND" => "terraform show -json {plan_file}".into(),
                "SCAN_TYPE" => "plan".into(),
                "LIVE_CI_PHASE" => phase.into(),
                "FILE_PATH_PATTERN" => r"\.tf$".into(),
                "PLAN_COMMAND" => "terraform plan".into(),
                "APPLY_COMMAND" => "terraform apply {plan_file}".into(),
                "GITHUB_APP_ID" | "GITHUB_APP_INSTALLATION_ID" => "7".into(),
                "REPO_FULL_NAME" => "acme/live".into(),
                "MODULE_SOURCE_REPOSITORIES" => "acme/modules, acme/shared".into(),
                "MODULE_SOURCES_GIT_URL" => "https://git.example.com".into(),
                "MODULE_SOURCES_FOR_FORKS" => "true".into(),
                "SSH_KNOWN_HOSTS" => "git.example.com ssh-ed25519 AAAA".into(),
                "DEPLOY_FILTERS" => r#"["./dev/**"]"#.into(),
                "MERGE_LOCK_SCOPE" => "units".into(),
                POLICY_OVERRIDE => "true".into(),
                POLICY_COMMAND => "checkov -f {plan_json}".into(),
                _ => format!("value-of-{k}"),
            })
        }
    };
    for command in [
        TaskCommand::CreateDeployStack,
        TaskCommand::TerraRun,
        TaskCommand::PrPlan,
        TaskCommand::Drift,
    ] {
        const TOKEN: &[&str] = &[
            live_ci_github::APP_ID,
            live_ci_github::APP_INSTALLATION_ID,
            live_ci_github::APP_PRIVATE_KEY_PARAM,
            MODULE_SOURCE_REPOSITORIES,
        ];
        let config = Config::from_lookup(command, lookup(TOKEN, "apply")).unwrap();
        assert_eq!(config.common().unwrap().scan_type, ScanType::Plan);
        let data_api = Config::from_lookup(
            command,
            lookup(&["METADB_URL", live_ci_github::TOKEN_PARAM], "plan"),
        )
        .unwrap();
        assert!(matches!(
            data_api.common().unwrap().github,
            Some(GitHubAuth::App { app_id: 7, .. })
        ));
        assert_eq!(
            data_api.module_sources().map(|m| m.repositories.clone()),
            Some(vec!["acme/modules".to_string(), "acme/shared".to_string()])
        );
        if let Config::TerraRun { metadb, job, .. } = data_api {
            assert!(matches!(metadb, MetadbConfig::DataApi { .. }));
            assert_eq!(job.phase, PhaseInput::Plan);
        }
        if let Config::TerraRun { job, .. } = config {
            assert_eq!(
                job.phase,
                PhaseInput::Apply {
                    plan_artifact: "value-of-LIVE_CI_PLAN_ARTIFACT".into()
                }
            );
        }
    }
    let read = read.into_inner();
    let known: BTreeSet<String> = ENV_VARS.iter().map(|s| s.to_string()).collect();
    let outside: Vec<&String> = read.difference(&known).collect();
    assert!(outside.is_empty(), "read but not in ENV_VARS: {outside:?}");
    // And ENV_VARS lists nothing that is never read.
    let unread: Vec<&String> = known.difference(&read).collect();
    assert!(unread.is_empty(), "in ENV_VARS but never read: {unread:?}");
    assert!(AWS_ACTIONS.contains(&"states:SendTaskSuccess"));
    assert!(AWS_ACTIONS.contains(&"lambda:InvokeFunction"));
}

/// terra-run's run pages: the key's parameter and the page's address
/// come together or not at all.
#[test]
fn run_pages_need_both_the_key_and_the_address() {
    let base = [
        ("REPO_FULL_NAME", "acme/live"),
        ("METADB_URL", "postgres://x"),
        ("PLAN_BUCKET", "b"),
        ("LIVE_CI_PHASE", "plan"),
        ("LIVE_CI_TASK_TOKEN", "t"),
        ("LIVE_CI_EXECUTION_ID", "e"),
    ];
    let read = |extra: &[(&str, &str)]| {
        let pairs: Vec<(&str, &str)> = base.iter().chain(extra).copied().collect();
        Config::from_lookup(TaskCommand::TerraRun, lookup(&pairs))
    };
    let Ok(Config::TerraRun { job, .. }) = read(&[
        (RUN_LINK_KEY_SSM_KEY, "/live-ci/run-link-key"),
        (RUN_PAGE_URL, "https://pages.example/"),
    ]) else {
        panic!("terra-run with run pages")
    };
    assert_eq!(
        job.run_pages_param,
        Some((
            "/live-ci/run-link-key".to_string(),
            "https://pages.example/".to_string()
        ))
    );
    assert!(job.run_pages.is_none(), "main.rs reads the key");
    let Ok(Config::TerraRun { job, .. }) = read(&[]) else {
        panic!("terra-run without run pages")
    };
    assert_eq!(job.run_pages_param, None);
    let err = read(&[(RUN_LINK_KEY_SSM_KEY, "/k")]).unwrap_err();
    assert_eq!(err.settings.problems, [ConfigError::Missing(RUN_PAGE_URL)]);
    let err = read(&[(RUN_PAGE_URL, "https://p/")]).unwrap_err();
    assert_eq!(
        err.settings.problems,
        [ConfigError::Missing(RUN_LINK_KEY_SSM_KEY)]
    );
}

#[test]
fn a_subcommand_names_every_missing_or_bad_variable_at_once() {
    let missing = |command, pairs: &[(&str, &str)]| -> Vec<ConfigError> {
        Config::from_lookup(command, lookup(pairs))
            .unwrap_err()
            .settings
            .problems
    };
    let bad = |name: &'static str, value: &str| ConfigError::Invalid {
        name,
        value: value.into(),
        reason: String::new(),
    };
    // Reasons vary; compare names and values.
    let names = |errors: Vec<ConfigError>| -> Vec<ConfigError> {
        errors
            .into_iter()
            .map(|e| match e {
                ConfigError::Invalid { name, value, .. } => bad(name, &value),
                other => other,
            })
            .collect()
    };
    assert_eq!(
        names(missing(
            TaskCommand::CreateDeployStack,
            &[("SCAN_TYPE", "diff"), ("MAX_PARALLEL", "0")]
        )),
        vec![
            bad("SCAN_TYPE", "diff"),
            bad("MAX_PARALLEL", "0"),
            ConfigError::Missing("REPO_CLONE_URL"),
            ConfigError::Missing("LIVE_CI_COMMIT"),
            ConfigError::Missing("TRIGGER_SF_FUNCTION_NAME"),
            ConfigError::Missing("MERGE_LOCK_SSM_KEY"),
            ConfigError::Missing("ACCOUNT_PARENT_CFG"),
            ConfigError::Missing("METADB_URL"),
            ConfigError::Missing("PLAN_BUCKET"),
        ]
    );
    let repo = ("REPO_FULL_NAME", "acme/live");
    assert_eq!(
        names(missing(
            TaskCommand::TerraRun,
            &[
                repo,
                ("LIVE_CI_PHASE", "apply"),
                ("METADB_CLUSTER_ARN", "c")
            ]
        )),
        vec![
            ConfigError::Missing("LIVE_CI_TASK_TOKEN"),
            ConfigError::Missing("LIVE_CI_PLAN_ARTIFACT"),
            ConfigError::Missing("LIVE_CI_EXECUTION_ID"),
            ConfigError::Missing("METADB_SECRET_ARN"),
            ConfigError::Missing("PLAN_BUCKET"),
        ]
    );
    assert_eq!(
        names(missing(
            TaskCommand::PrPlan,
            &[repo, ("LIVE_CI_PR_NUMBER", "x1")]
        )),
        vec![
            bad("LIVE_CI_PR_NUMBER", "x1"),
            ConfigError::Missing("LIVE_CI_COMMIT"),
            ConfigError::Missing("LIVE_CI_BASE_REF"),
        ]
    );
    assert_eq!(
        names(missing(
            TaskCommand::PrPlan,
            &[repo, ("LIVE_CI_COMMIT", "c")]
        )),
        vec![
            ConfigError::Missing("LIVE_CI_PR_NUMBER"),
            ConfigError::Missing("LIVE_CI_BASE_REF"),
        ]
    );
    // A terra-run keeps its token, to answer it with the problems.
    let err = Config::from_lookup(
        TaskCommand::TerraRun,
        lookup(&[repo, ("LIVE_CI_TASK_TOKEN", "tok")]),
    )
    .unwrap_err();
    assert_eq!(err.task_token.as_deref(), Some("tok"));
    // One message naming all of them.
    let text = Config::from_lookup(TaskCommand::PrPlan, lookup(&[repo]))
        .unwrap_err()
        .to_string();
    assert_eq!(
        text,
        "environment variable LIVE_CI_PR_NUMBER is not set; \
         environment variable LIVE_CI_COMMIT is not set; \
         environment variable LIVE_CI_BASE_REF is not set"
    );
    // pr-plan needs no metadb and no plan bucket; contract reads nothing.
    let pr = Config::from_lookup(
        TaskCommand::PrPlan,
        lookup(&[
            repo,
            ("LIVE_CI_PR_NUMBER", "#7"),
            ("LIVE_CI_COMMIT", "c"),
            ("LIVE_CI_BASE_REF", "main"),
        ]),
    )
    .unwrap();
    assert!(matches!(
        pr,
        Config::PrPlan {
            job: PrPlanConfig { pr_number: 7, .. }
        }
    ));
    assert!(matches!(
        Config::from_lookup(TaskCommand::Contract, |_| None),
        Ok(Config::Contract)
    ));
}

#[test]
fn the_binarys_actions_are_the_union_of_its_jobs() {
    let union: BTreeSet<&str> = JOB_AWS_ACTIONS
        .iter()
        .flat_map(|(_, a)| a.iter().copied())
        .collect();
    let all: BTreeSet<&str> = AWS_ACTIONS.iter().copied().collect();
    assert_eq!(union, all);
    assert_eq!(METADB_ACTIONS.as_slice(), live_ci_metadb::AWS_ACTIONS);
    // pr-plan runs untrusted code: no metadb, no Step Functions, no plans.
    for action in PR_PLAN_AWS_ACTIONS {
        assert!(
            !["rds-data:", "states:", "s3:", "secretsmanager:"]
                .iter()
                .any(|p| action.starts_with(p)),
            "{action}"
        );
    }
}

fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

/// The shared settings with a repository and `pairs`.
fn common(pairs: &[(&str, &str)]) -> Result<Common, ConfigErrors> {
    let mut all = vec![("REPO_FULL_NAME", "acme/live")];
    all.extend_from_slice(pairs);
    Common::from_lookup(lookup(&all))
}

#[test]
fn module_sources_need_an_app_and_the_installations_owner() {
    let app = [
        ("GITHUB_APP_ID", "12"),
        ("GITHUB_APP_INSTALLATION_ID", "34"),
        ("GITHUB_APP_PRIVATE_KEY_SSM_KEY", "/k"),
    ];
    let with = |extra: &[(&str, &str)], app_too: bool| {
        let mut pairs: Vec<(&str, &str)> = if app_too { app.to_vec() } else { vec![] };
        pairs.extend_from_slice(extra);
        common(&pairs)
    };
    let c = with(&[(MODULE_SOURCE_REPOSITORIES, "acme/modules")], true).unwrap();
    assert_eq!(
        c.module_sources,
        Some(ModuleSources {
            repositories: vec!["acme/modules".into()],
            git_url: "https://github.com".into(),
            for_forks: false,
        })
    );
    let ghe = with(
        &[
            (MODULE_SOURCE_REPOSITORIES, "acme/modules"),
            ("GITHUB_API_URL", "https://ghe.example.com/api/v3"),
        ],
        true,
    )
    .unwrap();
    assert_eq!(
        ghe.module_sources.unwrap().git_url,
        "https://ghe.example.com"
    );
    assert_eq!(with(&[], true).unwrap().module_sources, None);
    let err = |extra: &[(&str, &str)], app_too: bool| with(extra, app_too).unwrap_err().to_string();
    assert_eq!(
        err(
            &[
                (MODULE_SOURCE_REPOSITORIES, "acme/modules"),
                ("GITHUB_TOKEN_SSM_KEY", "/t")
            ],
            false
        ),
        "environment variable MODULE_SOURCE_REPOSITORIES=\"acme/modules\": needs a github app (GITHUB_APP_ID): a personal token is never given to repository code"
    );
    assert_eq!(
        err(&[(MODULE_SOURCE_REPOSITORIES, "acme/modules,evil/x")], true),
        "environment variable MODULE_SOURCE_REPOSITORIES=\"acme/modules,evil/x\": \"evil/x\" is not a repository of \"acme\", the owner the github app is installed on"
    );
}

#[test]
fn defaults_and_bad_values_name_the_variable() {
    let c = Common::from_lookup(lookup(&[("REPO_FULL_NAME", "acme/live")])).unwrap();
    assert_eq!(c.scan_type, ScanType::Graph);
    assert_eq!(c.max_parallel, 10);
    assert_eq!(c.clone_url, "https://github.com/acme/live.git");
    assert_eq!(c.plan_command.as_str(), DEFAULT_PLAN_COMMAND);
    assert_eq!(c.show_command.as_str(), DEFAULT_SHOW_COMMAND);
    assert!(c.skip_unchanged);
    let err = common(&[("SKIP_UNCHANGED", "maybe")]).unwrap_err();
    assert!(err.to_string().contains("SKIP_UNCHANGED"), "{err}");
    let err = common(&[("SCAN_TYPE", "diff")]).unwrap_err();
    assert!(err.to_string().contains("SCAN_TYPE=\"diff\""), "{err}");
    let err = common(&[("PLAN_COMMAND", "terraform plan {dir}")]).unwrap_err();
    assert!(err.to_string().contains("\"{dir}\""), "{err}");
    // A placeholder the quoting would not protect is refused, naming the template.
    let err = common(&[("PLAN_COMMAND", "terraform plan -var=\"unit={cfg_path}\"")])
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("environment variable PLAN_COMMAND=") && err.contains("is inside quotes"),
        "{err}"
    );
    let err = common(&[("APPLY_COMMAND", "./apply.sh {plan_file}")])
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("environment variable APPLY_COMMAND=")
            && err.contains("no `terraform apply`"),
        "{err}"
    );
    let err = common(&[("MAX_PARALLEL", "0")]).unwrap_err();
    assert!(err.to_string().contains("MAX_PARALLEL"), "{err}");
    assert_eq!(
        github_clone_url("https://ghe.example.com/api/v3/", "a/b"),
        "https://ghe.example.com/a/b.git"
    );
}
