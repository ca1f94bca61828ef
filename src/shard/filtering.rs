//! The shard side of shard versioning (the design's CollectionShardingRuntime): what this shard
//! knows of each collection's placement — unsharded, or sharded with its chunk map — loaded
//! from the config server on first use, refreshed when a router's version differs, persisted
//! (`persisted_routing`) so a restarted shard still knows it. A router behind this shard gets
//! StaleConfig with `vReceived`, `vWanted` and `shardId`; versioned reads and writes see only
//! the documents this shard owns (the ownership filter).

use super::ShardState;
use super::persisted_routing;
use crate::catalog::{ChunkVersion, OwnershipFilter};
use crate::command::{CommandRequest, ShardingState};
use crate::datanode::DataNode;
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::config::collection_routing;
use bson::doc;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// What this shard knows of one collection's placement.
#[derive(Clone)]
pub(super) enum CollectionMetadata {
    Unsharded,
    Sharded(Arc<OwnershipFilter>),
}

impl CollectionMetadata {
    fn version(&self) -> ChunkVersion {
        match self {
            CollectionMetadata::Unsharded => ChunkVersion::unsharded(),
            CollectionMetadata::Sharded(filter) => filter.shard_version(),
        }
    }

    fn ownership(&self) -> Option<Arc<OwnershipFilter>> {
        match self {
            CollectionMetadata::Unsharded => None,
            CollectionMetadata::Sharded(filter) => Some(Arc::clone(filter)),
        }
    }
}

/// This shard's metadata of each collection it has been asked about.
#[derive(Default)]
pub(super) struct FilteringMetadata {
    known: Mutex<HashMap<String, CollectionMetadata>>,
    /// Persisting replaces a collection's stored chunks in several steps: one at a time.
    persisting: tokio::sync::Mutex<()>,
    refreshes: super::single_flight::SingleFlight,
    /// Filters replaced by newer ones, per collection: the requests and cursors that began
    /// under them still hold them (and may read ranges this shard no longer owns, which the
    /// range deleter leaves until they let go).
    retired: Mutex<HashMap<String, Vec<Weak<OwnershipFilter>>>>,
}

impl FilteringMetadata {
    fn get(&self, ns: &str) -> Option<CollectionMetadata> {
        self.known.lock().expect("poisoned").get(ns).cloned()
    }

    fn forget(&self, ns: &str) {
        let old = self.known.lock().expect("poisoned").remove(ns);
        self.retire(ns, old);
    }

    fn retire(&self, ns: &str, old: Option<CollectionMetadata>) {
        if let Some(CollectionMetadata::Sharded(filter)) = old {
            let mut retired = self.retired.lock().expect("poisoned");
            let list = retired.entry(ns.to_string()).or_default();
            list.retain(|w| w.strong_count() > 0);
            list.push(Arc::downgrade(&filter));
        }
    }

    /// Whether a request or cursor still holds a filter of `ns` older than the current one.
    fn retired_in_use(&self, ns: &str) -> bool {
        let mut retired = self.retired.lock().expect("poisoned");
        let Some(list) = retired.get_mut(ns) else {
            return false;
        };
        list.retain(|w| w.strong_count() > 0);
        !list.is_empty()
    }

    fn namespaces_of(&self, db: &str) -> Vec<String> {
        let prefix = format!("{db}.");
        self.known
            .lock()
            .expect("poisoned")
            .keys()
            .filter(|ns| ns.starts_with(&prefix))
            .cloned()
            .collect()
    }

    fn set(&self, ns: &str, metadata: CollectionMetadata) {
        let old = self
            .known
            .lock()
            .expect("poisoned")
            .insert(ns.to_string(), metadata);
        self.retire(ns, old);
    }
}

impl ShardState {
    /// Loads the persisted routing of sharded collections (at startup).
    pub(super) async fn load_filtering_metadata(&self) -> Result<()> {
        let Some(identity) = self.identity() else {
            return Ok(());
        };
        for (entry, chunks) in persisted_routing::load_all(&self.storage).await? {
            let ns = entry.ns.clone();
            let filter = OwnershipFilter::new(entry, chunks, &identity.shard_name);
            self.filtering
                .set(&ns, CollectionMetadata::Sharded(Arc::new(filter)));
        }
        Ok(())
    }

    /// Checks the shard version a router attached for each collection the request is about
    /// (or, with a database version alone, that the collection is not sharded: a router that
    /// believes it unsharded is stale).
    pub(super) async fn check_shard_versions(&self, sharding: &ShardingState) -> Result<()> {
        for namespace in sharding.namespaces() {
            if let Some(received) = namespace.expected {
                self.check_shard_version(&namespace.ns, received).await?;
            }
        }
        Ok(())
    }

    async fn check_shard_version(&self, ns: &str, received: ChunkVersion) -> Result<()> {
        let known = self.filtering.get(ns);
        if received.is_ignored() {
            // No version check, but the ownership filter must be known.
            if known.is_none() {
                self.refresh_collection(ns).await?;
            }
            return Ok(());
        }
        if known.map(|m| m.version()) == Some(received) {
            return Ok(());
        }
        let wanted = self.refresh_collection(ns).await?;
        if wanted == received {
            return Ok(());
        }
        let shard_id = self.identity().map(|i| i.shard_name).unwrap_or_default();
        Err(MongoError::new(
            ErrorCode::StaleConfig,
            format!(
                "The collection {ns} is at version {} on shard {shard_id}, not {}",
                wanted.display(),
                received.display()
            ),
        )
        .with_extra(doc! {
            "ns": ns,
            "vReceived": received.to_document(),
            "vWanted": wanted.to_document(),
            "shardId": shard_id,
        }))
    }

    /// The ownership filter a request runs under: a request a router versioned for a sharded
    /// collection sees only this shard's chunks; a request sent to the shard directly (no
    /// version) sees every document, orphans included, as in MongoDB.
    pub(super) fn request_ownership(
        &self,
        request: &CommandRequest,
    ) -> Option<Arc<OwnershipFilter>> {
        let ns = request.sharding().ok()?.filtered_namespace()?;
        self.filtering.get(ns)?.ownership()
    }

    /// `getShardVersion` on a shard: its filtering metadata of `ns` — the version (`"UNKNOWN"`
    /// before it learned anything), and with `full` the collection version, key pattern and
    /// the chunks this shard owns.
    pub(super) fn describe_filtering(&self, ns: &str, full: bool) -> bson::Document {
        let config = self.identity().map(|i| i.config_host).unwrap_or_default();
        let mut reply = doc! {"configServer": config, "inShardedMode": false};
        let Some(known) = self.filtering.get(ns) else {
            reply.insert("mine", "UNKNOWN");
            reply.insert("global", "UNKNOWN");
            return reply;
        };
        let version = known.version().lastmod();
        reply.insert("mine", version);
        reply.insert("global", version);
        if !full {
            return reply;
        }
        let metadata = match known {
            CollectionMetadata::Unsharded => doc! {},
            CollectionMetadata::Sharded(filter) => {
                let shard = filter.shard_version();
                let collection = filter.chunks().collection_version().unwrap_or(shard);
                let me = self.shard_name();
                let owned: Vec<bson::Bson> = filter
                    .chunks()
                    .chunks()
                    .filter(|c| c.shard == me)
                    .map(|c| bson::Bson::Array(vec![c.min.clone().into(), c.max.clone().into()]))
                    .collect();
                doc! {
                    "collVersion": collection.lastmod(),
                    "collVersionEpoch": collection.generation.epoch,
                    "collVersionTimestamp": collection.generation.timestamp,
                    "shardVersion": shard.lastmod(),
                    "shardVersionEpoch": shard.generation.epoch,
                    "shardVersionTimestamp": shard.generation.timestamp,
                    "keyPattern": filter.key_pattern().pattern().clone(),
                    "chunks": owned,
                    "pending": [],
                }
            }
        };
        reply.insert("metadata", metadata);
        reply
    }

    /// Whether `ns` is sharded: as this shard knows it, or as the config server says.
    pub(super) async fn collection_is_sharded(&self, ns: &str) -> Result<bool> {
        if self.filtering.get(ns).is_none() {
            self.refresh_collection(ns).await?;
        }
        Ok(matches!(
            self.filtering.get(ns),
            Some(CollectionMetadata::Sharded(_))
        ))
    }

    /// What this shard knows of a sharded collection, versioned request or not.
    pub(super) fn known_sharding(&self, ns: &str) -> Option<Arc<OwnershipFilter>> {
        self.filtering.get(ns)?.ownership()
    }

    /// Forgets what this shard knew of a collection's placement (it was dropped).
    pub(super) async fn forget_collection(&self, ns: &str) -> Result<()> {
        self.filtering.forget(ns);
        let _one = self.filtering.persisting.lock().await;
        persisted_routing::remove(&self.storage, ns).await
    }

    /// Forgets this shard's placement of `ns` (kept persisted): the next versioned request
    /// loads it afresh.
    pub(super) fn forget_filtering(&self, ns: &str) {
        self.filtering.forget(ns);
    }

    /// Whether requests or cursors that began under an older placement of `ns` still run.
    pub(super) fn filters_in_use(&self, ns: &str) -> bool {
        self.filtering.retired_in_use(ns)
    }

    /// Forgets every collection of a dropped database.
    pub(super) async fn forget_database_collections(&self, db: &str) -> Result<()> {
        for ns in self.filtering.namespaces_of(db) {
            self.forget_collection(&ns).await?;
        }
        Ok(())
    }

    /// Reloads a collection's placement from the config server; returns this shard's version
    /// of it (`0|0` of its generation when it owns no chunk; unsharded when not sharded).
    /// Concurrent requests share refreshes.
    pub(super) async fn refresh_collection(&self, ns: &str) -> Result<ChunkVersion> {
        self.filtering
            .refreshes
            .refresh(
                ns,
                || self.filtering.get(ns).map(|m| m.version()),
                || self.load_collection_metadata(ns),
            )
            .await
    }

    async fn load_collection_metadata(&self, ns: &str) -> Result<ChunkVersion> {
        let identity = self.require_identity()?;
        let config = self.connector.client(&identity.config_host);
        let metadata =
            match collection_routing(&config, ns).await? {
                Some((entry, chunks)) => CollectionMetadata::Sharded(Arc::new(
                    OwnershipFilter::new(entry, chunks, &identity.shard_name),
                )),
                None => CollectionMetadata::Unsharded,
            };
        let version = metadata.version();
        let _one = self.filtering.persisting.lock().await;
        let previous = self.filtering.get(ns);
        match (&previous, &metadata) {
            (Some(CollectionMetadata::Sharded(old)), CollectionMetadata::Sharded(new))
                if same_routing(old, new) => {}
            (_, CollectionMetadata::Sharded(new)) => {
                persisted_routing::store(&self.storage, new.entry(), new.chunks()).await?
            }
            (Some(CollectionMetadata::Sharded(_)) | None, CollectionMetadata::Unsharded) => {
                persisted_routing::remove(&self.storage, ns).await?
            }
            (Some(CollectionMetadata::Unsharded), CollectionMetadata::Unsharded) => {}
        }
        self.filtering.set(ns, metadata);
        Ok(version)
    }
}

/// Whether two loads of a collection's routing are the same generation at the same version.
fn same_routing(a: &OwnershipFilter, b: &OwnershipFilter) -> bool {
    a.entry().generation == b.entry().generation
        && a.chunks().collection_version() == b.chunks().collection_version()
}
