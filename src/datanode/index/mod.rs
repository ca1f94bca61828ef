//! Indexes, independent of storage: validated index specifications (`createIndexes` options,
//! default names, conflicts) and the keys a document produces in an index (multikey arrays,
//! parallel-array checks, sparse and partial indexes, hashed fields, `2dsphere` cells).

mod creatable;
mod geo_keys;
mod keys;
pub mod spec;

pub use keys::{IndexKeys, index_keys};
pub use spec::{FieldKind, IndexSpec, KeyField};
