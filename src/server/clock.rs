//! The logical clock of one process (MongoDB's hybrid logical clock): a cluster time of
//! seconds since the epoch and a counter within the second. It ticks for every write (strictly
//! increasing: each write's timestamp is later than any time this node has given or heard),
//! advances to any later time gossiped in a request or reply (`$clusterTime`), and knows which
//! writes have a timestamp but are not committed yet, so an `afterClusterTime` read can wait
//! until every write up to its time is visible.

use crate::error::{ErrorCode, MongoError, Result};
use bson::{RawBson, RawBsonRef, RawDocumentBuf, Timestamp, doc};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

#[derive(Debug, Default)]
pub struct LogicalClock {
    state: Mutex<State>,
    /// The keys the gossiped time is signed with (`server::cluster_keys`).
    pub keys: super::cluster_keys::KeyRing,
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

    /// Advances to a gossiped cluster time. Requests' times were checked against MongoDB's
    /// bounds when parsed (`command::generic`); other nodes' replies are trusted.
    pub fn advance(&self, time: Timestamp) {
        let mut state = self.state.lock().expect("poisoned");
        if pair(time) > state.time {
            state.time = pair(time);
        }
    }

    /// Waits until every write up to `time` is committed and visible, as a read with
    /// `afterClusterTime` requires. A time later than this node's cluster time (which the
    /// request's own `$clusterTime` advanced first) is refused as MongoDB refuses it: no client
    /// can have seen it. Writes after the wait take later times than `time`.
    pub async fn wait_until_visible(&self, time: Timestamp) -> Result<()> {
        let now = self.now();
        if pair(time) > pair(now) {
            return Err(MongoError::new(
                ErrorCode::InvalidOptions,
                format!(
                    "readConcern afterClusterTime value must not be greater than the current \
                     clusterTime. Requested clusterTime: {{ ts: Timestamp({}, {}) }}; current \
                     clusterTime: {{ ts: Timestamp({}, {}) }}",
                    time.time, time.increment, now.time, now.increment
                ),
            ));
        }
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

    /// `$clusterTime` as replies carry it: the time and its signature. Without authentication
    /// there are no signing keys: the hash is zeros and the key id 0, as a MongoDB cluster
    /// without keys gossips; with it, nothing until the node has read its keys (MongoDB gossips
    /// only once it has seen keys: an unsigned time would be refused elsewhere).
    pub fn gossip(&self) -> Option<bson::Document> {
        let now = self.now();
        let signature = self.keys.sign(now)?;
        Some(doc! {"clusterTime": now, "signature": signature})
    }
}

/// The fields a node adds to every reply and every request it sends to another node.
const OPERATION_TIME: &str = "operationTime";
const CLUSTER_TIME: &str = "$clusterTime";

/// Appends `operationTime` and `$clusterTime` to a reply. Any a passed-through reply carried
/// were taken off when it arrived ([`take_gossip`]).
pub fn append_gossip(reply: &mut RawDocumentBuf, clock: &LogicalClock) {
    let now = clock.now();
    reply.append(OPERATION_TIME, RawBson::Timestamp(now));
    if let Some(Ok(gossip)) = clock.gossip().map(|g| RawDocumentBuf::from_document(&g)) {
        reply.append(CLUSTER_TIME, gossip);
    }
}

/// Takes `operationTime` and `$clusterTime` off a reply from another node, returning the
/// cluster time it gossiped: the caller advances its own clock to it and answers with its own.
/// They are the reply's last fields ([`append_gossip`]), so the bytes before them are kept.
pub fn take_gossip(reply: &mut RawDocumentBuf) -> Option<Timestamp> {
    let time = match reply.get(CLUSTER_TIME) {
        Ok(Some(RawBsonRef::Document(gossip))) => match gossip.get("clusterTime") {
            Ok(Some(RawBsonRef::Timestamp(t))) => Some(t),
            _ => None,
        },
        _ => None,
    };
    let mut tail = 0usize;
    let mut trailing = true;
    let mut found = false;
    for element in reply.iter() {
        let Ok((name, value)) = element else {
            return time;
        };
        if name == OPERATION_TIME || name == CLUSTER_TIME {
            found = true;
            tail += element_size(name, value);
        } else if found {
            trailing = false;
        }
    }
    if !found {
        return time;
    }
    let kept = if trailing {
        let mut bytes = std::mem::take(reply).into_bytes();
        let end = bytes.len() - 1 - tail;
        bytes.truncate(end);
        bytes.push(0);
        let len = (bytes.len() as i32).to_le_bytes();
        bytes[..4].copy_from_slice(&len);
        RawDocumentBuf::from_bytes(bytes).ok()
    } else {
        let mut rebuilt = RawDocumentBuf::new();
        for (name, value) in reply.iter().flatten() {
            if name != OPERATION_TIME && name != CLUSTER_TIME {
                rebuilt.append(name, value.to_raw_bson());
            }
        }
        Some(rebuilt)
    };
    if let Some(kept) = kept {
        *reply = kept;
    }
    time
}

/// The encoded size of one element: type byte, name and its NUL, value.
fn element_size(name: &str, value: RawBsonRef<'_>) -> usize {
    let value_size = match value {
        RawBsonRef::Timestamp(_) => 8,
        RawBsonRef::Document(doc) => doc.as_bytes().len(),
        other => {
            let mut probe = RawDocumentBuf::new();
            probe.append("", other.to_raw_bson());
            probe.as_bytes().len() - 4 - 1 - 2
        }
    };
    1 + name.len() + 1 + value_size
}

/// A request to another node carrying this node's cluster time (replacing whatever
/// `$clusterTime` a forwarded client request had: this node's is at least as late).
pub fn with_gossip(request: &mut crate::command::CommandRequest, clock: &LogicalClock) {
    let Some(Ok(gossip)) = clock.gossip().map(|g| RawDocumentBuf::from_document(&g)) else {
        return;
    };
    request.replace_field(CLUSTER_TIME, Some(bson::RawBson::Document(gossip)));
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
        clock.advance(ahead);
        assert_eq!(clock.now(), ahead);
        assert_eq!(
            clock.tick(),
            Timestamp {
                time: ahead.time,
                increment: 8
            }
        );
        // Older gossip never moves the clock back.
        clock.advance(a);
        assert!(pair(clock.now()) > pair(ahead));
    }

    #[test]
    fn gossip_is_appended_and_taken_off() {
        let clock = LogicalClock::default();
        let t = clock.tick();
        let mut reply = bson::rawdoc! {"n": 1, "ok": 1.0};
        let plain = reply.clone();
        append_gossip(&mut reply, &clock);
        assert_eq!(
            reply
                .get_document("$clusterTime")
                .unwrap()
                .get_timestamp("clusterTime")
                .unwrap(),
            t
        );
        assert_eq!(take_gossip(&mut reply), Some(t));
        assert_eq!(reply, plain);
        // Not trailing (a reply rebuilt after the fields were added): still taken off.
        let mut mixed = bson::rawdoc! {"operationTime": t, "n": 1};
        assert_eq!(take_gossip(&mut mixed), None);
        assert_eq!(mixed, bson::rawdoc! {"n": 1});
        let mut none = plain.clone();
        assert_eq!(take_gossip(&mut none), None);
        assert_eq!(none, plain);
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
    async fn a_read_after_a_time_not_reached_is_refused() {
        let clock = LogicalClock::default();
        let future = Timestamp {
            time: wall_secs() + 50,
            increment: 3,
        };
        let err = clock.wait_until_visible(future).await.unwrap_err();
        assert_eq!(err.code().code(), 72);
        clock.advance(future);
        clock.wait_until_visible(future).await.unwrap();
        assert!(pair(clock.tick()) > pair(future));
    }
}
