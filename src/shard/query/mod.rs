//! Document semantics of the query language, independent of storage: filters, projections,
//! sort orders and update operators over `bson::Document`s.

pub mod filter;
pub mod projection;
pub mod sort;
pub mod update;
