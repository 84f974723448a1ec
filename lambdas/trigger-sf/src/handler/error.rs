//! Why an invocation failed, and the name AWS sees for it.

use live_ci_core::port::{ErrorKind, PortError};

/// Why an invocation failed; its [`kind`](TriggerError::kind) tells AWS
/// whether a retry can help.
#[derive(Debug, thiserror::Error)]
pub enum TriggerError {
    /// A payload that is none of the invocations trigger_sf serves, or a
    /// request it cannot carry out with the ports it was given.
    #[error("invalid input: {0}")]
    Input(String),
    /// A port failed; its kind decides the name AWS sees.
    #[error(transparent)]
    Port(#[from] PortError),
    /// Runs kept finishing into the next one more often than any queue holds:
    /// a metadb that keeps reporting a next run would otherwise loop forever.
    #[error("more than {0} runs finished in one invocation")]
    TooManyRuns(usize),
}

impl TriggerError {
    /// Retryable only when a port says so: bad input or a runaway hand-over
    /// fails the same way again.
    pub fn kind(&self) -> ErrorKind {
        match self {
            TriggerError::Port(e) => e.kind(),
            TriggerError::Input(_) | TriggerError::TooManyRuns(_) => ErrorKind::Permanent,
        }
    }
}

/// The name CloudWatch and the DLQ see: [`ErrorKind::name`].
impl live_ci_boot::Classified for TriggerError {
    fn kind(&self) -> ErrorKind {
        TriggerError::kind(self)
    }
}
