//! Range watches: what a chunk migration's donor needs from the one write path. While a watch
//! is on a collection, every commit writing it notes, after its COMMIT and before it lets the
//! writer go, the record ids it wrote and the `_id`s of the before-images that lay in the
//! moving range: the migration resends those documents (or their deletion) to the recipient,
//! so a write racing the clone is never lost. Once the donor's critical section begins, the
//! watch is *fenced*: a multi-document transaction writing the collection can no longer
//! prepare or commit (WriteConflict; the client retries the transaction, which then meets the
//! new owner), so nothing commits that the last transfer could miss.

use super::catalog::CollectionMeta;
use super::read_sql::RecordId;
use crate::error::Result;
use bson::{Bson, RawDocument};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// Whether a document lies in the range a watch is about.
pub type RangePredicate = Box<dyn Fn(&RawDocument) -> bool + Send + Sync>;

/// One collection's watch.
pub struct RangeWatch {
    coll: i64,
    in_range: RangePredicate,
    captured: Mutex<Captured>,
    fenced: AtomicBool,
}

/// The writes noted since the last [`RangeWatch::take`].
#[derive(Default, Debug)]
pub struct Captured {
    /// Records written (inserted or replaced; deleted ones are not found again).
    pub rids: BTreeSet<RecordId>,
    /// The `_id`s of documents that were in the range before a write replaced or deleted them.
    pub left: Vec<Bson>,
}

impl Captured {
    pub fn is_empty(&self) -> bool {
        self.rids.is_empty() && self.left.is_empty()
    }

    pub fn len(&self) -> usize {
        self.rids.len() + self.left.len()
    }
}

impl RangeWatch {
    /// The writes noted since the last call.
    pub fn take(&self) -> Captured {
        std::mem::take(&mut *self.captured.lock().expect("poisoned"))
    }

    /// How many writes are noted and not taken yet.
    pub fn pending(&self) -> usize {
        self.captured.lock().expect("poisoned").len()
    }

    /// Adds what a transaction that just committed wrote.
    pub fn add(&self, more: Captured) {
        let mut captured = self.captured.lock().expect("poisoned");
        captured.rids.extend(more.rids);
        captured.left.extend(more.left);
    }

    /// From now on, transactions writing the collection can neither prepare nor commit.
    pub fn fence(&self) {
        self.fenced.store(true, Ordering::Release);
    }

    pub fn in_range(&self, doc: &RawDocument) -> bool {
        (self.in_range)(doc)
    }
}

/// The watches of one database file.
#[derive(Default)]
pub(super) struct RangeWatches {
    /// Watches on: commits skip all of this while it is zero (the hot path).
    count: AtomicUsize,
    list: RwLock<Vec<Arc<RangeWatch>>>,
}

/// A watch in place; dropping it removes the watch.
pub struct WatchGuard {
    watch: Arc<RangeWatch>,
    db: Arc<super::DatabaseStore>,
}

impl WatchGuard {
    pub fn watch(&self) -> &Arc<RangeWatch> {
        &self.watch
    }
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        let watches = &self.db.range_watches;
        let mut list = watches.list.write().expect("poisoned");
        list.retain(|w| !Arc::ptr_eq(w, &self.watch));
        watches.count.store(list.len(), Ordering::Release);
    }
}

impl RangeWatches {
    fn active(&self) -> bool {
        self.count.load(Ordering::Acquire) > 0
    }

    /// WriteConflict if a fenced watch is on one of `colls` (a transaction's writes).
    pub(super) fn check_fence(&self, mut colls: impl Iterator<Item = i64>) -> Result<()> {
        if !self.active() {
            return Ok(());
        }
        let list = self.list.read().expect("poisoned");
        let fenced = colls.any(|c| {
            list.iter()
                .any(|w| w.coll == c && w.fenced.load(Ordering::Acquire))
        });
        if fenced {
            return Err(super::doc_locks::write_conflict());
        }
        Ok(())
    }

    /// What a transaction's writes (its history notes) mean to each watch, computed before
    /// its COMMIT (the notes then go to the history) and added once it committed
    /// ([`RangeWatch::add`]): a watch registered meanwhile waits for this commit
    /// ([`DatabaseStore::watch_range`]), whose writes its reads then see.
    pub(super) fn collect(
        &self,
        notes: &[super::history::Note],
    ) -> Vec<(Arc<RangeWatch>, Captured)> {
        if !self.active() {
            return Vec::new();
        }
        let list = self.list.read().expect("poisoned");
        let mut out = Vec::new();
        for watch in list.iter() {
            let mut captured = Captured::default();
            for note in notes.iter().filter(|n| n.coll == watch.coll) {
                captured.rids.extend(note.rids.clone());
                let id = note
                    .before
                    .as_deref()
                    .filter(|b| watch.in_range(b))
                    .and_then(|b| b.get("_id").ok().flatten())
                    .and_then(|id| Bson::try_from(id.to_raw_bson()).ok());
                captured.left.extend(id);
            }
            if !captured.is_empty() {
                out.push((watch.clone(), captured));
            }
        }
        out
    }
}

impl super::DatabaseStore {
    /// Starts noting the writes of `coll` (see the module's documentation). Every write this
    /// watch does not note has committed before this returns: reads that start after it see
    /// it (a commit that looked for watches before this one was listed holds the writer,
    /// which this waits for).
    pub async fn watch_range(
        self: &Arc<Self>,
        coll: &CollectionMeta,
        in_range: RangePredicate,
    ) -> Result<WatchGuard> {
        let watch = Arc::new(RangeWatch {
            coll: coll.ident,
            in_range,
            captured: Mutex::default(),
            fenced: AtomicBool::new(false),
        });
        {
            let mut list = self.range_watches.list.write().expect("poisoned");
            list.push(watch.clone());
            self.range_watches
                .count
                .store(list.len(), Ordering::Release);
        }
        let guard = WatchGuard {
            watch,
            db: self.clone(),
        };
        self.write_barrier().await?;
        Ok(guard)
    }

    /// Waits until every write that started before this call has committed or rolled back
    /// (it takes the writer once): after [`RangeWatch::fence`], what the watch noted is then
    /// all a transaction will ever commit there.
    pub async fn write_barrier(&self) -> Result<()> {
        self.write().await?.rollback().await
    }

    /// Whether a prepared transaction holds a document of `coll` (it commits despite a fence:
    /// a migration waits for it).
    pub fn prepared_in(&self, coll: &CollectionMeta) -> bool {
        self.locks.prepared_in_collection(coll.ident)
    }
}
