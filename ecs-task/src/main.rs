//! The `live-ci-task` entry point: reads the configuration, builds the AWS,
//! metadb and GitHub clients, and runs one subcommand. Only wiring lives here.

use anyhow::Context;
use clap::Parser;
use live_ci_aws::{
    LambdaInvoker, S3ArtifactStore, SnsNotifications, SsmParamStore, StsRoleAssumer,
};
use live_ci_core::approval::RunPages;
use live_ci_core::deploy::ExecutionRecord;
use live_ci_core::port::GitHost;
use live_ci_core::port::TaskTokens;
use live_ci_core::settings::ConfigError;
use live_ci_core::status::CommitStatusConfig;
use live_ci_core::status::{NoGitHost, Statuses};
use live_ci_github::{Credentials, GitHubClient, Job};
use live_ci_metadb::{AnyMetadb, LoginRole};
use live_ci_stepfunctions::SfnTaskTokens;
use live_ci_task::checkout::Repo;
use live_ci_task::cli::Cli;
use live_ci_task::config::TerraRunConfig;
use live_ci_task::create_deploy_stack::{Wiring, create_deploy_stack, status_config};
use live_ci_task::drift::{DriftPorts, drift_check};
use live_ci_task::pr_plan::pr_plan;
use live_ci_task::startup::{open_metadb_as_migrator, open_metadb_checked, open_metadb_reading};
use live_ci_task::terra_run::{TerraRunPorts, run_pages, terra_run_with};
use live_ci_task::{
    AWS_ACTIONS, Common, Config, ENV_VARS, TaskError, git_credentials, logs, sandbox, timeline,
};

fn main() -> anyhow::Result<()> {
    // Before anything else (before any secret is read or any child started):
    // no process of this uid may read this one's memory or environment
    // (`/proc/<pid>/environ`) or ptrace it.
    sandbox::forbid_dumps().context("making the task non-dumpable (PR_SET_DUMPABLE 0)")?;
    timeline::start();
    let cli = Cli::parse();
    // Every variable the subcommand needs is checked before anything is done.
    let config = Config::from_env(cli.command);
    // While this process has one thread: what its children inherit.
    let child_user = config
        .as_ref()
        .ok()
        .and_then(Config::common)
        .and_then(|c| c.child_user);
    sandbox::harden_process(child_user).context("hardening the task before any child")?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?
        .block_on(task_main(config))
}

async fn task_main(config: Result<Config, live_ci_task::ConfigErrors>) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = match config {
        Ok(config) => config,
        Err(errors) => {
            if let Some(token) = &errors.task_token {
                // The name every configuration error of the task library carries.
                let name = TaskError::Config(ConfigError::Missing("")).name();
                let aws = aws_config::load_from_env().await;
                answer_token(&aws, token, name, &errors.to_string()).await;
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
            let aws = aws_config::load_from_env().await;
            answer_token(&aws, &job.task_token, e.name(), &e.to_string()).await;
        }
        return Err(e).context("the child user");
    }
    let Some(common) = config.common() else {
        println!(
            "{}",
            serde_json::json!({"env_vars": ENV_VARS, "aws_actions": AWS_ACTIONS})
        );
        return Ok(());
    };
    let aws = aws_config::load_from_env().await;
    timeline::mark("aws_config");
    let params = SsmParamStore::new(live_ci_aws::sdk::ssm::Client::new(&aws));
    // The start's independent reads go at once (the token, the log link, the
    // metadb and a terra-run's status switches): each is a round trip or a
    // connection, and a task starts twice per unit. terra-run also reads its
    // execution's record there, beside the metadb's schema check.
    let open = async {
        match &config {
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
                    open_metadb_as_migrator(metadb, &logins, &aws)
                        .await
                        .map(|m| (m, None)),
                )
            }
            Config::Drift { metadb, .. } => {
                Some(open_metadb_checked(metadb, &aws).await.map(|m| (m, None)))
            }
            Config::TerraRun { metadb, job, .. } => {
                Some(open_metadb_reading(metadb, &aws, &job.execution_id).await)
            }
            Config::PrPlan { .. } | Config::Contract => None,
        }
    };
    let switches = async {
        match &config {
            Config::TerraRun { .. } => status_config(common, &params).await.unwrap_or_else(|e| {
                // Statuses are advisory; the task token carries the result.
                tracing::warn!(error = %e, "reading the commit status config");
                CommitStatusConfig::default()
            }),
            _ => CommitStatusConfig::default(),
        }
    };
    let run_pages = async {
        match &config {
            Config::TerraRun { job, .. } => run_pages(job, &params).await,
            _ => None,
        }
    };
    let connect = github_client(&config, common, &params);
    let (github, logs_url, metadb, (switches, run_pages)) =
        tokio::join!(connect, logs::logs_url(common), open, async {
            tokio::join!(switches, run_pages)
        });
    let (github, token) = github?;
    module_sources(&config, common, github.as_ref()).await;
    let (metadb, record) = match metadb.transpose() {
        Ok(opened) => opened.map_or((None, None), |(m, record)| (Some(m), record)),
        Err(e) => {
            // A terra-run that cannot reach the metadb says so now, by its
            // kind (a retryable one is retried by the state machine), rather
            // than leaving the execution to its heartbeat timeout.
            if let Config::TerraRun { job, .. } = &config {
                answer_token(&aws, &job.task_token, e.name(), &e.to_string()).await;
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
        roles: StsRoleAssumer::new(live_ci_aws::sdk::sts::Client::new(&aws)),
        aws,
        params,
        repo,
        logs_url,
        metadb,
        record,
        switches,
        run_pages,
    };
    // drift files issues: GitHub is its report, not an advisory extra.
    if let Config::Drift {
        job,
        notification_topic,
        ..
    } = &config
    {
        let github = github.context("drift needs REPO_FULL_NAME and a github token or app")?;
        let notifications = SnsNotifications::new(
            live_ci_aws::sdk::sns::Client::new(&clients.aws),
            notification_topic.clone(),
        );
        let ports = DriftPorts {
            store: opened(&clients.metadb)?,
            roles: &clients.roles,
            issues: &github,
            notifications: &notifications,
        };
        let report = drift_check(job, &clients.repo, &ports).await?;
        print!("{}", report.render());
        return Ok(());
    }
    // Without a GitHub token statuses go to a host that posts nothing.
    match &github {
        Some(github) => run(&config, common, &clients, github).await,
        None => run(&config, common, &clients, &NoGitHost).await,
    }
}

/// The subcommand's GitHub client (`live_ci_github::connect`, as the Lambdas
/// build theirs) and the token its clones use: the static token, or the job's
/// installation token. Without a repository a static token only clones.
async fn github_client(
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
    let Some(auth) = &common.github else {
        return Ok((None, None));
    };
    let Some(repository) = &common.repository else {
        return match auth.credentials(params).await? {
            Credentials::Token(token) => Ok((None, Some(token))),
            Credentials::App(_) => anyhow::bail!("a github app needs REPO_FULL_NAME"),
        };
    };
    let github = live_ci_github::connect(auth, params, &common.github_api_url, repository, job)
        .await
        .context("connecting to github")?;
    // Not fatal: a terra-run may unpack the run's packed checkout and never
    // clone, and statuses are advisory; a clone without it fails by itself.
    let token = match github.git_token().await {
        Ok(token) => Some(token),
        Err(e) => {
            tracing::warn!(error = %e, "no github token for cloning");
            None
        }
    };
    Ok((Some(github), token))
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
        println!(
            "live-ci: private module sources ({}) get no token in this plan: it is not a trusted head's (module_sources_for_forks is off)",
            listed.repositories.join(", ")
        );
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
        println!(
            "live-ci: warning: no token for the private module sources ({e}): cloning them will fail"
        );
    }
}

/// Fails a terra-run's task token with a start-up failure (its configuration
/// or the metadb) under the error's name, so the execution ends now rather than
/// at its heartbeat timeout. Best effort: the task fails either way.
async fn answer_token(aws: &aws_config::SdkConfig, token: &str, name: &str, problems: &str) {
    let tokens = SfnTaskTokens::new(aws_sdk_sfn::Client::new(aws));
    if let Err(e) = tokens.send_failure(token, name, problems).await {
        tracing::warn!(error = %e, "answering the task token");
    }
}

/// What every subcommand is handed besides the git host.
struct Clients {
    aws: aws_config::SdkConfig,
    params: SsmParamStore,
    roles: StsRoleAssumer,
    repo: Repo,
    logs_url: Option<String>,
    /// Opened at start for the subcommands that use one.
    metadb: Option<AnyMetadb>,
    /// A terra-run's execution record, when read at start.
    record: Option<ExecutionRecord>,
    /// A terra-run's commit-status switches, read at start.
    switches: CommitStatusConfig,
    /// A terra-run's run-link key and page, read at start.
    run_pages: Option<RunPages>,
}

async fn run<G: GitHost>(
    config: &Config,
    common: &Common,
    clients: &Clients,
    github: &G,
) -> anyhow::Result<()> {
    let Clients {
        aws,
        params,
        roles,
        repo,
        logs_url,
        metadb,
        record,
        switches,
        run_pages,
    } = clients;
    let logs_url = logs_url.as_deref();
    match config {
        Config::CreateDeployStack {
            plan_bucket, job, ..
        } => {
            let metadb = opened(metadb)?;
            let invoker = LambdaInvoker::new(live_ci_aws::sdk::lambda::Client::new(aws));
            let artifacts =
                S3ArtifactStore::new(live_ci_aws::sdk::s3::Client::new(aws), plan_bucket.clone());
            let ports = Wiring {
                metadb,
                params,
                github,
                invoker: &invoker,
                roles,
                artifacts: &artifacts,
            };
            let report = create_deploy_stack(job, repo, logs_url, &ports).await?;
            println!(
                "live-ci: done: run {:?}, {} execution(s)",
                report.run_id,
                report.execution_ids.len()
            );
        }
        Config::TerraRun {
            plan_bucket, job, ..
        } => {
            let metadb = opened(metadb)?;
            let artifacts =
                S3ArtifactStore::new(live_ci_aws::sdk::s3::Client::new(aws), plan_bucket.clone());
            let tokens = SfnTaskTokens::new(aws_sdk_sfn::Client::new(aws));
            let ports = TerraRunPorts {
                metadb,
                artifacts: &artifacts,
                tokens: &tokens,
                roles,
                statuses: Statuses::new(github, *switches),
            };
            let job = TerraRunConfig {
                run_pages: run_pages.clone(),
                ..job.clone()
            };
            terra_run_with(&job, repo, logs_url, &ports, record.clone()).await?;
        }
        Config::PrPlan { job } => {
            let statuses = Statuses::new(github, status_config(common, params).await?);
            let report = pr_plan(job, repo, logs_url, &statuses, roles).await?;
            if report.failed() > 0 {
                anyhow::bail!(
                    "{} of {} plan(s) failed",
                    report.failed(),
                    report.plans.len()
                );
            }
        }
        // Handled before: it needs the issues of a real GitHub client.
        Config::Drift { .. } | Config::Contract => {}
    }
    Ok(())
}

/// The metadb `main` opened for a subcommand that has one.
fn opened(metadb: &Option<AnyMetadb>) -> anyhow::Result<&AnyMetadb> {
    metadb
        .as_ref()
        .context("no metadb was opened for this subcommand")
}
