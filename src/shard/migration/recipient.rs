//! The recipient's side of a migration (MongoDB's MigrationDestinationManager): started by the
//! donor's `_recvChunkStart`, a task waits for any deletion of an overlapping range here to
//! finish, persists a pending range deletion for the incoming range (so a failed migration's
//! copies are cleaned), pulls the range's documents (`_migrateClone`) and then the writes made
//! since (`_transferMods`) until it has caught up ("steady"), and keeps pulling until the donor,
//! in its critical section, asks it to commit (`_recvChunkCommit`): it enters its own critical
//! section on the collection, drains the last writes and answers "done". The donor then tells
//! it the outcome: `_recvChunkReleaseCritSec` after a commit (the range is this shard's: its
//! pending deletion goes), `_recvChunkAbort` otherwise (the copies are deleted).

use super::{ActiveMigration, CONFIG_DB, KeyRange, RANGE_DELETIONS, uuid_bson};
use crate::command::CommandRequest;
use crate::datanode::storage::{CollectionMeta, DatabaseStore, DocumentReads};
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::NodeClient;
use crate::shard::ShardState;
use bson::{Bson, Document, RawDocumentBuf, doc};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long the recipient waits between `_transferMods` that found nothing.
const IDLE_POLL: Duration = Duration::from_millis(10);
/// How long `_recvChunkCommit` waits for the last writes to arrive.
const COMMIT_TIMEOUT: Duration = Duration::from_secs(60);

/// MongoDB's recipient states, as `_recvChunkStatus` names them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RecvState {
    Ready,
    Clone,
    Catchup,
    Steady,
    CommitStart,
    Done,
    Fail(String),
    Abort,
}

impl RecvState {
    fn name(&self) -> &'static str {
        match self {
            RecvState::Ready => "ready",
            RecvState::Clone => "clone",
            RecvState::Catchup => "catchup",
            RecvState::Steady => "steady",
            RecvState::CommitStart => "commitStart",
            RecvState::Done => "done",
            RecvState::Fail(_) => "fail",
            RecvState::Abort => "abort",
        }
    }

    fn finished(&self) -> bool {
        matches!(
            self,
            RecvState::Done | RecvState::Fail(_) | RecvState::Abort
        )
    }
}

/// What `_recvChunkStart` names.
pub(crate) struct ReceiptRequest {
    pub session_id: String,
    pub migration_id: uuid::Uuid,
    pub range: KeyRange,
    pub from_shard: String,
    pub from_host: String,
    pub collection_uuid: Bson,
}

pub(crate) struct Receipt {
    pub request: ReceiptRequest,
    state: Mutex<RecvState>,
    changed: tokio::sync::watch::Sender<u64>,
    commit_requested: AtomicBool,
    abort_requested: AtomicBool,
    pub cloned: AtomicU64,
    pub cloned_bytes: AtomicU64,
    pub caught_up: AtomicU64,
    /// When this shard entered its critical section (`totalRecipientCriticalSectionTimeMillis`).
    section_entered: Mutex<Option<std::time::Instant>>,
}

/// The reason recorded with the recipient's critical section.
pub(super) fn section_reason(migration_id: &uuid::Uuid) -> Document {
    doc! {"command": "migration", "migrationId": migration_id.to_string()}
}

impl Receipt {
    fn set_state(&self, state: RecvState) {
        tracing::info!(ns = %self.request.range.ns, range = %self.request.range.display(), state = state.name(), "migration recipient");
        *self.state.lock().expect("poisoned") = state;
        self.changed.send_modify(|n| *n += 1);
    }

    pub fn state(&self) -> RecvState {
        self.state.lock().expect("poisoned").clone()
    }

    /// `_recvChunkStatus`' reply.
    pub fn status(&self) -> Document {
        let state = self.state();
        let r = &self.request;
        let mut status = doc! {
            "active": !state.finished(),
            "sessionId": &r.session_id,
            "ns": &r.range.ns,
            "from": &r.from_host,
            "fromShardId": &r.from_shard,
            "min": r.range.min.clone(),
            "max": r.range.max.clone(),
            "shardKeyPattern": r.range.key.pattern().clone(),
            "state": state.name(),
            "counts": {
                "cloned": self.cloned.load(Ordering::Relaxed) as i64,
                "clonedBytes": self.cloned_bytes.load(Ordering::Relaxed) as i64,
                "catchup": self.caught_up.load(Ordering::Relaxed) as i64,
                "steady": 0_i64,
            },
        };
        if let RecvState::Fail(message) = state {
            status.insert("errmsg", message);
        }
        status
    }

    /// Asks the task to commit and waits for it to finish: ok once "done".
    pub async fn commit(&self) -> Result<Document> {
        self.commit_requested.store(true, Ordering::Release);
        self.wait_finished(COMMIT_TIMEOUT).await;
        match self.state() {
            RecvState::Done => Ok(self.status()),
            RecvState::Fail(message) => Err(MongoError::new(
                ErrorCode::OperationFailed,
                format!(
                    "migration of {} failed on the recipient: {message}",
                    self.request.range.ns
                ),
            )),
            other => Err(MongoError::new(
                ErrorCode::OperationFailed,
                format!(
                    "the recipient could not commit the migration of {}: it is in state {}",
                    self.request.range.ns,
                    other.name()
                ),
            )),
        }
    }

    /// Asks the task to stop and waits for it.
    pub async fn abort(&self) {
        self.abort_requested.store(true, Ordering::Release);
        self.wait_finished(COMMIT_TIMEOUT).await;
    }

    async fn wait_finished(&self, limit: Duration) {
        let mut changed = self.changed.subscribe();
        let _ = tokio::time::timeout(limit, async {
            while !self.state().finished() {
                if changed.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
    }
}

impl ShardState {
    /// `_recvChunkStart`: registers the receipt and starts its task.
    pub(crate) fn start_receipt(&self, request: ReceiptRequest) -> Result<()> {
        let registration = self.migrations.register(ActiveMigration {
            donating: false,
            range: request.range.clone(),
            other: request.from_shard.clone(),
        })?;
        let receipt = Arc::new(Receipt {
            request,
            state: Mutex::new(RecvState::Ready),
            changed: tokio::sync::watch::Sender::new(0),
            commit_requested: AtomicBool::new(false),
            abort_requested: AtomicBool::new(false),
            cloned: AtomicU64::new(0),
            cloned_bytes: AtomicU64::new(0),
            caught_up: AtomicU64::new(0),
            section_entered: Mutex::new(None),
        });
        *self.migrations.receipt.lock().expect("poisoned") = Some(receipt.clone());
        registration.detach();
        let state = self.arc();
        tokio::spawn(async move {
            let outcome = receive(&state, &receipt).await;
            match outcome {
                Ok(()) => {}
                Err(e) if receipt.abort_requested.load(Ordering::Acquire) => {
                    tracing::info!(error = %e, "migration recipient aborted");
                    receipt.set_state(RecvState::Abort);
                }
                Err(e) => {
                    tracing::warn!(ns = %receipt.request.range.ns, error = %e, "migration recipient failed");
                    receipt.set_state(RecvState::Fail(e.to_string()));
                }
            }
            state.migrations.unregister();
        });
        Ok(())
    }

    /// The receipt `session_id` names, if it is the current one.
    pub(crate) fn receipt(&self, session_id: &str) -> Option<Arc<Receipt>> {
        self.migrations
            .receipt
            .lock()
            .expect("poisoned")
            .clone()
            .filter(|r| r.request.session_id == session_id)
    }

    /// The donor's word that the migration committed: the range is this shard's, its pending
    /// deletion goes and the critical section ends. Idempotent (the donor's recovery resends it).
    pub(crate) async fn release_receipt(&self, ns: &str, migration_id: &uuid::Uuid) -> Result<()> {
        let id = uuid_bson(migration_id);
        self.storage
            .put_document(CONFIG_DB, RANGE_DELETIONS, &id, None, true)
            .await?;
        self.end_recipient_section(ns, migration_id).await
    }

    /// The donor's word that the migration aborted: the copies are deleted (the pending
    /// deletion becomes ready) and the critical section ends. Idempotent.
    pub(crate) async fn abort_receipt(&self, ns: &str, migration_id: &uuid::Uuid) -> Result<()> {
        let current = self.migrations.receipt.lock().expect("poisoned").clone();
        if let Some(receipt) = current.filter(|r| r.request.migration_id == *migration_id) {
            receipt.abort().await;
        }
        self.mark_range_deletion_ready(migration_id).await?;
        self.end_recipient_section(ns, migration_id).await
    }

    async fn end_recipient_section(&self, ns: &str, migration_id: &uuid::Uuid) -> Result<()> {
        self.critical_sections
            .release_recoverable(&self.storage, &[ns], &section_reason(migration_id))
            .await?;
        let receipt = self.migrations.receipt.lock().expect("poisoned").clone();
        let entered = receipt
            .filter(|r| r.request.migration_id == *migration_id)
            .and_then(|r| r.section_entered.lock().expect("poisoned").take());
        if let Some(entered) = entered {
            let millis = i64::try_from(entered.elapsed().as_millis()).unwrap_or(i64::MAX);
            self.node
                .stats
                .migrations
                .recipient_critical_section_millis
                .fetch_add(millis, Ordering::Relaxed);
        }
        // The next versioned request loads the placement the commit (or abort) left.
        self.forget_filtering(ns);
        Ok(())
    }
}

/// The recipient's task.
async fn receive(state: &Arc<ShardState>, receipt: &Receipt) -> Result<()> {
    let request = &receipt.request;
    let range = &request.range;
    let (db_name, coll_name) = range
        .ns
        .split_once('.')
        .ok_or_else(|| MongoError::bad_value("a migration needs a collection namespace"))?;
    state
        .wait_for_overlapping_deletions(range, &receipt.abort_requested)
        .await?;
    state
        .persist_range_deletion(
            request.migration_id,
            range,
            &request.collection_uuid,
            &request.from_shard,
            true,
            true,
        )
        .await?;
    let database = state.storage.database_or_create(db_name).await?;
    let coll = database.collection(coll_name).ok_or_else(|| {
        MongoError::namespace_not_found(format!("{} does not exist on the recipient", range.ns))
    })?;
    let donor = state.connector.client(&request.from_host);
    state
        .node
        .stats
        .migrations
        .recipient_started
        .fetch_add(1, Ordering::Relaxed);
    receipt.set_state(RecvState::Clone);
    // The next batch is fetched while this one is inserted: the donor reads and sends as the
    // recipient writes.
    let (batches, mut received) = tokio::sync::mpsc::channel::<Result<RawDocumentBuf>>(1);
    let fetcher = {
        let donor = donor.clone();
        let command = doc! {"_migrateClone": &range.ns, "sessionId": &request.session_id};
        tokio::spawn(async move {
            loop {
                let batch = match CommandRequest::from_document("admin", &command) {
                    Ok(request) => donor.run(request).await,
                    Err(e) => Err(e),
                };
                let last = batch.as_ref().map_or(true, |b| {
                    b.get_array("objects")
                        .map_or(true, |objects| objects.into_iter().next().is_none())
                });
                if batches.send(batch).await.is_err() || last {
                    return;
                }
            }
        })
    };
    let counters = &state.node.stats.migrations;
    let cloned = async {
        while let Some(batch) = received.recv().await {
            check_abort(receipt)?;
            let batch = batch?;
            let objects = batch
                .get_array("objects")
                .map_err(|e| MongoError::internal(format!("a clone batch without objects: {e}")))?;
            let docs: Vec<&bson::RawDocument> = objects
                .into_iter()
                .filter_map(|d| d.ok().and_then(|d| d.as_document()))
                .collect();
            if docs.is_empty() {
                break;
            }
            let bytes: usize = docs.iter().map(|d| d.as_bytes().len()).sum();
            let params = &state.node.params;
            let size = params
                .get_i64("migrateCloneInsertionBatchSize")
                .filter(|n| *n > 0)
                .map_or(docs.len(), |n| n as usize);
            let pause = params
                .get_i64("migrateCloneInsertionBatchDelayMS")
                .filter(|ms| *ms > 0)
                .map(|ms| std::time::Duration::from_millis(ms as u64));
            for piece in docs.chunks(size.max(1)) {
                insert_clone_batch(&database, &coll, range, piece).await?;
                if let Some(pause) = pause {
                    tokio::time::sleep(pause).await;
                }
            }
            receipt
                .cloned
                .fetch_add(docs.len() as u64, Ordering::Relaxed);
            receipt
                .cloned_bytes
                .fetch_add(bytes as u64, Ordering::Relaxed);
            counters
                .docs_cloned_on_recipient
                .fetch_add(docs.len() as i64, Ordering::Relaxed);
            counters
                .bytes_cloned_on_recipient
                .fetch_add(bytes as i64, Ordering::Relaxed);
        }
        Ok::<(), MongoError>(())
    }
    .await;
    fetcher.abort();
    cloned?;
    receipt.set_state(RecvState::Catchup);
    while transfer_mods(&database, &coll, &donor, receipt, counters).await? > 0 {
        check_abort(receipt)?;
    }
    receipt.set_state(RecvState::Steady);
    while !receipt.commit_requested.load(Ordering::Acquire) {
        check_abort(receipt)?;
        if transfer_mods(&database, &coll, &donor, receipt, counters).await? == 0 {
            tokio::time::sleep(IDLE_POLL).await;
        }
    }
    receipt.set_state(RecvState::CommitStart);
    *receipt.section_entered.lock().expect("poisoned") = Some(std::time::Instant::now());
    // Blocks this shard's requests on the collection until the donor tells the outcome (the
    // commit may make a newer routing table visible before this shard learns it).
    state
        .critical_sections
        .enter_recoverable(
            &state.storage,
            db_name,
            &[range.ns.as_str()],
            &section_reason(&request.migration_id),
        )
        .await?;
    // The donor's writes are blocked: what is left is finite.
    while transfer_mods(&database, &coll, &donor, receipt, counters).await? > 0 {}
    // Then the records of the retryable writes to the range's documents.
    let sessions = donor
        .run_doc(
            "admin",
            doc! {"_getNextSessionMods": &range.ns, "sessionId": &request.session_id},
        )
        .await?;
    if let Ok(sessions) = sessions.get_array("sessions") {
        state.import_session_records(&range.ns, sessions).await?;
    }
    // Everything received is on disk before the donor may commit.
    let seq = database.write().await?.commit().await?;
    database.wait_durable(seq).await?;
    receipt.set_state(RecvState::Done);
    Ok(())
}

fn check_abort(receipt: &Receipt) -> Result<()> {
    if receipt.abort_requested.load(Ordering::Acquire) {
        return Err(MongoError::new(
            ErrorCode::Interrupted,
            "the migration was aborted",
        ));
    }
    Ok(())
}

/// Inserts a clone batch; a document already here (a copy a failed migration left and no
/// deletion reached yet) is replaced instead.
async fn insert_clone_batch(
    database: &DatabaseStore,
    coll: &CollectionMeta,
    range: &KeyRange,
    docs: &[&bson::RawDocument],
) -> Result<()> {
    let mut txn = database.write().await?;
    match txn.insert(coll, docs).await {
        Ok(()) => {
            txn.commit().await?;
            Ok(())
        }
        Err((_, e)) if e.code() == ErrorCode::DuplicateKey => {
            txn.rollback().await?;
            let owned: Vec<RawDocumentBuf> = docs.iter().map(|d| (*d).to_owned()).collect();
            apply_mods(database, coll, range, &owned, &[]).await
        }
        Err((_, e)) => Err(e),
    }
}

/// One `_transferMods` round: returns how many changes it applied.
async fn transfer_mods(
    database: &DatabaseStore,
    coll: &CollectionMeta,
    donor: &NodeClient,
    receipt: &Receipt,
    counters: &crate::server::stats::MigrationCounters,
) -> Result<usize> {
    let request = &receipt.request;
    let reply = donor
        .run_doc(
            "admin",
            doc! {"_transferMods": &request.range.ns, "sessionId": &request.session_id},
        )
        .await?;
    let reload: Vec<RawDocumentBuf> = reply
        .get_array("reload")
        .map(|a| {
            a.iter()
                .filter_map(|d| d.as_document())
                .filter_map(|d| RawDocumentBuf::from_document(d).ok())
                .collect()
        })
        .unwrap_or_default();
    let deleted: Vec<Bson> = reply
        .get_array("deleted")
        .map(|a| {
            a.iter()
                .filter_map(|d| d.as_document()?.get("_id").cloned())
                .collect()
        })
        .unwrap_or_default();
    let n = reload.len() + deleted.len();
    if n > 0 {
        apply_mods(database, coll, &request.range, &reload, &deleted).await?;
        receipt.caught_up.fetch_add(n as u64, Ordering::Relaxed);
        counters
            .docs_caught_up_on_recipient
            .fetch_add(n as i64, Ordering::Relaxed);
    }
    Ok(n)
}

/// Applies transferred writes in one storage transaction: the deletions (of documents in the
/// range only: another range's document may share an `_id`), then each document written
/// again, replacing the copy with its `_id` or inserted.
async fn apply_mods(
    database: &DatabaseStore,
    coll: &CollectionMeta,
    range: &KeyRange,
    reload: &[RawDocumentBuf],
    deleted: &[Bson],
) -> Result<()> {
    let mut txn = database.write().await?;
    for id in deleted {
        if let Some((rid, old)) = txn.fetch_by_id(coll, id).await? {
            if range.contains(&old) {
                txn.delete(coll, rid, &old).await?;
            }
        }
    }
    for doc in reload {
        let id = doc
            .get("_id")?
            .map(|id| Bson::try_from(id.to_raw_bson()))
            .transpose()
            .map_err(|e| MongoError::internal(format!("a migrated document's _id: {e}")))?
            .ok_or_else(|| MongoError::internal("a migrated document without _id"))?;
        match txn.fetch_by_id(coll, &id).await? {
            Some((rid, old)) => txn.replace(coll, rid, &old, doc).await?,
            None => {
                txn.insert_one(coll, doc).await?;
            }
        }
    }
    txn.commit().await?;
    Ok(())
}
