//! Critical sections: while this shard changes where a database's data lives (the commit of
//! `shardCollection`, `movePrimary`), the requests routers version for that database wait, and
//! the ones already running finish first. Such a section is held by the coordinating command
//! on this shard and ends with it (or with the process): it is never left behind by a crash.
//!
//! A DDL that spans several commands from the config server (renaming a sharded collection)
//! takes *recoverable* sections instead: per collection, persisted in
//! `config.collection_critical_sections` as MongoDB does, so a shard restarted in the middle
//! still blocks those collections until the coordinator releases them.

use super::ShardState;
use crate::command::ShardingState;
use crate::datanode::storage::Storage;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, doc};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock, watch};

/// Where recoverable sections are persisted (on the shard's own `config` database).
const SECTIONS_DB: &str = "config";
const SECTIONS: &str = "collection_critical_sections";

/// How long a coordinator waits for the database's running requests to finish before it gives
/// up with LockBusy (MongoDB's DDL lock timeout is of the same order).
const ENTER_TIMEOUT: Duration = Duration::from_secs(30);

/// One reader-writer lock per database and one per collection: versioned requests share their
/// database's and their collections', a database's critical section holds the database's
/// alone, a recoverable section its collections' while it is entered — so entering one waits
/// for the requests on those collections only, not for a long query on another collection of
/// the database (nor does it make the requests queued behind it wait for that query). Tokio's
/// lock is fair, so requests arriving after a section asked for it queue behind the section
/// instead of starving it. Recoverable sections are a set of collections the admitted
/// requests must not touch.
pub(super) struct CriticalSections {
    databases: Mutex<HashMap<String, Arc<RwLock<()>>>>,
    collection_locks: Mutex<HashMap<String, Arc<RwLock<()>>>>,
    /// Collections in a recoverable section, with the reason it was entered for.
    collections: Mutex<HashMap<String, Held>>,
    /// Bumped at every release: requests waiting for a collection look again.
    released: watch::Sender<u64>,
}

impl Default for CriticalSections {
    fn default() -> Self {
        CriticalSections {
            databases: Mutex::default(),
            collection_locks: Mutex::default(),
            collections: Mutex::default(),
            released: watch::Sender::new(0),
        }
    }
}

/// A collection's recoverable section: why it was entered, and whether reads wait too (a
/// migration's donor blocks writes first, then reads for its commit).
#[derive(Clone)]
struct Held {
    reason: Document,
    blocks_reads: bool,
}

/// A critical section held on one database; dropping it lets the waiting requests run.
pub(super) struct CriticalSection {
    _held: OwnedRwLockWriteGuard<()>,
}

/// A versioned request's admission: its share of its database's lock and of its collections'.
pub(super) struct Admitted {
    _database: OwnedRwLockReadGuard<()>,
    _collections: Vec<OwnedRwLockReadGuard<()>>,
}

impl CriticalSections {
    fn lock_of(&self, db: &str) -> Arc<RwLock<()>> {
        let mut databases = self.databases.lock().expect("poisoned");
        Arc::clone(databases.entry(db.to_string()).or_default())
    }

    /// The locks of `namespaces`, each once, in one order for every caller: requests and
    /// sections taking several never wait for each other in a cycle.
    fn collection_locks_of<S: AsRef<str>>(&self, namespaces: &[S]) -> Vec<Arc<RwLock<()>>> {
        let mut names: Vec<&str> = namespaces.iter().map(AsRef::as_ref).collect();
        names.sort_unstable();
        names.dedup();
        let mut locks = self.collection_locks.lock().expect("poisoned");
        names
            .into_iter()
            .map(|ns| Arc::clone(locks.entry(ns.to_string()).or_default()))
            .collect()
    }

    /// Admits one versioned request on `db` about `namespaces`: waits while a critical section
    /// holds the database or one of those collections (a section blocking only writes lets a
    /// request that only reads through).
    pub async fn admit(&self, db: &str, namespaces: &[String], reads_only: bool) -> Admitted {
        loop {
            let mut released = self.released.subscribe();
            let database = self.lock_of(db).read_owned().await;
            let mut collections = Vec::new();
            for lock in self.collection_locks_of(namespaces) {
                collections.push(lock.read_owned().await);
            }
            let admitted = Admitted {
                _database: database,
                _collections: collections,
            };
            if !self.blocks(namespaces, reads_only) {
                return admitted;
            }
            drop(admitted);
            // The sender lives as long as `self`: this only ends at a release.
            let _ = released.changed().await;
        }
    }

    fn blocks(&self, namespaces: &[String], reads_only: bool) -> bool {
        let held = self.collections.lock().expect("poisoned");
        namespaces.iter().any(|ns| {
            held.get(ns)
                .is_some_and(|section| !reads_only || section.blocks_reads)
        })
    }

    #[cfg(test)]
    fn blocks_any(&self, namespaces: &[String]) -> bool {
        self.blocks(namespaces, false)
    }

    /// Loads the recoverable sections a previous run of this shard left held.
    pub async fn load(&self, storage: &Storage) -> Result<()> {
        let mut held = self.collections.lock().expect("poisoned").clone();
        for section in storage.documents(SECTIONS_DB, SECTIONS).await? {
            if let (Ok(ns), Ok(reason)) = (section.get_str("_id"), section.get_document("reason")) {
                tracing::info!(ns = %ns, reason = %reason, "a recoverable critical section is still held");
                let blocks_reads = section.get_bool("blockReads").unwrap_or(true);
                held.insert(
                    ns.to_string(),
                    Held {
                        reason: reason.clone(),
                        blocks_reads,
                    },
                );
            }
        }
        *self.collections.lock().expect("poisoned") = held;
        Ok(())
    }

    /// Enters a recoverable section on `namespaces` (collections of `db`) for `reason`, once
    /// the requests running on the database have finished; persisted before this returns.
    /// Entering again for the same reason changes nothing (the coordinator resends its steps).
    pub async fn enter_recoverable(
        &self,
        storage: &Storage,
        db: &str,
        namespaces: &[&str],
        reason: &Document,
    ) -> Result<()> {
        self.enter_recoverable_blocking(storage, db, namespaces, reason, true)
            .await
    }

    /// Enters a recoverable section (as [`enter_recoverable`](Self::enter_recoverable)) that
    /// blocks reads too when `blocks_reads`; entered again with reads blocked, a section
    /// that blocked only writes blocks reads from then on, once the running reads finished.
    pub async fn enter_recoverable_blocking(
        &self,
        storage: &Storage,
        db: &str,
        namespaces: &[&str],
        reason: &Document,
        blocks_reads: bool,
    ) -> Result<()> {
        let missing = self.not_yet_held(namespaces, reason, blocks_reads)?;
        if missing.is_empty() {
            return Ok(());
        }
        // The requests running on these collections finish first; the others run on.
        let mut drained = Vec::new();
        for lock in self.collection_locks_of(&missing) {
            match tokio::time::timeout(ENTER_TIMEOUT, lock.write_owned()).await {
                Ok(held) => drained.push(held),
                Err(_) => {
                    return Err(MongoError::new(
                        ErrorCode::LockBusy,
                        format!(
                            "could not enter the critical section of {} for {reason}: requests kept running for {}s",
                            missing.join(", "),
                            ENTER_TIMEOUT.as_secs()
                        ),
                    ));
                }
            }
        }
        tracing::info!(db = %db, namespaces = ?missing, reason = %reason, "entering a recoverable critical section");
        for ns in missing {
            let id = Bson::String(ns.to_string());
            let section = doc! {"_id": ns, "reason": reason.clone(), "blockReads": blocks_reads};
            storage
                .put_document(SECTIONS_DB, SECTIONS, &id, Some(&section), true)
                .await?;
            self.collections.lock().expect("poisoned").insert(
                ns.to_string(),
                Held {
                    reason: reason.clone(),
                    blocks_reads,
                },
            );
        }
        Ok(())
    }

    /// Which of `namespaces` are not in a section yet; ConflictingOperationInProgress when one
    /// is, for another reason.
    /// Which of `namespaces` are not in a section yet (or not blocking reads yet, when it
    /// should); ConflictingOperationInProgress when one is, for another reason.
    fn not_yet_held<'a>(
        &self,
        namespaces: &[&'a str],
        reason: &Document,
        blocks_reads: bool,
    ) -> Result<Vec<&'a str>> {
        let held = self.collections.lock().expect("poisoned");
        let mut missing = Vec::new();
        for ns in namespaces {
            match held.get(*ns) {
                Some(other) if other.reason != *reason => {
                    return Err(MongoError::new(
                        ErrorCode::ConflictingOperationInProgress,
                        format!("{ns} is in a critical section for {}", other.reason),
                    ));
                }
                Some(section) if blocks_reads && !section.blocks_reads => missing.push(*ns),
                Some(_) => {}
                None => missing.push(*ns),
            }
        }
        Ok(missing)
    }

    /// Leaves the recoverable sections entered for `reason` on `namespaces`; the requests
    /// waiting for them run. Sections not held (already released) are skipped.
    pub async fn release_recoverable(
        &self,
        storage: &Storage,
        namespaces: &[&str],
        reason: &Document,
    ) -> Result<()> {
        for ns in namespaces {
            let ours = self
                .collections
                .lock()
                .expect("poisoned")
                .get(*ns)
                .is_some_and(|held| held.reason == *reason);
            if !ours {
                continue;
            }
            let id = Bson::String(ns.to_string());
            storage
                .put_document(SECTIONS_DB, SECTIONS, &id, None, true)
                .await?;
            self.collections.lock().expect("poisoned").remove(*ns);
        }
        self.released.send_modify(|n| *n += 1);
        Ok(())
    }

    /// Enters `db`'s critical section once its running versioned requests have finished.
    pub async fn enter(&self, db: &str, reason: &str) -> Result<CriticalSection> {
        let lock = self.lock_of(db);
        match tokio::time::timeout(ENTER_TIMEOUT, lock.write_owned()).await {
            Ok(held) => {
                tracing::info!(db = %db, reason = %reason, "entered the critical section");
                Ok(CriticalSection { _held: held })
            }
            Err(_) => Err(MongoError::new(
                ErrorCode::LockBusy,
                format!(
                    "could not enter the critical section of database {db} for {reason}: requests kept running for {}s",
                    ENTER_TIMEOUT.as_secs()
                ),
            )),
        }
    }
}

impl ShardState {
    /// Admits a versioned request: it waits while a critical section holds its database or a
    /// recoverable one holds one of its collections. The coordinators of placement changes
    /// (`_shardsvr...` commands) are not admitted this way: they enter the section themselves.
    /// Dropped while it waits (the request's `maxTimeMS` expired, `killOp`), it keeps no place
    /// in the section's queue.
    pub(super) async fn admit(&self, sharding: &ShardingState, reads_only: bool) -> Admitted {
        let db = sharding.database().unwrap_or_default();
        let namespaces: Vec<String> = sharding.namespaces().iter().map(|n| n.ns.clone()).collect();
        self.critical_sections
            .admit(db, &namespaces, reads_only)
            .await
    }

    /// Enters `db`'s critical section (see [`CriticalSections::enter`]).
    pub(super) async fn enter_critical_section(
        &self,
        db: &str,
        reason: &str,
    ) -> Result<CriticalSection> {
        self.critical_sections.enter(db, reason).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_section_waits_for_running_requests_and_blocks_new_ones() {
        let sections = Arc::new(CriticalSections::default());
        let running = sections.admit("db", &[], false).await;
        let entering = {
            let sections = Arc::clone(&sections);
            tokio::spawn(async move { sections.enter("db", "test").await.map(|_| ()) })
        };
        tokio::task::yield_now().await;
        assert!(!entering.is_finished(), "the section waits for the request");
        drop(running);
        entering.await.unwrap().unwrap();

        let held = sections.enter("db", "test").await.unwrap();
        let other_db = sections.admit("other", &[], false).await;
        drop(other_db);
        let blocked = {
            let sections = Arc::clone(&sections);
            tokio::spawn(async move {
                drop(sections.admit("db", &[], false).await);
            })
        };
        tokio::task::yield_now().await;
        assert!(
            !blocked.is_finished(),
            "a new request waits for the section"
        );
        drop(held);
        blocked.await.unwrap();
    }

    #[tokio::test]
    async fn a_recoverable_section_blocks_its_collections_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
        let reason = doc! {"command": "rename", "from": "db.a", "to": "db.b"};
        let sections = Arc::new(CriticalSections::default());
        sections
            .enter_recoverable(&storage, "db", &["db.a", "db.b"], &reason)
            .await
            .unwrap();
        // Again for the same reason: nothing changes; for another: refused.
        sections
            .enter_recoverable(&storage, "db", &["db.a", "db.b"], &reason)
            .await
            .unwrap();
        let other = doc! {"command": "drop"};
        let refused = sections
            .enter_recoverable(&storage, "db", &["db.a"], &other)
            .await
            .unwrap_err();
        assert_eq!(refused.code(), ErrorCode::ConflictingOperationInProgress);

        // Another collection of the database is admitted; the blocked one waits.
        drop(sections.admit("db", &["db.c".to_string()], false).await);
        let restarted = Arc::new(CriticalSections::default());
        restarted.load(&storage).await.unwrap();
        for sections in [&sections, &restarted] {
            let blocked = {
                let sections = Arc::clone(sections);
                tokio::spawn(async move {
                    drop(sections.admit("db", &["db.a".to_string()], false).await);
                })
            };
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(!blocked.is_finished(), "a request on db.a waits");
            sections
                .release_recoverable(&storage, &["db.a", "db.b"], &reason)
                .await
                .unwrap();
            blocked.await.unwrap();
        }
        let again = CriticalSections::default();
        again.load(&storage).await.unwrap();
        assert!(!again.blocks_any(&["db.a".to_string(), "db.b".to_string()]));
    }

    #[tokio::test]
    async fn a_recoverable_section_waits_only_for_requests_on_its_collections() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
        let sections = Arc::new(CriticalSections::default());
        // A long request on another collection of the database does not hold the entry up.
        let elsewhere = sections.admit("db", &["db.other".to_string()], true).await;
        let reason = doc! {"command": "moveChunk"};
        sections
            .enter_recoverable_blocking(&storage, "db", &["db.c"], &reason, false)
            .await
            .unwrap();
        drop(elsewhere);
        // One on the collection does: the entry (reads blocked now) waits for it.
        let running = sections.admit("db", &["db.c".to_string()], true).await;
        let entering = {
            let (sections, storage) = (Arc::clone(&sections), storage.clone());
            let reason = reason.clone();
            tokio::spawn(async move {
                sections
                    .enter_recoverable_blocking(&storage, "db", &["db.c"], &reason, true)
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!entering.is_finished(), "the section waits for the read");
        drop(sections.admit("db", &["db.other".to_string()], false).await);
        drop(running);
        entering.await.unwrap().unwrap();
        sections
            .release_recoverable(&storage, &["db.c"], &reason)
            .await
            .unwrap();
    }

    /// A shard outside any cluster (no identity: a version check that gets past admission ends
    /// with ShardingStateNotInitialized) and a dispatcher in front of it.
    async fn shard() -> (
        tempfile::TempDir,
        Arc<ShardState>,
        Arc<crate::server::Dispatcher<ShardState>>,
    ) {
        use crate::server::logbuf::LogBuffer;
        use crate::server::{CmdLine, Node, Parameters, Role};
        let dir = tempfile::tempdir().unwrap();
        let node = Node::new(
            Role::Shard,
            CmdLine::default(),
            Parameters::new(),
            Arc::new(LogBuffer::default()),
        );
        let state = ShardState::open(node, dir.path(), crate::rpc::Connector::new())
            .await
            .unwrap();
        let dispatcher = Arc::new(crate::server::Dispatcher::new(Arc::clone(&state)));
        (dir, state, dispatcher)
    }

    /// A versioned `find` on `app.<coll>`, with `maxTimeMS` when given.
    fn versioned_find(coll: &str, max_time_ms: Option<i32>) -> crate::command::CommandRequest {
        let version = crate::catalog::DatabaseVersion::new(bson::Timestamp {
            time: 1,
            increment: 1,
        });
        let mut body = doc! {"find": coll, "databaseVersion": version.to_document()};
        if let Some(ms) = max_time_ms {
            body.insert("maxTimeMS", ms);
        }
        crate::command::CommandRequest::from_document("app", &body).unwrap()
    }

    async fn run(
        dispatcher: &crate::server::Dispatcher<ShardState>,
        request: crate::command::CommandRequest,
    ) -> Document {
        use crate::server::Service;
        let ctx = crate::server::RequestContext::internal();
        dispatcher
            .execute(&ctx, request)
            .await
            .to_document()
            .unwrap()
    }

    fn code(reply: &Document) -> i32 {
        reply.get_i32("code").unwrap_or_default()
    }

    #[tokio::test]
    async fn max_time_ms_bounds_the_wait_behind_a_critical_section() {
        let (_dir, state, dispatcher) = shard().await;
        let section = state.enter_critical_section("app", "test").await.unwrap();

        let started = std::time::Instant::now();
        let reply = run(&dispatcher, versioned_find("c", Some(200))).await;
        let waited = started.elapsed();
        assert_eq!(code(&reply), 50, "{reply}");
        assert_eq!(reply.get_str("codeName").unwrap(), "MaxTimeMSExpired");
        assert_eq!(
            reply.get_str("errmsg").unwrap(),
            "operation exceeded time limit"
        );
        assert!(
            waited >= Duration::from_millis(190) && waited < Duration::from_secs(2),
            "answered after {waited:?}"
        );
        // The request that gave up keeps no place: the section is entered again at once.
        drop(section);
        let again = tokio::time::timeout(
            Duration::from_secs(1),
            state.enter_critical_section("app", "again"),
        )
        .await
        .expect("nothing is left admitted or queued")
        .unwrap();

        // Without maxTimeMS the request waits for the section, then runs its version check.
        let waiting = tokio::spawn({
            let dispatcher = Arc::clone(&dispatcher);
            async move { run(&dispatcher, versioned_find("c", None)).await }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiting.is_finished(), "the request waits for the section");
        drop(again);
        let reply = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("admitted once the section ends")
            .unwrap();
        assert_eq!(
            reply.get_str("codeName").unwrap(),
            "ShardingStateNotInitialized",
            "{reply}"
        );
    }

    #[tokio::test]
    async fn max_time_ms_bounds_the_wait_for_a_recoverable_section() {
        let (_dir, state, dispatcher) = shard().await;
        let reason = doc! {"command": "rename", "from": "app.a", "to": "app.b"};
        state
            .critical_sections
            .enter_recoverable(&state.storage, "app", &["app.a", "app.b"], &reason)
            .await
            .unwrap();
        let started = std::time::Instant::now();
        let reply = run(&dispatcher, versioned_find("a", Some(200))).await;
        assert_eq!(code(&reply), 50, "{reply}");
        assert!(started.elapsed() < Duration::from_secs(2));
        // Another collection of the database is admitted.
        let reply = run(&dispatcher, versioned_find("c", Some(200))).await;
        assert_eq!(
            reply.get_str("codeName").unwrap(),
            "ShardingStateNotInitialized"
        );
        // A request without maxTimeMS waits for the release.
        let waiting = tokio::spawn({
            let dispatcher = Arc::clone(&dispatcher);
            async move { run(&dispatcher, versioned_find("b", None)).await }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiting.is_finished(), "the request waits for the release");
        state
            .critical_sections
            .release_recoverable(&state.storage, &["app.a", "app.b"], &reason)
            .await
            .unwrap();
        let reply = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("admitted once released")
            .unwrap();
        assert_eq!(
            reply.get_str("codeName").unwrap(),
            "ShardingStateNotInitialized"
        );
    }
}
