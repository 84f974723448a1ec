//! The notifier Lambda: each SNS record on the notifications topic is one
//! [`Event`], rendered for the configured endpoint format
//! ([`live_ci_core::notification::render`]) and POSTed to the endpoint.
//!
//! The endpoint URL is a secret (anyone holding a Slack or Teams webhook URL
//! can post to the channel): it is never logged, and errors carry the status
//! code only (reqwest's errors are stripped of their URL). A 429 or 5xx is
//! retried in process a bounded number of times with back-off, honouring
//! `Retry-After`; after that the invocation fails and Lambda's asynchronous
//! retries (SNS invokes asynchronously) take over. Notifications are
//! advisory: nothing here can hold up a deploy.

use std::time::Duration;

use live_ci_boot::settings::{Env, SettingsError};
use live_ci_core::notification::{Event, Format, render};
use serde::Deserialize;

/// Every environment variable [`Config::from_lookup`] reads, for the
/// Terraform module's contract test.
pub const ENV_VARS: &[&str] = &["NOTIFICATION_FORMAT", "NOTIFICATION_URL_SSM_KEY"];

/// The IAM actions the binary calls: the URL parameter, a SecureString.
pub const AWS_ACTIONS: &[&str] = &["ssm:GetParameter", "kms:Decrypt"];

/// What can go wrong. No variant holds the endpoint URL.
#[derive(Debug, thiserror::Error)]
pub enum NotifierError {
    /// The URL is refused; `reason` never quotes it.
    #[error("notification url {0}")]
    Url(&'static str),
    /// The endpoint kept answering with a non-success status.
    #[error("endpoint answered {status} after {attempts} attempts")]
    Status {
        /// The last HTTP status code.
        status: u16,
        /// Attempts made, the first included.
        attempts: u32,
    },
    /// The endpoint could not be reached (or the HTTP client not built).
    #[error("endpoint unreachable after {attempts} attempts: {message}")]
    Transport {
        /// Attempts made, the first included; 0 when the client could not be built.
        attempts: u32,
        /// reqwest's error with the URL stripped.
        message: String,
    },
}

/// SNS's asynchronous invoke retries any failure, so the runtime names
/// every error `NotifierError`, as it always has; the kind says what a retry
/// can help (an endpoint's 429 or 5xx, or an unreachable one).
impl live_ci_boot::Classified for NotifierError {
    fn kind(&self) -> live_ci_core::port::ErrorKind {
        use live_ci_core::port::ErrorKind;
        match self {
            NotifierError::Transport { .. } => ErrorKind::Retryable,
            NotifierError::Status { status, .. } if *status == 429 || *status >= 500 => {
                ErrorKind::Retryable
            }
            _ => ErrorKind::Permanent,
        }
    }

    fn error_type(&self) -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("NotifierError")
    }
}

/// The Lambda's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The endpoint's message format (`NOTIFICATION_FORMAT`).
    pub format: Format,
    /// The SecureString parameter holding the endpoint URL.
    pub url_param: String,
}

impl Config {
    /// Reads the process environment ([`ENV_VARS`]), naming every problem at once.
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The same, from any lookup (tests pass a map); every problem is named.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let mut env = Env::new(get);
        let format = match env.required("NOTIFICATION_FORMAT") {
            Some(_) => env.parsed("NOTIFICATION_FORMAT", str::parse::<Format>),
            None => None,
        };
        let url_param = env.required("NOTIFICATION_URL_SSM_KEY");
        let config = (|| {
            Some(Config {
                format: format??,
                url_param: url_param?,
            })
        })();
        env.finish(config)
    }
}

/// Checks the endpoint URL: https, or http to a loopback address only (the
/// local cloud's test endpoint; a loopback address reaches nothing outside
/// the Lambda, so allowing it cannot send a notification in clear text over
/// a network). The module's placeholder is refused with a clear message.
pub fn check_url(url: &str) -> Result<(), NotifierError> {
    let url = url.trim();
    if url.is_empty() || url.starts_with("placeholder") || url.contains("PLACEHOLDER") {
        return Err(NotifierError::Url(
            "parameter still holds the module's placeholder: put the endpoint's https url in it",
        ));
    }
    if url.contains(char::is_whitespace) {
        return Err(NotifierError::Url("contains whitespace"));
    }
    if url.starts_with("https://") {
        return Ok(());
    }
    if live_ci_core::notification::is_loopback_http(url) {
        return Ok(());
    }
    Err(NotifierError::Url(
        "is not https (http is allowed to a loopback address only)",
    ))
}

/// Bounded in-process retries.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    /// Attempts in all (the first included).
    pub attempts: u32,
    /// The first back-off; doubled each time.
    pub base: Duration,
    /// The longest wait, `Retry-After` included (a Lambda has a timeout).
    pub max_wait: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            attempts: 4,
            base: Duration::from_millis(500),
            max_wait: Duration::from_secs(10),
        }
    }
}

/// An SNS event as Lambda delivers it (the fields used).
#[derive(Debug, Clone, Deserialize)]
pub struct SnsEvent {
    /// The records delivered in one invocation.
    #[serde(rename = "Records")]
    pub records: Vec<SnsRecord>,
}

/// One record of an [`SnsEvent`].
#[derive(Debug, Clone, Deserialize)]
pub struct SnsRecord {
    /// The SNS notification the record carries.
    #[serde(rename = "Sns")]
    pub sns: SnsMessage,
}

/// The SNS notification of an [`SnsRecord`] (the fields used).
#[derive(Debug, Clone, Deserialize)]
pub struct SnsMessage {
    /// The published message: a JSON-serialised [`Event`].
    #[serde(rename = "Message")]
    pub message: String,
}

/// Posts notifications to one endpoint.
#[derive(Debug, Clone)]
pub struct Notifier {
    http: reqwest::Client,
    format: Format,
    url: String,
    retry: Retry,
}

impl Notifier {
    /// A notifier posting `format` bodies to `url`, refused as [`check_url`]
    /// refuses it; redirects are not followed, each request times out after 10 s.
    pub fn new(format: Format, url: &str) -> Result<Self, NotifierError> {
        check_url(url)?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            // A redirect would follow the secret URL's answer anywhere.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| NotifierError::Transport {
                attempts: 0,
                message: e.without_url().to_string(),
            })?;
        Ok(Notifier {
            http,
            format,
            url: url.trim().to_string(),
            retry: Retry::default(),
        })
    }

    /// Replaces the default retries (4 attempts, 500 ms doubling, 10 s at most).
    pub fn with_retry(mut self, retry: Retry) -> Self {
        self.retry = retry;
        self
    }

    /// Posts every record; the first failure fails the invocation (after
    /// the others were tried), so Lambda retries it.
    pub async fn handle(&self, event: &SnsEvent) -> Result<(), NotifierError> {
        let mut first_err = None;
        for (index, record) in event.records.iter().enumerate() {
            let result = match serde_json::from_str::<Event>(&record.sns.message) {
                // A message that is not an event never becomes one: no retry.
                Err(e) => {
                    tracing::error!(index, error = %e, "sns message is not a notification event; dropped");
                    continue;
                }
                Ok(ev) => self.send(&ev).await,
            };
            if let Err(e) = result {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Posts one event with bounded retries.
    pub async fn send(&self, event: &Event) -> Result<(), NotifierError> {
        let body = render(event, self.format);
        let kind = event.kind_name();
        let mut wait = self.retry.base;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome = self.http.post(&self.url).json(&body).send().await;
            let (retryable, after, err) = match outcome {
                Ok(resp) if resp.status().is_success() => {
                    tracing::info!(
                        kind,
                        status = resp.status().as_u16(),
                        attempt,
                        "notification delivered"
                    );
                    return Ok(());
                }
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let after = retry_after(resp.headers());
                    let retryable = status == 429 || status >= 500;
                    tracing::warn!(
                        kind,
                        status,
                        attempt,
                        retryable,
                        "notification endpoint refused"
                    );
                    (
                        retryable,
                        after,
                        NotifierError::Status {
                            status,
                            attempts: attempt,
                        },
                    )
                }
                Err(e) => {
                    let message = e.without_url().to_string();
                    tracing::warn!(kind, attempt, error = %message, "notification endpoint unreachable");
                    (
                        true,
                        None,
                        NotifierError::Transport {
                            attempts: attempt,
                            message,
                        },
                    )
                }
            };
            if !retryable || attempt >= self.retry.attempts {
                tracing::error!(kind, attempts = attempt, error = %err, "notification not delivered");
                return Err(err);
            }
            let sleep = after.unwrap_or(wait).min(self.retry.max_wait);
            tokio::time::sleep(sleep).await;
            wait = wait.saturating_mul(2);
        }
    }
}

/// `Retry-After` in seconds (the HTTP-date form is rare from chat webhooks
/// and falls back to the back-off).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn urls_are_https_or_loopback_http() {
        assert!(check_url("https://hooks.slack.com/services/T/B/x").is_ok());
        assert!(check_url("http://127.0.0.1:8080/hook").is_ok());
        for bad in [
            "http://hooks.slack.com/x",
            "http://127.0.0.1.evil.com/x",
            "ftp://x",
            "placeholder",
            "",
        ] {
            let e = check_url(bad).unwrap_err().to_string();
            assert!(bad.len() < 12 || !e.contains(bad), "{e}");
        }
    }

    /// The runtime names every failure `NotifierError`, whatever its kind.
    #[test]
    fn the_runtime_names_every_error_notifier_error() {
        let d = live_ci_boot::diagnostic(&NotifierError::Status {
            status: 503,
            attempts: 3,
        });
        assert_eq!(d.error_type, "NotifierError");
        assert_eq!(d.error_message, "endpoint answered 503 after 3 attempts");
        let d = live_ci_boot::diagnostic(&NotifierError::Url("is not https"));
        assert_eq!(d.error_type, "NotifierError");
    }

    #[test]
    fn config_reads_format_and_parameter() {
        let env = |k: &str| match k {
            "NOTIFICATION_FORMAT" => Some("teams".to_string()),
            "NOTIFICATION_URL_SSM_KEY" => Some("/live-ci/notification-url".to_string()),
            _ => None,
        };
        let c = Config::from_lookup(env).unwrap();
        assert_eq!(c.format, Format::Teams);
        let e = Config::from_lookup(|k| {
            if k == "NOTIFICATION_FORMAT" {
                Some("irc".into())
            } else {
                None
            }
        })
        .unwrap_err();
        // Both problems at once: the format named and quoted, the parameter missing.
        assert_eq!(
            e.to_string(),
            "environment variable NOTIFICATION_FORMAT=\"irc\": notification format \"irc\" is not slack, teams or json; \
             environment variable NOTIFICATION_URL_SSM_KEY is not set"
        );
    }
}
