//! The shard side of shard versioning (the design's CollectionShardingRuntime): what this shard
//! knows of each collection's placement — unsharded, or sharded at this shard's version —
//! loaded from the config server on first use and refreshed when a router's version differs.
//! A router behind this shard gets StaleConfig with `vReceived`, `vWanted` and `shardId`.

use super::ShardState;
use crate::catalog::{ChunkMap, ChunkVersion};
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::config::collection_routing;
use bson::{RawBsonRef, doc};
use std::collections::HashMap;
use std::sync::Mutex;

/// This shard's version of each collection it has been asked about (`0|0` with no epoch for
/// unsharded collections).
#[derive(Default)]
pub(super) struct FilteringMetadata {
    known: Mutex<HashMap<String, ChunkVersion>>,
}

impl FilteringMetadata {
    fn get(&self, ns: &str) -> Option<ChunkVersion> {
        self.known.lock().expect("poisoned").get(ns).copied()
    }

    fn forget(&self, ns: &str) {
        self.known.lock().expect("poisoned").remove(ns);
    }

    fn set(&self, ns: &str, version: ChunkVersion) {
        self.known
            .lock()
            .expect("poisoned")
            .insert(ns.to_string(), version);
    }
}

impl ShardState {
    /// Checks the `shardVersion` a router attached, or, with a `databaseVersion`, that the
    /// collection is not sharded (a router that believes it unsharded is stale).
    pub(super) async fn check_shard_version(&self, request: &CommandRequest) -> Result<()> {
        let args = request.args();
        let received = match args.document("shardVersion")? {
            Some(version) => ChunkVersion::from_document(&version)?,
            None if args.get("databaseVersion")?.is_some() => ChunkVersion::unsharded(),
            None => return Ok(()),
        };
        if received.is_ignored() {
            return Ok(());
        }
        // Commands that name no single collection (`aggregate: 1`, `bulkWrite`) carry the
        // database version alone.
        let Ok(RawBsonRef::String(coll)) = args.target() else {
            return Ok(());
        };
        if request.name() == "bulkWrite" {
            return Ok(());
        }
        let ns = format!("{}.{coll}", request.db);
        if self.filtering.get(&ns) == Some(received) {
            return Ok(());
        }
        let wanted = self.refresh_collection(&ns).await?;
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
            "ns": &ns,
            "vReceived": received.to_document(),
            "vWanted": wanted.to_document(),
            "shardId": shard_id,
        }))
    }

    /// Forgets what this shard knew of a collection's placement (it was dropped).
    pub(super) fn forget_collection(&self, ns: &str) {
        self.filtering.forget(ns);
    }

    /// Reloads a collection's placement from the config server; returns this shard's version
    /// of it (`0|0` of its generation when it owns no chunk; unsharded when not sharded).
    pub(super) async fn refresh_collection(&self, ns: &str) -> Result<ChunkVersion> {
        let identity = self.require_identity()?;
        let config = self.connector.client(&identity.config_host);
        let version = match collection_routing(&config, ns).await? {
            Some((entry, chunks)) => ChunkMap::new(&entry.key, chunks)?
                .shard_version(&identity.shard_name, entry.generation),
            None => ChunkVersion::unsharded(),
        };
        self.filtering.set(ns, version);
        Ok(version)
    }
}
