//! Sharding catalog types shared by every role (pure data, no IO): namespaces, database
//! versions and `config.databases` entries.

mod database_entry;
mod database_version;
mod namespace;

pub use database_entry::DatabaseEntry;
pub use database_version::DatabaseVersion;
pub use namespace::{
    split_namespace, validate_collection_name, validate_db_name, validate_user_write,
};
