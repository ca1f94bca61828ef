//! Reading and writing documents and their index entries: read views on pooled connections,
//! write transactions on the single writer.

use super::catalog::{CollectionMeta, CollectionStats};
use super::catalog::{IndexMeta, multikey_paths_blob};
use super::database::{DatabaseStore, Writer};
use super::doc_locks::{DocKey, DocLocks, write_conflict};
use super::history::Note;
use super::index_build::BuiltKey;
use super::keys::{DocumentKeys, duplicate_key_error};
use super::read_sql::{DocumentReads, Param, ReadQuery, ResultRow, column_error};
pub use super::read_sql::{
    IndexEntry, IndexRange, IndexRanges, KeyEntry, RANGES_PER_STATEMENT, RecordId,
};
use super::readers::Reader;
use super::sql_error;
use super::txn_view::TxnView;
use crate::error::{MongoError, Result};
use crate::server::clock::PendingWrite;
use bson::{RawDocument, RawDocumentBuf};
use sqlx::sqlite::SqliteRow;
use sqlx::{AssertSqlSafe, Executor, Row};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Rows per multi-row INSERT: large enough to amortize the per-statement cost, small enough to
/// stay far below SQLite's bound-parameter limit.
pub(super) const INSERT_CHUNK: usize = 500;

/// An index key with its type bits.
type TypedKey = (Vec<u8>, Vec<u8>);

impl ResultRow for SqliteRow {
    fn int(&self, column: usize) -> Result<i64> {
        self.try_get(column).map_err(|e| column_error(column, e))
    }
    fn blob(&self, column: usize) -> Result<Vec<u8>> {
        self.try_get(column).map_err(|e| column_error(column, e))
    }
    fn optional_blob(&self, column: usize) -> Result<Option<Vec<u8>>> {
        self.try_get(column).map_err(|e| column_error(column, e))
    }
}

/// A read view: on one reader, where each statement sees the latest committed state, or a
/// multi-document transaction's view (its snapshot and its own writes).
pub struct ReadTxn(Source);

enum Source {
    Plain(Reader, Arc<DocLocks>),
    Transaction(tokio::sync::OwnedMutexGuard<TxnView>),
}

impl ReadTxn {
    pub(super) fn new(conn: Reader, locks: Arc<DocLocks>) -> Self {
        ReadTxn(Source::Plain(conn, locks))
    }

    pub(super) fn transaction(view: tokio::sync::OwnedMutexGuard<TxnView>) -> Self {
        ReadTxn(Source::Transaction(view))
    }

    /// Makes the statements from now on read one snapshot, as of the first of them: a read of
    /// many short statements then takes SQLite's read lock once (each statement otherwise
    /// opens and closes its own read transaction). A read that waits for a prepared
    /// transaction then reads the document as it was before it. A transaction's view has
    /// its snapshot already.
    pub fn hold_snapshot(&mut self) -> Result<()> {
        match &mut self.0 {
            Source::Plain(conn, _) => conn.hold_snapshot(),
            Source::Transaction(_) => Ok(()),
        }
    }
}

/// Whether a document a plain read returned is one a prepared transaction holds: the read must
/// wait for its commit or abort (MongoDB's prepare conflict) and run again.
fn prepare_conflict<'d>(
    locks: &DocLocks,
    coll: &CollectionMeta,
    mut docs: impl Iterator<Item = &'d RawDocument>,
) -> bool {
    locks.any_prepared()
        && docs.any(|doc| {
            DocumentKeys::new(doc)
                .keys(coll.id_index())
                .ok()
                .and_then(|k| k.keys.into_iter().next())
                .is_some_and(|key| locks.is_prepared(&(coll.ident, key)))
        })
}

/// Waits while a prepared transaction writes or removes a key in `range` (a covered read has
/// no `_id` to look for, and an insert's keys are nowhere else); cheap when none is prepared.
async fn wait_for_prepared_keys(locks: &DocLocks, range: &IndexRange<'_>) {
    while locks.any_prepared() && locks.prepared_key_in(range.index.ident, range.low, range.high) {
        locks.wait_for_release().await;
    }
}

/// [`wait_for_prepared_keys`] for several ranges read as one.
async fn wait_for_prepared_keys_in(locks: &DocLocks, ranges: &IndexRanges<'_>) {
    let ident = ranges.index.ident;
    while locks.any_prepared()
        && ranges
            .ranges
            .iter()
            .any(|&(low, high)| locks.prepared_key_in(ident, low, high))
    {
        locks.wait_for_release().await;
    }
}

/// Runs a plain read until what it returns holds no prepared transaction's document.
macro_rules! settled {
    ($locks:expr, $coll:expr, $read:expr, |$rows:ident| $docs:expr) => {
        loop {
            let $rows = $read;
            if !prepare_conflict($locks, $coll, $docs) {
                break Ok($rows);
            }
            $locks.wait_for_release().await;
        }
    };
}

impl DocumentReads for ReadTxn {
    async fn run<T: Send>(
        &mut self,
        q: ReadQuery<'_>,
        expected_rows: i64,
        context: &str,
        decode: fn(&dyn ResultRow) -> Result<T>,
    ) -> Result<Vec<T>> {
        match &mut self.0 {
            Source::Plain(conn, _) => conn.query(q, expected_rows, context, decode).await,
            Source::Transaction(view) => view.run(q, expected_rows, context, decode).await,
        }
    }

    async fn fetch_by_id_key(
        &mut self,
        coll: &CollectionMeta,
        key: &[u8],
    ) -> Result<Option<(RecordId, RawDocumentBuf)>> {
        match &mut self.0 {
            Source::Plain(conn, locks) => {
                settled!(locks, coll, conn.fetch_by_id_key(coll, key).await?, |r| r
                    .iter()
                    .map(|(_, d)| d.as_ref()))
            }
            Source::Transaction(view) => view.fetch_by_id_key(coll, key).await,
        }
    }

    async fn fetch_by_rid(
        &mut self,
        coll: &CollectionMeta,
        rid: RecordId,
    ) -> Result<Option<RawDocumentBuf>> {
        match &mut self.0 {
            Source::Plain(conn, locks) => {
                settled!(locks, coll, conn.fetch_by_rid(coll, rid).await?, |r| r
                    .iter()
                    .map(|d| d.as_ref()))
            }
            Source::Transaction(view) => view.fetch_by_rid(coll, rid).await,
        }
    }

    async fn scan(
        &mut self,
        coll: &CollectionMeta,
        after: RecordId,
        limit: i64,
    ) -> Result<Vec<(RecordId, RawDocumentBuf)>> {
        match &mut self.0 {
            Source::Plain(conn, locks) => {
                settled!(locks, coll, conn.scan(coll, after, limit).await?, |r| r
                    .iter()
                    .map(|(_, d)| d.as_ref()))
            }
            Source::Transaction(view) => view.scan(coll, after, limit).await,
        }
    }

    async fn scan_reverse(
        &mut self,
        coll: &CollectionMeta,
        before: RecordId,
        limit: i64,
    ) -> Result<Vec<(RecordId, RawDocumentBuf)>> {
        match &mut self.0 {
            Source::Plain(conn, locks) => settled!(
                locks,
                coll,
                conn.scan_reverse(coll, before, limit).await?,
                |r| r.iter().map(|(_, d)| d.as_ref())
            ),
            Source::Transaction(view) => view.scan_reverse(coll, before, limit).await,
        }
    }

    async fn index_scan(
        &mut self,
        coll: &CollectionMeta,
        range: &IndexRange<'_>,
    ) -> Result<Vec<IndexEntry>> {
        match &mut self.0 {
            Source::Plain(conn, locks) => {
                wait_for_prepared_keys(locks, range).await;
                settled!(locks, coll, conn.index_scan(coll, range).await?, |r| r
                    .iter()
                    .map(|(_, _, d)| d.as_ref()))
            }
            Source::Transaction(view) => view.index_scan(coll, range).await,
        }
    }

    async fn index_keys(&mut self, range: &IndexRange<'_>) -> Result<Vec<KeyEntry>> {
        match &mut self.0 {
            Source::Plain(conn, locks) => {
                wait_for_prepared_keys(locks, range).await;
                conn.index_keys(range).await
            }
            Source::Transaction(view) => view.index_keys(range).await,
        }
    }

    async fn index_scan_ranges(
        &mut self,
        coll: &CollectionMeta,
        ranges: &IndexRanges<'_>,
    ) -> Result<Vec<IndexEntry>> {
        match &mut self.0 {
            Source::Plain(conn, locks) => {
                wait_for_prepared_keys_in(locks, ranges).await;
                settled!(
                    locks,
                    coll,
                    conn.index_scan_ranges(coll, ranges).await?,
                    |r| r.iter().map(|(_, _, d)| d.as_ref())
                )
            }
            Source::Transaction(view) => view.index_scan_ranges(coll, ranges).await,
        }
    }

    async fn index_keys_ranges(&mut self, ranges: &IndexRanges<'_>) -> Result<Vec<KeyEntry>> {
        match &mut self.0 {
            Source::Plain(conn, locks) => {
                wait_for_prepared_keys_in(locks, ranges).await;
                conn.index_keys_ranges(ranges).await
            }
            Source::Transaction(view) => view.index_keys_ranges(ranges).await,
        }
    }
}

/// A write transaction holding the database's writer. Dropping it without `commit` rolls back
/// (the next writer finds the transaction open and rolls it back first).
pub struct WriteTxn<'a> {
    db: &'a DatabaseStore,
    pub(super) writer: tokio::sync::MutexGuard<'a, Writer>,
    deltas: BTreeMap<i64, CollectionStats>,
    /// Indexes a document of this transaction made multikey, by `(collection ident, index
    /// ident)`, with a wildcard index's paths that became so.
    multikey: BTreeMap<(i64, i64), BTreeSet<String>>,
    /// The write's timestamp: pending (reads after it wait) until the transaction ends.
    time: PendingWrite,
    /// Statements run with the COMMIT, in the same round trip to the writer's thread.
    pub(super) deferred: Deferred,
    /// The multi-document transaction this transaction commits (its own document locks are
    /// no conflict); 0 for a plain write.
    pub(super) lock_owner: u64,
    /// A write met a document a transaction holds: the commit must fail too, even if the
    /// caller took that write's error for a per-statement error and went on.
    conflicted: bool,
    /// The records written and their before-images, for the history (appended at commit).
    notes: Vec<Note>,
    /// Collections this transaction created (a multi-document transaction's commit): in the
    /// catalog once it commits.
    created: Vec<CollectionMeta>,
}

/// Statements (each ending in `;`) and their parameters, in order.
#[derive(Default)]
pub(super) struct Deferred {
    sql: String,
    params: Vec<Owned>,
}

/// A parameter of a deferred statement.
pub(super) enum Owned {
    Int(i64),
    Blob(Vec<u8>),
}

impl Deferred {
    pub(super) fn push(&mut self, sql: &str, params: impl IntoIterator<Item = Owned>) {
        self.sql.push_str(sql);
        self.sql.push(';');
        self.params.extend(params);
    }
}

impl DocumentReads for WriteTxn<'_> {
    /// Inside the transaction, on the writer's connection.
    async fn run<T>(
        &mut self,
        q: ReadQuery<'_>,
        _expected_rows: i64,
        context: &str,
        decode: fn(&dyn ResultRow) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut query = sqlx::query(AssertSqlSafe(q.sql));
        for param in q.params {
            query = match param {
                Param::Int(v) => query.bind(v),
                Param::Blob(b) => query.bind(b),
            };
        }
        let rows = query
            .fetch_all(&mut self.writer.conn)
            .await
            .map_err(|e| sql_error(context, e))?;
        rows.iter().map(|row| decode(row)).collect()
    }
}

fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.kind() == sqlx::error::ErrorKind::UniqueViolation)
}

impl<'a> WriteTxn<'a> {
    /// How often queries used the indexes of the transaction's database.
    pub fn index_usage(&self) -> &'a super::IndexUsage {
        self.db.index_usage()
    }

    pub(super) async fn begin(
        db: &'a DatabaseStore,
        mut writer: tokio::sync::MutexGuard<'a, Writer>,
    ) -> Result<Self> {
        if writer.in_txn {
            writer
                .conn
                .execute("ROLLBACK")
                .await
                .map_err(|e| sql_error("rolling back an abandoned transaction", e))?;
            writer.in_txn = false;
        }
        writer
            .conn
            .execute("BEGIN IMMEDIATE")
            .await
            .map_err(|e| sql_error("starting a transaction", e))?;
        writer.in_txn = true;
        Ok(WriteTxn {
            db,
            time: db.clock.begin_write(),
            writer,
            deltas: BTreeMap::new(),
            deferred: Deferred::default(),
            multikey: BTreeMap::new(),
            lock_owner: 0,
            conflicted: false,
            notes: Vec::new(),
            created: Vec::new(),
        })
    }

    /// Creates the tables of `pending`, a collection a multi-document transaction created,
    /// under real idents; the collection as created (the catalog has it once this commits).
    /// WriteConflict if a collection of its name exists now.
    pub(super) async fn create_collection(
        &mut self,
        pending: &CollectionMeta,
    ) -> Result<Arc<CollectionMeta>> {
        if self.db.committed_collection(&pending.name).is_some() {
            return Err(write_conflict());
        }
        let ident = self.writer.next_ident;
        let mut meta = pending.clone();
        meta.ident = ident;
        for (index, next) in meta.indexes.iter_mut().zip(ident + 1..) {
            index.ident = next;
        }
        self.writer.next_ident = ident + 1 + meta.indexes.len() as i64;
        super::catalog::create_collection_tables(&mut self.writer.conn, &meta)
            .await
            .map_err(|e| sql_error("creating a collection", e))?;
        self.created.push(meta.clone());
        Ok(Arc::new(meta))
    }

    /// WriteConflict if a transaction other than the one this commits holds `doc`. A plain
    /// write must not wait for the lock here: it holds the writer, which the holder's commit
    /// needs. Costs one atomic load while no transaction holds any document.
    fn check_lock(&mut self, coll: &CollectionMeta, doc: &RawDocument) -> Result<()> {
        if !self.db.locks.any() {
            return Ok(());
        }
        let Some(key) = DocumentKeys::new(doc)
            .keys(coll.id_index())?
            .keys
            .into_iter()
            .next()
        else {
            return Ok(());
        };
        let key: DocKey = (coll.ident, key);
        if self.db.locks.held_by_other(&key, self.lock_owner) {
            self.conflicted = true;
            return Err(write_conflict());
        }
        Ok(())
    }

    pub fn database(&self) -> &DatabaseStore {
        self.db
    }

    /// The cluster time of this write: later than any this node had given or heard when the
    /// transaction began.
    pub fn time(&self) -> bson::Timestamp {
        self.time.time()
    }

    async fn next_rids(&mut self, coll: &CollectionMeta, n: usize) -> Result<RecordId> {
        let first = match self.writer.next_rid.get(&coll.ident) {
            Some(next) => *next,
            None => {
                let sql = format!("SELECT coalesce(max(rid), 0) + 1 FROM {}", coll.table());
                let row = sqlx::query(AssertSqlSafe(sql))
                    .fetch_one(&mut self.writer.conn)
                    .await
                    .map_err(|e| sql_error("allocating record ids", e))?;
                row.get::<i64, _>(0)
            }
        };
        self.writer.next_rid.insert(coll.ident, first + n as i64);
        Ok(first)
    }

    async fn exec(&mut self, sql: &str) -> Result<()> {
        self.writer
            .conn
            .execute(AssertSqlSafe(sql.to_string()))
            .await
            .map_err(|e| sql_error(sql, e))?;
        Ok(())
    }

    /// Index `index` of collection `coll` as the catalog records it: a collection this
    /// transaction created has it in its own entry.
    fn recorded_index(&self, coll: i64, index: i64) -> Option<IndexMeta> {
        let find = |meta: &CollectionMeta| meta.indexes.iter().find(|i| i.ident == index).cloned();
        let created = self.created.iter().find(|c| c.ident == coll);
        created
            .and_then(find)
            .or_else(|| find(&*self.db.collection_by_ident(coll)?))
    }

    /// The collection's current catalog entry: an index created since the caller looked the
    /// collection up must be maintained too (the writer lock orders this after its creation).
    fn current(&self, coll: &CollectionMeta) -> Arc<CollectionMeta> {
        self.db
            .collection_by_ident(coll.ident)
            .unwrap_or_else(|| Arc::new(coll.clone()))
    }

    /// The keys of `doc` in each of `indexes`, each with its type bits, noting indexes it
    /// makes multikey.
    fn keys_of(
        &mut self,
        coll_ident: i64,
        indexes: &[IndexMeta],
        doc: &RawDocument,
    ) -> Result<Vec<Vec<TypedKey>>> {
        let mut doc_keys = DocumentKeys::new(doc);
        let mut out = Vec::with_capacity(indexes.len());
        for index in indexes {
            let keys = doc_keys.keys(index)?;
            if let Some(paths) = index.new_multikey_paths(&keys) {
                let noted = self.multikey.entry((coll_ident, index.ident)).or_default();
                noted.extend(paths);
            }
            out.push(keys.keys.into_iter().zip(keys.types).collect());
        }
        Ok(out)
    }

    /// Inserts documents (each already carrying `_id`) in order. On the first failure, returns
    /// how many were inserted before it and the failure; nothing of the failing document stays.
    pub async fn insert(
        &mut self,
        coll: &CollectionMeta,
        docs: &[&RawDocument],
    ) -> std::result::Result<(), (usize, MongoError)> {
        let coll = self.current(coll);
        if self.db.locks.any() {
            // The documents before the first locked one are inserted, as a duplicate would
            // leave them.
            for (at, doc) in docs.iter().enumerate() {
                if let Err(e) = self.check_lock(&coll, doc) {
                    Box::pin(self.insert(&coll, &docs[..at])).await?;
                    return Err((at, e));
                }
            }
        }
        if coll.capped_limits().is_some() {
            // One at a time, each followed by the eviction it causes.
            for (done, doc) in docs.iter().enumerate() {
                self.insert_one(&coll, doc).await.map_err(|e| (done, e))?;
            }
            return Ok(());
        }
        let mut done = 0;
        for chunk in docs.chunks(INSERT_CHUNK) {
            match self.insert_chunk(&coll, chunk).await {
                Ok(()) => done += chunk.len(),
                Err(InsertError::Duplicate) => {
                    for doc in chunk {
                        self.insert_one(&coll, doc).await.map_err(|e| (done, e))?;
                        done += 1;
                    }
                }
                Err(InsertError::Other(e)) => return Err((done, e)),
            }
        }
        Ok(())
    }

    /// One multi-row statement per table, inside a savepoint so a duplicate undoes the chunk.
    async fn insert_chunk(
        &mut self,
        coll: &CollectionMeta,
        chunk: &[&RawDocument],
    ) -> std::result::Result<(), InsertError> {
        let first_rid = self.next_rids(coll, chunk.len()).await?;
        let rids = first_rid..first_rid + chunk.len() as i64;
        self.note_written(coll.ident, rids.clone());
        // Absent before: one note for the chunk, no copy.
        self.notes.push(Note {
            coll: coll.ident,
            rids,
            before: None,
        });
        let mut index_rows: Vec<Vec<(TypedKey, RecordId)>> = vec![Vec::new(); coll.indexes.len()];
        let mut bytes = 0i64;
        for (i, raw) in chunk.iter().enumerate() {
            let rid = first_rid + i as i64;
            bytes += raw.as_bytes().len() as i64;
            for (slot, keys) in self
                .keys_of(coll.ident, &coll.indexes, raw)?
                .into_iter()
                .enumerate()
            {
                index_rows[slot].extend(keys.into_iter().map(|key| (key, rid)));
            }
        }
        self.exec("SAVEPOINT insert_chunk").await?;
        let outcome = async {
            let sql = format!(
                "INSERT INTO {} (rid, doc) VALUES {}",
                coll.table(),
                placeholders(chunk.len(), 2)
            );
            let mut query = sqlx::query(AssertSqlSafe(sql));
            for (i, raw) in chunk.iter().enumerate() {
                query = query.bind(first_rid + i as i64).bind(raw.as_bytes());
            }
            query.execute(&mut self.writer.conn).await?;
            for (slot, index) in coll.indexes.iter().enumerate() {
                // Keys are moved into the statement: sqlx copies a borrowed blob.
                let mut rows = std::mem::take(&mut index_rows[slot]);
                while !rows.is_empty() {
                    let rest = rows.split_off(rows.len().min(INSERT_CHUNK));
                    let sql = format!(
                        "INSERT INTO {} (key, rid, type_bits) VALUES {}",
                        index.table(),
                        placeholders(rows.len(), 3)
                    );
                    let mut query = sqlx::query(AssertSqlSafe(sql));
                    for ((key, types), rid) in rows {
                        query = query.bind(key).bind(rid).bind(types);
                    }
                    query.execute(&mut self.writer.conn).await?;
                    rows = rest;
                }
            }
            Ok::<(), sqlx::Error>(())
        }
        .await;
        match outcome {
            Ok(()) => {
                self.exec("RELEASE insert_chunk").await?;
                let delta = self.deltas.entry(coll.ident).or_default();
                delta.count += chunk.len() as i64;
                delta.data_size += bytes;
                Ok(())
            }
            Err(e) => {
                self.exec("ROLLBACK TO insert_chunk").await?;
                self.exec("RELEASE insert_chunk").await?;
                // The record ids of the undone chunk are reused by the retry.
                self.writer.next_rid.insert(coll.ident, first_rid);
                if is_unique_violation(&e) {
                    Err(InsertError::Duplicate)
                } else {
                    Err(InsertError::Other(sql_error("inserting documents", e)))
                }
            }
        }
    }

    /// Inserts one document, reporting which unique index it collides with.
    pub async fn insert_one(
        &mut self,
        coll: &CollectionMeta,
        raw: &RawDocument,
    ) -> Result<RecordId> {
        let coll = self.current(coll);
        self.check_lock(&coll, raw)?;
        let capped = coll.capped_limits();
        if let Some(limits) = capped {
            Self::check_capped_size(limits, raw)?;
        }
        let rid = self.next_rids(&coll, 1).await?;
        self.exec("SAVEPOINT insert_one").await?;
        let result = self.insert_row(&coll, rid, raw).await;
        match result {
            Ok(()) => {
                self.exec("RELEASE insert_one").await?;
                let delta = self.deltas.entry(coll.ident).or_default();
                delta.count += 1;
                delta.data_size += raw.as_bytes().len() as i64;
                if let Some(limits) = capped {
                    self.evict_capped(&coll, limits).await?;
                }
                Ok(rid)
            }
            Err(e) => {
                self.exec("ROLLBACK TO insert_one").await?;
                self.exec("RELEASE insert_one").await?;
                self.writer.next_rid.insert(coll.ident, rid);
                Err(e)
            }
        }
    }

    async fn insert_row(
        &mut self,
        coll: &CollectionMeta,
        rid: RecordId,
        raw: &RawDocument,
    ) -> Result<()> {
        self.note_written(coll.ident, rid..rid + 1);
        self.notes.push(Note {
            coll: coll.ident,
            rids: rid..rid + 1,
            before: None,
        });
        let sql = format!("INSERT INTO {} (rid, doc) VALUES (?, ?)", coll.table());
        sqlx::query(AssertSqlSafe(sql))
            .bind(rid)
            .bind(raw.as_bytes())
            .execute(&mut self.writer.conn)
            .await
            .map_err(|e| sql_error("inserting a document", e))?;
        let keys = self.keys_of(coll.ident, &coll.indexes, raw)?;
        for (index, keys) in coll.indexes.iter().zip(keys) {
            for (key, types) in keys {
                self.insert_key(coll, index, (key, types), rid, raw).await?;
            }
        }
        Ok(())
    }

    async fn insert_key(
        &mut self,
        coll: &CollectionMeta,
        index: &IndexMeta,
        (key, types): (Vec<u8>, Vec<u8>),
        rid: RecordId,
        doc: &RawDocument,
    ) -> Result<()> {
        let sql = format!(
            "INSERT INTO {} (key, rid, type_bits) VALUES (?, ?, ?)",
            index.table()
        );
        match sqlx::query(AssertSqlSafe(sql))
            .bind(key)
            .bind(rid)
            .bind(types)
            .execute(&mut self.writer.conn)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_unique_violation(&e) => Err(duplicate_key_error(
                &format!("{}.{}", self.db.name(), coll.name),
                index,
                doc,
            )),
            Err(e) => Err(sql_error("inserting an index key", e)),
        }
    }

    /// Adds keys of an index being built (in key order), except those of documents written
    /// since the build began (`finish_index_build` indexes those); a key already present was
    /// added by its document's own write. A unique index holding a key for another document is
    /// a duplicate.
    pub(super) async fn add_built_keys(
        &mut self,
        coll: &CollectionMeta,
        index: &IndexMeta,
        keys: &[BuiltKey],
    ) -> Result<()> {
        let written = self
            .writer
            .index_builds
            .iter()
            .find(|b| b.index == index.ident)
            .map(|b| &b.written);
        let keys: Vec<&BuiltKey> = keys
            .iter()
            .filter(|(_, rid, _)| written.is_none_or(|w| !w.contains(rid)))
            .collect();
        for rows in keys.chunks(INSERT_CHUNK) {
            let sql = format!(
                "INSERT INTO {} (key, rid, type_bits) VALUES {} ON CONFLICT DO NOTHING",
                index.table(),
                placeholders(rows.len(), 3)
            );
            let mut query = sqlx::query(AssertSqlSafe(sql));
            for (key, rid, types) in rows {
                query = query.bind(key.as_slice()).bind(*rid).bind(types.as_slice());
            }
            let inserted = query
                .execute(&mut self.writer.conn)
                .await
                .map_err(|e| sql_error("building an index", e))?
                .rows_affected();
            if inserted < rows.len() as u64 && index.is_unique() {
                for (key, rid, _) in rows {
                    self.check_unique_holder(coll, index, key, *rid).await?;
                }
            }
        }
        Ok(())
    }

    /// Ends `index`'s build: the documents written during it are indexed from their current
    /// content, and the index becomes multikey (at `multikey`'s paths for a wildcard index) if
    /// a document the build read made it so (`multikey` is then `Some`).
    pub(super) async fn finish_index_build(
        &mut self,
        coll: &CollectionMeta,
        index: &IndexMeta,
        multikey: Option<BTreeSet<String>>,
    ) -> Result<()> {
        let Some(at) = self
            .writer
            .index_builds
            .iter()
            .position(|b| b.index == index.ident)
        else {
            return Err(MongoError::internal("an index build lost its bookkeeping"));
        };
        let build = self.writer.index_builds.swap_remove(at);
        let mut written: Vec<RecordId> = build.written.into_iter().collect();
        written.sort_unstable();
        for rid in written {
            let Some(doc) = self.fetch_by_rid(coll, rid).await? else {
                continue;
            };
            let keys = self.keys_of(coll.ident, std::slice::from_ref(index), &doc)?;
            let keys: Vec<BuiltKey> = keys
                .into_iter()
                .flatten()
                .map(|(key, types)| (key, rid, types))
                .collect();
            self.add_built_keys(coll, index, &keys).await?;
        }
        if let Some(paths) = multikey {
            let noted = self.multikey.entry((coll.ident, index.ident)).or_default();
            noted.extend(paths);
        }
        Ok(())
    }

    /// Fails with DuplicateKey if the unique `index` holds `key` for another document than
    /// `rid`.
    async fn check_unique_holder(
        &mut self,
        coll: &CollectionMeta,
        index: &IndexMeta,
        key: &[u8],
        rid: RecordId,
    ) -> Result<()> {
        let sql = format!("SELECT rid FROM {} WHERE key = ?", index.table());
        let holder: Option<i64> = sqlx::query(AssertSqlSafe(sql))
            .bind(key)
            .fetch_optional(&mut self.writer.conn)
            .await
            .map_err(|e| sql_error("building an index", e))?
            .map(|row| row.get(0));
        if holder.is_none_or(|holder| holder == rid) {
            return Ok(());
        }
        let doc = self
            .fetch_by_rid(coll, rid)
            .await?
            .ok_or_else(|| MongoError::internal("an indexed document vanished"))?;
        Err(duplicate_key_error(
            &format!("{}.{}", self.db.name(), coll.name),
            index,
            &doc,
        ))
    }

    /// Notes record ids written for the index builds of `coll` that cover them.
    fn note_written(&mut self, coll: i64, rids: std::ops::Range<RecordId>) {
        for build in self.writer.index_builds.iter_mut() {
            if build.collection == coll {
                build
                    .written
                    .extend(rids.start..rids.end.min(build.last_rid + 1));
            }
        }
    }

    /// Notes `old` as the before-image of record `rid` for the history (the one copy a
    /// replacement or deletion costs it). Noted before the write: a write that then fails
    /// leaves the record as noted, which the history tolerates.
    fn note_before(&mut self, coll: i64, rid: RecordId, old: &RawDocument) {
        self.notes.push(Note {
            coll,
            rids: rid..rid + 1,
            before: Some(old.to_owned()),
        });
    }

    async fn delete_key(&mut self, index: &IndexMeta, key: &[u8], rid: RecordId) -> Result<()> {
        let sql = format!("DELETE FROM {} WHERE key = ? AND rid = ?", index.table());
        sqlx::query(AssertSqlSafe(sql))
            .bind(key)
            .bind(rid)
            .execute(&mut self.writer.conn)
            .await
            .map_err(|e| sql_error("deleting an index key", e))?;
        Ok(())
    }

    async fn set_type_bits(
        &mut self,
        index: &IndexMeta,
        key: &[u8],
        rid: RecordId,
        types: &[u8],
    ) -> Result<()> {
        let sql = format!(
            "UPDATE {} SET type_bits = ? WHERE key = ? AND rid = ?",
            index.table()
        );
        sqlx::query(AssertSqlSafe(sql))
            .bind(types)
            .bind(key)
            .bind(rid)
            .execute(&mut self.writer.conn)
            .await
            .map_err(|e| sql_error("updating an index entry's type bits", e))?;
        Ok(())
    }

    /// Replaces the document at `rid`, moving its index entries from `old`'s keys to `new`'s.
    pub async fn replace(
        &mut self,
        coll: &CollectionMeta,
        rid: RecordId,
        old: &RawDocument,
        new: &RawDocument,
    ) -> Result<()> {
        let coll = self.current(coll);
        self.check_lock(&coll, old)?;
        self.note_written(coll.ident, rid..rid + 1);
        self.note_before(coll.ident, rid, old);
        self.exec("SAVEPOINT replace_one").await?;
        let result = async {
            let sql = format!("UPDATE {} SET doc = ? WHERE rid = ?", coll.table());
            sqlx::query(AssertSqlSafe(sql))
                .bind(new.as_bytes())
                .bind(rid)
                .execute(&mut self.writer.conn)
                .await
                .map_err(|e| sql_error("replacing a document", e))?;
            let old_keys = self.keys_of(coll.ident, &coll.indexes, old)?;
            let new_keys = self.keys_of(coll.ident, &coll.indexes, new)?;
            for ((index, old_keys), new_keys) in coll.indexes.iter().zip(old_keys).zip(new_keys) {
                let old_types: BTreeMap<&[u8], &[u8]> = old_keys
                    .iter()
                    .map(|(k, t)| (k.as_slice(), t.as_slice()))
                    .collect();
                for (key, _) in &old_keys {
                    if !new_keys.iter().any(|(k, _)| k == key) {
                        self.delete_key(index, key, rid).await?;
                    }
                }
                for (key, types) in new_keys {
                    match old_types.get(key.as_slice()) {
                        None => {
                            self.insert_key(&coll, index, (key, types), rid, new)
                                .await?
                        }
                        // The same key, other types (`1` became `1.0`): only the type bits change.
                        Some(old) if *old != types.as_slice() => {
                            self.set_type_bits(index, &key, rid, &types).await?
                        }
                        Some(_) => {}
                    }
                }
            }
            Ok(())
        }
        .await;
        match result {
            Ok(()) => {
                self.exec("RELEASE replace_one").await?;
                self.deltas.entry(coll.ident).or_default().data_size +=
                    new.as_bytes().len() as i64 - old.as_bytes().len() as i64;
                Ok(())
            }
            Err(e) => {
                self.exec("ROLLBACK TO replace_one").await?;
                self.exec("RELEASE replace_one").await?;
                Err(e)
            }
        }
    }

    /// Deletes the document at `rid` (whose current content is `old`) and its index entries.
    pub async fn delete(
        &mut self,
        coll: &CollectionMeta,
        rid: RecordId,
        old: &RawDocument,
    ) -> Result<()> {
        let coll = self.current(coll);
        self.check_lock(&coll, old)?;
        self.note_written(coll.ident, rid..rid + 1);
        self.note_before(coll.ident, rid, old);
        let sql = format!("DELETE FROM {} WHERE rid = ?", coll.table());
        sqlx::query(AssertSqlSafe(sql))
            .bind(rid)
            .execute(&mut self.writer.conn)
            .await
            .map_err(|e| sql_error("deleting a document", e))?;
        let keys = self.keys_of(coll.ident, &coll.indexes, old)?;
        for (index, keys) in coll.indexes.iter().zip(keys) {
            for (key, _) in keys {
                self.delete_key(index, &key, rid).await?;
            }
        }
        let delta = self.deltas.entry(coll.ident).or_default();
        delta.count -= 1;
        delta.data_size -= old.as_bytes().len() as i64;
        Ok(())
    }

    /// The collection's statistics including this transaction's changes.
    pub fn collection_stats(&self, coll: &CollectionMeta) -> CollectionStats {
        let committed = self.db.stats(coll);
        let delta = self.deltas.get(&coll.ident).copied().unwrap_or_default();
        CollectionStats {
            count: committed.count + delta.count,
            data_size: committed.data_size + delta.data_size,
        }
    }

    /// Commits; the returned number identifies the commit for [`DatabaseStore::wait_durable`].
    pub async fn commit(mut self) -> Result<u64> {
        if self.conflicted {
            self.rollback().await?;
            return Err(write_conflict());
        }
        // Every statement the commit needs runs with it in one round trip to the writer's
        // thread (sqlx runs SQLite on a thread of its own, and each hop costs as much as a
        // small statement): the statistics, multikey flags, the clock's second, the deferred
        // records and the COMMIT.
        let mut batch = std::mem::take(&mut self.deferred);
        let deltas = std::mem::take(&mut self.deltas);
        for (ident, delta) in &deltas {
            batch.push(
                "UPDATE docgrid_collections SET doc_count = doc_count + ?, data_size = data_size + ? WHERE ident = ?",
                [Owned::Int(delta.count), Owned::Int(delta.data_size), Owned::Int(*ident)],
            );
        }
        let multikey = std::mem::take(&mut self.multikey);
        for ((coll, index), paths) in &multikey {
            // The paths recorded before with these: the writer orders every commit, so the
            // catalog's are the latest.
            let all = match self.recorded_index(*coll, *index) {
                Some(mut recorded) => {
                    recorded.add_multikey_paths(paths);
                    recorded.multikey_paths
                }
                None => Arc::new(paths.clone()),
            };
            batch.push(
                "UPDATE docgrid_indexes SET multikey = 1, multikey_paths = ? WHERE ident = ?",
                [Owned::Blob(multikey_paths_blob(&all)?), Owned::Int(*index)],
            );
        }
        // Marked before the commit makes the keys visible: a covered scan that reads an array's
        // keys then finds the index multikey and reads the documents instead.
        for ((coll, index), paths) in &multikey {
            self.db.mark_multikey(*coll, *index, paths);
        }
        // The first write of each second records it, so a restart's clock starts after it.
        let seconds = self.time.time().time;
        let recorded = &self.db.clock_seconds;
        let records_second = seconds > recorded.load(std::sync::atomic::Ordering::Acquire);
        if records_second {
            batch.push(
                "INSERT OR REPLACE INTO docgrid_clock (id, seconds) VALUES (1, ?)",
                [Owned::Int(i64::from(seconds))],
            );
        }
        // The history has this transaction's before-images before any snapshot can see its
        // writes (`history`: harmless if the COMMIT then fails).
        // What the migrations watching these collections must resend, noted once committed.
        let watched = self.db.range_watches.collect(&self.notes);
        if !self.notes.is_empty() {
            let notes = std::mem::take(&mut self.notes);
            self.db
                .history
                .append(self.time(), notes, self.db.clock.now());
        }
        batch.sql.push_str("COMMIT");
        let mut query = sqlx::query(AssertSqlSafe(batch.sql));
        for param in &batch.params {
            query = match param {
                Owned::Int(v) => query.bind(*v),
                Owned::Blob(b) => query.bind(b.as_slice()),
            };
        }
        query
            .execute(&mut self.writer.conn)
            .await
            .map_err(|e| sql_error("committing", e))?;
        self.writer.in_txn = false;
        for (watch, captured) in watched {
            watch.add(captured);
        }
        if records_second {
            recorded.fetch_max(seconds, std::sync::atomic::Ordering::AcqRel);
        }
        for mut meta in std::mem::take(&mut self.created) {
            for index in meta.indexes.iter_mut() {
                if let Some(paths) = multikey.get(&(meta.ident, index.ident)) {
                    index.add_multikey_paths(paths);
                }
            }
            self.db.add_to_catalog(Arc::new(meta));
        }
        let seq = self.db.durability.committed();
        let mut stats = self.db.stats.lock().expect("poisoned");
        for (ident, delta) in deltas {
            let entry = stats.entry(ident).or_default();
            entry.count += delta.count;
            entry.data_size += delta.data_size;
        }
        Ok(seq)
    }

    /// A COMMIT failing after the history took the transaction's notes, for the tests of
    /// the history's tolerance of them.
    #[cfg(test)]
    pub(super) async fn append_history_and_roll_back(mut self) -> Result<()> {
        let notes = std::mem::take(&mut self.notes);
        self.db
            .history
            .append(self.time(), notes, self.db.clock.now());
        self.rollback().await
    }

    /// Abandons every change of this transaction.
    pub async fn rollback(mut self) -> Result<()> {
        self.exec("ROLLBACK").await?;
        self.writer.in_txn = false;
        // Record ids handed out in this transaction may be reused.
        self.writer.next_rid.clear();
        Ok(())
    }
}

impl DatabaseStore {
    /// Waits until commit `seq` is on disk (for `j: true` and `w: "majority"`).
    pub async fn wait_durable(&self, seq: u64) -> Result<()> {
        self.durability.wait_durable(seq).await
    }

    /// How many fsyncs `j: true` writes have cost this database so far.
    pub fn fsyncs(&self) -> u64 {
        self.durability.fsyncs()
    }
}

enum InsertError {
    Duplicate,
    Other(MongoError),
}

impl From<MongoError> for InsertError {
    fn from(e: MongoError) -> Self {
        InsertError::Other(e)
    }
}

/// `rows` groups of `columns` placeholders: `(?,?),(?,?)`.
pub(super) fn placeholders(rows: usize, columns: usize) -> String {
    let row = format!("({})", vec!["?"; columns].join(","));
    vec![row; rows].join(",")
}
