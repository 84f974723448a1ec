//! The one error every port hands back across the boundary: the adapter's own
//! error kept whole as the `source` (so a log or a test still sees the SQLSTATE,
//! the AWS error code or the HTTP status), which port failed, and whether trying
//! again can help. The kind travels on to AWS as a stable error name
//! ([`ErrorKind::name`]): the Lambdas' `Diagnostic`s and the ECS task's
//! `SendTaskFailure`, matched by the state machine's `Retry`.

use std::error::Error;

/// The error name of a failure that may succeed when tried again (throttling,
/// a timeout, a 5xx, a dropped connection, a serialization failure).
pub const RETRYABLE_ERROR: &str = "LiveCi.Retryable";

/// The error name of a failure that will fail the same way again (refused
/// input, a missing permission, a 4xx).
pub const PERMANENT_ERROR: &str = "LiveCi.Permanent";

/// Whether a failed call is worth repeating unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Throttling, timeouts, server errors, lost connections, deadlocks.
    Retryable,
    /// The request itself is wrong or not allowed: the same call fails again.
    Permanent,
}

/// AWS error codes that mean "slow down" or "try again", as the AWS SDKs' own
/// retry classifier lists them (`aws-runtime`'s `THROTTLING_ERRORS` and
/// `TRANSIENT_ERRORS`); core has no SDK, so the adapters pass the code in.
const AWS_RETRYABLE_CODES: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "TransactionInProgressException",
    "RequestLimitExceeded",
    "BandwidthLimitExceeded",
    "LimitExceededException",
    "RequestThrottled",
    "SlowDown",
    "PriorRequestNotComplete",
    "EC2ThrottledException",
    "RequestTimeout",
    "RequestTimeoutException",
];

impl ErrorKind {
    /// The stable name AWS sees for this kind (CloudWatch, the DLQ, the
    /// state machine's `Retry`/`Catch`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Retryable => RETRYABLE_ERROR,
            ErrorKind::Permanent => PERMANENT_ERROR,
        }
    }

    /// How an AWS SDK call failed. `sent`: the request was built (an SDK
    /// construction failure is a bug, not weather); `code`: the service's
    /// error code; `status`: the HTTP status when the service answered (none:
    /// a timeout or a connection that failed, which are worth retrying).
    pub fn of_aws_call(sent: bool, code: Option<&str>, status: Option<u16>) -> ErrorKind {
        let retryable = match (code, status) {
            _ if !sent => false,
            (Some(code), _) if AWS_RETRYABLE_CODES.contains(&code) => true,
            (_, Some(status)) => status >= 500 || status == 429,
            (_, None) => true,
        };
        if retryable {
            ErrorKind::Retryable
        } else {
            ErrorKind::Permanent
        }
    }
}

/// An adapter's error that knows whether repeating the call can help. Every
/// port's `Error` implements it, so any port failure becomes a [`PortError`].
pub trait Classify: Error + Send + Sync + 'static {
    /// Whether repeating the failed call can succeed.
    fn kind(&self) -> ErrorKind;
}

impl Classify for std::convert::Infallible {
    fn kind(&self) -> ErrorKind {
        match *self {}
    }
}

/// A failed port call: which port, whether to retry, and the adapter's error
/// as the source.
#[derive(Debug, thiserror::Error)]
#[error("{port}: {source}")]
pub struct PortError {
    kind: ErrorKind,
    port: &'static str,
    #[source]
    source: Box<dyn Error + Send + Sync>,
}

impl PortError {
    /// `port` names the port as the messages show it ("metadb", "parameter
    /// store", …); the kind is the adapter's own classification.
    pub fn new(port: &'static str, error: impl Classify) -> PortError {
        PortError {
            kind: error.kind(),
            port,
            source: Box::new(error),
        }
    }

    /// Whether repeating the call can help, as the adapter classified it.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The port's name as messages show it ("metadb", "parameter store", …).
    pub fn port(&self) -> &'static str {
        self.port
    }

    /// The adapter's error, for callers that must look at it (a test, a log
    /// field); the boundary needs only [`PortError::kind`].
    pub fn adapter_error(&self) -> &(dyn Error + Send + Sync + 'static) {
        self.source.as_ref()
    }
}

impl Classify for PortError {
    fn kind(&self) -> ErrorKind {
        self.kind
    }
}

/// `?` for port calls in code generic over the port: `.port("metadb")?`
/// names the port and keeps the adapter's error as the source.
pub trait PortResultExt<T> {
    /// The error, if any, as a [`PortError`] of the port named `port`.
    fn port(self, port: &'static str) -> Result<T, PortError>;
}

impl<T, E: Classify> PortResultExt<T> for Result<T, E> {
    fn port(self, port: &'static str) -> Result<T, PortError> {
        self.map_err(|e| PortError::new(port, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("adapter said {0:?}")]
    struct Adapter(&'static str, ErrorKind);

    impl Classify for Adapter {
        fn kind(&self) -> ErrorKind {
            self.1
        }
    }

    #[test]
    fn a_port_error_keeps_the_adapter_error_as_its_source() {
        let err: Result<(), _> = Err(Adapter("deadlock", ErrorKind::Retryable));
        let err = err.port("metadb").unwrap_err();
        assert_eq!(err.to_string(), "metadb: adapter said \"deadlock\"");
        assert_eq!(err.kind(), ErrorKind::Retryable);
        let source = err.source().expect("a source");
        assert!(source.downcast_ref::<Adapter>().is_some(), "{source:?}");
    }

    #[test]
    fn aws_failures_are_classified_like_the_sdks_retry_classifier() {
        let kind = ErrorKind::of_aws_call;
        assert_eq!(
            kind(true, Some("ThrottlingException"), Some(400)),
            ErrorKind::Retryable
        );
        assert_eq!(kind(true, None, Some(503)), ErrorKind::Retryable);
        assert_eq!(kind(true, None, Some(429)), ErrorKind::Retryable);
        assert_eq!(kind(true, None, None), ErrorKind::Retryable);
        assert_eq!(
            kind(true, Some("AccessDeniedException"), Some(400)),
            ErrorKind::Permanent
        );
        assert_eq!(
            kind(true, Some("ValidationException"), Some(400)),
            ErrorKind::Permanent
        );
        assert_eq!(kind(false, None, None), ErrorKind::Permanent);
    }

    #[test]
    fn the_names_are_stable() {
        assert_eq!(ErrorKind::Retryable.name(), "LiveCi.Retryable");
        assert_eq!(ErrorKind::Permanent.name(), "LiveCi.Permanent");
    }
}
