//! Per-namespace serialization of metadata changes: DDL and chunk operations on one namespace
//! never interleave, while operations on different namespaces run side by side.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

#[derive(Default)]
pub struct NamespaceLocks {
    locks: Mutex<HashMap<String, Arc<AsyncMutex<()>>>>,
}

impl NamespaceLocks {
    /// Waits for the namespace's lock; it is held until the guard drops.
    pub async fn lock(&self, ns: &str) -> OwnedMutexGuard<()> {
        let lock = {
            let mut locks = self.locks.lock().expect("poisoned");
            // Drop entries nobody holds or waits for, so the map stays as small as the
            // namespaces in flight.
            locks.retain(|_, l| Arc::strong_count(l) > 1);
            Arc::clone(locks.entry(ns.to_string()).or_default())
        };
        lock.lock_owned().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn one_namespace_at_a_time_others_in_parallel() {
        let locks = Arc::new(NamespaceLocks::default());
        let held = locks.lock("db.a").await;
        // Another namespace is free.
        let other = tokio::time::timeout(Duration::from_millis(100), locks.lock("db.b")).await;
        assert!(other.is_ok());
        // The same namespace waits until the first guard drops.
        let waiter = {
            let locks = Arc::clone(&locks);
            tokio::spawn(async move {
                let _g = locks.lock("db.a").await;
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished());
        drop(held);
        tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("the waiter gets the lock")
            .unwrap();
    }
}
