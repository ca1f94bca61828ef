//! The cluster's DDL locks, kept by the config server: a DDL on a collection holds its database
//! shared and the collection exclusively, a DDL on a database holds the database exclusively, so
//! conflicting DDL waits (woken when the holder releases, LockBusy after a timeout) and the rest
//! runs side by side. Every grant carries a fencing term; exclusive grants are persisted in
//! `config.locks` (MongoDB's distributed lock documents), and a holder outside the config server
//! keeps its grants alive by pinging (`config.lockpings`): once its lease lapses, a waiter takes
//! the lock over and the old holder's term stops being accepted by fenced metadata writes.

use super::store::{ConfigStore, ConfigWrite};
use crate::datanode::storage::Storage;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{DateTime, doc, oid::ObjectId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The process name the config server holds its own locks under. Its locks never lapse while
/// it runs, and a restarted config server releases them all (its coordinators, recovered from
/// their documents, take them again).
pub const CONFIG_SERVER_PROCESS: &str = "ConfigServer";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockMode {
    Shared,
    Exclusive,
}

/// What one DDL operation locks, all at once (no lock is held while waiting for another, so
/// DDL operations cannot deadlock each other).
#[derive(Clone, Debug, PartialEq)]
pub struct LockScope {
    resources: Vec<(String, LockMode)>,
}

impl LockScope {
    /// A database DDL (dropDatabase, movePrimary, creating the database entry).
    pub fn database(db: &str) -> LockScope {
        LockScope {
            resources: vec![(db.to_string(), LockMode::Exclusive)],
        }
    }

    /// A DDL on collections of one database (rename names two): the database shared, each
    /// collection exclusively.
    pub fn collections(namespaces: &[&str]) -> Result<LockScope> {
        let mut resources: Vec<(String, LockMode)> = Vec::new();
        for ns in namespaces {
            let (db, _) = crate::catalog::split_namespace(ns)?;
            for resource in [
                (db.to_string(), LockMode::Shared),
                (ns.to_string(), LockMode::Exclusive),
            ] {
                if !resources.contains(&resource) {
                    resources.push(resource);
                }
            }
        }
        Ok(LockScope { resources })
    }

    /// The scope of a lock request naming a database (`db`) or collections (`db.coll`).
    pub fn for_names(names: &[&str]) -> Result<LockScope> {
        match names {
            [single] if !single.contains('.') => {
                crate::catalog::validate_db_name(single)?;
                Ok(LockScope::database(single))
            }
            _ => LockScope::collections(names),
        }
    }

    /// The most specific resource, named in messages and in `config.locks`.
    fn main_resource(&self) -> &str {
        self.resources
            .iter()
            .find(|(_, mode)| *mode == LockMode::Exclusive)
            .map(|(r, _)| r.as_str())
            .unwrap_or_default()
    }
}

/// Who asks for a lock and why.
#[derive(Clone, Debug)]
pub struct Holder {
    /// The holding process (`CONFIG_SERVER_PROCESS`, or a shard's `name:host:start:random`).
    pub process: String,
    pub reason: String,
}

impl Holder {
    pub fn config_server(reason: impl Into<String>) -> Holder {
        Holder {
            process: CONFIG_SERVER_PROCESS.to_string(),
            reason: reason.into(),
        }
    }
}

#[derive(Clone, Debug)]
struct Grant {
    term: i64,
    mode: LockMode,
    process: String,
    reason: String,
}

#[derive(Default)]
struct Table {
    grants: HashMap<String, Vec<Grant>>,
    /// The last ping of each remote holding process.
    pings: HashMap<String, Instant>,
    next_term: i64,
}

/// Why a scope cannot be granted yet.
struct Blocked {
    reason: String,
    /// When the first blocking grant's lease lapses (only remote holders have leases).
    lapses_at: Option<Instant>,
}

impl Table {
    fn lapses_at(&self, grant: &Grant, lease: Duration) -> Option<Instant> {
        (grant.process != CONFIG_SERVER_PROCESS).then(|| {
            self.pings
                .get(&grant.process)
                .map_or_else(Instant::now, |ping| *ping + lease)
        })
    }

    /// Grants the scope if nothing conflicting is held, taking over conflicting grants whose
    /// lease lapsed; returns the new term and the terms taken over.
    fn try_grant(
        &mut self,
        scope: &LockScope,
        holder: &Holder,
        lease: Duration,
    ) -> std::result::Result<(i64, Vec<Grant>), Blocked> {
        let now = Instant::now();
        let mut lapsed = Vec::new();
        let mut blocked: Option<Blocked> = None;
        for (resource, mode) in &scope.resources {
            for grant in self.grants.get(resource).into_iter().flatten() {
                if *mode == LockMode::Shared && grant.mode == LockMode::Shared {
                    continue;
                }
                match self.lapses_at(grant, lease) {
                    Some(at) if at <= now => lapsed.push(grant.term),
                    lapses_at => {
                        let earlier = match (&blocked, lapses_at) {
                            (None, _) => true,
                            (Some(b), Some(at)) => b.lapses_at.is_none_or(|t| at < t),
                            (Some(_), None) => false,
                        };
                        if earlier {
                            blocked = Some(Blocked {
                                reason: grant.reason.clone(),
                                lapses_at,
                            });
                        }
                    }
                }
            }
        }
        if let Some(blocked) = blocked {
            return Err(blocked);
        }
        let taken_over = lapsed
            .iter()
            .flat_map(|term| self.remove(*term))
            .collect::<Vec<_>>();
        let term = self.next_term;
        self.next_term += 1;
        for (resource, mode) in &scope.resources {
            self.grants
                .entry(resource.clone())
                .or_default()
                .push(Grant {
                    term,
                    mode: *mode,
                    process: holder.process.clone(),
                    reason: holder.reason.clone(),
                });
        }
        if holder.process != CONFIG_SERVER_PROCESS {
            self.pings.insert(holder.process.clone(), now);
        }
        Ok((term, taken_over))
    }

    /// Removes every grant of `term`; returns them with their resource in `reason`'s place.
    fn remove(&mut self, term: i64) -> Vec<Grant> {
        let mut removed = Vec::new();
        self.grants.retain(|resource, grants| {
            grants.retain(|g| {
                if g.term == term {
                    removed.push(Grant {
                        reason: resource.clone(),
                        ..g.clone()
                    });
                    false
                } else {
                    true
                }
            });
            !grants.is_empty()
        });
        removed
    }

    fn holds(&self, resource: &str, term: i64) -> bool {
        self.grants
            .get(resource)
            .is_some_and(|grants| grants.iter().any(|g| g.term == term))
    }
}

/// The DDL lock table of the config server.
pub struct DdlLocks {
    storage: Arc<Storage>,
    table: Mutex<Table>,
    /// Woken whenever grants are released, so waiters check again.
    released: Notify,
    /// Orders the persisted lock documents with the table, and fenced writes with takeovers.
    persist: tokio::sync::Mutex<()>,
    lease: Duration,
}

impl DdlLocks {
    /// Loads the lock table from `config.locks`: the config server's own locks (held by the
    /// coordinators of its previous run) are released; locks of other processes are kept, with
    /// a fresh lease (they could not ping while this server was down).
    pub async fn open(storage: Arc<Storage>, lease: Duration) -> Result<Arc<DdlLocks>> {
        let store = ConfigStore::new(&storage);
        let mut table = Table {
            next_term: 1,
            ..Table::default()
        };
        let mut released = Vec::new();
        for lock in store.find("locks", &doc! {}).await? {
            let term = lock.get_i64("term").unwrap_or(0);
            table.next_term = table.next_term.max(term + 1);
            let (Ok(resource), Ok(2), Ok(process)) = (
                lock.get_str("_id"),
                lock.get_i32("state"),
                lock.get_str("process"),
            ) else {
                continue;
            };
            if process == CONFIG_SERVER_PROCESS {
                let mut free = lock.clone();
                free.insert("state", 0);
                released.push(ConfigWrite::Upsert("locks", free));
                continue;
            }
            let reason = lock.get_str("why").unwrap_or_default().to_string();
            let mut scope = LockScope::for_names(&[resource])?.resources;
            scope.retain(|(r, mode)| r == resource || *mode == LockMode::Shared);
            for (r, mode) in scope {
                let grants = table.grants.entry(r).or_default();
                if !grants.iter().any(|g| g.term == term) {
                    grants.push(Grant {
                        term,
                        mode,
                        process: process.to_string(),
                        reason: reason.clone(),
                    });
                }
            }
            table.pings.insert(process.to_string(), Instant::now());
        }
        if !released.is_empty() {
            tracing::info!(
                locks = released.len(),
                "released the DDL locks of the config server's previous run"
            );
            store.write_batch(&released).await?;
        }
        Ok(Arc::new(DdlLocks {
            storage,
            table: Mutex::new(table),
            released: Notify::new(),
            persist: tokio::sync::Mutex::new(()),
            lease,
        }))
    }

    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// Waits up to `timeout` for the scope; returns the grant's fencing term.
    pub async fn acquire(
        &self,
        scope: &LockScope,
        holder: &Holder,
        timeout: Duration,
    ) -> Result<i64> {
        let deadline = Instant::now() + timeout;
        loop {
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            let wait_until = {
                let _persist = self.persist.lock().await;
                let attempt = self
                    .table
                    .lock()
                    .expect("poisoned")
                    .try_grant(scope, holder, self.lease);
                match attempt {
                    Ok((term, taken_over)) => {
                        self.persist_grant(scope, holder, term, &taken_over).await?;
                        return Ok(term);
                    }
                    Err(blocked) if Instant::now() >= deadline => {
                        return Err(MongoError::new(
                            ErrorCode::LockBusy,
                            format!(
                                "Failed to acquire DDL lock for namespace '{}' after {}ms that is currently locked with reason '{}'",
                                scope.main_resource(),
                                timeout.as_millis(),
                                blocked.reason
                            ),
                        ));
                    }
                    Err(blocked) => blocked.lapses_at.map_or(deadline, |at| at.min(deadline)),
                }
            };
            tokio::select! {
                _ = released => {}
                _ = tokio::time::sleep_until(wait_until) => {}
            }
        }
    }

    async fn persist_grant(
        &self,
        scope: &LockScope,
        holder: &Holder,
        term: i64,
        taken_over: &[Grant],
    ) -> Result<()> {
        for old in taken_over {
            tracing::warn!(
                resource = %old.reason,
                process = %old.process,
                term = old.term,
                "took over a DDL lock whose holder stopped pinging"
            );
        }
        let store = ConfigStore::new(&self.storage);
        let result = async {
            // The lapsed holder's documents first: the new grant's own overwrite them.
            let mut writes = freed_documents(&store, taken_over).await?;
            writes.extend(
                scope
                    .resources
                    .iter()
                    .filter(|(_, mode)| *mode == LockMode::Exclusive)
                    .map(|(resource, _)| {
                        ConfigWrite::Upsert(
                            "locks",
                            doc! {
                                "_id": resource,
                                "state": 2,
                                "process": &holder.process,
                                "ts": ObjectId::new(),
                                "term": term,
                                "when": DateTime::now(),
                                "who": &holder.process,
                                "why": &holder.reason,
                            },
                        )
                    }),
            );
            store.write_batch(&writes).await
        }
        .await;
        if result.is_err() {
            // Not persisted, not granted.
            self.table.lock().expect("poisoned").remove(term);
            self.released.notify_waiters();
        }
        result
    }

    /// Releases every grant of `term`; false when it holds nothing (released, or taken over).
    pub async fn release(&self, term: i64) -> Result<bool> {
        let _persist = self.persist.lock().await;
        let removed = self.table.lock().expect("poisoned").remove(term);
        let store = ConfigStore::new(&self.storage);
        let persisted = match freed_documents(&store, &removed).await {
            Ok(writes) => store.write_batch(&writes).await,
            Err(e) => Err(e),
        };
        self.released.notify_waiters();
        persisted?;
        Ok(!removed.is_empty())
    }

    /// Releases the grants of every earlier run of `shard` (processes `shard:...` other than
    /// `current`): a shard that starts again proves the previous run is gone.
    pub async fn release_previous(&self, shard: &str, current: &str) -> Result<()> {
        let prefix = format!("{shard}:");
        let terms: std::collections::BTreeSet<i64> = {
            let table = self.table.lock().expect("poisoned");
            table
                .grants
                .values()
                .flatten()
                .filter(|g| g.process.starts_with(&prefix) && g.process != current)
                .map(|g| g.term)
                .collect()
        };
        for term in terms {
            tracing::info!(shard, term, "released a DDL lock of a shard's previous run");
            self.release(term).await?;
        }
        Ok(())
    }

    /// Keeps the grants of a remote process alive.
    pub async fn ping(&self, process: &str) -> Result<()> {
        self.table
            .lock()
            .expect("poisoned")
            .pings
            .insert(process.to_string(), Instant::now());
        ConfigStore::new(&self.storage)
            .upsert("lockpings", &doc! {"_id": process, "ping": DateTime::now()})
            .await
    }

    /// Admits a metadata write on behalf of the holder of `term`: refused unless that grant
    /// still holds `resource` (a holder whose lease lapsed and was taken over is fenced off).
    /// Takeovers wait until the returned guard drops, so the check stays true while the
    /// caller writes.
    pub async fn fence(
        &self,
        resource: &str,
        term: i64,
    ) -> Result<tokio::sync::MutexGuard<'_, ()>> {
        let persist = self.persist.lock().await;
        if !self.table.lock().expect("poisoned").holds(resource, term) {
            return Err(MongoError::new(
                ErrorCode::LockStateChangeFailed,
                format!(
                    "the DDL lock on {resource} with term {term} is no longer held: its lease lapsed and another operation took it over"
                ),
            ));
        }
        Ok(persist)
    }

    /// The grants held, for `currentOp`-like reporting and tests: `(resource, term, process)`.
    pub fn held(&self) -> Vec<(String, i64, String)> {
        let table = self.table.lock().expect("poisoned");
        let mut held: Vec<_> = table
            .grants
            .iter()
            .flat_map(|(r, grants)| {
                grants
                    .iter()
                    .map(|g| (r.clone(), g.term, g.process.clone()))
            })
            .collect();
        held.sort();
        held
    }
}

/// The `config.locks` documents of removed grants (their resource in `reason`), marked free
/// where they still name the removed grant's term.
async fn freed_documents(store: &ConfigStore<'_>, removed: &[Grant]) -> Result<Vec<ConfigWrite>> {
    let mut writes = Vec::new();
    for grant in removed.iter().filter(|g| g.mode == LockMode::Exclusive) {
        if let Some(mut lock) = store
            .find_one("locks", &doc! {"_id": &grant.reason})
            .await?
        {
            if lock.get_i64("term") == Ok(grant.term) {
                lock.insert("state", 0);
                writes.push(ConfigWrite::Upsert("locks", lock));
            }
        }
    }
    Ok(writes)
}

/// A lock the config server holds for one of its coordinators: released with
/// [`release`](Self::release) before the DDL answers, or in the background when dropped.
pub struct LocalDdlLock {
    locks: Arc<DdlLocks>,
    term: i64,
    released: bool,
}

impl LocalDdlLock {
    pub async fn acquire(
        locks: &Arc<DdlLocks>,
        scope: &LockScope,
        reason: &str,
        timeout: Duration,
    ) -> Result<LocalDdlLock> {
        let term = locks
            .acquire(scope, &Holder::config_server(reason), timeout)
            .await?;
        Ok(LocalDdlLock {
            locks: Arc::clone(locks),
            term,
            released: false,
        })
    }

    pub fn term(&self) -> i64 {
        self.term
    }

    pub async fn release(mut self) -> Result<bool> {
        self.released = true;
        self.locks.release(self.term).await
    }
}

impl Drop for LocalDdlLock {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let locks = Arc::clone(&self.locks);
        let term = self.term;
        // Releasing writes config.locks, which is async; the grant stays in the table until
        // then, so nothing can slip in between.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = locks.release(term).await {
                    tracing::warn!(term, error = %e, "could not release a DDL lock");
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn open(lease: Duration) -> (tempfile::TempDir, Arc<Storage>, Arc<DdlLocks>) {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
        let locks = DdlLocks::open(Arc::clone(&storage), lease).await.unwrap();
        (dir, storage, locks)
    }

    fn remote(process: &str) -> Holder {
        Holder {
            process: process.to_string(),
            reason: "create".to_string(),
        }
    }

    const LONG: Duration = Duration::from_secs(60);

    #[tokio::test]
    async fn collections_of_one_database_in_parallel_the_database_alone() {
        let (_dir, _storage, locks) = open(LONG).await;
        let a = LockScope::collections(&["db.a"]).unwrap();
        let b = LockScope::collections(&["db.b"]).unwrap();
        let ta = locks
            .acquire(&a, &Holder::config_server("drop"), LONG)
            .await
            .unwrap();
        let tb = locks
            .acquire(&b, &Holder::config_server("drop"), Duration::ZERO)
            .await
            .unwrap();
        // The same collection, and the whole database, wait; the timeout is LockBusy.
        let busy = locks
            .acquire(
                &a,
                &Holder::config_server("rename"),
                Duration::from_millis(20),
            )
            .await
            .unwrap_err();
        assert_eq!(busy.code(), ErrorCode::LockBusy);
        assert!(busy.message().contains("'db.a'") && busy.message().contains("'drop'"));
        let database = LockScope::database("db");
        let waiter = {
            let locks = Arc::clone(&locks);
            tokio::spawn(async move {
                locks
                    .acquire(&database, &Holder::config_server("dropDatabase"), LONG)
                    .await
            })
        };
        locks.release(ta).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "db.b still holds the database");
        locks.release(tb).await.unwrap();
        let td = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken by the release")
            .unwrap()
            .unwrap();
        assert!(td > tb, "terms increase");
    }

    #[tokio::test]
    async fn a_lapsed_lease_is_taken_over_and_fenced_off() {
        // A lease of 1 s and pings at 0.6 of it: the margins outlast a loaded machine's delays
        // (with 100 ms, 40 ms of scheduling delay between the ping and the check lost the lock).
        let (_dir, _storage, locks) = open(Duration::from_millis(1000)).await;
        let scope = LockScope::collections(&["db.c"]).unwrap();
        let old = locks
            .acquire(&scope, &remote("shard0:a"), LONG)
            .await
            .unwrap();
        // Pinging keeps it past its first lease.
        tokio::time::sleep(Duration::from_millis(600)).await;
        locks.ping("shard0:a").await.unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(
            locks
                .acquire(&scope, &remote("shard1:b"), Duration::ZERO)
                .await
                .is_err()
        );
        // Silence lets another holder in once the lease lapses, without polling.
        let started = Instant::now();
        let new = locks
            .acquire(&scope, &remote("shard1:b"), LONG)
            .await
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(5));
        let refused = locks.fence("db.c", old).await.unwrap_err();
        assert_eq!(refused.code(), ErrorCode::LockStateChangeFailed);
        drop(locks.fence("db.c", new).await.unwrap());
        assert!(
            !locks.release(old).await.unwrap(),
            "the old term holds nothing"
        );
        assert!(locks.release(new).await.unwrap());
    }

    #[tokio::test]
    async fn a_restart_releases_the_config_servers_locks_and_keeps_remote_ones() {
        let (_dir, storage, locks) = open(LONG).await;
        let mine = LockScope::collections(&["db.mine"]).unwrap();
        let theirs = LockScope::collections(&["db.theirs"]).unwrap();
        let t1 = locks
            .acquire(&mine, &Holder::config_server("drop"), LONG)
            .await
            .unwrap();
        let t2 = locks
            .acquire(&theirs, &remote("shard0:a"), LONG)
            .await
            .unwrap();
        let store = ConfigStore::new(&storage);
        let persisted = store
            .find_one("locks", &doc! {"_id": "db.mine"})
            .await
            .unwrap()
            .unwrap();
        assert_eq!(persisted.get_i32("state"), Ok(2));
        assert_eq!(persisted.get_i64("term"), Ok(t1));
        drop(locks);

        let reopened = DdlLocks::open(Arc::clone(&storage), LONG).await.unwrap();
        assert_eq!(
            reopened.held(),
            vec![
                ("db".to_string(), t2, "shard0:a".to_string()),
                ("db.theirs".to_string(), t2, "shard0:a".to_string()),
            ]
        );
        let freed = store
            .find_one("locks", &doc! {"_id": "db.mine"})
            .await
            .unwrap()
            .unwrap();
        assert_eq!(freed.get_i32("state"), Ok(0));
        let t3 = reopened
            .acquire(&mine, &Holder::config_server("drop"), Duration::ZERO)
            .await
            .unwrap();
        assert!(t3 > t2, "terms keep increasing across restarts");
        drop(reopened.fence("db.theirs", t2).await.unwrap());
        // That holder restarts: its new run releases what the old one held.
        reopened
            .release_previous("shard0", "shard0:b")
            .await
            .unwrap();
        assert!(reopened.fence("db.theirs", t2).await.is_err());
        assert!(
            reopened
                .held()
                .iter()
                .all(|(_, _, p)| p == CONFIG_SERVER_PROCESS)
        );
    }
}
