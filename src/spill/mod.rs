//! Work that may outgrow memory and then continues on disk: the blocking sort (top-k, sorted runs
//! spilled past its memory limit and merged), the run files spilled state is written to, and the
//! approximate sizes memory limits are counted in. Shared by the shard's `find` and the
//! aggregation pipeline; knows nothing of either.

mod run;
mod size;
mod sort;

pub use run::{RunFile, RunReader};
pub use size::{approximate_document_size, approximate_value_size};
pub use sort::{BlockingSort, SortLimits, SortedDocs};
