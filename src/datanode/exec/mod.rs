//! Query execution over storage: choosing an access path (`plan`: the `_id` index, a secondary
//! index scan over key intervals, or a collection scan) and producing matching documents in
//! batches (`position`), resumable between `getMore`s (`scan_state`), an aggregation run as its batches are fetched
//! (`pipeline_state`), the blocking sort with
//! its spill to disk (`sort`), the shape of returned documents (`output`), and describing the plan and its work for `explain` (`explain`).

mod cover;
mod explain;
mod output;
mod pipeline_state;
#[cfg(test)]
mod pipeline_state_tests;
mod plan;
mod position;
mod scan_state;
mod sort;
#[cfg(test)]
mod test_catalog;

pub use cover::{CoverRequest, Covered};
pub use explain::{Execution, ExplainedQuery, StageTree, number, parsed_query};
pub use output::{FindOutput, RECORD_ID_FIELD, SORT_KEY_FIELD, take_sort_key_request};
pub use pipeline_state::{PipelineInput, PipelineState};
pub use plan::{AccessPath, IndexScanPlan, KeyInterval, QueryShape};
pub use position::{Candidate, Examined, Position};

pub use scan_state::{ScanState, Tail};
pub use sort::{BlockingSort, SortLimits, SortedDocs, SortedState, find_sort_error};

/// Rows read per storage statement during a scan.
pub const SCAN_CHUNK: i64 = 1000;
/// Most bytes of documents in one reply batch.
pub const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024;

/// Moves documents from the front of `from` into `batch` while it stays within `max_docs` and
/// [`MAX_BATCH_BYTES`] (`bytes` counts what the batch holds; a first document always goes in,
/// so that a batch is never empty while documents remain). Returns whether the batch is full.
pub fn fill_batch(
    from: &mut std::collections::VecDeque<bson::RawDocumentBuf>,
    batch: &mut Vec<bson::RawDocumentBuf>,
    bytes: &mut usize,
    max_docs: usize,
) -> bool {
    while let Some(doc) = from.front() {
        let size = doc.as_bytes().len();
        if batch.len() >= max_docs || (*bytes + size > MAX_BATCH_BYTES && !batch.is_empty()) {
            return true;
        }
        *bytes += size;
        batch.push(from.pop_front().expect("checked non-empty"));
    }
    batch.len() >= max_docs
}
