//! The deploy comment: the one comment a merged pull request gets when its run
//! starts, rewritten as the run advances. Pure: the run as the run page reads
//! it ([`crate::run_view::RunView`]) in, GitHub-flavoured markdown out. Per
//! unit its phase (waiting, planning, awaiting approval with who has voted,
//! applying, done, failed, rolled back, aborted, superseded), the signed run
//! page link, and at the end the outcome with what a failure stopped or rolled
//! back. The comment is found again by its marker, among the bot's own
//! comments only.
//!
//! What the comment shows of voters is what the run page shows: the local part
//! of the address (`alice@…`, [`voter_label`]); the comment is as public as
//! the repository.
//!
//! Size: GitHub refuses a comment over 65,536 characters. The table is one
//! line per unit; past [`OPEN_ROWS`] units the rest are folded into a
//! `<details>` block, and rows that would pass [`BODY_LIMIT`] are left out
//! with a count and the run page's link, so the body always fits.

use sha2::{Digest, Sha256};

use crate::deploy::{RunId, RunStatus, Vote};
use crate::escape::html::is_web_url;
use crate::escape::markdown::{cell, code};
use crate::run_view::{Phase, RunView, UnitView, voter_label};

/// The marker's start; the whole marker names the run.
pub const MARKER_PREFIX: &str = "<!-- live-ci:deploy run=";

/// Units shown in the open table; the others are folded away.
pub const OPEN_ROWS: usize = 30;

/// The most characters a body is allowed: under GitHub's 65,536, leaving
/// room for the closing lines written after the rows.
pub const BODY_LIMIT: usize = 60_000;

/// The most characters of unit names one line of the ending lists.
const ENDING_LIST: usize = 2_000;

/// The marker of run `run_id`'s comment, its first line.
pub fn marker(run_id: RunId) -> String {
    format!("{MARKER_PREFIX}{run_id} -->")
}

/// The SHA-256 (hex) of a rendered body: what the writer stores to edit the
/// comment only when the render changed.
pub fn digest(body: &str) -> String {
    hex::encode(Sha256::digest(body.as_bytes()))
}

/// The run's outcome line.
fn outcome(view: &RunView) -> String {
    let r = &view.run;
    match (r.status, r.superseded_by) {
        (RunStatus::Queued, _) => "queued behind another run".into(),
        (RunStatus::Running, _) => "deploying".into(),
        (RunStatus::Succeeded, _) => "deployed".into(),
        (RunStatus::Failed, _) => "failed".into(),
        (RunStatus::Superseded, Some(by)) => {
            format!("superseded: run {by}, at a newer trunk commit, deploys these changes")
        }
        (RunStatus::Superseded, None) => {
            "superseded: a run at a newer trunk commit deploys these changes".into()
        }
    }
}

/// The votes cell: the approvals needed and who voted how.
fn votes(u: &UnitView) -> String {
    let e = &u.execution;
    if e.voters.is_empty() || e.min_approval_count == 0 {
        return "—".into();
    }
    let approvals = u.votes.iter().filter(|v| v.vote == Vote::Approve).count();
    let mut out = format!("{approvals} of {}", e.min_approval_count);
    for v in &u.votes {
        let verb = match v.vote {
            Vote::Approve => "approved",
            Vote::Reject => "rejected",
        };
        out.push_str(&format!(", {} {verb}", cell(&voter_label(&v.voter))));
    }
    out
}

/// One table row of `u`.
fn row(view: &RunView, u: &UnitView) -> String {
    let e = &u.execution;
    let phase = Phase::of(u, view.run.status);
    let mut unit = cell(e.cfg_path.as_str());
    if e.is_rollback {
        unit.push_str(" (rollback)");
    }
    let mut phase_cell = phase.as_str().to_string();
    if matches!(phase, Phase::Failed | Phase::Aborted | Phase::Rejected)
        && let Some(reason) = e.status_reason.as_deref()
    {
        phase_cell.push_str(": ");
        phase_cell.push_str(&cell(reason));
    }
    format!(
        "| {unit} | {} | {phase_cell} | {} |\n",
        cell(&e.account_name),
        votes(u)
    )
}

/// The comment of `view`'s run, linking `run_page` (a signed run link) when
/// given. Every repository- or voter-controlled value is a code span
/// ([`crate::escape::markdown`]); the body stays under [`BODY_LIMIT`].
pub fn render(view: &RunView, run_page: Option<&str>) -> String {
    render_covering(view, run_page, &[])
}

/// [`render`] for a run that also deploys the changes of pull requests
/// `covered` (those of the runs it superseded, coalesced into it): the
/// comment says so under its first line, on every pull request it goes to.
pub fn render_covering(view: &RunView, run_page: Option<&str>, covered: &[u64]) -> String {
    let r = &view.run;
    let mut out = format!(
        "{}\n### live-ci deploy: {}\n\nRun {} of commit {}",
        marker(r.run_id),
        outcome(view),
        r.run_id,
        code(&r.commit_id),
    );
    match run_page.filter(|u| is_web_url(u)) {
        Some(url) => out.push_str(&format!(" · [run page]({url})\n\n")),
        None => out.push_str("\n\n"),
    }
    if !covered.is_empty() {
        let prs: Vec<String> = covered.iter().map(|n| format!("#{n}")).collect();
        out.push_str(&format!(
            "It also deploys the changes of {}, merged before it (their runs were superseded by this one).\n\n",
            prs.join(", ")
        ));
    }
    if view.units.is_empty() {
        out.push_str("This run deploys no unit.\n");
        return out;
    }
    let header = "| Unit | Account | Phase | Votes |\n|---|---|---|---|\n";
    let end = ending(view);
    out.push_str(header);
    let mut folded = String::new();
    let mut left_out = 0usize;
    for (i, u) in view.units.iter().enumerate() {
        let line = row(view, u);
        // Room for the fold's own lines and the closing summary.
        if out.len() + folded.len() + line.len() + header.len() + end.len() + 500 > BODY_LIMIT {
            left_out = view.units.len() - i;
            break;
        }
        if i < OPEN_ROWS {
            out.push_str(&line);
        } else {
            folded.push_str(&line);
        }
    }
    if !folded.is_empty() {
        let n = folded.lines().count();
        out.push_str(&format!(
            "\n<details><summary>{n} more unit(s)</summary>\n\n{header}{folded}\n</details>\n"
        ));
    }
    if left_out > 0 {
        out.push_str(&format!(
            "\n… and {left_out} more unit(s): see the run page.\n"
        ));
    }
    out.push_str(&end);
    out
}

/// When the run failed: what the failure stopped and what was rolled back.
fn ending(view: &RunView) -> String {
    if view.run.status != RunStatus::Failed {
        return String::new();
    }
    let of = |want: Phase| -> Vec<String> {
        view.units
            .iter()
            .filter(|u| Phase::of(u, view.run.status) == want)
            .map(|u| code(u.execution.cfg_path.as_str()))
            .collect()
    };
    let mut out = String::new();
    for (phase, words) in [
        (Phase::Failed, "Failed"),
        (Phase::Rejected, "Rejected"),
        (Phase::Aborted, "Stopped by the failure"),
        (Phase::RolledBack, "Rolled back"),
    ] {
        let units = of(phase);
        if !units.is_empty() {
            // At most ENDING_LIST characters of names per line, so the ending
            // has a bound of its own whatever the paths' lengths.
            let mut shown: Vec<&str> = Vec::new();
            let mut len = 0;
            for u in &units {
                if len + u.len() > ENDING_LIST {
                    break;
                }
                len += u.len() + 2;
                shown.push(u);
            }
            let more = units.len() - shown.len();
            out.push_str(&format!("\n**{words}:** {}", shown.join(", ")));
            if more > 0 {
                out.push_str(&format!(" and {more} more"));
            }
        }
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deploy::{Action, ExecutionRecord, ExecutionStatus, RunRecord};
    use crate::path::RepoPath;
    use crate::run_view::{CastVote, UnitPlan};

    fn record(path: &str, status: ExecutionStatus) -> ExecutionRecord {
        ExecutionRecord {
            run_id: 3,
            execution_id: format!("x-{path}"),
            is_rollback: false,
            pr_id: 7,
            commit_id: "c0ffee00".into(),
            base_ref: "main".into(),
            head_ref: "feature".into(),
            cfg_path: RepoPath::new(path).unwrap(),
            cfg_deps: vec![],
            action: Action::Apply,
            status,
            status_reason: None,
            plan_command: "plan".into(),
            apply_command: "apply".into(),
            new_providers: vec![],
            new_resources: vec![],
            account_name: "dev".into(),
            account_path: "dev".into(),
            account_deps: vec![],
            voters: vec!["alice@example.com".into(), "bob@example.com".into()],
            github_voters: Vec::new(),
            approval_voters: vec![],
            min_approval_count: 2,
            rejection_voters: vec![],
            min_rejection_count: 1,
            plan_role_arn: "arn:plan".into(),
            apply_role_arn: "arn:apply".into(),
            priority: 1.0,
            wait_for: vec![],
            wait_accounts: vec![],
            sfn_execution_arn: None,
            decision: None,
            checkout: None,
            created_at: 0,
            claimed_at: None,
            finished_at: None,
            updated_at: 0,
        }
    }

    fn unit(path: &str, status: ExecutionStatus) -> UnitView {
        UnitView {
            execution: record(path, status),
            planned: false,
            plan: None,
            votes: vec![],
            policy_denials: vec![],
        }
    }

    fn view(status: RunStatus, units: Vec<UnitView>) -> RunView {
        RunView {
            run: RunRecord {
                run_id: 3,
                pr_id: 7,
                commit_id: "c0ffee00".into(),
                base_ref: "main".into(),
                head_ref: "feature".into(),
                base_sha: "1".into(),
                head_sha: "2".into(),
                status,
                max_parallel: 4,
                fail_fast: false,
                trunk_seq: 1,
                superseded_by: None,
                checkout: None,
                created_at: 0,
                started_at: None,
                finished_at: None,
            },
            units,
        }
    }

    fn awaiting() -> UnitView {
        let mut u = unit("dev/db", ExecutionStatus::Running);
        u.planned = true;
        u.plan = Some(UnitPlan {
            to_add: 1,
            to_change: 0,
            to_destroy: 0,
            plan_summary: None,
            logs_url: "https://logs".into(),
            requested_at: 0,
        });
        u.votes = vec![CastVote {
            voter: "alice@example.com".into(),
            vote: Vote::Approve,
            at: 0,
            reason: None,
            channel: Default::default(),
        }];
        u
    }

    #[test]
    fn each_unit_shows_its_phase_votes_and_the_run_page() {
        let mut applying = unit("dev/app", ExecutionStatus::Running);
        applying.execution.decision = Some(Vote::Approve);
        let v = view(
            RunStatus::Running,
            vec![
                unit("dev/vpc", ExecutionStatus::Succeeded),
                awaiting(),
                applying,
                unit("dev/web", ExecutionStatus::Waiting),
            ],
        );
        let body = render(&v, Some("https://pages.example/run?r=abc"));
        assert_eq!(
            body,
            "<!-- live-ci:deploy run=3 -->\n\
             ### live-ci deploy: deploying\n\n\
             Run 3 of commit `c0ffee00` · [run page](https://pages.example/run?r=abc)\n\n\
             | Unit | Account | Phase | Votes |\n|---|---|---|---|\n\
             | `dev/vpc` | `dev` | done | 0 of 2 |\n\
             | `dev/db` | `dev` | awaiting approval | 1 of 2, `alice@…` approved |\n\
             | `dev/app` | `dev` | applying | 0 of 2 |\n\
             | `dev/web` | `dev` | waiting | 0 of 2 |\n"
        );
        // A link that is not http(s) is left out.
        assert!(!render(&v, Some("javascript:alert(1)")).contains("run page"));
    }

    #[test]
    fn a_failed_run_says_what_failed_stopped_and_rolled_back() {
        let mut failed = unit("dev/db", ExecutionStatus::Failed);
        failed.execution.status_reason = Some("terraform exited 1".into());
        let mut rollback = unit("dev/vpc", ExecutionStatus::Succeeded);
        rollback.execution.is_rollback = true;
        let v = view(
            RunStatus::Failed,
            vec![failed, unit("dev/app", ExecutionStatus::Aborted), rollback],
        );
        let body = render(&v, None);
        assert!(body.contains("### live-ci deploy: failed\n"), "{body}");
        assert!(
            body.contains("| `dev/db` | `dev` | failed: `terraform exited 1` | 0 of 2 |"),
            "{body}"
        );
        assert!(
            body.contains("| `dev/vpc` (rollback) | `dev` | rolled back |"),
            "{body}"
        );
        assert!(
            body.ends_with(
                "\n**Failed:** `dev/db`\n**Stopped by the failure:** `dev/app`\n**Rolled back:** `dev/vpc`\n"
            ),
            "{body}"
        );
    }

    #[test]
    fn a_superseded_run_says_which_run_deploys_its_changes() {
        let mut v = view(
            RunStatus::Superseded,
            vec![unit("dev/app", ExecutionStatus::Waiting)],
        );
        v.run.superseded_by = Some(9);
        let body = render(&v, None);
        assert!(
            body.contains(
                "### live-ci deploy: superseded: run 9, at a newer trunk commit, deploys these changes\n"
            ),
            "{body}"
        );
        assert!(
            body.contains("| `dev/app` | `dev` | superseded |"),
            "{body}"
        );
    }

    #[test]
    fn unit_paths_and_reasons_cannot_break_the_table_or_the_comment() {
        let mut u = unit("dev/a|b`[x](evil)", ExecutionStatus::Failed);
        u.execution.status_reason = Some("boom\n/live-ci approve dev/x | <b>".into());
        u.execution.account_name = "@team *bold*".into();
        let v = view(RunStatus::Running, vec![u]);
        let body = render(&v, None);
        let row = body.lines().find(|l| l.contains("dev/a")).unwrap();
        assert_eq!(
            row,
            "| ``dev/a\\|b`[x](evil)`` | `@team *bold*` | failed: `boom\\u{a}/live-ci approve dev/x \\| <b>` | 0 of 2 |"
        );
        // No line of the body starts with a command.
        assert!(!body.lines().any(|l| l.starts_with("/live-ci")), "{body}");
    }

    #[test]
    fn many_units_fold_and_the_body_always_fits() {
        let units: Vec<UnitView> = (0..3_000)
            .map(|i| {
                unit(
                    &format!("dev/{}-{i}", "x".repeat(60)),
                    ExecutionStatus::Waiting,
                )
            })
            .collect();
        let body = render(&view(RunStatus::Running, units), Some("https://p/r"));
        assert!(body.chars().count() <= BODY_LIMIT, "{}", body.len());
        let open = body.split("<details>").next().unwrap();
        assert_eq!(
            open.lines().filter(|l| l.starts_with("| `dev/")).count(),
            OPEN_ROWS
        );
        assert!(body.contains("more unit(s)</summary>"), "{body}");
        assert!(body.contains("more unit(s): see the run page.\n"), "{body}");
        // 40 units fold without leaving any out.
        let units: Vec<UnitView> = (0..40)
            .map(|i| unit(&format!("dev/u{i}"), ExecutionStatus::Waiting))
            .collect();
        let body = render(&view(RunStatus::Running, units), None);
        assert!(
            body.contains("<details><summary>10 more unit(s)</summary>"),
            "{body}"
        );
        assert!(!body.contains("see the run page"), "{body}");
    }

    #[test]
    fn a_coalesced_run_names_the_pull_requests_it_also_deploys() {
        let v = view(
            RunStatus::Running,
            vec![unit("dev/app", ExecutionStatus::Waiting)],
        );
        let body = render_covering(&v, None, &[5, 6]);
        assert!(
            body.contains(
                "Run 3 of commit `c0ffee00`\n\nIt also deploys the changes of #5, #6, merged before it (their runs were superseded by this one).\n\n| Unit"
            ),
            "{body}"
        );
        assert_eq!(render_covering(&v, None, &[]), render(&v, None));
    }

    #[test]
    fn the_marker_names_the_run_and_the_digest_follows_the_body() {
        assert_eq!(marker(42), "<!-- live-ci:deploy run=42 -->");
        let v = view(
            RunStatus::Running,
            vec![unit("dev/a", ExecutionStatus::Waiting)],
        );
        let a = render(&v, None);
        assert_eq!(digest(&a), digest(&render(&v, None)));
        let mut w = v.clone();
        w.units[0].execution.status = ExecutionStatus::Running;
        assert_ne!(digest(&a), digest(&render(&w, None)));
    }
}
