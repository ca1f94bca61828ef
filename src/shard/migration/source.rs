//! The donor's chunk cloner (MongoDB's MigrationChunkClonerSource): it serves the range's
//! documents in shard key order, a batch per `_migrateClone`, from the index that serves the
//! shard key, and per `_transferMods` the documents written since the clone began. A range
//! watch on the collection (`storage::range_watch`) notes every committed write from before
//! the first batch is read: a document written after its batch was read is sent again (or its
//! deletion, when it left the range), so no write racing the clone is lost.

use super::KeyRange;
use crate::datanode::storage::{
    Captured, CollectionMeta, DatabaseStore, DocumentReads, IndexRange, RecordId, WatchGuard,
};
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, RawDocumentBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of documents per batch: MongoDB's batches stay under the 16 MB document limit.
const BATCH_BYTES: usize = 8 * 1024 * 1024;
/// Index entries per storage read.
const READ_ROWS: i64 = 1_000;

pub(crate) struct Source {
    pub session_id: String,
    pub range: KeyRange,
    db: Arc<DatabaseStore>,
    coll: String,
    index: String,
    watch: WatchGuard,
    position: tokio::sync::Mutex<Position>,
    pub cloned: AtomicU64,
    pub cloned_bytes: AtomicU64,
    /// Where the donor is (`currentOp`): clone, catchup, criticalSection, commit.
    phase: std::sync::Mutex<&'static str>,
}

/// How far the clone has read: the last index entry served.
#[derive(Default)]
struct Position {
    after: Option<(Vec<u8>, RecordId)>,
    done: bool,
}

/// One `_transferMods` batch: documents to write again, `_id`s to delete.
pub(crate) struct Mods {
    pub reload: Vec<RawDocumentBuf>,
    pub deleted: Vec<Bson>,
    pub bytes: usize,
}

impl Source {
    /// Starts watching `coll`'s writes to `range`, to be cloned through index `index`.
    pub async fn start(
        session_id: String,
        db: Arc<DatabaseStore>,
        coll: &CollectionMeta,
        index: &str,
        range: KeyRange,
    ) -> Result<Source> {
        let watched = range.clone();
        let watch = db
            .watch_range(coll, Box::new(move |doc| watched.contains(doc)))
            .await?;
        Ok(Source {
            session_id,
            range,
            db,
            coll: coll.name.clone(),
            index: index.to_string(),
            watch,
            position: Default::default(),
            cloned: AtomicU64::new(0),
            cloned_bytes: AtomicU64::new(0),
            phase: std::sync::Mutex::new("clone"),
        })
    }

    fn collection(&self) -> Result<Arc<CollectionMeta>> {
        self.db.collection(&self.coll).ok_or_else(|| {
            MongoError::new(
                ErrorCode::ConflictingOperationInProgress,
                format!(
                    "{} was dropped during the migration of range {}",
                    self.range.ns,
                    self.range.display()
                ),
            )
        })
    }

    /// The next batch of the range's documents; empty once all were served.
    pub async fn clone_batch(&self) -> Result<Vec<RawDocumentBuf>> {
        let mut position = self.position.lock().await;
        if position.done {
            return Ok(Vec::new());
        }
        let coll = self.collection()?;
        let index = coll
            .indexes
            .iter()
            .find(|i| i.name == self.index)
            .ok_or_else(|| {
                MongoError::new(
                    ErrorCode::IndexNotFound,
                    format!(
                        "the shard key index {} of {} was dropped during a migration",
                        self.index, self.range.ns
                    ),
                )
            })?;
        let mut read = self.db.read().await?;
        let (mut out, mut bytes) = (Vec::new(), 0usize);
        while bytes < BATCH_BYTES {
            let range = IndexRange {
                resume: position.after.as_ref().map(|(k, rid)| (k.as_slice(), *rid)),
                ..self.range.scan(index, READ_ROWS)
            };
            let rows = read.index_scan(&coll, &range).await?;
            let full = rows.len() as i64 == READ_ROWS;
            for (key, rid, doc) in rows {
                bytes += doc.as_bytes().len();
                out.push(doc);
                position.after = Some((key, rid));
            }
            if !full {
                position.done = true;
                break;
            }
        }
        self.cloned.fetch_add(out.len() as u64, Ordering::Relaxed);
        self.cloned_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        Ok(out)
    }

    /// The writes noted since the last call, read as they are now: the range's documents to
    /// write again, and the `_id`s of documents that left it (deleted, or moved out of the
    /// range by a shard key update). What does not fit a batch waits for the next call.
    pub async fn transfer_mods(&self) -> Result<Mods> {
        let watch = self.watch.watch();
        let captured = watch.take();
        let coll = self.collection()?;
        let mut read = self.db.read().await?;
        let mut rest = Captured::default();
        let mut mods = Mods {
            reload: Vec::new(),
            deleted: Vec::new(),
            bytes: 0,
        };
        for rid in captured.rids {
            if mods.bytes >= BATCH_BYTES {
                rest.rids.insert(rid);
                continue;
            }
            if let Some(doc) = read.fetch_by_rid(&coll, rid).await? {
                if self.range.contains(&doc) {
                    mods.bytes += doc.as_bytes().len();
                    mods.reload.push(doc);
                }
            }
        }
        for id in captured.left {
            // Back in the range (deleted and inserted again, or updated back): its record is
            // among those written, sent as it is now.
            if let Some((_, doc)) = read.fetch_by_id(&coll, &id).await? {
                if self.range.contains(&doc) {
                    continue;
                }
            }
            mods.deleted.push(id);
        }
        if !rest.is_empty() {
            watch.add(rest);
        }
        Ok(mods)
    }

    pub fn set_phase(&self, phase: &'static str) {
        tracing::info!(ns = %self.range.ns, range = %self.range.display(), phase, "migration donor");
        *self.phase.lock().expect("poisoned") = phase;
    }

    /// The donation as `currentOp` shows it.
    pub fn report(&self, to: &str) -> bson::Document {
        bson::doc! {
            "role": "donor",
            "sessionId": &self.session_id,
            "to": to,
            "min": self.range.min.clone(),
            "max": self.range.max.clone(),
            "phase": *self.phase.lock().expect("poisoned"),
            "cloned": self.cloned.load(Ordering::Relaxed) as i64,
            "clonedBytes": self.cloned_bytes.load(Ordering::Relaxed) as i64,
            "pendingMods": self.watch.watch().pending() as i64,
        }
    }

    /// Enters the storage side of the critical section: from now on no transaction writing the
    /// collection commits (but a prepared one, waited for), and every write that started
    /// before has committed and been noted.
    pub async fn fence(&self) -> Result<()> {
        self.watch.watch().fence();
        self.db.write_barrier().await?;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let coll = self.collection()?;
        while self.db.prepared_in(&coll) {
            if std::time::Instant::now() > deadline {
                return Err(MongoError::new(
                    ErrorCode::LockTimeout,
                    format!(
                        "a prepared transaction on {} kept the migration of range {} from entering its critical section",
                        self.range.ns,
                        self.range.display()
                    ),
                ));
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        Ok(())
    }
}
