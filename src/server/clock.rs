//! The logical clock of one process (MongoDB's hybrid logical clock): a cluster time of
//! seconds since the epoch and a counter within the second. It ticks for every write (strictly
//! increasing: each write's timestamp is later than any time this node has given or heard),
//! advances to any later time gossiped in a request or reply (`$clusterTime`), and knows which
//! writes have a timestamp but are not committed yet, so an `afterClusterTime` read can wait
//! until every write up to its time is visible.

use crate::error::{ErrorCode, MongoError, Result};
use bson::{Binary, Timestamp, doc, spec::BinarySubtype};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// How far ahead of the wall clock a gossiped time may be (MongoDB's
/// `maxAcceptableLogicalClockDriftSecs`, one year).
pub const MAX_CLOCK_DRIFT_SECS: u32 = 365 * 24 * 60 * 60;

#[derive(Debug, Default)]
pub struct LogicalClock {
    state: Mutex<State>,
    /// Woken whenever a pending write ends (an `afterClusterTime` read may go on).
    committed: Notify,
}

#[derive(Debug, Default)]
struct State {
    /// The latest cluster time this node has given or heard: (seconds, increment).
    time: (u32, u32),
    /// Writes holding a timestamp that are not committed (or rolled back) yet, by timestamp.
    pending: BTreeMap<(u32, u32), usize>,
}

fn wall_secs() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(0)
}

fn pair(t: Timestamp) -> (u32, u32) {
    (t.time, t.increment)
}

fn stamp((time, increment): (u32, u32)) -> Timestamp {
    Timestamp { time, increment }
}

impl State {
    fn tick(&mut self) -> (u32, u32) {
        let secs = wall_secs();
        self.time = if secs > self.time.0 {
            (secs, 1)
        } else {
            (self.time.0, self.time.1 + 1)
        };
        self.time
    }
}

impl LogicalClock {
    /// The current cluster time (no tick): what replies gossip and report as `operationTime`.
    /// Before this node has given or heard any time it is the wall clock's second, so a reply
    /// never carries a zero time.
    pub fn now(&self) -> Timestamp {
        let mut state = self.state.lock().expect("poisoned");
        if state.time == (0, 0) {
            state.time = (wall_secs(), 0);
        }
        stamp(state.time)
    }

    /// A new time, later than every time this node has given or heard (for metadata versions
    /// and other timestamps that need no visibility tracking).
    pub fn tick(&self) -> Timestamp {
        stamp(self.state.lock().expect("poisoned").tick())
    }

    /// A new time for a write about to commit: until the returned guard is dropped (after the
    /// commit or the rollback), reads waiting for this time or a later one wait.
    pub fn begin_write(self: &Arc<Self>) -> PendingWrite {
        let mut state = self.state.lock().expect("poisoned");
        let time = state.tick();
        *state.pending.entry(time).or_default() += 1;
        PendingWrite {
            clock: self.clone(),
            time,
        }
    }

    /// Advances to a gossiped cluster time; a time more than a year ahead of the wall clock is
    /// refused as MongoDB refuses it (its signature cannot be trusted to be sane).
    pub fn advance(&self, time: Timestamp) -> Result<()> {
        let now = wall_secs();
        if time.time > now && time.time - now > MAX_CLOCK_DRIFT_SECS {
            return Err(MongoError::new(
                ErrorCode::ClusterTimeFailsRateLimiter,
                format!(
                    "New cluster time, {}, is too far from this node's wall clock time, {now}.",
                    time.time
                ),
            ));
        }
        let mut state = self.state.lock().expect("poisoned");
        if pair(time) > state.time {
            state.time = pair(time);
        }
        Ok(())
    }

    /// Waits until every write up to `time` is committed and visible, as a read with
    /// `afterClusterTime` requires. A time this node has not reached yet is reached by advancing
    /// to it (MongoDB's primary writes a no-op for that): later writes then take later times.
    pub async fn wait_until_visible(&self, time: Timestamp) -> Result<()> {
        self.advance(time)?;
        loop {
            let notified = self.committed.notified();
            {
                let state = self.state.lock().expect("poisoned");
                match state.pending.keys().next() {
                    Some(first) if *first <= pair(time) => {}
                    _ => return Ok(()),
                }
            }
            notified.await;
        }
    }

    /// `$clusterTime` as replies carry it: the time and a signature of MongoDB's shape. Without
    /// authentication there are no signing keys: the hash is zeros and the key id 0, as a
    /// MongoDB cluster without keys gossips.
    pub fn gossip(&self) -> bson::Document {
        doc! {
            "clusterTime": self.now(),
            "signature": {
                "hash": Binary {subtype: BinarySubtype::Generic, bytes: vec![0; 20]},
                "keyId": 0_i64,
            },
        }
    }
}

/// A write's timestamp, pending until dropped.
#[derive(Debug)]
pub struct PendingWrite {
    clock: Arc<LogicalClock>,
    time: (u32, u32),
}

impl PendingWrite {
    pub fn time(&self) -> Timestamp {
        stamp(self.time)
    }
}

impl Drop for PendingWrite {
    fn drop(&mut self) {
        let mut state = self.clock.state.lock().expect("poisoned");
        if let Some(count) = state.pending.get_mut(&self.time) {
            *count -= 1;
            if *count == 0 {
                state.pending.remove(&self.time);
            }
        }
        drop(state);
        self.clock.committed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn ticks_strictly_increase_past_gossiped_times() {
        let clock = LogicalClock::default();
        let a = clock.tick();
        let b = clock.tick();
        assert!(pair(b) > pair(a));
        let ahead = Timestamp {
            time: wall_secs() + 100,
            increment: 7,
        };
        clock.advance(ahead).unwrap();
        assert_eq!(clock.now(), ahead);
        assert_eq!(
            clock.tick(),
            Timestamp {
                time: ahead.time,
                increment: 8
            }
        );
        // Older gossip never moves the clock back.
        clock.advance(a).unwrap();
        assert!(pair(clock.now()) > pair(ahead));
    }

    #[test]
    fn times_too_far_ahead_are_refused() {
        let clock = LogicalClock::default();
        let far = Timestamp {
            time: wall_secs() + MAX_CLOCK_DRIFT_SECS + 10,
            increment: 1,
        };
        assert_eq!(clock.advance(far).unwrap_err().code().code(), 205);
        assert!(clock.now().time < far.time);
    }

    #[tokio::test]
    async fn reads_wait_for_pending_writes_up_to_their_time() {
        let clock = Arc::new(LogicalClock::default());
        let write = clock.begin_write();
        let time = write.time();
        let later = clock.begin_write();
        // A read after an earlier time does not wait.
        clock
            .wait_until_visible(Timestamp {
                time: time.time,
                increment: time.increment - 1,
            })
            .await
            .unwrap();
        let waiting = {
            let clock = clock.clone();
            tokio::spawn(async move { clock.wait_until_visible(time).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished());
        drop(later);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "the write at its time is pending");
        drop(write);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }

    #[tokio::test]
    async fn a_read_after_a_future_time_advances_the_clock() {
        let clock = LogicalClock::default();
        let future = Timestamp {
            time: wall_secs() + 50,
            increment: 3,
        };
        clock.wait_until_visible(future).await.unwrap();
        assert!(pair(clock.tick()) > pair(future));
    }
}
