//! End-to-end tests through the official MongoDB Rust driver against a docgrid cluster started
//! in the test (in-process on port 0, or as separate `docgrid` processes).

mod harness;

mod aggregation_memory;
mod aggregation_sharding;
mod bulk_write;
mod capped;
mod catalog;
mod cli;
mod collection_stages;
mod config_db;
mod crud;
mod cursors;
mod ddl_concurrency;
mod ddl_faults;
mod ddl_locks;
mod durability;
mod explain;
mod expression_operators;
mod failpoints;
mod find_options;
mod handshake;
mod index_queries;
mod indexes;
mod introspection;
mod let_variables;
mod metadata_consistency;
mod move_primary;
mod multiprocess;
mod ownership;
mod pipeline_updates;
mod query_expressions;
mod refine_shard_key;
mod rename_faults;
mod renames;
mod routing_property;
mod shard_key_updates;
mod shard_versioning;
mod sharded_queries;
mod sharding;
mod sorting;
mod stale_versions;
mod ttl;
mod validation;
mod views;
mod wire;
