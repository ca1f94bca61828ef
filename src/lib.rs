//! docgrid: a MongoDB-compatible sharded cluster.
//!
//! Leaves: [`wire`] (bytes ⇄ messages), [`depth`] (nesting limits, the stack recursion needs),
//! [`document`] (BSON order, key encoding, paths), [`error`] (MongoDB's error model), [`catalog`] (namespaces, versions). On them: [`command`]
//! (commands as roles exchange them), [`query`] and [`aggregate`] (the query language, pure),
//! [`server`] (accept loop, dispatch, shared commands), [`rpc`] (calls between roles). On those:
//! [`datanode`] (what every mongod has: storage, query execution, the data commands). The roles:
//! [`shard`] and [`configsvr`] (both data nodes), [`router`]; [`cluster`] assembles processes.
//! See ARCHITECTURE.md.

pub mod aggregate;
pub mod catalog;
pub mod cluster;
pub mod command;
pub mod configsvr;
pub mod datanode;
pub mod depth;
pub mod document;
pub mod error;
pub mod query;
pub mod router;
pub mod rpc;
pub mod server;
pub mod shard;
pub mod spill;
pub mod wire;
