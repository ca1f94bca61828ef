//! One refresh at a time per key (a namespace, a database), and none wasted: a request that
//! needs a refresh waits for the one running, then uses the result of any refresh that began
//! after it arrived — such a refresh read the config server after the request's version was
//! current — instead of starting its own. A burst of stale requests costs at most two loads.

use crate::error::Result;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Slot {
    /// Held while a refresh runs.
    turn: tokio::sync::Mutex<()>,
    /// How many refreshes have begun.
    started: AtomicU64,
}

#[derive(Default)]
pub(super) struct SingleFlight {
    slots: Mutex<HashMap<String, Arc<Slot>>>,
}

impl SingleFlight {
    fn slot(&self, key: &str) -> Arc<Slot> {
        let mut slots = self.slots.lock().expect("poisoned");
        // Keys nobody is refreshing or waiting on are dropped, so the map stays small.
        slots.retain(|_, s| Arc::strong_count(s) > 1);
        Arc::clone(slots.entry(key.to_string()).or_default())
    }

    /// Runs `load` for `key`, unless a refresh that began after this call finished meanwhile:
    /// then `current` (what that refresh stored) is the answer, when it has one.
    pub async fn refresh<T, Fut>(
        &self,
        key: &str,
        current: impl FnOnce() -> Option<T>,
        load: impl FnOnce() -> Fut,
    ) -> Result<T>
    where
        Fut: Future<Output = Result<T>>,
    {
        let slot = self.slot(key);
        let arrived = slot.started.load(Ordering::SeqCst);
        let _turn = slot.turn.lock().await;
        if slot.started.load(Ordering::SeqCst) != arrived {
            if let Some(value) = current() {
                return Ok(value);
            }
        }
        slot.started.fetch_add(1, Ordering::SeqCst);
        load().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    #[tokio::test]
    async fn a_burst_of_refreshes_loads_at_most_twice() {
        let flights = Arc::new(SingleFlight::default());
        let loads = Arc::new(AtomicUsize::new(0));
        let value = Arc::new(Mutex::new(None::<usize>));
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let (flights, loads, value) = (flights.clone(), loads.clone(), value.clone());
                tokio::spawn(async move {
                    flights
                        .refresh(
                            "db.c",
                            || *value.lock().unwrap(),
                            || async {
                                let n = loads.fetch_add(1, Ordering::SeqCst) + 1;
                                tokio::time::sleep(Duration::from_millis(20)).await;
                                *value.lock().unwrap() = Some(n);
                                Ok(n)
                            },
                        )
                        .await
                        .unwrap()
                })
            })
            .collect();
        for task in tasks {
            let got = task.await.unwrap();
            assert!((1..=2).contains(&got), "{got}");
        }
        assert!(loads.load(Ordering::SeqCst) <= 2);
        // Other keys are independent, and a later request refreshes again.
        let other = flights.refresh("db.d", || None, || async { Ok(7) }).await;
        assert_eq!(other.unwrap(), 7);
        let again = flights
            .refresh("db.c", || Some(0), || async { Ok(99) })
            .await;
        assert_eq!(again.unwrap(), 99);
    }
}
