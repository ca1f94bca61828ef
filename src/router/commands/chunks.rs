//! Chunk administration on the router: `split` and `mergeChunks` (to the shard owning the
//! chunks, which commits through the config server; through the routing loop, so a refusal as
//! stale runs them again) and `mergeAllChunksOnShard` (to the config server). The router
//! forgets its cached routing of the collection afterwards.

use super::super::RouterState;
use super::sharding::target_namespace;
use crate::catalog::{Chunk, CollectionEntry};
use crate::command::{CommandRequest, missing};
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::config::collection_routing;
use crate::server::RequestContext;
use bson::{Bson, Document, RawDocumentBuf, doc};

/// `{split: ns, middle | find | bounds}`: splits one chunk, at `middle`, or at the median of
/// the chunk holding `find`'s shard key or bounded by `bounds`.
pub(super) async fn split(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let (db, coll) = target_namespace(&req)?;
    let ns = format!("{db}.{coll}");
    let args = req.args();
    let middle = args.document("middle")?;
    let find = args.document("find")?;
    let bounds = args.bounds("bounds")?;
    if [middle.is_some(), find.is_some(), bounds.is_some()]
        .iter()
        .filter(|given| **given)
        .count()
        != 1
    {
        return Err(MongoError::bad_value(
            "need to specify only one of 'find', 'bounds', or 'middle' parameters",
        ));
    }
    let (middle, find, bounds) = (&middle, &find, &bounds);
    // Each attempt reads the chunks afresh; a shard or the config server refusing the split as
    // stale (the chunk moved or split meanwhile) has `route` run it again.
    let routed = state.route(&db, Some(&ns), false, |_| {
        split_once(state, &ns, middle.as_ref(), find.as_ref(), bounds.as_ref())
    });
    routed.await?.ok_or_else(|| not_sharded(&ns))?;
    state.collections.invalidate(&ns);
    Ok(RawDocumentBuf::new())
}

/// One attempt of a split: reads the collection's chunks, finds the chunk and the split point,
/// and has the chunk's shard split it.
async fn split_once(
    state: &RouterState,
    ns: &str,
    middle: Option<&Document>,
    find: Option<&Document>,
    bounds: Option<&(Document, Document)>,
) -> Result<()> {
    let (entry, map) = collection_routing(&state.config, ns)
        .await?
        .ok_or_else(|| not_sharded(ns))?;
    let key = &entry.key;
    let chunk_holding = |point: &Document| -> Result<Chunk> {
        map.chunk_for(&key.encode(point))
            .cloned()
            .ok_or_else(|| MongoError::internal(format!("no chunk holds {}", render_doc(point))))
    };
    let (chunk, split_at) = if let Some(middle) = middle {
        if !key.is_key_shaped(middle) {
            return Err(MongoError::bad_value(format!(
                "new split key {} is not valid for shard key pattern {}",
                render_doc(middle),
                render_doc(key.pattern())
            )));
        }
        let chunk = chunk_holding(middle)?;
        if key.encode(middle) == chunk.min_key {
            return Err(MongoError::new(
                ErrorCode::CannotSplit,
                format!(
                    "new split key {} is a boundary key of existing chunk [{},{})",
                    render_doc(middle),
                    render_doc(&chunk.min),
                    render_doc(&chunk.max)
                ),
            ));
        }
        (chunk, Some(middle.clone()))
    } else if let Some(query) = find {
        let point = key.equality_key(query).ok_or_else(|| {
            MongoError::new(
                ErrorCode::ShardKeyNotFound,
                format!("no shard key found in chunk query {}", render_doc(query)),
            )
        })?;
        (chunk_holding(&point)?, None)
    } else {
        let (min, max) = bounds.expect("one of the three is given");
        let chunk = map
            .chunks()
            .find(|c| c.min == *min && c.max == *max)
            .cloned()
            .ok_or_else(|| {
                MongoError::bad_value(format!(
                    "no chunk found with the shard key bounds [{}, {})",
                    render_doc(min),
                    render_doc(max)
                ))
            })?;
        (chunk, None)
    };
    let shard = state.shards.client(&state.config, &chunk.shard).await?;
    let split_at = match split_at {
        Some(point) => point,
        None => median(&shard, ns, &entry, &chunk).await?,
    };
    shard
        .run_doc(
            "admin",
            doc! {
                "splitChunk": ns,
                "from": &chunk.shard,
                "keyPattern": key.pattern().clone(),
                "epoch": entry.generation.epoch,
                "timestamp": entry.generation.timestamp,
                "min": chunk.min.clone(),
                "max": chunk.max.clone(),
                "splitKeys": [split_at],
            },
        )
        .await?;
    Ok(())
}

/// NamespaceNotSharded, for chunk commands on a collection that is not sharded.
fn not_sharded(ns: &str) -> MongoError {
    MongoError::new(
        ErrorCode::NamespaceNotSharded,
        format!("ns {ns} is not sharded"),
    )
}

/// The median key of a chunk, from the shard that owns it.
async fn median(
    shard: &crate::rpc::NodeClient,
    ns: &str,
    entry: &CollectionEntry,
    chunk: &Chunk,
) -> Result<Document> {
    let reply = shard
        .run_doc(
            "admin",
            doc! {
                "splitVector": ns,
                "keyPattern": entry.key.pattern().clone(),
                "min": chunk.min.clone(),
                "max": chunk.max.clone(),
                "force": true,
            },
        )
        .await?;
    match reply.get_array("splitKeys").ok().and_then(|k| k.first()) {
        Some(Bson::Document(key)) => Ok(key.clone()),
        _ => Err(MongoError::new(
            ErrorCode::CannotSplit,
            format!(
                "chunk [{}, {}) of {ns} has fewer than two distinct shard key values and cannot be split",
                render_doc(&chunk.min),
                render_doc(&chunk.max)
            ),
        )),
    }
}

/// `{mergeChunks: ns, bounds: [min, max]}`: merges the chunks covering exactly `[min, max)`,
/// which must all be on one shard; the shard commits through the config server.
pub(super) async fn merge_chunks(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let (db, coll) = target_namespace(&req)?;
    let ns = format!("{db}.{coll}");
    let (min, max) = req
        .args()
        .bounds("bounds")?
        .ok_or_else(|| missing("mergeChunks", "bounds"))?;
    let (min, max) = (&min, &max);
    // As for `split`: each attempt reads the chunks afresh, a stale refusal runs it again.
    let routed = state.route(&db, Some(&ns), false, |_| merge_once(state, &ns, min, max));
    routed.await?.ok_or_else(|| not_sharded(&ns))?;
    state.collections.invalidate(&ns);
    Ok(RawDocumentBuf::new())
}

/// One attempt of a merge: reads the collection's chunks and has the shard owning the first
/// chunk of the range merge them.
async fn merge_once(state: &RouterState, ns: &str, min: &Document, max: &Document) -> Result<()> {
    let (entry, chunks) = collection_routing(&state.config, ns)
        .await?
        .ok_or_else(|| not_sharded(ns))?;
    if !entry.key.is_key_shaped(min) || !entry.key.is_key_shaped(max) {
        return Err(MongoError::bad_value(format!(
            "shard key bounds [{}, {}] are not valid for shard key pattern {}",
            render_doc(min),
            render_doc(max),
            render_doc(entry.key.pattern())
        )));
    }
    // The shard owning the first chunk of the range commits; the config server checks the
    // others are on it too.
    let first = chunks.chunks().find(|c| c.min == *min).ok_or_else(|| {
        MongoError::new(
            ErrorCode::InvalidOptions,
            format!(
                "could not merge chunks of {ns}: {} is not a chunk boundary",
                render_doc(min)
            ),
        )
    })?;
    let shard = state.shards.client(&state.config, &first.shard).await?;
    shard
        .run_doc(
            "admin",
            doc! {"mergeChunks": ns, "bounds": [min.clone(), max.clone()]},
        )
        .await?;
    Ok(())
}

/// `{mergeAllChunksOnShard: ns, shard, maxNumberOfChunksToMerge}`: merges every run of
/// contiguous chunks `shard` owns; the config server commits it.
pub(super) async fn merge_all_chunks_on_shard(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let (db, coll) = target_namespace(&req)?;
    let ns = format!("{db}.{coll}");
    let args = req.args();
    let shard = args
        .str("shard")?
        .ok_or_else(|| missing("mergeAllChunksOnShard", "shard"))?;
    let mut cmd = doc! {"_configsvrCommitMergeAllChunksOnShard": &ns, "shard": shard};
    if let Some(max) = args.i64("maxNumberOfChunksToMerge")? {
        cmd.insert("maxNumberOfChunksToMerge", max);
    }
    state.config.run_doc("admin", cmd).await?;
    state.collections.invalidate(&ns);
    Ok(RawDocumentBuf::new())
}
