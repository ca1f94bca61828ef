//! The shard side of database versioning: compare the version a router attached with this
//! shard's, refreshing from the config server when they differ, and answer StaleDbVersion when
//! the router is behind (or this shard is not the database's primary).

use super::ShardState;
use crate::catalog::DatabaseVersion;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::config::database_entry;
use bson::doc;
use std::collections::HashMap;
use std::sync::Mutex;

/// What this shard last learned of each database: its version if this shard is its primary,
/// `None` if not (or if it does not exist).
#[derive(Default)]
pub(super) struct DatabaseVersionCache {
    known: Mutex<HashMap<String, Option<DatabaseVersion>>>,
}

impl DatabaseVersionCache {
    fn get(&self, db: &str) -> Option<Option<DatabaseVersion>> {
        self.known.lock().expect("poisoned").get(db).copied()
    }

    fn set(&self, db: &str, version: Option<DatabaseVersion>) {
        self.known
            .lock()
            .expect("poisoned")
            .insert(db.to_string(), version);
    }

    /// Forgets a database, so that the next versioned request refreshes it.
    pub fn forget(&self, db: &str) {
        self.known.lock().expect("poisoned").remove(db);
    }
}

impl ShardState {
    pub(super) async fn check_versions(&self, request: &CommandRequest) -> Result<()> {
        let Some(received) = request.args().document("databaseVersion")? else {
            return Ok(());
        };
        let received = DatabaseVersion::from_document(&received)?;
        if self.versions.get(&request.db) == Some(Some(received)) {
            return Ok(());
        }
        let wanted = self.refresh_database(&request.db).await?;
        if wanted == Some(received) {
            return Ok(());
        }
        let mut extra = doc! {"db": &request.db, "vReceived": received.to_document()};
        if let Some(wanted) = wanted {
            extra.insert("vWanted", wanted.to_document());
        }
        Err(MongoError::new(
            ErrorCode::StaleDbVersion,
            format!("Version mismatch for the database {}", request.db),
        )
        .with_extra(extra))
    }

    /// Reloads a database's entry from the config server and caches this shard's view of it.
    pub(super) async fn refresh_database(&self, db: &str) -> Result<Option<DatabaseVersion>> {
        let identity = self.identity().ok_or_else(|| {
            MongoError::new(
                ErrorCode::ShardingStateNotInitialized,
                "this shard has not been added to a cluster",
            )
        })?;
        let config = self.connector.client(&identity.config_host);
        let version = database_entry(&config, db)
            .await?
            .filter(|entry| entry.primary == identity.shard_name)
            .map(|entry| entry.version);
        self.versions.set(db, version);
        Ok(version)
    }

    pub(super) fn forget_database_version(&self, db: &str) {
        self.versions.forget(db);
    }
}
