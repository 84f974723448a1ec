//! Voting as a voter does: read the approval mails from LocalStack's SES
//! mailbox (`GET /_aws/ses`), take the Approve or Reject link, and press the
//! confirmation page's button (a form POST of the signed token to
//! approval-response's Function URL).

use serde_json::Value;

use crate::{E2eError, Result, function_url_target};

/// One approval mail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalMail {
    /// The mailbox's message id.
    pub id: String,
    /// The recipients.
    pub to: Vec<String>,
    /// The subject line.
    pub subject: String,
    /// The execution the mail asks a vote on.
    pub execution_id: String,
    /// The signed link that approves.
    pub approve_url: String,
    /// The signed link that rejects.
    pub reject_url: String,
}

/// A voter's choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vote {
    /// Follow the approve link.
    Approve,
    /// Follow the reject link.
    Reject,
}

fn line_value<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix(label))
        .map(str::trim)
}

/// Parses a mail's text part: the links and the execution it is about.
pub fn parse_mail(message: &Value) -> Option<ApprovalMail> {
    let text = message["Body"]["text_part"].as_str()?;
    let execution_id = text
        .split("Execution: ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .to_string();
    Some(ApprovalMail {
        id: message["Id"].as_str().unwrap_or_default().to_string(),
        to: message["Destination"]["ToAddresses"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        subject: message["Subject"].as_str().unwrap_or_default().to_string(),
        execution_id,
        approve_url: line_value(text, "Approve:")?.to_string(),
        reject_url: line_value(text, "Reject:")?.to_string(),
    })
}

/// Every approval mail LocalStack holds.
pub async fn mails(http: &reqwest::Client, endpoint: &str) -> Result<Vec<ApprovalMail>> {
    let url = format!("{}/_aws/ses", endpoint.trim_end_matches('/'));
    // Reading the mailbox is idempotent: a connection the local cloud closed
    // under load (seen once in a 100-unit benchmark) is retried, not fatal.
    let mut attempt = 0;
    let response = loop {
        attempt += 1;
        match http.get(&url).send().await {
            Ok(r) => break r,
            Err(e) if attempt < 3 && !e.is_status() => {
                eprintln!("reading the mailbox (attempt {attempt}): {e}; retrying");
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            Err(e) => {
                return Err(E2eError::Http {
                    what: url.clone(),
                    detail: e.to_string(),
                });
            }
        }
    };
    let v: Value = response
        .error_for_status()
        .map_err(|e| E2eError::Http {
            what: url.clone(),
            detail: e.to_string(),
        })?
        .json()
        .await
        .map_err(|e| E2eError::Http {
            what: url.clone(),
            detail: e.to_string(),
        })?;
    Ok(v["messages"]
        .as_array()
        .map(|a| a.iter().filter_map(parse_mail).collect())
        .unwrap_or_default())
}

/// The token of a vote link (`…/?t=<token>`).
fn token(url: &str) -> Option<&str> {
    url.split_once("?t=").map(|(_, t)| t)
}

/// Opens the link (GET: the confirmation page) and presses its button (POST);
/// the page text of the POST.
pub async fn click(http: &reqwest::Client, endpoint: &str, link: &str) -> Result<String> {
    let (url, host) = function_url_target(endpoint, link)?;
    let page = http
        .get(&url)
        .header("host", &host)
        .send()
        .await
        .map_err(|e| E2eError::Http {
            what: "vote link".into(),
            detail: e.to_string(),
        })?;
    if !page.status().is_success() {
        return Err(E2eError::Http {
            what: "vote link (GET)".into(),
            detail: format!(
                "{}: {}",
                page.status(),
                page.text().await.unwrap_or_default()
            ),
        });
    }
    let t = token(link).ok_or_else(|| E2eError::Parse {
        what: "vote link".into(),
        detail: link.to_string(),
    })?;
    let post_url = url.split_once('?').map_or(url.as_str(), |(u, _)| u);
    // A query value and a form value share one encoding: send it as mailed.
    let body = format!("t={t}");
    let resp = http
        .post(post_url)
        .header("host", &host)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .map_err(|e| E2eError::Http {
            what: "vote (POST)".into(),
            detail: e.to_string(),
        })?;
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(E2eError::Http {
            what: "vote (POST)".into(),
            detail: format!("{status}: {text}"),
        });
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_mail_gives_its_links_and_execution() {
        let m = json!({
            "Id": "m1",
            "Destination": {"ToAddresses": ["dev-lead@example.com"]},
            "Subject": "live-ci: approve apply of dev/x (dev) from PR #42?",
            "Body": {"text_part": "Unit: dev/x\n\nApprove:  http://h/?t=AAA\nReject:   http://h/?t=BBB\n\nThe links expire at X. Execution: run-1-dev-x\n"}
        });
        let mail = parse_mail(&m).unwrap();
        assert_eq!(mail.execution_id, "run-1-dev-x");
        assert_eq!(mail.approve_url, "http://h/?t=AAA");
        assert_eq!(mail.reject_url, "http://h/?t=BBB");
        assert_eq!(mail.to, vec!["dev-lead@example.com"]);
        assert_eq!(token(&mail.approve_url), Some("AAA"));
    }
}
