//! The snapshot history of one database file (MongoDB's `minSnapshotHistoryWindowInSeconds`):
//! an in-memory undo log of the before-images of the documents every write transaction
//! changed, stamped with its time, from which a read at cluster time T
//! ([`StorageTransaction::at`](super::StorageTransaction::at)) rebuilds each record as it was
//! at T over the latest snapshot.
//!
//! **The rule.** Every write transaction notes, for each record it inserts, replaces or deletes,
//! `(collection ident, record id, before-image)` (`None`: the record was absent), and appends
//! the notes with its time (`WriteTxn::time`, strictly increasing per write transaction and in
//! commit order, the writer being exclusive) just before its COMMIT runs, holding the writer.
//! The state of a record as of T is then: its before-image in its *oldest* entry later than T
//! if it has one, else its version in the snapshot the reader pinned *before* reading the
//! history:
//! - a commit the snapshot sees appended its entries before it committed, hence before the
//!   reader read the history: a record a commit after T changed has an entry after T;
//! - the oldest entry after T was written by the first write transaction after T to touch the
//!   record, which read the record's committed state, unchanged since T: its before-image;
//! - entries of commits the snapshot does not see (later ones) are harmless: if such an entry
//!   is the oldest after T, nothing between T and it changed the record, so its before-image
//!   equals the snapshot's version, which is the state at T;
//! - entries of a transaction that then rolled back (or whose COMMIT failed) are harmless for
//!   the same reason: its before-images are the committed state its writes left unchanged;
//! - record ids reused after a rollback (`next_rid` cleared) or a savepoint: a record id is
//!   allocated above every existing record, so an insert's `None` is the record's true prior
//!   state whichever transaction (committed or not) noted it; a transaction notes a record
//!   again after its first write in it (an insert then a replace), and only the first note in
//!   append order counts, which holds the state before the transaction.
//!
//! **Retention.** Entries older than the window before the clock's current time are dropped,
//! and the oldest ones beyond [`HISTORY_MEMORY_BYTES`]; `oldest_readable` is the newest time
//! whose history may be gone (at first the clock's time when an existing file was opened: no
//! history survives a restart; a file created by this process has all of its history, having
//! been empty before). A read at a time older than it is SnapshotTooOld.
//!
//! **Not covered.** The catalog is not versioned: a collection or index created after T reads
//! as it reads now (its documents inserted after T are absent at T, being in the history), a
//! collection dropped since T reads as dropped.

use super::read_sql::RecordId;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{RawDocumentBuf, Timestamp};
use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// The most before-image bytes one database keeps: the history is in memory, and a long
/// bulk update must not grow it without bound (its oldest entries go first; reads at their
/// times become SnapshotTooOld, as MongoDB's cache pressure makes them).
pub const HISTORY_MEMORY_BYTES: usize = 64 << 20;

/// What an entry costs besides its before-image (the entry itself and the deque's slot).
const ENTRY_OVERHEAD: usize = 64;

/// `minSnapshotHistoryWindowInSeconds`' default.
pub const DEFAULT_HISTORY_WINDOW_SECS: u32 = 300;

/// One write of a write transaction: records `rids` of collection `coll` were `before` just
/// before it (an insert's batch notes its whole range once, as absent).
pub(super) struct Note {
    pub coll: i64,
    pub rids: Range<RecordId>,
    pub before: Option<RawDocumentBuf>,
}

struct Entry {
    time: Timestamp,
    note: Note,
}

impl Entry {
    fn size(&self) -> usize {
        ENTRY_OVERHEAD + self.note.before.as_ref().map_or(0, |d| d.as_bytes().len())
    }
}

/// The records changed after a time, each with its state at that time (`None`: absent), by
/// collection ident.
pub(super) type AsOf = BTreeMap<i64, BTreeMap<RecordId, Option<RawDocumentBuf>>>;

pub(super) struct History {
    inner: Mutex<Inner>,
    /// `minSnapshotHistoryWindowInSeconds`, shared with the node's parameters.
    window: Arc<AtomicU32>,
}

struct Inner {
    /// In time order.
    entries: VecDeque<Entry>,
    bytes: usize,
    oldest_readable: Timestamp,
}

fn older(a: Timestamp, b: Timestamp) -> bool {
    (a.time, a.increment) < (b.time, b.increment)
}

impl History {
    /// An empty history: nothing before `opened_at` can be read.
    pub(super) fn new(opened_at: Timestamp, window: Arc<AtomicU32>) -> History {
        History {
            inner: Mutex::new(Inner {
                entries: VecDeque::new(),
                bytes: 0,
                oldest_readable: opened_at,
            }),
            window,
        }
    }

    /// Appends a write transaction's notes (moved, not copied) at its `time`, just before its
    /// COMMIT; `now` is the clock's time, for the window.
    pub(super) fn append(&self, time: Timestamp, notes: Vec<Note>, now: Timestamp) {
        let mut inner = self.inner.lock().expect("poisoned");
        for note in notes {
            let entry = Entry { time, note };
            inner.bytes += entry.size();
            inner.entries.push_back(entry);
        }
        self.evict(&mut inner, now);
    }

    /// Drops what the window and the memory cap no longer keep.
    fn evict(&self, inner: &mut Inner, now: Timestamp) {
        let window = self.window.load(Ordering::Relaxed);
        let cutoff = Timestamp {
            time: now.time.saturating_sub(window),
            increment: 0,
        };
        while let Some(first) = inner.entries.front() {
            if !older(first.time, cutoff) && inner.bytes <= HISTORY_MEMORY_BYTES {
                break;
            }
            let first = inner.entries.pop_front().expect("a first entry");
            inner.bytes -= first.size();
            if older(inner.oldest_readable, first.time) {
                inner.oldest_readable = first.time;
            }
        }
        // The window has passed over the history before the cutoff, dropped or not.
        if older(inner.oldest_readable, cutoff) {
            inner.oldest_readable = cutoff;
        }
    }

    /// The newest time whose history may be gone: reads at older times are refused.
    pub(super) fn oldest_readable(&self, now: Timestamp) -> Timestamp {
        let mut inner = self.inner.lock().expect("poisoned");
        self.evict(&mut inner, now);
        inner.oldest_readable
    }

    /// Every record changed after `time` with its state at `time`: its oldest entry's
    /// before-image. To be read after the snapshot it applies to is pinned (see the module
    /// doc). SnapshotTooOld if the history since `time` may be incomplete.
    pub(super) fn as_of(&self, time: Timestamp, now: Timestamp) -> Result<AsOf> {
        let mut inner = self.inner.lock().expect("poisoned");
        self.evict(&mut inner, now);
        if older(time, inner.oldest_readable) {
            return Err(snapshot_too_old(time));
        }
        let start = inner.entries.partition_point(|e| !older(time, e.time));
        let mut out = AsOf::new();
        for entry in inner.entries.range(start..) {
            let records = out.entry(entry.note.coll).or_default();
            for rid in entry.note.rids.clone() {
                records
                    .entry(rid)
                    .or_insert_with(|| entry.note.before.clone());
            }
        }
        Ok(out)
    }
}

impl super::DatabaseStore {
    /// The oldest cluster time a read of this database can be at
    /// ([`StorageTransaction::at`](super::StorageTransaction::at)).
    pub fn oldest_readable_time(&self) -> Timestamp {
        self.history.oldest_readable(self.clock.now())
    }
}

#[cfg(test)]
impl History {
    /// How many entries the history holds.
    pub(super) fn inner_len(&self) -> usize {
        self.inner.lock().expect("poisoned").entries.len()
    }
}

/// MongoDB's refusal of a read before the oldest available timestamp.
pub(super) fn snapshot_too_old(time: Timestamp) -> MongoError {
    MongoError::new(
        ErrorCode::SnapshotTooOld,
        format!(
            "Read timestamp Timestamp({}, {}) is older than the oldest available timestamp.",
            time.time, time.increment
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn ts(time: u32, increment: u32) -> Timestamp {
        Timestamp { time, increment }
    }

    fn note(rid: RecordId, before: Option<i32>) -> Note {
        Note {
            coll: 1,
            rids: rid..rid + 1,
            before: before.map(|v| rawdoc! {"_id": 1, "v": v}),
        }
    }

    fn versions(history: &History, at: Timestamp) -> Vec<(RecordId, Option<i32>)> {
        let as_of = history.as_of(at, ts(100, 0)).unwrap();
        as_of
            .get(&1)
            .into_iter()
            .flatten()
            .map(|(rid, d)| (*rid, d.as_ref().map(|d| d.get_i32("v").unwrap())))
            .collect()
    }

    #[test]
    fn the_oldest_entry_after_a_time_holds_the_state_at_that_time() {
        let history = History::new(ts(10, 0), Arc::new(AtomicU32::new(300)));
        let now = ts(100, 0);
        history.append(ts(11, 1), vec![note(1, None), note(1, Some(1))], now);
        history.append(ts(12, 1), vec![note(1, Some(2)), note(2, Some(7))], now);
        history.append(
            ts(13, 1),
            vec![Note {
                coll: 1,
                rids: 3..5,
                before: None,
            }],
            now,
        );
        assert_eq!(
            versions(&history, ts(10, 0)),
            [(1, None), (2, Some(7)), (3, None), (4, None)]
        );
        assert_eq!(
            versions(&history, ts(11, 1)),
            [(1, Some(2)), (2, Some(7)), (3, None), (4, None)]
        );
        assert_eq!(versions(&history, ts(13, 1)), []);
        let e = history.as_of(ts(9, 5), now).unwrap_err();
        assert_eq!(e.code(), ErrorCode::SnapshotTooOld);
        assert_eq!(
            e.message(),
            "Read timestamp Timestamp(9, 5) is older than the oldest available timestamp."
        );
    }

    #[test]
    fn the_window_and_the_memory_cap_drop_the_oldest_entries() {
        let window = Arc::new(AtomicU32::new(300));
        let history = History::new(ts(10, 0), window.clone());
        history.append(ts(11, 1), vec![note(1, Some(1))], ts(11, 1));
        history.append(ts(20, 1), vec![note(1, Some(2))], ts(20, 1));
        assert_eq!(history.oldest_readable(ts(20, 1)), ts(10, 0));
        // Five seconds of window at second 25: the entry of second 11 goes.
        window.store(5, Ordering::Relaxed);
        assert_eq!(history.oldest_readable(ts(25, 0)), ts(20, 0));
        assert_eq!(history.inner.lock().unwrap().entries.len(), 1);
        // Past the memory cap, the oldest entries go whatever their age.
        window.store(300, Ordering::Relaxed);
        let big = RawDocumentBuf::from_document(&bson::doc! {"b": bson::Binary {
            subtype: bson::spec::BinarySubtype::Generic,
            bytes: vec![0; HISTORY_MEMORY_BYTES / 8],
        }})
        .unwrap();
        // Nine eighths of the cap, and the entries' own cost: two go.
        for i in 0..9 {
            let notes = vec![Note {
                coll: 1,
                rids: 9..10,
                before: Some(big.clone()),
            }];
            history.append(ts(26, i + 1), notes, ts(26, i + 1));
        }
        assert_eq!(history.oldest_readable(ts(26, 9)), ts(26, 2));
        assert_eq!(history.inner.lock().unwrap().entries.len(), 7);
        assert!(history.inner.lock().unwrap().bytes <= HISTORY_MEMORY_BYTES);
    }
}
