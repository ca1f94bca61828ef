//! Where a query stands: it reads the next chunk through its access path, keeps the documents
//! that match the filter (and, on a shard, lie in its chunks), and remembers where to resume.

use super::SCAN_CHUNK;
use super::plan::{AccessPath, IndexScanPlan, QueryShape};
use crate::catalog::OwnershipFilter;
use crate::error::Result;
use crate::query::filter::Filter;
use crate::shard::storage::{CollectionMeta, IndexEntry, IndexRange, ReadTxn, RecordId, WriteTxn};
use bson::{Bson, Document, RawDocumentBuf};
use std::collections::HashSet;
use std::sync::Arc;

/// A document found by a query, with its record id.
pub struct Candidate {
    pub rid: RecordId,
    pub raw: RawDocumentBuf,
    pub doc: Document,
}

/// Reads from a read view or from inside a write transaction.
pub trait RecordSource {
    fn fetch_by_id(
        &mut self,
        coll: &CollectionMeta,
        id: &Bson,
    ) -> impl Future<Output = Result<Option<(RecordId, RawDocumentBuf)>>> + Send;
    fn scan(
        &mut self,
        coll: &CollectionMeta,
        after: RecordId,
        limit: i64,
    ) -> impl Future<Output = Result<Vec<(RecordId, RawDocumentBuf)>>> + Send;
    fn index_scan(
        &mut self,
        coll: &CollectionMeta,
        range: &IndexRange<'_>,
    ) -> impl Future<Output = Result<Vec<IndexEntry>>> + Send;
    fn scan_reverse(
        &mut self,
        coll: &CollectionMeta,
        before: RecordId,
        limit: i64,
    ) -> impl Future<Output = Result<Vec<(RecordId, RawDocumentBuf)>>> + Send;
}

impl RecordSource for ReadTxn {
    fn fetch_by_id(
        &mut self,
        coll: &CollectionMeta,
        id: &Bson,
    ) -> impl Future<Output = Result<Option<(RecordId, RawDocumentBuf)>>> + Send {
        ReadTxn::fetch_by_id(self, coll, id)
    }
    fn scan(
        &mut self,
        coll: &CollectionMeta,
        after: RecordId,
        limit: i64,
    ) -> impl Future<Output = Result<Vec<(RecordId, RawDocumentBuf)>>> + Send {
        ReadTxn::scan(self, coll, after, limit)
    }
    fn index_scan(
        &mut self,
        coll: &CollectionMeta,
        range: &IndexRange<'_>,
    ) -> impl Future<Output = Result<Vec<IndexEntry>>> + Send {
        ReadTxn::index_scan(self, coll, range)
    }
    fn scan_reverse(
        &mut self,
        coll: &CollectionMeta,
        before: RecordId,
        limit: i64,
    ) -> impl Future<Output = Result<Vec<(RecordId, RawDocumentBuf)>>> + Send {
        ReadTxn::scan_reverse(self, coll, before, limit)
    }
}

impl RecordSource for WriteTxn<'_> {
    fn fetch_by_id(
        &mut self,
        coll: &CollectionMeta,
        id: &Bson,
    ) -> impl Future<Output = Result<Option<(RecordId, RawDocumentBuf)>>> + Send {
        WriteTxn::fetch_by_id(self, coll, id)
    }
    fn scan(
        &mut self,
        coll: &CollectionMeta,
        after: RecordId,
        limit: i64,
    ) -> impl Future<Output = Result<Vec<(RecordId, RawDocumentBuf)>>> + Send {
        WriteTxn::scan(self, coll, after, limit)
    }
    fn index_scan(
        &mut self,
        coll: &CollectionMeta,
        range: &IndexRange<'_>,
    ) -> impl Future<Output = Result<Vec<IndexEntry>>> + Send {
        WriteTxn::index_scan(self, coll, range)
    }
    fn scan_reverse(
        &mut self,
        coll: &CollectionMeta,
        before: RecordId,
        limit: i64,
    ) -> impl Future<Output = Result<Vec<(RecordId, RawDocumentBuf)>>> + Send {
        WriteTxn::scan_reverse(self, coll, before, limit)
    }
}

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
        let dedupe = plans.len() > 1 || plans.iter().any(|p| p.index.multikey);
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
}

/// What a query has read so far, as `explain` reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Examined {
    pub keys: u64,
    pub docs: u64,
    /// Documents that matched but belong to another shard's chunks (orphans), skipped.
    pub chunk_skips: u64,
}

impl Position {
    /// Plans the query on `coll` and starts at the beginning.
    pub fn plan(coll: &CollectionMeta, shape: &QueryShape<'_>) -> Result<Self> {
        Ok(Self::with_path(AccessPath::choose(coll, shape)?))
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
        }
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
    pub async fn next_matches<S: RecordSource>(
        &mut self,
        src: &mut S,
        coll: &CollectionMeta,
        filter: &Filter,
    ) -> Result<Vec<Candidate>> {
        if self.done {
            return Ok(Vec::new());
        }
        let rows = match &self.path {
            AccessPath::IdPoint(id) => {
                self.done = true;
                let found: Vec<_> = src.fetch_by_id(coll, id).await?.into_iter().collect();
                self.examined.keys += found.len() as u64;
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
        self.examined.docs += rows.len() as u64;
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

    async fn next_index_rows<S: RecordSource>(
        &mut self,
        src: &mut S,
        coll: &CollectionMeta,
    ) -> Result<Vec<(RecordId, RawDocumentBuf)>> {
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
        let entries = src.index_scan(coll, &range).await?;
        self.examined.keys += entries.len() as u64;
        cursor.keys_per_plan[cursor.plan] += entries.len() as u64;
        if (entries.len() as i64) < self.chunk {
            cursor.interval += 1;
            cursor.resume = None;
            if cursor.interval >= count && cursor.plan + 1 >= cursor.plans.len() {
                self.done = true;
            }
        } else if let Some((key, rid, _)) = entries.last() {
            cursor.resume = Some((key.clone(), *rid));
        }
        let mut rows = Vec::with_capacity(entries.len());
        for (_, rid, raw) in entries {
            if let Some(seen) = &mut cursor.seen {
                if !seen.insert(rid) {
                    continue;
                }
            }
            rows.push((rid, raw));
        }
        Ok(rows)
    }
}
