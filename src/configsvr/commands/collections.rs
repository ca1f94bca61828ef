//! Sharded collection metadata: committing a new sharded collection (its `config.collections`
//! entry and first chunks); `_configsvrDropCollection` and `_configsvrRenameCollection`, which
//! hand a drop or a rename to its coordinator (chunk splits and merges are in `chunks`).

use super::super::ConfigState;
use super::super::store::ConfigWrite;
use crate::catalog::{
    Chunk, ChunkMap, ChunkVersion, CollectionEntry, CollectionGeneration, ShardKeyPattern,
    chunk_document, chunk_from_document,
};
use crate::command::{CommandRequest, missing};
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::{CommandSpec, RequestContext};
use bson::oid::ObjectId;
use bson::{Binary, Bson, DateTime, Document, RawDocumentBuf, doc};

pub(super) fn commands() -> Vec<CommandSpec<ConfigState>> {
    vec![
        CommandSpec::new("_configsvrCommitShardCollection", commit_shard_collection)
        .admin_only()
        .help("Internal: records a newly sharded collection and its first chunk"),
        CommandSpec::new("_configsvrShardCollection", shard_collection)
        .admin_only()
        .help("Internal: shards a collection through its coordinator (the primary shard does the work)"),
        CommandSpec::new("_configsvrCollMod", coll_mod)
            .admin_only()
            .help("Internal: applies a collMod on every shard holding the collection, through its coordinator"),
        CommandSpec::new("_configsvrDropCollection", drop_collection)
        .admin_only()
        .help("Internal: drops a collection on every shard and removes its routing metadata"),
        CommandSpec::new("_configsvrRenameCollection", rename_collection)
        .admin_only()
        .help("Internal: renames a collection when a sharded one is involved, on every shard and in the routing table"),
    ]
}

/// A collection's routing metadata as stored: its entry and its chunks with their `_id`s.
pub(crate) struct StoredRouting {
    pub entry: CollectionEntry,
    pub chunks: Vec<(Bson, Chunk)>,
}

impl StoredRouting {
    /// A collection's `config.collections` entry, if it is sharded.
    pub(crate) async fn entry(state: &ConfigState, ns: &str) -> Result<Option<CollectionEntry>> {
        let store = state.store();
        match store.find_one("collections", &doc! {"_id": ns}).await? {
            Some(doc) => Ok(Some(CollectionEntry::from_document(&doc)?)),
            None => Ok(None),
        }
    }

    /// [`entry`](Self::entry), or NamespaceNotSharded.
    pub(crate) async fn sharded_entry(state: &ConfigState, ns: &str) -> Result<CollectionEntry> {
        Self::entry(state, ns).await?.ok_or_else(|| not_sharded(ns))
    }

    pub(crate) async fn load(state: &ConfigState, ns: &str) -> Result<Option<StoredRouting>> {
        let Some(entry) = Self::entry(state, ns).await? else {
            return Ok(None);
        };
        let store = state.store();
        let mut chunks = Vec::new();
        for chunk in store
            .find("chunks", &doc! {"uuid": Bson::Binary(entry.uuid.clone())})
            .await?
        {
            let id = chunk.get("_id").cloned().unwrap_or(Bson::Null);
            chunks.push((
                id,
                chunk_from_document(&entry.key, entry.generation, &chunk)?,
            ));
        }
        Ok(Some(StoredRouting { entry, chunks }))
    }

    /// [`load`](Self::load), or NamespaceNotSharded.
    pub(crate) async fn load_sharded(state: &ConfigState, ns: &str) -> Result<StoredRouting> {
        Self::load(state, ns).await?.ok_or_else(|| not_sharded(ns))
    }

    pub(super) fn chunk_map(&self) -> Result<ChunkMap> {
        ChunkMap::new(
            &self.entry.key,
            self.chunks.iter().map(|(_, c)| c.clone()).collect(),
        )
    }
}

fn not_sharded(ns: &str) -> MongoError {
    MongoError::new(
        ErrorCode::NamespaceNotSharded,
        format!("Collection {ns} is not sharded"),
    )
}

/// `{_configsvrShardCollection: ns, key, unique}`: through its coordinator
/// (`coordinators::shard_collection`); replies as the primary shard did (`collectionsharded`,
/// `collectionUUID`).
async fn shard_collection(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = target_ns(&req)?;
    let args = req.args();
    let mut options = doc! {"key": args.shard_key("key")?.pattern().clone()};
    if let Some(unique) = args.bool("unique")? {
        options.insert("unique", unique);
    }
    if let Some(collation) = args.document("collation")? {
        options.insert("collation", collation);
    }
    let reply = super::super::coordinators::shard_collection(state, &ns, options).await?;
    Ok(RawDocumentBuf::from_document(&reply)?)
}

/// `{_configsvrCollMod: ns, command}`: through its coordinator (`coordinators::coll_mod`);
/// replies as the primary shard did.
async fn coll_mod(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = target_ns(&req)?;
    let command = req
        .args()
        .document("command")?
        .ok_or_else(|| missing(req.name(), "command"))?;
    let reply = super::super::coordinators::coll_mod(state, &ns, command).await?;
    Ok(RawDocumentBuf::from_document(&reply)?)
}

/// `{_configsvrDropCollection: ns}`: drops the collection, sharded or not, through its
/// coordinator (`coordinators::drop_collection`); replies `{ns, nIndexesWas}` when it existed.
async fn drop_collection(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = target_ns(&req)?;
    let (db, coll) = crate::catalog::split_namespace(&ns)?;
    crate::catalog::validate_collection_name(db, coll)?;
    let reply = super::super::coordinators::drop_collection(state, &ns).await?;
    Ok(RawDocumentBuf::from_document(&reply)?)
}

/// `{_configsvrRenameCollection: from, to, dropTarget}` (full namespaces): through its
/// coordinator (`coordinators::rename_collection`).
async fn rename_collection(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let from = args
        .str(req.name())?
        .ok_or_else(|| missing(req.name(), req.name()))?;
    let to = args.str("to")?.ok_or_else(|| missing(req.name(), "to"))?;
    crate::catalog::check_rename(from, to)?;
    let drop_target = args.bool("dropTarget")?.unwrap_or(false);
    let reply = super::super::coordinators::rename_collection(state, from, to, drop_target).await?;
    Ok(RawDocumentBuf::from_document(&reply)?)
}

pub(super) fn target_ns(req: &CommandRequest) -> Result<String> {
    let (db, coll) = req.args().namespace()?;
    Ok(format!("{db}.{coll}"))
}

fn version_reply(version: ChunkVersion) -> Result<RawDocumentBuf> {
    Ok(RawDocumentBuf::from_document(
        &doc! {"collectionVersion": version.to_document()},
    )?)
}

/// `{_configsvrCommitShardCollection: ns, key, unique, uuid, primaryShard, initialChunks}`: the
/// primary shard, having checked and prepared the collection (on every shard `initialChunks`
/// places chunks on), records it as sharded: with the given chunks (`[{min, max, shard}]`,
/// versions `1|0`, `1|1`, ... in key order), or one chunk covering the whole key space on
/// itself. Sharding again with the same key answers the existing version; with another key,
/// AlreadyInitialized.
async fn commit_shard_collection(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = target_ns(&req)?;
    let args = req.args();
    let key = args.shard_key("key")?;
    let unique = args.bool("unique")?.unwrap_or(false);
    let uuid = match args.get("uuid")? {
        Some(bson::RawBsonRef::Binary(b)) => Binary {
            subtype: b.subtype,
            bytes: b.bytes.to_vec(),
        },
        _ => return Err(missing(req.name(), "uuid")),
    };
    let primary = args
        .str("primaryShard")?
        .ok_or_else(|| missing(req.name(), "primaryShard"))?
        .to_string();
    let layout = initial_layout(&key, &primary, args.array("initialChunks")?)?;
    let known: Vec<String> = state
        .shards()
        .await?
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    if let Some((_, _, shard)) = layout.iter().find(|(_, _, s)| !known.contains(s)) {
        return Err(MongoError::new(
            ErrorCode::ShardNotFound,
            format!("cannot place a chunk of {ns} on shard {shard}: no such shard"),
        ));
    }
    let _chunks = state.chunk_op_lock.lock().await;
    let _fence = state.fence_commit(&req, &ns).await?;
    if let Some(existing) = StoredRouting::load(state, &ns).await? {
        if existing.entry.key == key && existing.entry.unique == unique {
            let version = existing
                .chunk_map()?
                .collection_version()
                .ok_or_else(|| MongoError::internal("a sharded collection without chunks"))?;
            return version_reply(version);
        }
        return Err(MongoError::new(
            ErrorCode::AlreadyInitialized,
            format!(
                "sharding already enabled for collection {ns} with options {{ _id: \"{ns}\", key: {}, unique: {} }}",
                render_doc(existing.entry.key.pattern()),
                existing.entry.unique
            ),
        ));
    }
    let now = state.node.clock.tick();
    let generation = CollectionGeneration::new(now);
    let chunks: Vec<Chunk> = layout
        .into_iter()
        .enumerate()
        .map(|(i, (min, max, shard))| {
            Chunk::new(
                &key,
                min,
                max,
                shard,
                ChunkVersion::new(generation, 1, i as u32),
            )
        })
        .collect();
    let version = ChunkMap::new(&key, chunks.clone())?
        .collection_version()
        .ok_or_else(|| MongoError::internal("a sharded collection without chunks"))?;
    let entry = CollectionEntry {
        ns: ns.clone(),
        generation,
        uuid: uuid.clone(),
        key,
        unique,
        last_modified: DateTime::now(),
        no_balance: false,
        permit_migrations: true,
        default_collation: args.document("defaultCollation")?,
    };
    let mut writes: Vec<ConfigWrite> = chunks
        .iter()
        .map(|c| ConfigWrite::Upsert("chunks", chunk_document(c, &uuid, ObjectId::new(), now)))
        .collect();
    writes.push(ConfigWrite::Upsert("collections", entry.to_document()));
    state.store().write_batch(&writes).await?;
    tracing::info!(ns = %ns, key = %render_doc(entry.key.pattern()), chunks = chunks.len(), "sharded collection");
    version_reply(version)
}

/// The initial chunks as `(min, max, shard)` in key order: those the primary shard asked for
/// (checked to tile the key space when the chunk map is built), or one chunk on the primary.
fn initial_layout(
    key: &ShardKeyPattern,
    primary: &str,
    requested: Option<Vec<Bson>>,
) -> Result<Vec<(Document, Document, String)>> {
    let Some(requested) = requested.filter(|r| !r.is_empty()) else {
        return Ok(vec![(
            key.global_min(),
            key.global_max(),
            primary.to_string(),
        )]);
    };
    let mut layout = Vec::with_capacity(requested.len());
    for chunk in requested {
        let Bson::Document(chunk) = chunk else {
            return Err(MongoError::type_mismatch(
                "initialChunks must be an array of {min, max, shard} documents",
            ));
        };
        let (Ok(min), Ok(max), Ok(shard)) = (
            chunk.get_document("min"),
            chunk.get_document("max"),
            chunk.get_str("shard"),
        ) else {
            return Err(MongoError::bad_value(
                "each initial chunk needs min, max and shard",
            ));
        };
        if !key.is_key_shaped(min) || !key.is_key_shaped(max) {
            return Err(MongoError::new(
                ErrorCode::InvalidOptions,
                format!(
                    "initial chunk bounds {} and {} do not match the shard key {}",
                    render_doc(min),
                    render_doc(max),
                    render_doc(key.pattern())
                ),
            ));
        }
        layout.push((min.clone(), max.clone(), shard.to_string()));
    }
    layout.sort_by_key(|(min, _, _)| key.encode(min));
    Ok(layout)
}
