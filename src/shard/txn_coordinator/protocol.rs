//! The two-phase commit a coordinator runs (MongoDB's `TransactionCoordinator`), over the
//! [`Steps`] it needs (its document, the participants, the pause points), so that the order of
//! its steps is one function, tested with a fake: the participant list is durable before any
//! participant prepares, the decision is durable before any participant learns it, and the
//! document goes only once every participant acknowledged the decision. A coordinator resumed
//! from its document starts at the first step its document does not record.

use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, Timestamp, doc};
use futures::future::BoxFuture;
use std::time::Duration;

/// The pause points, in the order the steps reach them (fault tests kill -9 there).
pub const HANG_BEFORE_WRITING_PARTICIPANT_LIST: &str = "hangBeforeWritingParticipantList";
pub const HANG_BEFORE_SENDING_PREPARE: &str = "hangBeforeSendingPrepare";
pub const HANG_BEFORE_WRITING_DECISION: &str = "hangBeforeWritingDecision";
/// Before the decision (commit or abort) is sent to the participants.
pub const HANG_BEFORE_SENDING_COMMIT: &str = "hangBeforeSendingCommit";
pub const HANG_BEFORE_DELETING_COORDINATOR_DOC: &str = "hangBeforeDeletingCoordinatorDoc";

/// How many times a participant that cannot be reached is asked to prepare before the
/// coordinator gives up and aborts (its answers to the decision are awaited however long).
const PREPARE_ATTEMPTS: u32 = 20;

/// The coordinator's outcome.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Commit(Timestamp),
    /// Why: the first participant's refusal to prepare.
    Abort(MongoError),
}

impl Decision {
    /// As the coordinator document records it.
    pub fn to_document(&self) -> Document {
        match self {
            Decision::Commit(ts) => doc! {"decision": "commit", "commitTimestamp": *ts},
            Decision::Abort(_) => doc! {"decision": "abort"},
        }
    }

    pub fn from_document(doc: &Document) -> Result<Decision> {
        match doc.get_str("decision") {
            Ok("commit") => Ok(Decision::Commit(
                doc.get_timestamp("commitTimestamp").map_err(|_| {
                    MongoError::internal("a commit decision without commitTimestamp")
                })?,
            )),
            Ok("abort") => Ok(Decision::Abort(MongoError::new(
                ErrorCode::NoSuchTransaction,
                "the transaction was aborted",
            ))),
            _ => Err(MongoError::internal(format!(
                "malformed coordinator decision {doc}"
            ))),
        }
    }

    /// The coordinator's answer to `coordinateCommitTransaction`: ok for a commit, MongoDB's
    /// NoSuchTransaction for an abort.
    pub fn answer(&self) -> Result<()> {
        match self {
            Decision::Commit(_) => Ok(()),
            Decision::Abort(cause) => Err(MongoError::new(
                ErrorCode::NoSuchTransaction,
                format!(
                    "Transaction was aborted :: caused by :: {}",
                    cause.message()
                ),
            )),
        }
    }
}

/// A transaction's coordinator document (`config.transaction_coordinators`).
#[derive(Debug, Clone, PartialEq)]
pub struct CoordinatorDoc {
    /// `{lsid, txnNumber}`.
    pub id: Document,
    pub participants: Vec<String>,
    pub decision: Option<Decision>,
}

impl CoordinatorDoc {
    pub fn to_document(&self) -> Document {
        let mut doc = doc! {"_id": self.id.clone(), "participants": self.participants.clone()};
        if let Some(decision) = &self.decision {
            doc.insert("decision", decision.to_document());
        }
        doc
    }

    pub fn from_document(doc: &Document) -> Result<CoordinatorDoc> {
        let malformed = || MongoError::internal(format!("malformed coordinator document {doc}"));
        let id = doc.get_document("_id").map_err(|_| malformed())?.clone();
        let participants = doc
            .get_array("participants")
            .map_err(|_| malformed())?
            .iter()
            .map(|p| p.as_str().map(str::to_string).ok_or_else(malformed))
            .collect::<Result<Vec<_>>>()?;
        let decision = match doc.get_document("decision") {
            Ok(decision) => Some(Decision::from_document(decision)?),
            Err(_) => None,
        };
        Ok(CoordinatorDoc {
            id,
            participants,
            decision,
        })
    }

    /// `lsid`, `txnNumber` and `autocommit: false`: what each participant's command carries.
    fn session_fields(&self, command: &mut Document) {
        if let Ok(lsid) = self.id.get_document("lsid") {
            command.insert("lsid", lsid.clone());
        }
        if let Some(number) = self.id.get("txnNumber") {
            command.insert("txnNumber", number.clone());
        }
        command.insert("autocommit", false);
    }
}

/// What a coordinator does outside itself.
pub trait Steps: Send + Sync {
    /// Writes the coordinator document `id` durably (`None` deletes it).
    fn persist<'a>(
        &'a self,
        id: &'a Document,
        doc: Option<&'a CoordinatorDoc>,
    ) -> BoxFuture<'a, Result<()>>;
    /// Sends `command` to shard `shard` once; a failed reply is the error.
    fn send<'a>(&'a self, shard: &'a str, command: Document) -> BoxFuture<'a, Result<Document>>;
    /// Waits while the pause point is on.
    fn pause<'a>(&'a self, point: &'static str) -> BoxFuture<'a, ()>;
    /// The wait before sending again to a participant that failed.
    fn backoff(&self, attempt: u32) -> Duration {
        Duration::from_millis((50 * u64::from(attempt.min(20))).min(1000))
    }
}

/// The decision from the participants' answers to `prepareTransaction`: commit at the latest
/// `prepareTimestamp` when all prepared, else abort with the first refusal.
pub fn decide(votes: Vec<Result<Timestamp>>) -> Decision {
    let mut latest = Timestamp {
        time: 0,
        increment: 0,
    };
    for vote in votes {
        match vote {
            Ok(ts) => {
                if (ts.time, ts.increment) > (latest.time, latest.increment) {
                    latest = ts;
                }
            }
            Err(e) => return Decision::Abort(e),
        }
    }
    Decision::Commit(latest)
}

/// One participant's vote: its `prepareTimestamp`, asked again while it cannot be reached.
async fn prepare(steps: &dyn Steps, doc: &CoordinatorDoc, shard: &str) -> Result<Timestamp> {
    let mut command = doc! {"prepareTransaction": 1};
    doc.session_fields(&mut command);
    let mut attempt = 0;
    loop {
        attempt += 1;
        match steps.send(shard, command.clone()).await {
            // A participant commits a transaction of several shards only by a commit decision:
            // this one was decided by an earlier coordination of the same transaction (whose
            // document was deleted before a restart lost its remembered decision). Its vote is
            // to commit; the prepared participants' timestamps set the commit's.
            Err(e) if e.code() == ErrorCode::TransactionCommitted => {
                return Ok(Timestamp {
                    time: 0,
                    increment: 0,
                });
            }
            Ok(reply) => {
                return reply.get_timestamp("prepareTimestamp").map_err(|_| {
                    MongoError::internal(format!(
                        "participant {shard} answered prepareTransaction without a prepareTimestamp"
                    ))
                });
            }
            Err(e) if e.retryable_hop() && attempt < PREPARE_ATTEMPTS => {
                tracing::debug!(shard = %shard, error = %e, "asking a participant to prepare again");
                tokio::time::sleep(steps.backoff(attempt)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Sends the decision to one participant until it acknowledges it. A participant that knows
/// no such transaction acknowledges either decision: an abort finds nothing left to abort, and
/// a commit is decided only once every participant prepared — a prepared transaction outlives
/// restarts until its decision applies — so one that is gone has committed already.
async fn deliver(steps: &dyn Steps, doc: &CoordinatorDoc, shard: &str, decision: &Decision) {
    let mut command = match decision {
        Decision::Commit(ts) => doc! {"commitTransaction": 1, "commitTimestamp": *ts},
        Decision::Abort(_) => doc! {"abortTransaction": 1},
    };
    doc.session_fields(&mut command);
    let mut attempt = 0;
    loop {
        attempt += 1;
        match steps.send(shard, command.clone()).await {
            Ok(_) => return,
            Err(e) if e.code() == ErrorCode::NoSuchTransaction => return,
            // Sending the same decision again cannot change an outcome the participant holds.
            Err(e) if e.code() == ErrorCode::TransactionCommitted => {
                tracing::error!(shard = %shard, error = %e, "a participant committed a transaction its coordinator aborted");
                return;
            }
            Err(e) => {
                tracing::warn!(shard = %shard, error = %e, "a participant did not take the transaction's decision; sending it again");
                tokio::time::sleep(steps.backoff(attempt)).await;
            }
        }
    }
}

/// Runs the coordination of `doc`'s transaction from where `doc` (as persisted, when
/// `persisted`) says it is, to the decision every participant acknowledged.
pub async fn run(steps: &dyn Steps, mut doc: CoordinatorDoc, persisted: bool) -> Result<Decision> {
    if !persisted {
        steps.pause(HANG_BEFORE_WRITING_PARTICIPANT_LIST).await;
        steps.persist(&doc.id, Some(&doc)).await?;
    }
    let decision = match doc.decision.clone() {
        Some(decision) => decision,
        None => {
            steps.pause(HANG_BEFORE_SENDING_PREPARE).await;
            let votes = doc
                .participants
                .iter()
                .map(|shard| prepare(steps, &doc, shard));
            let decision = decide(futures::future::join_all(votes).await);
            steps.pause(HANG_BEFORE_WRITING_DECISION).await;
            doc.decision = Some(decision.clone());
            steps.persist(&doc.id, Some(&doc)).await?;
            decision
        }
    };
    steps.pause(HANG_BEFORE_SENDING_COMMIT).await;
    let deliveries = doc
        .participants
        .iter()
        .map(|shard| deliver(steps, &doc, shard, &decision));
    futures::future::join_all(deliveries).await;
    steps.pause(HANG_BEFORE_DELETING_COORDINATOR_DOC).await;
    steps.persist(&doc.id, None).await?;
    Ok(decision)
}

/// The id of a transaction's coordinator document.
pub fn coordinator_id(lsid: Document, txn_number: i64) -> Document {
    doc! {"lsid": Bson::Document(lsid), "txnNumber": txn_number}
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// Answers queued per (shard, command name).
    type Answers = HashMap<(String, String), Vec<Result<Document>>>;

    /// Records every step; answers per shard and command name from `answers` (ok by default,
    /// prepare at `Timestamp(shard index + 1, 0)`), each answer used once.
    #[derive(Default)]
    struct Fake {
        log: Mutex<Vec<String>>,
        answers: Mutex<Answers>,
    }

    impl Fake {
        fn answer(&self, shard: &str, command: &str, answer: Result<Document>) {
            self.answers
                .lock()
                .unwrap()
                .entry((shard.to_string(), command.to_string()))
                .or_default()
                .push(answer);
        }

        fn log(&self) -> Vec<String> {
            self.log.lock().unwrap().clone()
        }
    }

    impl Steps for Fake {
        fn persist<'a>(
            &'a self,
            _id: &'a Document,
            doc: Option<&'a CoordinatorDoc>,
        ) -> BoxFuture<'a, Result<()>> {
            let entry = match doc {
                None => "delete".to_string(),
                Some(doc) => match &doc.decision {
                    None => format!("persist {}", doc.participants.join(",")),
                    Some(d) => format!("persist decision {}", d.to_document()),
                },
            };
            self.log.lock().unwrap().push(entry);
            Box::pin(async { Ok(()) })
        }

        fn send<'a>(
            &'a self,
            shard: &'a str,
            command: Document,
        ) -> BoxFuture<'a, Result<Document>> {
            let name = command.keys().next().unwrap().clone();
            assert!(!command.get_bool("autocommit").unwrap());
            assert_eq!(command.get_i64("txnNumber").unwrap(), 4);
            self.log.lock().unwrap().push(format!("{name} {shard}"));
            let queued = self
                .answers
                .lock()
                .unwrap()
                .get_mut(&(shard.to_string(), name.clone()))
                .and_then(|q| (!q.is_empty()).then(|| q.remove(0)));
            let answer = queued.unwrap_or_else(|| match name.as_str() {
                "prepareTransaction" => {
                    let time = shard.trim_start_matches('s').parse::<u32>().unwrap() + 1;
                    Ok(doc! {"prepareTimestamp": Timestamp {time, increment: 0}})
                }
                _ => Ok(doc! {}),
            });
            Box::pin(async move { answer })
        }

        fn pause<'a>(&'a self, point: &'static str) -> BoxFuture<'a, ()> {
            self.log.lock().unwrap().push(point.to_string());
            Box::pin(async {})
        }

        fn backoff(&self, _attempt: u32) -> Duration {
            Duration::ZERO
        }
    }

    fn doc_of(participants: &[&str]) -> CoordinatorDoc {
        CoordinatorDoc {
            id: coordinator_id(doc! {"id": 1}, 4),
            participants: participants.iter().map(|s| s.to_string()).collect(),
            decision: None,
        }
    }

    #[tokio::test]
    async fn commits_at_the_latest_prepare_timestamp_in_order() {
        let fake = Fake::default();
        let decision = run(&fake, doc_of(&["s0", "s2"]), false).await.unwrap();
        let at = Timestamp {
            time: 3,
            increment: 0,
        };
        assert_eq!(decision, Decision::Commit(at));
        assert!(decision.answer().is_ok());
        assert_eq!(
            fake.log(),
            vec![
                HANG_BEFORE_WRITING_PARTICIPANT_LIST.to_string(),
                "persist s0,s2".into(),
                HANG_BEFORE_SENDING_PREPARE.into(),
                "prepareTransaction s0".into(),
                "prepareTransaction s2".into(),
                HANG_BEFORE_WRITING_DECISION.into(),
                format!("persist decision {}", Decision::Commit(at).to_document()),
                HANG_BEFORE_SENDING_COMMIT.into(),
                "commitTransaction s0".into(),
                "commitTransaction s2".into(),
                HANG_BEFORE_DELETING_COORDINATOR_DOC.into(),
                "delete".into(),
            ]
        );
    }

    #[tokio::test]
    async fn a_refusal_to_prepare_aborts_everywhere() {
        let fake = Fake::default();
        fake.answer(
            "s1",
            "prepareTransaction",
            Err(MongoError::new(ErrorCode::NoSuchTransaction, "gone")),
        );
        // An abort finding nothing is done; another failure is sent again.
        fake.answer(
            "s0",
            "abortTransaction",
            Err(MongoError::new(ErrorCode::NoSuchTransaction, "gone")),
        );
        fake.answer(
            "s2",
            "abortTransaction",
            Err(MongoError::new(ErrorCode::HostUnreachable, "down")),
        );
        let decision = run(&fake, doc_of(&["s0", "s1", "s2"]), false)
            .await
            .unwrap();
        assert!(matches!(decision, Decision::Abort(_)));
        assert_eq!(
            decision.answer().unwrap_err().code(),
            ErrorCode::NoSuchTransaction
        );
        let log = fake.log();
        assert_eq!(
            log.iter().filter(|l| *l == "abortTransaction s2").count(),
            2
        );
        assert_eq!(
            log.iter().filter(|l| *l == "abortTransaction s0").count(),
            1
        );
        assert!(!log.iter().any(|l| l.starts_with("commitTransaction")));
        assert!(log.contains(&"persist decision { \"decision\": \"abort\" }".to_string()));
    }

    #[tokio::test]
    async fn an_unreachable_participant_is_asked_again_and_commits_are_resent() {
        let fake = Fake::default();
        fake.answer(
            "s1",
            "prepareTransaction",
            Err(MongoError::new(ErrorCode::HostUnreachable, "down")),
        );
        fake.answer(
            "s0",
            "commitTransaction",
            Err(MongoError::new(ErrorCode::HostUnreachable, "down")),
        );
        let decision = run(&fake, doc_of(&["s0", "s1"]), false).await.unwrap();
        assert!(matches!(decision, Decision::Commit(_)));
        let log = fake.log();
        assert_eq!(
            log.iter().filter(|l| *l == "prepareTransaction s1").count(),
            2
        );
        assert_eq!(
            log.iter().filter(|l| *l == "commitTransaction s0").count(),
            2
        );
    }

    #[tokio::test]
    async fn a_coordination_run_again_after_a_commit_commits_again() {
        // The first coordination committed on s0 and deleted its document; a restart lost the
        // remembered decision and the router's retry starts another one.
        let fake = Fake::default();
        fake.answer(
            "s0",
            "prepareTransaction",
            Err(MongoError::new(
                ErrorCode::TransactionCommitted,
                "committed",
            )),
        );
        let decision = run(&fake, doc_of(&["s0", "s1"]), false).await.unwrap();
        let at = Timestamp {
            time: 2,
            increment: 0,
        };
        assert_eq!(decision, Decision::Commit(at), "s1's prepare sets the time");
        let log = fake.log();
        assert!(log.contains(&"commitTransaction s1".to_string()), "{log:?}");
        assert!(!log.iter().any(|l| l.starts_with("abortTransaction")));
    }

    #[tokio::test]
    async fn a_resumed_coordinator_starts_where_its_document_stops() {
        let fake = Fake::default();
        let mut decided = doc_of(&["s0", "s1"]);
        let at = Timestamp {
            time: 9,
            increment: 1,
        };
        decided.decision = Some(Decision::Commit(at));
        let back = CoordinatorDoc::from_document(&decided.to_document()).unwrap();
        assert_eq!(back, decided);
        assert_eq!(run(&fake, back, true).await.unwrap(), Decision::Commit(at));
        let log = fake.log();
        assert!(!log.iter().any(|l| l.starts_with("prepareTransaction")));
        assert!(!log.iter().any(|l| l.starts_with("persist")));
        assert!(log.contains(&"commitTransaction s1".to_string()));
        assert_eq!(log.last().unwrap(), "delete");

        // Undecided: prepared again.
        let fake = Fake::default();
        run(&fake, doc_of(&["s0"]), true).await.unwrap();
        let log = fake.log();
        assert_eq!(log[0], HANG_BEFORE_SENDING_PREPARE);
        assert!(log.contains(&"prepareTransaction s0".to_string()));
    }

    #[test]
    fn decisions() {
        let ts = |time| Timestamp { time, increment: 0 };
        assert_eq!(
            decide(vec![Ok(ts(3)), Ok(ts(5)), Ok(ts(4))]),
            Decision::Commit(ts(5))
        );
        let refused = MongoError::new(ErrorCode::WriteConflict, "conflict");
        assert_eq!(
            decide(vec![Ok(ts(3)), Err(refused.clone())]),
            Decision::Abort(refused)
        );
    }
}
