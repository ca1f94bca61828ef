//! A data node's multi-document transactions (MongoDB's `TransactionParticipant`): per session
//! the transaction its `txnNumber` started, the rules for the commands that continue, prepare,
//! commit or abort it, and its storage side (`storage::StorageTransaction`: a snapshot with the
//! transaction's writes buffered over it), inside which every statement runs.

use super::{SessionTxn, display_lsid, normalized_lsid};
use crate::command::generic::TransactionArgs;
use crate::command::{CommandRequest, WriteConcern};
use crate::datanode::DataNode;
use crate::datanode::storage::{SessionRecord, StatementRecord, Storage, StorageTransaction};
use crate::error::{
    ErrorCode, MongoError, Result, TRANSIENT_TRANSACTION_ERROR, is_transient_transaction_error,
};
use crate::server::TransactionStatement;
use crate::server::sessions::LogicalSessionId;
use crate::server::stats::TransactionCounters;
use bson::{Bson, Document, RawBsonRef, RawDocumentBuf, Timestamp, doc, rawdoc};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// The statement id under which a commit records its transaction in the transaction table: a
/// session whose latest number has it committed that transaction (after a restart too).
pub const TRANSACTION_COMMITTED_STMT_ID: i32 = i32::MIN;

/// Where the node keeps prepared transactions' writes until their decision arrives.
pub const PREPARED_DB: &str = "config";
pub const PREPARED_COLLECTION: &str = "system.docgrid.preparedTransactions";

/// A session's transaction on this node.
pub(super) struct Transaction {
    txn_number: i64,
    state: State,
    storage: Arc<StorageTransaction>,
    started: Instant,
    started_at: bson::DateTime,
    /// The read concern its first command gave (`currentOp` shows it).
    read_concern: Document,
    /// How long its statements ran, all together.
    active: Duration,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("txn_number", &self.txn_number)
            .field("state", &self.state)
            .finish()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    InProgress,
    /// Prepared at this cluster time: durable, holding its documents, waiting for a decision.
    Prepared(Timestamp),
    Committed,
    Aborted,
}

impl Transaction {
    /// Ends the open or prepared transaction aborted: its snapshots and locks go, and it is
    /// counted in `serverStatus.transactions`.
    async fn abort(&mut self, counters: &TransactionCounters) {
        if let State::Prepared(_) = self.state {
            counters.prepared.fetch_sub(1, Relaxed);
            counters.prepared_then_aborted.fetch_add(1, Relaxed);
        }
        self.storage.abort().await;
        self.state = State::Aborted;
        counters.aborted.fetch_add(1, Relaxed);
        counters.open.fetch_sub(1, Relaxed);
    }

    /// Whether the transaction is open and older than `limit` (the lifetime limit's reap).
    pub(super) fn expired(&self, limit: std::time::Duration) -> bool {
        self.state == State::InProgress && self.started.elapsed() > limit
    }

    /// The transaction as `$currentOp` shows it (`None`: it has ended).
    pub(super) fn current_op(&self, limit: Duration) -> Option<Document> {
        if !matches!(self.state, State::InProgress | State::Prepared(_)) {
            return None;
        }
        let open = self.started.elapsed();
        let expiry = self.started_at.timestamp_millis() + limit.as_millis() as i64;
        let mut out = doc! {
            "parameters": {
                "txnNumber": self.txn_number,
                "autocommit": false,
                "readConcern": self.read_concern.clone(),
            },
            "startWallClockTime": self.started_at.try_to_rfc3339_string().unwrap_or_default(),
            "timeOpenMicros": open.as_micros() as i64,
            "timeActiveMicros": self.active.as_micros() as i64,
            "timeInactiveMicros": open.saturating_sub(self.active).as_micros() as i64,
            "expiryTime": bson::DateTime::from_millis(expiry).try_to_rfc3339_string().unwrap_or_default(),
        };
        if let State::Prepared(time) = self.state {
            out.insert("prepareTimestamp", time);
        }
        Some(out)
    }
}

/// Runs one command of a session's transaction: the statement inside the transaction's storage
/// scope, or the commit, abort or prepare of the transaction. A failed statement aborts the
/// transaction, as MongoDB's does; failures carry `TransientTransactionError` where MongoDB's do.
pub async fn run_in_transaction<S: DataNode>(
    state: &S,
    args: TransactionArgs,
    request: CommandRequest,
    run: TransactionStatement<'_>,
) -> Result<RawDocumentBuf> {
    let lsid = match request.body.get("lsid")? {
        Some(RawBsonRef::Document(lsid)) => normalized_lsid(&Document::try_from(lsid)?)?,
        _ => {
            return Err(MongoError::new(
                ErrorCode::InvalidOptions,
                "Transaction number requires a session ID to also be specified",
            ));
        }
    };
    let table = state.transaction_table();
    table.ensure_loaded(state.storage()).await?;
    let key = bson::to_vec(&lsid)?;
    let mut session = table.slot(&key).lock_owned().await;
    let name = request.name().to_string();
    let ending = matches!(name.as_str(), "commitTransaction" | "abortTransaction");
    // The participant runs these in their handler's stead: `failCommand` fails them here.
    let failure = match name.as_str() {
        "commitTransaction" | "abortTransaction" | "prepareTransaction" => {
            crate::server::take_fail_command()
        }
        _ => None,
    };
    let outcome = match (failure, name.as_str()) {
        (Some(failure), _) => Err(failure),
        (None, "commitTransaction") => {
            commit(state, &mut session, (&lsid, &key), args, &request).await
        }
        (None, "abortTransaction") => abort(state, &mut session, &lsid, args).await,
        (None, "prepareTransaction") => prepare(state, &mut session, &lsid, args).await,
        (None, _) => statement(state, &mut session, &lsid, args, request, run).await,
    };
    outcome.map_err(|e| {
        if is_transient_transaction_error(e.code(), false, ending) {
            e.with_label(TRANSIENT_TRANSACTION_ERROR)
        } else {
            e
        }
    })
}

async fn statement<S: DataNode>(
    state: &S,
    session: &mut SessionTxn,
    lsid: &Document,
    args: TransactionArgs,
    request: CommandRequest,
    run: TransactionStatement<'_>,
) -> Result<RawDocumentBuf> {
    let counters = &state.node().stats.txn;
    if let Some(time) = args.at_cluster_time.filter(|_| args.start) {
        state.node().clock.wait_until_visible(time).await?;
    }
    let storage = begin_or_continue(counters, session, lsid, args).await?;
    if let Err(e) = check_ddl_read_concern(session, request.name()) {
        end_open(counters, session).await;
        return Err(e);
    }
    counters.active.fetch_add(1, Relaxed);
    let began = Instant::now();
    let running = session
        .transaction
        .as_ref()
        .and_then(|t| t.current_op(lifetime_limit(state)))
        .and_then(|doc| {
            let id = LogicalSessionId::of_document(lsid)?;
            Some(state.transaction_table().running(id, doc))
        });
    let outcome = storage.scope(run(request)).await;
    drop(running);
    if let Some(transaction) = session.transaction.as_mut() {
        transaction.active += began.elapsed();
    }
    counters.active.fetch_sub(1, Relaxed);
    // A write conflict fails the command: the client retries the whole transaction.
    let outcome = outcome.and_then(|reply| match crate::error::transient_write_error(&reply) {
        Some(error) => Err(error),
        None => Ok(reply),
    });
    // A document whose shard key the statement changes is moved by the router within the
    // transaction: that refusal does not end it.
    let moving = |code: ErrorCode| code == ErrorCode::WouldChangeOwningShard;
    let failed = match &outcome {
        Err(e) => !moving(e.code()),
        Ok(reply) => match reply.get("writeErrors")? {
            Some(RawBsonRef::Array(errors)) => errors.into_iter().any(|error| {
                !matches!(error, Ok(RawBsonRef::Document(e))
                    if matches!(e.get("code"), Ok(Some(RawBsonRef::Int32(code)))
                        if moving(ErrorCode::from_code(code))))
            }),
            _ => false,
        },
    };
    if failed {
        end_open(counters, session).await;
    }
    outcome
}

/// The outcome of transaction `n` of session `lsid` as this node's participant knows it, for a
/// router recovering a commit with the client's `recoveryToken` when no coordination of it is
/// known here (a commit that needed no coordinator, or one this node forgot by restarting):
/// ok if it committed; a prepared one is waited for; an open one is aborted, so that it never
/// commits after the recovery answered NoSuchTransaction (MongoDB's
/// `recoverDecisionFromLocalParticipantOrAbortLocalParticipant`).
pub async fn recover_decision<S: DataNode>(state: &S, lsid: &Document, n: i64) -> Result<()> {
    let lsid = normalized_lsid(lsid)?;
    let table = state.transaction_table();
    table.ensure_loaded(state.storage()).await?;
    let key = bson::to_vec(&lsid)?;
    let not_committed = || {
        MongoError::new(
            ErrorCode::NoSuchTransaction,
            format!("Transaction {n} was not committed on its recovery shard"),
        )
    };
    loop {
        let mut session = table.slot(&key).lock_owned().await;
        if session.txn_number != Some(n) {
            return Err(not_committed());
        }
        let transaction = current(&mut session, n)?;
        match transaction.state {
            State::Committed => return Ok(()),
            State::Aborted => return Err(not_committed()),
            State::InProgress => {
                end_open(&state.node().stats.txn, &mut session).await;
                return Err(not_committed());
            }
            // Its coordinator's decision comes: wait for it without holding the session.
            State::Prepared(_) => {
                drop(session);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

/// `transactionLifetimeLimitSeconds`.
pub fn lifetime_limit<S: DataNode>(state: &S) -> Duration {
    let seconds = state
        .node()
        .params
        .get_i64("transactionLifetimeLimitSeconds")
        .unwrap_or(60)
        .max(1);
    Duration::from_secs(seconds as u64)
}

/// `create` and `createIndexes` run in a transaction of read concern `local` only (its
/// default), as MongoDB's do: a snapshot is no place to create a collection in.
fn check_ddl_read_concern(session: &SessionTxn, command: &str) -> Result<()> {
    if !matches!(command, "create" | "createIndexes") {
        return Ok(());
    }
    let level = session
        .transaction
        .as_ref()
        .and_then(|t| t.read_concern.get_str("level").ok())
        .unwrap_or("local");
    if level == "local" {
        return Ok(());
    }
    Err(MongoError::new(
        ErrorCode::InvalidOptions,
        format!(
            "Command '{command}' in a multi-document transaction requires read concern level \
             'local', not '{level}'"
        ),
    ))
}

/// The session's transaction for a statement: a new one for `startTransaction` (ending what
/// the session had open), else the open one of the same number.
async fn begin_or_continue(
    counters: &TransactionCounters,
    session: &mut SessionTxn,
    lsid: &Document,
    args: TransactionArgs,
) -> Result<Arc<StorageTransaction>> {
    let n = args.txn_number;
    check_not_too_old(session, lsid, n)?;
    if args.start {
        // A router restarts a transaction at its number after aborting it (a stale first
        // statement), as MongoDB's shards allow before a prepare or commit.
        let restartable = session.transaction.as_ref().is_some_and(|t| {
            t.txn_number == n && matches!(t.state, State::InProgress | State::Aborted)
        });
        if session.txn_number == Some(n) && !restartable {
            return Err(MongoError::new(
                ErrorCode::ConflictingOperationInProgress,
                format!(
                    "Cannot start a transaction at given transaction number {n} on session {} \
                     because it is already in use",
                    display_lsid(lsid)
                ),
            ));
        }
        if session
            .transaction
            .as_ref()
            .is_some_and(|t| matches!(t.state, State::Prepared(_)))
        {
            return Err(prepared_in_progress());
        }
        end_open(counters, session).await;
        session.txn_number = Some(n);
        session.statements.clear();
        // A snapshot transaction reads at the cluster time its router chose, the same on
        // every shard it reaches; otherwise at this shard's latest when it first reads.
        let storage = match args.at_cluster_time {
            Some(time) => StorageTransaction::at(time),
            None => StorageTransaction::new(),
        };
        let mut read_concern = Document::new();
        if let Some(level) = args.read_concern_level {
            read_concern.insert("level", level);
        }
        if let Some(time) = args.at_cluster_time {
            read_concern.insert("atClusterTime", time);
        }
        session.transaction = Some(Transaction {
            txn_number: n,
            state: State::InProgress,
            storage: storage.clone(),
            started: Instant::now(),
            started_at: bson::DateTime::now(),
            active: Duration::ZERO,
            read_concern,
        });
        counters.started.fetch_add(1, Relaxed);
        counters.open.fetch_add(1, Relaxed);
        return Ok(storage);
    }
    let transaction = current(session, n)?;
    match transaction.state {
        State::InProgress => Ok(transaction.storage.clone()),
        State::Prepared(_) => Err(prepared_in_progress()),
        State::Committed => Err(committed(n)),
        State::Aborted => Err(aborted(n)),
    }
}

fn check_not_too_old(session: &SessionTxn, lsid: &Document, n: i64) -> Result<()> {
    match session.txn_number {
        Some(latest) if latest > n => Err(MongoError::new(
            ErrorCode::TransactionTooOld,
            format!(
                "Cannot start transaction {n} on session {} because a newer transaction with \
                 txnNumber {latest} has already started on this session.",
                display_lsid(lsid)
            ),
        )),
        _ => Ok(()),
    }
}

/// The session's transaction numbered `n`, or NoSuchTransaction. A transaction known only from
/// the transaction table (committed before a restart) is the committed one.
fn current(session: &mut SessionTxn, n: i64) -> Result<&mut Transaction> {
    let latest = session.txn_number;
    let recorded = latest == Some(n)
        && session.transaction.is_none()
        && session
            .statements
            .contains_key(&TRANSACTION_COMMITTED_STMT_ID);
    if recorded {
        session.transaction = Some(Transaction {
            txn_number: n,
            state: State::Committed,
            storage: StorageTransaction::new(),
            started: Instant::now(),
            started_at: bson::DateTime::now(),
            active: Duration::ZERO,
            read_concern: Document::new(),
        });
    }
    match session.transaction.as_mut() {
        Some(t) if t.txn_number == n && latest == Some(n) => Ok(t),
        _ => Err(MongoError::new(
            ErrorCode::NoSuchTransaction,
            format!(
                "Given transaction number {n} does not match any in-progress transactions. The \
                 active transaction number is {}",
                latest.unwrap_or(-1)
            ),
        )),
    }
}

fn prepared_in_progress() -> MongoError {
    MongoError::new(
        ErrorCode::PreparedTransactionInProgress,
        "Cannot run a command other than commit or abort on a prepared transaction",
    )
}

fn committed(n: i64) -> MongoError {
    MongoError::new(
        ErrorCode::TransactionCommitted,
        format!("Transaction with {{ txnNumber: {n} }} has been committed."),
    )
}

fn aborted(n: i64) -> MongoError {
    MongoError::new(
        ErrorCode::NoSuchTransaction,
        format!("Transaction with {{ txnNumber: {n} }} has been aborted."),
    )
}

/// Aborts the session's transaction if it is in progress (a failed statement, a newer
/// `txnNumber`, a kill, the lifetime limit).
pub(super) async fn end_open(counters: &TransactionCounters, session: &mut SessionTxn) {
    if let Some(t) = session.transaction.as_mut() {
        if t.state == State::InProgress {
            t.abort(counters).await;
        }
    }
}

async fn commit<S: DataNode>(
    state: &S,
    session: &mut SessionTxn,
    (lsid, key): (&Document, &[u8]),
    args: TransactionArgs,
    request: &CommandRequest,
) -> Result<RawDocumentBuf> {
    let counters = &state.node().stats.txn;
    let n = args.txn_number;
    check_not_too_old(session, lsid, n)?;
    let commit_time = match request.body.get("commitTimestamp")? {
        Some(RawBsonRef::Timestamp(ts)) => Some(ts),
        Some(_) => {
            return Err(MongoError::type_mismatch(
                "BSON field 'commitTransaction.commitTimestamp' is the wrong type, expected type 'timestamp'",
            ));
        }
        None => None,
    };
    let write_concern = WriteConcern::parse(&request.args())?;
    let transaction = current(session, n)?;
    let prepared = match transaction.state {
        State::Committed => return Ok(RawDocumentBuf::new()),
        State::Aborted => return Err(aborted(n)),
        State::InProgress if commit_time.is_some() => {
            return Err(MongoError::new(
                ErrorCode::InvalidOptions,
                "commitTransaction for an unprepared transaction cannot have a 'commitTimestamp' \
                 field",
            ));
        }
        State::Prepared(_) if commit_time.is_none() => {
            return Err(MongoError::new(
                ErrorCode::InvalidOptions,
                "commitTransaction for a prepared transaction must have a 'commitTimestamp' field",
            ));
        }
        State::Prepared(_) => true,
        State::InProgress => false,
    };
    if let Some(time) = commit_time {
        state.node().clock.advance(time);
    }
    transaction
        .storage
        .record_commit(commit_record(state, key, n), vec![committed_statement()]);
    // SQLite commits one database file at a time: a transaction that wrote in several first
    // records its writes durably with the decision to commit them, so that a restart between
    // the files' commits finishes the commit (`restore_prepared`) instead of leaving half.
    let intent = !prepared && transaction.storage.written_databases() > 1;
    if intent {
        if let Err(e) = prepare_durably(state, &transaction.storage, lsid, n, true).await {
            transaction.abort(counters).await;
            return Err(e);
        }
    }
    match transaction.storage.commit().await {
        Ok(commits) => {
            transaction.state = State::Committed;
            counters.committed.fetch_add(1, Relaxed);
            counters.open.fetch_sub(1, Relaxed);
            if prepared {
                counters.prepared.fetch_sub(1, Relaxed);
                counters.prepared_then_committed.fetch_add(1, Relaxed);
            }
            if prepared || intent {
                forget_prepared(state.storage(), lsid, n).await?;
            }
            if write_concern.durable {
                for (db, seq) in commits {
                    db.wait_durable(seq).await?;
                }
            }
            Ok(RawDocumentBuf::new())
        }
        Err(e) if !prepared => {
            transaction.abort(counters).await;
            Err(e)
        }
        // A prepared transaction holds its documents: its commit cannot conflict, and stays
        // prepared for the coordinator to resend should it fail otherwise.
        Err(e) => Err(e),
    }
}

async fn abort<S: DataNode>(
    state: &S,
    session: &mut SessionTxn,
    lsid: &Document,
    args: TransactionArgs,
) -> Result<RawDocumentBuf> {
    let counters = &state.node().stats.txn;
    let n = args.txn_number;
    check_not_too_old(session, lsid, n)?;
    let transaction = current(session, n)?;
    match transaction.state {
        State::InProgress => transaction.abort(counters).await,
        State::Prepared(_) => {
            transaction.abort(counters).await;
            forget_prepared(state.storage(), lsid, n).await?;
        }
        State::Committed => return Err(committed(n)),
        State::Aborted => return Err(aborted(n)),
    }
    Ok(RawDocumentBuf::new())
}

/// `prepareTransaction`: the transaction's writes are checked against every commit since its
/// snapshot, made durable with its documents' locks held, and it waits for the coordinator's
/// decision. Answers the prepare's cluster time (`prepareTimestamp`).
async fn prepare<S: DataNode>(
    state: &S,
    session: &mut SessionTxn,
    lsid: &Document,
    args: TransactionArgs,
) -> Result<RawDocumentBuf> {
    let counters = &state.node().stats.txn;
    let n = args.txn_number;
    check_not_too_old(session, lsid, n)?;
    let transaction = current(session, n)?;
    let time = match transaction.state {
        State::Prepared(time) => time,
        State::Committed => return Err(committed(n)),
        State::Aborted => return Err(aborted(n)),
        State::InProgress => {
            let prepared = prepare_durably(state, &transaction.storage, lsid, n, false).await;
            let time = match prepared {
                Ok(time) => time,
                Err(e) => {
                    transaction.abort(counters).await;
                    return Err(e);
                }
            };
            transaction.state = State::Prepared(time);
            counters.prepared.fetch_add(1, Relaxed);
            counters.prepared_total.fetch_add(1, Relaxed);
            time
        }
    };
    Ok(rawdoc! {"prepareTimestamp": time})
}

/// The session's row a commit writes: its `txnNumber` at the commit's time.
fn commit_record<S: DataNode>(state: &S, key: &[u8], n: i64) -> SessionRecord {
    time_record(state.node().clock.now(), key, n)
}

/// The session's row for a commit at `time`.
fn time_record(time: Timestamp, key: &[u8], n: i64) -> SessionRecord {
    SessionRecord {
        lsid: key.to_vec(),
        txn_number: n,
        last_write_op_time: ((time.time as i64) << 32) | time.increment as i64,
        last_write_date: bson::DateTime::now().timestamp_millis(),
    }
}

/// The statement a commit records: the transaction committed.
fn committed_statement() -> StatementRecord {
    StatementRecord {
        stmt_id: TRANSACTION_COMMITTED_STMT_ID,
        ns: String::new(),
        document_key: None,
        result: bson::to_vec(&Document::new()).unwrap_or_default(),
    }
}

/// Validates the transaction, keeps its documents, and writes its writes durably (the
/// prepare record; `decided`: with the decision to commit them, a commit across database
/// files). Returns the prepare's cluster time.
async fn prepare_durably<S: DataNode>(
    state: &S,
    storage: &StorageTransaction,
    lsid: &Document,
    n: i64,
    decided: bool,
) -> Result<Timestamp> {
    // A decided record is a commit across this node's database files, not a distributed one.
    let writes = storage.prepare(!decided).await?;
    let time = state.node().clock.tick();
    let mut record = doc! {
        "_id": prepared_id(lsid, n),
        "prepareTimestamp": time,
        "writes": writes,
    };
    if decided {
        record.insert("decision", "commit");
    }
    let id = prepared_id(lsid, n);
    let records = state.storage();
    records
        .put_document(PREPARED_DB, PREPARED_COLLECTION, &id, Some(&record), true)
        .await?;
    Ok(time)
}

fn prepared_id(lsid: &Document, n: i64) -> Bson {
    Bson::Document(doc! {"lsid": lsid.clone(), "txnNumber": n})
}

/// Removes a decided transaction's prepare record. Not waited to disk: a record a crash brings
/// back is restored and its decision applied again, which skips what it already applied.
async fn forget_prepared(storage: &Storage, lsid: &Document, n: i64) -> Result<()> {
    let id = prepared_id(lsid, n);
    storage
        .put_document(PREPARED_DB, PREPARED_COLLECTION, &id, None, false)
        .await
}

impl super::TransactionTable {
    /// After a restart: the transactions prepared before it, prepared again (holding their
    /// documents) until their coordinator's decision arrives. Runs before the node serves.
    pub async fn restore_prepared(
        &self,
        storage: &Storage,
        counters: &TransactionCounters,
    ) -> Result<usize> {
        self.ensure_loaded(storage).await?;
        let records = storage.documents(PREPARED_DB, PREPARED_COLLECTION).await?;
        for record in &records {
            let corrupt = || MongoError::internal("a corrupt prepared transaction record");
            let id = record.get_document("_id").map_err(|_| corrupt())?;
            let lsid = id.get_document("lsid").map_err(|_| corrupt())?;
            let n = id.get_i64("txnNumber").map_err(|_| corrupt())?;
            let time = record
                .get_timestamp("prepareTimestamp")
                .map_err(|_| corrupt())?;
            let writes = record.get_document("writes").map_err(|_| corrupt())?;
            let transaction = StorageTransaction::restore_prepared(storage, writes).await?;
            let key = bson::to_vec(lsid)?;
            let mut session = self.slot(&key).lock_owned().await;
            session.txn_number = Some(n);
            session.statements.clear();
            // A commit across databases decided before the restart: finished now (what it
            // already applied is skipped).
            let decided = record.get_str("decision") == Ok("commit");
            if decided {
                transaction.record_commit(time_record(time, &key, n), vec![committed_statement()]);
                transaction.commit().await?;
                forget_prepared(storage, lsid, n).await?;
            }
            session.transaction = Some(Transaction {
                txn_number: n,
                state: if decided {
                    State::Committed
                } else {
                    State::Prepared(time)
                },
                storage: transaction,
                started: Instant::now(),
                started_at: bson::DateTime::now(),
                active: Duration::ZERO,
                read_concern: Document::new(),
            });
            if !decided {
                counters.open.fetch_add(1, Relaxed);
                counters.prepared.fetch_add(1, Relaxed);
            }
        }
        Ok(records.len())
    }
}
