//! `_configsvrCommitRefineCollectionShardKey`: records a sharded collection's refined shard
//! key. The collection gets a new generation (epoch and timestamp) so every cached routing
//! table and filtering metadata of the old key is stale; its chunks keep their shards and
//! versions (major|minor), their bounds extended to the new key's fields.

use super::super::ConfigState;
use super::super::store::ConfigWrite;
use super::collections::{StoredRouting, target_ns};
use crate::catalog::{CollectionEntry, CollectionGeneration};
use crate::command::{CommandRequest, missing};
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::{CommandSpec, RequestContext};
use bson::{Bson, DateTime, RawBsonRef, RawDocumentBuf, doc};

pub(super) fn commands() -> Vec<CommandSpec<ConfigState>> {
    vec![
        CommandSpec::new("_configsvrRefineCollectionShardKey", refine)
        .admin_only()
        .help("Internal: refines a shard key through its coordinator (the primary shard does the work)"),
        CommandSpec::new("_configsvrCommitRefineCollectionShardKey", commit_refine)
        .admin_only()
        .help("Internal: records a sharded collection's refined shard key under a new epoch"),
    ]
}

/// `{_configsvrCommitRefineCollectionShardKey: ns, key, expectedEpoch}`: the primary shard
/// validated `key` against the generation `expectedEpoch`; a collection changed since (dropped,
/// re-sharded, refined by someone else) is refused with ConflictingOperationInProgress.
/// `{_configsvrRefineCollectionShardKey: ns, key}`: through its coordinator
/// (`coordinators::refine_shard_key`).
async fn refine(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = target_ns(&req)?;
    let key = req.args().shard_key("key")?.pattern().clone();
    let reply = super::super::coordinators::refine_shard_key(state, &ns, key).await?;
    Ok(RawDocumentBuf::from_document(&reply)?)
}

async fn commit_refine(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = target_ns(&req)?;
    let args = req.args();
    let refined = args.shard_key("key")?;
    let expected_epoch = match args.get("expectedEpoch")? {
        Some(RawBsonRef::ObjectId(epoch)) => epoch,
        _ => return Err(missing(req.name(), "expectedEpoch")),
    };
    let _chunks = state.chunk_op_lock.lock().await;
    let _fence = state.fence_commit(&req, &ns).await?;
    let current = StoredRouting::sharded_entry(state, &ns).await?;
    if current.generation.epoch != expected_epoch {
        return Err(MongoError::new(
            ErrorCode::ConflictingOperationInProgress,
            format!(
                "collection {ns} changed while its shard key was being refined (epoch {} instead of {expected_epoch})",
                current.generation.epoch
            ),
        ));
    }
    current.key.check_refinement(&refined)?;
    let generation = CollectionGeneration::new(state.node.clock.tick());
    let store = state.store();
    // The chunks as stored (not parsed): only their bounds change.
    let mut writes = Vec::new();
    for mut chunk in store
        .find("chunks", &doc! {"uuid": Bson::Binary(current.uuid.clone())})
        .await?
    {
        // Only the bounds change: `_id`, shard, lastmod and history stay.
        for bound in ["min", "max"] {
            let old = chunk
                .get_document(bound)
                .map_err(|_| MongoError::internal(format!("a chunk of {ns} without {bound}")))?;
            let new = current.key.refine_bound(&refined, old);
            chunk.insert(bound, new);
        }
        writes.push(ConfigWrite::Upsert("chunks", chunk));
    }
    let entry = CollectionEntry {
        generation,
        key: refined,
        last_modified: DateTime::now(),
        ..current
    };
    writes.push(ConfigWrite::Upsert("collections", entry.to_document()));
    store.write_batch(&writes).await?;
    tracing::info!(
        ns = %ns,
        key = %render_doc(entry.key.pattern()),
        epoch = %entry.generation.epoch,
        "refined shard key"
    );
    Ok(RawDocumentBuf::from_document(&doc! {
        "epoch": entry.generation.epoch,
        "timestamp": entry.generation.timestamp,
    })?)
}
