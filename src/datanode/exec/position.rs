//! Where a query stands: it reads the next chunk through its access path, keeps the documents
//! that match the filter (and, on a shard, lie in its chunks), and remembers where to resume.

use super::SCAN_CHUNK;
use super::cover::Covered;
use super::plan::{AccessPath, IndexScanPlan, QueryShape};
use crate::catalog::OwnershipFilter;
use crate::datanode::storage::{
    CollectionMeta, DatabaseStore, DocumentReads, IndexEntry, IndexRange, IndexRanges, KeyEntry,
    RANGES_PER_STATEMENT, RecordId,
};
use crate::error::Result;
use crate::query::filter::Filter;
use bson::{Document, RawDocumentBuf};
use std::collections::HashSet;
use std::sync::Arc;

/// A document found by a query, with its record id.
pub struct Candidate {
    pub rid: RecordId,
    pub raw: RawDocumentBuf,
    pub doc: Document,
}

/// An index entry as a scan returns it: key, record id, type bits, document.
type ScanEntry = (Vec<u8>, RecordId, Option<Vec<u8>>, Option<RawDocumentBuf>);

/// Progress through index scans (one, or a union's branches one after another).
struct IndexCursor {
    plans: Vec<Arc<IndexScanPlan>>,
    /// The scan in progress.
    plan: usize,
    /// Position in its intervals, counted in scan order (from the end when reversed).
    interval: usize,
    resume: Option<(Vec<u8>, RecordId)>,
    /// Record ids already returned: a multikey index holds several keys per document, and a
    /// document may match several branches of a union.
    seen: Option<HashSet<RecordId>>,
    /// Keys read per scan, for `explain`.
    keys_per_plan: Vec<u64>,
}

impl IndexCursor {
    fn new(plans: Vec<Arc<IndexScanPlan>>) -> Self {
        // A wildcard scan may meet a document under several paths (`$exists`) too.
        let dedupe = plans.len() > 1
            || plans
                .iter()
                .any(|p| p.index.multikey || p.wildcard.is_some());
        IndexCursor {
            keys_per_plan: vec![0; plans.len()],
            plans,
            plan: 0,
            interval: 0,
            resume: None,
            seen: dedupe.then(HashSet::new),
        }
    }
}

/// Where a query stands between chunks.
pub struct Position {
    path: AccessPath,
    after: RecordId,
    index: Option<IndexCursor>,
    done: bool,
    /// Rows read per storage statement.
    chunk: i64,
    examined: Examined,
    /// The shard's ownership filter: documents outside its chunks (orphans) are skipped.
    ownership: Option<Arc<OwnershipFilter>>,
    /// The scan covers the query: entries are answered from their keys.
    cover: Option<CoverState>,
}

/// A covered scan's state.
struct CoverState {
    covered: Covered,
    store: Arc<DatabaseStore>,
    coll_ident: i64,
    index_ident: i64,
    /// The index became multikey since the plan was made: its keys may be array elements, so
    /// every entry's document is read.
    multikey: bool,
}

/// What a query has read so far, as `explain` reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Examined {
    pub keys: u64,
    pub docs: u64,
    /// Documents that matched but belong to another shard's chunks (orphans), skipped.
    pub chunk_skips: u64,
}

impl Examined {
    /// Counts index keys and documents read, here and for the operation running the read
    /// (what its profile entry reports).
    fn add(&mut self, keys: u64, docs: u64) {
        self.keys += keys;
        self.docs += docs;
        crate::server::operations::add_examined(keys, docs);
    }
}

impl Position {
    /// Plans the query on `coll` and starts at the beginning.
    pub fn plan(coll: &CollectionMeta, shape: &QueryShape<'_>) -> Result<Self> {
        let path = AccessPath::choose(coll, shape)?;
        // The operation's first plan is the one its profile entry names.
        crate::server::operations::set_plan(|| crate::server::operations::PlanFacts {
            summary: path.summary(),
            hashes: Some(super::query_hash::hashes(coll, shape)),
        });
        Ok(Self::with_path(path))
    }

    /// A query whose filter is `filter` alone (no sort, no hint).
    pub fn for_filter(coll: &CollectionMeta, filter: &Document) -> Result<Self> {
        Self::plan(coll, &QueryShape::filter(filter))
    }

    pub fn with_path(path: AccessPath) -> Self {
        let index = match &path {
            AccessPath::IndexScan(plan) => Some(IndexCursor::new(vec![plan.clone()])),
            AccessPath::Union(plans) => Some(IndexCursor::new(plans.as_ref().clone())),
            _ => None,
        };
        Position {
            path,
            after: 0,
            index,
            done: false,
            chunk: SCAN_CHUNK,
            examined: Examined::default(),
            ownership: None,
            cover: None,
        }
    }

    /// Answers entries from their index keys when `covered` (see [`Covered::analyze`]) says
    /// the scan covers the query; `store` holds the collection, whose index is checked after
    /// every read for having become multikey.
    pub fn covered_by(
        mut self,
        covered: Option<Covered>,
        store: &Arc<DatabaseStore>,
        coll: &CollectionMeta,
    ) -> Self {
        let AccessPath::IndexScan(plan) = &self.path else {
            return self;
        };
        self.cover = covered.map(|covered| CoverState {
            covered,
            store: store.clone(),
            coll_ident: coll.ident,
            index_ident: plan.index.ident,
            multikey: false,
        });
        self
    }

    /// The plan answers from index keys (PROJECTION_COVERED).
    pub fn is_covered(&self) -> bool {
        self.cover.is_some()
    }

    /// Skips the documents `ownership` says this shard does not own (MongoDB's
    /// SHARDING_FILTER stage); `None` keeps every document.
    pub fn owned_by(mut self, ownership: Option<Arc<OwnershipFilter>>) -> Self {
        self.ownership = ownership;
        self
    }

    /// Reads `rows` rows per storage statement instead of [`SCAN_CHUNK`]: `explain` reads one
    /// at a time under a limit so that what it reports examined is exactly what was needed.
    pub fn with_chunk(mut self, rows: i64) -> Self {
        self.chunk = rows.max(1);
        self
    }

    /// Sets the rows read per storage statement from now on.
    pub fn set_chunk(&mut self, rows: i64) {
        self.chunk = rows.clamp(1, SCAN_CHUNK);
    }

    pub fn path(&self) -> &AccessPath {
        &self.path
    }

    pub fn examined(&self) -> Examined {
        self.examined
    }

    /// Documents outside the shard's chunks are skipped (SHARDING_FILTER).
    pub fn filters_orphans(&self) -> bool {
        self.ownership.is_some()
    }

    /// What the scan has done so far, `matched` of its matches taken by the query.
    pub fn execution(&self, matched: u64) -> super::Execution {
        super::Execution {
            examined: self.examined,
            keys_per_scan: self.keys_per_scan(),
            matched,
            ..super::Execution::default()
        }
    }

    /// Keys read by each index scan of the access path (one per union branch), for `explain`.
    pub fn keys_per_scan(&self) -> Vec<u64> {
        self.index
            .as_ref()
            .map(|c| c.keys_per_plan.clone())
            .unwrap_or_default()
    }

    pub fn done(&self) -> bool {
        self.done
    }

    /// A collection scan that reached the end looks again for documents inserted since
    /// (tailable cursors). Returns the last record id read.
    pub fn resume_tail(&mut self) -> RecordId {
        if matches!(self.path, AccessPath::CollScan { reverse: false }) {
            self.done = false;
        }
        self.after
    }

    /// The next matching documents: at most one storage statement's worth.
    pub async fn next_matches<S: DocumentReads>(
        &mut self,
        src: &mut S,
        coll: &CollectionMeta,
        filter: &Filter,
    ) -> Result<Vec<Candidate>> {
        if self.done {
            return Ok(Vec::new());
        }
        if self.cover.is_some() {
            return self.next_covered(src, coll, filter).await;
        }
        let rows = match &self.path {
            AccessPath::IdPoint(id) => {
                self.done = true;
                // The point is already in the `_id` index's collation (see `AccessPath`).
                let key = crate::document::keystring::encode_one(id);
                let found: Vec<_> = src.fetch_by_id_key(coll, &key).await?.into_iter().collect();
                self.examined.add(found.len() as u64, 0);
                found
            }
            AccessPath::CollScan { reverse } => {
                let rows = if *reverse {
                    // Newest first: `after` is the lowest record id returned so far.
                    let before = if self.after == 0 {
                        i64::MAX
                    } else {
                        self.after
                    };
                    src.scan_reverse(coll, before, self.chunk).await?
                } else {
                    src.scan(coll, self.after, self.chunk).await?
                };
                if (rows.len() as i64) < self.chunk {
                    self.done = true;
                }

                if let Some((rid, _)) = rows.last() {
                    self.after = *rid;
                }
                rows
            }
            AccessPath::IndexScan(_) | AccessPath::Union(_) => {
                self.next_index_rows(src, coll).await?
            }
        };
        self.examined.add(0, rows.len() as u64);
        let mut out = Vec::with_capacity(rows.len());

        for (rid, raw) in rows {
            let doc = raw.to_document()?;
            if !filter.try_matches(&doc)? {
                continue;
            }
            if self.ownership.as_ref().is_none_or(|o| o.owns(&doc)) {
                out.push(Candidate { rid, raw, doc });
            } else {
                self.examined.chunk_skips += 1;
            }
        }
        Ok(out)
    }

    /// The next matches of a covered scan: each entry's document of index fields comes from its
    /// key, or from the document when the key does not determine a needed value.
    async fn next_covered<S: DocumentReads>(
        &mut self,
        src: &mut S,
        coll: &CollectionMeta,
        filter: &Filter,
    ) -> Result<Vec<Candidate>> {
        let entries = self.next_index_entries(src, coll, false).await?;
        let cover = self.cover.as_mut().expect("a covered scan");
        if !cover.multikey {
            cover.multikey = cover
                .store
                .collection_by_ident(cover.coll_ident)
                .is_none_or(|c| {
                    c.indexes
                        .iter()
                        .find(|i| i.ident == cover.index_ident)
                        .is_none_or(|i| i.multikey)
                });
        }
        let mut out = Vec::with_capacity(entries.len());
        for (key, rid, types, _) in entries {
            let from_key = if cover.multikey {
                None
            } else {
                cover.covered.from_key(&key, types.as_deref())
            };
            let doc = match from_key {
                Some(doc) => {
                    if !filter.try_matches(&doc)? {
                        continue;
                    }
                    if !self.ownership.as_ref().is_none_or(|o| o.owns(&doc)) {
                        self.examined.chunk_skips += 1;
                        continue;
                    }
                    doc
                }
                None => {
                    // Deleted since the key was read: no longer a match.
                    let Some(raw) = src.fetch_by_rid(coll, rid).await? else {
                        continue;
                    };
                    self.examined.add(0, 1);
                    let full = raw.to_document()?;
                    if !filter.try_matches(&full)? {
                        continue;
                    }
                    if !self.ownership.as_ref().is_none_or(|o| o.owns(&full)) {
                        self.examined.chunk_skips += 1;
                        continue;
                    }
                    cover.covered.from_document(&full)
                }
            };
            let raw = RawDocumentBuf::from_document(&doc)?;
            out.push(Candidate { rid, raw, doc });
        }
        Ok(out)
    }

    async fn next_index_rows<S: DocumentReads>(
        &mut self,
        src: &mut S,
        coll: &CollectionMeta,
    ) -> Result<Vec<(RecordId, RawDocumentBuf)>> {
        let entries = self.next_index_entries(src, coll, true).await?;
        Ok(entries
            .into_iter()
            .filter_map(|(_, rid, _, raw)| raw.map(|raw| (rid, raw)))
            .collect())
    }

    /// The next entries of the index scans, each record once, with their type bits (when
    /// recorded) without `with_docs`, or with their documents.
    async fn next_index_entries<S: DocumentReads>(
        &mut self,
        src: &mut S,
        coll: &CollectionMeta,
        with_docs: bool,
    ) -> Result<Vec<ScanEntry>> {
        let cursor = self
            .index
            .as_mut()
            .expect("an index scan has an index cursor");
        // Skip exhausted scans (a union branch may have no intervals at all).
        while cursor.plan < cursor.plans.len()
            && cursor.interval >= cursor.plans[cursor.plan].intervals.len()
        {
            cursor.plan += 1;
            cursor.interval = 0;
        }
        if cursor.plan >= cursor.plans.len() {
            self.done = true;
            return Ok(Vec::new());
        }
        let plan = cursor.plans[cursor.plan].clone();
        let count = plan.intervals.len();
        let batch = (cursor.resume.is_none())
            .then(|| Batch::of(&plan, cursor.interval))
            .flatten();
        let entries: Vec<ScanEntry> = match &batch {
            Some(batch) => {
                let ranges = batch.ranges(&plan, self.chunk);
                if with_docs {
                    with_docs_entries(src.index_scan_ranges(coll, &ranges).await?)
                } else {
                    with_types_entries(src.index_keys_ranges(&ranges).await?)
                }
            }
            None => {
                let interval = if plan.reverse {
                    &plan.intervals[count - 1 - cursor.interval]
                } else {
                    &plan.intervals[cursor.interval]
                };
                let range = IndexRange {
                    index: &plan.index,
                    low: &interval.low,
                    high: interval.high.as_deref(),
                    resume: cursor.resume.as_ref().map(|(k, r)| (k.as_slice(), *r)),
                    reverse: plan.reverse,
                    limit: self.chunk,
                };
                if with_docs {
                    with_docs_entries(src.index_scan(coll, &range).await?)
                } else {
                    with_types_entries(src.index_keys(&range).await?)
                }
            }
        };
        self.examined.add(entries.len() as u64, 0);
        cursor.keys_per_plan[cursor.plan] += entries.len() as u64;
        let read = batch.as_ref().map_or(1, |b| b.len);
        if (entries.len() as i64) < self.chunk {
            cursor.interval += read;
            cursor.resume = None;
            if cursor.interval >= count && cursor.plan + 1 >= cursor.plans.len() {
                self.done = true;
            }
        } else if let Some((key, rid, _, _)) = entries.last() {
            // A full batch stopped inside one of its ranges: go on from there alone.
            if let Some(batch) = &batch {
                cursor.interval += batch.holding(&plan, key);
            }
            cursor.resume = Some((key.clone(), *rid));
        }
        let mut rows = Vec::with_capacity(entries.len());
        for (key, rid, types, raw) in entries {
            // Before the record counts as seen: another of its keys may be within bounds.
            if !plan.admits(&key) {
                continue;
            }
            if let Some(seen) = &mut cursor.seen {
                if !seen.insert(rid) {
                    continue;
                }
            }
            rows.push((key, rid, types, raw));
        }
        Ok(rows)
    }
}

/// Index entries read with their documents, as scan entries.
fn with_docs_entries(entries: Vec<IndexEntry>) -> Vec<ScanEntry> {
    entries
        .into_iter()
        .map(|(key, rid, raw)| (key, rid, None, Some(raw)))
        .collect()
}

/// Index entries read with their type bits, as scan entries.
fn with_types_entries(entries: Vec<KeyEntry>) -> Vec<ScanEntry> {
    entries
        .into_iter()
        .map(|(key, rid, types)| (key, rid, types, None))
        .collect()
}

/// Intervals of one scan read in one statement: from scan position `first`, `len` of them
/// (at least two, at most [`RANGES_PER_STATEMENT`]), disjoint, so that the statement's
/// `(key, rid)` order is the order a scan interval by interval would have.
struct Batch {
    first: usize,
    len: usize,
}

impl Batch {
    fn of(plan: &IndexScanPlan, first: usize) -> Option<Batch> {
        let len = (plan.intervals.len() - first).min(RANGES_PER_STATEMENT);
        let batch = Batch { first, len };
        let intervals = &plan.intervals[batch.ascending(plan)];
        let disjoint = intervals.windows(2).all(|w| {
            w[0].high
                .as_deref()
                .is_some_and(|high| high <= &w[1].low[..])
        });
        (len >= 2 && disjoint).then_some(batch)
    }

    /// Its intervals' indexes in the plan (which lists them in ascending key order).
    fn ascending(&self, plan: &IndexScanPlan) -> std::ops::Range<usize> {
        if plan.reverse {
            let end = plan.intervals.len() - self.first;
            end - self.len..end
        } else {
            self.first..self.first + self.len
        }
    }

    fn ranges<'a>(&self, plan: &'a IndexScanPlan, limit: i64) -> IndexRanges<'a> {
        IndexRanges {
            index: &plan.index,
            ranges: plan.intervals[self.ascending(plan)]
                .iter()
                .map(|i| (&i.low[..], i.high.as_deref()))
                .collect(),
            reverse: plan.reverse,
            limit,
        }
    }

    /// How far past `first`, in scan order, the interval holding `key` lies.
    fn holding(&self, plan: &IndexScanPlan, key: &[u8]) -> usize {
        let intervals = &plan.intervals[self.ascending(plan)];
        let at = intervals
            .partition_point(|i| &i.low[..] <= key)
            .saturating_sub(1);
        if plan.reverse { self.len - 1 - at } else { at }
    }
}
