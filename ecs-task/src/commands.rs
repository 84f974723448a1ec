//! Each subcommand wired to its handler in the library, with the clients
//! the start opened (a module of `main.rs`, as `start` is). Without a
//! GitHub token or App, statuses go to a host that posts nothing; drift
//! needs a real client (GitHub is its report: it files issues).

use anyhow::Context;
use live_ci_aws::{LambdaInvoker, S3ArtifactStore, SnsNotifications};
use live_ci_core::port::GitHost;
use live_ci_core::status::{NoGitHost, Statuses};
use live_ci_github::GitHubClient;
use live_ci_stepfunctions::SfnTaskTokens;
use live_ci_task::config::TerraRunConfig;
use live_ci_task::create_deploy_stack::{Wiring, create_deploy_stack, status_config};
use live_ci_task::drift::{DriftPorts, drift_check};
use live_ci_task::pr_plan::pr_plan;
use live_ci_task::terra_run::{TerraRunPorts, terra_run_with};
use live_ci_task::{Common, Config};

use live_ci_task::output;

use crate::start::Clients;

/// Runs the subcommand `config` names.
pub(crate) async fn run(
    config: &Config,
    common: &Common,
    clients: &Clients,
    github: Option<GitHubClient>,
) -> anyhow::Result<()> {
    match (config, &github) {
        (Config::Drift { .. }, _) => drift(config, clients, github).await,
        (_, Some(github)) => run_with(config, common, clients, github).await,
        (_, None) => run_with(config, common, clients, &NoGitHost).await,
    }
}

/// The subcommands that post statuses through `github`.
async fn run_with<G: GitHost>(
    config: &Config,
    common: &Common,
    clients: &Clients,
    github: &G,
) -> anyhow::Result<()> {
    match config {
        Config::CreateDeployStack {
            plan_bucket, job, ..
        } => deploy(job, plan_bucket, clients, github).await,
        Config::TerraRun {
            plan_bucket, job, ..
        } => terra_run(job, plan_bucket, clients, github).await,
        Config::PrPlan { job } => {
            let statuses = Statuses::new(github, status_config(common, &clients.params).await?);
            let logs_url = clients.logs_url.as_deref();
            let report = pr_plan(job, &clients.repo, logs_url, &statuses, &clients.roles).await?;
            if report.failed() > 0 {
                anyhow::bail!(
                    "{} of {} plan(s) failed",
                    report.failed(),
                    report.plans.len()
                );
            }
            Ok(())
        }
        // Handled by `run`: it needs the issues of a real GitHub client.
        Config::Drift { .. } | Config::Contract => Ok(()),
    }
}

/// create-deploy-stack: a merge commit becomes a run, handed to trigger_sf.
async fn deploy<G: GitHost>(
    job: &live_ci_task::CreateDeployStackConfig,
    plan_bucket: &str,
    clients: &Clients,
    github: &G,
) -> anyhow::Result<()> {
    let Clients {
        aws, params, roles, ..
    } = clients;
    let metadb = clients.metadb()?;
    let invoker = LambdaInvoker::new(live_ci_aws::sdk::lambda::Client::new(aws));
    let artifacts = S3ArtifactStore::new(live_ci_aws::sdk::s3::Client::new(aws), plan_bucket);
    let ports = Wiring {
        metadb,
        params,
        github,
        invoker: &invoker,
        roles,
        artifacts: &artifacts,
    };
    let logs_url = clients.logs_url.as_deref();
    let report = create_deploy_stack(job, &clients.repo, logs_url, &ports).await?;
    output::text(&format!(
        "live-ci: done: run {:?}, {} execution(s)\n",
        report.run_id,
        report.execution_ids.len()
    ));
    Ok(())
}

/// terra-run: one plan or apply of one unit, for the state machine.
async fn terra_run<G: GitHost>(
    job: &TerraRunConfig,
    plan_bucket: &str,
    clients: &Clients,
    github: &G,
) -> anyhow::Result<()> {
    let Clients {
        aws,
        roles,
        switches,
        ..
    } = clients;
    let metadb = clients.metadb()?;
    let artifacts = S3ArtifactStore::new(live_ci_aws::sdk::s3::Client::new(aws), plan_bucket);
    let tokens = SfnTaskTokens::new(aws_sdk_sfn::Client::new(aws));
    let ports = TerraRunPorts {
        metadb,
        artifacts: &artifacts,
        tokens: &tokens,
        roles,
        statuses: Statuses::new(github, *switches),
    };
    let job = TerraRunConfig {
        run_pages: clients.run_pages.clone(),
        ..job.clone()
    };
    let logs_url = clients.logs_url.as_deref();
    terra_run_with(
        &job,
        &clients.repo,
        logs_url,
        &ports,
        clients.record.clone(),
    )
    .await?;
    Ok(())
}

/// drift: every unit of the trunk head planned with plan roles; drift
/// recorded, issues filed, the report printed.
async fn drift(
    config: &Config,
    clients: &Clients,
    github: Option<GitHubClient>,
) -> anyhow::Result<()> {
    let Config::Drift {
        job,
        notification_topic,
        ..
    } = config
    else {
        return Ok(());
    };
    let github = github.context("drift needs REPO_FULL_NAME and a github token or app")?;
    let notifications = SnsNotifications::new(
        live_ci_aws::sdk::sns::Client::new(&clients.aws),
        notification_topic.clone(),
    );
    let ports = DriftPorts {
        store: clients.metadb()?,
        roles: &clients.roles,
        issues: &github,
        notifications: &notifications,
    };
    let report = drift_check(job, &clients.repo, &ports).await?;
    output::text(&report.render());
    Ok(())
}
