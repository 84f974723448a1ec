//! An in-memory parameter store (the SSM port) for tests, with the error type
//! the other test fakes of a crate can share.

use std::collections::HashMap;
use std::sync::Mutex;

use live_ci_core::params::ParamStore;

/// A test fake's error: its message only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeError(pub String);

impl std::fmt::Display for FakeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FakeError {}

/// Parameters by name; a missing one is an error naming it, as SSM's is.
#[derive(Debug, Default)]
pub struct MemoryParams(Mutex<HashMap<String, String>>);

impl MemoryParams {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        // A test that panicked while holding the lock leaves usable data.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl ParamStore for MemoryParams {
    type Error = FakeError;

    async fn get(&self, name: &str) -> Result<String, FakeError> {
        self.map()
            .get(name)
            .cloned()
            .ok_or_else(|| FakeError(format!("no parameter {name:?}")))
    }

    async fn put(&self, name: &str, value: &str) -> Result<(), FakeError> {
        self.map().insert(name.to_string(), value.to_string());
        Ok(())
    }
}

/// A fake's failure is deliberate and repeats: permanent.
impl live_ci_core::port::Classify for FakeError {
    fn kind(&self) -> live_ci_core::port::ErrorKind {
        live_ci_core::port::ErrorKind::Permanent
    }
}
