//! The transaction coordinators a shard runs (MongoDB's `TransactionCoordinatorService`): a
//! router commits a transaction that wrote on several shards by sending
//! `coordinateCommitTransaction` to its first participant, which runs the two-phase commit
//! (`protocol`) with its document in its own `config.transaction_coordinators`. A coordination
//! runs on its own task, so a client that gives up does not stop it; a repeated request joins
//! the running one or answers a recent decision; documents found at startup are resumed.

pub mod protocol;

use super::ShardState;
use crate::command::CommandRequest;
use crate::datanode::DataNode;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::sessions::LogicalSessionId;
use bson::{Bson, Document};
use futures::future::BoxFuture;
use protocol::{CoordinatorDoc, Decision, Steps};
use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, OnceLock, Weak};
use tokio::sync::watch;

const DB: &str = "config";
const COLLECTION: &str = "transaction_coordinators";

/// How many finished coordinations a shard remembers the decision of (for a retried commit
/// that arrives after the document was deleted).
const REMEMBERED: usize = 10_000;

type Key = (LogicalSessionId, i64);
type Outcome = Option<Result<Decision>>;

/// The coordinations of one shard.
#[derive(Default)]
pub struct TxnCoordinators {
    state: OnceLock<Weak<ShardState>>,
    running: Mutex<HashMap<Key, watch::Receiver<Outcome>>>,
    decided: Mutex<(HashMap<Key, Decision>, VecDeque<Key>)>,
}

fn key_of(doc: &CoordinatorDoc) -> Result<Key> {
    let lsid = doc
        .id
        .get_document("lsid")
        .map_err(|_| MongoError::internal("a coordinator without lsid"))?;
    let raw = bson::RawDocumentBuf::from_document(lsid)?;
    let session = LogicalSessionId::from_lsid(&raw)
        .ok_or_else(|| MongoError::internal("a coordinator with a malformed lsid"))?;
    let number = doc
        .id
        .get_i64("txnNumber")
        .map_err(|_| MongoError::internal("a coordinator without txnNumber"))?;
    Ok((session, number))
}

impl TxnCoordinators {
    /// Starts the service: resumes every coordination whose document survived a restart.
    pub(super) async fn start(&self, state: Weak<ShardState>) -> Result<()> {
        let _ = self.state.set(state.clone());
        let Some(shard) = state.upgrade() else {
            return Ok(());
        };
        for doc in shard.storage().documents(DB, COLLECTION).await? {
            match CoordinatorDoc::from_document(&doc) {
                Ok(doc) => {
                    tracing::info!(id = %doc.id, "resuming a transaction coordinator");
                    self.spawn(doc, true)?;
                }
                Err(e) => tracing::error!(error = %e, "ignoring a coordinator document"),
            }
        }
        Ok(())
    }

    /// Runs `doc`'s coordination on its own task (joining one running already); its outcome
    /// comes on the receiver.
    fn spawn(&self, doc: CoordinatorDoc, persisted: bool) -> Result<watch::Receiver<Outcome>> {
        let key = key_of(&doc)?;
        let mut running = self.running.lock().expect("poisoned");
        if let Some(outcome) = running.get(&key) {
            return Ok(outcome.clone());
        }
        let (tx, rx) = watch::channel(None);
        running.insert(key.clone(), rx.clone());
        let steps = ShardSteps {
            state: self.state.get().cloned().unwrap_or_default(),
            hosts: Mutex::default(),
        };
        tokio::spawn(async move {
            let outcome = protocol::run(&steps, doc, persisted).await;
            if let Err(e) = &outcome {
                tracing::warn!(error = %e, "a transaction coordinator stopped before its end");
            }
            if let Some(state) = steps.state.upgrade() {
                let coordinators = &state.txn_coordinators;
                if let Ok(decision) = &outcome {
                    coordinators.remember(key.clone(), decision.clone());
                }
                coordinators.running.lock().expect("poisoned").remove(&key);
            }
            let _ = tx.send(Some(outcome));
        });
        Ok(rx)
    }

    fn remember(&self, key: Key, decision: Decision) {
        let mut decided = self.decided.lock().expect("poisoned");
        let (map, order) = &mut *decided;
        if map.insert(key.clone(), decision).is_none() {
            order.push_back(key);
        }
        while order.len() > REMEMBERED {
            if let Some(old) = order.pop_front() {
                map.remove(&old);
            }
        }
    }

    /// `coordinateCommitTransaction`: the decision of the transaction `lsid`/`txn_number`
    /// among `participants` once every participant acknowledged it. An empty list (a router
    /// recovering a commit it did not run) only finds an existing coordination's outcome.
    pub async fn coordinate(
        &self,
        lsid: Document,
        txn_number: i64,
        participants: Vec<String>,
    ) -> Result<Decision> {
        let doc = CoordinatorDoc {
            id: protocol::coordinator_id(lsid, txn_number),
            participants,
            decision: None,
        };
        let key = key_of(&doc)?;
        let joined = self.running.lock().expect("poisoned").get(&key).cloned();
        let mut outcome = match joined {
            Some(outcome) => outcome,
            None => {
                let decided = self.decided.lock().expect("poisoned").0.get(&key).cloned();
                if let Some(decision) = decided {
                    return Ok(decision);
                }
                if doc.participants.is_empty() {
                    return Err(MongoError::new(
                        ErrorCode::NoSuchTransaction,
                        format!(
                            "Transaction {txn_number} was not found on its coordinator: it \
                             did not commit here"
                        ),
                    ));
                }
                self.spawn(doc, false)?
            }
        };
        let outcome = outcome
            .wait_for(Option::is_some)
            .await
            .map_err(|_| MongoError::internal("the transaction coordinator went away"))?;
        outcome.clone().expect("waited for")
    }
}

/// The shard's [`Steps`]: its storage, the other shards through `rpc`, its fail points.
struct ShardSteps {
    state: Weak<ShardState>,
    /// Shard names to hosts, reloaded from the config server on a miss or a failure.
    hosts: Mutex<HashMap<String, String>>,
}

fn gone() -> MongoError {
    MongoError::new(
        ErrorCode::ShutdownInProgress,
        "the shard is shutting down; its coordinator resumes at its restart",
    )
}

impl ShardSteps {
    async fn host(&self, state: &ShardState, shard: &str, reload: bool) -> Result<String> {
        if !reload {
            if let Some(host) = self.hosts.lock().expect("poisoned").get(shard) {
                return Ok(host.clone());
            }
        }
        let identity = state.require_identity()?;
        let config = state.connector.client(&identity.config_host);
        let hosts = crate::rpc::config::shard_hosts(&config).await?;
        let mut cached = self.hosts.lock().expect("poisoned");
        *cached = hosts.into_iter().collect();
        cached.get(shard).cloned().ok_or_else(|| {
            MongoError::new(ErrorCode::ShardNotFound, format!("Shard {shard} not found"))
        })
    }
}

impl Steps for ShardSteps {
    fn persist<'a>(
        &'a self,
        id: &'a Document,
        doc: Option<&'a CoordinatorDoc>,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let state = self.state.upgrade().ok_or_else(gone)?;
            let document = doc.map(CoordinatorDoc::to_document);
            // The coordinator's document must be on disk before the step it allows.
            state
                .storage()
                .put_document(
                    DB,
                    COLLECTION,
                    &Bson::Document(id.clone()),
                    document.as_ref(),
                    true,
                )
                .await
        })
    }

    fn send<'a>(&'a self, shard: &'a str, command: Document) -> BoxFuture<'a, Result<Document>> {
        Box::pin(async move {
            let state = self.state.upgrade().ok_or_else(gone)?;
            let host = self.host(&state, shard, false).await?;
            let request = CommandRequest::from_document("admin", &command)?;
            let outcome = state.connector.client(&host).run(request).await;
            if outcome.as_ref().is_err_and(|e| e.retryable_hop()) {
                // The shard may have moved: its host is read again before the next attempt.
                self.hosts.lock().expect("poisoned").remove(shard);
            }
            Ok(outcome?.to_document()?)
        })
    }

    fn pause<'a>(&'a self, point: &'static str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Some(state) = self.state.upgrade() {
                let fail_points = &state.node.fail_points;
                fail_points.pause_if(point, &Document::new()).await;
            }
        })
    }
}
