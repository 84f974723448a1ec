//! A run as a reviewer reads it on the read-only run page (approval-response,
//! reached by a signed run link from commit statuses and the deploy comment):
//! the run, each unit's phase, votes, duration and plan summary. Pure: the
//! metadb's answer in, escaped HTML out. No form, no script, no vote link and
//! no task token: the page is for looking, voting stays behind vote links.
//!
//! What the page shows of voters: the local part of the address only
//! (`alice@…`). The addresses are operator configuration (the Terraform
//! module's `account_parent_cfg`), not repository content, while the run link
//! sits on commit statuses that every reader of the repository (possibly a
//! public one) can open; the voters are exactly the people whose mailboxes
//! approve deployments, so their full addresses are withheld from the page.
//! Who has not voted yet is not listed either, only how many votes are needed.
//! Role ARNs (account ids) and commands are not shown.

use serde::Deserialize;

use crate::approval::format_utc;
use crate::deploy::{ExecutionRecord, ExecutionStatus, RunRecord, RunStatus, UnixMillis, Vote};
use crate::escape::html::{escape_html as h, is_web_url};

/// Everything the page shows, read from the metadb in one query.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RunView {
    /// The run as stored: status, commit range, times.
    pub run: RunRecord,
    /// Every execution of the run (rollbacks included), highest priority first.
    pub units: Vec<UnitView>,
}

/// One execution with its plan summary and votes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct UnitView {
    /// The execution as stored.
    pub execution: ExecutionRecord,
    /// Whether the plan task recorded a saved plan.
    #[serde(default)]
    pub planned: bool,
    /// The plan as the approval request recorded it (`None`: no request yet).
    #[serde(default)]
    pub plan: Option<UnitPlan>,
    /// The votes cast, oldest first.
    #[serde(default)]
    pub votes: Vec<CastVote>,
    /// The policy denials of the recorded plan (`policy_override`: voted on
    /// anyway), empty when none.
    #[serde(default)]
    pub policy_denials: Vec<String>,
}

/// What the approval request stored of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct UnitPlan {
    /// Resources the plan adds.
    pub to_add: u32,
    /// Resources the plan changes in place.
    pub to_change: u32,
    /// Resources the plan destroys.
    pub to_destroy: u32,
    /// The mail's words; `None` for requests stored before migration 0007.
    #[serde(default)]
    pub plan_summary: Option<String>,
    /// The plan logs (CloudWatch console): for operators.
    pub logs_url: String,
    /// When the approval was requested.
    pub requested_at: UnixMillis,
}

/// One recorded vote.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CastVote {
    /// The voter: an e-mail address, or `github:<login>`.
    pub voter: String,
    /// Approve or reject.
    pub vote: Vote,
    /// When it was cast (or last changed).
    pub at: UnixMillis,
    /// The voter's reason (required to approve a plan the policies denied;
    /// a `/live-ci reject <unit> <reason>` comment's reason).
    #[serde(default)]
    pub reason: Option<String>,
    /// How the vote was last cast. A mail voter whose GitHub login the
    /// operator mapped (`voter_github_logins`) has one vote under their
    /// address whichever way they cast it; this says which.
    #[serde(default)]
    pub channel: crate::port::VoteChannel,
}

/// Where a unit is in its deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Not started: waits for its dependencies or a free slot.
    Waiting,
    /// Running, no plan recorded for approval yet.
    Planning,
    /// Planned; the voters have not decided.
    AwaitingApproval,
    /// Approved (or needing no approval): the apply is under way.
    Applying,
    /// The voters rejected it; the execution is ending.
    Rejected,
    /// Deployed: the execution succeeded.
    Done,
    /// The execution failed.
    Failed,
    /// A rollback execution that succeeded.
    RolledBack,
    /// Aborted: an ancestor failed, fail-fast, or an operator's abort.
    Aborted,
    /// The run was superseded by a newer one that deploys its changes.
    Superseded,
}

impl Phase {
    /// The phase as the page words it.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Waiting => "waiting",
            Phase::Planning => "planning",
            Phase::AwaitingApproval => "awaiting approval",
            Phase::Applying => "applying",
            Phase::Rejected => "rejected",
            Phase::Done => "done",
            Phase::Failed => "failed",
            Phase::RolledBack => "rolled back",
            Phase::Aborted => "aborted",
            Phase::Superseded => "superseded",
        }
    }

    /// The page's CSS class for it.
    fn class(self) -> &'static str {
        match self {
            Phase::Done | Phase::RolledBack => "good",
            Phase::Failed | Phase::Rejected => "bad",
            Phase::AwaitingApproval => "warn",
            _ => "",
        }
    }

    /// The phase of `unit` in a run of status `run`.
    pub fn of(unit: &UnitView, run: RunStatus) -> Phase {
        let e = &unit.execution;
        match e.status {
            ExecutionStatus::Waiting if run == RunStatus::Superseded => Phase::Superseded,
            ExecutionStatus::Waiting => Phase::Waiting,
            ExecutionStatus::Succeeded if e.is_rollback => Phase::RolledBack,
            ExecutionStatus::Succeeded => Phase::Done,
            ExecutionStatus::Failed => Phase::Failed,
            ExecutionStatus::Aborted => Phase::Aborted,
            ExecutionStatus::Running => match e.decision {
                Some(Vote::Approve) => Phase::Applying,
                Some(Vote::Reject) => Phase::Rejected,
                None if unit.plan.is_some() => Phase::AwaitingApproval,
                // No approval needed: a saved plan goes straight to apply.
                None if unit.planned && e.min_approval_count == 0 => Phase::Applying,
                None => Phase::Planning,
            },
        }
    }
}

/// `alice@example.com` → `alice@…`: what the page shows of a voter (see the
/// module comment for why).
pub fn voter_label(address: &str) -> String {
    match address.split_once('@') {
        Some((local, _)) => format!("{local}@…"),
        None => address.to_string(),
    }
}

/// `1 h 02 min`, `3 min 05 s`, `12 s`.
pub fn format_duration(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    if s >= 3600 {
        format!("{} h {:02} min", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{} min {:02} s", s / 60, s % 60)
    } else {
        format!("{s} s")
    }
}

fn utc(ms: UnixMillis) -> String {
    format_utc(u64::try_from(ms / 1000).unwrap_or(0))
}

impl RunView {
    /// The page's title.
    pub fn title(&self) -> String {
        format!("live-ci run {}", self.run.run_id)
    }

    /// The page body as HTML at `now_ms` (running units' durations count to
    /// it). Every value is escaped; only `http(s)` URLs become links.
    pub fn to_html(&self, now_ms: i64) -> String {
        let r = &self.run;
        let mut out = String::new();
        let status = match (r.status, r.superseded_by) {
            (RunStatus::Superseded, Some(by)) => {
                format!("superseded by run {by}, which deploys these changes")
            }
            (s, _) => s.as_str().to_string(),
        };
        out.push_str(&format!(
            "<table id=\"run\">\n<tr><th>Pull request</th><td>#{}</td></tr>\n\
             <tr><th>Commit</th><td><code>{}</code></td></tr>\n\
             <tr><th>Status</th><td id=\"run-status\">{}</td></tr>\n\
             <tr><th>Started</th><td>{}</td></tr>\n{}</table>\n",
            r.pr_id,
            h(&r.commit_id),
            h(&status),
            r.started_at.map(utc).unwrap_or_else(|| "not yet".into()),
            r.finished_at
                .map(|f| format!("<tr><th>Finished</th><td>{}</td></tr>\n", utc(f)))
                .unwrap_or_default(),
        ));
        if self.units.is_empty() {
            out.push_str("<p class=\"notice\" id=\"no-units\">This run deploys no unit.</p>\n");
            return out;
        }
        out.push_str(
            "<table id=\"units\" class=\"units\">\n<tr><th>Unit</th><th>Account</th><th>Phase</th>\
             <th>Duration</th><th>Plan</th><th>Votes</th></tr>\n",
        );
        for u in &self.units {
            out.push_str(&self.unit_row(u, now_ms));
        }
        out.push_str("</table>\n");
        out
    }

    fn unit_row(&self, u: &UnitView, now_ms: i64) -> String {
        let e = &u.execution;
        let phase = Phase::of(u, self.run.status);
        let mut phase_cell = h(phase.as_str());
        if let (true, Some(reason)) = (
            matches!(phase, Phase::Failed | Phase::Aborted | Phase::Rejected),
            e.status_reason.as_deref(),
        ) {
            phase_cell.push_str(&format!("<br><span class=\"muted\">{}</span>", h(reason)));
        }
        let duration = match e.claimed_at {
            Some(start) => {
                let end = e.finished_at.unwrap_or(now_ms);
                let d = h(&format_duration(end - start));
                if e.finished_at.is_none() {
                    format!("{d} so far")
                } else {
                    d
                }
            }
            None => "—".into(),
        };
        let plan = plan_cell(u);
        let votes = votes_cell(u);
        let name = name_cell(u);
        format!(
            "<tr class=\"unit\" data-phase=\"{}\"><td>{name}</td><td>{}</td>\
             <td class=\"phase {}\">{phase_cell}</td><td>{duration}</td><td>{plan}</td><td>{votes}</td></tr>\n",
            h(phase.as_str()),
            h(&e.account_name),
            phase.class(),
        )
    }
}

/// The plan's summary and logs link, and the policy denials the voters may
/// override, each as the policy wrote it (escaped).
fn plan_cell(u: &UnitView) -> String {
    let plan = match &u.plan {
        Some(p) => {
            let words = p.plan_summary.clone().unwrap_or_else(|| {
                format!(
                    "{} to add, {} to change, {} to destroy",
                    p.to_add, p.to_change, p.to_destroy
                )
            });
            let logs = if is_web_url(&p.logs_url) {
                format!(
                    "<br><a href=\"{}\" rel=\"noreferrer\" class=\"muted\">plan logs (operators)</a>",
                    h(&p.logs_url)
                )
            } else {
                String::new()
            };
            format!("{}{logs}", h(&words))
        }
        None if u.planned => "planned".into(),
        None => "—".into(),
    };
    if u.policy_denials.is_empty() {
        return plan;
    }
    let items: Vec<String> = u
        .policy_denials
        .iter()
        .map(|d| format!("<li>{}</li>", h(d)))
        .collect();
    format!(
        "{plan}<div class=\"policy-denials\"><b>Denied by policy</b> (voters may \
         override with a reason):<ul>{}</ul></div>",
        items.concat()
    )
}

/// The approvals against the threshold, and each vote cast: who, how,
/// where (GitHub), why, when.
fn votes_cell(u: &UnitView) -> String {
    let e = &u.execution;
    if e.voters.is_empty() {
        return "—".to_string();
    }
    let cast: Vec<String> = u
        .votes
        .iter()
        .map(|v| {
            let reason = v
                .reason
                .as_deref()
                .map(|r| format!(" <q class=\"reason\">{}</q>", h(r)))
                .unwrap_or_default();
            let channel = match v.channel {
                crate::port::VoteChannel::Mail => "",
                crate::port::VoteChannel::GitHub => " <span class=\"muted\">on GitHub</span>",
            };
            format!(
                "<li>{} {}{channel}{reason} <span class=\"muted\">{}</span></li>",
                h(&voter_label(&v.voter)),
                h(v.vote.as_str()),
                h(&utc(v.at)),
            )
        })
        .collect();
    let approvals = u.votes.iter().filter(|v| v.vote == Vote::Approve).count();
    format!(
        "{approvals} of {} approvals needed{}",
        e.min_approval_count,
        if cast.is_empty() {
            String::new()
        } else {
            format!("<ul class=\"votes\">{}</ul>", cast.concat())
        }
    )
}

/// The unit, a rollback said so, and the Step Functions console for
/// operators (the statuses link here).
fn name_cell(u: &UnitView) -> String {
    let e = &u.execution;
    let mut name = if e.is_rollback {
        format!("<code>{}</code> (rollback)", h(e.cfg_path.as_str()))
    } else {
        format!("<code>{}</code>", h(e.cfg_path.as_str()))
    };
    if let Some(url) = e
        .sfn_execution_arn
        .as_deref()
        .and_then(crate::status::target::execution)
    {
        name.push_str(&format!(
            "<br><a href=\"{}\" rel=\"noreferrer\" class=\"muted\">execution (operators)</a>",
            h(&url)
        ));
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn voters_are_shown_by_local_part_and_durations_read_well() {
        assert_eq!(voter_label("alice@example.com"), "alice@…");
        assert_eq!(voter_label("odd"), "odd");
        assert_eq!(format_duration(12_345), "12 s");
        assert_eq!(format_duration(185_000), "3 min 05 s");
        assert_eq!(format_duration(3_720_000), "1 h 02 min");
        assert_eq!(format_duration(-5), "0 s");
    }
}
