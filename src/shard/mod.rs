//! The shard role: stores documents, checks the versions routers attach, executes queries.

pub mod query;
