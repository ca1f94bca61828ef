//! Reads of the routing table that routers and shards make on the config server.

use super::NodeClient;
use crate::catalog::DatabaseEntry;
use crate::command::first_batch;
use crate::error::Result;

/// A database's `config.databases` entry, if the database exists.
pub async fn database_entry(config: &NodeClient, db: &str) -> Result<Option<DatabaseEntry>> {
    let reply = config
        .run_doc("config", DatabaseEntry::find_command(db))
        .await?;
    first_batch(&reply)
        .first()
        .map(DatabaseEntry::from_document)
        .transpose()
}
