//! A multi-document transaction on a data node's storage: one view per database file it uses
//! (`TxnView`, its snapshot pinned on first use), the task-local scope that makes
//! `DatabaseStore::read` and `DatabaseStore::writes` go through those views, and the commit,
//! which validates every view before it applies any, each in one write transaction. A
//! transaction may read at a cluster time (`at`): its views then read through the history.

use super::Storage;
use super::catalog::CollectionMeta;
use super::database::DatabaseStore;
use super::doc_locks::write_conflict;
use super::read_sql::{
    DocumentReads, IndexEntry, IndexRange, IndexRanges, KeyEntry, ReadQuery, RecordId, ResultRow,
};
use super::txn::WriteTxn;
use super::txn_view::{Op, TxnView};
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, RawDocument, RawDocumentBuf, doc};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::OwnedMutexGuard;

tokio::task_local! {
    static CURRENT: Arc<StorageTransaction>;
}

/// Transaction ids, unique in the process (0 is no transaction's).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Idents of the tables of the collections and indexes transactions create, until their
/// commit gives them real ones: above every real ident, so that no table of the file has one
/// (a view reads such a collection as empty under the transaction's writes).
const PENDING_IDENT: i64 = 1 << 50;
static NEXT_PENDING_IDENT: AtomicI64 = AtomicI64::new(PENDING_IDENT);

/// The collections a transaction created, by `(database, name)`: its statements see them,
/// others only once its commit creates them (MongoDB's uncommitted collections).
pub(super) type Created = Mutex<BTreeMap<(String, String), Arc<CollectionMeta>>>;

/// The collections of database `db` in `created`.
pub(super) fn created_in(created: &Created, db: &str) -> Vec<Arc<CollectionMeta>> {
    created
        .lock()
        .expect("poisoned")
        .iter()
        .filter(|((d, _), _)| d == db)
        .map(|(_, meta)| meta.clone())
        .collect()
}

/// Whether `coll` is a collection a transaction created and has not committed: it has no
/// table yet.
pub(super) fn is_pending(coll: &CollectionMeta) -> bool {
    coll.ident >= PENDING_IDENT
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Active,
    Prepared,
    Committed,
    Aborted,
}

pub struct StorageTransaction {
    id: u64,
    /// Views by database name.
    views: Mutex<BTreeMap<String, Arc<tokio::sync::Mutex<TxnView>>>>,
    state: Mutex<State>,
    /// Indexes this transaction's writes made multikey: `(database, collection ident, index
    /// ident)`. The transaction's reads must plan with them multikey (no covered reads, one
    /// answer per document) before the commit records it.
    multikey: Arc<Multikey>,
    /// The cluster time the transaction reads at (`at`); `None`: the latest data at each
    /// view's first use.
    read_at: Option<bson::Timestamp>,
    /// The session's record the commit writes in each database it writes
    /// ([`record_commit`](Self::record_commit)).
    commit_record: Mutex<Option<(super::SessionRecord, Vec<super::StatementRecord>)>>,
    created: Arc<Created>,
}

/// Indexes a transaction's writes made multikey, by `(database name, collection ident, index
/// ident)`, with a wildcard index's paths that became so.
pub(super) type Multikey = Mutex<BTreeMap<(String, i64, i64), std::collections::BTreeSet<String>>>;

fn no_such_transaction(state: State) -> MongoError {
    MongoError::new(
        ErrorCode::NoSuchTransaction,
        format!("Transaction is no longer in progress ({state:?})"),
    )
}

impl StorageTransaction {
    /// A transaction reading every database as of cluster time `time` (`readConcern:
    /// {level: "snapshot", atClusterTime}`, in a transaction or outside one): each view is the
    /// latest snapshot with the history's before-images of the records changed after `time`
    /// as a base layer under the transaction's own writes (`history`). A view's first use
    /// fails with SnapshotTooOld if the history no longer reaches `time`. A write compares
    /// the version as of `time` with the latest committed one: a document changed after
    /// `time` is a WriteConflict. The caller waits for `time` to be visible first
    /// (`LogicalClock::wait_until_visible`). The catalog is the current one.
    pub fn at(time: bson::Timestamp) -> Arc<Self> {
        Self::with_read_time(Some(time))
    }

    /// A transaction reading the latest data (each database's as of its first use).
    pub fn new() -> Arc<Self> {
        Self::with_read_time(None)
    }

    fn with_read_time(read_at: Option<bson::Timestamp>) -> Arc<Self> {
        Arc::new(StorageTransaction {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            views: Mutex::new(BTreeMap::new()),
            state: Mutex::new(State::Active),
            multikey: Default::default(),
            read_at,
            commit_record: Mutex::new(None),
            created: Default::default(),
        })
    }

    /// The cluster time this transaction reads at, if it reads at one.
    pub fn read_time(&self) -> Option<bson::Timestamp> {
        self.read_at
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Runs `f` with this transaction as the task's current one.
    pub async fn scope<F: Future>(self: &Arc<Self>, f: F) -> F::Output {
        CURRENT.scope(self.clone(), f).await
    }

    /// The task's current transaction.
    pub fn current() -> Option<Arc<StorageTransaction>> {
        CURRENT.try_with(Arc::clone).ok()
    }

    /// `meta` of database `db` as this transaction sees it: with the indexes its writes made
    /// multikey marked so.
    pub(super) fn patch(&self, db: &str, meta: Arc<CollectionMeta>) -> Arc<CollectionMeta> {
        let multikey = self.multikey.lock().expect("poisoned");
        let noted = |i: &super::IndexMeta| multikey.get(&(db.to_string(), meta.ident, i.ident));
        let marked = |i: &super::IndexMeta| {
            noted(i).is_some_and(|paths| !i.multikey || !paths.is_subset(&i.multikey_paths))
        };
        if multikey.is_empty() || !meta.indexes.iter().any(marked) {
            return meta;
        }
        let mut patched = (*meta).clone();
        for index in patched.indexes.iter_mut() {
            if let Some(paths) = noted(index) {
                index.add_multikey_paths(paths);
            }
        }
        Arc::new(patched)
    }

    fn state(&self) -> State {
        *self.state.lock().expect("poisoned")
    }

    /// This transaction's view of `db`, created (its snapshot pinned) on first use, locked
    /// for the caller. The same task taking it twice (a read inside another read of the same
    /// transaction) is a bug, reported rather than deadlocked on.
    pub(super) async fn view(&self, db: &DatabaseStore) -> Result<OwnedMutexGuard<TxnView>> {
        let state = self.state();
        if state != State::Active {
            return Err(no_such_transaction(state));
        }
        let existing = self.views.lock().expect("poisoned").get(db.name()).cloned();
        let view = match existing {
            Some(view) => view,
            None => {
                let view = Arc::new(tokio::sync::Mutex::new(
                    TxnView::open(
                        db.arc()?,
                        self.id,
                        self.multikey.clone(),
                        self.created.clone(),
                        self.read_at,
                    )
                    .await?,
                ));
                self.views
                    .lock()
                    .expect("poisoned")
                    .entry(db.name().to_string())
                    .or_insert(view)
                    .clone()
            }
        };
        view.try_lock_owned().map_err(|_| {
            MongoError::internal(format!(
                "a transaction's view of database {} is already in use",
                db.name()
            ))
        })
    }

    /// Whether the transaction wrote anything.
    pub fn has_writes(&self) -> bool {
        self.written_databases() > 0
    }

    /// How many databases the transaction wrote in (created a collection in, or wrote a
    /// document; a view in use counts as written).
    pub fn written_databases(&self) -> usize {
        self.views
            .lock()
            .expect("poisoned")
            .iter()
            .filter(|(db, v)| self.creates_in(db) || v.try_lock().map_or(true, |v| v.has_writes()))
            .count()
    }

    /// Whether the transaction created a collection in database `db`.
    fn creates_in(&self, db: &str) -> bool {
        !created_in(&self.created, db).is_empty()
    }

    /// The collection `name` of database `db` this transaction created, if it did.
    pub fn created(&self, db: &str, name: &str) -> Option<Arc<CollectionMeta>> {
        self.created
            .lock()
            .expect("poisoned")
            .get(&(db.to_string(), name.to_string()))
            .cloned()
    }

    /// Creates collection `name` in `db` within this transaction: its statements see it at
    /// once, others once it commits. Until then a plain creation of the name waits for the
    /// transaction's end and another transaction's is a WriteConflict (first writer wins).
    /// NamespaceExists if the collection exists.
    pub async fn create_collection(
        &self,
        db: &DatabaseStore,
        name: &str,
        options: Document,
    ) -> Result<Arc<CollectionMeta>> {
        self.create_collection_as(db, name, options, uuid::Uuid::new_v4())
            .await
    }

    async fn create_collection_as(
        &self,
        db: &DatabaseStore,
        name: &str,
        options: Document,
        uuid: uuid::Uuid,
    ) -> Result<Arc<CollectionMeta>> {
        let mut view = self.view(db).await?;
        view.lock_namespace(name)?;
        if db.committed_collection(name).is_some() || self.created(db.name(), name).is_some() {
            return Err(MongoError::new(
                ErrorCode::NamespaceExists,
                format!("Collection {}.{name} already exists.", db.name()),
            ));
        }
        let ident = NEXT_PENDING_IDENT.fetch_add(2, Ordering::Relaxed);
        let meta = Arc::new(CollectionMeta::new(name, ident, uuid, options)?);
        self.created
            .lock()
            .expect("poisoned")
            .insert((db.name().to_string(), name.to_string()), meta.clone());
        Ok(meta)
    }

    /// The collection of `entry` (see [`create_entry`]) created again in this restored
    /// transaction, under its UUID.
    async fn restore_created(
        &self,
        db: &DatabaseStore,
        name: &str,
        entry: &Document,
    ) -> Result<()> {
        let corrupt = || MongoError::internal("a corrupt record of a created collection");
        let uuid = match entry.get("uuid") {
            Some(Bson::Binary(b)) => uuid::Uuid::from_slice(&b.bytes).map_err(|_| corrupt())?,
            _ => return Err(corrupt()),
        };
        let options = entry.get_document("options").map_err(|_| corrupt())?;
        self.create_collection_as(db, name, options.clone(), uuid)
            .await?;
        for spec in entry.get_array("indexes").map_err(|_| corrupt())? {
            let Bson::Document(spec) = spec else {
                return Err(corrupt());
            };
            let spec = crate::datanode::index::IndexSpec::parse(spec)?;
            self.create_index(db, name, spec).await?;
        }
        Ok(())
    }

    /// Adds a secondary index to collection `collection` of `db`, which this transaction
    /// created (MongoDB builds no index on an existing collection inside a transaction):
    /// DuplicateKey if a unique index's key repeats among the transaction's documents.
    pub async fn create_index(
        &self,
        db: &DatabaseStore,
        collection: &str,
        spec: crate::datanode::index::IndexSpec,
    ) -> Result<()> {
        let key = (db.name().to_string(), collection.to_string());
        let coll = self.created.lock().expect("poisoned").get(&key).cloned();
        let coll = coll.ok_or_else(|| {
            MongoError::internal("an index of a collection the transaction did not create")
        })?;
        let index = super::IndexMeta {
            name: spec.name.clone(),
            ident: NEXT_PENDING_IDENT.fetch_add(1, Ordering::Relaxed),
            spec: spec.document.clone(),
            parsed: Some(Arc::new(spec)),
            multikey: false,
            multikey_paths: Default::default(),
            ready: true,
            id_collation: None,
        };
        let mut updated = (*coll).clone();
        updated.indexes.push(index.clone());
        self.view(db).await?.add_index(&updated, &index)?;
        self.created
            .lock()
            .expect("poisoned")
            .insert(key, Arc::new(updated));
        Ok(())
    }

    /// Every view, locked, in database-name order (the order writers are taken in, so that
    /// two commits never wait for each other's).
    async fn locked_views(&self) -> Vec<OwnedMutexGuard<TxnView>> {
        let views: Vec<_> = self
            .views
            .lock()
            .expect("poisoned")
            .values()
            .cloned()
            .collect();
        let mut out = Vec::with_capacity(views.len());
        for view in views {
            out.push(view.lock_owned().await);
        }
        out
    }

    /// Validates every view against the latest committed state (WriteConflict if another
    /// write changed a document this transaction wrote), then applies each view's writes in
    /// one write transaction. Returns each written database with its commit's number (for
    /// [`DatabaseStore::wait_durable`]). The transaction ends either way.
    pub async fn commit(&self) -> Result<Vec<(Arc<DatabaseStore>, u64)>> {
        let state = self.state();
        if !matches!(state, State::Active | State::Prepared) {
            return Err(no_such_transaction(state));
        }
        let result = self.commit_views().await;
        self.finish(if result.is_ok() {
            State::Committed
        } else {
            State::Aborted
        })
        .await;
        result
    }

    async fn commit_views(&self) -> Result<Vec<(Arc<DatabaseStore>, u64)>> {
        let views = self.locked_views().await;
        let mut views: Vec<_> = views
            .into_iter()
            .filter(|v| v.has_writes() || self.creates_in(v.database().name()))
            .collect();
        let dbs: Vec<Arc<DatabaseStore>> = views.iter().map(|v| v.database_arc().clone()).collect();
        let mut txns = Vec::with_capacity(views.len());
        // A prepared transaction commits despite a migration's fence (the migration waits
        // for it); any other is refused once the fence is up.
        let prepared = self.state() == State::Prepared;
        for (view, db) in views.iter_mut().zip(&dbs) {
            let mut txn = db.write().await?;
            txn.lock_owner = self.id;
            if !prepared {
                db.range_watches.check_fence(view.written_collections())?;
            }
            view.validate(&mut txn).await?;
            txns.push(txn);
        }
        let mut out = Vec::with_capacity(txns.len());
        for ((view, db), mut txn) in views.iter_mut().zip(&dbs).zip(txns) {
            // The collections the transaction created get their tables first, under real
            // idents, in the same SQLite transaction as the writes.
            let mut created = HashMap::new();
            for meta in created_in(&self.created, db.name()) {
                created.insert(meta.ident, txn.create_collection(&meta).await?);
            }
            apply(view, &mut txn, &created).await.map_err(|e| {
                // Another write took a unique key this transaction's write wanted since the
                // snapshot: a conflict, as MongoDB reports it.
                if e.code() == ErrorCode::DuplicateKey {
                    write_conflict()
                } else {
                    e
                }
            })?;
            let record = self.commit_record.lock().expect("poisoned").clone();
            if let Some((session, statements)) = record {
                txn.record_retryable_write(&session, &statements, true)
                    .await?;
            }
            out.push((db.clone(), txn.commit().await?));
        }
        Ok(out)
    }

    /// Has the commit write `statements` under `session` into the transaction table of every
    /// database it writes, in the same SQLite transaction as the writes: the session's
    /// participant then finds the commit after a restart (MongoDB's `config.transactions`
    /// entry in state `committed`), so a retried `commitTransaction` answers ok.
    pub fn record_commit(
        &self,
        session: super::SessionRecord,
        statements: Vec<super::StatementRecord>,
    ) {
        *self.commit_record.lock().expect("poisoned") = Some((session, statements));
    }

    /// Ends the transaction: its snapshots go, its locks are released. Idempotent.
    pub async fn abort(&self) {
        let state = self.state();
        if matches!(state, State::Committed | State::Aborted) {
            return;
        }
        self.finish(State::Aborted).await;
    }

    async fn finish(&self, state: State) {
        *self.state.lock().expect("poisoned") = state;
        self.created.lock().expect("poisoned").clear();
        let views = std::mem::take(&mut *self.views.lock().expect("poisoned"));
        for view in views.into_values() {
            // Waits for a read still using the view; dropping it releases the locks.
            let view = view.lock_owned().await;
            view.database().locks.release(self.id);
        }
    }

    /// Validates every write (WriteConflict), keeps the locks, marks the transaction prepared
    /// (plain reads and writes of its documents now wait for its end) and returns its writes
    /// to persist: `{writes: [{db, coll, uuid, op: "i"|"u"|"d", _id, doc}]}`.
    ///
    /// `distributed`: the prepare of a two-phase commit, which refuses a transaction that
    /// created collections (as MongoDB's does); otherwise the durable record of a commit across
    /// database files, whose collections to create come first (`{db, coll, uuid, op: "c",
    /// options, indexes}`).
    pub async fn prepare(&self, distributed: bool) -> Result<Document> {
        let state = self.state();
        if state != State::Active {
            return Err(no_such_transaction(state));
        }
        let created: Vec<_> = self
            .created
            .lock()
            .expect("poisoned")
            .iter()
            .map(|((db, _), meta)| (db.clone(), meta.clone()))
            .collect();
        if distributed && !created.is_empty() {
            return Err(MongoError::new(
                ErrorCode::OperationNotSupportedInTransaction,
                "Cannot create new collections inside distributed transactions",
            ));
        }
        let mut writes: Vec<Bson> = created
            .iter()
            .map(|(db, meta)| Bson::Document(create_entry(db, meta)))
            .collect();
        let pending: HashMap<i64, Arc<CollectionMeta>> = created
            .into_iter()
            .map(|(_, meta)| (meta.ident, meta))
            .collect();
        let mut views = self.locked_views().await;
        for view in views.iter_mut().filter(|v| v.has_writes()) {
            let db = view.database_arc().clone();
            // Validated holding the writer: a plain write that checked the locks before this
            // transaction took them has committed by then.
            let mut txn = db.write().await?;
            txn.lock_owner = self.id;
            db.range_watches.check_fence(view.written_collections())?;
            view.validate(&mut txn).await?;
            txn.rollback().await?;
            for (coll, ops) in view.ops(&pending)? {
                for op in ops {
                    writes.push(Bson::Document(write_entry(db.name(), &coll, &op)?));
                }
            }
        }
        for view in &views {
            view.database()
                .locks
                .prepare(self.id, view.index_keys_written()?);
        }
        *self.state.lock().expect("poisoned") = State::Prepared;
        Ok(doc! {"writes": writes})
    }

    /// A prepared transaction again after a restart, from what [`prepare`](Self::prepare)
    /// returned: its locks taken, its writes over new snapshots, ready to commit or abort.
    ///
    /// The commit may have run before the crash that lost the prepare record's removal: a
    /// document that already has the transaction's final version (present with its bytes,
    /// or absent for a delete) is left out, so that the commit applies nothing twice (and
    /// nothing at all, successfully, when every write had been applied). A document the
    /// transaction had not written yet cannot have that version: its lock kept it as the
    /// prepare found it (and one that does, by an update writing the same bytes, needs no
    /// write).
    pub async fn restore_prepared(storage: &Storage, writes: &Document) -> Result<Arc<Self>> {
        let txn = StorageTransaction::new();
        let mut parsed = Vec::new();
        let entries = writes.get_array("writes").map_err(|e| {
            MongoError::internal(format!("a prepared transaction's writes are corrupt: {e}"))
        })?;
        for entry in entries {
            let Bson::Document(entry) = entry else {
                return Err(MongoError::internal("a corrupt prepared write"));
            };
            let corrupt = |e: bson::document::ValueAccessError| {
                MongoError::internal(format!("a corrupt prepared write: {e}"))
            };
            let db_name = entry.get_str("db").map_err(corrupt)?;
            let coll_name = entry.get_str("coll").map_err(corrupt)?;
            let db = storage.database_or_create(db_name).await?;
            let same_uuid = |c: &Arc<CollectionMeta>| match entry.get("uuid") {
                Some(Bson::Binary(uuid)) => uuid.bytes == c.uuid.as_bytes(),
                _ => true,
            };
            if entry.get_str("op").map_err(corrupt)? == "c" {
                // Created by the commit already when the file has it under its UUID.
                if !db
                    .committed_collection(coll_name)
                    .is_some_and(|c| same_uuid(&c))
                {
                    txn.restore_created(&db, coll_name, entry).await?;
                }
                continue;
            }
            // The collection the transaction wrote, not one of its name created since.
            let coll = db
                .committed_collection(coll_name)
                .or_else(|| txn.created(db.name(), coll_name))
                .filter(same_uuid)
                .ok_or_else(|| {
                    MongoError::internal(format!(
                        "the collection {db_name}.{coll_name} of a prepared transaction is gone"
                    ))
                })?;
            let id = entry
                .get("_id")
                .ok_or_else(|| MongoError::internal("a prepared write without _id"))?;
            let key = super::keys::id_key(&coll, id);
            let doc = match entry.get_str("op").map_err(corrupt)? {
                "d" => None,
                _ => Some(RawDocumentBuf::from_document(
                    entry.get_document("doc").map_err(corrupt)?,
                )?),
            };
            parsed.push((db, coll, key, doc));
        }
        // Each document's final version: its last write's.
        let mut last = std::collections::HashMap::new();
        for (db, coll, key, doc) in &parsed {
            last.insert(
                (db.name().to_string(), coll.ident, key.clone()),
                doc.clone(),
            );
        }
        let mut applied = std::collections::HashMap::new();
        for (db, coll, key, doc) in parsed {
            let id = (db.name().to_string(), coll.ident, key);
            let skip = match applied.get(&id) {
                Some(skip) => *skip,
                // A collection still to create has no table, nor documents.
                None if is_pending(&coll) => {
                    applied.insert(id.clone(), false);
                    false
                }
                None => {
                    let latest = db
                        .plain_reader()
                        .await?
                        .fetch_by_id_key(&coll, &id.2)
                        .await?;
                    let skip = match (&last[&id], latest) {
                        (None, None) => true,
                        (Some(last), Some((_, latest))) => last.as_bytes() == latest.as_bytes(),
                        _ => false,
                    };
                    applied.insert(id.clone(), skip);
                    skip
                }
            };
            if !skip {
                let mut view = txn.view(&db).await?;
                view.restore(&coll, id.2, doc).await?;
            }
        }
        for view in txn.locked_views().await {
            view.database()
                .locks
                .prepare(txn.id, view.index_keys_written()?);
        }
        *txn.state.lock().expect("poisoned") = State::Prepared;
        Ok(txn)
    }
}

/// A collection a transaction created, as its durable record keeps it.
fn create_entry(db: &str, meta: &CollectionMeta) -> Document {
    doc! {
        "db": db,
        "coll": &meta.name,
        "uuid": meta.uuid_bson(),
        "op": "c",
        "options": meta.options.clone(),
        "indexes": meta.secondary_index_specs(),
    }
}

/// One write of a prepared transaction as persisted.
fn write_entry(db: &str, coll: &CollectionMeta, op: &Op) -> Result<Document> {
    let (name, doc) = match op {
        Op::Insert(doc) => ("i", doc),
        Op::Replace(_, _, doc) => ("u", doc),
        Op::Delete(_, doc) => ("d", doc),
    };
    let doc = doc.to_document()?;
    let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
    let mut entry = doc! {
        "db": db,
        "coll": &coll.name,
        "uuid": bson::Binary {
            subtype: bson::spec::BinarySubtype::Uuid,
            bytes: coll.uuid.as_bytes().to_vec(),
        },
        "op": name,
        "_id": id,
    };
    if name != "d" {
        entry.insert("doc", doc);
    }
    Ok(entry)
}

/// Applies a view's writes through the write transaction's own methods (indexes, statistics
/// and multikey flags kept there).
/// `created`: the collections the commit created, by the idents the transaction gave them.
async fn apply(
    view: &mut TxnView,
    txn: &mut WriteTxn<'_>,
    created: &HashMap<i64, Arc<CollectionMeta>>,
) -> Result<()> {
    for (coll, ops) in view.ops(created)? {
        for op in ops {
            match op {
                Op::Insert(doc) => {
                    txn.insert_one(&coll, &doc).await?;
                }
                Op::Replace(rid, old, new) => txn.replace(&coll, rid, &old, &new).await?,
                Op::Delete(rid, old) => txn.delete(&coll, rid, &old).await?,
            }
        }
    }
    Ok(())
}

/// What write commands write through: a write transaction outside a multi-document
/// transaction, the transaction's view of the database inside one.
pub enum Writes<'a> {
    Direct(WriteTxn<'a>),
    Transaction(OwnedMutexGuard<TxnView>),
}

impl<'a> Writes<'a> {
    /// The write transaction, for the caller that commits it.
    pub fn into_direct(self) -> Option<WriteTxn<'a>> {
        match self {
            Writes::Direct(txn) => Some(txn),
            Writes::Transaction(_) => None,
        }
    }

    pub async fn insert(
        &mut self,
        coll: &CollectionMeta,
        docs: &[&RawDocument],
    ) -> std::result::Result<(), (usize, MongoError)> {
        match self {
            Writes::Direct(txn) => txn.insert(coll, docs).await,
            Writes::Transaction(view) => view.insert(coll, docs).await,
        }
    }

    pub async fn insert_one(
        &mut self,
        coll: &CollectionMeta,
        raw: &RawDocument,
    ) -> Result<RecordId> {
        match self {
            Writes::Direct(txn) => txn.insert_one(coll, raw).await,
            Writes::Transaction(view) => view.insert_one(coll, raw).await,
        }
    }

    pub async fn replace(
        &mut self,
        coll: &CollectionMeta,
        rid: RecordId,
        old: &RawDocument,
        new: &RawDocument,
    ) -> Result<()> {
        match self {
            Writes::Direct(txn) => txn.replace(coll, rid, old, new).await,
            Writes::Transaction(view) => view.replace(coll, rid, old, new).await,
        }
    }

    pub async fn delete(
        &mut self,
        coll: &CollectionMeta,
        rid: RecordId,
        old: &RawDocument,
    ) -> Result<()> {
        match self {
            Writes::Direct(txn) => txn.delete(coll, rid, old).await,
            Writes::Transaction(view) => view.delete(coll, rid, old).await,
        }
    }

    pub fn index_usage(&self) -> &super::IndexUsage {
        match self {
            Writes::Direct(txn) => txn.index_usage(),
            Writes::Transaction(view) => view.index_usage(),
        }
    }

    pub fn time(&self) -> bson::Timestamp {
        match self {
            Writes::Direct(txn) => txn.time(),
            Writes::Transaction(view) => view.time(),
        }
    }

    pub fn database(&self) -> &DatabaseStore {
        match self {
            Writes::Direct(txn) => txn.database(),
            Writes::Transaction(view) => view.database(),
        }
    }
}

impl DocumentReads for Writes<'_> {
    async fn run<T: Send>(
        &mut self,
        q: ReadQuery<'_>,
        expected_rows: i64,
        context: &str,
        decode: fn(&dyn ResultRow) -> Result<T>,
    ) -> Result<Vec<T>> {
        match self {
            Writes::Direct(txn) => txn.run(q, expected_rows, context, decode).await,
            Writes::Transaction(view) => view.run(q, expected_rows, context, decode).await,
        }
    }

    async fn fetch_by_id_key(
        &mut self,
        coll: &CollectionMeta,
        key: &[u8],
    ) -> Result<Option<(RecordId, RawDocumentBuf)>> {
        match self {
            Writes::Direct(txn) => txn.fetch_by_id_key(coll, key).await,
            Writes::Transaction(view) => view.fetch_by_id_key(coll, key).await,
        }
    }

    async fn fetch_by_rid(
        &mut self,
        coll: &CollectionMeta,
        rid: RecordId,
    ) -> Result<Option<RawDocumentBuf>> {
        match self {
            Writes::Direct(txn) => txn.fetch_by_rid(coll, rid).await,
            Writes::Transaction(view) => view.fetch_by_rid(coll, rid).await,
        }
    }

    async fn scan(
        &mut self,
        coll: &CollectionMeta,
        after: RecordId,
        limit: i64,
    ) -> Result<Vec<(RecordId, RawDocumentBuf)>> {
        match self {
            Writes::Direct(txn) => txn.scan(coll, after, limit).await,
            Writes::Transaction(view) => view.scan(coll, after, limit).await,
        }
    }

    async fn scan_reverse(
        &mut self,
        coll: &CollectionMeta,
        before: RecordId,
        limit: i64,
    ) -> Result<Vec<(RecordId, RawDocumentBuf)>> {
        match self {
            Writes::Direct(txn) => txn.scan_reverse(coll, before, limit).await,
            Writes::Transaction(view) => view.scan_reverse(coll, before, limit).await,
        }
    }

    async fn index_scan(
        &mut self,
        coll: &CollectionMeta,
        range: &IndexRange<'_>,
    ) -> Result<Vec<IndexEntry>> {
        match self {
            Writes::Direct(txn) => txn.index_scan(coll, range).await,
            Writes::Transaction(view) => view.index_scan(coll, range).await,
        }
    }

    async fn index_keys(&mut self, range: &IndexRange<'_>) -> Result<Vec<KeyEntry>> {
        match self {
            Writes::Direct(txn) => txn.index_keys(range).await,
            Writes::Transaction(view) => view.index_keys(range).await,
        }
    }

    async fn index_scan_ranges(
        &mut self,
        coll: &CollectionMeta,
        ranges: &IndexRanges<'_>,
    ) -> Result<Vec<IndexEntry>> {
        match self {
            Writes::Direct(txn) => txn.index_scan_ranges(coll, ranges).await,
            Writes::Transaction(view) => view.index_scan_ranges(coll, ranges).await,
        }
    }

    async fn index_keys_ranges(&mut self, ranges: &IndexRanges<'_>) -> Result<Vec<KeyEntry>> {
        match self {
            Writes::Direct(txn) => txn.index_keys_ranges(ranges).await,
            Writes::Transaction(view) => view.index_keys_ranges(ranges).await,
        }
    }
}
