//! Chunk metadata: splits, merges and merging every mergeable run of one shard's chunks, with
//! the versioning rules of the sharding design (a split bumps minor versions, and the major
//! version when the shard owns the collection version; a merge takes the collection version's
//! major plus one). Every change takes the chunk resource mutex, as MongoDB's do.

use super::super::ConfigState;
use super::super::store::ConfigWrite;
use super::collections::{StoredRouting, target_ns};
use crate::catalog::{Chunk, ChunkVersion, chunk_document};
use crate::command::{CommandRequest, missing};
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::{CommandSpec, RequestContext};
use bson::oid::ObjectId;
use bson::{Bson, Document, RawDocumentBuf, doc};

pub(super) fn commands() -> Vec<CommandSpec<ConfigState>> {
    vec![
        CommandSpec::new("_configsvrCommitChunksMerge", commit_chunks_merge)
            .admin_only()
            .help("Internal: replaces contiguous chunks of one shard by one chunk"),
        CommandSpec::new("_configsvrCommitChunkSplit", commit_chunk_split)
            .admin_only()
            .help("Internal: replaces a chunk by the chunks its split points delimit"),
        CommandSpec::new(
            "_configsvrCommitMergeAllChunksOnShard",
            commit_merge_all_chunks_on_shard,
        )
        .admin_only()
        .help("Internal: merges every run of contiguous chunks of one shard"),
    ]
}

/// The shard a chunk command names (`shard`, required).
fn shard_argument(req: &CommandRequest) -> Result<String> {
    Ok(req
        .args()
        .str("shard")?
        .ok_or_else(|| missing(req.name(), "shard"))?
        .to_string())
}

/// `{_configsvrCommitChunkSplit: ns, collEpoch, collTimestamp, shard, min, max, splitPoints}`:
/// replaces the chunk `[min, max)` owned by `shard` with the chunks the split points delimit.
async fn commit_chunk_split(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = target_ns(&req)?;
    let args = req.args();
    let epoch = match args.get("collEpoch")? {
        Some(bson::RawBsonRef::ObjectId(oid)) => Some(oid),
        _ => None,
    };
    let shard = shard_argument(&req)?;
    let min = args
        .document("min")?
        .ok_or_else(|| missing(req.name(), "min"))?;
    let max = args
        .document("max")?
        .ok_or_else(|| missing(req.name(), "max"))?;
    let split_points: Vec<Document> = args
        .array("splitPoints")?
        .ok_or_else(|| missing(req.name(), "splitPoints"))?
        .into_iter()
        .map(|p| match p {
            Bson::Document(d) => Ok(d),
            _ => Err(MongoError::type_mismatch("split points must be objects")),
        })
        .collect::<Result<_>>()?;
    let _chunks = state.chunk_op_lock.lock().await;
    let stored = StoredRouting::load_sharded(state, &ns).await?;
    if epoch.is_some_and(|e| e != stored.entry.generation.epoch) {
        return Err(MongoError::new(
            ErrorCode::StaleEpoch,
            format!(
                "splitChunk cannot split chunk in collection {ns}: the collection was dropped or recreated"
            ),
        ));
    }
    let map = stored.chunk_map()?;
    let key = &stored.entry.key;
    let (id, chunk) = stored
        .chunks
        .iter()
        .find(|(_, c)| c.min == min && c.max == max && c.shard == shard)
        .ok_or_else(|| {
            MongoError::new(
                ErrorCode::StaleConfig,
                format!(
                    "splitChunk cannot find chunk [{}, {}) on shard {shard} of {ns}",
                    render_doc(&min),
                    render_doc(&max)
                ),
            )
        })?;
    let mut bounds = vec![chunk.min.clone()];
    let mut previous = chunk.min_key.clone();
    for point in &split_points {
        if !key.is_key_shaped(point) {
            return Err(MongoError::new(
                ErrorCode::InvalidOptions,
                format!(
                    "split point {} does not match the shard key {}",
                    render_doc(point),
                    render_doc(key.pattern())
                ),
            ));
        }
        let encoded = key.encode(point);
        if encoded <= previous || encoded >= chunk.max_key {
            return Err(MongoError::new(
                ErrorCode::InvalidOptions,
                format!(
                    "split keys must be strictly increasing and inside the chunk [{}, {}): {}",
                    render_doc(&chunk.min),
                    render_doc(&chunk.max),
                    render_doc(point)
                ),
            ));
        }
        previous = encoded;
        bounds.push(point.clone());
    }
    bounds.push(chunk.max.clone());
    let generation = stored.entry.generation;
    let collection_version = map
        .collection_version()
        .ok_or_else(|| MongoError::internal("a sharded collection without chunks"))?;
    // The seed's rule (SERVER-41480): when the shard owns the collection version, the major
    // version moves too, so routers that only track that shard notice the split.
    let mut next = collection_version;
    if map.shard_version(&shard, generation) == collection_version {
        next.major += 1;
        next.minor = 0;
    }
    let now = state.node.clock.tick();
    let mut writes = vec![ConfigWrite::Delete("chunks", id.clone())];
    for pair in bounds.windows(2) {
        next.minor += 1;
        let piece = Chunk::new(key, pair[0].clone(), pair[1].clone(), shard.clone(), next);
        writes.push(ConfigWrite::Upsert(
            "chunks",
            chunk_document(&piece, &stored.entry.uuid, ObjectId::new(), now),
        ));
    }
    state.store().write_batch(&writes).await?;
    tracing::info!(ns = %ns, pieces = bounds.len() - 1, "split chunk");
    Ok(RawDocumentBuf::from_document(&doc! {
        "shardVersion": next.to_document(),
        "collectionVersion": next.to_document(),
    })?)
}

/// `{_configsvrCommitChunksMerge: ns, shard, chunkRange: {min, max}}`: the chunks of `shard`
/// exactly covering `[min, max)` become one chunk whose version is the collection version's
/// major plus one, minor zero, as the versioning protocol prescribes for merges.
async fn commit_chunks_merge(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = target_ns(&req)?;
    let args = req.args();
    let shard = shard_argument(&req)?;
    let range = args
        .document("chunkRange")?
        .ok_or_else(|| missing(req.name(), "chunkRange"))?;
    let (Ok(min), Ok(max)) = (range.get_document("min"), range.get_document("max")) else {
        return Err(MongoError::bad_value(
            "chunkRange needs min and max documents",
        ));
    };
    let _chunks = state.chunk_op_lock.lock().await;
    let stored = StoredRouting::load_sharded(state, &ns).await?;
    let key = &stored.entry.key;
    let (min_key, max_key) = (key.encode(min), key.encode(max));
    let mut pieces: Vec<&(Bson, Chunk)> = stored
        .chunks
        .iter()
        .filter(|(_, c)| c.min_key >= min_key && c.max_key <= max_key)
        .collect();
    pieces.sort_by(|a, b| a.1.min_key.cmp(&b.1.min_key));
    let covers = pieces.first().is_some_and(|(_, c)| c.min_key == min_key)
        && pieces.last().is_some_and(|(_, c)| c.max_key == max_key)
        && pieces.windows(2).all(|w| w[0].1.max_key == w[1].1.min_key);
    let range_text = || format!("[{}, {})", render_doc(min), render_doc(max));
    if !covers {
        return Err(MongoError::new(
            ErrorCode::InvalidOptions,
            format!(
                "could not merge chunks of {ns}: the range {} does not start and end at chunk boundaries",
                range_text()
            ),
        ));
    }
    if let Some((_, other)) = pieces.iter().find(|(_, c)| c.shard != shard) {
        return Err(MongoError::new(
            ErrorCode::IllegalOperation,
            format!(
                "could not merge chunks of {ns} in range {}: chunk [{}, {}) is on shard {}, not {shard}",
                range_text(),
                render_doc(&other.min),
                render_doc(&other.max),
                other.shard
            ),
        ));
    }
    if pieces.len() < 2 {
        return Err(MongoError::new(
            ErrorCode::IllegalOperation,
            format!(
                "could not merge chunks of {ns}: the range {} holds only one chunk",
                range_text()
            ),
        ));
    }
    let collection_version = stored
        .chunk_map()?
        .collection_version()
        .ok_or_else(|| MongoError::internal("a sharded collection without chunks"))?;
    let merged_version =
        ChunkVersion::new(stored.entry.generation, collection_version.major + 1, 0);
    let merged = Chunk::new(key, min.clone(), max.clone(), shard, merged_version);
    let mut writes: Vec<ConfigWrite> = pieces
        .iter()
        .map(|(id, _)| ConfigWrite::Delete("chunks", id.clone()))
        .collect();
    writes.push(ConfigWrite::Upsert(
        "chunks",
        chunk_document(
            &merged,
            &stored.entry.uuid,
            ObjectId::new(),
            state.node.clock.tick(),
        ),
    ));
    state.store().write_batch(&writes).await?;
    tracing::info!(ns = %ns, merged = pieces.len(), "merged chunks");
    Ok(RawDocumentBuf::from_document(&doc! {
        "shardVersion": merged_version.to_document(),
        "collectionVersion": merged_version.to_document(),
    })?)
}

/// `{_configsvrCommitMergeAllChunksOnShard: ns, shard, maxNumberOfChunksToMerge}`: every run of
/// two or more contiguous chunks of `shard` becomes one chunk (at most
/// `maxNumberOfChunksToMerge` chunks merged in all). The merged chunks take the collection
/// version's major plus one, with successive minors, so that each is newer than everything
/// before. Nothing to merge is not an error.
async fn commit_merge_all_chunks_on_shard(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = target_ns(&req)?;
    let args = req.args();
    let shard = shard_argument(&req)?;
    let budget = match args.i64("maxNumberOfChunksToMerge")? {
        None => usize::MAX,
        Some(n) if n >= 2 => usize::try_from(n).unwrap_or(usize::MAX),
        Some(n) => {
            return Err(MongoError::bad_value(format!(
                "maxNumberOfChunksToMerge must be at least 2, not {n}"
            )));
        }
    };
    if !state.shards().await?.iter().any(|(name, _)| *name == shard) {
        return Err(MongoError::new(
            ErrorCode::ShardNotFound,
            format!("Shard {shard} not found"),
        ));
    }
    let _chunks = state.chunk_op_lock.lock().await;
    let stored = StoredRouting::load_sharded(state, &ns).await?;
    let map = stored.chunk_map()?;
    let collection_version = map
        .collection_version()
        .ok_or_else(|| MongoError::internal("a sharded collection without chunks"))?;
    let ids: std::collections::HashMap<&[u8], &Bson> = stored
        .chunks
        .iter()
        .map(|(id, c)| (c.min_key.as_slice(), id))
        .collect();
    let runs = mergeable_runs(map.chunks(), &shard, budget);
    let mut writes = Vec::new();
    let mut version = ChunkVersion::new(stored.entry.generation, collection_version.major + 1, 0);
    let now = state.node.clock.tick();
    for run in &runs {
        let first = run.first().expect("runs hold two chunks or more");
        let last = run.last().expect("runs hold two chunks or more");
        for chunk in run {
            writes.push(ConfigWrite::Delete(
                "chunks",
                ids[chunk.min_key.as_slice()].clone(),
            ));
        }
        let merged = Chunk::new(
            &stored.entry.key,
            first.min.clone(),
            last.max.clone(),
            shard.clone(),
            version,
        );
        writes.push(ConfigWrite::Upsert(
            "chunks",
            chunk_document(&merged, &stored.entry.uuid, ObjectId::new(), now),
        ));
        version = ChunkVersion::new(version.generation, version.major, version.minor + 1);
    }
    if !writes.is_empty() {
        state.store().write_batch(&writes).await?;
    }
    tracing::info!(ns = %ns, shard = %shard, runs = runs.len(), "merged all chunks on a shard");
    Ok(RawDocumentBuf::new())
}

/// The runs of two or more contiguous chunks of `shard`, in key order, holding at most `budget`
/// chunks in all.
fn mergeable_runs<'a>(
    chunks: impl Iterator<Item = &'a Chunk>,
    shard: &str,
    mut budget: usize,
) -> Vec<Vec<&'a Chunk>> {
    let mut runs = Vec::new();
    let mut current: Vec<&Chunk> = Vec::new();
    let mut close = |current: &mut Vec<&'a Chunk>, budget: &mut usize| {
        current.truncate(*budget);
        if current.len() >= 2 {
            *budget -= current.len();
            runs.push(std::mem::take(current));
        }
        current.clear();
    };
    for chunk in chunks {
        if chunk.shard == shard {
            current.push(chunk);
        } else {
            close(&mut current, &mut budget);
        }
    }
    close(&mut current, &mut budget);
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{CollectionGeneration, ShardKeyPattern};
    use bson::Timestamp;

    fn chunks(owners: &[&str]) -> Vec<Chunk> {
        let key = ShardKeyPattern::parse(&doc! {"a": 1}).unwrap();
        let generation = CollectionGeneration::new(Timestamp {
            time: 1,
            increment: 0,
        });
        let bound = |i: usize| -> Document {
            match i {
                0 => key.global_min(),
                i if i == owners.len() => key.global_max(),
                i => doc! {"a": i as i32},
            }
        };
        owners
            .iter()
            .enumerate()
            .map(|(i, shard)| {
                Chunk::new(
                    &key,
                    bound(i),
                    bound(i + 1),
                    shard.to_string(),
                    ChunkVersion::new(generation, 1, i as u32),
                )
            })
            .collect()
    }

    fn run_lengths(runs: &[Vec<&Chunk>]) -> Vec<usize> {
        runs.iter().map(Vec::len).collect()
    }

    #[test]
    fn runs_are_contiguous_chunks_of_one_shard() {
        let all = chunks(&["s0", "s0", "s1", "s0", "s1", "s1", "s1", "s0", "s0"]);
        assert_eq!(
            run_lengths(&mergeable_runs(all.iter(), "s0", usize::MAX)),
            [2, 2]
        );
        assert_eq!(
            run_lengths(&mergeable_runs(all.iter(), "s1", usize::MAX)),
            [3]
        );
        assert!(mergeable_runs(all.iter(), "s2", usize::MAX).is_empty());
    }

    #[test]
    fn the_budget_caps_the_chunks_merged() {
        let all = chunks(&["s0", "s0", "s0", "s1", "s0", "s0", "s0"]);
        assert_eq!(run_lengths(&mergeable_runs(all.iter(), "s0", 4)), [3]);
        assert_eq!(run_lengths(&mergeable_runs(all.iter(), "s0", 5)), [3, 2]);
        assert_eq!(run_lengths(&mergeable_runs(all.iter(), "s0", 2)), [2]);
    }
}
