//! Each subcommand's own settings, beside the [`Common`] ones.

use live_ci_boot::settings::Env;
use live_ci_core::approval::RunPages;
use live_ci_core::merge_lock::Scope;
use live_ci_core::settings::ConfigError;
use live_ci_core::task::env as task;
use live_ci_core::terraform::Phase;
use live_ci_stepfunctions::payload::task_env;

use super::common::Common;
use super::names::{RUN_LINK_KEY_SSM_KEY, RUN_PAGE_URL};
use super::read::FromLookup;

/// `LIVE_CI_PR_NUMBER`, `#` allowed.
fn pr_number<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<Option<u64>> {
    let Some(v) = check.optional(task::PR_NUMBER) else {
        return Some(None);
    };
    let read = v
        .trim()
        .trim_start_matches('#')
        .parse()
        .map_err(|_| ConfigError::Invalid {
            name: task::PR_NUMBER,
            value: v.clone(),
            reason: "not a pull request number".into(),
        });
    check.keep(read).map(Some)
}

/// `create-deploy-stack`: a merge commit (from the receiver, or from
/// trigger_sf's sweep) becomes a run.
#[derive(Debug, Clone)]
pub struct CreateDeployStackConfig {
    /// What every subcommand shares.
    pub common: Common,
    /// The merge commit to deploy (`LIVE_CI_COMMIT`).
    pub commit: String,
    /// `None` when trigger_sf's sweep launched a trunk head no webhook announced.
    pub pr_number: Option<u64>,
    /// The pull request's base branch (`LIVE_CI_BASE_REF`).
    pub base_ref: Option<String>,
    /// The pull request's head branch (`LIVE_CI_HEAD_REF`).
    pub head_ref: Option<String>,
    /// The base commit the pull request was merged onto: the range's start when
    /// it is an ancestor and no started run gives one (`LIVE_CI_BASE_SHA`).
    pub base_sha: Option<String>,
    /// The pull request's head and the webhook delivery (for tracing a run back).
    pub head_sha: Option<String>,
    /// The webhook delivery that started this task (`LIVE_CI_DELIVERY_ID`).
    pub delivery_id: Option<String>,
    /// The Lambda the new run is handed to (`TRIGGER_SF_FUNCTION_NAME`).
    pub trigger_sf_function: String,
    /// The SSM parameter mirroring the merge lock (`MERGE_LOCK_SSM_KEY`).
    pub merge_lock_param: String,
    /// Which pull requests the held lock blocks (`MERGE_LOCK_SCOPE`).
    pub merge_lock_scope: Scope,
    /// The accounts JSON, parsed by create-deploy-stack so that a bad one is
    /// reported on the merge commit.
    pub accounts_json: String,
}

impl FromLookup for CreateDeployStackConfig {
    fn read<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<Self> {
        let common = Common::read(check);
        let pr_number = pr_number(check);
        let commit = check.required(task::COMMIT);
        let trigger_sf_function = check.required("TRIGGER_SF_FUNCTION_NAME");
        let merge_lock_param = check.required("MERGE_LOCK_SSM_KEY");
        let scope = check.settings().merge_lock_scope();
        let merge_lock_scope = check.keep(scope);
        let accounts_json = check.required("ACCOUNT_PARENT_CFG");
        Some(CreateDeployStackConfig {
            common: common?,
            commit: commit?,
            pr_number: pr_number?,
            base_ref: check.optional(task::BASE_REF),
            head_ref: check.optional(task::HEAD_REF),
            base_sha: check.optional(task::BASE_SHA),
            head_sha: check.optional(task::HEAD_SHA),
            delivery_id: check.optional(task::DELIVERY_ID),
            trigger_sf_function: trigger_sf_function?,
            merge_lock_param: merge_lock_param?,
            merge_lock_scope: merge_lock_scope?,
            accounts_json: accounts_json?,
        })
    }
}

/// The phase terra-run runs; an apply names the saved plan it applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PhaseInput {
    /// Plans the unit and saves the plan.
    Plan,
    /// Applies the saved plan at `plan_artifact` (`LIVE_CI_PLAN_ARTIFACT`).
    Apply {
        /// The saved plan's address.
        plan_artifact: String,
    },
}

impl PhaseInput {
    /// The core's phase, without the plan's address.
    pub fn phase(&self) -> Phase {
        match self {
            PhaseInput::Plan => Phase::Plan,
            PhaseInput::Apply { .. } => Phase::Apply,
        }
    }
}

/// `terra-run`: one plan or apply of one unit, for the state machine.
#[derive(Debug, Clone)]
pub struct TerraRunConfig {
    /// What every subcommand shares.
    pub common: Common,
    /// The state machine's token this task answers (`LIVE_CI_TASK_TOKEN`).
    pub task_token: String,
    /// Plan or apply (`LIVE_CI_PHASE`).
    pub phase: PhaseInput,
    /// The metadb execution (one unit of one run) this task runs (`LIVE_CI_EXECUTION_ID`).
    pub execution_id: String,
    /// The state machine's copy of the record's command (the record wins).
    pub command: Option<String>,
    /// The state machine's copy of the unit's role (must repeat the record's).
    pub role_arn: Option<String>,
    /// The state machine's execution and the unit (the record is the truth).
    pub sfn_execution_arn: Option<String>,
    /// The state machine's copy of the unit's path (the record is the truth).
    pub cfg_path: Option<String>,
    /// The run-link key's parameter and the run page's address
    /// (`RUN_LINK_KEY_SSM_KEY`, `RUN_PAGE_URL`: both or neither); `main.rs`
    /// reads the key into [`TerraRunConfig::run_pages`].
    pub run_pages_param: Option<(String, String)>,
    /// Signs the statuses' links to the read-only run page; without it they
    /// link to the task's logs as before.
    pub run_pages: Option<RunPages>,
}

impl FromLookup for TerraRunConfig {
    fn read<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<Self> {
        let common = Common::read(check);
        let task_token = check.required(task_env::TASK_TOKEN);
        let phase = match check.required(task_env::PHASE) {
            None => None,
            Some(v) => {
                let read = Phase::parse(&v).map_err(|reason| ConfigError::Invalid {
                    name: task_env::PHASE,
                    value: v.clone(),
                    reason,
                });
                match check.keep(read)? {
                    Phase::Plan => Some(PhaseInput::Plan),
                    Phase::Apply => check
                        .required(task_env::PLAN_ARTIFACT)
                        .map(|plan_artifact| PhaseInput::Apply { plan_artifact }),
                }
            }
        };
        let execution_id = check.required(task_env::EXECUTION_ID);
        let run_pages_param = match (
            check.optional(RUN_LINK_KEY_SSM_KEY),
            check.optional(RUN_PAGE_URL),
        ) {
            (Some(key), Some(url)) => Some(Some((key, url))),
            (None, None) => Some(None),
            (Some(_), None) => check.keep(Err(ConfigError::Missing(RUN_PAGE_URL))),
            (None, Some(_)) => check.keep(Err(ConfigError::Missing(RUN_LINK_KEY_SSM_KEY))),
        };
        Some(TerraRunConfig {
            common: common?,
            task_token: task_token?,
            phase: phase?,
            execution_id: execution_id?,
            command: check.optional(task_env::COMMAND),
            role_arn: check.optional(task_env::ROLE_ARN),
            sfn_execution_arn: check.optional(task_env::SFN_EXECUTION_ARN),
            cfg_path: check.optional(task_env::CFG_PATH),
            run_pages_param: run_pages_param?,
            run_pages: None,
        })
    }
}

/// `pr-plan`: the plans of a pull request's affected units.
#[derive(Debug, Clone)]
pub struct PrPlanConfig {
    /// What every subcommand shares.
    pub common: Common,
    /// The pull request planned (`LIVE_CI_PR_NUMBER`).
    pub pr_number: u64,
    /// The pull request's head commit, planned (`LIVE_CI_COMMIT`).
    pub commit: String,
    /// The branch the pull request merges into, compared against (`LIVE_CI_BASE_REF`).
    pub base_ref: String,
    /// Without it, every unit plans with the task's own credentials.
    pub accounts_json: Option<String>,
    /// The receiver started this plan for a trusted head by itself
    /// (`LIVE_CI_HEAD_TRUSTED`), not for a maintainer's `/live-ci plan`.
    pub head_trusted: bool,
}

impl FromLookup for PrPlanConfig {
    fn read<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<Self> {
        let common = Common::read(check);
        let pr_number = match pr_number(check) {
            Some(None) => check.keep(Err(ConfigError::Missing(task::PR_NUMBER))),
            other => other.flatten(),
        };
        let commit = check.required(task::COMMIT);
        let base_ref = check.required(task::BASE_REF);
        Some(PrPlanConfig {
            common: common?,
            pr_number: pr_number?,
            commit: commit?,
            base_ref: base_ref?,
            accounts_json: check.optional("ACCOUNT_PARENT_CFG"),
            head_trusted: check
                .optional(task::HEAD_TRUSTED)
                .is_some_and(|v| v.trim() == "true"),
        })
    }
}

/// `drift`: a scheduled check of every unit on the trunk head (issue 32
/// item 4). Plans with the accounts' plan roles only; never a lock, never an
/// apply.
#[derive(Debug, Clone)]
pub struct DriftConfig {
    /// What every subcommand shares.
    pub common: Common,
    /// Without it, every unit plans with the task's own credentials.
    pub accounts_json: Option<String>,
}

impl FromLookup for DriftConfig {
    fn read<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<Self> {
        let common = Common::read(check);
        Some(DriftConfig {
            common: common?,
            accounts_json: check.optional("ACCOUNT_PARENT_CFG"),
        })
    }
}
