//! DDL coordinators on the config server. A coordinated DDL takes its DDL locks, persists a
//! coordinator document (`config.system.sharding_ddl_coordinators`, `_id: {namespace,
//! operationType}`) and records each phase in it before acting, in the same transaction as the
//! metadata change of that phase. A restarted config server resumes every document from its
//! phase; a request for a DDL already running joins it and gets its outcome.

mod coll_mod;
mod drop_collection;
mod drop_database;
mod move_primary;
mod refine_shard_key;
mod rename_collection;
mod shard_collection;

pub(super) use coll_mod::coll_mod;
pub(super) use drop_collection::drop_collection;
pub(super) use drop_database::drop_database;
pub(super) use move_primary::move_primary;
pub(super) use refine_shard_key::refine_shard_key;
pub(super) use rename_collection::rename_collection;
pub(super) use shard_collection::shard_collection;

use super::ConfigState;
use super::ddl_locks::{LocalDdlLock, LockScope};
use super::store::{ConfigStore, ConfigWrite};
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, doc};
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

pub(super) const COORDINATORS: &str = "system.sharding_ddl_coordinators";

type Outcome = Option<Result<Document>>;

/// A running coordinator: its document's fields when it started (what a request joining it
/// must agree with) and where its outcome will appear.
struct Running {
    fields: Document,
    outcome: watch::Receiver<Outcome>,
}

/// Coordinators running in this process, by `(namespace, operationType)`.
#[derive(Default)]
pub(super) struct Coordinators {
    running: Mutex<HashMap<(String, String), Running>>,
}

/// A coordinator's persisted state: its document, rewritten at every phase.
pub(super) struct CoordinatorDoc {
    doc: Document,
    operation: Operation,
    /// The fencing term of the DDL lock this run holds (not persisted: a resumed coordinator
    /// holds a new one).
    lock_term: i64,
}

impl CoordinatorDoc {
    fn new(namespace: &str, operation: Operation, fields: Document) -> CoordinatorDoc {
        let mut doc = doc! {
            "_id": {"namespace": namespace, "operationType": operation.name()},
            "phase": operation.first_phase(),
        };
        doc.extend(fields);
        CoordinatorDoc {
            doc,
            operation,
            lock_term: 0,
        }
    }

    /// The term shards pass back with the commits they send for this coordinator.
    pub fn lock_term(&self) -> i64 {
        self.lock_term
    }

    pub fn namespace(&self) -> &str {
        self.id_field("namespace")
    }

    pub fn operation(&self) -> &'static str {
        self.operation.name()
    }

    fn id_field(&self, field: &str) -> &str {
        self.doc
            .get_document("_id")
            .ok()
            .and_then(|id| id.get_str(field).ok())
            .unwrap_or_default()
    }

    pub fn phase(&self) -> &str {
        self.doc.get_str("phase").unwrap_or_default()
    }

    pub fn fields(&self) -> &Document {
        &self.doc
    }

    fn id(&self) -> Bson {
        self.doc.get("_id").cloned().unwrap_or(Bson::Null)
    }

    /// Moves to `phase`, recording `fields`, in one transaction with `writes` (the previous
    /// phase's metadata change): after a crash, the document names the phase to redo.
    pub async fn enter_phase(
        &mut self,
        state: &ConfigState,
        phase: &str,
        fields: Document,
        mut writes: Vec<ConfigWrite>,
    ) -> Result<()> {
        let mut next = self.doc.clone();
        next.insert("phase", phase);
        next.extend(fields);
        writes.push(ConfigWrite::Upsert(COORDINATORS, next.clone()));
        state.store().write_batch(&writes).await?;
        self.doc = next;
        Ok(())
    }

    /// Pauses here when a fault test asked to (`hangBeforeDdlPhase`).
    pub async fn checkpoint(&self, state: &ConfigState) {
        state
            .node
            .fail_points
            .pause_if(
                "hangBeforeDdlPhase",
                &doc! {"operation": self.operation(), "phase": self.phase()},
            )
            .await;
    }
}

/// The coordinated DDL operations: what each is called in its document, the phase it starts
/// in, what it locks, and its phases.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Operation {
    DropCollection,
    DropDatabase,
    CollMod,
    ShardCollection,
    RefineCollectionShardKey,
    MovePrimary,
    RenameCollection,
}

impl Operation {
    const ALL: [Operation; 7] = [
        Operation::DropCollection,
        Operation::DropDatabase,
        Operation::CollMod,
        Operation::ShardCollection,
        Operation::RefineCollectionShardKey,
        Operation::MovePrimary,
        Operation::RenameCollection,
    ];

    /// The `operationType` of its documents (MongoDB's names).
    fn name(self) -> &'static str {
        match self {
            Operation::DropCollection => "dropCollection",
            Operation::DropDatabase => "dropDatabase",
            Operation::CollMod => "collMod",
            Operation::ShardCollection => "shardCollection",
            Operation::RefineCollectionShardKey => "refineCollectionShardKey",
            Operation::MovePrimary => "movePrimary",
            Operation::RenameCollection => "renameCollection",
        }
    }

    fn named(name: &str) -> Result<Operation> {
        Operation::ALL
            .into_iter()
            .find(|op| op.name() == name)
            .ok_or_else(|| MongoError::internal(format!("unknown DDL coordinator {name}")))
    }

    fn first_phase(self) -> &'static str {
        match self {
            Operation::DropCollection | Operation::DropDatabase => "removeMetadata",
            Operation::CollMod => "onShards",
            Operation::ShardCollection | Operation::RefineCollectionShardKey => "onPrimary",
            Operation::MovePrimary => "start",
            Operation::RenameCollection => "checkPreconditions",
        }
    }

    /// A database operation locks the database, a rename both its names, the others their
    /// collection.
    fn scope(self, doc: &CoordinatorDoc) -> Result<LockScope> {
        let namespace = doc.namespace();
        match self {
            Operation::DropDatabase | Operation::MovePrimary => Ok(LockScope::database(namespace)),
            Operation::RenameCollection => {
                let to = rename_collection::target(doc.fields())?;
                LockScope::collections(&[namespace, to])
            }
            _ => LockScope::collections(&[namespace]),
        }
    }

    /// Runs the coordinator's phases from the one its document names.
    fn run(
        self,
        state: Arc<ConfigState>,
        doc: CoordinatorDoc,
    ) -> BoxFuture<'static, Result<Document>> {
        Box::pin(async move {
            match self {
                Operation::DropCollection => drop_collection::run(&state, doc).await,
                Operation::DropDatabase => drop_database::run(&state, doc).await,
                Operation::CollMod => coll_mod::run(&state, doc).await,
                Operation::ShardCollection => shard_collection::run(&state, doc).await,
                Operation::RefineCollectionShardKey => refine_shard_key::run(&state, doc).await,
                Operation::MovePrimary => move_primary::run(&state, doc).await,
                Operation::RenameCollection => rename_collection::run(&state, doc).await,
            }
        })
    }
}

impl Coordinators {
    /// Starts the coordinator for `(namespace, operation)`, or joins it when it already runs
    /// with the same arguments (ConflictingOperationInProgress when not); waits for its
    /// outcome. The coordinator runs in its own task, so a client that goes away does not stop
    /// it half-way.
    pub(super) async fn run(
        state: &ConfigState,
        namespace: &str,
        operation: Operation,
        fields: Document,
    ) -> Result<Document> {
        let key = (namespace.to_string(), operation.name().to_string());
        let mut outcome = {
            let mut running = state.coordinators.running.lock().expect("poisoned");
            match running.get(&key) {
                Some(other) if fields.iter().any(|(k, v)| other.fields.get(k) != Some(v)) => {
                    return Err(MongoError::new(
                        ErrorCode::ConflictingOperationInProgress,
                        format!(
                            "Another {} with different arguments is already running for the same namespace {namespace}",
                            operation.name()
                        ),
                    ));
                }
                Some(other) => other.outcome.clone(),
                None => {
                    let (tx, rx) = watch::channel(None);
                    let running_fields = fields.clone();
                    running.insert(
                        key.clone(),
                        Running {
                            fields: running_fields,
                            outcome: rx.clone(),
                        },
                    );
                    let doc = CoordinatorDoc::new(namespace, operation, fields);
                    let state = state.arc();
                    tokio::spawn(async move {
                        let run = tokio::spawn({
                            let state = Arc::clone(&state);
                            async move { start(&state, doc).await }
                        });
                        finish(&state, &key, tx, outcome_of(run.await));
                    });
                    rx
                }
            }
        };
        let result = outcome
            .wait_for(Option::is_some)
            .await
            .map_err(|_| MongoError::internal("the DDL coordinator went away"))?;
        result.clone().expect("waited for an outcome")
    }

    /// Resumes the coordinators of the config server's previous run. Their locks are taken
    /// before this returns, so no new DDL slips in ahead of them.
    pub(super) async fn recover(state: &Arc<ConfigState>) -> Result<()> {
        let docs = state.store().find(COORDINATORS, &doc! {}).await?;
        for doc in docs {
            let operation = doc
                .get_document("_id")
                .ok()
                .and_then(|id| id.get_str("operationType").ok())
                .unwrap_or_default();
            let doc = CoordinatorDoc {
                operation: Operation::named(operation)?,
                doc,
                lock_term: 0,
            };
            let key = (doc.namespace().to_string(), doc.operation().to_string());
            let lock = take_locks(state, &doc).await?;
            tracing::info!(
                namespace = %doc.namespace(),
                operation = %doc.operation(),
                phase = %doc.phase(),
                "resuming a DDL coordinator"
            );
            let (tx, rx) = watch::channel(None);
            let running = Running {
                fields: doc.fields().clone(),
                outcome: rx,
            };
            state
                .coordinators
                .running
                .lock()
                .expect("poisoned")
                .insert(key.clone(), running);
            let state = Arc::clone(state);
            tokio::spawn(async move {
                let run = tokio::spawn({
                    let state = Arc::clone(&state);
                    async move { resume(&state, doc, lock).await }
                });
                finish(&state, &key, tx, outcome_of(run.await));
            });
        }
        Ok(())
    }
}

/// A coordinator task's outcome; one that panicked (a bug) answers InternalError, its document
/// stays for the next start to resume, and the same DDL can be sent again.
fn outcome_of(
    joined: std::result::Result<Result<Document>, tokio::task::JoinError>,
) -> Result<Document> {
    joined.unwrap_or_else(|e| {
        let what = match e.try_into_panic() {
            Ok(panic) => crate::server::asserts::count_panic("DDL coordinator", &*panic),
            Err(e) => e.to_string(),
        };
        tracing::error!(error = %what, "a DDL coordinator failed");
        Err(MongoError::internal(format!(
            "the DDL coordinator failed: {what}"
        )))
    })
}

fn finish(
    state: &ConfigState,
    key: &(String, String),
    tx: watch::Sender<Outcome>,
    result: Result<Document>,
) {
    state
        .coordinators
        .running
        .lock()
        .expect("poisoned")
        .remove(key);
    tx.send_replace(Some(result));
}

/// The DDL locks a coordinator holds while it runs (its operation's scope).
async fn take_locks(state: &ConfigState, doc: &CoordinatorDoc) -> Result<LocalDdlLock> {
    let scope = doc.operation.scope(doc)?;
    LocalDdlLock::acquire(
        &state.ddl_locks,
        &scope,
        doc.operation(),
        state.lock_timeout(),
    )
    .await
}

async fn start(state: &Arc<ConfigState>, doc: CoordinatorDoc) -> Result<Document> {
    let lock = take_locks(state, &doc).await?;
    state.store().upsert(COORDINATORS, doc.fields()).await?;
    resume(state, doc, lock).await
}

async fn resume(
    state: &Arc<ConfigState>,
    mut doc: CoordinatorDoc,
    lock: LocalDdlLock,
) -> Result<Document> {
    doc.lock_term = lock.term();
    let id = doc.id();
    let result = doc.operation.run(Arc::clone(state), doc).await;
    // Done (or refused before changing anything): nothing left to resume.
    let forgotten = state.store().delete_by_id(COORDINATORS, &id).await;
    let released = lock.release().await;
    forgotten?;
    released?;
    result
}

/// Sends an idempotent command to the shard named `shard` until it succeeds, with backoff,
/// looking the shard's host up again each time (it may restart at another address). Past a
/// coordinator's commit there is no going back, so every failure is retried; before it, only
/// retryable ones (the shard down or restarting, or still busy with an earlier attempt: LockBusy
/// from its critical section).
pub(super) async fn run_on_shard(
    state: &ConfigState,
    shard: &str,
    db: &str,
    command: Document,
    committed: bool,
) -> Result<Document> {
    let mut backoff = Duration::from_millis(50);
    loop {
        let host = state
            .shards()
            .await?
            .into_iter()
            .find(|(name, _)| name == shard)
            .map(|(_, host)| host);
        let result = match host {
            Some(host) => {
                state
                    .connector
                    .client(&host)
                    .run_doc(db, command.clone())
                    .await
            }
            None => Err(MongoError::new(
                ErrorCode::ShardNotFound,
                format!("shard {shard} not found"),
            )),
        };
        match result {
            Err(e) if committed || e.retryable_hop() || e.code() == ErrorCode::LockBusy => {
                tracing::warn!(shard = %shard, error = %e, "retrying a DDL participant");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
            other => return other,
        }
    }
}

/// The database's routing table entry, or NamespaceNotFound with `missing` as message.
pub(super) async fn database_entry(
    state: &ConfigState,
    db: &str,
    missing: impl FnOnce() -> String,
) -> Result<crate::catalog::DatabaseEntry> {
    match state
        .store()
        .find_one("databases", &doc! {"_id": db})
        .await?
    {
        Some(entry) => crate::catalog::DatabaseEntry::from_document(&entry),
        None => Err(MongoError::new(ErrorCode::NamespaceNotFound, missing())),
    }
}

/// The writes removing a sharded collection's routing metadata (entry and chunks); none for an
/// unsharded collection.
pub(super) async fn metadata_removal(state: &ConfigState, ns: &str) -> Result<Vec<ConfigWrite>> {
    let store: ConfigStore<'_> = state.store();
    let Some(entry) = store.find_one("collections", &doc! {"_id": ns}).await? else {
        return Ok(Vec::new());
    };
    let uuid = entry.get("uuid").cloned().unwrap_or(Bson::Null);
    let mut writes: Vec<ConfigWrite> = store
        .find("chunks", &doc! {"uuid": uuid})
        .await?
        .into_iter()
        .filter_map(|chunk| chunk.get("_id").cloned())
        .map(|id| ConfigWrite::Delete("chunks", id))
        .collect();
    writes.push(ConfigWrite::Delete(
        "collections",
        Bson::String(ns.to_string()),
    ));
    Ok(writes)
}
