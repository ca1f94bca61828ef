//! A streaming query between batches: it resumes where the last batch stopped.

use super::MAX_BATCH_BYTES;
use super::output::FindOutput;
use super::position::Position;
use crate::error::Result;
use crate::query::filter::Filter;
use crate::shard::storage::{CollectionMeta, DatabaseStore};
use bson::RawDocumentBuf;
use std::collections::VecDeque;
use std::sync::Arc;

/// An unsorted (or index-sorted) find between batches.
pub struct ScanState {
    pub db: Arc<DatabaseStore>,
    pub coll: Arc<CollectionMeta>,
    pub filter: Filter,
    pub output: FindOutput,
    pub position: Position,
    pub skip: u64,
    pub remaining: Option<u64>,
    /// Matches read from storage but not yet returned (a batch filled up mid-chunk).
    pub pending: VecDeque<RawDocumentBuf>,
}

impl ScanState {
    pub fn exhausted(&self) -> bool {
        self.pending.is_empty() && (self.position.done() || self.remaining == Some(0))
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
            if self.position.done() || self.remaining == Some(0) || batch.len() >= max_docs {
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
                let out = if self.output.is_identity() {
                    candidate.raw
                } else {
                    self.output.render(candidate.rid, &candidate.doc)?
                };
                self.pending.push_back(out);
            }
        }
    }
}
