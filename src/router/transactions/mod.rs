//! The router's side of multi-document transactions (MongoDB's mongos `TransactionRouter`):
//! per logical session, the transaction a client runs through this router ([`state::Txn`]).
//! Every command carrying `autocommit: false` runs as a statement of it ([`wrap`]; what a
//! transaction may run was checked before, by `command::generic`), with the statement on its
//! task so that
//! every request the router sends a shard for it gets the transaction's fields
//! ([`attach`], called where requests leave: `forward::call_shard` and the cursors'
//! `getMore`s), and answered with the `recoveryToken` and MongoDB's error labels. A failed
//! statement aborts the transaction on every participant, as mongos does. `commitTransaction`
//! and `abortTransaction` ([`commit`], [`abort`]) pick how to end it on the participants.

pub(super) mod state;

use super::RouterState;
use crate::command::CommandRequest;
use crate::error::{
    ErrorCode, MongoError, Result, SYSTEM_OVERLOADED_ERROR, TRANSIENT_TRANSACTION_ERROR,
    UNKNOWN_TRANSACTION_COMMIT_RESULT,
};
use crate::server::Handler;
use crate::server::RequestContext;
use crate::server::sessions::LogicalSessionId;
use bson::{Bson, Document, RawBsonRef, RawDocumentBuf, doc};
use state::{Action, CommitType, Phase, Txn};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// How many sessions' transactions are kept before the finished ones are dropped.
const KEPT_SESSIONS: usize = 10_000;

/// The commands that write: a participant that answered one without `readOnly` wrote.
const WRITES: &[&str] = &["insert", "update", "delete", "findAndModify", "bulkWrite"];

/// The transactions of this router's sessions and `serverStatus.transactions`' counters.
#[derive(Default)]
pub(super) struct Transactions {
    sessions: Mutex<HashMap<LogicalSessionId, Arc<Mutex<Option<Txn>>>>>,
    stats: Arc<TxnStats>,
}

#[derive(Default)]
struct TxnStats {
    total_started: AtomicI64,
    total_committed: AtomicI64,
    total_aborted: AtomicI64,
    /// Aborted transactions by what aborted them: the failed statement's codeName, or
    /// `abort` for the client's `abortTransaction`.
    abort_cause: Mutex<BTreeMap<String, i64>>,
    total_contacted_participants: AtomicI64,
    total_participants_at_commit: AtomicI64,
    total_requests_targeted: AtomicI64,
    /// Per [`CommitType`]: initiated, successful, successful duration (µs).
    commit_types: [[AtomicI64; 3]; 6],
}

impl TxnStats {
    /// Counts an aborted transaction; `cause` as `abortCause` names it, if known.
    fn aborted(&self, cause: Option<&str>) {
        add(&self.total_aborted, 1);
        if let Some(cause) = cause {
            *self
                .abort_cause
                .lock()
                .expect("poisoned")
                .entry(cause.to_string())
                .or_default() += 1;
        }
    }
}

/// The statement running on a task: what [`attach`] needs to rewrite a shard's request.
struct Statement {
    txn: Arc<Mutex<Option<Txn>>>,
    lsid: RawDocumentBuf,
    write: bool,
    stats: Arc<TxnStats>,
}

tokio::task_local! {
    /// The transaction statement a router handler runs (set by [`wrap`]): the requests it
    /// sends reach the shards through many paths, and each must carry the transaction.
    static STATEMENT: Arc<Statement>;
}

fn add(counter: &AtomicI64, n: i64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl Transactions {
    fn slot(&self, session: &LogicalSessionId) -> Arc<Mutex<Option<Txn>>> {
        let mut sessions = self.sessions.lock().expect("poisoned");
        if sessions.len() >= KEPT_SESSIONS && !sessions.contains_key(session) {
            // Sessions that expired without `endSessions` leave their last transaction here:
            // the finished ones not in use go once there are many.
            sessions.retain(|_, slot| {
                Arc::strong_count(slot) > 1
                    || slot
                        .lock()
                        .expect("poisoned")
                        .as_ref()
                        .is_some_and(|t| t.phase == Phase::Open)
            });
        }
        Arc::clone(sessions.entry(session.clone()).or_default())
    }

    /// Forgets the transactions of sessions `matches` accepts (killed or reaped sessions).
    pub fn forget(&self, matches: &dyn Fn(&LogicalSessionId) -> bool) {
        self.sessions
            .lock()
            .expect("poisoned")
            .retain(|session, _| !matches(session));
    }

    /// `serverStatus.transactions`, with mongos's fields.
    pub fn server_status(&self) -> Document {
        let (mut open, mut active) = (0_i64, 0_i64);
        let slots: Vec<_> = self
            .sessions
            .lock()
            .expect("poisoned")
            .values()
            .cloned()
            .collect();
        for slot in slots {
            if let Some(txn) = slot.lock().expect("poisoned").as_ref() {
                if txn.phase == Phase::Open {
                    open += 1;
                    active += i64::from(txn.active);
                }
            }
        }
        let load = |c: &AtomicI64| c.load(Ordering::Relaxed);
        let mut commit_types = Document::new();
        for commit_type in CommitType::ALL {
            let [initiated, successful, micros] = &self.stats.commit_types[commit_type.index()];
            commit_types.insert(
                commit_type.name(),
                doc! {
                    "initiated": load(initiated),
                    "successful": load(successful),
                    "successfulDurationMicros": load(micros),
                },
            );
        }
        doc! {
            "currentOpen": open,
            "currentActive": active,
            "currentInactive": open - active,
            "totalStarted": load(&self.stats.total_started),
            "totalAborted": load(&self.stats.total_aborted),
            "abortCause": self
                .stats
                .abort_cause
                .lock()
                .expect("poisoned")
                .iter()
                .map(|(cause, n)| (cause.clone(), Bson::Int64(*n)))
                .collect::<Document>(),
            "totalCommitted": load(&self.stats.total_committed),
            "totalContactedParticipants": load(&self.stats.total_contacted_participants),
            "totalParticipantsAtCommit": load(&self.stats.total_participants_at_commit),
            "totalRequestsTargeted": load(&self.stats.total_requests_targeted),
            "commitTypes": commit_types,
        }
    }
}

/// Whether a request is a statement of a multi-document transaction.
fn in_transaction(request: &CommandRequest) -> bool {
    matches!(
        request.body.get("autocommit"),
        Ok(Some(RawBsonRef::Boolean(false)))
    )
}

/// `handler`, run as a transaction statement when its request carries `autocommit: false`.
pub(super) fn wrap(name: &'static str, handler: Handler<RouterState>) -> Handler<RouterState> {
    Arc::new(move |state, ctx, request| {
        let handler = Arc::clone(&handler);
        Box::pin(async move {
            if !in_transaction(&request) {
                return handler(state, ctx, request).await;
            }
            statement(state, ctx, name, request, handler).await
        })
    })
}

/// Runs one statement of a transaction (commit and abort included).
async fn statement(
    state: &RouterState,
    ctx: &RequestContext,
    name: &'static str,
    request: CommandRequest,
    handler: Handler<RouterState>,
) -> Result<RawDocumentBuf> {
    let (Some(session), Ok(Some(RawBsonRef::Document(lsid)))) = (
        LogicalSessionId::of_request(&request),
        request.body.get("lsid"),
    ) else {
        return Err(MongoError::new(
            ErrorCode::InvalidOptions,
            "a transaction statement needs a session (lsid)",
        ));
    };
    let lsid = lsid.to_raw_document_buf();
    let txn_request = state::Request::read(name, &request.body)?;
    let action = txn_request.action;
    let slot = state.transactions.slot(&session);
    {
        let mut txn = slot.lock().expect("poisoned");
        let replaced = txn
            .as_ref()
            .is_some_and(|t| t.phase == Phase::Open && t.txn_number < txn_request.txn_number);
        let session_name = bson::Uuid::from_bytes(session.id).to_string();
        let now = state.node.clock.now();
        let began =
            state::begin_or_continue(&mut txn, &session_name, &txn_request, now).map_err(|e| {
                // Refused before it ran, labelled as a shard's refusal would be.
                let commit_or_abort = matches!(action, Action::Commit | Action::Abort);
                let transient = state::is_transient(e.code(), false, commit_or_abort);
                label(e, transient, TRANSIENT_TRANSACTION_ERROR)
            })?;
        if began {
            add(&state.transactions.stats.total_started, 1);
        }
        if replaced {
            // The newer number ends the older transaction on its shards.
            state.transactions.stats.aborted(None);
        }
        if let Some(txn) = txn.as_mut() {
            txn.active = true;
        }
    }
    let statement = Arc::new(Statement {
        txn: Arc::clone(&slot),
        lsid,
        write: WRITES.contains(&name),
        stats: Arc::clone(&state.transactions.stats),
    });
    // Inactive again however the statement ends (a deadline or killOp drops it).
    let _active = Inactive(&statement);
    let outcome = STATEMENT
        .scope(Arc::clone(&statement), handler(state, ctx, request))
        .await;
    // A reply passed through from a shard may be a failure.
    let outcome = outcome.and_then(|reply| match crate::error::raw_reply_ok(&reply) {
        true => Ok(reply),
        false => Err(MongoError::from_reply(&reply.to_document()?)
            .unwrap_or_else(|| MongoError::internal("a failed reply without an error"))),
    });
    match (action, outcome) {
        (Action::Start | Action::Continue, Ok(reply)) => {
            // A write error aborted the transaction on its shard: the others are ended too.
            if has_write_errors(&reply) {
                let error = crate::error::transient_write_error(&reply);
                let cause = error.as_ref().map(|e| e.code().name());
                implicit_abort(
                    state,
                    &statement,
                    cause.as_deref().unwrap_or(WRITE_ERROR_CAUSE),
                )
                .await;
                // A conflict fails the command: the client retries the whole transaction.
                if let Some(error) = error {
                    return Err(label(error, true, TRANSIENT_TRANSACTION_ERROR));
                }
            }
            finish_reply(&statement, reply)
        }
        (Action::Start | Action::Continue, Err(error)) => {
            // An overload refusal ran nothing: the driver retries the statement within the
            // transaction (the backpressure specification).
            if !error.labels().iter().any(|l| l == SYSTEM_OVERLOADED_ERROR) {
                implicit_abort(state, &statement, &error.code().name()).await;
            }
            let transient = state::is_transient(error.code(), false, false)
                || error.code().is(crate::error::ErrorCategory::NetworkError);
            Err(label(error, transient, TRANSIENT_TRANSACTION_ERROR))
        }
        (Action::Commit, Ok(reply)) => {
            // A write concern that can never be satisfied leaves no doubt about the commit.
            let wce = match reply.get("writeConcernError").ok().flatten() {
                Some(RawBsonRef::Document(wce)) => !matches!(
                    wce.get("code").ok().flatten(),
                    Some(RawBsonRef::Int32(79 | 100))
                ),
                _ => false,
            };
            let reply = finish_reply(&statement, reply)?;
            match wce {
                true => with_labels(reply, &[UNKNOWN_TRANSACTION_COMMIT_RESULT]),
                false => Ok(reply),
            }
        }
        (Action::Commit, Err(error)) => {
            let wce = error
                .extra()
                .is_some_and(|e| e.contains_key("writeConcernError"));
            let unknown = state::is_unknown_commit_result(Some(error.code()), wce);
            let transient = state::is_transient(error.code(), wce, true);
            let error = label(error, unknown, UNKNOWN_TRANSACTION_COMMIT_RESULT);
            Err(label(error, transient, TRANSIENT_TRANSACTION_ERROR))
        }
        (Action::Abort, outcome) => outcome.and_then(|reply| finish_reply(&statement, reply)),
    }
}

/// Marks the statement's transaction inactive when dropped.
struct Inactive<'a>(&'a Statement);

impl Drop for Inactive<'_> {
    fn drop(&mut self) {
        if let Ok(mut slot) = self.0.txn.lock() {
            if let Some(txn) = slot.as_mut() {
                txn.active = false;
            }
        }
    }
}

fn label(error: MongoError, add: bool, name: &str) -> MongoError {
    match add && !error.labels().iter().any(|l| l == name) {
        true => error.with_label(name),
        false => error,
    }
}

fn with_labels(reply: RawDocumentBuf, labels: &[&str]) -> Result<RawDocumentBuf> {
    let mut doc = reply.to_document()?;
    doc.insert("errorLabels", labels.to_vec());
    Ok(RawDocumentBuf::from_document(&doc)?)
}

fn has_write_errors(reply: &RawDocumentBuf) -> bool {
    match reply.get("writeErrors") {
        Ok(Some(RawBsonRef::Array(errors))) => errors.into_iter().next().is_some(),
        _ => false,
    }
}

/// A statement's successful reply as the client gets it: without the participants'
/// `readOnly`, with the `recoveryToken`.
fn finish_reply(statement: &Statement, reply: RawDocumentBuf) -> Result<RawDocumentBuf> {
    let token = match statement.txn.lock().expect("poisoned").as_ref() {
        Some(txn) => txn.recovery_token(),
        None => Document::new(),
    };
    let mut out = RawDocumentBuf::new();
    for element in reply.iter() {
        let (key, value) = element?;
        if !matches!(key, "readOnly" | "recoveryToken") {
            out.append_ref(key, value);
        }
    }
    out.append("recoveryToken", RawDocumentBuf::from_document(&token)?);
    Ok(out)
}

/// The request `req` for shard `shard` (when known; else the participant reached at `host`)
/// as the running transaction statement sends it (see [`state::Txn::outgoing`]); unchanged
/// outside a transaction.
pub(super) fn attach(
    shard: Option<&str>,
    host: &str,
    mut req: CommandRequest,
) -> Result<CommandRequest> {
    let Ok(statement) = STATEMENT.try_with(Arc::clone) else {
        return Ok(req);
    };
    let mut slot = statement.txn.lock().expect("poisoned");
    let Some(txn) = slot.as_mut() else {
        return Ok(req);
    };
    let shard = match shard {
        Some(shard) => shard.to_string(),
        None => match txn.shard_at(host) {
            Some(shard) => shard,
            None => return Ok(req),
        },
    };
    req.body = txn.outgoing(&shard, host, &statement.lsid, &req.body)?;
    add(&statement.stats.total_requests_targeted, 1);
    Ok(req)
}

/// Notes what a participant's reply to a statement says it did.
pub(super) fn observe(shard: &str, reply: &RawDocumentBuf) {
    let Ok(statement) = STATEMENT.try_with(Arc::clone) else {
        return;
    };
    if let Some(txn) = statement.txn.lock().expect("poisoned").as_mut() {
        txn.observe(shard, reply, statement.write);
    }
}

/// Whether `route` may retry a statement a shard refused as stale: outside transactions
/// always; in one only its first statement, whose shards reached so far are aborted and
/// forgotten (they start again on the retry).
pub(super) async fn may_retry_stale(state: &RouterState) -> bool {
    let Ok(statement) = STATEMENT.try_with(Arc::clone) else {
        return true;
    };
    let (pending, number) = {
        let mut slot = statement.txn.lock().expect("poisoned");
        let Some(txn) = slot.as_mut() else {
            return true;
        };
        if !txn.first_statement() {
            return false;
        }
        txn.choose_snapshot_again(state.node.clock.now());
        (txn.take_pending(), txn.txn_number)
    };
    let shards: Vec<String> = pending.into_iter().map(|p| p.shard).collect();
    abort_on(state, &statement.lsid, number, &shards).await;
    true
}

/// `abortCause` of a transaction a statement's write error ended, when the error is not one
/// the reply's first write error names.
const WRITE_ERROR_CAUSE: &str = "WriteError";

/// Ends the transaction on every participant after a failed statement (best effort); `cause`
/// is the failure's codeName.
async fn implicit_abort(state: &RouterState, statement: &Statement, cause: &str) {
    let (shards, number) = {
        let mut slot = statement.txn.lock().expect("poisoned");
        let Some(txn) = slot.as_mut() else { return };
        if txn.phase != Phase::Open {
            return;
        }
        txn.phase = Phase::Aborted;
        let shards: Vec<String> = txn.participants.iter().map(|p| p.shard.clone()).collect();
        (shards, txn.txn_number)
    };
    state.transactions.stats.aborted(Some(cause));
    abort_on(state, &statement.lsid, number, &shards).await;
}

/// Sends `abortTransaction` to `shards`, ignoring what they answer.
async fn abort_on(state: &RouterState, lsid: &RawDocumentBuf, number: i64, shards: &[String]) {
    let sends = shards.iter().map(|shard| async move {
        let abort = doc! {"abortTransaction": 1};
        if let Err(e) = send(state, shard, lsid, number, abort).await {
            tracing::debug!(shard = %shard, error = %e, "could not abort a transaction on a participant");
        }
    });
    futures::future::join_all(sends).await;
}

/// Sends a transaction command (`commitTransaction`, `abortTransaction`,
/// `coordinateCommitTransaction`) to `shard` on `admin`; a failed reply is the error.
async fn send(
    state: &RouterState,
    shard: &str,
    lsid: &RawDocumentBuf,
    number: i64,
    mut command: Document,
) -> Result<RawDocumentBuf> {
    command.insert("lsid", Bson::Document(lsid.to_document()?));
    command.insert("txnNumber", number);
    command.insert("autocommit", false);
    let client = state.shards.client(&state.config, shard).await?;
    let reply = client
        .call(CommandRequest::from_document("admin", &command)?)
        .await?;
    match super::forward::reply_error(&reply)? {
        Some(error) => Err(error),
        None => Ok(reply),
    }
}

fn running_statement() -> Result<Arc<Statement>> {
    STATEMENT
        .try_with(Arc::clone)
        .map_err(|_| MongoError::internal("a transaction command outside its statement"))
}

/// `commitTransaction`: ends the transaction on its participants in the way MongoDB's
/// router chooses (see [`CommitType`]); a transaction this router does not know is recovered
/// through the client's `recoveryToken`. Answers the reply that decided (with its
/// `writeConcernError`).
pub(super) async fn commit(state: &RouterState, req: &CommandRequest) -> Result<RawDocumentBuf> {
    let statement = running_statement()?;
    let write_concern = match req.body.get("writeConcern")? {
        Some(RawBsonRef::Document(wc)) => Some(Document::try_from(wc)?),
        _ => None,
    };
    let recovery_shard = match req.body.get("recoveryToken")? {
        Some(RawBsonRef::Document(token)) => match token.get("recoveryShardId")? {
            Some(RawBsonRef::String(shard)) => Some(shard.to_string()),
            _ => None,
        },
        _ => None,
    };
    let (commit_type, number, participants) = {
        let slot = statement.txn.lock().expect("poisoned");
        let txn = slot
            .as_ref()
            .ok_or_else(|| MongoError::internal("commitTransaction without a transaction"))?;
        match txn.phase {
            Phase::Aborted => {
                return Err(MongoError::new(
                    ErrorCode::NoSuchTransaction,
                    format!("Transaction {} has been aborted.", txn.txn_number),
                ));
            }
            Phase::Committed | Phase::Open => {}
        }
        let commit_type = match txn.recovering {
            true => CommitType::RecoverWithToken,
            false => txn.commit_type()?,
        };
        (commit_type, txn.txn_number, txn.participants.clone())
    };
    let stats = &state.transactions.stats.commit_types[commit_type.index()];
    add(&stats[0], 1);
    if commit_type != CommitType::RecoverWithToken {
        add(
            &state.transactions.stats.total_participants_at_commit,
            participants.len() as i64,
        );
    }
    let started = Instant::now();
    let with_concern = |mut command: Document| {
        if let Some(wc) = &write_concern {
            command.insert("writeConcern", wc.clone());
        }
        command
    };
    let lsid = &statement.lsid;
    let commit_each = |shards: Vec<String>| async move {
        let sends = shards.iter().map(|shard| {
            let command = with_concern(doc! {"commitTransaction": 1});
            async move { send(state, shard, lsid, number, command).await }
        });
        let mut last = RawDocumentBuf::new();
        for reply in futures::future::join_all(sends).await {
            last = reply?;
        }
        Ok::<_, MongoError>(last)
    };
    let shards_where = |read_only: bool| -> Vec<String> {
        participants
            .iter()
            .filter(|p| p.read_only == Some(read_only))
            .map(|p| p.shard.clone())
            .collect()
    };
    let reply = match commit_type {
        CommitType::NoShards => Ok(RawDocumentBuf::new()),
        CommitType::SingleShard | CommitType::ReadOnly => {
            commit_each(participants.iter().map(|p| p.shard.clone()).collect()).await
        }
        CommitType::SingleWriteShard => match commit_each(shards_where(true)).await {
            Ok(_) => commit_each(shards_where(false)).await,
            Err(e) => Err(e),
        },
        CommitType::TwoPhaseCommit => {
            let list: Vec<Document> = participants
                .iter()
                .map(|p| doc! {"shardId": &p.shard})
                .collect();
            let command =
                with_concern(doc! {"coordinateCommitTransaction": 1, "participants": list});
            let coordinator = &participants[0].shard;
            send(state, coordinator, lsid, number, command).await
        }
        CommitType::RecoverWithToken if req.body.get("recoveryToken")?.is_none() => {
            Err(MongoError::location(
                50940,
                "Cannot recover the transaction decision without a recoveryToken",
            ))
        }
        CommitType::RecoverWithToken => match &recovery_shard {
            None => Err(MongoError::new(
                ErrorCode::NoSuchTransaction,
                "Recovery token is empty, meaning the transaction only performed reads and can \
                 be safely retried",
            )),
            Some(shard) => {
                let command = with_concern(
                    doc! {"coordinateCommitTransaction": 1, "participants": Vec::<Document>::new()},
                );
                send(state, shard, lsid, number, command).await
            }
        },
    };
    let mut slot = statement.txn.lock().expect("poisoned");
    if let Some(txn) = slot.as_mut() {
        txn.commit_type = Some(commit_type);
        match &reply {
            Ok(_) => {
                if txn.phase != Phase::Committed {
                    add(&state.transactions.stats.total_committed, 1);
                    add(
                        &state.transactions.stats.total_contacted_participants,
                        participants.len() as i64,
                    );
                }
                txn.phase = Phase::Committed;
                add(&stats[1], 1);
                add(&stats[2], started.elapsed().as_micros() as i64);
            }
            // An unknown outcome (the client may retry) counts as nothing yet, as on mongos.
            Err(e) if state::is_unknown_commit_result(Some(e.code()), false) => {}
            Err(e) if e.code() == ErrorCode::NoSuchTransaction => {
                if txn.phase == Phase::Open {
                    state.transactions.stats.aborted(Some(&e.code().name()));
                }
                txn.phase = Phase::Aborted;
            }
            Err(_) => {}
        }
    }
    let reply = reply?;
    // Only the shard's outcome passes on: its write concern error.
    let mut out = RawDocumentBuf::new();
    if let Some(wce) = reply.get("writeConcernError")? {
        out.append("writeConcernError", wce.to_raw_bson());
    }
    Ok(out)
}

/// `abortTransaction`: to every participant, whose NoSuchTransaction is the outcome wanted;
/// NoSuchTransaction when no shard took part yet.
pub(super) async fn abort(state: &RouterState, req: &CommandRequest) -> Result<RawDocumentBuf> {
    let write_concern = match req.body.get("writeConcern")? {
        Some(RawBsonRef::Document(wc)) => Some(Document::try_from(wc)?),
        _ => None,
    };
    let statement = running_statement()?;
    let (shards, number, phase) = {
        let slot = statement.txn.lock().expect("poisoned");
        let txn = slot
            .as_ref()
            .ok_or_else(|| MongoError::internal("abortTransaction without a transaction"))?;
        let shards: Vec<String> = txn.participants.iter().map(|p| p.shard.clone()).collect();
        (shards, txn.txn_number, txn.phase)
    };
    if phase == Phase::Committed {
        return Err(MongoError::new(
            ErrorCode::TransactionCommitted,
            format!("Transaction {number} has been committed."),
        ));
    }
    if shards.is_empty() {
        return Err(MongoError::new(
            ErrorCode::NoSuchTransaction,
            "no known command has been sent by this router for this transaction",
        ));
    }
    let sends = shards.iter().map(|shard| {
        let mut abort = doc! {"abortTransaction": 1};
        if let Some(wc) = &write_concern {
            abort.insert("writeConcern", wc.clone());
        }
        send(state, shard, &statement.lsid, number, abort)
    });
    let mut failure = None;
    for reply in futures::future::join_all(sends).await {
        match reply {
            Err(e) if e.code() != ErrorCode::NoSuchTransaction => failure = failure.or(Some(e)),
            _ => {}
        }
    }
    if let Some(txn) = statement.txn.lock().expect("poisoned").as_mut() {
        if txn.phase == Phase::Open {
            state.transactions.stats.aborted(Some("abort"));
        }
        txn.phase = Phase::Aborted;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(RawDocumentBuf::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn replies_carry_the_recovery_token_and_not_the_shards_read_only() {
        let mut txn = None;
        let start = state::Request {
            txn_number: 1,
            action: Action::Start,
            read_concern: None,
        };
        let now = bson::Timestamp {
            time: 1,
            increment: 0,
        };
        state::begin_or_continue(&mut txn, "s", &start, now).unwrap();
        let lsid = rawdoc! {"id": 1};
        txn.as_mut()
            .unwrap()
            .outgoing("shard0", "h", &lsid, &rawdoc! {"find": "c"})
            .unwrap();
        let statement = Statement {
            txn: Arc::new(Mutex::new(txn)),
            lsid,
            write: false,
            stats: Default::default(),
        };
        let observe_in = |statement: &Statement, shard: &str, reply: &RawDocumentBuf, write| {
            if let Some(txn) = statement.txn.lock().unwrap().as_mut() {
                txn.observe(shard, reply, write);
            }
        };
        let reply = rawdoc! {"cursor": {"id": 0_i64}, "readOnly": true, "ok": 1.0};
        let out = finish_reply(&statement, reply)
            .unwrap()
            .to_document()
            .unwrap();
        assert!(out.get("readOnly").is_none());
        assert_eq!(
            out.get_document("recoveryToken").unwrap(),
            &doc! {},
            "a transaction that only read has nothing to recover"
        );
        observe_in(&statement, "shard0", &rawdoc! {"n": 1, "ok": 1.0}, true);
        let out = finish_reply(&statement, rawdoc! {"n": 1, "ok": 1.0})
            .unwrap()
            .to_document()
            .unwrap();
        assert_eq!(
            out.get_document("recoveryToken").unwrap(),
            &doc! {"recoveryShardId": "shard0"}
        );
        assert!(has_write_errors(
            &rawdoc! {"n": 0, "writeErrors": [{"index": 0, "code": 11000}]}
        ));
        assert!(!has_write_errors(&rawdoc! {"n": 1, "writeErrors": []}));
    }

    #[test]
    fn labels_are_added_once() {
        let error = MongoError::new(ErrorCode::WriteConflict, "conflict");
        let error = label(error, true, "TransientTransactionError");
        let error = label(error, true, "TransientTransactionError");
        assert_eq!(error.labels(), ["TransientTransactionError"]);
        let error = label(error, false, "UnknownTransactionCommitResult");
        assert_eq!(error.labels().len(), 1);
    }
}
