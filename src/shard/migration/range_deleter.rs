//! The range deleter (MongoDB's RangeDeleterService): deletes the documents of the ranges this
//! shard no longer owns, one `config.rangeDeletions` task at a time. A task is skipped while
//! pending (its migration's outcome unknown). A ready one waits for the queries that may
//! still read the range (those holding an ownership filter from before the change), then for
//! `orphanCleanupDelaySecs` (unless it is to be cleaned now: `waitForDelete`, a recipient's
//! copies, `cleanupOrphaned`, a migration waiting for the range), then deletes the range in
//! batches of `rangeDeleterBatchSize` documents `rangeDeleterBatchDelayMS` apart, and removes
//! the task. Tasks survive restarts: the service resumes them when the shard starts.

use super::{CONFIG_DB, KeyRange, RANGE_DELETIONS, uuid_bson};
use crate::catalog::ShardKeyPattern;
use crate::datanode::DataNode;
use crate::datanode::storage::DocumentReads;
use crate::error::{ErrorCode, MongoError, Result};
use crate::shard::ShardState;
use crate::shard::shard_key_index::serving_index;
use bson::{Bson, Document, doc};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// The most documents one storage transaction of the deleter removes, whatever
/// `rangeDeleterBatchSize` says (MongoDB's default is unbounded): the writer is shared.
const MAX_BATCH: i64 = 1_000;
/// How long a waiting migration or `cleanupOrphaned` lets deletions run before giving up.
const WAIT_LIMIT: Duration = Duration::from_secs(120);

#[derive(Default)]
pub(crate) struct RangeDeleter {
    wake: tokio::sync::Notify,
    /// Tasks to run without their delay.
    expedited: Mutex<HashSet<Vec<u8>>>,
    /// Bumped whenever a task ends.
    finished: tokio::sync::watch::Sender<u64>,
}

/// A `config.rangeDeletions` document, read.
struct Task {
    id: Bson,
    range: KeyRange,
    collection_uuid: Bson,
    pending: bool,
    now: bool,
}

impl Task {
    fn parse(doc: &Document) -> Option<Task> {
        let range = doc.get_document("range").ok()?;
        let key = ShardKeyPattern::parse(doc.get_document("keyPattern").ok()?).ok()?;
        Some(Task {
            id: doc.get("_id")?.clone(),
            range: KeyRange::new(
                doc.get_str("nss").ok()?,
                key,
                range.get_document("min").ok()?.clone(),
                range.get_document("max").ok()?.clone(),
            ),
            collection_uuid: doc.get("collectionUuid").cloned().unwrap_or(Bson::Null),
            pending: doc.get_bool("pending").unwrap_or(false),
            now: doc.get_str("whenToClean") == Ok("now"),
        })
    }

    fn key(&self) -> Vec<u8> {
        match &self.id {
            Bson::Binary(b) => b.bytes.clone(),
            other => other.to_string().into_bytes(),
        }
    }
}

impl ShardState {
    /// Persists a deletion task for `range` (pending while its migration runs).
    pub(crate) async fn persist_range_deletion(
        &self,
        migration_id: uuid::Uuid,
        range: &KeyRange,
        collection_uuid: &Bson,
        donor: &str,
        pending: bool,
        now: bool,
    ) -> Result<()> {
        let id = uuid_bson(&migration_id);
        let mut task = doc! {
            "_id": id.clone(),
            "nss": &range.ns,
            "collectionUuid": collection_uuid.clone(),
            "donorShardId": donor,
            "range": range.bounds(),
            "whenToClean": if now { "now" } else { "delayed" },
            "keyPattern": range.key.pattern().clone(),
            "timestamp": self.node.clock.now(),
        };
        if pending {
            task.insert("pending", true);
        }
        self.storage
            .put_document(CONFIG_DB, RANGE_DELETIONS, &id, Some(&task), true)
            .await
    }

    /// Makes a pending task ready (its migration's outcome is known).
    pub(crate) async fn mark_range_deletion_ready(&self, migration_id: &uuid::Uuid) -> Result<()> {
        let id = uuid_bson(migration_id);
        let tasks = self.storage.documents(CONFIG_DB, RANGE_DELETIONS).await?;
        if let Some(mut task) = tasks.into_iter().find(|t| t.get("_id") == Some(&id)) {
            task.remove("pending");
            self.storage
                .put_document(CONFIG_DB, RANGE_DELETIONS, &id, Some(&task), true)
                .await?;
        }
        self.migrations.range_deleter.wake.notify_one();
        Ok(())
    }

    pub(crate) async fn delete_range_deletion(&self, migration_id: &uuid::Uuid) -> Result<()> {
        let id = uuid_bson(migration_id);
        self.storage
            .put_document(CONFIG_DB, RANGE_DELETIONS, &id, None, true)
            .await
    }

    async fn tasks(&self) -> Result<Vec<Task>> {
        Ok(self
            .storage
            .documents(CONFIG_DB, RANGE_DELETIONS)
            .await?
            .iter()
            .filter_map(Task::parse)
            .collect())
    }

    /// The documents of `ns` in ranges awaiting deletion here, pending ones included (a
    /// recipient's copies are orphans until its migration commits).
    pub(crate) async fn count_orphans(&self, ns: &str) -> Result<i64> {
        let mut total = 0;
        for task in self.tasks().await?.into_iter().filter(|t| t.range.ns == ns) {
            let Some((database, _, index)) = self.range_reader(&task.range).await else {
                continue;
            };
            let scan = task.range.scan(&index, i64::MAX);
            total += database.read().await?.index_keys(&scan).await?.len() as i64;
        }
        Ok(total)
    }

    /// Waits for the task `migration_id` to be done, running it without its delay.
    pub(crate) async fn wait_for_range_deletion(&self, migration_id: uuid::Uuid) -> Result<()> {
        let id = uuid_bson(&migration_id);
        self.wait_for_tasks(|t| t.id == id, None).await
    }

    /// Waits for the deletions of ranges overlapping `range` here to finish (a recipient must
    /// not receive documents a deletion would then remove), running them without their delay.
    pub(crate) async fn wait_for_overlapping_deletions(
        &self,
        range: &KeyRange,
        abort: &AtomicBool,
    ) -> Result<()> {
        self.wait_for_tasks(
            |t| t.range.ns == range.ns && t.range.overlaps(range),
            Some(abort),
        )
        .await
    }

    /// `cleanupOrphaned`: waits until the collection has no range left to delete, running
    /// its deletions without their delay.
    pub(crate) async fn cleanup_orphaned(&self, ns: &str) -> Result<()> {
        self.wait_for_tasks(|t| t.range.ns == ns, None).await
    }

    async fn wait_for_tasks(
        &self,
        selected: impl Fn(&Task) -> bool,
        abort: Option<&AtomicBool>,
    ) -> Result<()> {
        let deleter = &self.migrations.range_deleter;
        let deadline = Instant::now() + WAIT_LIMIT;
        loop {
            let mut finished = deleter.finished.subscribe();
            let waiting: Vec<Task> = self.tasks().await?.into_iter().filter(&selected).collect();
            if waiting.is_empty() {
                return Ok(());
            }
            if abort.is_some_and(|a| a.load(std::sync::atomic::Ordering::Acquire)) {
                return Err(MongoError::new(
                    ErrorCode::Interrupted,
                    "the migration was aborted",
                ));
            }
            if Instant::now() > deadline {
                return Err(MongoError::new(
                    ErrorCode::ConflictingOperationInProgress,
                    format!(
                        "the deletion of range {} of {} is still {}",
                        waiting[0].range.display(),
                        waiting[0].range.ns,
                        if waiting[0].pending {
                            "pending: its migration's outcome is not known yet"
                        } else {
                            "running"
                        }
                    ),
                ));
            }
            {
                let mut expedited = deleter.expedited.lock().expect("poisoned");
                expedited.extend(waiting.iter().map(Task::key));
            }
            deleter.wake.notify_one();
            let _ = tokio::time::timeout(Duration::from_millis(200), finished.changed()).await;
        }
    }
}

/// Runs the deleter while the shard lives.
pub(crate) fn spawn_range_deleter(state: Weak<ShardState>) {
    tokio::spawn(async move {
        // When each ready task was first seen ready: its delay counts from then (as in
        // MongoDB, a restart starts the delay again).
        let mut ready_since: HashMap<Vec<u8>, Instant> = HashMap::new();
        loop {
            let Some(shard) = state.upgrade() else { return };
            let next = match run_due_tasks(&shard, &mut ready_since).await {
                Ok(next) => next,
                Err(e) => {
                    tracing::warn!(error = %e, "range deleter");
                    Duration::from_secs(1)
                }
            };
            let deleter = &shard.migrations.range_deleter;
            let woken = deleter.wake.notified();
            let _ = tokio::time::timeout(next, woken).await;
        }
    });
}

/// Runs every task that is due; returns how long until the next one may be.
async fn run_due_tasks(
    shard: &Arc<ShardState>,
    ready_since: &mut HashMap<Vec<u8>, Instant>,
) -> Result<Duration> {
    let delay = Duration::from_secs(
        shard
            .node
            .params
            .get_i64("orphanCleanupDelaySecs")
            .unwrap_or(900)
            .max(0) as u64,
    );
    let mut next = Duration::from_secs(1);
    let tasks = shard.tasks().await?;
    ready_since.retain(|k, _| tasks.iter().any(|t| t.key() == *k));
    for task in tasks.iter().filter(|t| !t.pending) {
        let key = task.key();
        let since = *ready_since.entry(key.clone()).or_insert_with(Instant::now);
        let expedited = shard
            .migrations
            .range_deleter
            .expedited
            .lock()
            .expect("poisoned")
            .contains(&key);
        let wait = if task.now || expedited {
            Duration::ZERO
        } else {
            delay
        };
        if since.elapsed() < wait {
            next = next.min(wait - since.elapsed());
            continue;
        }
        // Queries that started before the range changed hands may still read it.
        if shard.filters_in_use(&task.range.ns) {
            next = next.min(Duration::from_millis(100));
            continue;
        }
        let deleted = delete_range(shard, task).await?;
        shard
            .node
            .stats
            .migrations
            .docs_deleted_by_range_deleter
            .fetch_add(deleted as i64, std::sync::atomic::Ordering::Relaxed);
        shard
            .storage
            .put_document(CONFIG_DB, RANGE_DELETIONS, &task.id, None, true)
            .await?;
        tracing::info!(ns = %task.range.ns, range = %task.range.display(), deleted, "deleted an orphaned range");
        let deleter = &shard.migrations.range_deleter;
        deleter.expedited.lock().expect("poisoned").remove(&key);
        deleter.finished.send_modify(|n| *n += 1);
    }
    Ok(next)
}

/// Deletes the documents of the task's range, in batches; returns how many.
async fn delete_range(shard: &ShardState, task: &Task) -> Result<u64> {
    let range = &task.range;
    let Some((db, coll)) = range.ns.split_once('.') else {
        return Ok(0);
    };
    let Some((database, coll)) = shard.storage().collection(db, coll).await else {
        return Ok(0);
    };
    let same_collection = match &task.collection_uuid {
        Bson::Binary(b) => b.bytes == coll.uuid.as_bytes(),
        _ => true,
    };
    if !same_collection {
        // Dropped and created again since: the range's documents went with the old one.
        return Ok(0);
    }
    let Some(index) = serving_index(&coll, &range.key) else {
        return Err(MongoError::new(
            ErrorCode::IndexNotFound,
            format!(
                "no index serves the shard key of {}: cannot delete range {}",
                range.ns,
                range.display()
            ),
        ));
    };
    let params = &shard.node.params;
    let batch = params
        .get_i64("rangeDeleterBatchSize")
        .unwrap_or(i64::from(i32::MAX))
        .clamp(1, MAX_BATCH);
    let pause = Duration::from_millis(
        params
            .get_i64("rangeDeleterBatchDelayMS")
            .unwrap_or(20)
            .max(0) as u64,
    );
    let mut deleted = 0u64;
    loop {
        let coll = database
            .collection(&coll.name)
            .unwrap_or_else(|| coll.clone());
        let Some(index) = coll.indexes.iter().find(|i| i.name == index) else {
            return Ok(deleted);
        };
        let mut txn = database.write().await?;
        let scan = range.scan(index, batch);
        let rows = txn.index_scan(&coll, &scan).await?;
        if rows.is_empty() {
            txn.rollback().await?;
            return Ok(deleted);
        }
        for (_, rid, doc) in &rows {
            txn.delete(&coll, *rid, doc).await?;
        }
        txn.commit().await?;
        deleted += rows.len() as u64;
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
}
