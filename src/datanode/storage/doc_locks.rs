//! The document locks of one database file: which multi-document transaction wrote a document
//! first (`(collection ident, _id key)` → transaction id). A transaction's later writer of the
//! same document, or a plain write, meets a WriteConflict instead of waiting (first writer
//! wins); a prepared transaction's locks also hold off plain reads of its documents.

use crate::error::{ErrorCode, MongoError};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// A locked document: its collection's ident and its `_id` index key.
pub(super) type DocKey = (i64, Vec<u8>);

/// The lock key of a collection name a transaction creates: no collection's ident is negative.
pub(super) fn namespace_key(name: &str) -> DocKey {
    (-1, name.as_bytes().to_vec())
}

#[derive(Default)]
pub(super) struct DocLocks {
    /// Locks held: plain writes skip every lock check while it is zero (the hot path).
    held: AtomicUsize,
    /// Transactions prepared on this file: plain reads look for prepared documents only then.
    prepared: AtomicUsize,
    table: Mutex<HashMap<DocKey, Owner>>,
    /// The index keys prepared transactions write or remove: `(index ident, key)` → owner. A
    /// plain index read whose range holds one waits (MongoDB's prepare conflict on an index
    /// entry; covered reads have no `_id` to look for).
    prepared_keys: Mutex<HashMap<(i64, Vec<u8>), u64>>,
    released: Notify,
}

#[derive(Clone, Copy)]
struct Owner {
    txn: u64,
    prepared: bool,
}

/// How long a waiter sleeps at most between looks: a release between a conflict and the wait
/// would otherwise be missed until the next one.
const RECHECK: Duration = Duration::from_millis(50);

/// MongoDB's WriteConflict, as a write in a transaction or beside one meets it.
pub(crate) fn write_conflict() -> MongoError {
    MongoError::new(
        ErrorCode::WriteConflict,
        "Caused by :: Write conflict during plan execution and yielding is disabled. :: Please retry your operation or multi-document transaction.",
    )
}

impl DocLocks {
    /// Takes `key` for `txn`: false if another transaction holds it.
    pub(super) fn lock(&self, key: &DocKey, txn: u64) -> bool {
        let mut table = self.table.lock().expect("poisoned");
        match table.get(key) {
            Some(owner) => owner.txn == txn,
            None => {
                table.insert(
                    key.clone(),
                    Owner {
                        txn,
                        prepared: false,
                    },
                );
                self.held.fetch_add(1, Ordering::AcqRel);
                true
            }
        }
    }

    /// Whether any lock is held (cheap; plain writes look at nothing else when none is).
    pub(super) fn any(&self) -> bool {
        self.held.load(Ordering::Acquire) > 0
    }

    /// Whether a transaction other than `me` (0: none) holds `key`.
    pub(super) fn held_by_other(&self, key: &DocKey, me: u64) -> bool {
        self.table
            .lock()
            .expect("poisoned")
            .get(key)
            .is_some_and(|o| o.txn != me)
    }

    /// Whether any transaction is prepared on this file.
    pub(super) fn any_prepared(&self) -> bool {
        self.prepared.load(Ordering::Acquire) > 0
    }

    /// Whether a prepared transaction holds `key`.
    pub(super) fn is_prepared(&self, key: &DocKey) -> bool {
        self.table
            .lock()
            .expect("poisoned")
            .get(key)
            .is_some_and(|o| o.prepared)
    }

    /// Marks `txn`'s locks prepared, with the index keys it writes or removes.
    pub(super) fn prepare(&self, txn: u64, index_keys: impl IntoIterator<Item = (i64, Vec<u8>)>) {
        self.prepared_keys
            .lock()
            .expect("poisoned")
            .extend(index_keys.into_iter().map(|k| (k, txn)));
        let mut table = self.table.lock().expect("poisoned");
        let mut any = false;
        for owner in table.values_mut().filter(|o| o.txn == txn && !o.prepared) {
            owner.prepared = true;
            any = true;
        }
        if any {
            self.prepared.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Whether a prepared transaction writes or removes a key of index `index` in
    /// `[low, high)`.
    pub(super) fn prepared_key_in(&self, index: i64, low: &[u8], high: Option<&[u8]>) -> bool {
        self.prepared_keys
            .lock()
            .expect("poisoned")
            .keys()
            .any(|(i, key)| {
                *i == index && key.as_slice() >= low && high.is_none_or(|h| key.as_slice() < h)
            })
    }

    /// Whether a prepared transaction holds a document of collection `coll`.
    pub(super) fn prepared_in_collection(&self, coll: i64) -> bool {
        if self.prepared.load(Ordering::Acquire) == 0 {
            return false;
        }
        self.table
            .lock()
            .expect("poisoned")
            .iter()
            .any(|((c, _), owner)| *c == coll && owner.prepared)
    }

    /// Releases every lock of `txn` and wakes the waiters.
    pub(super) fn release(&self, txn: u64) {
        self.prepared_keys
            .lock()
            .expect("poisoned")
            .retain(|_, owner| *owner != txn);
        let mut table = self.table.lock().expect("poisoned");
        let before = table.len();
        let mut was_prepared = false;
        table.retain(|_, o| {
            was_prepared |= o.txn == txn && o.prepared;
            o.txn != txn
        });
        let released = before - table.len();
        drop(table);
        if released == 0 {
            return;
        }
        self.held.fetch_sub(released, Ordering::AcqRel);
        if was_prepared {
            self.prepared.fetch_sub(1, Ordering::AcqRel);
        }
        self.released.notify_waiters();
    }

    /// Waits until some lock is released (at most [`RECHECK`]); at once when none is held.
    pub(super) async fn wait_for_release(&self) {
        let released = self.released.notified();
        if !self.any() {
            return;
        }
        let _ = tokio::time::timeout(RECHECK, released).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_writer_wins_until_it_releases() {
        let locks = DocLocks::default();
        let key = (1, vec![1, 2]);
        assert!(!locks.any());
        assert!(locks.lock(&key, 7));
        assert!(locks.lock(&key, 7), "the owner may take it again");
        assert!(!locks.lock(&key, 8));
        assert!(locks.any() && locks.held_by_other(&key, 0) && !locks.held_by_other(&key, 7));
        assert!(!locks.is_prepared(&key));
        locks.prepare(7, [(5, vec![3])]);
        assert!(locks.any_prepared() && locks.is_prepared(&key));
        assert!(locks.prepared_key_in(5, &[2], Some(&[4])));
        assert!(!locks.prepared_key_in(5, &[4], None) && !locks.prepared_key_in(6, &[], None));
        locks.release(7);
        assert!(!locks.any() && !locks.any_prepared());
        assert!(!locks.prepared_key_in(5, &[], None));
        assert!(locks.lock(&key, 8));
        locks.wait_for_release().await;
        locks.release(8);
        locks.wait_for_release().await;
    }
}
