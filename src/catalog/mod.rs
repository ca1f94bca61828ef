//! Sharding catalog types shared by every role (pure data, no IO): namespaces, database
//! versions and `config.databases` entries, chunk versions, shard key patterns, chunk maps and what one shard owns.

mod chunk_map;
mod chunk_version;
mod collection_entry;
mod database_entry;
mod database_version;
mod namespace;
mod ownership;
mod shard_key;

pub use chunk_map::{Chunk, ChunkMap};
pub use chunk_version::{ChunkVersion, CollectionGeneration};
pub use collection_entry::{CollectionEntry, chunk_document, chunk_from_document};
pub use database_entry::DatabaseEntry;
pub use database_version::DatabaseVersion;
pub use namespace::{
    check_database_name, check_rename, check_shardable, split_namespace, validate_collection_name,
    validate_db_name, validate_user_create, validate_user_write,
};
pub use ownership::OwnershipFilter;
#[cfg(test)]
pub(crate) use ownership::owning_every_chunk;
pub use shard_key::{ShardKeyField, ShardKeyPattern};
