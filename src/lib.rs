//! docgrid: a MongoDB-compatible sharded cluster.
//!
//! Leaves: [`wire`] (bytes ⇄ messages), [`document`] (BSON order and paths), [`error`] (MongoDB's
//! error model). See ARCHITECTURE.md for the map and its invariants.

pub mod catalog;
pub mod cluster;
pub mod command;
pub mod configsvr;
pub mod document;
pub mod error;
pub mod router;
pub mod rpc;
pub mod server;
pub mod shard;
pub mod wire;
