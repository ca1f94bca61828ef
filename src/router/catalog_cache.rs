//! The router's cache of database routing info (primary shard and database version), loaded
//! lazily from the config server and refreshed when a shard says the router is stale.

use crate::catalog::{DatabaseEntry, DatabaseVersion};
use crate::error::Result;
use crate::rpc::{NodeClient, config::database_entry};
use bson::doc;
use std::collections::HashMap;
use std::sync::RwLock;

#[derive(Default)]
pub struct DatabaseCache {
    entries: RwLock<HashMap<String, DatabaseEntry>>,
}

impl DatabaseCache {
    /// The database's routing info; loads it on a miss and, when `create` is set, asks the
    /// config server to create the database (writes create databases).
    pub async fn get(
        &self,
        config: &NodeClient,
        db: &str,
        create: bool,
    ) -> Result<Option<DatabaseEntry>> {
        if let Some(entry) = self.entries.read().expect("poisoned").get(db) {
            return Ok(Some(entry.clone()));
        }
        let entry = if create {
            let reply = config
                .run_doc("admin", doc! {"_configsvrCreateDatabase": db})
                .await?;
            Some(DatabaseEntry {
                name: db.to_string(),
                primary: reply.get_str("primary").unwrap_or_default().to_string(),
                version: DatabaseVersion::from_document(
                    reply.get_document("databaseVersion").unwrap_or(&doc! {}),
                )?,
            })
        } else {
            database_entry(config, db).await?
        };
        if let Some(entry) = &entry {
            self.entries
                .write()
                .expect("poisoned")
                .insert(db.to_string(), entry.clone());
        }
        Ok(entry)
    }

    /// Forgets a database so the next access reloads it (after StaleDbVersion or a drop).
    pub fn invalidate(&self, db: &str) {
        self.entries.write().expect("poisoned").remove(db);
    }

    pub fn clear(&self) {
        self.entries.write().expect("poisoned").clear();
    }
}
