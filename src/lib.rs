//! docgrid: a MongoDB-compatible sharded cluster.
//!
//! The modules form layers; each uses only the layers before it (`tests/layering.rs` checks
//! it): [`error`] (MongoDB's error model), [`depth`] (nesting limits, the stack recursion needs),
//! [`document`] (BSON order, key encoding, paths), [`wire`] (bytes ⇄ messages), [`expression`]
//! (the aggregation expression language), [`query`] (filters, projections, sort orders),
//! [`catalog`] (namespaces, versions, shard keys), [`spill`] (sorting and spilling to disk),
//! [`command`] (commands as roles exchange them), [`aggregate`] (the pipeline), [`update`]
//! (the update language), [`server`] (accept loop, dispatch, shared commands), [`rpc`] (calls
//! between roles), [`datanode`] (what every mongod has: storage, query execution, the data
//! commands). The roles, which never use one another: [`shard`] and [`configsvr`] (both data
//! nodes), [`router`]; [`cluster`] assembles processes. See ARCHITECTURE.md.

pub mod aggregate;
pub mod catalog;
pub mod cluster;
pub mod command;
pub mod configsvr;
pub mod datanode;
pub mod depth;
pub mod document;
pub mod error;
pub mod expression;
pub mod query;
pub mod router;
pub mod rpc;
pub mod server;
pub mod shard;
pub mod spill;
pub mod update;
pub mod wire;
