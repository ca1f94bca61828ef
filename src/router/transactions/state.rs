//! One logical session's transaction as the router tracks it (MongoDB's `TransactionRouter`):
//! its number, its read concern, its participants in the order they joined (the first is the
//! coordinator) and whether each wrote; which statement may start, continue or commit it; the
//! fields each shard's request gets; and how a commit is run (the commit type). Pure: the
//! sending is `super`'s.

use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, RawBsonRef, RawDocumentBuf, Timestamp, doc};

/// The read concern levels a transaction may run at (MongoDB refuses the others).
const LEVELS: [&str; 3] = ["local", "majority", "snapshot"];

/// Fields the router sets itself on every request it sends within a transaction: the client's
/// copies are replaced, so a later statement never passes `startTransaction` or `readConcern`
/// on to a shard that already joined.
pub(super) const TRANSACTION_FIELDS: [&str; 7] = [
    "lsid",
    "txnNumber",
    "autocommit",
    "startTransaction",
    "readConcern",
    "coordinator",
    "recoveryToken",
];

/// A shard taking part in the transaction.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Participant {
    pub shard: String,
    /// The host it was reached at: a cursor's `getMore` knows only its shard's client.
    pub host: String,
    /// What its replies said: `Some(true)` it only read, `Some(false)` it wrote, `None` no
    /// successful reply yet (a commit then cannot know what it did).
    pub read_only: Option<bool>,
    /// The statement that made it join: a stale-routing retry of that statement forgets it.
    pub joined_at: u32,
}

/// Where the transaction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Open,
    Committed,
    Aborted,
}

/// How a commit is run, as mongos names it in `serverStatus.transactions.commitTypes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CommitType {
    NoShards,
    SingleShard,
    SingleWriteShard,
    ReadOnly,
    TwoPhaseCommit,
    RecoverWithToken,
}

impl CommitType {
    pub const ALL: [CommitType; 6] = [
        CommitType::NoShards,
        CommitType::SingleShard,
        CommitType::SingleWriteShard,
        CommitType::ReadOnly,
        CommitType::TwoPhaseCommit,
        CommitType::RecoverWithToken,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CommitType::NoShards => "noShards",
            CommitType::SingleShard => "singleShard",
            CommitType::SingleWriteShard => "singleWriteShard",
            CommitType::ReadOnly => "readOnly",
            CommitType::TwoPhaseCommit => "twoPhaseCommit",
            CommitType::RecoverWithToken => "recoverWithToken",
        }
    }

    pub fn index(self) -> usize {
        CommitType::ALL
            .iter()
            .position(|t| *t == self)
            .unwrap_or_default()
    }
}

/// What a command does to the session's transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Action {
    Start,
    Continue,
    Commit,
    Abort,
}

/// The transaction of one session.
#[derive(Debug)]
pub(super) struct Txn {
    pub txn_number: i64,
    /// The read concern every participant starts with (`atClusterTime` chosen for `snapshot`).
    pub read_concern: Option<Document>,
    pub participants: Vec<Participant>,
    /// Statements begun so far (the current one's index is `statements - 1`).
    pub statements: u32,
    pub phase: Phase,
    /// How the commit ran, once one was attempted.
    pub commit_type: Option<CommitType>,
    /// A statement is running (`serverStatus.transactions.currentActive`).
    pub active: bool,
    /// Only its commit reached this router (the statements ran through another): the
    /// commit is recovered with the client's `recoveryToken`.
    pub recovering: bool,
    /// The router chose the snapshot's `atClusterTime` (the client did not): a stale retry
    /// of the first statement chooses again.
    pub router_chose_snapshot: bool,
}

impl Txn {
    fn new(txn_number: i64) -> Txn {
        Txn {
            txn_number,
            read_concern: None,
            participants: Vec::new(),
            statements: 0,
            phase: Phase::Open,
            commit_type: None,
            active: false,
            recovering: false,
            router_chose_snapshot: false,
        }
    }

    /// The statement running now.
    pub fn current_statement(&self) -> u32 {
        self.statements.saturating_sub(1)
    }

    /// Whether the statement running is the transaction's first: only it may be retried
    /// after a stale-routing refusal (a later one may have left work on shards).
    pub fn first_statement(&self) -> bool {
        self.statements <= 1
    }

    pub fn participant(&self, shard: &str) -> Option<&Participant> {
        self.participants.iter().find(|p| p.shard == shard)
    }

    /// The shard reached at `host`, if it takes part.
    pub fn shard_at(&self, host: &str) -> Option<String> {
        self.participants
            .iter()
            .find(|p| p.host == host)
            .map(|p| p.shard.clone())
    }

    /// The body a request to `shard` carries within this transaction: the client's copy with
    /// the transaction fields replaced: `lsid`, `txnNumber`, `autocommit: false` always; on
    /// the shard's first request also `startTransaction: true`, the read concern, and
    /// `coordinator: true` for the first participant. The shard joins as it is asked.
    pub fn outgoing(
        &mut self,
        shard: &str,
        host: &str,
        lsid: &RawDocumentBuf,
        body: &RawDocumentBuf,
    ) -> Result<RawDocumentBuf> {
        let joining = self.participant(shard).is_none();
        if joining {
            self.participants.push(Participant {
                shard: shard.to_string(),
                host: host.to_string(),
                read_only: None,
                joined_at: self.current_statement(),
            });
        }
        let mut out = RawDocumentBuf::new();
        for element in body.iter() {
            let (key, value) = element?;
            if !TRANSACTION_FIELDS.contains(&key) {
                out.append_ref(key, value);
            }
        }
        out.append("lsid", lsid.clone());
        out.append("txnNumber", self.txn_number);
        out.append("autocommit", false);
        if joining {
            out.append("startTransaction", true);
            if let Some(read_concern) = &self.read_concern {
                out.append("readConcern", RawDocumentBuf::from_document(read_concern)?);
            }
            if self.participants.len() == 1 {
                out.append("coordinator", true);
            }
        }
        Ok(out)
    }

    /// Reads a participant's reply to a statement: `readOnly` when it says, otherwise a
    /// successful write command counts as a write.
    pub fn observe(&mut self, shard: &str, reply: &RawDocumentBuf, write_command: bool) {
        let Some(participant) = self.participants.iter_mut().find(|p| p.shard == shard) else {
            return;
        };
        if !crate::error::raw_reply_ok(reply) {
            return;
        }
        let said = match reply.get("readOnly") {
            Ok(Some(RawBsonRef::Boolean(read_only))) => Some(read_only),
            _ => None,
        };
        let read_only = said.unwrap_or(!write_command);
        // Once it wrote it stays a write participant.
        participant.read_only = Some(participant.read_only.unwrap_or(true) && read_only);
    }

    /// The participants that joined in the current statement, removed: a stale refusal of
    /// the first statement is retried with them starting again.
    pub fn take_pending(&mut self) -> Vec<Participant> {
        let current = self.current_statement();
        let (pending, kept) = std::mem::take(&mut self.participants)
            .into_iter()
            .partition(|p| p.joined_at == current);
        self.participants = kept;
        pending
    }

    /// A stale retry of the first statement reads at a new snapshot, unless the client chose it.
    pub fn choose_snapshot_again(&mut self, now: Timestamp) {
        if !self.router_chose_snapshot {
            return;
        }
        if let Some(rc) = self.read_concern.as_mut() {
            rc.insert("atClusterTime", Bson::Timestamp(now));
        }
    }

    /// How a commit of this transaction runs; a participant whose statements all failed makes
    /// it impossible (MongoDB's NoSuchTransaction: its part is gone).
    pub fn commit_type(&self) -> Result<CommitType> {
        if let Some(unknown) = self.participants.iter().find(|p| p.read_only.is_none()) {
            return Err(MongoError::new(
                ErrorCode::NoSuchTransaction,
                format!(
                    "Failed to commit transaction because a previous statement on the \
                     transaction participant {} was unsuccessful.",
                    unknown.shard
                ),
            ));
        }
        let writers = self
            .participants
            .iter()
            .filter(|p| p.read_only == Some(false))
            .count();
        Ok(match (self.participants.len(), writers) {
            (0, _) => CommitType::NoShards,
            (1, _) => CommitType::SingleShard,
            (_, 0) => CommitType::ReadOnly,
            (_, 1) => CommitType::SingleWriteShard,
            _ => CommitType::TwoPhaseCommit,
        })
    }

    /// `recoveryToken`, as every reply in a transaction carries it: the first participant that
    /// wrote, as mongos names it (it took part in any commit of the writes, so it knows their
    /// outcome); empty while the transaction only read.
    pub fn recovery_token(&self) -> Document {
        match self
            .participants
            .iter()
            .find(|p| p.read_only == Some(false))
        {
            Some(p) => doc! {"recoveryShardId": &p.shard},
            None => doc! {},
        }
    }
}

/// What a command carries about the transaction it runs in.
#[derive(Debug, Clone)]
pub(super) struct Request {
    pub txn_number: i64,
    pub action: Action,
    /// The client's `readConcern`.
    pub read_concern: Option<Document>,
}

impl Request {
    pub fn read(command: &str, body: &RawDocumentBuf) -> Result<Request> {
        let txn_number = match body.get("txnNumber")? {
            Some(RawBsonRef::Int64(n)) => n,
            _ => {
                return Err(MongoError::internal(
                    "a transaction statement without txnNumber",
                ));
            }
        };
        let start = matches!(
            body.get("startTransaction")?,
            Some(RawBsonRef::Boolean(true))
        );
        let action = match command {
            "commitTransaction" => Action::Commit,
            "abortTransaction" => Action::Abort,
            _ if start => Action::Start,
            _ => Action::Continue,
        };
        let read_concern = match body.get("readConcern")? {
            Some(RawBsonRef::Document(rc)) => Some(Document::try_from(rc)?),
            _ => None,
        };
        Ok(Request {
            txn_number,
            action,
            read_concern,
        })
    }
}

/// Starts or continues the session's transaction for a command (MongoDB's
/// `beginOrContinueTxn` on mongos). `now` is the router's cluster time: a `snapshot`
/// transaction reads at it unless the client chose `atClusterTime`. `Ok(true)` when a new
/// transaction started.
pub(super) fn begin_or_continue(
    slot: &mut Option<Txn>,
    session: &str,
    request: &Request,
    now: Timestamp,
) -> Result<bool> {
    let current = slot.as_ref().map(|t| t.txn_number);
    let number = request.txn_number;
    if let Some(current) = current.filter(|c| number < *c) {
        return Err(MongoError::new(
            ErrorCode::TransactionTooOld,
            format!(
                "txnNumber {number} is less than last txnNumber {current} seen in session {session}"
            ),
        ));
    }
    // A first statement sent again before it reached any shard (the driver retries it after
    // an overload refusal) starts the transaction afresh.
    let unstarted = slot
        .as_ref()
        .is_some_and(|t| t.phase == Phase::Open && t.participants.is_empty() && t.statements == 1);
    if current == Some(number) && !(request.action == Action::Start && unstarted) {
        let txn = slot.as_mut().expect("checked");
        return match request.action {
            Action::Start => Err(MongoError::new(
                ErrorCode::ConflictingOperationInProgress,
                format!(
                    "txnNumber {number} txnRetryCounter 0 for session {session} already started"
                ),
            )),
            Action::Continue => {
                if request.read_concern.is_some() {
                    return Err(MongoError::new(
                        ErrorCode::InvalidOptions,
                        "Only the first command in a transaction may specify a readConcern",
                    ));
                }
                match txn.phase {
                    Phase::Open => {}
                    Phase::Committed => {
                        return Err(MongoError::new(
                            ErrorCode::TransactionCommitted,
                            format!("Transaction {number} has been committed."),
                        ));
                    }
                    Phase::Aborted => {
                        return Err(MongoError::new(
                            ErrorCode::NoSuchTransaction,
                            format!("Transaction {number} has been aborted."),
                        ));
                    }
                }
                txn.statements += 1;
                Ok(false)
            }
            Action::Commit | Action::Abort => {
                txn.statements += 1;
                Ok(false)
            }
        };
    }
    match request.action {
        Action::Start => {
            let mut txn = Txn::new(number);
            txn.read_concern = transaction_read_concern(request.read_concern.as_ref(), now)?;
            txn.router_chose_snapshot = request.read_concern.as_ref().is_some_and(|rc| {
                rc.get_str("level") == Ok("snapshot") && !rc.contains_key("atClusterTime")
            });
            txn.statements = 1;
            *slot = Some(txn);
            Ok(true)
        }
        // A commit this router never saw the statements of: recovered with the client's token.
        Action::Commit => {
            let mut txn = Txn::new(number);
            txn.statements = 1;
            txn.recovering = true;
            *slot = Some(txn);
            Ok(false)
        }
        Action::Continue | Action::Abort => Err(MongoError::new(
            ErrorCode::NoSuchTransaction,
            format!(
                "cannot continue txnId {} for session {session} with txnRetryCounter 0",
                current.unwrap_or(-1)
            ),
        )),
    }
}

/// The read concern a transaction's participants start with: the client's level (`local`,
/// `majority` or `snapshot`), `snapshot` at the client's `atClusterTime` or else at `now`.
fn transaction_read_concern(client: Option<&Document>, now: Timestamp) -> Result<Option<Document>> {
    let Some(client) = client else {
        return Ok(None);
    };
    let level = client.get_str("level").unwrap_or("local");
    if !LEVELS.contains(&level) {
        return Err(MongoError::new(
            ErrorCode::InvalidOptions,
            "The first command in a transaction cannot specify a readConcern level other than \
             local, majority, or snapshot",
        ));
    }
    let mut out = client.clone();
    out.remove("provenance");
    if level == "snapshot" && !out.contains_key("atClusterTime") {
        // The snapshot every participant reads: the router's time as the transaction began,
        // which covers every write the client saw (its `afterClusterTime` advanced this clock).
        let at = match client.get_timestamp("afterClusterTime") {
            Ok(after) if (after.time, after.increment) > (now.time, now.increment) => after,
            _ => now,
        };
        out.remove("afterClusterTime");
        out.insert("atClusterTime", Bson::Timestamp(at));
    }
    Ok(Some(out))
}

/// Whether an error ends the transaction in a way the client may retry whole: MongoDB's
/// `isTransientTransactionError`. A commit's or abort's NoSuchTransaction is transient only
/// without a write concern error (the outcome might otherwise be rolled back).
pub(super) fn is_transient(
    code: ErrorCode,
    write_concern_error: bool,
    commit_or_abort: bool,
) -> bool {
    crate::error::is_transient_transaction_error(code, write_concern_error, commit_or_abort)
}

/// Whether a failed commit's outcome is unknown to the client (MongoDB's
/// `UnknownTransactionCommitResult`): it could not be reached or answered a retriable error,
/// ran out of time, or committed without satisfying the write concern (mongos's
/// `isCommitResultUnknown`, which adds TransactionTooOld: such a command did nothing).
pub(super) fn is_unknown_commit_result(code: Option<ErrorCode>, write_concern_error: bool) -> bool {
    use crate::error::ErrorCategory;
    write_concern_error
        || code.is_some_and(|code| {
            code.is(ErrorCategory::NetworkError)
                || code.is(ErrorCategory::RetriableError)
                || code.is(ErrorCategory::NotPrimaryError)
                || code.is(ErrorCategory::ShutdownError)
                || matches!(
                    code,
                    ErrorCode::MaxTimeMSExpired
                        | ErrorCode::ExceededTimeLimit
                        | ErrorCode::NetworkInterfaceExceededTimeLimit
                        | ErrorCode::WriteConcernTimeout
                        | ErrorCode::TransactionTooOld
                )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn ts(time: u32) -> Timestamp {
        Timestamp { time, increment: 1 }
    }

    fn start(number: i64, read_concern: Option<Document>) -> Request {
        Request {
            txn_number: number,
            action: Action::Start,
            read_concern,
        }
    }

    fn next(number: i64, action: Action) -> Request {
        Request {
            txn_number: number,
            action,
            read_concern: None,
        }
    }

    fn code(result: Result<bool>) -> ErrorCode {
        result.expect_err("refused").code()
    }

    #[test]
    fn starting_continuing_and_numbers() {
        let mut slot = None;
        assert_eq!(
            code(begin_or_continue(
                &mut slot,
                "s",
                &next(1, Action::Continue),
                ts(5)
            )),
            ErrorCode::NoSuchTransaction
        );
        assert_eq!(
            code(begin_or_continue(
                &mut slot,
                "s",
                &next(1, Action::Abort),
                ts(5)
            )),
            ErrorCode::NoSuchTransaction
        );
        assert!(begin_or_continue(&mut slot, "s", &start(3, None), ts(5)).unwrap());
        assert!(!begin_or_continue(&mut slot, "s", &next(3, Action::Continue), ts(5)).unwrap());
        assert_eq!(slot.as_ref().unwrap().statements, 2);
        assert!(!slot.as_ref().unwrap().first_statement());
        assert_eq!(
            code(begin_or_continue(&mut slot, "s", &start(3, None), ts(5))),
            ErrorCode::ConflictingOperationInProgress
        );
        assert_eq!(
            code(begin_or_continue(&mut slot, "s", &start(2, None), ts(5))),
            ErrorCode::TransactionTooOld
        );
        assert_eq!(
            code(begin_or_continue(
                &mut slot,
                "s",
                &next(4, Action::Continue),
                ts(5)
            )),
            ErrorCode::NoSuchTransaction
        );
        let later = Request {
            read_concern: Some(doc! {"level": "snapshot"}),
            ..next(3, Action::Continue)
        };
        assert_eq!(
            code(begin_or_continue(&mut slot, "s", &later, ts(5))),
            ErrorCode::InvalidOptions
        );
        // A higher number starts afresh.
        assert!(begin_or_continue(&mut slot, "s", &start(4, None), ts(5)).unwrap());
        assert!(slot.as_ref().unwrap().participants.is_empty());
        // A commit of an unknown transaction is a recovery.
        let mut other = None;
        assert!(!begin_or_continue(&mut other, "s", &next(9, Action::Commit), ts(5)).unwrap());
        assert_eq!(other.unwrap().txn_number, 9);
        // Statements after the outcome.
        slot.as_mut().unwrap().phase = Phase::Committed;
        assert_eq!(
            code(begin_or_continue(
                &mut slot,
                "s",
                &next(4, Action::Continue),
                ts(5)
            )),
            ErrorCode::TransactionCommitted
        );
    }

    #[test]
    fn snapshot_reads_at_the_routers_time() {
        let mut slot = None;
        let rc = Some(doc! {"level": "snapshot"});
        begin_or_continue(&mut slot, "s", &start(1, rc), ts(7)).unwrap();
        let txn = slot.as_mut().unwrap();
        let rc = txn.read_concern.clone().unwrap();
        assert_eq!(
            rc,
            doc! {"level": "snapshot", "atClusterTime": Bson::Timestamp(ts(7))}
        );
        // A stale retry of the first statement reads at a new time the router chose...
        txn.choose_snapshot_again(ts(8));
        let at = |txn: &Txn| {
            txn.read_concern
                .as_ref()
                .unwrap()
                .get_timestamp("atClusterTime")
        };
        assert_eq!(at(txn).unwrap(), ts(8));
        // ...but never moves one the client chose.
        let mut slot = None;
        let rc = Some(doc! {"level": "snapshot", "atClusterTime": Bson::Timestamp(ts(3))});
        begin_or_continue(&mut slot, "s", &start(1, rc), ts(7)).unwrap();
        let txn = slot.as_mut().unwrap();
        txn.choose_snapshot_again(ts(8));
        assert_eq!(at(txn).unwrap(), ts(3));
        let mut slot = None;
        let rc = Some(doc! {"level": "snapshot", "afterClusterTime": Bson::Timestamp(ts(9))});
        begin_or_continue(&mut slot, "s", &start(1, rc), ts(7)).unwrap();
        assert_eq!(
            slot.unwrap().read_concern.unwrap(),
            doc! {"level": "snapshot", "atClusterTime": Bson::Timestamp(ts(9))}
        );
        let mut slot = None;
        let rc = Some(doc! {"level": "majority"});
        begin_or_continue(&mut slot, "s", &start(1, rc), ts(7)).unwrap();
        assert_eq!(
            slot.unwrap().read_concern.unwrap(),
            doc! {"level": "majority"}
        );
        let mut slot = None;
        let rc = Some(doc! {"level": "linearizable"});
        assert_eq!(
            code(begin_or_continue(&mut slot, "s", &start(1, rc), ts(7))),
            ErrorCode::InvalidOptions
        );
    }

    #[test]
    fn each_shard_starts_once_and_the_first_coordinates() {
        let mut slot = None;
        let rc = Some(doc! {"level": "snapshot"});
        begin_or_continue(&mut slot, "s", &start(5, rc), ts(7)).unwrap();
        let txn = slot.as_mut().unwrap();
        let lsid = rawdoc! {"id": 1};
        let body = rawdoc! {
            "find": "c", "lsid": {"id": 1}, "txnNumber": 5_i64, "autocommit": false,
            "startTransaction": true, "readConcern": {"level": "snapshot"},
        };
        let first = txn
            .outgoing("s0", "h0", &lsid, &body)
            .unwrap()
            .to_document()
            .unwrap();
        assert_eq!(first.get_str("find").unwrap(), "c");
        assert!(first.get_bool("startTransaction").unwrap());
        assert!(first.get_bool("coordinator").unwrap());
        assert!(!first.get_bool("autocommit").unwrap());
        assert_eq!(first.get_i64("txnNumber").unwrap(), 5);
        assert_eq!(
            first.get_document("readConcern").unwrap(),
            &doc! {"level": "snapshot", "atClusterTime": Bson::Timestamp(ts(7))}
        );
        let second = txn
            .outgoing("s1", "h1", &lsid, &body)
            .unwrap()
            .to_document()
            .unwrap();
        assert!(second.get_bool("startTransaction").unwrap());
        assert!(second.get("coordinator").is_none());
        let again = txn
            .outgoing("s0", "h0", &lsid, &body)
            .unwrap()
            .to_document()
            .unwrap();
        assert!(again.get("startTransaction").is_none());
        assert!(again.get("readConcern").is_none());
        assert!(again.get("coordinator").is_none());
        assert_eq!(again.get_document("lsid").unwrap(), &doc! {"id": 1});
        assert_eq!(txn.shard_at("h1").as_deref(), Some("s1"));
        // The first shard that wrote recovers the commit: none yet, then s1.
        assert_eq!(txn.recovery_token(), doc! {});
        txn.observe("s0", &rawdoc! {"n": 0, "ok": 1.0, "readOnly": true}, false);
        txn.observe("s1", &rawdoc! {"n": 1, "ok": 1.0}, true);
        assert_eq!(txn.recovery_token(), doc! {"recoveryShardId": "s1"});
    }

    #[test]
    fn commit_types_follow_what_participants_did() {
        let mut slot = None;
        begin_or_continue(&mut slot, "s", &start(1, None), ts(1)).unwrap();
        let txn = slot.as_mut().unwrap();
        let lsid = rawdoc! {"id": 1};
        let body = rawdoc! {"insert": "c"};
        assert_eq!(txn.commit_type().unwrap(), CommitType::NoShards);
        txn.outgoing("a", "ha", &lsid, &body).unwrap();
        // No reply from the participant yet: its part of the transaction is unknown.
        assert_eq!(
            txn.commit_type().unwrap_err().code(),
            ErrorCode::NoSuchTransaction
        );
        txn.observe("a", &rawdoc! {"ok": 1.0, "n": 1}, true);
        assert_eq!(txn.commit_type().unwrap(), CommitType::SingleShard);
        txn.outgoing("b", "hb", &lsid, &body).unwrap();
        txn.observe("b", &rawdoc! {"ok": 1.0, "readOnly": true}, true);
        assert_eq!(txn.commit_type().unwrap(), CommitType::SingleWriteShard);
        txn.observe("b", &rawdoc! {"ok": 1.0, "readOnly": false}, false);
        assert_eq!(txn.commit_type().unwrap(), CommitType::TwoPhaseCommit);
        // A later read-only reply does not undo a write.
        txn.observe("b", &rawdoc! {"ok": 1.0, "readOnly": true}, false);
        assert_eq!(txn.commit_type().unwrap(), CommitType::TwoPhaseCommit);
        let mut reads = None;
        begin_or_continue(&mut reads, "s", &start(1, None), ts(1)).unwrap();
        let reads = reads.as_mut().unwrap();
        for shard in ["a", "b"] {
            reads
                .outgoing(shard, shard, &lsid, &rawdoc! {"find": "c"})
                .unwrap();
            reads.observe(shard, &rawdoc! {"ok": 1.0}, false);
        }
        assert_eq!(reads.commit_type().unwrap(), CommitType::ReadOnly);
    }

    #[test]
    fn a_stale_first_statement_forgets_the_shards_it_reached() {
        let mut slot = None;
        begin_or_continue(&mut slot, "s", &start(1, None), ts(1)).unwrap();
        let txn = slot.as_mut().unwrap();
        let lsid = rawdoc! {"id": 1};
        txn.outgoing("a", "ha", &lsid, &rawdoc! {"find": "c"})
            .unwrap();
        assert_eq!(txn.take_pending().len(), 1);
        assert!(txn.participants.is_empty());
        let body = txn
            .outgoing("a", "ha", &lsid, &rawdoc! {"find": "c"})
            .unwrap();
        assert!(body.get("startTransaction").unwrap().is_some());
        assert!(body.get("coordinator").unwrap().is_some());
    }

    #[test]
    fn labels() {
        assert!(is_transient(ErrorCode::WriteConflict, false, false));
        assert!(is_transient(ErrorCode::StaleConfig, false, false));
        assert!(is_transient(ErrorCode::SnapshotTooOld, false, false));
        assert!(is_transient(ErrorCode::NoSuchTransaction, false, false));
        assert!(is_transient(ErrorCode::NoSuchTransaction, false, true));
        assert!(!is_transient(ErrorCode::NoSuchTransaction, true, true));
        assert!(!is_transient(ErrorCode::DuplicateKey, false, false));
        assert!(is_unknown_commit_result(
            Some(ErrorCode::HostUnreachable),
            false
        ));
        assert!(is_unknown_commit_result(
            Some(ErrorCode::MaxTimeMSExpired),
            false
        ));
        assert!(is_unknown_commit_result(None, true));
        assert!(!is_unknown_commit_result(
            Some(ErrorCode::NoSuchTransaction),
            false
        ));
    }
}
