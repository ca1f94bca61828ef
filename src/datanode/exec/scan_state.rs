//! A streaming query between batches: it resumes where the last batch stopped.

use super::output::FindOutput;
use super::plan_stats::PlanStats;
use super::position::Position;
use super::{SCAN_CHUNK, fill_batch};
use crate::datanode::storage::{CollectionMeta, DatabaseStore, DocumentReads};
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::filter::Filter;
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
    /// A tailable cursor on a capped collection: at the end it waits for new documents.
    pub tail: Option<Tail>,
    /// The plan a profile entry shows (kept when the database profiled as the find began).
    pub plan: Option<PlanStats>,
    /// Matches taken from the scan by the skip or for the output.
    pub consumed: u64,
}

/// How a tailable cursor follows its capped collection.
#[derive(Clone, Copy, Debug)]
pub struct Tail {
    /// `getMore` waits (up to its `maxTimeMS`) for new documents instead of returning none.
    pub await_data: bool,
}

impl ScanState {
    /// `execStats` for what the cursor has returned so far: matches read ahead into
    /// `pending` are not yet returned.
    pub fn exec_stats(&self) -> Option<bson::Document> {
        let plan = self.plan.as_ref()?;
        let matched = self.consumed.saturating_sub(self.pending.len() as u64);
        Some(plan.to_document(self.position.execution(matched)))
    }

    pub fn exhausted(&self) -> bool {
        if self.tail.is_some() {
            return self.pending.is_empty() && self.remaining == Some(0);
        }
        self.pending.is_empty() && (self.position.done() || self.remaining == Some(0))
    }

    /// A tailable cursor whose last document was evicted from the capped collection has lost
    /// its place (eviction removes the oldest documents first).
    async fn check_position(&self, after: crate::datanode::storage::RecordId) -> Result<()> {
        if after == 0 {
            return Ok(());
        }
        let mut read = self.db.read().await?;
        let oldest = read.scan(&self.coll, 0, 1).await?;
        if oldest.first().is_some_and(|(rid, _)| *rid > after) {
            return Err(MongoError::new(
                ErrorCode::CappedPositionLost,
                format!(
                    "CollectionScan died due to position in capped collection being deleted. Last seen record id: RecordId({after})"
                ),
            ));
        }
        Ok(())
    }

    /// Fills a batch of at most `max_docs` documents; returns the batch.
    pub async fn next_batch(&mut self, max_docs: usize) -> Result<Vec<RawDocumentBuf>> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        let mut resumed = false;
        // Read no more than the batch (and the skip before it) can use: a first batch of 101
        // or a `limit(10)` costs that many rows, not a whole chunk. Reads that come up short
        // (a residual filter rejected rows) double the size, up to the usual chunk.
        let wanted = (max_docs.saturating_sub(self.pending.len()) as u64)
            .min(self.remaining.unwrap_or(u64::MAX))
            .saturating_add(self.skip);
        let mut chunk = i64::try_from(wanted)
            .unwrap_or(SCAN_CHUNK)
            .clamp(1, SCAN_CHUNK);
        loop {
            if fill_batch(&mut self.pending, &mut batch, &mut bytes, max_docs) {
                return Ok(batch);
            }
            if self.remaining == Some(0) {
                return Ok(batch);
            }
            if self.position.done() {
                if self.tail.is_none() || resumed {
                    return Ok(batch);
                }
                // Look once more for documents inserted since the end was reached.
                resumed = true;
                let after = self.position.resume_tail();
                self.check_position(after).await?;
            }
            self.position.set_chunk(chunk);
            chunk = (chunk * 2).min(SCAN_CHUNK);
            let mut read = self.db.read().await?;
            let matches = self
                .position
                .next_matches(&mut read, &self.coll, &self.filter)
                .await?;
            drop(read);
            for candidate in matches {
                if self.remaining != Some(0) {
                    self.consumed += 1;
                }
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
