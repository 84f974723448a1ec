//! The webhook secret as the receiver holds it: read from the parameter store,
//! refused when it is a placeholder or too short (the receiver then answers 503
//! to everything, so a forged body is never accepted nor told apart from a real
//! one), and read again after a TTL or after a signature failure, so a secret
//! set or rotated in SSM after deployment takes effect without a cold start.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use live_ci_core::port::ParamStore;
use live_ci_core::webhook::secret_problem;

/// A secret that must not be used, with the reason naming its parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unusable(pub(crate) String);

#[derive(Debug, Clone)]
struct Held {
    value: Result<Vec<u8>, Unusable>,
    read_at: Instant,
}

#[derive(Debug)]
pub(crate) struct SecretCache {
    parameter: String,
    ttl: Duration,
    retry: Duration,
    held: Mutex<Option<Held>>,
    last_failure_refresh: Mutex<Option<Instant>>,
}

impl SecretCache {
    /// `ttl`: how long a usable secret is kept; `retry`: how often at most a
    /// signature failure triggers a re-read (forged deliveries must not turn
    /// into one SSM call each), and how long an unusable secret is kept.
    pub(crate) fn new(parameter: &str, ttl: Duration, retry: Duration) -> Self {
        SecretCache {
            parameter: parameter.to_string(),
            ttl,
            retry,
            held: Mutex::new(None),
            last_failure_refresh: Mutex::new(None),
        }
    }

    /// The secret to verify with, read again when older than the TTL. A failed
    /// read keeps a usable secret read before (SSM hiccups do not stop
    /// deliveries) and is unusable otherwise.
    pub(crate) async fn current<P: ParamStore>(&self, params: &P) -> Result<Vec<u8>, Unusable> {
        let held = self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match held {
            // An unusable secret is looked at again sooner: the operator who
            // sets it should not wait a whole TTL.
            Some(h) if h.read_at.elapsed() < self.ttl_of(&h) => h.value,
            previous => self.read(params, previous).await,
        }
    }

    fn ttl_of(&self, held: &Held) -> Duration {
        match held.value {
            Ok(_) => self.ttl,
            Err(_) => self.ttl.min(self.retry),
        }
    }

    /// After a signature failure: the secret read again, unless one was read on
    /// a failure within the retry interval. `None` when not re-read.
    pub(crate) async fn refresh_after_failure<P: ParamStore>(
        &self,
        params: &P,
    ) -> Option<Result<Vec<u8>, Unusable>> {
        {
            let mut last = self
                .last_failure_refresh
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if last.is_some_and(|t| t.elapsed() < self.retry) {
                return None;
            }
            *last = Some(Instant::now());
        }
        let previous = self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Some(self.read(params, previous).await)
    }

    async fn read<P: ParamStore>(
        &self,
        params: &P,
        previous: Option<Held>,
    ) -> Result<Vec<u8>, Unusable> {
        let value = match params.get(&self.parameter).await {
            Ok(v) => {
                let bytes = v.into_bytes();
                match secret_problem(&bytes) {
                    None => Ok(bytes),
                    Some(why) => {
                        tracing::error!(
                            parameter = %self.parameter,
                            "the webhook secret is unusable: {why}; every delivery is refused with 503 until the parameter holds a real secret"
                        );
                        Err(Unusable(format!(
                            "webhook secret parameter {:?} is not usable: {why}",
                            self.parameter
                        )))
                    }
                }
            }
            // A failed read is not cached: the next delivery tries again.
            Err(e) => {
                if let Some(Held { value: Ok(old), .. }) = previous {
                    tracing::warn!(parameter = %self.parameter, error = %e, "re-reading the webhook secret failed; keeping the one read before");
                    return Ok(old);
                }
                tracing::error!(parameter = %self.parameter, error = %e, "cannot read the webhook secret");
                return Err(Unusable(format!(
                    "webhook secret parameter {:?} cannot be read: {e}",
                    self.parameter
                )));
            }
        };
        *self.held.lock().unwrap_or_else(PoisonError::into_inner) = Some(Held {
            value: value.clone(),
            read_at: Instant::now(),
        });
        value
    }
}
