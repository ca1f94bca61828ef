//! Indexes, independent of storage: validated index specifications (`createIndexes` options,
//! default names, conflicts) and the keys a document produces in an index (multikey arrays,
//! parallel-array checks, sparse and partial indexes, hashed fields; a text index's terms in
//! `text_keys`, `2dsphere` and `2d` cells in `geo_keys`; wildcard indexes' paths in `wildcard`, their
//! `($_path, value)` keys in `wildcard_keys`, compound wildcard keys' checks in
//! `wildcard_compound`).

mod creatable;
mod geo_keys;
mod keys;
pub mod spec;
mod text_keys;
pub mod wildcard;
mod wildcard_compound;
mod wildcard_keys;

pub use keys::{IndexKeys, index_keys};
pub use spec::{FieldKind, IndexSpec, KeyField};
pub use text_keys::stored_term;
pub use wildcard_keys::wildcard_key;
