//! The router's routing table cache (the design's CatalogCache): databases (primary shard and
//! database version) and collections (sharded or not; for sharded ones the entry and the chunk
//! map), loaded lazily from the config server and dropped when a shard says the router is
//! stale, so the next request reloads them — incrementally (only the chunks changed since the
//! cached collection version) when the collection is still the same generation, in full
//! otherwise (unknown, dropped, re-sharded or refined: a new epoch or timestamp).

use crate::catalog::{ChunkMap, CollectionEntry, DatabaseEntry, DatabaseVersion};
use crate::error::Result;
use crate::rpc::{
    NodeClient,
    config::{chunks_since, collection_entry, collection_routing, database_entry},
};
use crate::server::stats::Stats;
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

/// A cached collection: `None` when it is not sharded. Requests for a namespace being loaded
/// wait on the one load in flight (no thundering herd on the config server).
type CollectionSlot = Arc<tokio::sync::OnceCell<Option<Arc<CollectionRouting>>>>;

/// How many times a failed load from the config server is tried before the error is returned
/// (the first try and two retries, as the design's CatalogCache does).
const LOAD_ATTEMPTS: usize = 3;

/// Which collections are sharded, and how. Unsharded collections are cached too (as `None`),
/// so that routing an unsharded collection costs no config server round trip after the first.
#[derive(Default)]
pub struct CollectionCache {
    entries: RwLock<HashMap<String, CollectionSlot>>,
    /// The routing of collections invalidated since, kept as the base of an incremental
    /// refresh.
    previous: RwLock<HashMap<String, Arc<CollectionRouting>>>,
}

impl CollectionCache {
    /// The routing of `ns`: `None` when it is not sharded. Loads it on a miss.
    pub async fn get(
        &self,
        config: &NodeClient,
        ns: &str,
        stats: &Stats,
    ) -> Result<Option<Arc<CollectionRouting>>> {
        // Every routed request passes here: a read lock finds a known namespace.
        let known = self.entries.read().expect("poisoned").get(ns).cloned();
        let slot = match known {
            Some(slot) => slot,
            None => Arc::clone(
                self.entries
                    .write()
                    .expect("poisoned")
                    .entry(ns.to_string())
                    .or_default(),
            ),
        };
        slot.get_or_try_init(|| {
            let previous = self.previous.write().expect("poisoned").remove(ns);
            load_collection(config, ns, previous, stats)
        })
        .await
        .cloned()
    }

    /// Forgets a collection (after StaleConfig, or a change this router made); what was known
    /// of it is the base of the next, incremental, load.
    pub fn invalidate(&self, ns: &str) {
        let slot = self.entries.write().expect("poisoned").remove(ns);
        if let Some(Some(routing)) = slot.as_ref().and_then(|s| s.get()) {
            self.previous
                .write()
                .expect("poisoned")
                .insert(ns.to_string(), Arc::clone(routing));
        }
    }

    /// Forgets every collection of a database (after it was dropped).
    pub fn invalidate_database(&self, db: &str) {
        let prefix = format!("{db}.");
        self.entries
            .write()
            .expect("poisoned")
            .retain(|ns, _| !ns.starts_with(&prefix));
        self.previous
            .write()
            .expect("poisoned")
            .retain(|ns, _| !ns.starts_with(&prefix));
    }

    pub fn clear(&self) {
        self.entries.write().expect("poisoned").clear();
        self.previous.write().expect("poisoned").clear();
    }
}

async fn load_collection(
    config: &NodeClient,
    ns: &str,
    previous: Option<Arc<CollectionRouting>>,
    stats: &Stats,
) -> Result<Option<Arc<CollectionRouting>>> {
    let mut attempt = 1;
    loop {
        match refresh(config, ns, previous.as_deref(), stats).await {
            Ok(routing) => return Ok(routing.map(Arc::new)),
            Err(e) if attempt < LOAD_ATTEMPTS => {
                tracing::warn!(ns = %ns, attempt, error = %e, "loading routing info failed; retrying");
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Loads a collection's routing: from `previous` plus the chunks changed since its collection
/// version when the generation is unchanged, from every chunk otherwise (or when the changes do
/// not tile with what was cached).
async fn refresh(
    config: &NodeClient,
    ns: &str,
    previous: Option<&CollectionRouting>,
    stats: &Stats,
) -> Result<Option<CollectionRouting>> {
    let Some(entry) = collection_entry(config, ns).await? else {
        return Ok(None);
    };
    let base = previous
        .filter(|p| p.entry.generation == entry.generation)
        .and_then(|p| Some((p, p.chunks.collection_version()?)));
    if let Some((previous, version)) = base {
        Stats::add(&stats.incremental_refreshes, 1);
        let changed = chunks_since(config, &entry, Some(version.lastmod())).await?;
        match previous.chunks.with_updates(&entry.key, changed) {
            Ok(chunks) => return Ok(Some(CollectionRouting { entry, chunks })),
            Err(e) => {
                tracing::debug!(ns = %ns, error = %e, "incremental refresh incomplete; loading every chunk")
            }
        }
    }
    Stats::add(&stats.full_refreshes, 1);
    Ok(collection_routing(config, ns)
        .await?
        .map(|(entry, chunks)| CollectionRouting { entry, chunks }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::CommandRequest;
    use crate::server::logbuf::LogBuffer;
    use crate::server::{CmdLine, Node, Parameters, RequestContext, Role, Service};
    use bson::{RawDocumentBuf, rawdoc};
    use futures::future::BoxFuture;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A config server that knows no sharded collection, counts the lookups and answers slowly
    /// (so that concurrent lookups overlap); the first `failures` lookups fail.
    struct FakeConfig {
        node: Node,
        lookups: AtomicUsize,
        failures: usize,
    }

    impl Service for FakeConfig {
        fn node(&self) -> &Node {
            &self.node
        }

        fn execute<'a>(
            &'a self,
            _ctx: &'a RequestContext,
            _request: CommandRequest,
        ) -> BoxFuture<'a, RawDocumentBuf> {
            Box::pin(async move {
                let n = self.lookups.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                if n < self.failures {
                    return rawdoc! {"ok": 0.0, "errmsg": "unreachable", "code": 6, "codeName": "HostUnreachable"};
                }
                rawdoc! {"cursor": {"id": 0_i64, "ns": "config.collections", "firstBatch": []}, "ok": 1.0}
            })
        }
    }

    fn config(failures: usize) -> (Arc<FakeConfig>, NodeClient) {
        let fake = Arc::new(FakeConfig {
            node: Node::new(
                Role::ConfigServer,
                CmdLine::default(),
                Parameters::new(),
                Arc::new(LogBuffer::default()),
            ),
            lookups: AtomicUsize::new(0),
            failures,
        });
        let client = NodeClient::local("inproc:config", fake.clone());
        (fake, client)
    }

    #[tokio::test]
    async fn concurrent_requests_share_one_load() {
        let (fake, client) = config(0);
        let cache = CollectionCache::default();
        let stats = Stats::default();
        let loads = (0..8).map(|_| cache.get(&client, "db.c", &stats));
        for routing in futures::future::join_all(loads).await {
            assert!(routing.unwrap().is_none());
        }
        assert_eq!(fake.lookups.load(Ordering::SeqCst), 1);
        // Cached: no more lookups until invalidated.
        cache.get(&client, "db.c", &stats).await.unwrap();
        assert_eq!(fake.lookups.load(Ordering::SeqCst), 1);
        cache.invalidate("db.c");
        cache.get(&client, "db.c", &stats).await.unwrap();
        assert_eq!(fake.lookups.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_failed_load_is_retried_twice() {
        let (fake, client) = config(2);
        let cache = CollectionCache::default();
        let stats = Stats::default();
        assert!(cache.get(&client, "db.c", &stats).await.unwrap().is_none());
        assert_eq!(fake.lookups.load(Ordering::SeqCst), 3);
        let (fake, client) = config(3);
        assert!(cache.get(&client, "db.d", &stats).await.is_err());
        assert_eq!(fake.lookups.load(Ordering::SeqCst), 3);
    }
}
