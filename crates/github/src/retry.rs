//! When and how long to wait before retrying a GitHub request.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

/// Exponential backoff for 5xx answers, and GitHub's own waits for rate limits
/// (`retry-after`, or `x-ratelimit-reset` once `x-ratelimit-remaining` is 0).
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The first backoff; doubles each retry.
    pub base_delay: Duration,
    /// No single wait is longer than this (a rate-limit reset an hour away
    /// fails the call instead of holding a Lambda until it times out).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}

/// Why an answer may be retried, and after how long.
pub(crate) fn retry_delay(
    policy: &RetryPolicy,
    attempt: u32,
    status: StatusCode,
    headers: &HeaderMap,
    body: &str,
    now_unix: u64,
) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let backoff = || {
        policy
            .base_delay
            .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)))
    };
    let rate_limited = status == StatusCode::TOO_MANY_REQUESTS
        || (status == StatusCode::FORBIDDEN
            && (header("retry-after").is_some()
                || header("x-ratelimit-remaining") == Some("0")
                || body.to_ascii_lowercase().contains("secondary rate limit")));
    let wait = if rate_limited {
        if let Some(secs) = header("retry-after").and_then(|v| v.trim().parse::<u64>().ok()) {
            Duration::from_secs(secs)
        } else if header("x-ratelimit-remaining") == Some("0")
            && let Some(reset) = header("x-ratelimit-reset").and_then(|v| v.parse::<u64>().ok())
        {
            Duration::from_secs(reset.saturating_sub(now_unix).max(1))
        } else {
            // GitHub's advice for a secondary limit without headers: wait a minute;
            // backoff stands in for it, capped by max_delay.
            backoff().max(Duration::from_secs(1).min(policy.max_delay))
        }
    } else if status.is_server_error() {
        backoff()
    } else {
        return None;
    };
    if attempt >= policy.max_attempts || wait > policy.max_delay {
        return None;
    }
    Some(wait)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(120),
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn server_errors_back_off_exponentially_until_attempts_run_out() {
        let p = policy();
        let h = HeaderMap::new();
        let d = |a| retry_delay(&p, a, StatusCode::BAD_GATEWAY, &h, "", 0);
        assert_eq!(d(1), Some(Duration::from_millis(100)));
        assert_eq!(d(2), Some(Duration::from_millis(200)));
        assert_eq!(d(3), Some(Duration::from_millis(400)));
        assert_eq!(d(4), None);
        assert_eq!(retry_delay(&p, 1, StatusCode::NOT_FOUND, &h, "", 0), None);
        assert_eq!(
            retry_delay(&p, 1, StatusCode::UNPROCESSABLE_ENTITY, &h, "", 0),
            None
        );
    }

    #[test]
    fn rate_limits_wait_as_github_says() {
        let p = policy();
        let h = headers(&[("retry-after", "7")]);
        assert_eq!(
            retry_delay(&p, 1, StatusCode::FORBIDDEN, &h, "", 0),
            Some(Duration::from_secs(7))
        );
        let h = headers(&[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1030"),
        ]);
        assert_eq!(
            retry_delay(&p, 1, StatusCode::FORBIDDEN, &h, "", 1000),
            Some(Duration::from_secs(30))
        );
        // a reset further away than max_delay fails now rather than hanging
        let h = headers(&[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "9000"),
        ]);
        assert_eq!(
            retry_delay(&p, 1, StatusCode::FORBIDDEN, &h, "", 1000),
            None
        );
        let body = r#"{"message":"You have exceeded a secondary rate limit."}"#;
        assert!(retry_delay(&p, 1, StatusCode::FORBIDDEN, &HeaderMap::new(), body, 0).is_some());
        // a plain 403 (no permission) is not retried
        assert_eq!(
            retry_delay(
                &p,
                1,
                StatusCode::FORBIDDEN,
                &HeaderMap::new(),
                "Resource not accessible",
                0
            ),
            None
        );
    }
}
