//! Chunk migrations on the config server: `_configsvrMoveRange` (checks the request, holds the
//! collection's DDL lock for the migration — so a DDL needing a fixed set of shards waits for
//! it — and has the donor run it), `_configsvrCommitChunkMigration` (the donor's commit, with
//! the versioning rules of the sharding design: the moved chunk takes the collection version's
//! major plus one, and one chunk the donor keeps, its control chunk, the same major with minor
//! one) and `_configsvrSetAllowMigrations` (`permitMigrations`).

use super::super::ConfigState;
use super::super::ddl_locks::{LocalDdlLock, LockScope};
use super::super::store::ConfigWrite;
use super::collections::{StoredRouting, target_ns};
use crate::catalog::{Chunk, ChunkVersion, chunk_document};
use crate::command::CommandRequest;
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::{CommandSpec, RequestContext};
use bson::{Bson, Document, RawDocumentBuf, doc};

/// MongoDB's default chunk size (`config.settings` `chunksize`, in MB, overrides it).
const DEFAULT_CHUNK_SIZE_MB: i64 = 128;

pub(super) fn commands() -> Vec<CommandSpec<ConfigState>> {
    vec![
        CommandSpec::new("_configsvrMoveRange", move_range)
            .admin_only()
            .help("Internal: moves a range of a sharded collection to another shard"),
        CommandSpec::new("_configsvrCommitChunkMigration", commit_chunk_migration)
            .admin_only()
            .help("Internal: records that a chunk moved from its donor to its recipient"),
        CommandSpec::new("_configsvrSetAllowMigrations", set_allow_migrations)
            .admin_only()
            .help("Internal: allows or stops the chunk migrations of a collection"),
    ]
}

/// A `min` or `max` bound of a request, shaped as the shard key.
fn bound(
    req: &CommandRequest,
    name: &str,
    key: &crate::catalog::ShardKeyPattern,
) -> Result<Option<Document>> {
    let Some(value) = req.args().document(name)? else {
        return Ok(None);
    };
    if !key.is_key_shaped(&value) {
        return Err(MongoError::bad_value(format!(
            "{name} {} is not valid for shard key pattern {}",
            render_doc(&value),
            render_doc(key.pattern())
        )));
    }
    Ok(Some(value))
}

/// ConflictingOperationInProgress for a collection whose migrations `setAllowMigrations` stopped.
fn migrations_not_allowed(ns: &str) -> MongoError {
    MongoError::new(
        ErrorCode::ConflictingOperationInProgress,
        format!("Collection {ns} has migrations disallowed"),
    )
}

/// `{_configsvrMoveRange: ns, toShard, min?, max?, waitForDelete, forceJumbo,
/// secondaryThrottle}` (what the router sends for `moveRange` and `moveChunk`): finds the chunk
/// the range lies in and has its shard move the range to `toShard` (splitting the chunk first
/// when the range is part of it; a missing bound is chosen by the donor from the chunk size).
async fn move_range(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = target_ns(&req)?;
    let args = req.args();
    let to = args.required_str("toShard")?.to_string();
    let wait_for_delete = args.bool("waitForDelete")?.unwrap_or(false);
    let force_jumbo = args.bool("forceJumbo")?.unwrap_or(false);
    let stored = StoredRouting::load_sharded(state, &ns).await?;
    let key = &stored.entry.key;
    let min = bound(&req, "min", key)?;
    let max = bound(&req, "max", key)?;
    if min.is_none() && max.is_none() {
        return Err(MongoError::bad_value(
            "either min or max must be specified for moveRange",
        ));
    }
    if !state.shards().await?.iter().any(|(name, _)| *name == to) {
        return Err(MongoError::new(
            ErrorCode::ShardNotFound,
            format!("Could not find shard {to}"),
        ));
    }
    if !stored.entry.permit_migrations {
        return Err(migrations_not_allowed(&ns));
    }
    let chunk = chunk_of_range(&stored, min.as_ref(), max.as_ref())?;
    if chunk.shard == to {
        return Ok(RawDocumentBuf::new());
    }
    let lock = LocalDdlLock::acquire(
        &state.ddl_locks,
        &LockScope::collections(&[ns.as_str()])?,
        "moveRange",
        state.lock_timeout(),
    )
    .await?;
    let mut command = doc! {
        "_shardsvrMoveRange": &ns,
        "toShard": &to,
        "fromShard": &chunk.shard,
        "chunkMin": chunk.min.clone(),
        "chunkMax": chunk.max.clone(),
        "waitForDelete": wait_for_delete,
        "forceJumbo": force_jumbo,
        "maxChunkSizeBytes": max_chunk_size_bytes(state, &ns).await?,
        "epoch": stored.entry.generation.epoch,
        "collectionTimestamp": stored.entry.generation.timestamp,
        "ddlLockTerm": lock.term(),
    };
    if let Some(min) = min {
        command.insert("min", min);
    }
    if let Some(max) = max {
        command.insert("max", max);
    }
    let host = state
        .shards()
        .await?
        .into_iter()
        .find(|(name, _)| *name == chunk.shard)
        .map(|(_, host)| host)
        .ok_or_else(|| {
            MongoError::new(
                ErrorCode::ShardNotFound,
                format!("Could not find shard {}", chunk.shard),
            )
        })?;
    let moved = state
        .connector
        .client(&host)
        .run_doc("admin", command)
        .await;
    lock.release().await?;
    moved?;
    Ok(RawDocumentBuf::new())
}

/// The chunk holding `[min, max)` (or the one starting at `min`, or ending at `max`).
fn chunk_of_range(
    stored: &StoredRouting,
    min: Option<&Document>,
    max: Option<&Document>,
) -> Result<Chunk> {
    let key = &stored.entry.key;
    let map = stored.chunk_map()?;
    let chunk = match (min, max) {
        (Some(min), _) => map.chunk_for(&key.encode(min)).cloned(),
        (None, Some(max)) => {
            let max_key = key.encode(max);
            map.chunks()
                .find(|c| c.min_key < max_key && max_key <= c.max_key)
                .cloned()
        }
        (None, None) => None,
    }
    .ok_or_else(|| MongoError::internal("no chunk holds the range"))?;
    if let Some(max) = max {
        let max_key = key.encode(max);
        if max_key > chunk.max_key || min.is_some_and(|m| key.encode(m) >= max_key) {
            return Err(MongoError::bad_value(format!(
                "the range to move must lie in one chunk: [{}, {}) spans beyond chunk [{}, {})",
                min.map(render_doc)
                    .unwrap_or_else(|| render_doc(&chunk.min)),
                render_doc(max),
                render_doc(&chunk.min),
                render_doc(&chunk.max)
            )));
        }
    }
    Ok(chunk)
}

/// The chunk size of `ns`: its own (`maxChunkSizeBytes` in `config.collections`), the
/// cluster's (`config.settings` `chunksize`, MB) or the default.
async fn max_chunk_size_bytes(state: &ConfigState, ns: &str) -> Result<i64> {
    let store = state.store();
    if let Some(entry) = store.find_one("collections", &doc! {"_id": ns}).await? {
        if let Some(bytes) = entry.get("maxChunkSizeBytes").and_then(Bson::as_i64) {
            return Ok(bytes);
        }
    }
    let setting = store
        .find_one("settings", &doc! {"_id": "chunksize"})
        .await?;
    let mb = setting
        .and_then(|s| match s.get("value") {
            Some(Bson::Int32(v)) => Some(i64::from(*v)),
            Some(Bson::Int64(v)) => Some(*v),
            Some(Bson::Double(v)) => Some(*v as i64),
            _ => None,
        })
        .filter(|mb| *mb > 0)
        .unwrap_or(DEFAULT_CHUNK_SIZE_MB);
    Ok(mb * 1024 * 1024)
}

/// `{_configsvrCommitChunkMigration: ns, fromShard, toShard, migratedChunk: {min, max},
/// fromShardCollectionVersion, ddlLockTerm}`: the chunk `[min, max)` of `fromShard` now belongs
/// to `toShard`. Committing it again (a donor that lost the answer) answers the same.
async fn commit_chunk_migration(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = target_ns(&req)?;
    let args = req.args();
    let from = args.required_str("fromShard")?.to_string();
    let to = args.required_str("toShard")?.to_string();
    let migrated = args.required_document("migratedChunk")?;
    let (Ok(min), Ok(max)) = (migrated.get_document("min"), migrated.get_document("max")) else {
        return Err(MongoError::bad_value("migratedChunk needs min and max"));
    };
    let epoch = args
        .document("fromShardCollectionVersion")?
        .and_then(|v| v.get_object_id("e").ok());
    let _fenced = state.fence_commit(&req, &ns).await?;
    let _chunks = state.chunk_op_lock.lock().await;
    let stored = StoredRouting::load_sharded(state, &ns).await?;
    if epoch.is_some_and(|e| e != stored.entry.generation.epoch) {
        return Err(MongoError::new(
            ErrorCode::StaleEpoch,
            format!("the collection {ns} was dropped or recreated during the migration"),
        ));
    }
    let map = stored.chunk_map()?;
    let generation = stored.entry.generation;
    let (id, chunk) = stored
        .chunks
        .iter()
        .find(|(_, c)| c.min == *min && c.max == *max)
        .ok_or_else(|| {
            MongoError::new(
                ErrorCode::ConflictingOperationInProgress,
                format!(
                    "the migrated chunk [{}, {}) of {ns} is no longer a chunk",
                    render_doc(min),
                    render_doc(max)
                ),
            )
        })?;
    if chunk.shard == to {
        return Ok(commit_reply(map.shard_version(&from, generation)));
    }
    if chunk.shard != from {
        return Err(MongoError::new(
            ErrorCode::ConflictingOperationInProgress,
            format!(
                "the migrated chunk [{}, {}) of {ns} is on shard {}, not {from}",
                render_doc(min),
                render_doc(max),
                chunk.shard
            ),
        ));
    }
    if !stored.entry.permit_migrations {
        return Err(migrations_not_allowed(&ns));
    }
    let collection_version = map
        .collection_version()
        .ok_or_else(|| MongoError::internal("a sharded collection without chunks"))?;
    let major = collection_version.major + 1;
    let now = state.node.clock.tick();
    let key = &stored.entry.key;
    let moved = Chunk::new(
        key,
        chunk.min.clone(),
        chunk.max.clone(),
        to.clone(),
        ChunkVersion::new(generation, major, 0),
    );
    let mut writes = vec![ConfigWrite::Upsert(
        "chunks",
        chunk_document_with_id(&moved, &stored, id, now),
    )];
    // The donor's control chunk: its shard version moves too, so routers that only know the
    // donor's version learn of the change.
    let control = stored
        .chunks
        .iter()
        .find(|(other, c)| other != id && c.shard == from);
    let donor_version = match control {
        Some((control_id, c)) => {
            let version = ChunkVersion::new(generation, major, 1);
            let bumped = Chunk::new(key, c.min.clone(), c.max.clone(), from.clone(), version);
            writes.push(ConfigWrite::Upsert(
                "chunks",
                chunk_document_with_id(&bumped, &stored, control_id, now),
            ));
            version
        }
        None => ChunkVersion::new(generation, 0, 0),
    };
    writes.push(ConfigWrite::Upsert(
        "changelog",
        change_log_entry(
            state,
            "moveChunk.commit",
            &ns,
            doc! {
                "min": min.clone(),
                "max": max.clone(),
                "from": &from,
                "to": &to,
                "migratedChunkVersion": moved.version.to_document(),
                "controlChunkVersion": donor_version.to_document(),
            },
        ),
    ));
    state.store().write_batch(&writes).await?;
    tracing::info!(ns = %ns, from = %from, to = %to, min = %render_doc(min), max = %render_doc(max), "committed a chunk migration");
    Ok(commit_reply(donor_version))
}

fn commit_reply(donor_version: ChunkVersion) -> RawDocumentBuf {
    RawDocumentBuf::from_document(&doc! {"shardVersion": donor_version.to_document()})
        .expect("a version document")
}

/// A chunk's `config.chunks` document keeping its `_id`.
fn chunk_document_with_id(
    chunk: &Chunk,
    stored: &StoredRouting,
    id: &Bson,
    now: bson::Timestamp,
) -> Document {
    let mut document = chunk_document(chunk, &stored.entry.uuid, bson::oid::ObjectId::new(), now);
    document.insert("_id", id.clone());
    document
}

/// `{_configsvrSetAllowMigrations: ns, allowMigrations: bool}`: with false, no migration of the
/// collection starts or commits any more (one running is refused at its commit and aborts),
/// and this answers once none runs.
async fn set_allow_migrations(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = target_ns(&req)?;
    let allow = req.args().required_bool("allowMigrations")?;
    {
        let _chunks = state.chunk_op_lock.lock().await;
        StoredRouting::sharded_entry(state, &ns).await?;
        // The stored entry as it is (it may hold fields the typed entry does not), with
        // `permitMigrations: false` or without the field.
        let mut entry = state
            .store()
            .find_one("collections", &doc! {"_id": &ns})
            .await?
            .ok_or_else(|| MongoError::internal("a sharded collection without its entry"))?;
        let stored = entry.get_bool("permitMigrations").unwrap_or(true);
        if stored != allow {
            if allow {
                entry.remove("permitMigrations");
            } else {
                entry.insert("permitMigrations", false);
            }
            state
                .store()
                .write_batch(&[ConfigWrite::Upsert("collections", entry)])
                .await?;
        }
    }
    if !allow {
        // A running migration holds the collection's DDL lock until it ends.
        let lock = LocalDdlLock::acquire(
            &state.ddl_locks,
            &LockScope::collections(&[ns.as_str()])?,
            "setAllowMigrations",
            state.lock_timeout(),
        )
        .await?;
        lock.release().await?;
    }
    Ok(RawDocumentBuf::new())
}

/// A `config.changelog` entry, as MongoDB's `ShardingLogging` writes them.
fn change_log_entry(state: &ConfigState, what: &str, ns: &str, details: Document) -> Document {
    let now = bson::DateTime::now();
    let server = state.node.host();
    doc! {
        "_id": format!("{server}-{}-{}", now.try_to_rfc3339_string().unwrap_or_default(), bson::oid::ObjectId::new()),
        "server": &server,
        "shard": "config",
        "clientAddr": "",
        "time": now,
        "what": what,
        "ns": ns,
        "details": details,
    }
}
