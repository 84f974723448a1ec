//! An in-memory parameter store (the SSM port) for tests, recording what it
//! is asked, with the error type the other test fakes share.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use live_ci_core::port::ParamStore;

/// A test fake's error: its message only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeError(pub String);

impl std::fmt::Display for FakeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FakeError {}

/// A fake's recorded state; a test that panicked while holding it leaves
/// usable data.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Parameters by name; a missing one is an error naming it, as SSM's is.
/// Every `get` and `put` through the port is recorded, so tests can assert
/// how often a value was read (caches) and exactly what was written.
#[derive(Debug, Default)]
pub struct MemoryParams {
    values: Mutex<HashMap<String, String>>,
    gets: Mutex<Vec<String>>,
    puts: Mutex<Vec<(String, String)>>,
}

impl MemoryParams {
    /// A store holding `pairs`.
    pub fn with<K: Into<String>, V: Into<String>>(pairs: impl IntoIterator<Item = (K, V)>) -> Self {
        let store = MemoryParams::default();
        for (k, v) in pairs {
            store.set(k, v);
        }
        store
    }

    /// Sets a value behind the port's back (not recorded as a put), as an
    /// operator or another process would.
    pub fn set(&self, name: impl Into<String>, value: impl Into<String>) {
        lock(&self.values).insert(name.into(), value.into());
    }

    /// Deletes `name` behind the port's back.
    pub fn remove(&self, name: &str) {
        lock(&self.values).remove(name);
    }

    /// The value held for `name`, read without recording a get.
    pub fn value(&self, name: &str) -> Option<String> {
        lock(&self.values).get(name).cloned()
    }

    /// Every name read through the port, in order.
    pub fn gets(&self) -> Vec<String> {
        lock(&self.gets).clone()
    }

    /// How often `name` was read through the port.
    pub fn reads_of(&self, name: &str) -> usize {
        lock(&self.gets).iter().filter(|n| *n == name).count()
    }

    /// Every (name, value) written through the port, in order.
    pub fn puts(&self) -> Vec<(String, String)> {
        lock(&self.puts).clone()
    }
}

impl ParamStore for MemoryParams {
    type Error = FakeError;

    async fn get(&self, name: &str) -> Result<String, FakeError> {
        lock(&self.gets).push(name.to_string());
        self.value(name)
            .ok_or_else(|| FakeError(format!("no parameter {name:?}")))
    }

    async fn put(&self, name: &str, value: &str) -> Result<(), FakeError> {
        lock(&self.puts).push((name.to_string(), value.to_string()));
        self.set(name, value);
        Ok(())
    }
}

/// A fake's failure is deliberate and repeats: permanent.
impl live_ci_core::port::Classify for FakeError {
    fn kind(&self) -> live_ci_core::port::ErrorKind {
        live_ci_core::port::ErrorKind::Permanent
    }
}
