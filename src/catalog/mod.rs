//! Sharding catalog types shared by every role (pure data, no IO): namespaces and database
//! versions.

mod database_version;
mod namespace;

pub use database_version::DatabaseVersion;
pub use namespace::{validate_collection_name, validate_db_name, validate_user_write};
