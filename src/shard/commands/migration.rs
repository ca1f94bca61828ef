//! The migration commands a shard answers (see `shard::migration`): `_shardsvrMoveRange` from
//! the config server to the donor; `_recvChunkStart`, `_recvChunkStatus`, `_recvChunkCommit`,
//! `_recvChunkAbort` and `_recvChunkReleaseCritSec` from the donor to the recipient;
//! `_migrateClone` and `_transferMods` from the recipient to the donor; and `cleanupOrphaned`.

use super::super::ShardState;
use super::super::migration::KeyRange;
use super::super::migration::donor::MoveRangeRequest;
use super::super::migration::recipient::ReceiptRequest;
use crate::catalog::ShardKeyPattern;
use crate::command::{CommandRequest, missing};
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::config::shard_hosts;
use crate::server::auth::Requires;
use crate::server::{CommandSpec, RequestContext};
use bson::{Bson, RawArrayBuf, RawBsonRef, RawDocumentBuf, doc};

pub(super) fn commands() -> Vec<CommandSpec<ShardState>> {
    vec![
        CommandSpec::new("_shardsvrMoveRange", move_range)
            .admin_only()
            .help("Internal: moves a range this shard owns to another shard"),
        CommandSpec::new("_recvChunkStart", recv_chunk_start)
            .admin_only()
            .help("Internal: starts receiving a range from its donor"),
        CommandSpec::new("_recvChunkStatus", recv_chunk_status)
            .admin_only()
            .help("Internal: how far the receipt of a range got"),
        CommandSpec::new("_recvChunkCommit", recv_chunk_commit)
            .admin_only()
            .help("Internal: receives the last writes of a range whose donor is in its critical section"),
        CommandSpec::new("_recvChunkAbort", recv_chunk_abort)
            .admin_only()
            .help("Internal: abandons the receipt of a range; its copies are deleted"),
        CommandSpec::new("_recvChunkReleaseCritSec", recv_chunk_release)
            .admin_only()
            .help("Internal: the migration of a range committed; the recipient serves it"),
        CommandSpec::new("_migrateClone", migrate_clone)
            .admin_only()
            .help("Internal: the next batch of a migrating range's documents"),
        CommandSpec::new("_transferMods", transfer_mods)
            .admin_only()
            .help("Internal: the writes to a migrating range since the last call"),
        CommandSpec::new("_getNextSessionMods", get_next_session_mods)
            .admin_only()
            .help("Internal: the retryable-write records of a migrating range"),
        // The one maintenance command of this role a user may run (MongoDB's clusterManager
        // holds the action), as it runs on a shard only.
        CommandSpec::new("cleanupOrphaned", cleanup_orphaned)
            .admin_only()
            .requires(Requires::Cluster(&["cleanupOrphaned"]))
            .help("waits until the orphaned documents of a sharded collection are deleted\n  { cleanupOrphaned: \"<db>.<collection>\" }"),
    ]
}

fn target_ns(req: &CommandRequest) -> Result<String> {
    match req.args().target()? {
        RawBsonRef::String(ns) if ns.contains('.') => Ok(ns.to_string()),
        _ => Err(MongoError::new(
            ErrorCode::InvalidNamespace,
            format!("{} needs a collection namespace", req.name()),
        )),
    }
}

fn migration_id(req: &CommandRequest) -> Result<uuid::Uuid> {
    match req.args().get("migrationId")? {
        Some(RawBsonRef::Binary(b)) => uuid::Uuid::from_slice(b.bytes)
            .map_err(|_| MongoError::bad_value("migrationId must be a UUID")),
        _ => Err(missing(req.name(), "migrationId")),
    }
}

async fn move_range(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let request = MoveRangeRequest {
        ns: target_ns(&req)?,
        to: req.args().required_str("toShard")?.to_string(),
        from: req.args().required_str("fromShard")?.to_string(),
        chunk: (
            req.args().required_document("chunkMin")?,
            req.args().required_document("chunkMax")?,
        ),
        min: args.document("min")?,
        max: args.document("max")?,
        wait_for_delete: args.bool("waitForDelete")?.unwrap_or(false),
        force_jumbo: args.bool("forceJumbo")?.unwrap_or(false),
        max_chunk_size_bytes: args.i64("maxChunkSizeBytes")?.unwrap_or(128 * 1024 * 1024),
        epoch: match args.get("epoch")? {
            Some(RawBsonRef::ObjectId(oid)) => Some(oid),
            _ => None,
        },
        ddl_lock_term: args
            .i64("ddlLockTerm")?
            .ok_or_else(|| missing(req.name(), "ddlLockTerm"))?,
    };
    state.move_range(request).await?;
    Ok(RawDocumentBuf::new())
}

async fn recv_chunk_start(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = target_ns(&req)?;
    let key = ShardKeyPattern::parse(&req.args().required_document("shardKeyPattern")?)?;
    let range = KeyRange::new(
        &ns,
        key,
        req.args().required_document("min")?,
        req.args().required_document("max")?,
    );
    let from_shard = req.args().required_str("fromShardName")?.to_string();
    let identity = state.require_identity()?;
    let config = state.connector.client(&identity.config_host);
    // The donor's address as the cluster knows it.
    let from_host = shard_hosts(&config)
        .await?
        .into_iter()
        .find(|(name, _)| *name == from_shard)
        .map(|(_, host)| host)
        .ok_or_else(|| {
            MongoError::new(
                ErrorCode::ShardNotFound,
                format!("Could not find shard {from_shard}"),
            )
        })?;
    state.start_receipt(ReceiptRequest {
        session_id: req.args().required_str("sessionId")?.to_string(),
        migration_id: migration_id(&req)?,
        range,
        from_shard,
        from_host,
        collection_uuid: req
            .args()
            .get("collectionUUID")?
            .and_then(|v| Bson::try_from(v.to_raw_bson()).ok())
            .unwrap_or(Bson::Null),
    })?;
    Ok(RawDocumentBuf::from_document(&doc! {"started": true})?)
}

async fn recv_chunk_status(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let session = req.args().str("sessionId")?.unwrap_or_default();
    let status = match state.receipt(session) {
        Some(receipt) => receipt.status(),
        None => doc! {"active": false},
    };
    Ok(RawDocumentBuf::from_document(&status)?)
}

async fn recv_chunk_commit(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let session = req.args().required_str("sessionId")?.to_string();
    let receipt = state
        .receipt(&session)
        .ok_or_else(|| no_session(&session))?;
    Ok(RawDocumentBuf::from_document(&receipt.commit().await?)?)
}

async fn recv_chunk_abort(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    state
        .abort_receipt(&target_ns(&req)?, &migration_id(&req)?)
        .await?;
    Ok(RawDocumentBuf::new())
}

async fn recv_chunk_release(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    state
        .release_receipt(&target_ns(&req)?, &migration_id(&req)?)
        .await?;
    Ok(RawDocumentBuf::new())
}

fn no_session(session: &str) -> MongoError {
    MongoError::new(
        ErrorCode::ConflictingOperationInProgress,
        format!("no migration session {session} is active on this shard"),
    )
}

fn source(
    state: &ShardState,
    req: &CommandRequest,
) -> Result<std::sync::Arc<super::super::migration::source::Source>> {
    let session = req.args().required_str("sessionId")?.to_string();
    state
        .migrations
        .source
        .lock()
        .expect("poisoned")
        .clone()
        .filter(|s| s.session_id == session)
        .ok_or_else(|| no_session(&session))
}

async fn migrate_clone(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let source = source(state, &req)?;
    // The scan of up to 8 MB runs below the priority of the shard's requests (the writes to
    // the moving range go on meanwhile).
    let batch = crate::server::cpu::background(source.clone_batch()).await?;
    let mut objects = RawArrayBuf::new();
    for doc in batch {
        objects.push(doc);
    }
    let mut reply = RawDocumentBuf::new();
    reply.append("objects", objects);
    Ok(reply)
}

async fn transfer_mods(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let mods = source(state, &req)?.transfer_mods().await?;
    let mut reload = RawArrayBuf::new();
    for doc in mods.reload {
        reload.push(doc);
    }
    let mut deleted = RawArrayBuf::new();
    for id in mods.deleted {
        deleted.push(RawDocumentBuf::from_document(&doc! {"_id": id})?);
    }
    let mut reply = RawDocumentBuf::new();
    reply.append("deleted", deleted);
    reply.append("reload", reload);
    reply.append("size", mods.bytes as i64);
    Ok(reply)
}

async fn get_next_session_mods(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let source = source(state, &req)?;
    let sessions = state.range_session_records(&source.range).await?;
    Ok(RawDocumentBuf::from_document(&doc! {"sessions": sessions})?)
}

/// `{cleanupOrphaned: ns}`: waits until no range of the collection is left to delete here.
async fn cleanup_orphaned(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = target_ns(&req)?;
    state.cleanup_orphaned(&ns).await?;
    Ok(RawDocumentBuf::new())
}
