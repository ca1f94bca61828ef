//! Work that may outgrow memory and then continues on disk: the blocking sort (top-k, sorted runs
//! spilled past its memory limit and merged), the sort of byte records (index builds), the run
//! files spilled state is written to, and the approximate sizes memory limits are counted in.
//! Shared by the shard's `find`, its index builds and the aggregation pipeline; knows nothing of
//! them.

mod record_sort;
mod run;
mod size;
mod sort;

pub use record_sort::{RecordOrder, RecordSort, SortedRecords};
pub use run::{RunFile, RunReader};
pub use size::{approximate_document_size, approximate_value_size};
pub use sort::{BlockingSort, SortLimits, SortedDocs};
