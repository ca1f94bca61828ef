//! A multi-document transaction's view of one database file: a reader pinned to the SQLite
//! snapshot of the transaction's first use of the file, and the transaction's own writes held
//! in memory over it (the writer is taken only at commit, so a transaction never holds it).
//! Every read merges the two; every write takes the document's lock (first writer wins) and
//! checks the document has not changed since the snapshot. A view reading at a cluster time
//! has a base layer under the writes: the history's before-images of the records changed
//! since that time (`history`), merged by every read as the writes are, never applied.

use super::catalog::{CollectionMeta, IndexMeta};
use super::database::DatabaseStore;
use super::doc_locks::{DocKey, namespace_key, write_conflict};
use super::keys::{DocumentKeys, duplicate_key_error};
use super::read_sql::{
    self, DocumentReads, IndexEntry, IndexRange, IndexRanges, KeyEntry, ReadQuery, RecordId,
    ResultRow, just_after,
};
use super::readers::Reader;
use super::transaction::{created_in, is_pending};
use super::txn::WriteTxn;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{RawDocument, RawDocumentBuf};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::sync::Arc;

/// Record ids of documents a transaction inserts, until its commit gives them real ones: above
/// every real record id, so that record-order scans return them last, as they will be.
pub(super) const TEMP_RID: RecordId = 1 << 62;

pub struct TxnView {
    db: Arc<DatabaseStore>,
    txn: u64,
    snapshot: Reader,
    /// The tables the snapshot has: a collection created since reads as empty, an index built
    /// since cannot be read.
    tables: HashSet<String>,
    colls: BTreeMap<i64, Overlay>,
    /// The snapshot's version of every document this transaction wrote (by `_id`), as the
    /// commit must still find it.
    bases: BTreeMap<DocKey, Option<(RecordId, RawDocumentBuf)>>,
    next_temp: RecordId,
    /// This view took a document lock: dropping it releases the transaction's locks here (a
    /// view that took none, such as a duplicate a concurrent first use discarded, must not
    /// release those of the view that did).
    locked: bool,
    /// The transaction's record of the indexes its writes made multikey.
    multikey: Arc<super::transaction::Multikey>,
    /// The collections the transaction created (in every database).
    created: Arc<super::transaction::Created>,
}

/// An index entry's position: key and record id.
type Position = (Vec<u8>, RecordId);

/// The entries of the written documents in one index: position -> type bits.
type Entries = BTreeMap<Position, Vec<u8>>;

/// One collection's writes.
#[derive(Default)]
struct Overlay {
    /// Every written record: its current version (`None`: deleted) and `_id` key.
    docs: BTreeMap<RecordId, (Vec<u8>, Option<RawDocumentBuf>)>,
    /// The records of the present (not deleted) written documents, by `_id` key.
    ids: HashMap<Vec<u8>, RecordId>,
    /// The present written documents' entries per index ident, built when first needed:
    /// `(key, rid) -> type bits`.
    entries: HashMap<i64, (IndexMeta, Entries)>,
    /// Records of `docs` that hold the history's version (a read at a past time), not a
    /// write of this transaction: the base layer under its writes, which reads merge like
    /// writes and the commit does not apply.
    history: HashSet<RecordId>,
}

/// One written record as the commit applies it.
pub(super) enum Op {
    Insert(RawDocumentBuf),
    Replace(RecordId, RawDocumentBuf, RawDocumentBuf),
    Delete(RecordId, RawDocumentBuf),
}

fn id_key_of(coll: &CollectionMeta, doc: &RawDocument) -> Result<Vec<u8>> {
    DocumentKeys::new(doc)
        .keys(coll.id_index())?
        .keys
        .into_iter()
        .next()
        .ok_or_else(|| MongoError::internal("a document without an _id key"))
}

fn same(a: &Option<(RecordId, RawDocumentBuf)>, b: &Option<(RecordId, RawDocumentBuf)>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some((ra, da)), Some((rb, db))) => ra == rb && da.as_bytes() == db.as_bytes(),
        _ => false,
    }
}

/// An overlay document's entries in one index: `(key, rid) -> type bits`.
fn entries_of(
    index: &IndexMeta,
    rid: RecordId,
    doc: &RawDocument,
) -> Result<Vec<(Position, Vec<u8>)>> {
    let keys = DocumentKeys::new(doc).keys(index)?;
    Ok(keys
        .keys
        .into_iter()
        .zip(keys.types)
        .map(|(key, types)| ((key, rid), types))
        .collect())
}

/// What an index read returns besides key and record id.
enum Payload {
    Doc(RawDocumentBuf),
    Types(Option<Vec<u8>>),
}

impl Overlay {
    /// The entries of `index`, built from the written documents on first use.
    fn entries(&mut self, index: &IndexMeta) -> Result<&Entries> {
        if !self.entries.contains_key(&index.ident) {
            let mut map = BTreeMap::new();
            for (rid, (_, doc)) in &self.docs {
                if let Some(doc) = doc {
                    map.extend(entries_of(index, *rid, doc)?);
                }
            }
            self.entries.insert(index.ident, (index.clone(), map));
        }
        Ok(&self.entries[&index.ident].1)
    }

    /// Records `doc` (`None`: deleted) as the current version of `rid`.
    fn put(&mut self, rid: RecordId, id_key: Vec<u8>, doc: Option<RawDocumentBuf>) -> Result<()> {
        let previous = self.docs.get(&rid).and_then(|(_, d)| d.clone());
        for (index, entries) in self.entries.values_mut() {
            if let Some(previous) = &previous {
                for (entry, _) in entries_of(index, rid, previous)? {
                    entries.remove(&entry);
                }
            }
            if let Some(doc) = &doc {
                entries.extend(entries_of(index, rid, doc)?);
            }
        }
        if previous.is_some() && self.ids.get(&id_key) == Some(&rid) {
            self.ids.remove(&id_key);
        }
        if doc.is_some() {
            self.ids.insert(id_key.clone(), rid);
        }
        self.docs.insert(rid, (id_key, doc));
        self.history.remove(&rid);
        Ok(())
    }
}

impl TxnView {
    /// Pins a snapshot of `db` for transaction `txn`.
    /// Pins a snapshot of `db` for transaction `txn`; reading as of cluster time `at` if
    /// given (SnapshotTooOld if the history no longer reaches it).
    pub(super) async fn open(
        db: Arc<DatabaseStore>,
        txn: u64,
        multikey: Arc<super::transaction::Multikey>,
        created: Arc<super::transaction::Created>,
        at: Option<bson::Timestamp>,
    ) -> Result<TxnView> {
        let mut snapshot = db.snapshot_reader().await?;
        let tables = snapshot.pin(read_sql::tables(), read_sql::name)?;
        let mut view = TxnView {
            db,
            txn,
            snapshot,
            tables: tables.into_iter().collect(),
            colls: BTreeMap::new(),
            bases: BTreeMap::new(),
            next_temp: TEMP_RID,
            locked: false,
            multikey,
            created,
        };
        if let Some(at) = at {
            // Read after the pin: every commit the snapshot sees has its entries there.
            let as_of = view.db.history.as_of(at, view.db.clock.now())?;
            for (ident, records) in as_of {
                // A collection dropped since reads as dropped (the catalog has no history).
                let Some(coll) = view.db.collection_by_ident(ident) else {
                    continue;
                };
                let overlay = view.colls.entry(ident).or_default();
                for (rid, before) in records {
                    // An absent record's `_id` key is never looked up: nothing can write it
                    // (an insert takes a temporary record id).
                    let id_key = match &before {
                        Some(doc) => id_key_of(&coll, doc)?,
                        None => Vec::new(),
                    };
                    overlay.put(rid, id_key, before)?;
                    overlay.history.insert(rid);
                }
            }
        }
        Ok(view)
    }

    pub fn database(&self) -> &DatabaseStore {
        &self.db
    }

    pub(super) fn database_arc(&self) -> &Arc<DatabaseStore> {
        &self.db
    }

    /// How often queries used the indexes of the view's database.
    pub fn index_usage(&self) -> &super::IndexUsage {
        self.db.index_usage()
    }

    /// The node clock's current time (the commit's write takes its own).
    pub fn time(&self) -> bson::Timestamp {
        self.db.clock.now()
    }

    /// The collections (idents) the transaction wrote here.
    pub(super) fn written_collections(&self) -> impl Iterator<Item = i64> + '_ {
        self.colls.keys().copied()
    }

    /// Whether the transaction wrote anything here.
    pub fn has_writes(&self) -> bool {
        !self.bases.is_empty()
    }

    fn in_snapshot(&self, table: &str) -> bool {
        self.tables.contains(table)
    }

    /// The snapshot's document with `_id` key `key`, ignoring this transaction's writes.
    async fn snapshot_by_id(
        &mut self,
        coll: &CollectionMeta,
        key: &[u8],
    ) -> Result<Option<(RecordId, RawDocumentBuf)>> {
        if !self.in_snapshot(&coll.table()) {
            return Ok(None);
        }
        self.snapshot.fetch_by_id_key(coll, key).await
    }

    /// The collection's current catalog entry (indexes built since the caller looked).
    fn current(&self, coll: &CollectionMeta) -> Arc<CollectionMeta> {
        self.db
            .collection_by_ident(coll.ident)
            .unwrap_or_else(|| Arc::new(coll.clone()))
    }

    fn refuse_capped(&self, coll: &CollectionMeta) -> Result<()> {
        if coll.capped_limits().is_none() {
            return Ok(());
        }
        Err(MongoError::new(
            ErrorCode::OperationNotSupportedInTransaction,
            format!(
                "Collection '{}.{}' is a capped collection. Writes in transactions are not allowed on capped collections.",
                self.db.name(),
                coll.name
            ),
        ))
    }

    /// Takes the document's lock for this transaction and checks that the latest committed
    /// version is still the snapshot's; on the first write of the document only.
    async fn lock(&mut self, coll: &CollectionMeta, id_key: &[u8]) -> Result<()> {
        let key: DocKey = (coll.ident, id_key.to_vec());
        if self.bases.contains_key(&key) {
            return Ok(());
        }
        if !self.db.locks.lock(&key, self.txn) {
            return Err(write_conflict());
        }
        self.locked = true;
        // The version this transaction reads (as of its time when reading at one): a document
        // changed since is a conflict, as in MongoDB.
        let base = self.fetch_by_id_key(coll, id_key).await?;
        // A collection the transaction created has no table yet, nor anyone else's writes.
        let latest = if is_pending(coll) {
            None
        } else {
            self.db
                .plain_reader()
                .await?
                .fetch_by_id_key(coll, id_key)
                .await?
        };
        // The lock stays taken: the transaction is to abort, which releases it.
        if !same(&base, &latest) {
            return Err(write_conflict());
        }
        self.bases.insert(key, base);
        Ok(())
    }

    /// Takes collection name `name` for the transaction creating it: WriteConflict if another
    /// transaction creates it.
    pub(super) fn lock_namespace(&mut self, name: &str) -> Result<()> {
        if !self.db.locks.lock(&namespace_key(name), self.txn) {
            return Err(write_conflict());
        }
        self.locked = true;
        Ok(())
    }

    /// Adds `index` to `coll`, a collection the transaction created, over the documents it
    /// wrote there: DuplicateKey if the index is unique and a key repeats.
    pub(super) fn add_index(&mut self, coll: &CollectionMeta, index: &IndexMeta) -> Result<()> {
        let Some(overlay) = self.colls.get_mut(&coll.ident) else {
            return Ok(());
        };
        let entries = overlay.entries(index)?;
        if index.is_unique() {
            let repeated = entries
                .keys()
                .zip(entries.keys().skip(1))
                .find(|(a, b)| a.0 == b.0)
                .map(|(_, (_, rid))| *rid);
            if let Some(rid) = repeated {
                let doc = overlay.docs[&rid]
                    .1
                    .clone()
                    .expect("present documents only");
                return Err(duplicate_key_error(
                    &format!("{}.{}", self.db.name(), coll.name),
                    index,
                    &doc,
                ));
            }
        }
        let docs: Vec<RawDocumentBuf> = overlay
            .docs
            .values()
            .filter_map(|(_, d)| d.clone())
            .collect();
        for doc in docs {
            self.note_multikey(coll, &doc)?;
        }
        Ok(())
    }

    /// Notes the indexes `doc` makes multikey (the commit's write records them).
    fn note_multikey(&self, coll: &CollectionMeta, doc: &RawDocument) -> Result<()> {
        let mut keys = DocumentKeys::new(doc);
        // A wildcard index may still gain paths once multikey.
        let open = |i: &&IndexMeta| !i.multikey || i.is_wildcard();
        for index in coll.indexes.iter().filter(open) {
            if let Some(paths) = index.new_multikey_paths(&keys.keys(index)?) {
                let mut noted = self.multikey.lock().expect("poisoned");
                let key = (self.db.name().to_string(), coll.ident, index.ident);
                noted.entry(key).or_default().extend(paths);
            }
        }
        Ok(())
    }

    /// DuplicateKey if a unique index holds one of `doc`'s keys for another record than
    /// `rid`, in the snapshot or in this transaction's writes.
    async fn check_unique(
        &mut self,
        coll: &CollectionMeta,
        rid: Option<RecordId>,
        doc: &RawDocument,
    ) -> Result<()> {
        for index in coll.indexes.iter().filter(|i| i.is_unique()) {
            let keys = DocumentKeys::new(doc).keys(index)?.keys;
            for key in keys {
                let overlay = self.colls.entry(coll.ident).or_default();
                let held = overlay
                    .entries(index)?
                    .range((key.clone(), RecordId::MIN)..=(key.clone(), RecordId::MAX))
                    .any(|((_, holder), _)| Some(*holder) != rid);
                let held = held || {
                    if self.tables.contains(&index.table()) {
                        let high = just_after(&key);
                        let range = IndexRange {
                            index,
                            low: &key,
                            high: Some(&high),
                            resume: None,
                            reverse: false,
                            limit: i64::MAX,
                        };
                        let rows = self.snapshot.index_keys(&range).await?;
                        let written = &self.colls[&coll.ident].docs;
                        rows.iter().any(|(_, holder, _)| {
                            Some(*holder) != rid && !written.contains_key(holder)
                        })
                    } else {
                        false
                    }
                };
                if held {
                    return Err(duplicate_key_error(
                        &format!("{}.{}", self.db.name(), coll.name),
                        index,
                        doc,
                    ));
                }
            }
        }
        Ok(())
    }

    /// Inserts documents (each already carrying `_id`) in order; on the first failure, how
    /// many were inserted before it and the failure.
    pub async fn insert(
        &mut self,
        coll: &CollectionMeta,
        docs: &[&RawDocument],
    ) -> std::result::Result<(), (usize, MongoError)> {
        for (done, doc) in docs.iter().enumerate() {
            self.insert_one(coll, doc).await.map_err(|e| (done, e))?;
        }
        Ok(())
    }

    /// Inserts one document; its record id is temporary until the commit.
    pub async fn insert_one(
        &mut self,
        coll: &CollectionMeta,
        raw: &RawDocument,
    ) -> Result<RecordId> {
        let coll = self.current(coll);
        self.refuse_capped(&coll)?;
        let id_key = id_key_of(&coll, raw)?;
        self.check_unique(&coll, None, raw).await?;
        self.lock(&coll, &id_key).await?;
        self.note_multikey(&coll, raw)?;
        let rid = self.next_temp;
        self.next_temp += 1;
        self.colls
            .entry(coll.ident)
            .or_default()
            .put(rid, id_key, Some(raw.to_owned()))?;
        Ok(rid)
    }

    /// Replaces the document at `rid` (whose current content is `old`) by `new`.
    pub async fn replace(
        &mut self,
        coll: &CollectionMeta,
        rid: RecordId,
        old: &RawDocument,
        new: &RawDocument,
    ) -> Result<()> {
        let coll = self.current(coll);
        self.refuse_capped(&coll)?;
        let id_key = id_key_of(&coll, old)?;
        self.check_unique(&coll, Some(rid), new).await?;
        self.lock(&coll, &id_key).await?;
        self.note_multikey(&coll, new)?;
        self.colls
            .entry(coll.ident)
            .or_default()
            .put(rid, id_key, Some(new.to_owned()))
    }

    /// Deletes the document at `rid` (whose current content is `old`).
    pub async fn delete(
        &mut self,
        coll: &CollectionMeta,
        rid: RecordId,
        old: &RawDocument,
    ) -> Result<()> {
        let coll = self.current(coll);
        self.refuse_capped(&coll)?;
        let id_key = id_key_of(&coll, old)?;
        self.lock(&coll, &id_key).await?;
        self.colls
            .entry(coll.ident)
            .or_default()
            .put(rid, id_key, None)
    }

    /// Records a prepared transaction's write after a restart: the lock is taken again (no
    /// other transaction can hold it yet) and the base is the latest committed version, which
    /// the prepared transaction's locks kept as it was.
    pub(super) async fn restore(
        &mut self,
        coll: &CollectionMeta,
        id_key: Vec<u8>,
        doc: Option<RawDocumentBuf>,
    ) -> Result<()> {
        let key: DocKey = (coll.ident, id_key.clone());
        if !self.db.locks.lock(&key, self.txn) {
            return Err(write_conflict());
        }
        self.locked = true;
        let base = self.snapshot_by_id(coll, &id_key).await?;
        let overlay = self.colls.entry(coll.ident).or_default();
        // A document deleted and inserted again is the snapshot's record, then a new one.
        let rid = match &base {
            Some((rid, _)) if !overlay.docs.contains_key(rid) => *rid,
            _ => {
                self.next_temp += 1;
                self.next_temp - 1
            }
        };
        self.bases.entry(key).or_insert(base);
        self.colls
            .entry(coll.ident)
            .or_default()
            .put(rid, id_key, doc)
    }

    /// WriteConflict unless every document written still has its snapshot version, as `txn`
    /// (holding the writer) reads it.
    pub(super) async fn validate(&mut self, txn: &mut WriteTxn<'_>) -> Result<()> {
        for ((ident, id_key), base) in &self.bases {
            let latest = match self.db.collection_by_ident(*ident) {
                Some(coll) => txn.fetch_by_id_key(&coll, id_key).await?,
                None => None,
            };
            if !same(base, &latest) {
                return Err(write_conflict());
            }
        }
        Ok(())
    }

    /// The writes as the commit applies them, per collection: deletes, then replacements,
    /// then inserts (a document deleted and inserted again with its `_id` is deleted first).
    /// `created`: the collections the commit created, by the idents the transaction gave them.
    pub(super) fn ops(
        &self,
        created: &HashMap<i64, Arc<CollectionMeta>>,
    ) -> Result<Vec<(Arc<CollectionMeta>, Vec<Op>)>> {
        let mut out = Vec::new();
        for (ident, overlay) in &self.colls {
            let coll = match created.get(ident) {
                Some(coll) => coll.clone(),
                None => self
                    .db
                    .collection_by_ident(*ident)
                    .ok_or_else(write_conflict)?,
            };
            let mut ops = Vec::new();
            for (rid, (id_key, doc)) in &overlay.docs {
                if overlay.history.contains(rid) {
                    continue;
                }
                let base = || match self.bases.get(&(*ident, id_key.clone())) {
                    Some(Some((base_rid, base))) if base_rid == rid => Ok(base.clone()),
                    _ => Err(MongoError::internal(
                        "a transaction's write lost its snapshot version",
                    )),
                };
                match (doc, *rid >= TEMP_RID) {
                    (Some(doc), true) => ops.push(Op::Insert(doc.clone())),
                    (None, true) => {}
                    (Some(doc), false) => ops.push(Op::Replace(*rid, base()?, doc.clone())),
                    (None, false) => ops.push(Op::Delete(*rid, base()?)),
                }
            }
            ops.sort_by_key(|op| match op {
                Op::Delete(..) => 0,
                Op::Replace(..) => 1,
                Op::Insert(..) => 2,
            });
            out.push((coll, ops));
        }
        Ok(out)
    }

    /// The index keys the writes add or remove, as `(index ident, key)`: what a prepared
    /// transaction's plain readers must not read past.
    pub(super) fn index_keys_written(&self) -> Result<Vec<(i64, Vec<u8>)>> {
        let mut out = Vec::new();
        for (ident, overlay) in &self.colls {
            let Some(coll) = self.db.collection_by_ident(*ident) else {
                continue;
            };
            for (rid, (id_key, doc)) in &overlay.docs {
                if overlay.history.contains(rid) {
                    continue;
                }
                let base = self.bases.get(&(*ident, id_key.clone()));
                let base = base
                    .and_then(|b| b.as_ref())
                    .filter(|(base_rid, _)| base_rid == rid)
                    .map(|(_, d)| d);
                for version in [base, doc.as_ref()].into_iter().flatten() {
                    let mut keys = DocumentKeys::new(version);
                    for index in &coll.indexes {
                        out.extend(keys.keys(index)?.keys.into_iter().map(|k| (index.ident, k)));
                    }
                }
            }
        }
        Ok(out)
    }

    /// The snapshot's index entries in `range` that this transaction did not rewrite, read
    /// until `range.limit` of them are found or the index ends; with whether it ended and the
    /// last position read.
    async fn snapshot_entries(
        &mut self,
        coll: &CollectionMeta,
        range: &IndexRange<'_>,
        with_docs: bool,
    ) -> Result<(
        Vec<(Vec<u8>, RecordId, Payload)>,
        Option<(Vec<u8>, RecordId)>,
        bool,
    )> {
        let mut rows = Vec::new();
        if !self.in_snapshot(&range.index.table()) {
            if self.in_snapshot(&coll.table()) {
                return Err(MongoError::new(
                    ErrorCode::SnapshotUnavailable,
                    "Unable to read from a snapshot due to pending collection catalog changes; please retry the operation.",
                ));
            }
            return Ok((rows, None, true));
        }
        let empty = BTreeMap::new();
        let written = self.colls.get(&coll.ident).map_or(&empty, |o| &o.docs);
        let mut resume = range.resume.map(|(k, r)| (k.to_vec(), r));
        let mut last = None;
        loop {
            let want = range.limit.saturating_sub(rows.len() as i64);
            if want <= 0 {
                return Ok((rows, last, false));
            }
            let part = IndexRange {
                index: range.index,
                low: range.low,
                high: range.high,
                resume: resume.as_ref().map(|(k, r)| (k.as_slice(), *r)),
                reverse: range.reverse,
                limit: want,
            };
            let got: Vec<(Vec<u8>, RecordId, Payload)> = if with_docs {
                let entries = self.snapshot.index_scan(coll, &part).await?;
                entries
                    .into_iter()
                    .map(|(k, r, d)| (k, r, Payload::Doc(d)))
                    .collect()
            } else {
                let entries = self.snapshot.index_keys(&part).await?;
                entries
                    .into_iter()
                    .map(|(k, r, t)| (k, r, Payload::Types(t)))
                    .collect()
            };
            let ended = (got.len() as i64) < want;
            if let Some((k, r, _)) = got.last() {
                last = Some((k.clone(), *r));
                resume = last.clone();
            }
            rows.extend(got.into_iter().filter(|(_, r, _)| !written.contains_key(r)));
            if ended {
                return Ok((rows, last, true));
            }
        }
    }

    /// An index read merged with this transaction's writes: `range.limit` entries in order
    /// unless the index ends first (a shorter answer means the end, as callers take it).
    async fn merged_index(
        &mut self,
        coll: &CollectionMeta,
        range: &IndexRange<'_>,
        with_docs: bool,
    ) -> Result<Vec<(Vec<u8>, RecordId, Payload)>> {
        let (mut rows, last, ended) = self.snapshot_entries(coll, range, with_docs).await?;
        if let Some(overlay) = self.colls.get_mut(&coll.ident) {
            let entries = overlay.entries(range.index)?;
            let past = |pos: (&[u8], RecordId), bound: (&[u8], RecordId)| {
                if range.reverse {
                    pos < bound
                } else {
                    pos > bound
                }
            };
            let mut extra = Vec::new();
            let from = (range.low.to_vec(), RecordId::MIN);
            for ((key, rid), types) in entries.range(from..) {
                if range.high.is_some_and(|high| key.as_slice() >= high) {
                    break;
                }
                let pos = (key.as_slice(), *rid);
                let in_range = range.resume.is_none_or(|resume| past(pos, resume))
                    && (ended || last.as_ref().is_some_and(|(k, r)| !past(pos, (k, *r))));
                if in_range {
                    extra.push((key.clone(), *rid, types.clone()));
                }
            }
            for (key, rid, types) in extra {
                let payload = if with_docs {
                    let doc = overlay.docs[&rid]
                        .1
                        .clone()
                        .expect("present documents only");
                    Payload::Doc(doc)
                } else {
                    Payload::Types(Some(types))
                };
                rows.push((key, rid, payload));
            }
            rows.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
            if range.reverse {
                rows.reverse();
            }
            rows.truncate(usize::try_from(range.limit.max(0)).unwrap_or(usize::MAX));
        }
        Ok(rows)
    }

    /// Documents in record order after `after` (before it when `reverse`), merged with this
    /// transaction's writes, `limit` of them unless the collection ends first.
    async fn merged_scan(
        &mut self,
        coll: &CollectionMeta,
        from: RecordId,
        limit: i64,
        reverse: bool,
    ) -> Result<Vec<(RecordId, RawDocumentBuf)>> {
        let empty = BTreeMap::new();
        let written = self.colls.get(&coll.ident).map_or(&empty, |o| &o.docs);
        let mut rows = Vec::new();
        let mut cursor = from;
        let mut ended = !self.tables.contains(&coll.table());
        while !ended && (rows.len() as i64) < limit {
            let want = limit - rows.len() as i64;
            let got = if reverse {
                self.snapshot.scan_reverse(coll, cursor, want).await?
            } else {
                self.snapshot.scan(coll, cursor, want).await?
            };
            ended = (got.len() as i64) < want;
            if let Some((rid, _)) = got.last() {
                cursor = *rid;
            }
            rows.extend(
                got.into_iter()
                    .filter(|(rid, _)| !written.contains_key(rid)),
            );
        }
        let (low, high) = match (reverse, ended) {
            (false, true) => (Bound::Excluded(from), Bound::Unbounded),
            (false, false) => (Bound::Excluded(from), Bound::Included(cursor)),
            (true, true) => (Bound::Unbounded, Bound::Excluded(from)),
            (true, false) => (Bound::Included(cursor), Bound::Excluded(from)),
        };
        if low_above_high(low, high) {
            return Ok(rows);
        }
        rows.extend(
            written
                .range((low, high))
                .filter_map(|(rid, (_, doc))| doc.as_ref().map(|d| (*rid, d.clone()))),
        );
        rows.sort_by_key(|(rid, _)| *rid);
        if reverse {
            rows.reverse();
        }
        rows.truncate(usize::try_from(limit.max(0)).unwrap_or(usize::MAX));
        Ok(rows)
    }
}

/// Whether a record-id range is empty in a way `BTreeMap::range` would panic on.
fn low_above_high(low: Bound<RecordId>, high: Bound<RecordId>) -> bool {
    match (low, high) {
        (Bound::Excluded(l), Bound::Excluded(h)) => l >= h,
        (Bound::Included(l), Bound::Excluded(h)) | (Bound::Excluded(l), Bound::Included(h)) => {
            l >= h
        }
        (Bound::Included(l), Bound::Included(h)) => l > h,
        _ => false,
    }
}

impl DocumentReads for TxnView {
    /// On the snapshot, without this transaction's writes.
    async fn run<T: Send>(
        &mut self,
        q: ReadQuery<'_>,
        expected_rows: i64,
        context: &str,
        decode: fn(&dyn ResultRow) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.snapshot.run(q, expected_rows, context, decode).await
    }

    async fn fetch_by_id_key(
        &mut self,
        coll: &CollectionMeta,
        key: &[u8],
    ) -> Result<Option<(RecordId, RawDocumentBuf)>> {
        if let Some(overlay) = self.colls.get(&coll.ident) {
            if let Some(rid) = overlay.ids.get(key) {
                let doc = overlay.docs[rid].1.clone();
                return Ok(doc.map(|d| (*rid, d)));
            }
        }
        let found = self.snapshot_by_id(coll, key).await?;
        let written = |rid: &RecordId| {
            self.colls
                .get(&coll.ident)
                .is_some_and(|o| o.docs.contains_key(rid))
        };
        Ok(found.filter(|(rid, _)| !written(rid)))
    }

    async fn fetch_by_rid(
        &mut self,
        coll: &CollectionMeta,
        rid: RecordId,
    ) -> Result<Option<RawDocumentBuf>> {
        if let Some((_, doc)) = self.colls.get(&coll.ident).and_then(|o| o.docs.get(&rid)) {
            return Ok(doc.clone());
        }
        if !self.in_snapshot(&coll.table()) {
            return Ok(None);
        }
        self.snapshot.fetch_by_rid(coll, rid).await
    }

    async fn scan(
        &mut self,
        coll: &CollectionMeta,
        after: RecordId,
        limit: i64,
    ) -> Result<Vec<(RecordId, RawDocumentBuf)>> {
        self.merged_scan(coll, after, limit, false).await
    }

    async fn scan_reverse(
        &mut self,
        coll: &CollectionMeta,
        before: RecordId,
        limit: i64,
    ) -> Result<Vec<(RecordId, RawDocumentBuf)>> {
        self.merged_scan(coll, before, limit, true).await
    }

    async fn index_scan(
        &mut self,
        coll: &CollectionMeta,
        range: &IndexRange<'_>,
    ) -> Result<Vec<IndexEntry>> {
        Ok(with_docs(self.merged_index(coll, range, true).await?))
    }

    async fn index_keys(&mut self, range: &IndexRange<'_>) -> Result<Vec<KeyEntry>> {
        let coll = self.collection_of(range.index)?;
        Ok(with_types(self.merged_index(&coll, range, false).await?))
    }

    async fn index_scan_ranges(
        &mut self,
        coll: &CollectionMeta,
        ranges: &IndexRanges<'_>,
    ) -> Result<Vec<IndexEntry>> {
        Ok(with_docs(self.merged_ranges(coll, ranges, true).await?))
    }

    async fn index_keys_ranges(&mut self, ranges: &IndexRanges<'_>) -> Result<Vec<KeyEntry>> {
        let coll = self.collection_of(ranges.index)?;
        Ok(with_types(self.merged_ranges(&coll, ranges, false).await?))
    }
}

impl TxnView {
    /// The collection of `index` (index idents are unique in the file), its own if this
    /// transaction created it.
    fn collection_of(&self, index: &IndexMeta) -> Result<Arc<CollectionMeta>> {
        let created = created_in(&self.created, self.db.name());
        self.db
            .collections()
            .into_iter()
            .chain(created)
            .find(|c| c.indexes.iter().any(|i| i.ident == index.ident))
            .ok_or_else(|| MongoError::namespace_not_found("the index's collection is gone"))
    }

    /// Several ranges read range by range, each merging the snapshot's entries with this
    /// transaction's writes.
    async fn merged_ranges(
        &mut self,
        coll: &CollectionMeta,
        ranges: &IndexRanges<'_>,
        with_docs: bool,
    ) -> Result<Vec<(Vec<u8>, RecordId, Payload)>> {
        let mut out = Vec::new();
        for range in ranges.one_by_one() {
            let limit = ranges.limit - out.len() as i64;
            let range = IndexRange { limit, ..range };
            out.extend(self.merged_index(coll, &range, with_docs).await?);
            if out.len() as i64 >= ranges.limit {
                break;
            }
        }
        Ok(out)
    }
}

/// Merged entries read with their documents.
fn with_docs(rows: Vec<(Vec<u8>, RecordId, Payload)>) -> Vec<IndexEntry> {
    rows.into_iter()
        .filter_map(|(k, r, p)| match p {
            Payload::Doc(d) => Some((k, r, d)),
            Payload::Types(_) => None,
        })
        .collect()
}

/// Merged entries read with their type bits.
fn with_types(rows: Vec<(Vec<u8>, RecordId, Payload)>) -> Vec<KeyEntry> {
    rows.into_iter()
        .filter_map(|(k, r, p)| match p {
            Payload::Types(t) => Some((k, r, t)),
            Payload::Doc(_) => None,
        })
        .collect()
}

impl Drop for TxnView {
    /// An abandoned view (its transaction aborted or dropped) releases its documents; the
    /// pinned reader rolls its snapshot back as it goes.
    fn drop(&mut self) {
        if self.locked {
            self.db.locks.release(self.txn);
        }
    }
}
