//! A sorted `find` between batches: the blocking sort itself (top-k, spilling sorted runs to
//! the data directory's `_tmp` past its memory limit) is [`crate::spill`]'s; here its output is
//! skipped, shaped and cut into batches.

use crate::error::{MongoError, Result};
use bson::RawDocumentBuf;

pub use crate::spill::{BlockingSort, SortLimits, SortedDocs};

/// A blocking sort's error as `find`'s executor reports it.
pub fn find_sort_error(err: MongoError) -> MongoError {
    MongoError::new(
        err.code(),
        format!(
            "Executor error during find command :: caused by :: {}",
            err.message()
        ),
    )
}

/// A sorted find between batches: skip, projection, and one document read ahead so that a
/// batch knows whether it is the last.
pub struct SortedState {
    pub docs: SortedDocs,
    pub skip: u64,
    pub output: super::output::FindOutput,
    pub ahead: Option<RawDocumentBuf>,
    pub done: bool,
    /// The plan a profile entry shows and what the scan under the sort did (kept when the
    /// database profiled as the find began).
    pub plan: Option<(super::PlanStats, super::Execution)>,
    /// Documents taken from the sort, skipped ones included.
    pulled: u64,
}

impl SortedState {
    pub fn new(docs: SortedDocs, skip: u64, output: super::output::FindOutput) -> SortedState {
        SortedState {
            docs,
            skip,
            output,
            ahead: None,
            done: false,
            plan: None,
            pulled: 0,
        }
    }

    /// `execStats` for what the cursor has returned so far (the document read ahead is not).
    pub fn exec_stats(&self) -> Option<bson::Document> {
        let (plan, run) = self.plan.as_ref()?;
        let run = super::Execution {
            sorted_out: Some(self.pulled - u64::from(self.ahead.is_some())),
            ..run.clone()
        };
        Some(plan.to_document(run))
    }

    pub fn exhausted(&self) -> bool {
        self.done && self.ahead.is_none()
    }

    fn pull(&mut self) -> Result<Option<RawDocumentBuf>> {
        if let Some(doc) = self.ahead.take() {
            return Ok(Some(doc));
        }
        while !self.done {
            let Some(doc) = self.docs.next_doc()? else {
                self.done = true;
                break;
            };
            self.pulled += 1;
            if self.skip > 0 {
                self.skip -= 1;
                continue;
            }
            return Ok(Some(self.output.render_sorted(doc)?));
        }
        Ok(None)
    }

    /// At most `max_docs` documents and 16 MiB (at least one document).
    pub fn next_batch(&mut self, max_docs: usize) -> Result<Vec<RawDocumentBuf>> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        while batch.len() < max_docs {
            let Some(doc) = self.pull()? else {
                break;
            };
            if bytes + doc.as_bytes().len() > super::MAX_BATCH_BYTES && !batch.is_empty() {
                self.ahead = Some(doc);
                return Ok(batch);
            }
            bytes += doc.as_bytes().len();
            batch.push(doc);
        }
        if self.ahead.is_none() && !self.done {
            self.ahead = self.pull()?;
        }
        Ok(batch)
    }
}
