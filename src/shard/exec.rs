//! Query execution over storage: choosing an access path (the `_id` index for `_id`
//! equality, otherwise a collection scan) and producing matching documents in batches.

use super::storage::{CollectionMeta, DatabaseStore, ReadTxn, RecordId, WriteTxn};
use crate::error::Result;
use crate::query::filter::Filter;
use crate::query::projection::Projection;
use bson::{Bson, Document, RawDocumentBuf};
use std::sync::Arc;

/// Rows read per storage statement during a scan.
pub const SCAN_CHUNK: i64 = 1000;
/// Most bytes of documents in one reply batch.
pub const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024;

/// How documents are located.
#[derive(Clone, Debug, PartialEq)]
pub enum AccessPath {
    /// One lookup in the `_id` index.
    IdPoint(Bson),
    CollScan,
}

impl AccessPath {
    pub fn for_filter(filter: &Filter) -> AccessPath {
        match filter.equality("_id") {
            Some(id) if !matches!(id, Bson::RegularExpression(_) | Bson::Array(_)) => {
                AccessPath::IdPoint(id.clone())
            }
            _ => AccessPath::CollScan,
        }
    }
}

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
}

/// Where a query stands between batches: the access path and the last record id examined.
pub struct Position {
    pub path: AccessPath,
    pub after: RecordId,
    pub done: bool,
}

impl Position {
    pub fn start(filter: &Filter) -> Self {
        Position {
            path: AccessPath::for_filter(filter),
            after: 0,
            done: false,
        }
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
                src.fetch_by_id(coll, id).await?.into_iter().collect()
            }
            AccessPath::CollScan => {
                let rows = src.scan(coll, self.after, SCAN_CHUNK).await?;
                if (rows.len() as i64) < SCAN_CHUNK {
                    self.done = true;
                }
                if let Some((rid, _)) = rows.last() {
                    self.after = *rid;
                }
                rows
            }
        };
        let mut out = Vec::with_capacity(rows.len());
        for (rid, raw) in rows {
            let doc = raw.to_document()?;
            if filter.matches(&doc) {
                out.push(Candidate { rid, raw, doc });
            }
        }
        Ok(out)
    }
}

/// An unsorted find between batches: it resumes scanning on the next `getMore`.
pub struct ScanState {
    pub db: Arc<DatabaseStore>,
    pub coll: Arc<CollectionMeta>,
    pub filter: Filter,
    pub projection: Option<Projection>,
    pub position: Position,
    pub skip: u64,
    pub remaining: Option<u64>,
    /// Matches read from storage but not yet returned (a batch filled up mid-chunk).
    pub pending: std::collections::VecDeque<RawDocumentBuf>,
}

impl ScanState {
    pub fn exhausted(&self) -> bool {
        self.pending.is_empty() && (self.position.done || self.remaining == Some(0))
    }

    /// Fills a batch of at most `max_docs` documents; returns the batch.
    pub async fn next_batch(&mut self, max_docs: usize) -> Result<Vec<RawDocumentBuf>> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        loop {
            while let Some(doc) = self.pending.front() {
                if batch.len() >= max_docs
                    || (bytes + doc.as_bytes().len() > MAX_BATCH_BYTES && !batch.is_empty())
                {
                    return Ok(batch);
                }
                let doc = self.pending.pop_front().expect("checked non-empty");
                bytes += doc.as_bytes().len();
                batch.push(doc);
            }
            if self.position.done || self.remaining == Some(0) || batch.len() >= max_docs {
                return Ok(batch);
            }
            let mut read = self.db.read().await?;
            let matches = self
                .position
                .next_matches(&mut read, &self.coll, &self.filter)
                .await?;
            drop(read);
            for candidate in matches {
                if self.skip > 0 {
                    self.skip -= 1;
                    continue;
                }
                if let Some(remaining) = &mut self.remaining {
                    if *remaining == 0 {
                        break;
                    }
                    *remaining -= 1;
                }
                let out = match &self.projection {
                    Some(p) => RawDocumentBuf::from_document(&p.apply(&candidate.doc))?,
                    None => candidate.raw,
                };
                self.pending.push_back(out);
            }
        }
    }
}
