//! The router's cache of database routing info (primary shard and database version), loaded
//! lazily from the config server and refreshed when a shard says the router is stale.

use crate::catalog::DatabaseVersion;
use crate::error::Result;
use crate::rpc::NodeClient;
use bson::{Bson, doc};
use std::collections::HashMap;
use std::sync::RwLock;

/// Where a database's unsharded collections live.
#[derive(Clone, Debug, PartialEq)]
pub struct CachedDatabase {
    pub primary: String,
    pub version: DatabaseVersion,
}

#[derive(Default)]
pub struct DatabaseCache {
    entries: RwLock<HashMap<String, CachedDatabase>>,
}

impl DatabaseCache {
    /// The database's routing info; loads it on a miss and, when `create` is set, asks the
    /// config server to create the database (writes create databases).
    pub async fn get(
        &self,
        config: &NodeClient,
        db: &str,
        create: bool,
    ) -> Result<Option<CachedDatabase>> {
        if let Some(entry) = self.entries.read().expect("poisoned").get(db) {
            return Ok(Some(entry.clone()));
        }
        let entry = if create {
            let reply = config
                .run_doc("admin", doc! {"_configsvrCreateDatabase": db})
                .await?;
            Some(CachedDatabase {
                primary: reply.get_str("primary").unwrap_or_default().to_string(),
                version: DatabaseVersion::from_document(
                    reply.get_document("databaseVersion").unwrap_or(&doc! {}),
                )?,
            })
        } else {
            load(config, db).await?
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

async fn load(config: &NodeClient, db: &str) -> Result<Option<CachedDatabase>> {
    let reply = config
        .run_doc(
            "config",
            doc! {"find": "databases", "filter": {"_id": db}, "limit": 1, "singleBatch": true},
        )
        .await?;
    let entry = reply
        .get_document("cursor")
        .ok()
        .and_then(|c| c.get_array("firstBatch").ok())
        .and_then(|b| b.first())
        .and_then(Bson::as_document);
    match entry {
        None => Ok(None),
        Some(entry) => Ok(Some(CachedDatabase {
            primary: entry.get_str("primary").unwrap_or_default().to_string(),
            version: DatabaseVersion::from_document(
                entry.get_document("version").unwrap_or(&doc! {}),
            )?,
        })),
    }
}
