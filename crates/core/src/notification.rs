//! Notifications where teams talk: the events live-ci announces (an approval
//! pending, a run failed, a run finished) and their rendering for each
//! endpoint format (a Slack incoming webhook, a Teams workflow webhook's
//! Adaptive Card, a generic JSON document). The one owner of the event type:
//! publishers build an [`Event`], the notifier Lambda renders and posts it.
//!
//! A notification is read far outside the live-ci account, in a channel
//! anyone in the team reads: it never carries what lets someone act on a
//! deploy. Building an event drops any page link that is not a read-only run
//! page (a vote link's `t=` parameter) and scrubs free text (error messages)
//! of vote links and long token-like strings (a Step Functions task token),
//! so no publisher can leak one by mistake.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::escape::chat;

/// The version of the generic JSON schema ([`Format::Json`]); bumped when a
/// field changes meaning or goes away (new fields may appear).
pub const SCHEMA_VERSION: u32 = 1;

/// What replaces a scrubbed secret in free text.
const REMOVED: &str = "[removed]";

/// Any run of token characters this long is taken for a credential (task
/// tokens are hundreds of characters; paths and error words are shorter).
const TOKEN_RUN: usize = 64;

/// An endpoint's payload format (`notification_format` in the module).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// A Slack incoming webhook's Block Kit message.
    Slack,
    /// A Teams workflow webhook's Adaptive Card.
    Teams,
    /// A generic JSON document (schema [`SCHEMA_VERSION`]), for any receiver.
    Json,
}

impl std::str::FromStr for Format {
    type Err = crate::CoreError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "slack" => Ok(Format::Slack),
            "teams" => Ok(Format::Teams),
            "json" => Ok(Format::Json),
            other => Err(crate::CoreError::NotificationFormat(other.to_string())),
        }
    }
}

/// Plan counts as the approval mail shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Resources to add.
    pub add: u32,
    /// Resources changed in place.
    pub change: u32,
    /// Resources to destroy.
    pub destroy: u32,
}

/// The pull request a run deploys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequest {
    /// The pull request's number.
    pub number: u64,
    /// Its page on GitHub.
    pub url: String,
}

/// One unit that failed and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitError {
    /// The unit's path.
    pub unit: String,
    /// Why it failed; building the event [`scrub`]s vote links and tokens from it.
    pub error: String,
}

/// What happened. Serialized (tag `kind`) it is the SNS message and the
/// generic JSON payload's `event`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// A unit's plan waits for votes.
    ApprovalPending {
        /// The live repository (`owner/name`).
        repository: String,
        /// The run's number, in decimal; empty when unknown.
        run_id: String,
        /// The unit's path.
        unit: String,
        /// The unit's account.
        account: String,
        /// The pull request deployed; `None` for the sweep's run of a trunk head.
        pull_request: Option<PullRequest>,
        /// The plan's counts.
        counts: Counts,
        /// The signed read-only run page; never a vote link.
        page_url: Option<String>,
    },
    /// A run ended with failed units.
    RunFailed {
        /// The live repository (`owner/name`).
        repository: String,
        /// The run's number, in decimal.
        run_id: String,
        /// The pull request deployed; `None` for the sweep's run of a trunk head.
        pull_request: Option<PullRequest>,
        /// The units that failed, with why.
        failed: Vec<UnitError>,
        /// The signed read-only run page.
        page_url: Option<String>,
    },
    /// A run ended with every unit deployed.
    RunFinished {
        /// The live repository (`owner/name`).
        repository: String,
        /// The run's number, in decimal.
        run_id: String,
        /// The pull request deployed; `None` for the sweep's run of a trunk head.
        pull_request: Option<PullRequest>,
        /// How many units the run deployed.
        units: u32,
        /// The signed read-only run page.
        page_url: Option<String>,
    },
    /// A drift check (issue 32 item 4) found units whose cloud differs from
    /// the trunk's code.
    DriftDetected {
        /// The live repository (`owner/name`).
        repository: String,
        /// The trunk commit the check planned.
        commit: String,
        /// Units the check planned (drifted or not).
        checked: u32,
        /// The units that drifted.
        drifted: Vec<DriftedUnit>,
    },
}

/// One drifted unit: its plan's counts and its GitHub issue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriftedUnit {
    /// The unit's path.
    pub unit: String,
    /// Its plan's counts.
    pub counts: Counts,
    /// Its open drift issue's page, if any.
    pub issue_url: Option<String>,
}

/// Whether `arn` reads as an SNS topic's ARN
/// (`arn:<partition>:sns:<region>:<account>:<name>`): the publishers'
/// `NOTIFICATION_TOPIC_ARN` is checked at the cold start, not at the first
/// publish.
pub fn is_sns_topic_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.split(':').collect();
    matches!(parts.as_slice(), ["arn", p, "sns", r, a, name]
        if !p.is_empty() && !r.is_empty() && a.len() == 12
            && a.chars().all(|c| c.is_ascii_digit())
            && !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
}

/// `url` if it may be shown in a channel: https (http only for a loopback
/// host, the local cloud), no vote-link parameter, no free-text secret.
/// An `http://` URL whose host is a loopback address (`127.0.0.1`,
/// `localhost`, `[::1]`), the host followed by a port or a path: the local
/// cloud's test receivers. A look-alike such as `http://127.0.0.1.evil.example/`
/// is not one. Plain http never leaves the machine only when this holds.
pub fn is_loopback_http(url: &str) -> bool {
    ["http://127.0.0.1", "http://localhost", "http://[::1]"]
        .iter()
        .any(|host| {
            url.strip_prefix(host)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([':', '/']))
        })
}

fn safe_link(url: Option<String>) -> Option<String> {
    let url = url?;
    if !(url.starts_with("https://") || is_loopback_http(&url)) {
        return None;
    }
    let query = url.split_once('?').map(|(_, q)| q).unwrap_or("");
    let vote = query
        .split(['&', ';'])
        .any(|p| p == "t" || p.starts_with("t=") || p.starts_with("task_token"));
    if vote || url.contains(char::is_whitespace) {
        None
    } else {
        Some(url)
    }
}

/// Free text (an error message) with every URL carrying a vote-link
/// parameter and every long token-like run replaced by `[removed]`.
pub fn scrub(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let bad_url = word.contains("://") && safe_link(Some(word.clone())).is_none();
        if bad_url && word.contains('?') {
            out.push_str(REMOVED);
        } else {
            out.push_str(&scrub_runs(word));
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_whitespace() {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

fn scrub_runs(word: &str) -> String {
    let token_char = |c: char| c.is_ascii_alphanumeric() || "+/=_-.%".contains(c);
    let mut out = String::with_capacity(word.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() >= TOKEN_RUN {
            out.push_str(REMOVED);
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in word.chars() {
        if token_char(c) {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

impl Event {
    /// The event as it may leave: links checked, free text scrubbed. Every
    /// rendering goes through it; publishers may call it too.
    pub fn sanitized(self) -> Event {
        let pr = |p: Option<PullRequest>| {
            p.map(|p| PullRequest {
                url: safe_link(Some(p.url)).unwrap_or_default(),
                number: p.number,
            })
        };
        match self {
            Event::ApprovalPending {
                repository,
                run_id,
                unit,
                account,
                pull_request,
                counts,
                page_url,
            } => Event::ApprovalPending {
                repository: scrub(&repository),
                run_id: scrub(&run_id),
                unit: scrub(&unit),
                account: scrub(&account),
                pull_request: pr(pull_request),
                counts,
                page_url: safe_link(page_url),
            },
            Event::RunFailed {
                repository,
                run_id,
                pull_request,
                failed,
                page_url,
            } => Event::RunFailed {
                repository: scrub(&repository),
                run_id: scrub(&run_id),
                pull_request: pr(pull_request),
                failed: failed
                    .into_iter()
                    .map(|f| UnitError {
                        unit: scrub(&f.unit),
                        error: scrub(&f.error),
                    })
                    .collect(),
                page_url: safe_link(page_url),
            },
            Event::RunFinished {
                repository,
                run_id,
                pull_request,
                units,
                page_url,
            } => Event::RunFinished {
                repository: scrub(&repository),
                run_id: scrub(&run_id),
                pull_request: pr(pull_request),
                units,
                page_url: safe_link(page_url),
            },
            Event::DriftDetected {
                repository,
                commit,
                checked,
                drifted,
            } => Event::DriftDetected {
                repository: scrub(&repository),
                commit: scrub(&commit),
                checked,
                drifted: drifted
                    .into_iter()
                    .map(|d| DriftedUnit {
                        unit: scrub(&d.unit),
                        counts: d.counts,
                        issue_url: safe_link(d.issue_url),
                    })
                    .collect(),
            },
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Event::ApprovalPending { .. } => "approval_pending",
            Event::RunFailed { .. } => "run_failed",
            Event::RunFinished { .. } => "run_finished",
            Event::DriftDetected { .. } => "drift_detected",
        }
    }
}

/// The most failed units listed by name; the rest are counted (chat
/// messages have size limits, the run page lists them all).
const MAX_LISTED: usize = 10;
/// An error message's longest shown prefix, in characters.
const MAX_ERROR_CHARS: usize = 300;

fn clip(s: &str) -> String {
    if s.chars().count() <= MAX_ERROR_CHARS {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(MAX_ERROR_CHARS).collect();
        c.push('…');
        c
    }
}

/// One line of plain, unescaped parts of a message; each format escapes
/// the user-controlled ones.
struct Lines {
    title: String,
    /// (label, user-controlled value)
    facts: Vec<(&'static str, String)>,
    /// user-controlled lines (failed units)
    items: Vec<String>,
    links: Vec<(&'static str, String)>,
}

fn lines(e: &Event) -> Lines {
    match e {
        Event::ApprovalPending {
            repository,
            run_id,
            unit,
            account,
            pull_request,
            counts,
            page_url,
        } => run_lines(
            "Approval pending",
            vec![
                ("Repository", repository.clone()),
                ("Unit", unit.clone()),
                ("Account", account.clone()),
                (
                    "Plan",
                    format!(
                        "{} to add, {} to change, {} to destroy",
                        counts.add, counts.change, counts.destroy
                    ),
                ),
                ("Run", run_id.clone()),
            ],
            vec![],
            pull_request,
            page_url,
        ),
        Event::RunFailed {
            repository,
            run_id,
            pull_request,
            failed,
            page_url,
        } => run_lines(
            "Run failed",
            vec![
                ("Repository", repository.clone()),
                ("Run", run_id.clone()),
                ("Failed units", failed.len().to_string()),
            ],
            listed(
                failed
                    .iter()
                    .map(|f| format!("{}: {}", f.unit, clip(&f.error))),
                failed.len(),
                "see the run page",
            ),
            pull_request,
            page_url,
        ),
        Event::RunFinished {
            repository,
            run_id,
            pull_request,
            units,
            page_url,
        } => run_lines(
            "Run finished",
            vec![
                ("Repository", repository.clone()),
                ("Run", run_id.clone()),
                ("Units deployed", units.to_string()),
            ],
            vec![],
            pull_request,
            page_url,
        ),
        Event::DriftDetected {
            repository,
            commit,
            checked,
            drifted,
        } => drift_lines(repository, commit, *checked, drifted),
    }
}

/// The lines of an event about one run: its own facts, then the pull
/// request's number when there is one, and the links to the run.
fn run_lines(
    title: &str,
    mut facts: Vec<(&'static str, String)>,
    items: Vec<String>,
    pull_request: &Option<PullRequest>,
    page_url: &Option<String>,
) -> Lines {
    facts.extend(pr_fact(pull_request));
    Lines {
        title: title.into(),
        facts,
        items,
        links: run_links(pull_request, page_url),
    }
}

/// The pull request's number, as a fact, when the event has one.
fn pr_fact(p: &Option<PullRequest>) -> Option<(&'static str, String)> {
    p.as_ref()
        .map(|p| ("Pull request", format!("#{}", p.number)))
}

/// The run page, then the pull request, as links.
fn run_links(p: &Option<PullRequest>, page: &Option<String>) -> Vec<(&'static str, String)> {
    let mut links = Vec::new();
    if let Some(page) = page {
        links.push(("Open the run page", page.clone()));
    }
    if let Some(p) = p.as_ref().filter(|p| !p.url.is_empty()) {
        links.push(("Pull request", p.url.clone()));
    }
    links
}

/// The first [`MAX_LISTED`] of `total` items, and how many more, and where
/// to see them.
fn listed(items: impl Iterator<Item = String>, total: usize, see: &str) -> Vec<String> {
    let mut out: Vec<String> = items.take(MAX_LISTED).collect();
    if total > MAX_LISTED {
        out.push(format!("and {} more ({see})", total - MAX_LISTED));
    }
    out
}

fn drift_lines(repository: &str, commit: &str, checked: u32, drifted: &[DriftedUnit]) -> Lines {
    Lines {
        title: "Drift detected".into(),
        facts: vec![
            ("Repository", repository.to_string()),
            ("Trunk commit", commit.to_string()),
            ("Units checked", checked.to_string()),
            ("Drifted units", drifted.len().to_string()),
        ],
        items: listed(
            drifted.iter().map(|d| {
                format!(
                    "{}: {} to add, {} to change, {} to destroy",
                    d.unit, d.counts.add, d.counts.change, d.counts.destroy
                )
            }),
            drifted.len(),
            "see the drift issues",
        ),
        // The first issues as links (user-controlled only through the unit,
        // which is not part of a GitHub issue URL).
        links: drifted
            .iter()
            .filter_map(|d| d.issue_url.clone())
            .take(MAX_LISTED)
            .map(|url| ("Drift issue", url))
            .collect(),
    }
}

/// The request body for `format` (sanitized first).
pub fn render(event: &Event, format: Format) -> Value {
    let event = event.clone().sanitized();
    match format {
        Format::Json => json!({
            "schema": "live-ci.notification",
            "version": SCHEMA_VERSION,
            "event": event,
        }),
        Format::Slack => slack(&event),
        Format::Teams => teams(&event),
    }
}

/// A link's address inside Slack's `<url|label>`: the characters that would
/// end it escaped (a checked link has no whitespace).
fn slack_url(url: &str) -> String {
    url.replace('&', "&amp;")
        .replace('<', "%3C")
        .replace('>', "%3E")
        .replace('|', "%7C")
}

fn slack(e: &Event) -> Value {
    let l = lines(e);
    let headline = format!("live-ci: {}", l.title);
    let facts: Vec<Value> = l
        .facts
        .iter()
        .map(|(k, v)| json!({"type": "mrkdwn", "text": format!("*{k}*\n{}", chat::slack(v))}))
        .collect();
    let mut blocks = vec![
        json!({"type": "header", "text": {"type": "plain_text", "text": headline}}),
        json!({"type": "section", "fields": facts}),
    ];
    if !l.items.is_empty() {
        let text = l
            .items
            .iter()
            .map(|i| format!("• {}", chat::slack(i)))
            .collect::<Vec<_>>()
            .join("\n");
        blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": text}}));
    }
    if !l.links.is_empty() {
        let text = l
            .links
            .iter()
            .map(|(label, url)| format!("<{}|{label}>", slack_url(url)))
            .collect::<Vec<_>>()
            .join("  ·  ");
        blocks.push(json!({"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}));
    }
    // `text` is the fallback of notifications and screen readers.
    let summary = l
        .facts
        .iter()
        .map(|(k, v)| format!("{k}: {}", chat::slack(v)))
        .collect::<Vec<_>>()
        .join(", ");
    json!({
        "text": format!("{headline} ({summary})"),
        "blocks": blocks,
        "unfurl_links": false,
        "unfurl_media": false,
    })
}

fn teams(e: &Event) -> Value {
    let l = lines(e);
    let facts: Vec<Value> = l
        .facts
        .iter()
        .map(|(k, v)| json!({"title": k, "value": chat::teams(v)}))
        .collect();
    let mut body = vec![
        json!({"type": "TextBlock", "size": "Large", "weight": "Bolder", "wrap": true,
               "text": format!("live-ci: {}", l.title)}),
        json!({"type": "FactSet", "facts": facts}),
    ];
    for item in &l.items {
        body.push(json!({"type": "TextBlock", "wrap": true, "text": chat::teams(item)}));
    }
    let actions: Vec<Value> = l
        .links
        .iter()
        .map(|(label, url)| json!({"type": "Action.OpenUrl", "title": label, "url": url}))
        .collect();
    json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": {
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard",
                "version": "1.4",
                "body": body,
                "actions": actions,
            }
        }]
    })
}

impl Event {
    /// The event's kind as the generic JSON's `event.kind` spells it (logs).
    pub fn kind_name(&self) -> &'static str {
        self.kind()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TASK_TOKEN: &str = "AQCEAAAAKgAAAAMAAAAAAAAAAc2Vzc2lvbi10b2tlbi1vZi1hLXN0ZXAtZnVuY3Rpb25zLXRhc2stdG9rZW4tbG9uZy1lbm91Z2g=";
    const VOTE: &str = "https://abc.lambda-url.us-east-1.on.aws/?t=djEuc2lnbmVkLnZvdGU&v=approve";
    const PAGE: &str = "https://abc.lambda-url.us-east-1.on.aws/?r=djEucnVuLnBhZ2U";

    #[test]
    fn plain_http_links_only_to_a_real_loopback_host() {
        for ok in [
            "http://127.0.0.1:4566/page",
            "http://localhost/x",
            "http://[::1]:8080",
        ] {
            assert!(is_loopback_http(ok), "{ok}");
            assert_eq!(safe_link(Some(ok.into())).as_deref(), Some(ok));
        }
        for bad in [
            "http://127.0.0.1.evil.example/page",
            "http://localhost.evil.example/",
            "http://localhostx:80/",
            "http://example.com/",
        ] {
            assert!(!is_loopback_http(bad), "{bad}");
            assert_eq!(safe_link(Some(bad.into())), None, "{bad}");
        }
    }

    fn pending(page: &str) -> Event {
        Event::ApprovalPending {
            repository: "acme/live".into(),
            run_id: "run-42".into(),
            unit: "prod/us-east-1/<!channel>*vpc*".into(),
            account: "prod & co".into(),
            pull_request: Some(PullRequest {
                number: 7,
                url: "https://github.com/acme/live/pull/7".into(),
            }),
            counts: Counts {
                add: 2,
                change: 1,
                destroy: 0,
            },
            page_url: Some(page.into()),
        }
    }

    /// A failure whose message reads like the approval mail: it carries a
    /// vote link and a task token, which must never reach a channel.
    fn failed() -> Event {
        Event::RunFailed {
            repository: "acme/live".into(),
            run_id: "run-42".into(),
            pull_request: None,
            failed: vec![UnitError {
                unit: "prod/db".into(),
                error: format!("Approve: {VOTE}\nReject: {VOTE}\ntask token {TASK_TOKEN} expired"),
            }],
            page_url: Some(PAGE.into()),
        }
    }

    fn all_formats(e: &Event) -> Vec<String> {
        [Format::Slack, Format::Teams, Format::Json]
            .into_iter()
            .map(|f| render(e, f).to_string())
            .collect()
    }

    #[test]
    fn no_vote_link_or_task_token_ever_leaves() {
        for e in [pending(VOTE), failed()] {
            for body in all_formats(&e) {
                assert!(!body.contains("t=djE"), "vote link in {body}");
                assert!(!body.contains(&TASK_TOKEN[..40]), "task token in {body}");
            }
        }
        // the read-only run page does
        for body in all_formats(&pending(PAGE)) {
            assert!(body.contains("r=djEucnVuLnBhZ2U"), "{body}");
        }
        assert_eq!(safe_link(Some("http://evil.example/?r=x".into())), None);
        assert_eq!(safe_link(Some(format!("{PAGE}&t=x"))), None);
    }

    #[test]
    fn slack_payload_escapes_user_text() {
        let v = render(&pending(PAGE), Format::Slack);
        let s = v.to_string();
        assert!(!s.contains("<!channel>"), "{s}");
        assert!(s.contains("&lt;!channel&gt;"), "{s}");
        assert!(s.contains("prod &amp; co"), "{s}");
        assert!(s.contains("2 to add, 1 to change, 0 to destroy"), "{s}");
        assert_eq!(v["blocks"][0]["text"]["text"], "live-ci: Approval pending");
        assert_eq!(
            v["blocks"][2]["elements"][0]["text"],
            format!(
                "<{}|Open the run page>  ·  <https://github.com/acme/live/pull/7|Pull request>",
                PAGE
            )
        );
    }

    #[test]
    fn teams_payload_is_an_adaptive_card_with_escaped_text() {
        let v = render(&pending(PAGE), Format::Teams);
        let card = &v["attachments"][0];
        assert_eq!(
            card["contentType"],
            "application/vnd.microsoft.card.adaptive"
        );
        let facts = card["content"]["body"][1]["facts"].as_array().unwrap();
        let unit = facts.iter().find(|f| f["title"] == "Unit").unwrap();
        assert_eq!(
            unit["value"],
            "prod/us\\-east\\-1/\\<\\!channel\\>\\*vpc\\*"
        );
        assert_eq!(card["content"]["actions"][0]["url"], PAGE);
    }

    #[test]
    fn json_payload_follows_the_documented_schema() {
        let v = render(&failed(), Format::Json);
        assert_eq!(v["schema"], "live-ci.notification");
        assert_eq!(v["version"], SCHEMA_VERSION);
        assert_eq!(v["event"]["kind"], "run_failed");
        assert_eq!(v["event"]["failed"][0]["unit"], "prod/db");
        assert_eq!(
            v["event"]["failed"][0]["error"],
            "Approve: [removed]\nReject: [removed]\ntask token [removed] expired"
        );
        assert_eq!(v["event"]["page_url"], PAGE);
        // the SNS message round-trips
        let e: Event = serde_json::from_value(v["event"].clone()).unwrap();
        assert_eq!(e.kind_name(), "run_failed");
    }

    #[test]
    fn many_failures_are_counted_not_listed() {
        let e = Event::RunFailed {
            repository: "r".into(),
            run_id: "1".into(),
            pull_request: None,
            failed: (0..25)
                .map(|i| UnitError {
                    unit: format!("u{i}"),
                    error: "x".repeat(1000),
                })
                .collect(),
            page_url: None,
        };
        let s = render(&e, Format::Slack).to_string();
        assert!(s.contains("and 15 more"), "{s}");
        assert!(s.len() < 8000, "{}", s.len());
    }

    #[test]
    fn topic_arns_are_checked() {
        assert!(is_sns_topic_arn(
            "arn:aws:sns:us-east-1:000000000000:live-ci-notifications"
        ));
        for bad in [
            "live-ci-notifications",
            "arn:aws:sqs:us-east-1:000000000000:q",
            "arn:aws:sns:us-east-1:0000:t",
            "arn:aws:sns:us-east-1:000000000000:",
            "arn:aws:sns:us-east-1:000000000000:t:sub",
        ] {
            assert!(!is_sns_topic_arn(bad), "{bad}");
        }
    }

    #[test]
    fn formats_parse_and_refuse_others() {
        assert_eq!("slack".parse::<Format>(), Ok(Format::Slack));
        let err = "discord".parse::<Format>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "notification format \"discord\" is not slack, teams or json"
        );
    }

    #[test]
    fn drift_is_rendered_escaped_in_every_format() {
        let event = Event::DriftDetected {
            repository: "acme/live".into(),
            commit: "0123456789abcdef".into(),
            checked: 2,
            drifted: vec![DriftedUnit {
                unit: "dev/<!channel>*x*".into(),
                counts: Counts {
                    add: 0,
                    change: 1,
                    destroy: 0,
                },
                issue_url: Some("https://github.com/acme/live/issues/5".into()),
            }],
        };
        let slack = render(&event, Format::Slack).to_string();
        assert!(!slack.contains("<!channel>"), "{slack}");
        assert!(slack.contains("dev/&lt;!channel&gt;"), "{slack}");
        assert!(slack.contains("<https://github.com/acme/live/issues/5|Drift issue>"));
        let teams = render(&event, Format::Teams).to_string();
        let escaped = Value::String(chat::teams("dev/<!channel>*x*")).to_string();
        assert!(teams.contains(escaped.trim_matches('"')), "{teams}");
        assert!(!teams.contains("*x*"), "{teams}");
        let json = render(&event, Format::Json);
        assert_eq!(json["event"]["kind"], "drift_detected");
        assert_eq!(json["event"]["drifted"][0]["unit"], "dev/<!channel>*x*");
        assert_eq!(json["event"]["drifted"][0]["counts"]["change"], 1);
        // A vote-like link never leaves.
        let leaky = Event::DriftDetected {
            repository: "acme/live".into(),
            commit: "0123456".into(),
            checked: 1,
            drifted: vec![DriftedUnit {
                unit: "dev/a".into(),
                counts: Counts::default(),
                issue_url: Some("https://x.example/vote?t=abc".into()),
            }],
        };
        assert_eq!(
            render(&leaky, Format::Json)["event"]["drifted"][0]["issue_url"],
            Value::Null
        );
    }
}
