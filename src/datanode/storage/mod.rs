//! A data node's storage engine on SQLite (writes through `sqlx`, reads through `rusqlite` on
//! the calling thread): one database file per MongoDB database, each collection a table of
//! `(record id, BSON document)`, each index a table of `(order-preserving key, record id, type
//! bits)`. This is the only module that contains SQL. A multi-document transaction
//! (`StorageTransaction`) reads a pinned snapshot of each file it uses and buffers its writes
//! over it (`TxnView`), applying them in one write transaction per file at commit; document
//! locks (`doc_locks`) make its first writer of a document win. Reads at a past cluster time
//! apply each file's in-memory undo history (`history`) over the latest snapshot.

mod capped;
mod catalog;
mod coll_mod;
mod copy;
mod database;
mod doc_locks;
mod documents;
mod durability;
mod history;
mod index_build;
mod index_usage;
mod keys;
mod range_watch;
mod read_sql;
mod readers;
mod transaction;
mod transactions;
mod txn;
mod txn_view;

pub use capped::CappedLimits;
pub use catalog::{CollectionMeta, IndexMeta};
pub use database::{DatabaseStore, connect_options, reader_connect_options, stable_plans};
pub use history::{DEFAULT_HISTORY_WINDOW_SECS, HISTORY_MEMORY_BYTES};
pub use index_build::IndexBuildStats;
pub use index_usage::IndexUsage;
pub use range_watch::{Captured, RangePredicate, RangeWatch, WatchGuard};
pub use read_sql::DocumentReads;
pub use transaction::{StorageTransaction, Writes};
pub use transactions::{SessionRecord, SessionRecords, StatementRecord};
pub use txn::{
    IndexEntry, IndexRange, IndexRanges, KeyEntry, RANGES_PER_STATEMENT, ReadTxn, RecordId,
    WriteTxn,
};
pub use txn_view::TxnView;

use crate::error::{ErrorCode, MongoError, Result};
use crate::server::clock::LogicalClock;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU32;
use tokio::sync::RwLock;

/// Every database of one node.
pub struct Storage {
    dir: PathBuf,
    /// The node's clock, which every database's write transactions tick.
    clock: Arc<LogicalClock>,
    /// `minSnapshotHistoryWindowInSeconds`: how long every database keeps its history.
    history_window: Arc<AtomicU32>,
    dbs: RwLock<BTreeMap<String, Arc<DatabaseStore>>>,
}

const FILE_SUFFIX: &str = ".sqlite";
const SPILL_DIR: &str = "_tmp";

impl Storage {
    /// Opens (creating if needed) the data directory and every database file in it, keeping
    /// the default snapshot history window.
    pub async fn open(dir: &Path, clock: Arc<LogicalClock>) -> Result<Arc<Storage>> {
        let window = Arc::new(AtomicU32::new(DEFAULT_HISTORY_WINDOW_SECS));
        Self::open_with_history_window(dir, clock, window).await
    }

    /// A node's storage: its clock, and history kept for its `minSnapshotHistoryWindowInSeconds`.
    pub async fn open_for(node: &crate::server::Node, dir: &Path) -> Result<Arc<Storage>> {
        let window = node.params.snapshot_history_window();
        Self::open_with_history_window(dir, node.clock.clone(), window).await
    }

    /// [`open`](Self::open), keeping history for `history_window` seconds as it is now (the
    /// node's `minSnapshotHistoryWindowInSeconds`, which `setParameter` changes in place).
    pub async fn open_with_history_window(
        dir: &Path,
        clock: Arc<LogicalClock>,
        history_window: Arc<AtomicU32>,
    ) -> Result<Arc<Storage>> {
        std::fs::create_dir_all(dir).map_err(|e| {
            MongoError::internal(format!(
                "cannot create data directory {}: {e}",
                dir.display()
            ))
        })?;
        // Sort runs a previous process spilled are garbage now (MongoDB clears `_tmp` too).
        let _ = std::fs::remove_dir_all(dir.join(SPILL_DIR));
        let mut dbs = BTreeMap::new();
        let entries = std::fs::read_dir(dir).map_err(|e| {
            MongoError::internal(format!("cannot read data directory {}: {e}", dir.display()))
        })?;
        for entry in entries.flatten() {
            let file = entry.file_name().to_string_lossy().to_string();
            let Some(encoded) = file.strip_suffix(FILE_SUFFIX) else {
                continue;
            };
            let Some(name) = decode_name(encoded) else {
                continue;
            };
            let db =
                DatabaseStore::open(&name, &entry.path(), clock.clone(), history_window.clone())
                    .await?;
            let db = Arc::new(db);
            db.register();
            dbs.insert(name, db);
        }
        let storage = Arc::new(Storage {
            dir: dir.to_path_buf(),
            clock,
            history_window,
            dbs: RwLock::new(dbs),
        });
        storage.drop_rename_leftovers().await?;
        Ok(storage)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where blocking sorts spill runs (`_tmp`, as in MongoDB; cleared at startup).
    pub fn spill_dir(&self) -> std::path::PathBuf {
        self.dir.join(SPILL_DIR)
    }

    /// The database if it exists on this node (it may hold no collections).
    pub async fn database(&self, name: &str) -> Option<Arc<DatabaseStore>> {
        self.dbs.read().await.get(name).cloned()
    }

    /// A collection with its database, if both exist.
    pub async fn collection(
        &self,
        db: &str,
        collection: &str,
    ) -> Option<(Arc<DatabaseStore>, Arc<CollectionMeta>)> {
        let database = self.database(db).await?;
        let meta = database.collection(collection)?;
        Some((database, meta))
    }

    /// The database, created when missing. Names differing only in case are refused, as
    /// MongoDB refuses them.
    pub async fn database_or_create(&self, name: &str) -> Result<Arc<DatabaseStore>> {
        if let Some(db) = self.database(name).await {
            return Ok(db);
        }
        let mut dbs = self.dbs.write().await;
        if let Some(db) = dbs.get(name) {
            return Ok(db.clone());
        }
        if let Some(other) = dbs.keys().find(|k| k.eq_ignore_ascii_case(name)) {
            return Err(MongoError::new(
                ErrorCode::DatabaseDifferCase,
                format!(
                    "db already exists with different case already have: [{other}] trying to create [{name}]"
                ),
            ));
        }
        let path = self.dir.join(format!("{}{FILE_SUFFIX}", encode_name(name)));
        let db = DatabaseStore::open(name, &path, self.clock.clone(), self.history_window.clone())
            .await?;
        let db = Arc::new(db);
        db.register();
        dbs.insert(name.to_string(), db.clone());
        Ok(db)
    }

    /// Every database file this node has open (with or without collections).
    pub async fn databases(&self) -> Vec<Arc<DatabaseStore>> {
        self.dbs.read().await.values().cloned().collect()
    }

    /// Names of databases that hold at least one collection.
    pub async fn database_names(&self) -> Vec<String> {
        let dbs = self.dbs.read().await;
        let mut names = Vec::new();
        for (name, db) in dbs.iter() {
            if !db.collections().is_empty() {
                names.push(name.clone());
            }
        }
        names
    }

    /// Drops a database and deletes its files. Returns whether it existed.
    pub async fn drop_database(&self, name: &str) -> Result<bool> {
        let db = self.dbs.write().await.remove(name);
        match db {
            Some(db) => {
                db.close_and_delete().await?;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

/// File-name form of a database name: ASCII letters, digits, `_` and `-` as is, every other
/// byte as `%XX` (so names never clash and survive case-insensitive file systems).
fn encode_name(name: &str) -> String {
    let mut out = String::new();
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn decode_name(encoded: &str) -> Option<String> {
    let bytes = encoded.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn sql_error(context: &str, e: sqlx::Error) -> MongoError {
    MongoError::internal(format!("storage error while {context}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_file_names() {
        for name in ["app", "my-db_1", "weird db", "ünïcode", "a%b"] {
            assert_eq!(decode_name(&encode_name(name)).as_deref(), Some(name));
        }
        assert_eq!(encode_name("a b"), "a%20b");
    }
}

#[cfg(test)]
mod engine_tests;

#[cfg(test)]
mod type_bits_tests;

#[cfg(test)]
mod index_build_tests;

#[cfg(test)]
mod transaction_tests;

#[cfg(test)]
mod multikey_tests;
