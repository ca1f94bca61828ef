//! Commands the config server sends to shards: joining the cluster and dropping a database's
//! local data.

use super::super::ShardState;
use super::super::identity::{self, ShardIdentity};
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::{CommandSpec, RequestContext};
use bson::RawDocumentBuf;

pub(super) fn commands() -> Vec<CommandSpec<ShardState>> {
    vec![
        CommandSpec::new("_addShard", add_shard)
            .admin_only()
            .help("Internal: makes this server a shard of a cluster (sets its shard identity)"),
        CommandSpec::new("getShardVersion", get_shard_version)
            .aliases(&["getshardversion"])
            .admin_only()
            .help("this shard's filtering metadata of a collection: { getShardVersion: <ns>, fullMetadata: <bool> }"),
        CommandSpec::new("_shardsvrDropDatabaseParticipant", drop_database_participant)
        .help("Internal: drops this shard's data of a database"),
        CommandSpec::new("_shardsvrCreateCollection", super::shard_collection::create_sharded_collection)
        .help("Internal: shards a collection of a database this shard is the primary of"),
        CommandSpec::new("_shardsvrCreateCollectionParticipant", super::shard_collection::create_collection_participant)
        .help("Internal: creates this shard's part of a sharded collection (same UUID and indexes)"),
        CommandSpec::new("_shardsvrMovePrimaryCleanup", super::move_primary::cleanup)
        .help("Internal: drops a former primary's copies of the collections it gave away"),
        CommandSpec::new("_shardsvrMovePrimary", super::move_primary::move_primary)
        .help("Internal: moves a database this shard is the primary of to another shard"),
        CommandSpec::new("_shardsvrRefineCollectionShardKey", super::refine_shard_key::refine)
        .help("Internal: refines the shard key of a collection of a database this shard is the primary of"),
        CommandSpec::new("_shardsvrValidateShardKeyCandidate", super::refine_shard_key::validate_candidate)
        .help("Internal: checks that this shard has an index that can serve a shard key"),
        CommandSpec::new("_flushRoutingTableCacheUpdates", flush_collection)
        .admin_only()
        .help("Internal: reloads this shard's filtering metadata of a collection from the config server"),
        CommandSpec::new("_shardsvrDropCollectionParticipant", drop_collection_participant)
        .help("Internal: drops this shard's part of a sharded collection"),
        CommandSpec::new("splitVector", super::chunks::split_vector)
        .admin_only()
        .help("Internal: the key a chunk's range is split at (its median, with force: true)"),
        CommandSpec::new("splitChunk", super::chunks::split_chunk)
        .admin_only()
        .help("Internal: splits a chunk this shard owns, committing through the config server"),
        CommandSpec::new("mergeChunks", super::chunks::merge_chunks)
            .admin_only()
            .help("Internal: merges contiguous chunks this shard owns, committing through the config server"),
        CommandSpec::new("_flushDatabaseCacheUpdates", flush_database)
        .admin_only()
        .help(
            "Internal: forgets the cached version of a database so the next request refreshes it",
        ),
    ]
}

async fn add_shard(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let doc = req
        .args()
        .document("shardIdentity")?
        .ok_or_else(|| crate::command::missing("_addShard", "shardIdentity"))?;
    let identity = ShardIdentity::from_document(&doc)?;
    if let Some(current) = state.identity() {
        if current.shard_name != identity.shard_name || current.cluster_id != identity.cluster_id {
            return Err(MongoError::new(
                ErrorCode::InconsistentShardIdentity,
                format!(
                    "this server is already shard '{}' of cluster {}; it cannot become shard '{}' of cluster {}",
                    current.shard_name,
                    current.cluster_id,
                    identity.shard_name,
                    identity.cluster_id
                ),
            ));
        }
    }
    identity::store(state.storage_arc(), &identity).await?;
    *state.identity.write().expect("poisoned") = Some(identity);
    Ok(RawDocumentBuf::new())
}

async fn get_shard_version(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let bson::RawBsonRef::String(ns) = args.target()? else {
        return Err(MongoError::type_mismatch(
            "getShardVersion needs a namespace string",
        ));
    };
    let (db, coll) = crate::catalog::split_namespace(ns)?;
    crate::catalog::validate_collection_name(db, coll)?;
    let full = args.bool("fullMetadata")?.unwrap_or(false);
    Ok(RawDocumentBuf::from_document(
        &state.describe_filtering(ns, full),
    )?)
}

async fn drop_database_participant(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    crate::catalog::validate_db_name(&req.db)?;
    // Requests admitted under the old version finish first; those waiting meet the dropped
    // database's version forgotten, refresh, and are refused as stale.
    let _section = state
        .enter_critical_section(&req.db, "dropDatabase")
        .await?;
    state.storage_arc().drop_database(&req.db).await?;
    state.cursors.kill_database(&req.db);
    state.forget_database_version(&req.db);
    state.forget_database_collections(&req.db).await?;
    Ok(RawDocumentBuf::new())
}

/// Drops this shard's part of a dropped collection (sharded or not) and forgets its filtering
/// metadata, so the next versioned request learns the new placement. Idempotent: the drop
/// coordinator sends it again after a crash.
async fn drop_collection_participant(
    state: &ShardState,
    ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let coll = req.args().collection()?.to_string();
    let ns = format!("{}.{coll}", req.db);
    let _section = state
        .enter_critical_section(&req.db, &format!("drop of {ns}"))
        .await?;
    let drop = CommandRequest::from_document(&req.db, &bson::doc! {"drop": &coll})?;
    let reply = crate::datanode::commands::collections::drop(state, ctx, drop).await?;
    state
        .forget_collection(&format!("{}.{coll}", req.db))
        .await?;
    Ok(reply)
}

async fn flush_database(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let db = req
        .args()
        .str("_flushDatabaseCacheUpdates")?
        .unwrap_or_default()
        .to_string();
    state.forget_database_version(&db);
    Ok(RawDocumentBuf::new())
}

async fn flush_collection(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let (db, coll) = req.args().namespace()?;
    state.refresh_collection(&format!("{db}.{coll}")).await?;
    Ok(RawDocumentBuf::new())
}
