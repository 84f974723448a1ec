//! The "approval pending" notification (issue 29 item 4): the unit, its
//! account, the pull request and the plan's counts, for the team's channel.
//! Built from the request's public parts only: never the task token (it
//! completes the waiting state) and never a vote link (it casts a vote). No
//! run page link either: minting one takes the run-link key, which this
//! function does not hold (it holds the vote-link key, and a run page is not
//! worth giving it a second key).

use live_ci_core::deploy::RunId;
use live_ci_core::notification::{Counts, Event, PullRequest};
use live_ci_stepfunctions::ApprovalRequest;

use crate::config::RequestSettings;

/// The event for `request`, stored under run `run_id`.
pub fn approval_pending(
    settings: &RequestSettings,
    request: &ApprovalRequest,
    run_id: Option<RunId>,
) -> Event {
    let e = &request.execution;
    let plan = &request.plan;
    Event::ApprovalPending {
        repository: settings.repository.clone(),
        run_id: run_id.map(|r| r.to_string()).unwrap_or_default(),
        unit: e.cfg_path.as_str().to_string(),
        account: e.account_name.clone(),
        pull_request: (e.pr_id > 0).then(|| PullRequest {
            number: e.pr_id,
            url: format!(
                "{}/{}/pull/{}",
                settings.github_web_url, settings.repository, e.pr_id
            ),
        }),
        counts: Counts {
            add: plan.to_add,
            change: plan.to_change,
            destroy: plan.to_destroy,
        },
        page_url: None,
    }
}
