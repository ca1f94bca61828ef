//! One MongoDB database on one node: a SQLite file with a single writer connection (SQLite
//! allows one writer; serializing here avoids busy-waiting) and a pool of readers (WAL lets
//! them run beside the writer).

use super::catalog::{self, CollectionMeta, CollectionStats, IndexMeta, index_table_sql};
use super::doc_locks::{DocLocks, namespace_key};
use super::durability::Durability;
use super::index_build::{INDEX_BUILD_MEMORY_BYTES, IndexBuild, IndexBuildStats};
use super::readers::{Reader, Readers};
use super::sql_error;
use super::txn::RecordId;
use super::txn::{ReadTxn, WriteTxn};
use crate::datanode::index::IndexSpec;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::clock::LogicalClock;
use bson::Document;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{AssertSqlSafe, Connection, Executor, Row, SqliteConnection};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use uuid::Uuid;

/// The writer connection and what only the writer may touch.
pub(super) struct Writer {
    pub conn: SqliteConnection,
    /// A transaction was begun and not finished (its owner was dropped mid-way).
    pub in_txn: bool,
    pub next_ident: i64,
    /// Next record id per collection ident, allocated by the writer.
    pub next_rid: HashMap<i64, i64>,
    /// Index builds in progress: the writes they must know of.
    pub index_builds: Vec<IndexBuild>,
}

/// One database file.
pub struct DatabaseStore {
    name: String,
    path: PathBuf,
    pub(super) writer: tokio::sync::Mutex<Writer>,
    readers: Readers,
    /// Readers pinned to a multi-document transaction's snapshot, pooled apart so that open
    /// transactions never take the permits of ordinary reads.
    snapshots: Readers,
    /// The document locks of multi-document transactions (first writer wins).
    pub(super) locks: Arc<DocLocks>,
    /// This store's own `Arc` (set by `Storage`), for the transaction views that outlive a
    /// borrowed `&self`.
    self_ref: std::sync::OnceLock<std::sync::Weak<DatabaseStore>>,
    catalog: RwLock<BTreeMap<String, Arc<CollectionMeta>>>,
    pub(super) stats: std::sync::Mutex<BTreeMap<i64, CollectionStats>>,
    pub(super) durability: Durability,
    index_usage: super::IndexUsage,
    /// The node's clock: every write transaction takes its timestamp from it.
    pub(super) clock: Arc<LogicalClock>,
    /// The latest second recorded in `docgrid_clock`: a write in a later second records it.
    pub(super) clock_seconds: std::sync::atomic::AtomicU32,
    /// The before-images reads at a past cluster time need (`history`).
    pub(super) history: super::history::History,
    /// The chunk migrations watching writes here (`range_watch`).
    pub(super) range_watches: super::range_watch::RangeWatches,
}

/// Settings of every connection to a database file, the writer's and the readers': a 32 MiB
/// page cache, a 256 MiB mmap window, temporary tables in memory. The writer stays open for
/// the life of the process, and what it has mapped stays in its resident set.
pub(super) const CONNECTION_PRAGMAS: [(&str, &str); 3] = [
    ("cache_size", "-32768"),
    ("mmap_size", "268435456"),
    ("temp_store", "memory"),
];

/// The readers' mmap window: SQLite's largest (2 GiB). A page outside the window costs a
/// `read` system call and a copy into the connection's page cache; on a 10M-document
/// collection (1.5 GB) that made a 10-document range read 1.31× its cost at 10k documents,
/// against 1.16× with this window. A reader's mapping goes when it closes (idle 60 s).
pub(super) const READER_MMAP_SIZE: &str = "2147418112";

/// Transactions that may hold a snapshot of one database file at once; the next waits for one
/// to end.
const SNAPSHOT_READERS: usize = 64;

/// How long a connection waits for a lock another one holds.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Prepared statements each connection keeps.
pub(super) const STATEMENT_CACHE: usize = 256;

/// How a shard's readers open a database file: [`connect_options`] with the readers' mmap
/// window (what the benchmarks' raw-SQLite ceiling reads with).
pub fn reader_connect_options(path: &Path) -> SqliteConnectOptions {
    connect_options(path).pragma("mmap_size", READER_MMAP_SIZE)
}

/// How a shard opens a database file (also what the benchmarks' raw-SQLite ceiling uses).
pub fn connect_options(path: &Path) -> SqliteConnectOptions {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // WAL + NORMAL: a committed transaction survives a process crash (it is in the WAL in the
        // OS page cache); `j: true` writes additionally fsync the WAL (see durability).
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(BUSY_TIMEOUT)
        .statement_cache_capacity(STATEMENT_CACHE);
    CONNECTION_PRAGMAS
        .iter()
        .fold(options, |options, (name, value)| {
            options.pragma(*name, *value)
        })
}

/// Turns on SQLite's query planner stability guarantee on the writer's connection (the
/// readers set it through rusqlite). Since SQLite 3.51 a statement whose `LIMIT` is a bound
/// parameter is planned for the value bound, and rebinding that parameter expires the prepared
/// statement: every scan, each a `LIMIT ?` statement, was parsed and planned again on every
/// run (a `$near` spent most of its time there). With the guarantee the plan ignores bound
/// values, as before 3.51, and a cached statement is reused.
pub async fn stable_plans(conn: &mut SqliteConnection) -> Result<()> {
    use rusqlite::ffi;
    let mut handle = conn
        .lock_handle()
        .await
        .map_err(|e| sql_error("configuring the connection", e))?;
    let db = handle.as_raw_handle().as_ptr();
    // SAFETY: `db` is the open connection `handle` keeps locked for this call; the option
    // takes an int and an optional int pointer for the previous value (null: not wanted).
    let rc = unsafe {
        ffi::sqlite3_db_config(
            db,
            ffi::SQLITE_DBCONFIG_ENABLE_QPSG,
            1 as std::ffi::c_int,
            std::ptr::null_mut::<std::ffi::c_int>(),
        )
    };
    if rc != ffi::SQLITE_OK {
        return Err(MongoError::internal(format!(
            "storage error while configuring the connection: SQLite code {rc}"
        )));
    }
    Ok(())
}

impl DatabaseStore {
    pub(super) async fn open(
        name: &str,
        path: &Path,
        clock: Arc<LogicalClock>,
        history_window: Arc<std::sync::atomic::AtomicU32>,
    ) -> Result<DatabaseStore> {
        let existed = path.exists();
        let options = connect_options(path);
        let mut conn = SqliteConnection::connect_with(&options)
            .await
            .map_err(|e| sql_error(&format!("opening {}", path.display()), e))?;
        stable_plans(&mut conn).await?;
        conn.execute(catalog::SCHEMA)
            .await
            .map_err(|e| sql_error("creating the catalog", e))?;
        conn.execute(super::transactions::SCHEMA)
            .await
            .map_err(|e| sql_error("creating the transaction table", e))?;
        let loaded = catalog::load(&mut conn).await?;
        // A restarted node's writes must stay later than those it made before: its clock
        // starts past the last second a write of this file committed in, whatever the wall
        // clock says (MongoDB starts from its oplog's last entry).
        if loaded.clock_seconds > 0 {
            clock.advance(bson::Timestamp {
                time: loaded.clock_seconds + 1,
                increment: 0,
            });
        }
        let readers = Readers::new(path, 4, Duration::from_secs(60));
        let snapshots = Readers::new(path, SNAPSHOT_READERS, Duration::from_secs(60));
        // No history survives a restart: nothing before now can be read at its time. A file
        // created now has all its history: it was empty before.
        let opened_at = if existed {
            clock.now()
        } else {
            bson::Timestamp {
                time: 0,
                increment: 0,
            }
        };
        let history = super::history::History::new(opened_at, history_window);
        Ok(DatabaseStore {
            history,
            range_watches: Default::default(),
            name: name.to_string(),
            path: path.to_path_buf(),
            durability: Durability::new(path),
            index_usage: Default::default(),
            clock,
            clock_seconds: loaded.clock_seconds.into(),
            writer: tokio::sync::Mutex::new(Writer {
                conn,
                in_txn: false,
                next_ident: loaded.next_ident,
                next_rid: HashMap::new(),
                index_builds: Vec::new(),
            }),
            readers,
            snapshots,
            locks: Default::default(),
            self_ref: Default::default(),
            catalog: RwLock::new(
                loaded
                    .collections
                    .into_iter()
                    .map(|(k, v)| (k, Arc::new(v)))
                    .collect(),
            ),
            stats: std::sync::Mutex::new(loaded.stats),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn collections(&self) -> Vec<Arc<CollectionMeta>> {
        self.catalog
            .read()
            .expect("poisoned")
            .values()
            .cloned()
            .collect()
    }

    /// The collection's catalog entry; inside a transaction's scope, as the transaction sees
    /// it (indexes its writes made multikey are so).
    pub fn collection(&self, name: &str) -> Option<Arc<CollectionMeta>> {
        let committed = self.committed_collection(name);
        match super::StorageTransaction::current() {
            Some(txn) => committed
                .or_else(|| txn.created(&self.name, name))
                .map(|meta| txn.patch(&self.name, meta)),
            None => committed,
        }
    }

    /// The committed collection `name`, whatever transaction the task is in.
    pub(super) fn committed_collection(&self, name: &str) -> Option<Arc<CollectionMeta>> {
        self.catalog.read().expect("poisoned").get(name).cloned()
    }

    /// Makes a collection whose tables a committed write created visible.
    pub(super) fn add_to_catalog(&self, meta: Arc<CollectionMeta>) {
        self.stats
            .lock()
            .expect("poisoned")
            .entry(meta.ident)
            .or_default();
        self.catalog
            .write()
            .expect("poisoned")
            .insert(meta.name.clone(), meta);
    }

    /// A collection by its table ident (stable across renames).
    pub fn collection_by_ident(&self, ident: i64) -> Option<Arc<CollectionMeta>> {
        self.catalog
            .read()
            .expect("poisoned")
            .values()
            .find(|c| c.ident == ident)
            .cloned()
    }

    /// Replaces a collection's in-memory catalog entry by `change` applied to a copy of it.
    pub(super) fn update_collection(&self, ident: i64, change: impl FnOnce(&mut CollectionMeta)) {
        let mut catalog = self.catalog.write().expect("poisoned");
        if let Some(entry) = catalog.values_mut().find(|c| c.ident == ident) {
            let mut updated = (**entry).clone();
            change(&mut updated);
            *entry = Arc::new(updated);
        }
    }

    /// Records (with the commit that persists it) that an index became multikey, at `paths`
    /// for a wildcard index.
    pub(super) fn mark_multikey(&self, collection: i64, index: i64, paths: &BTreeSet<String>) {
        self.update_collection(collection, |c| {
            if let Some(i) = c.indexes.iter_mut().find(|i| i.ident == index) {
                i.add_multikey_paths(paths);
            }
        });
    }

    /// How often queries used this database's indexes.
    pub fn index_usage(&self) -> &super::IndexUsage {
        &self.index_usage
    }

    pub fn stats(&self, coll: &CollectionMeta) -> CollectionStats {
        self.stats
            .lock()
            .expect("poisoned")
            .get(&coll.ident)
            .copied()
            .unwrap_or_default()
    }

    /// Bytes the database occupies on disk (database file and write-ahead log).
    pub fn size_on_disk(&self) -> i64 {
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len() as i64).unwrap_or(0);
        size(&self.path) + size(&self.path.with_extension("sqlite-wal"))
    }

    /// Where this database's index builds spill sorted runs (the node's `_tmp`).
    pub(super) fn spill_dir(&self) -> PathBuf {
        self.path.with_file_name(super::SPILL_DIR)
    }

    /// A write transaction; waits for the writer.
    pub async fn write(&self) -> Result<WriteTxn<'_>> {
        WriteTxn::begin(self, self.writer.lock().await).await
    }

    /// A read-only view: on a pooled reader connection, or, inside a transaction's scope
    /// ([`StorageTransaction::scope`](super::StorageTransaction::scope)), the transaction's
    /// view of this database (its snapshot and its own writes).
    pub async fn read(&self) -> Result<ReadTxn> {
        if let Some(txn) = super::StorageTransaction::current() {
            return Ok(ReadTxn::transaction(txn.view(self).await?));
        }
        Ok(ReadTxn::new(
            self.readers.acquire().await?,
            self.locks.clone(),
        ))
    }

    /// What write commands write through: the transaction's view inside a transaction's
    /// scope, otherwise a write transaction (which waits for the writer).
    pub async fn writes(&self) -> Result<super::Writes<'_>> {
        if let Some(txn) = super::StorageTransaction::current() {
            return Ok(super::Writes::Transaction(txn.view(self).await?));
        }
        Ok(super::Writes::Direct(self.write().await?))
    }

    /// A reader of the latest committed state, whatever transaction the task is in.
    pub(super) async fn plain_reader(&self) -> Result<Reader> {
        self.readers.acquire().await
    }

    /// A reader for a transaction's snapshot (from the snapshot readers' own pool).
    pub(super) async fn snapshot_reader(&self) -> Result<Reader> {
        self.snapshots.acquire().await
    }

    /// Records the `Arc` this store lives in.
    pub(super) fn register(self: &Arc<Self>) {
        let _ = self.self_ref.set(Arc::downgrade(self));
    }

    /// The `Arc` this store lives in.
    pub(super) fn arc(&self) -> Result<Arc<DatabaseStore>> {
        self.self_ref
            .get()
            .and_then(std::sync::Weak::upgrade)
            .ok_or_else(|| MongoError::internal("a database store outside its storage"))
    }

    /// After a write failed with WriteConflict on a document a transaction holds: waits until
    /// a transaction releases its documents (briefly at most, and not at all when none holds
    /// any), so that the caller's retry does not spin.
    pub async fn wait_for_document_locks(&self) {
        self.locks.wait_for_release().await;
    }

    /// Creates a collection; `NamespaceExists` if it exists.
    pub async fn create_collection(
        &self,
        name: &str,
        options: Document,
    ) -> Result<Arc<CollectionMeta>> {
        self.create_collection_with_uuid(name, options, Uuid::new_v4())
            .await
    }

    /// Creates a collection under a given UUID: a sharded collection has one UUID on every
    /// shard holding its chunks.
    pub async fn create_collection_with_uuid(
        &self,
        name: &str,
        options: Document,
        uuid: Uuid,
    ) -> Result<Arc<CollectionMeta>> {
        // A transaction creating the name holds it until it ends, as MongoDB's holds the
        // collection's lock: this creation waits, then finds the transaction's collection or
        // none.
        let me = super::StorageTransaction::current().map_or(0, |t| t.id());
        let key = namespace_key(name);
        while self.locks.held_by_other(&key, me) {
            self.locks.wait_for_release().await;
        }
        let mut writer = self.writer.lock().await;
        if self.collection(name).is_some() {
            return Err(MongoError::new(
                ErrorCode::NamespaceExists,
                format!("Collection {}.{name} already exists.", self.name),
            ));
        }
        let ident = writer.next_ident;
        let meta = CollectionMeta::new(name, ident, uuid, options)?;
        let created = async {
            let mut txn = begin_catalog_txn(&mut writer).await?;
            catalog::create_collection_tables(&mut txn, &meta).await?;
            txn.commit().await
        };
        created
            .await
            .map_err(|e| sql_error("creating a collection", e))?;
        writer.next_ident = ident + 2;
        let meta = Arc::new(meta);
        self.add_to_catalog(meta.clone());
        Ok(meta)
    }

    /// Creates a collection as a client's command does: inside a multi-document transaction's
    /// scope the transaction creates it (its statements see it at once, others once it
    /// commits), otherwise at once.
    pub async fn create_collection_in_scope(
        &self,
        name: &str,
        options: Document,
    ) -> Result<Arc<CollectionMeta>> {
        match super::StorageTransaction::current() {
            Some(txn) => txn.create_collection(self, name, options).await,
            None => self.create_collection(name, options).await,
        }
    }

    /// The collection, created with default options when missing (implicit creation on write).
    pub async fn ensure_collection(&self, name: &str) -> Result<Arc<CollectionMeta>> {
        self.ensure(name, false).await
    }

    /// The collection a client's write goes to, created when missing as
    /// [`create_collection_in_scope`](Self::create_collection_in_scope) creates it.
    pub async fn ensure_collection_in_scope(&self, name: &str) -> Result<Arc<CollectionMeta>> {
        self.ensure(name, true).await
    }

    async fn ensure(&self, name: &str, in_scope: bool) -> Result<Arc<CollectionMeta>> {
        if let Some(meta) = self.collection(name) {
            return Ok(meta);
        }
        let created = if in_scope {
            self.create_collection_in_scope(name, Document::new()).await
        } else {
            self.create_collection(name, Document::new()).await
        };
        match created {
            Err(e) if e.code() == ErrorCode::NamespaceExists => self
                .collection(name)
                .ok_or_else(|| MongoError::internal("collection vanished while being created")),
            other => other,
        }
    }

    /// Drops a collection with its indexes; returns whether it existed.
    pub async fn drop_collection(&self, name: &str) -> Result<bool> {
        let mut writer = self.writer.lock().await;
        let Some(meta) = self.collection(name) else {
            return Ok(false);
        };
        drop_tables(&mut writer, &meta).await?;
        writer.next_rid.remove(&meta.ident);
        self.catalog.write().expect("poisoned").remove(name);
        self.stats.lock().expect("poisoned").remove(&meta.ident);
        Ok(true)
    }

    /// Renames a collection within this database, dropping an existing target when asked.
    pub async fn rename_collection(&self, from: &str, to: &str, drop_target: bool) -> Result<()> {
        let mut writer = self.writer.lock().await;
        let source = self
            .collection(from)
            .ok_or_else(|| MongoError::namespace_not_found("source namespace does not exist"))?;
        if let Some(target) = self.collection(to) {
            if !drop_target {
                return Err(MongoError::new(
                    ErrorCode::NamespaceExists,
                    "target namespace exists",
                ));
            }
            drop_tables(&mut writer, &target).await?;
            self.catalog.write().expect("poisoned").remove(to);
            self.stats.lock().expect("poisoned").remove(&target.ident);
        }
        let renamed = async {
            let mut txn = begin_catalog_txn(&mut writer).await?;
            sqlx::query("UPDATE docgrid_collections SET name = ? WHERE name = ?")
                .bind(to)
                .bind(from)
                .execute(&mut *txn)
                .await?;
            txn.commit().await
        };
        renamed
            .await
            .map_err(|e| sql_error("renaming a collection", e))?;
        let mut catalog = self.catalog.write().expect("poisoned");
        catalog.remove(from);
        let mut renamed = (*source).clone();
        renamed.name = to.to_string();
        catalog.insert(to.to_string(), Arc::new(renamed));
        Ok(())
    }

    /// Creates the index unless an index of that name exists; when another request is building
    /// it, waits for that build (and builds it itself if that build failed).
    pub async fn ensure_index(&self, collection: &str, spec: IndexSpec) -> Result<()> {
        loop {
            match self.create_index(collection, spec.clone()).await {
                Err(e) if e.code() == ErrorCode::IndexBuildAlreadyInProgress => {
                    self.wait_for_index_build(collection, &spec.name).await;
                    let exists = self
                        .collection(collection)
                        .is_some_and(|c| c.indexes.iter().any(|i| i.name == spec.name));
                    if exists {
                        return Ok(());
                    }
                }
                other => return other,
            }
        }
    }

    /// Waits while the index `name` of `collection` exists but is not ready (being built).
    pub async fn wait_for_index_build(&self, collection: &str, name: &str) {
        let building = || {
            self.collection(collection)
                .is_some_and(|c| c.indexes.iter().any(|i| i.name == name && !i.ready))
        };
        while building() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// Creates and builds a secondary index. Writes go on while it is built: the index is
    /// maintained by every write from the moment it exists, and built over the older
    /// documents in key order (`index_build`). A duplicate in a unique index drops it again
    /// and fails with DuplicateKey.
    pub async fn create_index(&self, collection: &str, spec: IndexSpec) -> Result<()> {
        self.create_index_within(collection, spec, INDEX_BUILD_MEMORY_BYTES)
            .await
            .map(|_| ())
    }

    /// [`create_index`](Self::create_index) holding at most `max_bytes` of keys in memory
    /// (`maxIndexBuildMemoryUsageMegabytes`).
    pub async fn create_index_within(
        &self,
        collection: &str,
        spec: IndexSpec,
        max_bytes: usize,
    ) -> Result<IndexBuildStats> {
        let (coll, index, last_rid) = self.register_index(collection, spec).await?;
        let built = self.build_index(&coll, &index, last_rid, max_bytes).await;
        let mut writer = self.writer.lock().await;
        let finished = match built {
            Ok(stats) => {
                let ready = async {
                    let mut txn = begin_catalog_txn(&mut writer).await?;
                    sqlx::query("UPDATE docgrid_indexes SET ready = 1 WHERE ident = ?")
                        .bind(index.ident)
                        .execute(&mut *txn)
                        .await?;
                    txn.commit().await
                };
                ready
                    .await
                    .map(|_| stats)
                    .map_err(|e| sql_error("finishing an index build", e))
            }
            Err(e) => Err(e),
        };
        match finished {
            Ok(stats) => {
                self.update_collection(coll.ident, |c| {
                    if let Some(i) = c.indexes.iter_mut().find(|i| i.ident == index.ident) {
                        i.ready = true;
                    }
                });
                Ok(stats)
            }
            Err(e) => {
                // A drop of the index or of its collection explains whatever the build then
                // met (a table gone under it), as MongoDB's drops abort index builds.
                let aborted = self.index_build_aborted(&coll, &index);
                writer.index_builds.retain(|b| b.index != index.ident);
                let _ = drop_index_tables(&mut writer, &index).await;
                self.update_collection(coll.ident, |c| {
                    c.indexes.retain(|i| i.ident != index.ident)
                });
                Err(aborted.unwrap_or(e))
            }
        }
    }

    /// IndexBuildAborted if `index` of `coll` was dropped, or its collection, since its build
    /// began.
    pub(super) fn index_build_aborted(
        &self,
        coll: &CollectionMeta,
        index: &IndexMeta,
    ) -> Option<MongoError> {
        let reason = match self.collection_by_ident(coll.ident) {
            None => "collection dropped",
            Some(c) if c.indexes.iter().all(|i| i.ident != index.ident) => "index dropped",
            Some(_) => return None,
        };
        Some(MongoError::new(
            ErrorCode::IndexBuildAborted,
            format!(
                "Index build aborted: {}.{} {}: {reason}",
                self.name, coll.name, index.name
            ),
        ))
    }

    /// Adds the (not yet ready) index to the catalog and creates its table; returns the last
    /// record id that existed then (later documents are indexed by their own writes).
    async fn register_index(
        &self,
        collection: &str,
        spec: IndexSpec,
    ) -> Result<(Arc<CollectionMeta>, IndexMeta, RecordId)> {
        let mut writer = self.writer.lock().await;
        let coll = self.collection(collection).ok_or_else(|| {
            MongoError::namespace_not_found(format!(
                "ns does not exist: {}.{collection}",
                self.name
            ))
        })?;
        if coll.indexes.iter().any(|i| i.name == spec.name) {
            return Err(MongoError::new(
                ErrorCode::IndexBuildAlreadyInProgress,
                format!("an index named {} is already being built", spec.name),
            ));
        }
        let ident = writer.next_ident;
        let index = IndexMeta {
            name: spec.name.clone(),
            ident,
            spec: spec.document.clone(),
            parsed: Some(Arc::new(spec)),
            multikey: false,
            multikey_paths: Default::default(),
            ready: false,
            id_collation: None,
        };
        let spec_bytes = bson::to_vec(&index.spec)?;
        let table_sql = index_table_sql(&index);
        let last_table = coll.table();
        let registered = async {
            let mut txn = begin_catalog_txn(&mut writer).await?;
            txn.execute(AssertSqlSafe(table_sql)).await?;
            sqlx::query("INSERT INTO docgrid_indexes (collection_ident, name, ident, spec, ready) VALUES (?, ?, ?, ?, 0)")
                .bind(coll.ident)
                .bind(&index.name)
                .bind(ident)
                .bind(spec_bytes)
                .execute(&mut *txn)
                .await?;
            let last: i64 = sqlx::query(AssertSqlSafe(format!(
                "SELECT coalesce(max(rid), 0) FROM {last_table}"
            )))
            .fetch_one(&mut *txn)
            .await?
            .get(0);
            txn.commit().await?;
            Ok::<i64, sqlx::Error>(last)
        };
        let last_rid = registered
            .await
            .map_err(|e| sql_error("creating an index", e))?;
        writer.next_ident = ident + 1;
        writer
            .index_builds
            .push(IndexBuild::new(coll.ident, ident, last_rid));
        self.update_collection(coll.ident, |c| c.indexes.push(index.clone()));
        let coll = self
            .collection_by_ident(coll.ident)
            .ok_or_else(|| MongoError::internal("collection vanished during index creation"))?;
        Ok((coll, index, last_rid))
    }

    /// Drops a secondary index (its table and catalog entry).
    pub async fn drop_index(&self, collection: &str, name: &str) -> Result<()> {
        let mut writer = self.writer.lock().await;
        let coll = self.collection(collection).ok_or_else(|| {
            MongoError::namespace_not_found(format!("ns not found {}.{collection}", self.name))
        })?;
        let index = coll
            .indexes
            .iter()
            .find(|i| i.name == name)
            .cloned()
            .ok_or_else(|| {
                MongoError::new(
                    ErrorCode::IndexNotFound,
                    format!("index not found with name [{name}]"),
                )
            })?;
        drop_index_tables(&mut writer, &index).await?;
        self.update_collection(coll.ident, |c| c.indexes.retain(|i| i.ident != index.ident));
        Ok(())
    }

    /// Closes every connection and deletes the files.
    pub(super) async fn close_and_delete(&self) -> Result<()> {
        self.readers.close().await;
        self.snapshots.close().await;
        let mut writer = self.writer.lock().await;
        // Checkpoint so the WAL is empty; the files go away next.
        let _ = writer.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").await;
        self.catalog.write().expect("poisoned").clear();
        for suffix in ["sqlite", "sqlite-wal", "sqlite-shm"] {
            let path = self.path.with_extension(suffix);
            if let Err(e) = std::fs::remove_file(&path) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    return Err(MongoError::internal(format!(
                        "cannot delete {}: {e}",
                        path.display()
                    )));
                }
            }
        }
        Ok(())
    }
}

async fn drop_tables(writer: &mut Writer, meta: &CollectionMeta) -> Result<()> {
    let mut statements = vec![format!("DROP TABLE IF EXISTS {}", meta.table())];
    statements.extend(
        meta.indexes
            .iter()
            .map(|i| format!("DROP TABLE IF EXISTS {}", i.table())),
    );
    let dropped = async {
        let mut txn = begin_catalog_txn(writer).await?;
        for sql in statements {
            txn.execute(AssertSqlSafe(sql)).await?;
        }
        sqlx::query("DELETE FROM docgrid_collections WHERE ident = ?")
            .bind(meta.ident)
            .execute(&mut *txn)
            .await?;
        sqlx::query("DELETE FROM docgrid_indexes WHERE collection_ident = ?")
            .bind(meta.ident)
            .execute(&mut *txn)
            .await?;
        txn.commit().await
    };
    dropped
        .await
        .map_err(|e| sql_error("dropping a collection", e))
}

/// A transaction for catalog changes on the writer, after rolling back any abandoned one.
pub(super) async fn begin_catalog_txn(
    writer: &mut Writer,
) -> Result<sqlx::Transaction<'_, sqlx::Sqlite>, sqlx::Error> {
    if writer.in_txn {
        writer.conn.execute("ROLLBACK").await?;
        writer.in_txn = false;
    }
    writer.conn.begin().await
}

/// Drops an index's table and its catalog entry.
async fn drop_index_tables(writer: &mut Writer, index: &IndexMeta) -> Result<()> {
    let dropped = async {
        let mut txn = begin_catalog_txn(writer).await?;
        txn.execute(AssertSqlSafe(format!(
            "DROP TABLE IF EXISTS {}",
            index.table()
        )))
        .await?;
        sqlx::query("DELETE FROM docgrid_indexes WHERE ident = ?")
            .bind(index.ident)
            .execute(&mut *txn)
            .await?;
        txn.commit().await
    };
    dropped.await.map_err(|e| sql_error("dropping an index", e))
}
