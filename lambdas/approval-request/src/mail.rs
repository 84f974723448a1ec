//! The approval e-mail: a plain-text and an HTML part with the same content.
//! Every value from the request is escaped for where it goes: the subject as a
//! one-line header ([`text::header`]: no CR/LF can add a header), the text
//! part with control and bidi characters made visible ([`text::visible`]), the
//! HTML part HTML-escaped as well; only `http(s)` URLs become links (a logs URL
//! of any other scheme is shown as text).

use live_ci_core::approval::{escape_html, format_utc, is_web_url};
use live_ci_core::escape::text;
use live_ci_stepfunctions::ApprovalRequest;
use live_ci_stepfunctions::payload::FIRST_CHANGES;

use crate::config::RequestSettings;

/// What one voter's mail shows.
#[derive(Debug, Clone)]
pub struct MailContext<'a> {
    /// The sender and the links' bases.
    pub settings: &'a RequestSettings,
    /// The approval request the mail asks about.
    pub request: &'a ApprovalRequest,
    /// The recipient's address.
    pub voter: &'a str,
    /// This voter's signed link that approves.
    pub approve_url: &'a str,
    /// This voter's signed link that rejects.
    pub reject_url: &'a str,
    /// Unix seconds.
    pub expires_at: u64,
}

/// A voter's link: the approval_response URL with the signed token.
pub fn vote_url(approval_url: &str, token: &str) -> String {
    format!("{}/?t={token}", approval_url.trim_end_matches('/'))
}

/// The plan's first resource changes for the text part (each line's control
/// and bidi characters made visible), and how many more the page shows.
fn text_changes(plan: &live_ci_stepfunctions::PlanResult) -> String {
    if plan.first_changes.is_empty() {
        return String::new();
    }
    let mut out = String::from("Changes:\n");
    for line in plan.first_changes.iter().take(FIRST_CHANGES) {
        out.push_str(&format!("  {}\n", text::visible(line)));
    }
    if plan.more_changes > 0 {
        out.push_str(&format!(
            "  ... and {} more: each link's page shows the whole plan.\n",
            plan.more_changes
        ));
    }
    out.push('\n');
    out
}

/// The same for the HTML part, escaped.
fn html_changes(plan: &live_ci_stepfunctions::PlanResult) -> String {
    if plan.first_changes.is_empty() {
        return String::new();
    }
    let items: String = plan
        .first_changes
        .iter()
        .take(FIRST_CHANGES)
        .map(|line| {
            format!(
                "<li><code>{}</code></li>",
                escape_html(&text::visible(line))
            )
        })
        .collect();
    let more = if plan.more_changes > 0 {
        format!(
            "<p>… and {} more: each button's page shows the whole plan.</p>\n",
            plan.more_changes
        )
    } else {
        String::new()
    };
    format!("<p><b>Changes</b></p>\n<ul id=\"changes\">{items}</ul>\n{more}")
}

/// The policy denials of a plan voted on anyway (`policy_override`), for
/// the text part: each line made visible.
fn text_denials(plan: &live_ci_stepfunctions::PlanResult) -> String {
    if plan.policy_denials.is_empty() {
        return String::new();
    }
    let mut out = format!("{}:\n", capitalized(live_ci_core::policy::OVERRIDABLE));
    for d in &plan.policy_denials {
        out.push_str(&format!("  {}\n", text::visible(d)));
    }
    out.push_str("  An approval needs a reason, given on the confirmation page.\n\n");
    out
}

/// The same for the HTML part, escaped.
fn html_denials(plan: &live_ci_stepfunctions::PlanResult) -> String {
    if plan.policy_denials.is_empty() {
        return String::new();
    }
    let items: String = plan
        .policy_denials
        .iter()
        .map(|d| format!("<li><code>{}</code></li>", escape_html(&text::visible(d))))
        .collect();
    format!(
        "<p id=\"policy-denials\" style=\"color:#9a6700\"><b>{}</b></p>\n<ul>{items}</ul>\n\
         <p>An approval needs a reason, given on the confirmation page.</p>\n",
        escape_html(&capitalized(live_ci_core::policy::OVERRIDABLE))
    )
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Subject, plain text and HTML of one voter's mail.
pub fn render_email(ctx: &MailContext<'_>) -> (String, String, String) {
    let facts = Facts::of(ctx);
    let text = text_body(ctx, &facts);
    let html = html_body(ctx, &facts);
    (facts.subject, text, html)
}

/// What both bodies of one mail say, worked out once.
struct Facts {
    subject: String,
    action: &'static str,
    pr_url: String,
    commit_url: String,
    short_commit: String,
    /// From the plan's JSON: an outputs-only plan reads "outputs change: …".
    summary: String,
    thresholds: String,
    expires: String,
}

impl Facts {
    fn of(ctx: &MailContext<'_>) -> Facts {
        let e = &ctx.request.execution;
        let web = &ctx.settings.github_web_url;
        let repo = &ctx.settings.repository;
        let action = match e.action {
            live_ci_stepfunctions::Action::Apply => "apply",
            live_ci_stepfunctions::Action::Destroy => "destroy",
        };
        Facts {
            subject: text::header(&format!(
                "live-ci: approve {action} of {} ({}) from PR #{}?",
                e.cfg_path.as_str(),
                e.account_name,
                e.pr_id
            )),
            action,
            pr_url: format!("{web}/{repo}/pull/{}", e.pr_id),
            commit_url: format!("{web}/{repo}/commit/{}", e.commit_id),
            short_commit: e.commit_id.chars().take(12).collect(),
            summary: ctx.request.plan.summary(),
            thresholds: format!(
                "{} approval(s) deploy it; {} rejection(s) stop it.",
                e.min_approval_count, e.min_rejection_count
            ),
            expires: format_utc(ctx.expires_at),
        }
    }
}

/// The plain-text body.
fn text_body(ctx: &MailContext<'_>, f: &Facts) -> String {
    let e = &ctx.request.execution;
    let plan = &ctx.request.plan;
    let v = text::visible;
    format!(
        "live-ci asks you ({voter}) to approve a deployment.\n\n\
         Unit:     {unit}\n\
         Action:   {action}\n\
         Account:  {account}\n\
         PR:       #{pr} {pr_url}\n\
         Commit:   {commit} {commit_url}\n\
         Plan:     {summary}\n\
         Logs:     {logs}\n\n\
         {denials}{changes}\
         Approve:  {approve}\n\
         Reject:   {reject}\n\n\
         Each link opens a confirmation page; nothing is recorded until you press its button.\n\
         {thresholds} You may change your vote until a decision is reached.\n\
         The links expire at {expires}. Execution: {execution_id}\n",
        voter = v(ctx.voter),
        unit = v(e.cfg_path.as_str()),
        action = f.action,
        account = v(&e.account_name),
        pr = e.pr_id,
        pr_url = v(&f.pr_url),
        commit = v(&e.commit_id),
        commit_url = v(&f.commit_url),
        summary = v(&f.summary),
        logs = v(&plan.logs_url),
        approve = v(ctx.approve_url),
        reject = v(ctx.reject_url),
        thresholds = f.thresholds,
        expires = f.expires,
        execution_id = v(&e.execution_id),
        changes = text_changes(plan),
        denials = text_denials(plan),
    )
}

/// The HTML body: every value escaped for HTML after its invisible
/// characters are made visible.
fn html_body(ctx: &MailContext<'_>, f: &Facts) -> String {
    let e = &ctx.request.execution;
    let plan = &ctx.request.plan;
    let h = |s: &str| escape_html(&text::visible(s));
    let link = |url: &str, label: &str| {
        if is_web_url(url) {
            format!("<a href=\"{}\">{}</a>", h(url), h(label))
        } else {
            h(label)
        }
    };
    let logs = if is_web_url(&plan.logs_url) {
        format!("<a href=\"{}\">plan logs</a>", h(&plan.logs_url))
    } else {
        h(&plan.logs_url)
    };
    let row = |k: &str, v: String| {
        format!(
            "<tr><th align=\"left\" style=\"padding:2px 12px 2px 0\">{k}</th><td>{v}</td></tr>\n"
        )
    };
    let button = |url: &str, label: &str, color: &str| {
        format!(
            "<a href=\"{}\" style=\"display:inline-block;padding:10px 20px;margin-right:12px;\
             background:{color};color:#ffffff;text-decoration:none;border-radius:4px;\
             font-weight:bold\">{label}</a>",
            h(url)
        )
    };
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\n\
         <body style=\"font-family:Arial,Helvetica,sans-serif;color:#1f2328\">\n\
         <h2 style=\"margin-bottom:4px\">Approve {action} of <code>{unit}</code>?</h2>\n\
         <p>live-ci asks you (<b>{voter}</b>) to approve this deployment.</p>\n\
         <table style=\"border-collapse:collapse\">\n{rows}</table>\n{denials}{changes}\
         <p style=\"margin:20px 0\">{approve}{reject}</p>\n\
         <p style=\"color:#59636e;font-size:13px\">Each button opens a confirmation page; nothing is \
         recorded until you press its button. {thresholds} You may change your vote until a \
         decision is reached. The links expire at {expires}.</p>\n\
         </body></html>\n",
        title = h(&f.subject),
        action = f.action,
        unit = h(e.cfg_path.as_str()),
        voter = h(ctx.voter),
        rows = [
            row("Unit", format!("<code>{}</code>", h(e.cfg_path.as_str()))),
            row("Account", h(&e.account_name)),
            row("Pull request", link(&f.pr_url, &format!("#{}", e.pr_id))),
            row("Commit", link(&f.commit_url, &f.short_commit)),
            row("Plan", h(&f.summary)),
            row("Logs", logs),
            row("Execution", h(&e.execution_id)),
        ]
        .concat(),
        changes = html_changes(plan),
        denials = html_denials(plan),
        approve = button(ctx.approve_url, "Approve", "#1a7f37"),
        reject = button(ctx.reject_url, "Reject", "#cf222e"),
        thresholds = h(&f.thresholds),
        expires = h(&f.expires),
    )
}
