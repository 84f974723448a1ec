//! The mailer port (SES v2 in AWS): one message to one recipient, with a
//! plain-text and an HTML part, and the address check applied before sending.

use std::future::Future;

/// One e-mail to one recipient.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email {
    /// The sender's address (a verified SES identity).
    pub from: String,
    /// The one recipient's address.
    pub to: String,
    /// The subject line.
    pub subject: String,
    /// The plain-text part, for clients that do not render HTML.
    pub text: String,
    /// The HTML part, for clients that render HTML.
    pub html: String,
}

/// Sends mail.
pub trait Mailer: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: crate::port::Classify;

    /// Sends `email`; returns the service's message id.
    fn send(&self, email: &Email) -> impl Future<Output = Result<String, Self::Error>> + Send;
}

/// Why an address is refused, or `None` for a plausible one: one `@`, a local
/// part and a dotted domain, no spaces, control characters or the
/// punctuation that would let a value add recipients or headers (`,;<>"`).
/// Deliverability is SES's business; this catches typos and injections early.
pub fn address_problem(address: &str) -> Option<&'static str> {
    if address.is_empty() {
        return Some("is empty");
    }
    if address.len() > 254 {
        return Some("is longer than 254 characters");
    }
    if address
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || ",;<>\"()[]\\".contains(c))
    {
        return Some("contains spaces, control characters or one of ,;<>\"()[]\\");
    }
    let Some((local, domain)) = address.split_once('@') else {
        return Some("has no @");
    };
    if domain.contains('@') {
        return Some("has more than one @");
    }
    if local.is_empty() || local.len() > 64 {
        return Some("has an empty or over-long local part");
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if labels.len() < 2 || labels.iter().any(|l| l.is_empty() || l.len() > 63) {
        return Some("has no valid dotted domain");
    }
    if labels.iter().any(|l| {
        l.starts_with('-')
            || l.ends_with('-')
            || !l.chars().all(|c| c.is_alphanumeric() || c == '-')
    }) {
        return Some("has an invalid domain label");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plausible_addresses_pass_and_typos_and_injections_do_not() {
        for ok in [
            "a@example.com",
            "first.last+ci@sub.example.co.uk",
            "x@xn--bcher-kva.example",
        ] {
            assert_eq!(address_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            "alice",
            "alice@",
            "@example.com",
            "alice@localhost",
            "alice@example..com",
            "a@b@example.com",
            "alice @example.com",
            "alice@example.com, eve@example.com",
            "Alice <alice@example.com>",
            "alice@example.com\r\nBcc: eve@example.com",
            "alice@-example.com",
        ] {
            assert!(address_problem(bad).is_some(), "{bad:?}");
        }
    }
}
