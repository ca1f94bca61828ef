//! The shard side of database versioning: compare the version a router attached with this
//! shard's, refreshing from the config server when they differ, and answer StaleDbVersion when
//! the router is behind (or this shard is not the database's primary).

use super::ShardState;
use crate::catalog::DatabaseVersion;
use crate::command::ShardingState;
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
    refreshes: super::single_flight::SingleFlight,
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
    /// Checks the `databaseVersion` a router attached (none: nothing to check).
    pub(super) async fn check_versions(&self, sharding: &ShardingState) -> Result<()> {
        let (Some(received), Some(db)) = (sharding.database_version(), sharding.database()) else {
            return Ok(());
        };
        if self.versions.get(db) == Some(Some(received)) {
            return Ok(());
        }
        let wanted = self.refresh_database(db).await?;
        if wanted == Some(received) {
            return Ok(());
        }
        let mut extra = doc! {"db": db, "vReceived": received.to_document()};
        if let Some(wanted) = wanted {
            extra.insert("vWanted", wanted.to_document());
        }
        Err(MongoError::new(
            ErrorCode::StaleDbVersion,
            format!("Version mismatch for the database {db}"),
        )
        .with_extra(extra))
    }

    /// Reloads a database's entry from the config server and caches this shard's view of it.
    /// Concurrent requests share refreshes.
    pub(super) async fn refresh_database(&self, db: &str) -> Result<Option<DatabaseVersion>> {
        self.versions
            .refreshes
            .refresh(
                db,
                || self.versions.get(db),
                || self.load_database_version(db),
            )
            .await
    }

    async fn load_database_version(&self, db: &str) -> Result<Option<DatabaseVersion>> {
        let identity = self.require_identity()?;
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
