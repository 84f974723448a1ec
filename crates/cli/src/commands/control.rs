//! `live-ci abort`, `retry` and `unlock`: the operator's controls over runs and
//! the merge lock, through either metadb connection, Step Functions
//! (StopExecution) and the SSM parameter the receiver reads. Each prints a
//! JSON report and is recorded in the metadb's operator log.

use live_ci_aws::SsmParamStore;
use live_ci_core::operate::{self, OperateError};
use live_ci_stepfunctions::SfnEngine;
use serde::Serialize;

use crate::Output;
use crate::args::{AbortArgs, LockArgs, RetryArgs, UnlockArgs};
use crate::error::CliError;

fn actor(lock: &LockArgs) -> String {
    lock.actor
        .clone()
        .or_else(|| std::env::var("USER").ok())
        .filter(|a| !a.trim().is_empty())
        .unwrap_or_else(|| "unknown".into())
}

fn report<T: Serialize>(value: &T) -> Result<Output, CliError> {
    Ok(Output {
        text: serde_json::to_string_pretty(value)?,
        ..Output::default()
    })
}

fn params(aws: &aws_config::SdkConfig) -> SsmParamStore {
    SsmParamStore::new(live_ci_aws::sdk::ssm::Client::new(aws))
}

/// Runs `live-ci abort` and prints the JSON report.
pub fn abort(args: &AbortArgs) -> Result<Output, CliError> {
    super::db::runtime()?.block_on(async {
        let db = super::db::connect(&args.db).await?;
        let aws = super::db::aws().await;
        // StopExecution takes the execution's ARN, stored in the metadb: no
        // state machine ARN is needed.
        let engine = SfnEngine::new(aws_sdk_sfn::Client::new(&aws), String::new());
        let done = operate::abort(
            &db,
            &engine,
            &params(&aws),
            &args.lock.merge_lock_param,
            args.run,
            &actor(&args.lock),
        )
        .await?;
        eprintln!(
            "live-ci: run {} aborted by {}; the merge lock is {}",
            args.run,
            actor(&args.lock),
            done.merge_lock
        );
        report(&done)
    })
}

/// Runs `live-ci retry` and prints the JSON report.
pub fn retry(args: &RetryArgs) -> Result<Output, CliError> {
    super::db::runtime()?.block_on(async {
        let db = super::db::connect(&args.db).await?;
        let aws = super::db::aws().await;
        let done = operate::retry(
            &db,
            &params(&aws),
            &args.lock.merge_lock_param,
            args.run,
            &actor(&args.lock),
        )
        .await?;
        eprintln!(
            "live-ci: run {} re-queues {} unit(s) of run {} ({})",
            done.created.run_id,
            done.created.execution_ids.len(),
            args.run,
            if done.created.started {
                "started: trigger_sf's sweep starts its units"
            } else {
                "queued"
            }
        );
        report(&done)
    })
}

/// Runs `live-ci unlock` and prints the JSON report; a forced unlock while a
/// run is running also warns on stderr.
pub fn unlock(args: &UnlockArgs) -> Result<Output, CliError> {
    super::db::runtime()?.block_on(async {
        let db = super::db::connect(&args.db).await?;
        let aws = super::db::aws().await;
        let done = operate::unlock(
            &db,
            &params(&aws),
            &args.lock.merge_lock_param,
            args.force,
            &actor(&args.lock),
        )
        .await?;
        if let Some(run) = done.running_run {
            eprintln!(
                "live-ci: warning: merge lock forced free by {} while run {run} is running",
                actor(&args.lock)
            );
        }
        report(&done)
    })
}

impl From<OperateError> for CliError {
    fn from(e: OperateError) -> Self {
        CliError::Operate(e)
    }
}
