//! The pages a voter sees. Every value is HTML-escaped; only `http(s)` URLs
//! become links. Pages carry no script: the one form posts the signed token.

use live_ci_core::approval::{escape_html as h, format_utc, is_web_url};
use live_ci_core::deploy::{Action, ExecutionRecord, Tally, Vote};
use live_ci_core::port::ApprovalRecord;

/// A whole page around `body`.
pub(crate) fn layout(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"robots\" content=\"noindex\">\
         <title>{title}</title>\n<style>\
         body{{font-family:Arial,Helvetica,sans-serif;color:#1f2328;max-width:46rem;margin:2rem auto;padding:0 1rem}}\
         th{{text-align:left;padding:3px 14px 3px 0;vertical-align:top}}\
         .notice{{padding:10px 14px;border-radius:6px;background:#ddf4ff;margin:16px 0}}\
         .warn{{background:#fff8c5}}.bad{{background:#ffebe9}}.good{{background:#dafbe1}}\
         button{{font-size:1.1rem;padding:10px 26px;border:0;border-radius:6px;color:#fff;cursor:pointer}}\
         .approve{{background:#1a7f37}}.reject{{background:#cf222e}}\
         .muted{{color:#59636e;font-size:.9rem}}\
         details.rtype{{border:1px solid #d1d9e0;border-radius:6px;margin:6px 0;padding:4px 10px}}\
         details.rtype summary{{cursor:pointer;font-weight:bold}}\
         .rc p{{margin:8px 0 2px}}table.attrs{{border-collapse:collapse;font-size:.85rem;margin-left:1rem}}\
         table.attrs td{{padding:1px 8px 1px 0;vertical-align:top;word-break:break-all}}\
         .act{{display:inline-block;min-width:4.5rem;font-weight:bold}}\
         .create{{color:#1a7f37}}.update{{color:#9a6700}}.delete,.replace{{color:#cf222e}}\
         td.sensitive,td.unknown,td.none{{color:#59636e;font-style:italic}}\
         table.units{{border-collapse:collapse;font-size:.9rem}}\
         table.units td,table.units th{{border-bottom:1px solid #d1d9e0;padding:4px 10px 4px 0;vertical-align:top}}\
         td.phase.good{{color:#1a7f37}}td.phase.bad{{color:#cf222e}}td.phase.warn{{color:#9a6700}}\
         ul.votes{{margin:2px 0;padding-left:1rem}}\
         </style></head>\n<body>\n<h1>{title}</h1>\n{body}\n</body></html>\n",
        title = h(title),
    )
}

/// The read-only run page: no form, no script, no vote link.
pub(crate) fn run(view: &live_ci_core::run_view::RunView, now_ms: i64, limit: u32) -> String {
    let mut body = view.to_html(now_ms);
    if view.units.len() >= limit as usize {
        body.push_str(&format!(
            "<p class=\"muted\">The first {limit} units are shown.</p>\n"
        ));
    }
    body.push_str(
        "<p class=\"muted\">A read-only view; voters decide through the links in their \
         approval e-mail.</p>\n",
    );
    layout(&view.title(), &body)
}

/// A page that only says something (errors, closed votes).
pub(crate) fn message(title: &str, class: &str, text: &str) -> String {
    layout(
        title,
        &format!(
            "<p class=\"notice {}\" id=\"message\">{}</p>",
            h(class),
            h(text)
        ),
    )
}

fn action_word(vote: Vote) -> &'static str {
    match vote {
        Vote::Approve => "Approve",
        Vote::Reject => "Reject",
    }
}

/// The execution's details: unit, account, PR, commit, plan, logs.
pub(crate) fn details(e: &ExecutionRecord, a: &ApprovalRecord) -> String {
    let logs = if is_web_url(&a.logs_url) {
        format!(
            "<a href=\"{}\" rel=\"noreferrer\">plan logs</a>",
            h(&a.logs_url)
        )
    } else {
        h(&a.logs_url)
    };
    let row = |k: &str, v: String| format!("<tr><th>{k}</th><td>{v}</td></tr>\n");
    format!(
        "<table id=\"details\">\n{}</table>",
        [
            row("Unit", format!("<code>{}</code>", h(e.cfg_path.as_str()))),
            row(
                "Action",
                match e.action {
                    Action::Apply => "apply".into(),
                    Action::Destroy => "destroy".into(),
                },
            ),
            row("Account", h(&e.account_name)),
            row("Pull request", format!("#{}", e.pr_id)),
            row("Commit", format!("<code>{}</code>", h(&e.commit_id))),
            // The mail's words ("outputs change: url" for an outputs-only plan);
            // requests stored before the summary was kept show the counts.
            row(
                "Plan",
                match &a.plan_summary {
                    Some(summary) => h(summary),
                    None => format!(
                        "{} to add, {} to change, {} to destroy",
                        a.to_add, a.to_change, a.to_destroy
                    ),
                },
            ),
            row("Logs", logs),
            row("Execution", h(&e.execution_id)),
            row(
                "Voting closes",
                h(&format_utc(u64::try_from(a.expires_at / 1000).unwrap_or(0))),
            ),
        ]
        .concat()
    )
}

/// Where the votes stand, and the voter's own vote.
pub(crate) fn standing(t: &Tally, voter: &str) -> String {
    let mine = if t.approval_voters.iter().any(|v| v == voter) {
        "approve"
    } else if t.rejection_voters.iter().any(|v| v == voter) {
        "reject"
    } else {
        "none yet"
    };
    format!(
        "<p id=\"tally\">Approvals: {} of {} needed. Rejections: {} of {} needed.</p>\n\
         <p id=\"your-vote\">Your current vote ({}): <b>{}</b>.</p>",
        t.approval_voters.len(),
        t.min_approval_count,
        t.rejection_voters.len(),
        t.min_rejection_count,
        h(voter),
        mine
    )
}

/// The confirmation page a link opens: nothing is recorded until the button.
#[allow(clippy::too_many_arguments)]
pub(crate) fn confirm(
    e: &ExecutionRecord,
    a: &ApprovalRecord,
    t: &Tally,
    voter: &str,
    vote: Vote,
    token: &str,
    plan: &str,
    policy_denials: &[String],
) -> String {
    let word = action_word(vote);
    let class = word.to_ascii_lowercase();
    let (denials, reason) = policy_section(policy_denials, vote);
    layout(
        &format!("{word} deployment of {}?", e.cfg_path.as_str()),
        &format!(
            "{details}\n{denials}{standing}\n\
             <form method=\"post\" id=\"vote-form\">\
             <input type=\"hidden\" name=\"t\" value=\"{token}\">{reason}\
             <button type=\"submit\" id=\"vote\" class=\"{class}\">{word}</button></form>\n\
             <p class=\"muted\">Nothing is recorded until you press {word}. You may change your \
             vote (with the other link in your e-mail) until a decision is reached.</p>\n{plan}",
            details = details(e, a),
            standing = standing(t, voter),
            token = h(token),
        ),
    )
}

/// The recorded plan's policy denials (escaped, as the policies wrote them)
/// and the form's reason field: required to approve, optional to reject.
/// Both empty when nothing was denied.
fn policy_section(policy_denials: &[String], vote: Vote) -> (String, String) {
    if policy_denials.is_empty() {
        return (String::new(), String::new());
    }
    let items: String = policy_denials
        .iter()
        .map(|d| format!("<li><code>{}</code></li>", h(d)))
        .collect();
    let denials = format!(
        "<div id=\"policy-denials\" class=\"warn\"><p><b>Denied by policy.</b> The voters \
         may override it with a reason.</p><ul>{items}</ul></div>\n"
    );
    let reason = match vote {
        Vote::Approve => {
            "<p><label for=\"reason\">Why approve despite the denials \
             (required, recorded with your vote):</label><br><textarea id=\"reason\" \
             name=\"reason\" rows=\"3\" cols=\"60\" maxlength=\"2000\" required></textarea></p>"
        }
        Vote::Reject => {
            "<p><label for=\"reason\">Reason (optional, recorded with your \
             vote):</label><br><textarea id=\"reason\" name=\"reason\" rows=\"3\" \
             cols=\"60\" maxlength=\"2000\"></textarea></p>"
        }
    };
    (denials, reason.to_string())
}

/// Where the plan would be, saying why it is not shown as the plan this
/// vote approves.
pub(crate) fn plan_refused(why: &str) -> String {
    format!(
        "<section id=\"plan\"><h2>The plan</h2>\n<p class=\"notice bad\" id=\"plan-refused\">\
         The plan is not shown as the plan this vote approves: {}. The plan logs (above) \
         have its text; when in doubt, reject.</p></section>",
        h(why)
    )
}

/// After a vote that did not (yet) decide.
pub(crate) fn recorded(
    e: &ExecutionRecord,
    a: &ApprovalRecord,
    t: &Tally,
    voter: &str,
    vote: Vote,
) -> String {
    layout(
        &format!("Vote recorded: {}", vote.as_str()),
        &format!(
            "<p class=\"notice good\" id=\"message\">Your vote to {} the deployment of \
             <code>{}</code> is recorded. No decision yet: you may change your vote until one \
             is reached.</p>\n{}\n{}",
            vote.as_str(),
            h(e.cfg_path.as_str()),
            standing(t, voter),
            details(e, a),
        ),
    )
}

/// After the votes decided; `notice` says what Step Functions did with it.
pub(crate) fn decided(
    e: &ExecutionRecord,
    a: &ApprovalRecord,
    t: &Tally,
    voter: &str,
    decision: Vote,
    class: &str,
    notice: &str,
) -> String {
    layout(
        &format!("Decision: {}", decision.as_str()),
        &format!(
            "<p class=\"notice {}\" id=\"message\">{}</p>\n{}\n{}",
            h(class),
            h(notice),
            standing(t, voter),
            details(e, a),
        ),
    )
}
