//! Query execution over storage: choosing an access path (`plan`: the `_id` index, a secondary
//! index scan over key intervals, or a collection scan) and producing matching documents in
//! batches (`position`), resumable between `getMore`s (`scan_state`), the collection an
//! aggregation cursor reads (`pipeline_input`), the blocking sort with its spill to disk
//! (`sort`), the shape of returned documents (`output`), `$text` bound to the collection's text
//! index (`text`), geo index scans (`geo_plan`) and `$near`'s growing caps (`near`), wildcard
//! index scans of one path each (`wildcard_plan`) with every key field bounded on its own
//! (`wildcard_bounds`), and
//! describing the plan and its work
//! for `explain` (`explain`) and for a profile entry's `execStats` (`plan_stats`), and the
//! query shape's `queryHash`/`planCacheKey` (`query_hash`).

mod cover;
mod explain;
mod geo_plan;
mod near;
mod near_sphere;
mod output;
mod pipeline_input;
#[cfg(test)]
mod pipeline_state_tests;
mod plan;
mod plan_stats;
mod position;
#[cfg(test)]
mod position_tests;
mod query_hash;
mod scan_state;
mod sort;
#[cfg(test)]
mod test_catalog;
mod text;
mod wildcard_bounds;
mod wildcard_plan;

pub use crate::server::pipeline_cursor::PipelineState;
pub use cover::{CoverRequest, Covered};
pub use explain::{
    Execution, ExplainedQuery, StageTree, WriteStage, count_stats, number, parsed_query,
};
pub use near::{
    BufferedInput, NearMatch, geo_near_documents, geo_near_filter, near_index, near_matches,
    near_matches_examined, no_geo_index,
};
pub use output::{
    FindOutput, KeySource, NearMetadata, RECORD_ID_FIELD, SORT_KEY_FIELD, take_sort_key_request,
};
pub use pipeline_input::PipelineInput;
pub use plan::{AccessPath, IndexScanPlan, KeyInterval, QueryShape};
pub use plan_stats::{PlanStats, WriteRead, no_collection, update_stats};
pub use position::{Candidate, Examined, Position};

pub use scan_state::{ScanState, Tail};
pub use sort::{BlockingSort, SortLimits, SortedDocs, SortedState, find_sort_error};
pub use text::{bind_text, bound_text, text_index};

/// Rows read per storage statement during a scan.
pub const SCAN_CHUNK: i64 = 1000;
pub use crate::command::{MAX_BATCH_BYTES, fill_batch};
