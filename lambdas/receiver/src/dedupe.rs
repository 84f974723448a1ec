//! Deliveries this container has already handled. GitHub redelivers on timeouts
//! and people press "Redeliver"; the durable guard is ECS's `clientToken` (the
//! delivery id), this bounded set spares the GitHub and SSM calls before it.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

#[derive(Debug)]
pub(crate) struct SeenDeliveries {
    inner: Mutex<(HashSet<String>, VecDeque<String>)>,
    capacity: usize,
}

impl SeenDeliveries {
    pub(crate) fn new(capacity: usize) -> Self {
        SeenDeliveries {
            inner: Mutex::new((HashSet::new(), VecDeque::new())),
            capacity,
        }
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.inner.lock().map(|g| g.0.contains(id)).unwrap_or(false)
    }

    pub(crate) fn insert(&self, id: &str) {
        if let Ok(mut g) = self.inner.lock()
            && g.0.insert(id.to_string())
        {
            g.1.push_back(id.to_string());
            while g.1.len() > self.capacity {
                if let Some(old) = g.1.pop_front() {
                    g.0.remove(&old);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forgets_the_oldest_beyond_capacity() {
        let s = SeenDeliveries::new(2);
        s.insert("a");
        s.insert("b");
        s.insert("a");
        s.insert("c");
        assert!(!s.contains("a") && s.contains("b") && s.contains("c"));
    }
}
