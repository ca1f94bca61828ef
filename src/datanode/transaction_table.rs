//! Retryable writes on a data node (MongoDB's transaction participant for retryable writes):
//! per session the latest `txnNumber` and the statements (`stmtId`s) executed under it, with
//! their results, so that a retried statement answers what it answered the first time without
//! executing again. The rows live in each database file's transaction table
//! (`storage::transactions`), written in the transaction of the write they record; this is
//! their in-memory image, loaded from every database file on first use (after a restart the
//! rows are the truth), and the per-session lock that serializes a session's writes. The
//! session's multi-document transaction lives beside it (`participant`): both share the
//! session's `txnNumber`.

use super::DataNode;
use super::storage::{SessionRecord, SessionRecords, StatementRecord, Storage, WriteTxn};
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::session_catalog::TransactionTableReaper;
use crate::server::sessions::LogicalSessionId;
use crate::server::stats::{Stats, TransactionCounters};
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, RawBsonRef, doc};
use futures::future::BoxFuture;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One session's retryable-write state.
#[derive(Debug, Default)]
struct SessionTxn {
    /// The latest `txnNumber` begun on this node (none: no retryable write yet).
    txn_number: Option<i64>,
    last_write_op_time: i64,
    last_write_date: i64,
    /// The statements executed under `txn_number`: their namespace and result.
    statements: HashMap<i32, (String, Document)>,
    /// The `txnNumber` and statement ids of the session's rows in each database file holding
    /// some (the rows' first ids, or after a restart all of their ids): rows of an older
    /// number that the next record there does not replace (same first `stmt_id`) are removed
    /// with it.
    recorded_in: HashMap<String, (i64, BTreeSet<i32>)>,
    /// The multi-document transaction `txn_number` started, if it started one.
    transaction: Option<participant::Transaction>,
}

type SessionSlot = Arc<tokio::sync::Mutex<SessionTxn>>;

/// Every session's retryable-write state on this node.
#[derive(Default)]
pub struct TransactionTable {
    /// Filled from the database files once, on first use.
    loaded: tokio::sync::OnceCell<()>,
    sessions: Mutex<HashMap<Vec<u8>, SessionSlot>>,
    /// The transactions running a statement now (their session's slot is locked meanwhile):
    /// what `$currentOp` shows of each as of the statement's start, and when it started.
    running: Mutex<HashMap<LogicalSessionId, (Document, Instant)>>,
}

/// A transaction's statement listed as running until dropped.
pub(super) struct Running<'a> {
    table: &'a TransactionTable,
    session: LogicalSessionId,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.table
            .running
            .lock()
            .expect("poisoned")
            .remove(&self.session);
    }
}

impl TransactionTable {
    async fn ensure_loaded(&self, storage: &Storage) -> Result<()> {
        self.loaded
            .get_or_try_init(|| async {
                let mut loaded: HashMap<Vec<u8>, SessionTxn> = HashMap::new();
                for db in storage.databases().await {
                    let mut txn = db.write().await?;
                    let records = txn.retryable_write_records().await?;
                    txn.rollback().await?;
                    for (session, statements) in records {
                        let entry = loaded.entry(session.lsid.clone()).or_default();
                        let ids = statements.iter().map(|s| s.stmt_id).collect();
                        entry
                            .recorded_in
                            .insert(db.name().to_string(), (session.txn_number, ids));
                        // Each database holds the session's latest write to it: the newest
                        // `txnNumber` across them is the session's.
                        if entry.txn_number.is_some_and(|n| n > session.txn_number) {
                            continue;
                        }
                        if entry.txn_number != Some(session.txn_number) {
                            entry.statements.clear();
                        }
                        entry.txn_number = Some(session.txn_number);
                        entry.last_write_op_time =
                            entry.last_write_op_time.max(session.last_write_op_time);
                        entry.last_write_date = entry.last_write_date.max(session.last_write_date);
                        for statement in statements {
                            let result = bson::from_slice(&statement.result).map_err(|e| {
                                MongoError::internal(format!(
                                    "a corrupt retryable write record in {}: {e}",
                                    db.name()
                                ))
                            })?;
                            entry
                                .statements
                                .insert(statement.stmt_id, (statement.ns, result));
                        }
                    }
                }
                let mut sessions = self.sessions.lock().expect("poisoned");
                for (lsid, session) in loaded {
                    sessions.insert(lsid, Arc::new(tokio::sync::Mutex::new(session)));
                }
                Ok::<(), MongoError>(())
            })
            .await?;
        Ok(())
    }

    /// The records of the retryable writes to `ns` in database `db` whose statements `keep`
    /// selects (by the document key each wrote): what a migration's donor sends with a range.
    pub async fn records_of(
        &self,
        storage: &Storage,
        db: &str,
        ns: &str,
        mut keep: impl FnMut(&StatementRecord) -> bool,
    ) -> Result<SessionRecords> {
        let Some(database) = storage.database(db).await else {
            return Ok(Vec::new());
        };
        let mut txn = database.write().await?;
        let records = txn.retryable_write_records().await?;
        txn.rollback().await?;
        Ok(records
            .into_iter()
            .filter_map(|(session, statements)| {
                let statements: Vec<StatementRecord> = statements
                    .into_iter()
                    .filter(|s| s.ns == ns && keep(s))
                    .collect();
                (!statements.is_empty()).then_some((session, statements))
            })
            .collect())
    }

    /// Takes in the records a migration brought with a range (the recipient), written to
    /// database `db`: a session this node knows at a newer `txnNumber` keeps its own; at the
    /// same number it gains the statements it lacks; otherwise the brought number becomes the
    /// session's. A retry of those writes here then answers their recorded results.
    pub async fn import(&self, storage: &Storage, db: &str, records: SessionRecords) -> Result<()> {
        self.ensure_loaded(storage).await?;
        let database = storage.database_or_create(db).await?;
        for (record, statements) in records {
            let mut session = self.slot(&record.lsid).lock_owned().await;
            match session.txn_number {
                Some(known) if known > record.txn_number => continue,
                // A transaction of this number runs here: the session is this node's now.
                Some(known) if known == record.txn_number && session.transaction.is_some() => {
                    continue;
                }
                Some(known) if known == record.txn_number => {}
                _ => {
                    if session.transaction.is_some() {
                        continue;
                    }
                    session.txn_number = Some(record.txn_number);
                    session.statements.clear();
                }
            }
            let new: Vec<StatementRecord> = statements
                .into_iter()
                .filter(|s| !session.statements.contains_key(&s.stmt_id))
                .collect();
            let Some(first) = new.first() else {
                continue;
            };
            let writing = BTreeSet::from([first.stmt_id]);
            let recorded = session.recorded_in.entry(db.to_string()).or_default();
            let remove_older = recorded.0 < record.txn_number && !recorded.1.is_subset(&writing);
            let mut txn = database.write().await?;
            txn.record_retryable_write(&record, &new, remove_older)
                .await?;
            txn.commit().await?;
            if recorded.0 < record.txn_number {
                *recorded = (record.txn_number, writing);
            } else {
                recorded.1.extend(writing);
            }
            session.last_write_op_time = session.last_write_op_time.max(record.last_write_op_time);
            session.last_write_date = session.last_write_date.max(record.last_write_date);
            for statement in new {
                let result = bson::from_slice(&statement.result)
                    .map_err(|e| MongoError::internal(format!("a migrated write's result: {e}")))?;
                session
                    .statements
                    .insert(statement.stmt_id, (statement.ns, result));
            }
        }
        Ok(())
    }

    fn slot(&self, lsid: &[u8]) -> SessionSlot {
        self.sessions
            .lock()
            .expect("poisoned")
            .entry(lsid.to_vec())
            .or_default()
            .clone()
    }

    /// The latest `txnNumber` of a session this node knows (tests and diagnostics).
    pub async fn txn_number(&self, storage: &Storage, lsid: &Document) -> Result<Option<i64>> {
        self.ensure_loaded(storage).await?;
        let key = bson::to_vec(&normalized_lsid(lsid)?)?;
        let slot = self.sessions.lock().expect("poisoned").get(&key).cloned();
        Ok(match slot {
            Some(slot) => slot.lock().await.txn_number,
            None => None,
        })
    }

    /// Every session's slot, once the table is loaded.
    async fn loaded_slots(&self, storage: &Storage) -> Result<Vec<(Vec<u8>, SessionSlot)>> {
        self.ensure_loaded(storage).await?;
        Ok(self.slots())
    }

    /// Every session's slot this node holds now.
    fn slots(&self) -> Vec<(Vec<u8>, SessionSlot)> {
        self.sessions
            .lock()
            .expect("poisoned")
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// The sessions (`{id, uid}`) whose last retryable write here is older than `cutoff`.
    pub async fn sessions_written_before(
        &self,
        storage: &Storage,
        cutoff: bson::DateTime,
    ) -> Result<Vec<Document>> {
        let mut old = Vec::new();
        for (lsid, slot) in self.loaded_slots(storage).await? {
            // A session busy with a write was just used.
            let Ok(session) = slot.try_lock() else {
                continue;
            };
            if session.txn_number.is_some() && session.last_write_date < cutoff.timestamp_millis() {
                old.push(session_id(&lsid)?);
            }
        }
        Ok(old)
    }

    /// Removes the records of sessions whose last retryable write is older than `cutoff` and
    /// that `is_alive` (given the session's `{id, uid}`) says are no longer alive (expired or
    /// ended): the transaction-table part of the logical session cache's reap. Returns how
    /// many sessions it removed. A session busy with a write is kept.
    pub async fn reap(
        &self,
        storage: &Storage,
        cutoff: bson::DateTime,
        is_alive: impl Fn(&Document) -> bool,
    ) -> Result<usize> {
        let cutoff = cutoff.timestamp_millis();
        let mut reaped = 0;
        for (lsid, slot) in self.loaded_slots(storage).await? {
            // Held while the rows go, so no write of the session runs in between.
            let Ok(mut session) = slot.try_lock() else {
                continue;
            };
            if session.last_write_date > cutoff {
                continue;
            }
            if is_alive(&session_id(&lsid)?) {
                continue;
            }
            for db in storage.databases().await {
                let mut txn = db.write().await?;
                txn.remove_retryable_write_record(&lsid).await?;
                txn.commit().await?;
            }
            *session = SessionTxn::default();
            // The slot goes unless a command waits for it (references to a slot are taken
            // under this lock: the table's and this loop's are then the only ones); a waiting
            // command finds the session as storage now has it: without records.
            let mut sessions = self.sessions.lock().expect("poisoned");
            if Arc::strong_count(&slot) == 2 {
                sessions.remove(&lsid);
            }
            reaped += 1;
        }
        Ok(reaped)
    }
}

impl TransactionTable {
    /// Aborts the open transactions older than `limit` (`transactionLifetimeLimitSeconds`). A
    /// transaction running a command now is looked at next time.
    pub async fn abort_expired(&self, counters: &TransactionCounters, limit: Duration) {
        for (_, slot) in self.slots() {
            let Ok(mut session) = slot.try_lock() else {
                continue;
            };
            if session
                .transaction
                .as_ref()
                .is_some_and(|t| t.expired(limit))
            {
                tracing::info!("aborting a transaction past transactionLifetimeLimitSeconds");
                participant::end_open(counters, &mut session).await;
            }
        }
    }

    /// Lists `session`'s transaction, shown as `transaction`, as running a statement.
    pub(super) fn running(&self, session: LogicalSessionId, transaction: Document) -> Running<'_> {
        self.running
            .lock()
            .expect("poisoned")
            .insert(session.clone(), (transaction, Instant::now()));
        Running {
            table: self,
            session,
        }
    }

    /// The transaction of `session` if it is running a statement, as `$currentOp` shows it
    /// with that statement's operation.
    pub fn running_transaction(&self, session: &LogicalSessionId) -> Option<Document> {
        let running = self.running.lock().expect("poisoned");
        let (transaction, since) = running.get(session)?;
        let mut transaction = transaction.clone();
        let elapsed = since.elapsed().as_micros() as i64;
        for field in ["timeOpenMicros", "timeActiveMicros"] {
            let before = transaction.get_i64(field).unwrap_or(0);
            transaction.insert(field, before + elapsed);
        }
        Some(transaction)
    }

    /// The sessions holding an open or prepared transaction and running no command now, as
    /// `$currentOp` reports idle sessions.
    pub fn idle_sessions(&self, host: &str, limit: Duration) -> Vec<Document> {
        let mut out = Vec::new();
        for (key, slot) in self.slots() {
            let Ok(session) = slot.try_lock() else {
                continue;
            };
            let Some(transaction) = session
                .transaction
                .as_ref()
                .and_then(|t| t.current_op(limit))
            else {
                continue;
            };
            let Ok(lsid) = session_id(&key) else {
                continue;
            };
            out.push(doc! {
                "type": "idleSession",
                "host": host,
                "desc": "inactive transaction",
                "active": false,
                "lsid": lsid,
                "transaction": transaction,
            });
        }
        out
    }

    /// Aborts the open transactions of the sessions `matches` accepts (`killSessions` and
    /// friends; their running commands were killed first). Returns how many it aborted.
    pub async fn abort_sessions(
        &self,
        counters: &TransactionCounters,
        matches: &(dyn Fn(&LogicalSessionId) -> bool + Sync),
    ) -> usize {
        let mut aborted = 0;
        for (key, slot) in self.slots() {
            let Some(id) = session_id(&key)
                .ok()
                .and_then(|id| LogicalSessionId::of_document(&id))
            else {
                continue;
            };
            if !matches(&id) {
                continue;
            }
            // A command of the session still running ends at its next await (it was killed).
            let Ok(mut session) = tokio::time::timeout(KILL_WAIT, slot.lock()).await else {
                continue;
            };
            if session.transaction.is_some() {
                participant::end_open(counters, &mut session).await;
                aborted += 1;
            }
        }
        aborted
    }
}

/// How long a kill waits for a session's running command to give the session up.
const KILL_WAIT: Duration = Duration::from_secs(1);

/// Aborts transactions past `transactionLifetimeLimitSeconds`, twice a second, while the node
/// lives.
fn spawn_transaction_reaper<S: DataNode>(state: std::sync::Weak<S>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let Some(state) = state.upgrade() else { return };
            state
                .transaction_table()
                .abort_expired(&state.node().stats.txn, lifetime_limit(&*state))
                .await;
        }
    });
}

/// A session's `{id, uid}` from the table's key.
fn session_id(key: &[u8]) -> Result<Document> {
    bson::from_slice::<Document>(key).map_err(|e| {
        MongoError::internal(format!(
            "a corrupt session id in the transaction table: {e}"
        ))
    })
}

/// Starts a data node's logical session jobs, their reap reaching its transaction table.
pub fn start_session_jobs<S: DataNode>(
    state: &Arc<S>,
    table: &Arc<TransactionTable>,
    storage: &Arc<Storage>,
) {
    state
        .node()
        .session_catalog
        .register_transaction_reaper(Arc::new(Reaper::new(table.clone(), storage.clone())));
    crate::server::session_jobs::spawn(Arc::downgrade(state));
    spawn_transaction_reaper(Arc::downgrade(state));
}

/// The logical session cache's reap job's hook into a data node's transaction table.
pub struct Reaper {
    table: Arc<TransactionTable>,
    storage: Arc<Storage>,
}

impl Reaper {
    pub fn new(table: Arc<TransactionTable>, storage: Arc<Storage>) -> Self {
        Reaper { table, storage }
    }
}

impl TransactionTableReaper for Reaper {
    fn sessions_written_before(
        &self,
        cutoff: bson::DateTime,
    ) -> BoxFuture<'_, Result<Vec<LogicalSessionId>>> {
        Box::pin(async move {
            let old = self
                .table
                .sessions_written_before(&self.storage, cutoff)
                .await?;
            Ok(old
                .iter()
                .filter_map(LogicalSessionId::of_document)
                .collect())
        })
    }

    fn remove<'a>(
        &'a self,
        dead: &'a [LogicalSessionId],
        cutoff: bson::DateTime,
    ) -> BoxFuture<'a, Result<usize>> {
        Box::pin(async move {
            self.table
                .reap(&self.storage, cutoff, |id| {
                    LogicalSessionId::of_document(id).is_none_or(|id| !dead.contains(&id))
                })
                .await
        })
    }
}

/// An `lsid` as the transaction table keys it: `{id, uid}`, with the digest MongoDB gives
/// sessions when authentication is off if the sender gave none (a router forwards the driver's
/// `lsid` as it came).
fn normalized_lsid(lsid: &Document) -> Result<Document> {
    let id = lsid
        .get("id")
        .cloned()
        .ok_or_else(|| MongoError::bad_value("a session id needs an 'id'"))?;
    let uid = lsid.get("uid").cloned().unwrap_or(Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes: crate::server::sessions::NO_AUTH_DIGEST.to_vec(),
    }));
    Ok(doc! {"id": id, "uid": uid})
}

/// A session as MongoDB's messages show it: `<uuid> - <uid as base64>`.
fn display_lsid(lsid: &Document) -> String {
    let id = match lsid.get("id") {
        Some(Bson::Binary(b)) => uuid::Uuid::from_slice(&b.bytes)
            .map(|u| u.to_string())
            .unwrap_or_default(),
        _ => String::new(),
    };
    let uid = match lsid.get("uid") {
        Some(Bson::Binary(b)) => crate::expression::encode_base64(&b.bytes, false),
        _ => String::new(),
    };
    format!("{id} - {uid}")
}

/// MongoDB's `kUninitializedStmtId`: a statement with this id is not retryable (never recorded,
/// never answered from a record).
pub const UNINITIALIZED_STMT_ID: i32 = -1;

/// The statement ids of a command's statements: `stmtIds` (a router sends the ids of the
/// client's statements it forwards), `stmtId` (the first of consecutive ids, or the one id of
/// findAndModify), or the statement's index, as a driver talking to this node directly.
#[derive(Debug, Clone, PartialEq, Eq)]
enum StmtIds {
    Listed(Vec<i32>),
    From(i32),
}

impl StmtIds {
    fn parse(req: &CommandRequest) -> Result<StmtIds> {
        if let Some(value) = req.body.get("stmtIds")? {
            let RawBsonRef::Array(items) = value else {
                return Err(MongoError::type_mismatch(
                    "BSON field 'stmtIds' is the wrong type, expected type 'array'",
                ));
            };
            let mut ids = Vec::new();
            for item in items {
                match item? {
                    RawBsonRef::Int32(id) => ids.push(id),
                    _ => {
                        return Err(MongoError::type_mismatch(
                            "BSON field 'stmtIds' holds a value of the wrong type, expected type 'int'",
                        ));
                    }
                }
            }
            return Ok(StmtIds::Listed(ids));
        }
        match req.body.get("stmtId")? {
            None => Ok(StmtIds::From(0)),
            Some(RawBsonRef::Int32(id)) => Ok(StmtIds::From(id)),
            Some(_) => Err(MongoError::type_mismatch(
                "BSON field 'stmtId' is the wrong type, expected type 'int'",
            )),
        }
    }

    fn of(&self, index: usize) -> Result<i32> {
        match self {
            StmtIds::Listed(ids) => ids.get(index).copied().ok_or_else(|| {
                MongoError::bad_value(format!(
                    "The number of stmtIds ({}) is smaller than the number of statements",
                    ids.len()
                ))
            }),
            StmtIds::From(first) => Ok(first.saturating_add(index as i32)),
        }
    }
}

/// A retryable write command checked out on its session: holds the session's lock until
/// dropped, so the session's writes run one at a time.
pub struct RetryableWrite {
    session: tokio::sync::OwnedMutexGuard<SessionTxn>,
    lsid: Vec<u8>,
    txn_number: i64,
    stmt_ids: StmtIds,
    /// Executed in the open write transaction, not committed yet, with (at the same index in
    /// `pending_results`) the result each answered.
    pending: Vec<StatementRecord>,
    pending_results: Vec<Document>,
    /// The statements answered from their record.
    retried: Vec<i32>,
}

impl RetryableWrite {
    /// The command's session, checked out, when the command is a retryable write (it carries
    /// `lsid` and `txnNumber` outside a transaction). A `txnNumber` older than the session's
    /// latest answers TransactionTooOld; a newer one starts over (the older statements' records
    /// go with the first write under it).
    pub async fn begin<S: DataNode>(
        state: &S,
        req: &CommandRequest,
    ) -> Result<Option<RetryableWrite>> {
        let txn_number = match req.body.get("txnNumber")? {
            Some(RawBsonRef::Int64(n)) => n,
            _ => return Ok(None),
        };
        if req.body.get("autocommit")?.is_some() {
            return Ok(None);
        }
        let lsid = match req.body.get("lsid")? {
            Some(RawBsonRef::Document(lsid)) => normalized_lsid(&bson::Document::try_from(lsid)?)?,
            _ => return Ok(None),
        };
        let stmt_ids = StmtIds::parse(req)?;
        let table = state.transaction_table();
        table.ensure_loaded(state.storage()).await?;
        let key = bson::to_vec(&lsid)?;
        let mut session = table.slot(&key).lock_owned().await;
        match session.txn_number {
            Some(latest) if latest > txn_number => {
                return Err(MongoError::new(
                    ErrorCode::TransactionTooOld,
                    format!(
                        "Cannot start transaction {txn_number} on session {} because a newer transaction with txnNumber {latest} has already started on this session.",
                        display_lsid(&lsid)
                    ),
                ));
            }
            Some(latest) if latest == txn_number => {
                let committed = session
                    .statements
                    .contains_key(&participant::TRANSACTION_COMMITTED_STMT_ID);
                if session.transaction.is_some() || committed {
                    return Err(MongoError::location(
                        50911,
                        format!(
                            "Cannot start a retryable write at transaction number {txn_number} on session {}: a transaction with this number started",
                            display_lsid(&lsid)
                        ),
                    ));
                }
            }
            _ => {
                participant::end_open(&state.node().stats.txn, &mut session).await;
                session.transaction = None;
                session.txn_number = Some(txn_number);
                session.statements.clear();
            }
        }
        Ok(Some(RetryableWrite {
            session,
            lsid: key,
            txn_number,
            stmt_ids,
            pending: Vec::new(),
            pending_results: Vec::new(),
            retried: Vec::new(),
        }))
    }

    /// The `stmtId` of statement `index`.
    pub fn stmt_id(&self, index: usize) -> Result<i32> {
        self.stmt_ids.of(index)
    }

    /// The recorded result of statement `index` if it already executed under this
    /// `txnNumber` (counted as a retried statement).
    pub fn executed(&mut self, index: usize) -> Result<Option<Document>> {
        let id = self.stmt_ids.of(index)?;
        if id == UNINITIALIZED_STMT_ID {
            return Ok(None);
        }
        let recorded = self
            .session
            .statements
            .get(&id)
            .map(|(_, result)| result.clone())
            .or_else(|| {
                let at = self.pending.iter().position(|r| r.stmt_id == id)?;
                Some(self.pending_results[at].clone())
            });
        if recorded.is_some() {
            self.retried.push(id);
        }
        Ok(recorded)
    }

    /// Notes that statement `index` executed on `ns`, touching the document `_id` (if any),
    /// and answered `result`: recorded by [`RetryableWrite::write`] in the same transaction.
    pub fn record(
        &mut self,
        index: usize,
        ns: &str,
        id: Option<&Bson>,
        result: Document,
    ) -> Result<()> {
        let stmt_id = self.stmt_ids.of(index)?;
        if stmt_id == UNINITIALIZED_STMT_ID {
            return Ok(());
        }
        let record = StatementRecord {
            stmt_id,
            ns: ns.to_string(),
            document_key: id.map(|id| bson::to_vec(&doc! {"_id": id})).transpose()?,
            result: bson::to_vec(&result)?,
        };
        self.pending.push(record);
        self.pending_results.push(result);
        Ok(())
    }

    /// Writes the statements executed since the last commit, and the session's row, into
    /// `txn` (nothing when none executed). The transaction's time is the session's
    /// `lastWriteOpTime`.
    pub async fn write<S: DataNode>(&mut self, state: &S, txn: &mut WriteTxn<'_>) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let time = txn.time();
        let session = SessionRecord {
            lsid: self.lsid.clone(),
            txn_number: self.txn_number,
            last_write_op_time: ((time.time as i64) << 32) | time.increment as i64,
            last_write_date: bson::DateTime::now().timestamp_millis(),
        };
        let db = txn.database().name().to_string();
        // A row is keyed by its first statement id (`storage::transactions`).
        let writing = BTreeSet::from([self.pending[0].stmt_id]);
        let recorded = self.session.recorded_in.entry(db).or_default();
        // The driver's next write (a new number) usually starts at the same statement id and
        // so replaces the previous one's row: only rows it leaves need a delete.
        let remove_older = recorded.0 < self.txn_number && !recorded.1.is_subset(&writing);
        txn.record_retryable_write(&session, &self.pending, remove_older)
            .await?;
        // Noted before the commit: should it fail, rows of an older number may stay behind,
        // which loading ignores (it reads the latest number's) and the reap removes.
        if recorded.0 < self.txn_number {
            *recorded = (self.txn_number, writing);
        } else {
            recorded.1.extend(writing);
        }
        Stats::add(&state.node().stats.transactions_collection_writes, 1);
        self.session.last_write_op_time = session.last_write_op_time;
        self.session.last_write_date = session.last_write_date;
        Ok(())
    }

    /// After the transaction [`RetryableWrite::write`] wrote into committed: its statements
    /// are executed for later retries.
    pub fn committed(&mut self) {
        for (record, result) in self.pending.drain(..).zip(self.pending_results.drain(..)) {
            self.session
                .statements
                .insert(record.stmt_id, (record.ns, result));
        }
    }

    /// The statement ids answered from their records so far.
    pub fn retried(&self) -> &[i32] {
        &self.retried
    }

    /// Counts the command in `serverStatus.transactions` once it answers.
    pub fn finish(self, stats: &Stats) {
        if !self.retried.is_empty() {
            Stats::add(&stats.retried_commands, 1);
            Stats::add(&stats.retried_statements, self.retried.len() as i64);
        }
    }
}

mod participant;
pub use participant::{
    PREPARED_COLLECTION, PREPARED_DB, lifetime_limit, recover_decision, run_in_transaction,
};

#[cfg(test)]
mod tests;
