//! The router's routing table cache (the design's CatalogCache): databases (primary shard and
//! database version) and collections (sharded or not; for sharded ones the entry and the chunk
//! map), loaded lazily from the config server and dropped when a shard says the router is
//! stale, so the next request reloads them.

use crate::catalog::{ChunkMap, CollectionEntry, DatabaseEntry, DatabaseVersion};
use crate::error::Result;
use crate::rpc::{
    NodeClient,
    config::{collection_routing, database_entry},
};
use bson::doc;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

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

/// A sharded collection's routing: its entry (key, generation) and chunks.
#[derive(Debug)]
pub struct CollectionRouting {
    pub entry: CollectionEntry,
    pub chunks: ChunkMap,
}

/// Which collections are sharded, and how. Unsharded collections are cached too (as `None`),
/// so that routing an unsharded collection costs no config server round trip after the first.
#[derive(Default)]
pub struct CollectionCache {
    entries: RwLock<HashMap<String, Option<Arc<CollectionRouting>>>>,
}

impl CollectionCache {
    /// The routing of `ns`: `None` when it is not sharded. Loads it on a miss.
    pub async fn get(
        &self,
        config: &NodeClient,
        ns: &str,
    ) -> Result<Option<Arc<CollectionRouting>>> {
        if let Some(known) = self.entries.read().expect("poisoned").get(ns) {
            return Ok(known.clone());
        }
        let routing = match collection_routing(config, ns).await? {
            Some((entry, chunks)) => Some(Arc::new(CollectionRouting {
                chunks: ChunkMap::new(&entry.key, chunks)?,
                entry,
            })),
            None => None,
        };
        self.entries
            .write()
            .expect("poisoned")
            .insert(ns.to_string(), routing.clone());
        Ok(routing)
    }

    /// Forgets a collection (after StaleConfig, or a change this router made).
    pub fn invalidate(&self, ns: &str) {
        self.entries.write().expect("poisoned").remove(ns);
    }

    /// Forgets every collection of a database (after it was dropped).
    pub fn invalidate_database(&self, db: &str) {
        let prefix = format!("{db}.");
        self.entries
            .write()
            .expect("poisoned")
            .retain(|ns, _| !ns.starts_with(&prefix));
    }

    pub fn clear(&self) {
        self.entries.write().expect("poisoned").clear();
    }
}
