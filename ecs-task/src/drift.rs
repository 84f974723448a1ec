//! `drift` (issue 32 item 4): plans every unit of the trunk head with plan
//! roles only, in the runner pool's bounded order ([`plan_with_plan_roles`]), records
//! each unit's result in the metadb and reports the drifted ones: one GitHub
//! issue per drifted unit (found again by its hidden marker, edited while the
//! drift lasts, closed by the first check that finds the unit clean) and one
//! notification per check with drift.
//!
//! A drift check never takes the merge lock, never applies and writes nothing
//! a deploy reads: its metadb role (migration 0020) may only write its own
//! tables. "A merge during a check wins": the units of the runs running or
//! queued when the check starts or ends (`RunStore::busy_units`), and of every
//! run made after the check started even if it also finished before the
//! check ended ([`merged_during`]), are recorded `superseded`, not drifted,
//! since their plan compares the cloud with a commit a deploy is replacing.

use std::collections::BTreeSet;

use live_ci_core::account::Accounts;
use live_ci_core::deploy::Action;
use live_ci_core::drift::{self, DriftState, IssueAction, UnitDrift};
use live_ci_core::notification::{Counts, DriftedUnit, Event};
use live_ci_core::path::RepoPath;
use live_ci_core::port::{
    DriftStore, IssueHost, Notifications, PortResultExt, RoleAssumer, RunStore, announce,
};
use live_ci_terragrunt::change::{Affected, AffectedUnit, Reason, graph_at};
use live_ci_terragrunt::filter::Excluded;

use crate::checkout::{Checkout, Repo};
use crate::config::DriftConfig;
use crate::error::Result;
use crate::output::say;
use crate::plans::{PlanRequest, plan_with_plan_roles};

/// What one drift check found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriftReport {
    /// The trunk head checked.
    pub commit: String,
    /// The check's row in the metadb.
    pub check_id: i64,
    /// Every planned unit's result, in unit order.
    pub results: Vec<UnitDrift>,
    /// Units the filters leave out, each with the expression.
    pub excluded: Vec<Excluded>,
    /// What was done with each unit's issue (only units with an action),
    /// and the unit's open issue after it.
    pub issues: Vec<(RepoPath, IssueAction, Option<u64>)>,
    /// Advisory failures (an issue or the notification that could not be
    /// written): the check itself is recorded.
    pub warnings: Vec<String>,
}

impl DriftReport {
    /// The units whose live resources differ from the trunk's code.
    pub fn drifted(&self) -> impl Iterator<Item = &UnitDrift> {
        self.results
            .iter()
            .filter(|r| r.state == DriftState::Drifted)
    }

    /// The report the task prints to its log: one line per unit (state,
    /// counts, what was done with its issue), then the filters' exclusions
    /// and the warnings.
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let mut out = format!(
            "live-ci drift: check {} of trunk commit {}: {} unit(s) planned, {} drifted\n",
            self.check_id,
            self.commit,
            self.results.len(),
            self.drifted().count()
        );
        let width = self
            .results
            .iter()
            .map(|r| r.unit.as_str().len())
            .max()
            .unwrap_or(0);
        for r in &self.results {
            let issue = self
                .issues
                .iter()
                .find(|(u, _, _)| *u == r.unit)
                .map(|(_, action, n)| match (action, n) {
                    (IssueAction::Open, Some(n)) => format!("  issue #{n} opened"),
                    (IssueAction::Update(n), _) => format!("  issue #{n} updated"),
                    (IssueAction::Close(n), _) => format!("  issue #{n} closed"),
                    _ => String::new(),
                })
                .unwrap_or_default();
            let _ = write!(
                out,
                "  {:width$}  {:10}  +{} ~{} -{}{issue}",
                r.unit.as_str(),
                r.state.as_str(),
                r.counts.add,
                r.counts.change,
                r.counts.destroy,
            );
            if let Some(m) = &r.message {
                let _ = write!(out, "  ({})", m.lines().next().unwrap_or_default());
            }
            out.push('\n');
        }
        for e in &self.excluded {
            let _ = writeln!(
                out,
                "  excluded: {} by {} ({})",
                e.path,
                e.source,
                e.expressions.join(", ")
            );
        }
        for w in &self.warnings {
            let _ = writeln!(out, "  warning: {w}");
        }
        out
    }
}

/// The ports a drift check uses.
#[allow(missing_debug_implementations)]
pub struct DriftPorts<'a, S, R, I, N> {
    /// The metadb: checks, results and the runs the check must not race.
    pub store: &'a S,
    /// Assumes the accounts' plan roles.
    pub roles: &'a R,
    /// Files, updates and closes one issue per drifted unit.
    pub issues: &'a I,
    /// Announces drift (SNS).
    pub notifications: &'a N,
}

/// Checks the trunk head for drift, records the results and reports them.
pub async fn drift_check<S, R, I, N>(
    config: &DriftConfig,
    repo: &Repo,
    ports: &DriftPorts<'_, S, R, I, N>,
) -> Result<DriftReport>
where
    S: DriftStore + RunStore,
    R: RoleAssumer,
    I: IssueHost,
    N: Notifications,
{
    let trunk = format!("origin/{}", config.common.trunk_branch);
    // Units a running or queued run deploys now, and the mark past which
    // every new run counts; read again after the plans.
    let start = BusyMark::take(ports.store).await?;
    let checkout = Checkout::new(repo, &trunk)?;
    let commit = checkout.commit.clone();
    say!("live-ci drift: planning every unit of {trunk} at {commit}");
    let (units, excluded) = units_to_check(config, &checkout)?;
    let accounts = match &config.accounts_json {
        Some(json) => Some(Accounts::from_json("ACCOUNT_PARENT_CFG", json)?),
        None => None,
    };
    let request = PlanRequest {
        common: &config.common,
        checkout: &checkout,
        accounts: accounts.as_ref(),
        scratch: "plans",
        // The trunk's code is merged code: its plans may use the deploy key,
        // as create-deploy-stack's plan scan does.
        key_use: crate::git_ssh::KeyUse::Allowed,
        session: format!("drift-{}", short(&commit)),
        with_text: false,
        policies: None,
    };
    // Plan roles only: the drift task's role may assume nothing else.
    let plans = plan_with_plan_roles(request, ports.roles, &units).await?;
    let busy = merged_during(ports.store, start).await?;
    let results: Vec<UnitDrift> = plans
        .into_iter()
        .map(|p| {
            let verdict = p.outcome.map(|o| (o.counts, o.has_changes));
            let is_busy = busy.contains(p.path.as_str());
            drift::classify(p.path, verdict, is_busy)
        })
        .collect();
    let check_id = ports
        .store
        .record_drift_check(&commit, &results)
        .await
        .port("metadb")?;
    let mut report = DriftReport {
        commit,
        check_id,
        results,
        excluded,
        issues: Vec::new(),
        warnings: Vec::new(),
    };
    report_issues(ports, &mut report).await?;
    notify(config, ports, &mut report).await;
    Ok(report)
}

/// The units the check plans: every unit of the trunk head's graph, narrowed
/// by the deploy filters, with what the filters excluded.
fn units_to_check(
    config: &DriftConfig,
    checkout: &Checkout,
) -> Result<(Vec<RepoPath>, Vec<Excluded>)> {
    // Before any plan runs: a filter that does not parse fails here.
    let filters = crate::filters::load(
        &checkout.git,
        &checkout.commit,
        &config.common.deploy_filters,
    )?;
    let graph = graph_at(&checkout.git, Some(&checkout.commit))?;
    let every = Affected {
        units: graph
            .units()
            .iter()
            .map(|u| AffectedUnit {
                path: u.path.clone(),
                action: Action::Apply,
                reasons: vec![Reason::Changed],
            })
            .collect(),
        skipped: vec![],
    };
    let narrowed = crate::filters::narrow_affected(
        &checkout.git,
        checkout.dir(),
        every,
        &graph,
        None,
        &filters,
    )?;
    let units: Vec<RepoPath> = narrowed
        .affected
        .units
        .iter()
        .filter(|u| u.action == Action::Apply)
        .map(|u| u.path.clone())
        .collect();
    Ok((units, narrowed.excluded))
}

/// Opens, updates or closes each unit's issue ([`drift::issue_action`]). The
/// metadb's record of the open issue comes first; without one, the bot's
/// open issue holding the unit's marker (an issue opened by a check whose
/// record then failed): never a second issue for one unit.
async fn report_issues<S, R, I, N>(
    ports: &DriftPorts<'_, S, R, I, N>,
    report: &mut DriftReport,
) -> Result<()>
where
    S: DriftStore + RunStore,
    I: IssueHost,
{
    for r in &report.results {
        if matches!(r.state, DriftState::Failed | DriftState::Superseded) {
            continue;
        }
        let mut open = ports.store.drift_issue(&r.unit).await.port("metadb")?;
        let marker = drift::issue_marker(&r.unit);
        if open.is_none() {
            match ports.issues.find_bot_issue(&marker).await.port("github") {
                Ok(found) => open = found,
                Err(e) => {
                    report
                        .warnings
                        .push(format!("drift issue of {}: {e}", r.unit));
                    continue;
                }
            }
        }
        let action = drift::issue_action(r.state, open);
        let title = drift::issue_title(&r.unit);
        let body = drift::issue_body(&r.unit, &report.commit, r.counts);
        let done = match action {
            IssueAction::Open => ports
                .issues
                .create_issue(&title, &body)
                .await
                .map(Some)
                .port("github"),
            IssueAction::Update(n) => ports
                .issues
                .update_issue(n, &title, &body)
                .await
                .map(|()| Some(n))
                .port("github"),
            IssueAction::Close(n) => ports
                .issues
                .close_issue(n, &drift::closing_comment(&report.commit))
                .await
                .map(|()| None)
                .port("github"),
            IssueAction::Keep => continue,
        };
        match done {
            Ok(issue) => {
                ports
                    .store
                    .set_drift_issue(&r.unit, issue)
                    .await
                    .port("metadb")?;
                report.issues.push((r.unit.clone(), action, issue));
            }
            Err(e) => report
                .warnings
                .push(format!("drift issue of {}: {e}", r.unit)),
        }
    }
    Ok(())
}

/// One notification per check that found drift (advisory: a failed publish
/// is a warning).
async fn notify<S, R, I, N>(
    config: &DriftConfig,
    ports: &DriftPorts<'_, S, R, I, N>,
    report: &mut DriftReport,
) where
    I: IssueHost,
    N: Notifications,
{
    let drifted: Vec<DriftedUnit> = report
        .drifted()
        .map(|r| DriftedUnit {
            unit: r.unit.to_string(),
            counts: Counts {
                add: r.counts.add,
                change: r.counts.change,
                destroy: r.counts.destroy,
            },
            issue_url: report
                .issues
                .iter()
                .find(|(u, _, _)| *u == r.unit)
                .and_then(|(_, _, n)| *n)
                .and_then(|n| ports.issues.issue_url(n)),
        })
        .collect();
    if drifted.is_empty() {
        return;
    }
    let event = Event::DriftDetected {
        repository: config.common.repository.clone().unwrap_or_default(),
        commit: report.commit.clone(),
        checked: u32::try_from(report.results.len()).unwrap_or(u32::MAX),
        drifted,
    };
    if let Some(w) = announce(ports.notifications, event).await {
        report.warnings.push(w);
    }
}

/// What a check knows of the deploys when it starts: the units running or
/// queued runs deploy, and the newest run's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusyMark {
    busy: Vec<String>,
    latest_run: i64,
}

impl BusyMark {
    /// Reads the mark now, before any plan.
    pub async fn take<S: DriftStore + RunStore>(store: &S) -> Result<Self> {
        let busy = RunStore::busy_units(store).await.port("metadb")?;
        let latest_run = store.latest_run_id().await.port("metadb")?;
        Ok(BusyMark { busy, latest_run })
    }
}

/// The units a merge touched while the check planned: those of the runs
/// running or queued at its start or now, and of every run made since the
/// start, even one that started and finished in between (which neither
/// look at running and queued runs sees).
pub async fn merged_during<S: DriftStore + RunStore>(
    store: &S,
    start: BusyMark,
) -> Result<BTreeSet<String>> {
    let now = RunStore::busy_units(store).await.port("metadb")?;
    let since = store
        .units_of_runs_after(start.latest_run)
        .await
        .port("metadb")?;
    Ok(start.busy.into_iter().chain(now).chain(since).collect())
}

fn short(commit: &str) -> &str {
    commit.get(..7).unwrap_or(commit)
}
