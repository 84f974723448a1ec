//! `pr-plan`: the plans of the units a pull request affects (graph scan of the
//! head commit against its base branch), at most `MAX_PARALLEL` at once, each
//! reported as a commit status on the head commit, plus one pull-request
//! comment that later pushes update in place: per unit its result and its
//! plan as terraform shows it, fitted to GitHub's size limit. Units the
//! pull request removes are named in the comment: destroyed on merge with
//! `ALLOW_DESTROY`, else not destroyed (then also a `live-ci: destroy` status).

use std::collections::{BTreeMap, BTreeSet};

use live_ci_core::CoreError;
use live_ci_core::account::Accounts;
use live_ci_core::deploy::Action;
use live_ci_core::escape::markdown;
use live_ci_core::merge_lock::{self, PullRequestUnits};
use live_ci_core::path::RepoPath;
use live_ci_core::plan_text::{self, UnitText};
use live_ci_core::policy;
use live_ci_core::port::GitHost;
use live_ci_core::port::PortResultExt;
use live_ci_core::port::RoleAssumer;
use live_ci_core::status::{Check, CommitStatus, StatusState, Statuses, context};
use live_ci_terragrunt::change::Detection;
use live_ci_terragrunt::filter::Excluded;

use crate::checkout::{Checkout, Repo};
use crate::config::PrPlanConfig;
use crate::error::{Result, TaskError};
use crate::output::say;
use crate::plans::{PlanRequest, UnitPlan, plan_with_plan_roles};

/// Marks live-ci's summary comment, so a new push updates it (the merge
/// lock reads the pull request's units back from it).
pub const COMMENT_MARKER: &str = merge_lock::PLAN_COMMENT_MARKER;

/// The status context of one unit's plan.
pub fn unit_context(cfg_path: &RepoPath) -> String {
    context::pr_plan_unit(cfg_path.as_str())
}

/// What pr-plan found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrPlanReport {
    /// The pull request's head, planned.
    pub commit: String,
    /// Every affected unit's plan, in unit order.
    pub plans: Vec<UnitPlan>,
    /// Advisory problems (a status or comment not posted): the plans stand.
    pub warnings: Vec<String>,
    /// Units the pull request removes that its merge destroys (`ALLOW_DESTROY`).
    pub destroyed_on_merge: Vec<RepoPath>,
    /// Units the pull request removes that are not destroyed (`ALLOW_DESTROY` off).
    pub not_destroyed: Vec<RepoPath>,
    /// Affected units the filters leave out, each with the expression.
    pub excluded: Vec<Excluded>,
    /// The affected units closed over their dependencies and dependents,
    /// recorded in the comment for the `units` merge lock scope.
    pub lock_units: Option<PullRequestUnits>,
}

impl PrPlanReport {
    /// How many plans failed (the task fails when any did).
    pub fn failed(&self) -> usize {
        self.plans.iter().filter(|p| p.outcome.is_err()).count()
    }
}

/// Plans the pull request's affected units and reports them. Detection errors
/// (a broken `terragrunt.hcl`, a cycle) fail the pr-plan status and the comment
/// says why.
/// Each plan runs with the temporary credentials of its account's plan role,
/// assumed here through `roles`.
pub async fn pr_plan<G: GitHost, R: RoleAssumer>(
    config: &PrPlanConfig,
    repo: &Repo,
    logs_url: Option<&str>,
    statuses: &Statuses<G>,
    roles: &R,
) -> Result<PrPlanReport> {
    let pr = config.pr_number;
    let commit = config.commit.clone();
    let outcome = plan(config, repo, roles, pr, &commit).await;
    let (posts, body) = statuses_and_comment(&commit, logs_url, &outcome);
    for s in &posts {
        statuses.post(Check::PrPlan, s).await;
    }
    statuses
        .host()
        .upsert_comment(pr, COMMENT_MARKER, &body)
        .await
        .port("github")?;
    outcome
}

/// The statuses pr-plan posts and its comment's body, for its outcome.
fn statuses_and_comment(
    commit: &str,
    logs_url: Option<&str>,
    outcome: &Result<PrPlanReport>,
) -> (Vec<CommitStatus>, String) {
    let status = |state, context: &str, description: &str| {
        let mut s = CommitStatus::new(commit, state, context, description);
        s.target_url = logs_url.map(str::to_string);
        s
    };
    let mut posts = Vec::new();
    let body = match outcome {
        Ok(report) => {
            posts.extend(
                report
                    .plans
                    .iter()
                    .map(|p| unit_status(commit, logs_url, p)),
            );
            let failed = report.failed();
            posts.push(status(
                if failed == 0 {
                    StatusState::Success
                } else {
                    StatusState::Failure
                },
                context::PR_PLAN,
                &format!("{} unit(s) planned, {failed} failed", report.plans.len()),
            ));
            if !report.not_destroyed.is_empty() {
                // Informational, as on the merge commit: the merge is fine,
                // the removed units' infrastructure stays.
                posts.push(status(
                    StatusState::Success,
                    context::DESTROY,
                    &not_destroyed_text(&report.not_destroyed),
                ));
            }
            comment(commit, logs_url, report)
        }
        Err(e) => {
            posts.push(status(
                StatusState::Failure,
                context::PR_PLAN,
                &e.to_string(),
            ));
            error_comment(commit, logs_url, e)
        }
    };
    (posts, body)
}

/// One unit's plan status: its counts, its overridable denials or its error.
fn unit_status(commit: &str, logs_url: Option<&str>, p: &UnitPlan) -> CommitStatus {
    let (state, text) = match &p.outcome {
        // Overridable (POLICY_OVERRIDE): not a failure, since the voters
        // decide at deploy time; said first.
        Ok(o) if !o.policy_denials.is_empty() => (
            StatusState::Success,
            format!("{}: {}", policy::OVERRIDABLE, o.policy_denials.join("; ")),
        ),
        Ok(o) => (
            StatusState::Success,
            format!(
                "{} to add, {} to change, {} to destroy",
                o.counts.add, o.counts.change, o.counts.destroy
            ),
        ),
        Err(e) => (StatusState::Failure, e.clone()),
    };
    let mut s = CommitStatus::new(commit, state, &unit_context(&p.path), &text);
    s.target_url = logs_url.map(str::to_string);
    // A check run (with an App) shows the plan; a status cannot.
    if let Some(plan) = p.outcome.as_ref().ok().and_then(|o| o.text.as_deref()) {
        s.text = Some(plan_text::fit_plan(
            plan,
            logs_url,
            plan_text::CHECK_RUN_LIMIT,
        ));
    }
    s
}

/// The comment of a pr-plan that stopped before planning: why.
fn error_comment(commit: &str, logs_url: Option<&str>, e: &TaskError) -> String {
    plan_text::fit(
        &format!(
            "{COMMENT_MARKER}\n### live-ci plan for {}\n\n",
            markdown::code(short(commit)),
        ),
        &[],
        &format!(
            "{}: {}\n",
            stopped_before_planning(e),
            markdown::code(
                &e.to_string()
                    .chars()
                    .take(MAX_ERROR_CHARS)
                    .collect::<String>()
            )
        ),
        logs_url,
        plan_text::COMMENT_LIMIT,
    )
}

async fn plan<R: RoleAssumer>(
    config: &PrPlanConfig,
    repo: &Repo,
    roles: &R,
    pr: u64,
    commit: &str,
) -> Result<PrPlanReport> {
    let base_ref = &config.base_ref;
    // With the accounts, each plan runs as its account's plan role.
    let accounts = match &config.accounts_json {
        Some(json) => Some(Accounts::from_json("ACCOUNT_PARENT_CFG", json)?),
        None => None,
    };
    let branch = base_ref.trim_start_matches("refs/heads/");
    let checkout = Checkout::new(repo, commit)?;
    let base = format!("origin/{branch}");
    say!("live-ci pr-plan: {commit} against {base}");
    // Before any plan runs: a filter that does not parse fails here.
    let filters = crate::filters::load(
        &checkout.git,
        &checkout.commit,
        &config.common.deploy_filters,
    )?;
    let crate::filters::Selection {
        detection,
        excluded,
    } = crate::filters::select(
        &checkout.git,
        checkout.dir(),
        &base,
        &checkout.commit,
        config.common.allow_destroy,
        &filters,
    )?;
    let Split {
        apply: units,
        destroyed_on_merge,
        not_destroyed,
        warnings,
    } = split(&detection.affected);
    // The trunk's policies (the base branch, not this head) judge each plan.
    let rego = match &config.common.policy_dir {
        Some(dir) => Some(crate::policy::Rego::load(&checkout.git, &base, dir)?),
        None => None,
    };
    let policies = crate::policy::Policies::new(
        rego,
        config.common.policy_command.clone(),
        config.common.policy_override,
    );
    // The deploy key for a trusted head's code only, like the module-source
    // token.
    let key_use = if config.head_trusted {
        crate::git_ssh::KeyUse::Allowed
    } else {
        crate::git_ssh::KeyUse::Withheld(
            "it is not a trusted head's (a maintainer's /live-ci plan runs code live-ci does not trust)",
        )
    };
    let request = PlanRequest {
        common: &config.common,
        checkout: &checkout,
        accounts: accounts.as_ref(),
        scratch: "plans",
        key_use,
        session: format!("pr-{pr}-{}", short(commit)),
        with_text: true,
        policies,
    };
    let plans = plan_with_plan_roles(request, roles, &units).await?;
    let lock_units = Some(lock_units(&detection, &checkout.commit));
    Ok(PrPlanReport {
        lock_units,
        commit: checkout.commit.clone(),
        plans,
        warnings,
        destroyed_on_merge,
        not_destroyed,
        excluded,
    })
}

/// The affected units by what the merge does with them.
struct Split {
    apply: Vec<RepoPath>,
    destroyed_on_merge: Vec<RepoPath>,
    /// Removed units that are not destroyed: reported as such, not as a
    /// warning.
    not_destroyed: Vec<RepoPath>,
    warnings: Vec<String>,
}

fn split(affected: &live_ci_terragrunt::change::Affected) -> Split {
    let (not_destroyed, skipped): (Vec<_>, Vec<_>) = affected
        .skipped
        .iter()
        .partition(|s| s.action == Action::Destroy);
    let of = |action: Action| -> Vec<RepoPath> {
        affected
            .units
            .iter()
            .filter(|u| u.action == action)
            .map(|u| u.path.clone())
            .collect()
    };
    Split {
        apply: of(Action::Apply),
        destroyed_on_merge: of(Action::Destroy),
        not_destroyed: not_destroyed.iter().map(|s| s.path.clone()).collect(),
        warnings: skipped.iter().map(|s| s.reason.clone()).collect(),
    }
}

/// The pull request's units for the merge lock: every unit it applies or
/// destroys, closed over the dependency edges of the head's graph, and of the
/// base's when the pull request removes a unit (a removed unit's edges are
/// only there; detection discovers the base graph only then). An edge the
/// pull request removes from a unit that stays needs no base graph: a run
/// that changes the old dependency lists this unit among its own affected
/// units (dependents are affected), so the overlap is seen from that side.
fn lock_units(detection: &Detection, commit: &str) -> PullRequestUnits {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for graph in std::iter::once(&detection.head).chain(detection.base.as_ref()) {
        for i in 0..graph.len() {
            let deps = edges.entry(graph.path(i).as_str().to_string()).or_default();
            deps.extend(
                graph
                    .dependencies(i)
                    .iter()
                    .map(|&d| graph.path(d).as_str().to_string()),
            );
        }
    }
    let seeds = detection.affected.units.iter().map(|u| u.path.as_str());
    PullRequestUnits {
        head_sha: commit.to_string(),
        units: merge_lock::closure(seeds, &edges),
    }
}

/// The `live-ci: destroy` status's text, the same on the pull request and on
/// its merge commit.
pub(crate) fn not_destroyed_text(units: &[RepoPath]) -> String {
    let units: Vec<&str> = units.iter().map(RepoPath::as_str).collect();
    format!("not destroyed (allow_destroy is off): {}", units.join(", "))
}

fn unit_list(units: &[RepoPath]) -> String {
    units
        .iter()
        .map(|u| markdown::code(u.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn short(commit: &str) -> &str {
    commit.get(..7).unwrap_or(commit)
}

/// The most of a unit's error shown as its result (the rest is in the log).
const MAX_ERROR_CHARS: usize = 1_000;

/// What the comment says when pr-plan stopped before any plan: the policies
/// that did not load (with their file and line, in the error) are not a
/// detection problem.
fn stopped_before_planning(e: &TaskError) -> &'static str {
    match e {
        TaskError::Policy { .. } | TaskError::Core(CoreError::PolicyDirMissing(_)) => {
            "The policies failed to load"
        }
        _ => "The affected units could not be found",
    }
}

/// A unit's one-line result: its plan's summary, or why it was not planned.
pub(crate) fn unit_result(plan: &UnitPlan) -> String {
    match &plan.outcome {
        Ok(o) if !o.policy_denials.is_empty() => format!(
            "{}; {}: {}",
            o.summary.describe(),
            policy::OVERRIDABLE,
            o.policy_denials
                .join("; ")
                .chars()
                .take(MAX_ERROR_CHARS)
                .collect::<String>()
        ),
        Ok(o) => o.summary.describe(),
        Err(e) => format!(
            "failed: {}",
            e.chars().take(MAX_ERROR_CHARS).collect::<String>()
        ),
    }
}

/// The comment: per unit a one-line result and its plan as terraform shows
/// it, in a collapsible `diff` block ([`plan_text::fit`], the one owner of
/// that rendering and of GitHub's size limit: the longest plans are cut
/// first, each saying where the whole plan is). Everything from the
/// repository (unit paths, error text, warnings, plan text) is inert
/// ([`markdown`], [`plan_text`]): the bot's comment shows it, and can never
/// be made to say or ask anything else.
pub fn comment(commit: &str, logs_url: Option<&str>, report: &PrPlanReport) -> String {
    let mut head = format!(
        "{COMMENT_MARKER}\n### live-ci plan for {}\n\n",
        markdown::code(short(commit))
    );
    // Invisible; kept whatever the size limit cuts (it is in the head).
    if let Some(units) = &report.lock_units {
        head.push_str(&units.to_comment_line());
        head.push('\n');
    }
    if report.plans.is_empty() && report.destroyed_on_merge.is_empty() && report.excluded.is_empty()
    {
        head.push_str("No Terragrunt unit is affected.\n");
    } else if report.plans.is_empty() {
        head.push_str("No Terragrunt unit is applied.\n");
    }
    let results: Vec<String> = report.plans.iter().map(unit_result).collect();
    let units: Vec<UnitText> = report
        .plans
        .iter()
        .zip(&results)
        .map(|(p, result)| UnitText {
            unit: p.path.display(),
            result,
            plan: p.outcome.as_ref().ok().and_then(|o| o.text.as_deref()),
        })
        .collect();
    let mut tail = String::new();
    if !report.destroyed_on_merge.is_empty() {
        tail.push_str(&format!(
            "\nRemoved, **destroyed** when this merges (from the base's checkout, dependents first, each approved like any unit): {}\n",
            unit_list(&report.destroyed_on_merge)
        ));
    }
    if !report.not_destroyed.is_empty() {
        tail.push_str(&format!(
            "\nRemoved, **not destroyed** (the module's `allow_destroy` is off; their infrastructure stays until someone destroys it): {}\n",
            unit_list(&report.not_destroyed)
        ));
    }
    tail.push_str(&excluded_text(&report.excluded));
    for w in &report.warnings {
        tail.push_str(&format!("\n> {}\n", markdown::code(w)));
    }
    if let Some(url) = logs_url {
        tail.push_str(&format!("\n[Plan logs]({url})\n"));
    }
    plan_text::fit(&head, &units, &tail, logs_url, plan_text::COMMENT_LIMIT)
}

/// The affected units the filters leave out, each with the file (or module
/// variable) and the expression that left it out; all of it escaped.
fn excluded_text(excluded: &[Excluded]) -> String {
    if excluded.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nLeft out by filters (not planned, not deployed):\n");
    for e in excluded {
        let by = match e.expressions.as_slice() {
            [one] => markdown::code(one),
            many => format!(
                "none of {}",
                many.iter()
                    .map(|x| markdown::code(x))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        out.push_str(&format!(
            "- {}{}: {} {by}\n",
            markdown::code(e.path.display()),
            match e.action {
                Action::Apply => "",
                Action::Destroy => " (destroy)",
            },
            markdown::code(&e.source),
        ));
    }
    out
}
