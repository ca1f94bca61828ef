//! Document semantics of the query language, independent of storage: filters, projections,
//! sort orders and update operators over `bson::Document`s. Pure functions, no IO.
//!
//! - [`filter`]: match expressions (`find`/`update`/`delete` filters) and their evaluation.
//! - [`projection`]: `find` projections (inclusion, exclusion, `$slice`, `$elemMatch`, `$`).
//! - [`sort`]: sort specifications and MongoDB's sort order over documents (also the router's
//!   merge order).
//! - [`update`]: update operators, replacement documents and upsert seeds.
//! - `pcre`: MongoDB (PCRE) regular expressions on the `regex` crate.
//! - `values`: type names, MongoDB's rendering of values in messages, shared coercions.

pub mod filter;
mod pcre;
pub mod projection;
pub mod sort;
pub mod update;
mod values;

pub use filter::Filter;
pub use projection::Projection;
pub use sort::SortSpec;
pub use update::{UpdateContext, UpdateSpec, upsert_seed};
