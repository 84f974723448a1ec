//! The binary's start, step by step (a module of `main.rs`, not of the
//! library: these steps keep the binary's error contexts, which its tests
//! read on stderr): the configuration checked, the child user, then the
//! clients every subcommand is handed, opened at once. A terra-run that
//! cannot start answers its task token, so the state machine does not wait
//! out the heartbeat.

use anyhow::Context;
use aws_config::SdkConfig;
use live_ci_aws::{SsmParamStore, StsRoleAssumer};
use live_ci_boot::Boot;
use live_ci_core::approval::RunPages;
use live_ci_core::deploy::ExecutionRecord;
use live_ci_core::port::TaskTokens;
use live_ci_core::settings::ConfigError;
use live_ci_core::status::CommitStatusConfig;
use live_ci_github::{GitHubClient, Job};
use live_ci_metadb::{AnyMetadb, LoginRole};
use live_ci_stepfunctions::SfnTaskTokens;
use live_ci_task::checkout::Repo;
use live_ci_task::create_deploy_stack::status_config;
use live_ci_task::output;
use live_ci_task::startup::{open_metadb_as_migrator, open_metadb_checked, open_metadb_reading};
use live_ci_task::terra_run::run_pages;
use live_ci_task::{
    AWS_ACTIONS, Common, Config, ConfigErrors, ENV_VARS, TaskError, git_credentials, logs, sandbox,
    timeline,
};

/// The configuration, or every problem with it (a terra-run's token
/// answered with them); then the user repository code runs as.
pub(crate) async fn checked_config(config: Result<Config, ConfigErrors>) -> anyhow::Result<Config> {
    let config = match config {
        Ok(config) => config,
        Err(errors) => {
            if let Some(token) = &errors.task_token {
                // The name every configuration error of the task library carries.
                let name = TaskError::Config(ConfigError::Missing("")).name();
                let boot = Boot::load().await;
                answer_token(&boot.aws, token, name, &errors.to_string()).await;
            }
            return Err(errors).context("live-ci-task configuration");
        }
    };
    timeline::mark("config");
    if let Some(common) = config.common()
        && let Err(e) = sandbox::run_children_as(common.child_user)
    {
        // Every command of repository code runs as that user, or none runs.
        if let Config::TerraRun { job, .. } = &config {
            let boot = Boot::load().await;
            answer_token(&boot.aws, &job.task_token, e.name(), &e.to_string()).await;
        }
        return Err(e).context("the child user");
    }
    Ok(config)
}

/// `contract`: the environment variables and IAM actions, as JSON.
pub(crate) fn contract() {
    let contract = serde_json::json!({"env_vars": ENV_VARS, "aws_actions": AWS_ACTIONS});
    output::text(&format!("{contract}\n"));
}

/// What every subcommand is handed besides the git host.
pub(crate) struct Clients {
    pub(crate) aws: SdkConfig,
    pub(crate) params: SsmParamStore,
    pub(crate) roles: StsRoleAssumer,
    pub(crate) repo: Repo,
    pub(crate) logs_url: Option<String>,
    /// Opened at start for the subcommands that use one.
    pub(crate) metadb: Option<AnyMetadb>,
    /// A terra-run's execution record, when read at start.
    pub(crate) record: Option<ExecutionRecord>,
    /// A terra-run's commit-status switches, read at start.
    pub(crate) switches: CommitStatusConfig,
    /// A terra-run's run-link key and page, read at start.
    pub(crate) run_pages: Option<RunPages>,
}

impl Clients {
    /// The metadb opened for a subcommand that has one.
    pub(crate) fn metadb(&self) -> anyhow::Result<&AnyMetadb> {
        self.metadb
            .as_ref()
            .context("no metadb was opened for this subcommand")
    }
}

/// The clients and the GitHub client. The start's independent reads go at
/// once (the token, the log link, the metadb and a terra-run's status
/// switches): each is a round trip or a connection, and a task starts twice
/// per unit. terra-run also reads its execution's record there, beside the
/// metadb's schema check.
pub(crate) async fn open(
    config: &Config,
    common: &Common,
    boot: Boot,
) -> anyhow::Result<(Clients, Option<GitHubClient>)> {
    let params = boot.params();
    let switches = async {
        match config {
            Config::TerraRun { .. } => status_config(common, &params).await.unwrap_or_else(|e| {
                // Statuses are advisory; the task token carries the result.
                tracing::warn!(error = %e, "reading the commit status config");
                CommitStatusConfig::default()
            }),
            _ => CommitStatusConfig::default(),
        }
    };
    let run_pages = async {
        match config {
            Config::TerraRun { job, .. } => run_pages(job, &params).await,
            _ => None,
        }
    };
    let connect = github(config, common, &params);
    let (github, logs_url, metadb, (switches, run_pages)) = tokio::join!(
        connect,
        logs::logs_url(common),
        metadb(config, &boot.aws),
        async { tokio::join!(switches, run_pages) }
    );
    let (github, token) = github?;
    module_sources(config, common, github.as_ref()).await;
    let (metadb, record) = match metadb.transpose() {
        Ok(opened) => opened.map_or((None, None), |(m, record)| (Some(m), record)),
        Err(e) => {
            // A terra-run that cannot reach the metadb says so now, by its
            // kind (a retryable one is retried by the state machine), rather
            // than leaving the execution to its heartbeat timeout.
            if let Config::TerraRun { job, .. } = config {
                answer_token(&boot.aws, &job.task_token, e.name(), &e.to_string()).await;
            }
            return Err(e).context("opening the metadb");
        }
    };
    timeline::mark("clients");
    let repo = Repo {
        clone_url: common.clone_url.clone(),
        token,
    };
    let clients = Clients {
        roles: StsRoleAssumer::new(live_ci_aws::sdk::sts::Client::new(&boot.aws)),
        aws: boot.aws,
        params,
        repo,
        logs_url,
        metadb,
        record,
        switches,
        run_pages,
    };
    Ok((clients, github))
}

/// The subcommand's metadb (none for pr-plan): create-deploy-stack
/// migrates and sets the restricted jobs' logins, drift checks the schema,
/// terra-run checks it and reads its execution's record.
async fn metadb(
    config: &Config,
    aws: &SdkConfig,
) -> Option<live_ci_task::Result<(AnyMetadb, Option<ExecutionRecord>)>> {
    match config {
        Config::CreateDeployStack {
            metadb,
            terra_run_secret,
            drift_secret,
            ..
        } => {
            let logins: Vec<(LoginRole, &str)> = [
                (LoginRole::TerraRun, terra_run_secret),
                (LoginRole::Drift, drift_secret),
            ]
            .into_iter()
            .filter_map(|(role, secret)| secret.as_deref().map(|s| (role, s)))
            .collect();
            Some(
                open_metadb_as_migrator(metadb, &logins, aws)
                    .await
                    .map(|m| (m, None)),
            )
        }
        Config::Drift { metadb, .. } => {
            Some(open_metadb_checked(metadb, aws).await.map(|m| (m, None)))
        }
        Config::TerraRun { metadb, job, .. } => {
            Some(open_metadb_reading(metadb, aws, &job.execution_id).await)
        }
        Config::PrPlan { .. } | Config::Contract => None,
    }
}

/// The subcommand's GitHub client and the token its clones use
/// (`live_ci_boot::github`, as the Lambdas build theirs).
async fn github(
    config: &Config,
    common: &Common,
    params: &SsmParamStore,
) -> anyhow::Result<(Option<GitHubClient>, Option<String>)> {
    let job = match config {
        Config::CreateDeployStack { .. } => Job::CreateDeployStack,
        Config::TerraRun { .. } => Job::TerraRun,
        Config::Drift { .. } => Job::Drift,
        Config::PrPlan { .. } | Config::Contract => Job::PrPlan,
    };
    Ok(live_ci_boot::github::connect_for_clones(
        common.github.as_ref(),
        params,
        &common.github_api_url,
        common.repository.as_deref(),
        job,
    )
    .await?)
}

/// Gives this subcommand's repository code the private module sources'
/// token, if the module lists any and the subcommand may
/// (`Config::module_sources`), kept fresh for the task's lifetime. Without
/// one, the clones of private sources fail with git's own error: said here.
async fn module_sources(config: &Config, common: &Common, github: Option<&GitHubClient>) {
    let Some(listed) = &common.module_sources else {
        return;
    };
    let (Some(sources), Some(github)) = (config.module_sources(), github) else {
        output::text(&format!(
            "live-ci: private module sources ({}) get no token in this plan: it is not a trusted head's (module_sources_for_forks is off)\n",
            listed.repositories.join(", ")
        ));
        return;
    };
    let github = github.clone();
    let repositories = sources.repositories.clone();
    let fetched = git_credentials::keep_fresh(sources.git_url.clone(), move || {
        let github = github.clone();
        let repositories = repositories.clone();
        async move { github.module_source_token(&repositories).await }
    })
    .await;
    if let Err(e) = fetched {
        tracing::warn!(error = %e, "no token for the private module sources");
        output::text(&format!(
            "live-ci: warning: no token for the private module sources ({e}): cloning them will fail\n"
        ));
    }
}

/// Fails a terra-run's task token with a start-up failure (its configuration
/// or the metadb) under the error's name, so the execution ends now rather than
/// at its heartbeat timeout. Best effort: the task fails either way.
async fn answer_token(aws: &SdkConfig, token: &str, name: &str, problems: &str) {
    let tokens = SfnTaskTokens::new(aws_sdk_sfn::Client::new(aws));
    if let Err(e) = tokens.send_failure(token, name, problems).await {
        tracing::warn!(error = %e, "answering the task token");
    }
}
