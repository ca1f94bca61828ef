//! The logical session cache's periodic jobs on every role (MongoDB's
//! `LogicalSessionCacheImpl::_refresh` and `_reap`), every `logicalSessionRefreshMillis`
//! unless `disableLogicalSessionCacheRefresh`, and `refreshLogicalSessionCacheNow`:
//!
//! - refresh: (1) upsert the sessions used since the last refresh (and those of running
//!   operations) into `config.system.sessions`, (2) remove the sessions `endSessions` ended
//!   here, (3) find which sessions of this node's open cursors are gone from the collection
//!   (expired by its TTL index `lsidTTLIndex`, `localLogicalSessionTimeoutMinutes`), (4) kill
//!   the cursors of the ended and expired sessions;
//! - reap: remove session catalog entries idle past `TransactionRecordMinimumLifetimeMinutes`
//!   whose session is gone, and have the registered transaction-table reaper do the same.
//!
//! The sessions collection lives on the config server, which sets it up and writes it
//! locally; routers and shards reach it through `NodeState::on_config_server`.

use super::context::RequestContext;
use super::dispatch::NodeState;
use super::node::Role;
use super::sessions::LogicalSessionId;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, doc};
use std::collections::BTreeSet;
use std::sync::Weak;
use std::time::{Duration, Instant};

/// The sessions collection, in the `config` database.
pub const SESSIONS_COLLECTION: &str = "system.sessions";
/// Its TTL index on `lastUse`.
pub const TTL_INDEX: &str = "lsidTTLIndex";
/// Session records per write or read of the sessions collection.
const BATCH: usize = 1_000;

/// Runs the refresh and reap jobs of `state`'s node every refresh period while it lives.
pub fn spawn<S: NodeState>(state: Weak<S>) {
    let disabled = state.upgrade().is_none_or(|s| {
        s.node()
            .params
            .get_bool("disableLogicalSessionCacheRefresh")
    });
    if disabled {
        return;
    }
    tokio::spawn(async move {
        while let Some(period) = state.upgrade().map(|s| s.node().session_refresh_period()) {
            tokio::time::sleep(period.max(Duration::from_millis(10))).await;
            let Some(node) = state.upgrade() else { break };
            let jobs = async {
                if let Err(e) = refresh(&*node).await {
                    tracing::info!(error = %e, "Failed to refresh session cache, will try again at the next refresh interval");
                }
                if let Err(e) = reap(&*node).await {
                    tracing::info!(error = %e, "Failed to reap transaction table");
                }
            };
            super::asserts::contained("logical session cache jobs", jobs).await;
        }
    });
}

/// Runs a command on this node's own command table, as the sessions collection's writes run
/// on the config server.
pub async fn run_locally<S: NodeState>(state: &S, db: &str, command: Document) -> Result<Document> {
    let request = CommandRequest::from_document(db, &command)?;
    let spec = state
        .commands()
        .get(request.name())
        .ok_or_else(|| MongoError::internal(format!("this node cannot run {}", request.name())))?;
    let ctx = RequestContext::internal();
    let reply = (spec.handler)(state, &ctx, request).await?;
    Ok(reply.to_document()?)
}

/// Runs a command on the sessions collection, turning a write error into the error.
async fn sessions_command<S: NodeState>(state: &S, command: Document) -> Result<Document> {
    let reply = state.on_config_server("config", command).await?;
    if let Some(err) = MongoError::from_reply(&reply) {
        return Err(err);
    }
    if let Ok(errors) = reply.get_array("writeErrors") {
        if let Some(Bson::Document(first)) = errors.first() {
            let mut failed = first.clone();
            failed.insert("ok", 0);
            return Err(MongoError::from_reply(&failed)
                .unwrap_or_else(|| MongoError::internal("write error")));
        }
    }
    Ok(reply)
}

/// The config server creates the sessions collection's TTL index (keeping its
/// `expireAfterSeconds` at `localLogicalSessionTimeoutMinutes`); other nodes check it exists.
pub async fn setup_sessions_collection<S: NodeState>(state: &S) -> Result<()> {
    let node = state.node();
    if node.role != Role::ConfigServer {
        return check_sessions_collection(state).await;
    }
    let expire =
        i32::try_from(node.session_timeout_minutes().saturating_mul(60)).unwrap_or(i32::MAX);
    let created = sessions_command(
        state,
        doc! {
            "createIndexes": SESSIONS_COLLECTION,
            "indexes": [{"key": {"lastUse": 1}, "name": TTL_INDEX, "expireAfterSeconds": expire}],
        },
    )
    .await;
    match created {
        // Created with another timeout: the timeout this config server runs with wins.
        Err(e) if e.code() == ErrorCode::IndexOptionsConflict => {
            sessions_command(
                state,
                doc! {
                    "collMod": SESSIONS_COLLECTION,
                    "index": {"name": TTL_INDEX, "expireAfterSeconds": expire},
                },
            )
            .await?;
            Ok(())
        }
        other => other.map(|_| ()),
    }
}

/// Fails unless the sessions collection has been set up (its TTL index exists).
async fn check_sessions_collection<S: NodeState>(state: &S) -> Result<()> {
    let reply = sessions_command(state, doc! {"listIndexes": SESSIONS_COLLECTION}).await;
    let indexes = match reply {
        Ok(reply) => crate::command::first_batch(&reply),
        Err(e) if e.code() == ErrorCode::NamespaceNotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    if indexes.iter().any(|i| i.get_str("name") == Ok(TTL_INDEX)) {
        return Ok(());
    }
    Err(MongoError::new(
        ErrorCode::NamespaceNotFound,
        "config.system.sessions does not exist",
    ))
}

/// The refresh; see the module documentation.
pub async fn refresh<S: NodeState>(state: &S) -> Result<()> {
    let node = state.node();
    let started = Instant::now();
    node.sessions.with_stats(|s| {
        s.last_sessions_collection_job_duration_millis = 0;
        s.last_sessions_collection_job_entries_refreshed = 0;
        s.last_sessions_collection_job_entries_ended = 0;
        s.last_sessions_collection_job_cursors_closed = 0;
        s.last_sessions_collection_job_timestamp = Some(bson::DateTime::now());
        s.sessions_collection_job_count += 1;
    });
    let outcome = refresh_steps(state).await;
    let millis = i32::try_from(started.elapsed().as_millis()).unwrap_or(i32::MAX);
    node.sessions
        .with_stats(|s| s.last_sessions_collection_job_duration_millis = millis);
    outcome
}

async fn refresh_steps<S: NodeState>(state: &S) -> Result<()> {
    let node = state.node();
    setup_sessions_collection(state).await?;
    let batch = node.sessions.take_for_refresh();
    let mut active = batch.active;
    let ending = batch.ending;
    // (1) Sessions used here since the last refresh, and those of running operations.
    let now = bson::DateTime::now();
    for session in node.operations.sessions() {
        if !ending.contains(&session) {
            active.entry(session).or_insert(now);
        }
    }
    let sessions: Vec<&LogicalSessionId> = active.keys().collect();
    if let Err(e) = upsert_records(state, &sessions).await {
        node.sessions.restore(Some(active), Some(ending));
        return Err(e);
    }
    node.sessions
        .with_stats(|s| s.last_sessions_collection_job_entries_refreshed = sessions.len() as i32);
    // (2) Sessions ended here.
    if let Err(e) = remove_records(state, &ending).await {
        node.sessions.restore(None, Some(ending));
        return Err(e);
    }
    node.sessions
        .with_stats(|s| s.last_sessions_collection_job_entries_ended = ending.len() as i32);
    // (3) Sessions of open cursors gone from the collection; those used since the cache was
    // taken are alive whatever the collection says.
    let open: Vec<LogicalSessionId> = state
        .cursor_sessions()
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|session| !node.sessions.contains(session))
        .collect();
    // As in MongoDB, a failure to read the collection only spares the cursors.
    let mut doomed: BTreeSet<LogicalSessionId> = find_removed_sessions(state, &open)
        .await
        .unwrap_or_default()
        .into_iter()
        .collect();
    // (4) Their cursors and those of the ended sessions are killed.
    doomed.extend(ending);
    let closed = if doomed.is_empty() {
        0
    } else {
        state
            .kill_session_cursors(&|session| doomed.contains(session))
            .await
    };
    node.sessions.with_stats(|s| {
        s.last_sessions_collection_job_cursors_closed = i32::try_from(closed).unwrap_or(i32::MAX)
    });
    Ok(())
}

/// Writes session records: a record's `lastUse` becomes the time of the write (MongoDB's
/// `$currentDate`), so it only moves forward.
async fn upsert_records<S: NodeState>(state: &S, sessions: &[&LogicalSessionId]) -> Result<()> {
    for chunk in sessions.chunks(BATCH) {
        let updates: Vec<Document> = chunk
            .iter()
            .map(|session| {
                doc! {
                    "q": {"_id": session.to_document()},
                    "u": {"$currentDate": {"lastUse": true}},
                    "upsert": true,
                }
            })
            .collect();
        sessions_command(
            state,
            doc! {"update": SESSIONS_COLLECTION, "ordered": false, "updates": updates},
        )
        .await?;
    }
    Ok(())
}

async fn remove_records<S: NodeState>(
    state: &S,
    sessions: &BTreeSet<LogicalSessionId>,
) -> Result<()> {
    let sessions: Vec<&LogicalSessionId> = sessions.iter().collect();
    for chunk in sessions.chunks(BATCH) {
        let deletes: Vec<Document> = chunk
            .iter()
            .map(|session| doc! {"q": {"_id": session.to_document()}, "limit": 1})
            .collect();
        sessions_command(
            state,
            doc! {"delete": SESSIONS_COLLECTION, "ordered": false, "deletes": deletes},
        )
        .await?;
    }
    Ok(())
}

/// Which of `sessions` have no record in the sessions collection (MongoDB's
/// `findRemovedSessions`).
pub async fn find_removed_sessions<S: NodeState>(
    state: &S,
    sessions: &[LogicalSessionId],
) -> Result<Vec<LogicalSessionId>> {
    let mut removed = Vec::new();
    for chunk in sessions.chunks(BATCH) {
        let ids: Vec<Document> = chunk.iter().map(LogicalSessionId::to_document).collect();
        let reply = sessions_command(
            state,
            doc! {
                "find": SESSIONS_COLLECTION,
                "filter": {"_id": {"$in": ids}},
                "projection": {"_id": 1},
                "batchSize": chunk.len() as i64,
                "limit": chunk.len() as i64,
                "singleBatch": true,
            },
        )
        .await?;
        let found: BTreeSet<LogicalSessionId> = crate::command::first_batch(&reply)
            .iter()
            .filter_map(LogicalSessionId::of_record)
            .collect();
        removed.extend(chunk.iter().filter(|s| !found.contains(s)).cloned());
    }
    Ok(removed)
}

/// The reap; see the module documentation. Returns how many transaction-table records it
/// removed.
pub async fn reap<S: NodeState>(state: &S) -> Result<usize> {
    let node = state.node();
    let started = Instant::now();
    node.sessions.with_stats(|s| {
        s.last_transaction_reaper_job_duration_millis = 0;
        s.last_transaction_reaper_job_entries_cleaned_up = 0;
        s.last_transaction_reaper_job_timestamp = Some(bson::DateTime::now());
        s.transaction_reaper_job_count += 1;
    });
    let outcome = reap_steps(state).await;
    let millis = i32::try_from(started.elapsed().as_millis()).unwrap_or(i32::MAX);
    node.sessions.with_stats(|s| {
        s.last_transaction_reaper_job_duration_millis = millis;
        if let Ok(reaped) = &outcome {
            s.last_transaction_reaper_job_entries_cleaned_up =
                i32::try_from(*reaped).unwrap_or(i32::MAX);
        }
    });
    outcome
}

async fn reap_steps<S: NodeState>(state: &S) -> Result<usize> {
    let node = state.node();
    // Until the sessions collection is set up no session can be known gone: wait for the next
    // period.
    if let Err(e) = check_sessions_collection(state).await {
        tracing::info!(error = %e, "Sessions collection is not set up; waiting until next sessions reap interval");
        return Ok(0);
    }
    let lifetime = node
        .params
        .get_i64("TransactionRecordMinimumLifetimeMinutes")
        .unwrap_or(30)
        .max(0) as u64;
    let age = Duration::from_secs(lifetime.saturating_mul(60));
    let cutoff = Instant::now().checked_sub(age).unwrap_or_else(Instant::now);
    // The session catalog: entries idle since the cutoff whose session is gone.
    let idle = node.session_catalog.idle_since(cutoff);
    if !idle.is_empty() {
        let gone = find_removed_sessions(state, &idle).await?;
        node.session_catalog.remove_idle(&gone, cutoff);
    }
    // The transaction table, through the data node's hook.
    let Some(reaper) = node.session_catalog.transaction_reaper() else {
        return Ok(0);
    };
    let written_before = bson::DateTime::from_millis(
        bson::DateTime::now()
            .timestamp_millis()
            .saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX)),
    );
    let old = reaper.sessions_written_before(written_before).await?;
    if old.is_empty() {
        return Ok(0);
    }
    let dead = find_removed_sessions(state, &old).await?;
    if dead.is_empty() {
        return Ok(0);
    }
    reaper.remove(&dead, written_before).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::dispatch::CommandTable;
    use crate::server::logbuf::LogBuffer;
    use crate::server::session_catalog::TransactionTableReaper;
    use crate::server::sessions::NO_AUTH_DIGEST;
    use crate::server::{CmdLine, Node, Parameters};
    use futures::future::BoxFuture;
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};

    fn session(byte: u8) -> LogicalSessionId {
        LogicalSessionId {
            id: [byte; 16],
            uid: NO_AUTH_DIGEST,
        }
    }

    /// A shard whose sessions collection is a set in memory and whose open cursors are a list.
    struct FakeNode {
        node: Node,
        table: CommandTable<FakeNode>,
        collection: Mutex<BTreeSet<LogicalSessionId>>,
        cursors: Mutex<Vec<LogicalSessionId>>,
        /// The TTL index's `expireAfterSeconds`, once created.
        ttl: Mutex<Option<i32>>,
    }

    impl FakeNode {
        fn config_server() -> FakeNode {
            let mut node = FakeNode::new();
            node.node = Node::new(
                Role::ConfigServer,
                CmdLine::default(),
                Parameters::with_startup(&[(
                    "localLogicalSessionTimeoutMinutes".into(),
                    "2".into(),
                )])
                .unwrap(),
                Arc::new(LogBuffer::default()),
            );
            node
        }

        fn new() -> FakeNode {
            let params = Parameters::with_startup(&[(
                "TransactionRecordMinimumLifetimeMinutes".into(),
                "0".into(),
            )])
            .unwrap();
            FakeNode {
                node: Node::new(
                    Role::Shard,
                    CmdLine::default(),
                    params,
                    Arc::new(LogBuffer::default()),
                ),
                table: CommandTable::new(Vec::new()),
                collection: Mutex::default(),
                cursors: Mutex::default(),
                ttl: Mutex::default(),
            }
        }

        fn answer(&self, command: &Document) -> Document {
            let ids = |array: &str, field: &str| -> Vec<LogicalSessionId> {
                command
                    .get_array(array)
                    .unwrap()
                    .iter()
                    .filter_map(|e| e.as_document())
                    .filter_map(|e| e.get_document(field).ok())
                    .filter_map(LogicalSessionId::of_record)
                    .collect()
            };
            let mut collection = self.collection.lock().unwrap();
            let cursor = |batch: Vec<Document>| {
                doc! {"cursor": {"firstBatch": batch, "id": 0i64, "ns": "config.system.sessions"}}
            };
            match command.keys().next().map(String::as_str) {
                Some("listIndexes") => cursor(vec![doc! {"name": TTL_INDEX}]),
                Some("createIndexes") => {
                    let index = command.get_array("indexes").unwrap()[0]
                        .as_document()
                        .unwrap();
                    let wanted = index.get_i32("expireAfterSeconds").unwrap();
                    let mut ttl = self.ttl.lock().unwrap();
                    match *ttl {
                        Some(existing) if existing != wanted => doc! {
                            "ok": 0,
                            "code": 85,
                            "codeName": "IndexOptionsConflict",
                            "errmsg": "An equivalent index already exists with different options",
                        },
                        _ => {
                            *ttl = Some(wanted);
                            doc! {}
                        }
                    }
                }
                Some("collMod") => {
                    let index = command.get_document("index").unwrap();
                    assert_eq!(index.get_str("name").unwrap(), TTL_INDEX);
                    *self.ttl.lock().unwrap() = Some(index.get_i32("expireAfterSeconds").unwrap());
                    doc! {}
                }
                Some("update") => {
                    collection.extend(ids("updates", "q"));
                    doc! {}
                }
                Some("delete") => {
                    for session in ids("deletes", "q") {
                        collection.remove(&session);
                    }
                    doc! {}
                }
                Some("find") => {
                    let wanted = command
                        .get_document("filter")
                        .and_then(|f| f.get_document("_id"))
                        .and_then(|f| f.get_array("$in"))
                        .unwrap()
                        .iter()
                        .filter_map(|id| LogicalSessionId::of_record(&doc! {"_id": id.clone()}));
                    let found = wanted
                        .filter(|s| collection.contains(s))
                        .map(|s| doc! {"_id": s.to_document()})
                        .collect();
                    cursor(found)
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    impl NodeState for FakeNode {
        fn node(&self) -> &Node {
            &self.node
        }
        fn commands(&self) -> &CommandTable<Self> {
            &self.table
        }
        fn on_config_server(
            &self,
            _db: &'static str,
            command: Document,
        ) -> BoxFuture<'_, Result<Document>> {
            Box::pin(async move { Ok(self.answer(&command)) })
        }
        fn cursor_sessions(&self) -> Vec<LogicalSessionId> {
            self.cursors.lock().unwrap().clone()
        }
        fn kill_session_cursors<'a>(
            &'a self,
            matches: &'a (dyn Fn(&LogicalSessionId) -> bool + Sync),
        ) -> BoxFuture<'a, usize> {
            Box::pin(async move {
                let mut cursors = self.cursors.lock().unwrap();
                let before = cursors.len();
                cursors.retain(|s| !matches(s));
                before - cursors.len()
            })
        }
    }

    /// A transaction table of fixed sessions, recording what the reap removes.
    #[derive(Default)]
    struct FakeTable {
        rows: Vec<LogicalSessionId>,
        removed: Mutex<Vec<LogicalSessionId>>,
    }

    impl TransactionTableReaper for FakeTable {
        fn sessions_written_before(
            &self,
            _cutoff: bson::DateTime,
        ) -> BoxFuture<'_, Result<Vec<LogicalSessionId>>> {
            Box::pin(async move { Ok(self.rows.clone()) })
        }
        fn remove<'a>(
            &'a self,
            dead: &'a [LogicalSessionId],
            _cutoff: bson::DateTime,
        ) -> BoxFuture<'a, Result<usize>> {
            Box::pin(async move {
                self.removed.lock().unwrap().extend(dead.iter().cloned());
                Ok(dead.len())
            })
        }
    }

    #[tokio::test]
    async fn a_refresh_writes_used_sessions_removes_ended_ones_and_kills_their_cursors() {
        let node = FakeNode::new();
        node.collection
            .lock()
            .unwrap()
            .extend([session(3), session(5)]);
        // Cursors of an expired session (4, not in the collection) and a live one (5).
        node.cursors
            .lock()
            .unwrap()
            .extend([session(4), session(5), session(3)]);
        node.node.touch_session(session(1)).unwrap();
        node.node.touch_session(session(2)).unwrap();
        node.node.sessions.end([session(3)]);
        refresh(&node).await.unwrap();
        let collection = node.collection.lock().unwrap().clone();
        assert_eq!(
            collection,
            [session(1), session(2), session(5)].into_iter().collect()
        );
        assert_eq!(*node.cursors.lock().unwrap(), vec![session(5)]);
        let status = node.node.sessions.server_status(0);
        assert_eq!(status.get_i32("sessionsCollectionJobCount").unwrap(), 1);
        assert_eq!(
            status
                .get_i32("lastSessionsCollectionJobEntriesRefreshed")
                .unwrap(),
            2
        );
        assert_eq!(
            status
                .get_i32("lastSessionsCollectionJobEntriesEnded")
                .unwrap(),
            1
        );
        assert_eq!(
            status
                .get_i32("lastSessionsCollectionJobCursorsClosed")
                .unwrap(),
            2
        );
        assert_eq!(status.get_i32("activeSessionsCount").unwrap(), 0);
    }

    #[tokio::test]
    async fn the_config_server_keeps_the_ttl_at_its_session_timeout() {
        let node = FakeNode::config_server();
        setup_sessions_collection(&node).await.unwrap();
        assert_eq!(*node.ttl.lock().unwrap(), Some(120));
        // Created earlier with another timeout: changed to this one.
        *node.ttl.lock().unwrap() = Some(1800);
        setup_sessions_collection(&node).await.unwrap();
        assert_eq!(*node.ttl.lock().unwrap(), Some(120));
    }

    #[tokio::test]
    async fn a_reap_drops_idle_catalog_entries_and_calls_the_transaction_hook() {
        let node = FakeNode::new();
        node.collection.lock().unwrap().extend([session(1)]);
        // Idle entries: one whose session lives, one whose session is gone.
        drop(node.node.session_catalog.check_out(session(1), 1).await);
        drop(node.node.session_catalog.check_out(session(6), 2).await);
        let table = Arc::new(FakeTable {
            rows: vec![session(1), session(7)],
            ..Default::default()
        });
        node.node
            .session_catalog
            .register_transaction_reaper(table.clone());
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(reap(&node).await.unwrap(), 1);
        assert_eq!(node.node.session_catalog.size(), 1);
        assert_eq!(*table.removed.lock().unwrap(), vec![session(7)]);
        let status = node.node.sessions.server_status(0);
        assert_eq!(status.get_i32("transactionReaperJobCount").unwrap(), 1);
        assert_eq!(
            status
                .get_i32("lastTransactionReaperJobEntriesCleanedUp")
                .unwrap(),
            1
        );
    }
}
