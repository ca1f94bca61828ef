//! The router's routing table cache (the design's CatalogCache): databases (primary shard and
//! database version) and collections (sharded or not; for sharded ones the entry and the chunk
//! map), loaded lazily from the config server, one load in flight per database or namespace.
//! After a shard refuses a request as stale, an entry is dropped only if it is the one the
//! request used or older than what the shard wants (`refresh_stale`), so the next request
//! reloads it — incrementally (only the chunks changed since the cached collection version)
//! when the collection is still the same generation, in full otherwise (unknown, dropped,
//! re-sharded or refined: a new epoch or timestamp).

use crate::catalog::{ChunkMap, ChunkVersion, CollectionEntry, DatabaseEntry, DatabaseVersion};
use crate::error::Result;
use crate::rpc::{
    NodeClient,
    config::{chunks_since, collection_entry, collection_routing, database_entry},
};
use crate::server::stats::Stats;
use bson::doc;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// One cached entry: requests for a name being loaded wait on the one load in flight (no
/// thundering herd on the config server). Each slot has a serial number, so that a stale
/// refusal drops only the load the refused request used.
struct Slot<V> {
    serial: u64,
    cell: tokio::sync::OnceCell<V>,
}

/// The slots of one kind of entry (databases, collections) by name.
struct Slots<V> {
    entries: RwLock<HashMap<String, Arc<Slot<V>>>>,
    /// The serial number of the last slot made.
    serials: AtomicU64,
}

impl<V> Default for Slots<V> {
    fn default() -> Self {
        Slots {
            entries: RwLock::default(),
            serials: AtomicU64::default(),
        }
    }
}

impl<V> Slots<V> {
    /// The slot of `name`, an empty one made on a miss.
    fn slot(&self, name: &str) -> Arc<Slot<V>> {
        // Every routed request passes here: a read lock finds a known name.
        if let Some(slot) = self.entries.read().expect("poisoned").get(name) {
            return Arc::clone(slot);
        }
        let mut entries = self.entries.write().expect("poisoned");
        let slot = entries.entry(name.to_string()).or_insert_with(|| {
            Arc::new(Slot {
                serial: self.serials.fetch_add(1, Ordering::Relaxed) + 1,
                cell: tokio::sync::OnceCell::new(),
            })
        });
        Arc::clone(slot)
    }

    /// Removes `name`'s slot if `which` says so, and returns it.
    fn remove_if(&self, name: &str, which: impl FnOnce(&Slot<V>) -> bool) -> Option<Arc<Slot<V>>> {
        let mut entries = self.entries.write().expect("poisoned");
        match entries.get(name) {
            Some(slot) if which(slot) => entries.remove(name),
            _ => None,
        }
    }

    fn retain(&self, mut keep: impl FnMut(&str) -> bool) {
        self.entries
            .write()
            .expect("poisoned")
            .retain(|name, _| keep(name));
    }

    fn clear(&self) {
        self.entries.write().expect("poisoned").clear();
    }
}

/// Whether the entry cached now answers a shard's stale refusal, so that the request is sent
/// again with it at once rather than after a reload: `used_is_current` says whether it is the
/// very entry the refused request used (when that is known), `satisfies_wanted` whether it
/// has the version the shard wants (when the shard said).
fn answers_refusal(used_is_current: Option<bool>, satisfies_wanted: Option<bool>) -> bool {
    match (used_is_current, satisfies_wanted) {
        // Nothing newer than what was refused.
        (Some(true), _) => false,
        (_, Some(satisfies)) => satisfies,
        // Reloaded since the request was routed, and the shard did not say what it wants.
        (Some(false), None) => true,
        // Neither what the request used nor what the shard wants is known.
        (None, None) => false,
    }
}

/// Databases: a load that finds no such database leaves its slot empty, so absence is not
/// cached (the database may be created).
#[derive(Default)]
pub struct DatabaseCache {
    slots: Slots<DatabaseEntry>,
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
        let slot = self.slots.slot(db);
        // `Err(None)`: no such database; the cell stays empty and the next caller loads again.
        let loaded = slot
            .cell
            .get_or_try_init(|| async {
                match load_database(config, db, create).await {
                    Ok(Some(entry)) => Ok(entry),
                    Ok(None) => Err(None),
                    Err(e) => Err(Some(e)),
                }
            })
            .await;
        match loaded {
            Ok(entry) => Ok(Some(entry.clone())),
            Err(None) => Ok(None),
            Err(Some(e)) => Err(e),
        }
    }

    /// After a shard refused a request as stale for database `db`: the request was routed
    /// with version `used` (when known), the shard wants `wanted` (when it said). The cached
    /// entry is dropped only when it is the one the request used or older than `wanted`: when
    /// another request already reloaded a newer-or-equal entry, it is kept and used at once.
    pub async fn refresh_stale(
        &self,
        config: &NodeClient,
        db: &str,
        used: Option<DatabaseVersion>,
        wanted: Option<DatabaseVersion>,
    ) -> Result<()> {
        // Waits for a load in flight: it may be the newer entry.
        let Some(current) = self.get(config, db, false).await? else {
            return Ok(());
        };
        let fresh = answers_refusal(
            used.map(|used| used == current.version),
            wanted.map(|wanted| database_satisfies(&current.version, &wanted)),
        );
        if !fresh {
            // Only if it is still that entry: a newer one loaded since is kept.
            self.slots.remove_if(db, |slot| {
                slot.cell
                    .get()
                    .is_some_and(|e| e.version == current.version)
            });
        }
        Ok(())
    }

    /// Forgets a database so the next access reloads it (after a change this router made, or
    /// a drop).
    pub fn invalidate(&self, db: &str) {
        self.slots.remove_if(db, |_| true);
    }

    pub fn clear(&self) {
        self.slots.clear();
    }
}

/// Whether a cached database version is the one a shard wants or a later one: the same
/// incarnation (uuid and timestamp) at the same or a later `lastMod`. Versions of different
/// incarnations do not compare, so they never satisfy.
fn database_satisfies(cached: &DatabaseVersion, wanted: &DatabaseVersion) -> bool {
    cached.uuid == wanted.uuid
        && cached.timestamp == wanted.timestamp
        && cached.last_mod >= wanted.last_mod
}

/// Reads a database's entry from the config server, creating the database first when
/// `create` is set.
async fn load_database(
    config: &NodeClient,
    db: &str,
    create: bool,
) -> Result<Option<DatabaseEntry>> {
    if !create {
        return database_entry(config, db).await;
    }
    let reply = config
        .run_doc("admin", doc! {"_configsvrCreateDatabase": db})
        .await?;
    Ok(Some(DatabaseEntry {
        name: db.to_string(),
        primary: reply.get_str("primary").unwrap_or_default().to_string(),
        version: DatabaseVersion::from_document(
            reply.get_document("databaseVersion").unwrap_or(&doc! {}),
        )?,
    }))
}

/// A sharded collection's routing: its entry (key, generation) and chunks.
#[derive(Debug)]
pub struct CollectionRouting {
    pub entry: CollectionEntry,
    pub chunks: ChunkMap,
}

/// One load of a collection's routing, as a routed request used it.
#[derive(Clone)]
pub struct CachedCollection {
    /// `None` when the collection is not sharded.
    pub routing: Option<Arc<CollectionRouting>>,
    /// Which load this is (see [`CollectionCache::refresh_stale`]).
    pub serial: u64,
}

/// How many times a failed load from the config server is tried before the error is returned
/// (the first try and two retries, as the design's CatalogCache does).
const LOAD_ATTEMPTS: usize = 3;

/// Which collections are sharded, and how. Unsharded collections are cached too (as `None`),
/// so that routing an unsharded collection costs no config server round trip after the first.
#[derive(Default)]
pub struct CollectionCache {
    /// `None` for a collection that is not sharded.
    slots: Slots<Option<Arc<CollectionRouting>>>,
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
        Ok(self.get_cached(config, ns, stats).await?.routing)
    }

    /// [`get`](Self::get), with which load answered.
    pub async fn get_cached(
        &self,
        config: &NodeClient,
        ns: &str,
        stats: &Stats,
    ) -> Result<CachedCollection> {
        let slot = self.slots.slot(ns);
        let routing = slot
            .cell
            .get_or_try_init(|| {
                let previous = self.previous.write().expect("poisoned").remove(ns);
                load_collection(config, ns, previous, stats)
            })
            .await?
            .clone();
        Ok(CachedCollection {
            routing,
            serial: slot.serial,
        })
    }

    /// After a shard refused a request on `ns` as stale: the request used load `used` (when
    /// known), the shard `shard` wants version `wanted` (when it said). The cached load is
    /// dropped only when it is the one the request used or older than `wanted`; when another
    /// request already reloaded a newer-or-equal routing, it is kept and used at once (a burst
    /// of refusals does not throw away a table just loaded).
    pub async fn refresh_stale(
        &self,
        config: &NodeClient,
        ns: &str,
        stats: &Stats,
        used: Option<u64>,
        wanted: Option<(&str, ChunkVersion)>,
    ) -> Result<()> {
        // Waits for a load in flight: it may be the newer routing.
        let current = self.get_cached(config, ns, stats).await?;
        let fresh = answers_refusal(
            used.map(|used| used == current.serial),
            wanted.map(|(shard, wanted)| {
                collection_satisfies(current.routing.as_deref(), shard, &wanted)
            }),
        );
        if !fresh {
            self.invalidate_if(ns, current.serial);
        }
        Ok(())
    }

    /// Forgets a collection (after a change this router made); what was known of it is the
    /// base of the next, incremental, load.
    pub fn invalidate(&self, ns: &str) {
        self.remove_if(ns, |_| true);
    }

    /// Forgets load `serial` of `ns`, if it is still the cached one.
    fn invalidate_if(&self, ns: &str, serial: u64) {
        self.remove_if(ns, |slot| slot.serial == serial);
    }

    fn remove_if(
        &self,
        ns: &str,
        which: impl FnOnce(&Slot<Option<Arc<CollectionRouting>>>) -> bool,
    ) {
        let slot = self.slots.remove_if(ns, which);
        if let Some(Some(routing)) = slot.as_ref().and_then(|s| s.cell.get()) {
            self.previous
                .write()
                .expect("poisoned")
                .insert(ns.to_string(), Arc::clone(routing));
        }
    }

    /// Forgets every collection of a database (after it was dropped).
    pub fn invalidate_database(&self, db: &str) {
        let prefix = format!("{db}.");
        self.slots.retain(|ns| !ns.starts_with(&prefix));
        self.previous
            .write()
            .expect("poisoned")
            .retain(|ns, _| !ns.starts_with(&prefix));
    }

    pub fn clear(&self) {
        self.slots.clear();
        self.previous.write().expect("poisoned").clear();
    }
}

/// Whether a cached routing gives `shard` the version it wants, or a later one of the same
/// generation. A shard wanting the unsharded version is satisfied by a cache that knows the
/// collection as unsharded.
fn collection_satisfies(
    cached: Option<&CollectionRouting>,
    shard: &str,
    wanted: &ChunkVersion,
) -> bool {
    match cached {
        None => *wanted == ChunkVersion::unsharded(),
        Some(routing) => routing
            .version_on(shard)
            .compare(wanted)
            .is_some_and(|order| order != std::cmp::Ordering::Less),
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

    /// A config server that knows no sharded collection and one database (`db`, version
    /// `DB_VERSION`), counts the lookups and answers slowly (so that concurrent lookups
    /// overlap); the first `failures` lookups fail.
    struct FakeConfig {
        node: Node,
        lookups: AtomicUsize,
        failures: usize,
        /// The `lastMod` of database `db`'s version.
        db_last_mod: std::sync::atomic::AtomicI32,
    }

    fn db_version(last_mod: i32) -> DatabaseVersion {
        DatabaseVersion {
            uuid: uuid::Uuid::from_u128(7),
            timestamp: bson::Timestamp {
                time: 1,
                increment: 0,
            },
            last_mod,
        }
    }

    impl Service for FakeConfig {
        fn node(&self) -> &Node {
            &self.node
        }

        fn execute<'a>(
            &'a self,
            _ctx: &'a RequestContext,
            request: CommandRequest,
        ) -> BoxFuture<'a, RawDocumentBuf> {
            Box::pin(async move {
                let n = self.lookups.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                if n < self.failures {
                    return rawdoc! {"ok": 0.0, "errmsg": "unreachable", "code": 6, "codeName": "HostUnreachable"};
                }
                if matches!(
                    request.args().target(),
                    Ok(bson::RawBsonRef::String("databases"))
                ) {
                    let entry = DatabaseEntry {
                        name: "db".into(),
                        primary: "shard0".into(),
                        version: db_version(self.db_last_mod.load(Ordering::SeqCst)),
                    };
                    return RawDocumentBuf::from_document(&doc! {
                        "cursor": {"id": 0_i64, "ns": "config.databases", "firstBatch": [entry.to_document()]},
                        "ok": 1.0,
                    })
                    .unwrap();
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
            db_last_mod: std::sync::atomic::AtomicI32::new(1),
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

    #[tokio::test]
    async fn concurrent_database_lookups_share_one_load() {
        let (fake, client) = config(0);
        let cache = DatabaseCache::default();
        let loads = (0..8).map(|_| cache.get(&client, "db", false));
        for entry in futures::future::join_all(loads).await {
            assert_eq!(entry.unwrap().unwrap().primary, "shard0");
        }
        assert_eq!(fake.lookups.load(Ordering::SeqCst), 1);
        cache.get(&client, "db", false).await.unwrap();
        assert_eq!(fake.lookups.load(Ordering::SeqCst), 1);
    }

    /// Eight requests routed with the same cached entry are all refused as stale: the first
    /// refusal drops that entry, the reload it causes is shared, and the later refusals find a
    /// newer entry than the one they used and keep it — one refresh, not eight.
    #[tokio::test]
    async fn a_burst_of_stale_database_refusals_refreshes_once() {
        let (fake, client) = config(0);
        let cache = DatabaseCache::default();
        let used = cache.get(&client, "db", false).await.unwrap().unwrap();
        assert_eq!(fake.lookups.load(Ordering::SeqCst), 1);
        // The database's version moves on (a movePrimary); the shard wants the new one.
        fake.db_last_mod.store(2, Ordering::SeqCst);
        let refusals = (0..8)
            .map(|_| cache.refresh_stale(&client, "db", Some(used.version), Some(db_version(2))));
        for refreshed in futures::future::join_all(refusals).await {
            refreshed.unwrap();
        }
        assert_eq!(fake.lookups.load(Ordering::SeqCst), 2);
        let current = cache.get(&client, "db", false).await.unwrap().unwrap();
        assert_eq!(current.version, db_version(2));
        assert_eq!(fake.lookups.load(Ordering::SeqCst), 2);
        // A refusal wanting a newer version than the cache holds does drop it.
        cache
            .refresh_stale(&client, "db", Some(used.version), Some(db_version(3)))
            .await
            .unwrap();
        cache.get(&client, "db", false).await.unwrap();
        assert_eq!(fake.lookups.load(Ordering::SeqCst), 3);
    }

    /// As for databases: a burst of StaleConfig refusals of requests that used one load of a
    /// collection's routing throws away only that load, not the one reloaded after the first
    /// refusal.
    #[tokio::test]
    async fn a_burst_of_stale_collection_refusals_refreshes_once() {
        let (fake, client) = config(0);
        let cache = CollectionCache::default();
        let stats = Stats::default();
        let used = cache.get_cached(&client, "db.c", &stats).await.unwrap();
        assert!(used.routing.is_none());
        assert_eq!(fake.lookups.load(Ordering::SeqCst), 1);
        // The shard says the collection is unsharded, as the config server does.
        let wanted = Some(("shard0", ChunkVersion::unsharded()));
        let refusals =
            (0..8).map(|_| cache.refresh_stale(&client, "db.c", &stats, Some(used.serial), wanted));
        for refreshed in futures::future::join_all(refusals).await {
            refreshed.unwrap();
        }
        assert_eq!(fake.lookups.load(Ordering::SeqCst), 2);
        let current = cache.get_cached(&client, "db.c", &stats).await.unwrap();
        assert_ne!(current.serial, used.serial);
        assert_eq!(fake.lookups.load(Ordering::SeqCst), 2);
        // A late refusal of the old load keeps the new one too.
        cache
            .refresh_stale(&client, "db.c", &stats, Some(used.serial), wanted)
            .await
            .unwrap();
        assert_eq!(fake.lookups.load(Ordering::SeqCst), 2);
        // A refusal of the current load (nothing newer to use) drops it.
        cache
            .refresh_stale(&client, "db.c", &stats, Some(current.serial), wanted)
            .await
            .unwrap();
        cache.get(&client, "db.c", &stats).await.unwrap();
        assert_eq!(fake.lookups.load(Ordering::SeqCst), 3);
    }
}
