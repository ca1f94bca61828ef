//! Chunk operations on the shard that owns the chunk: `splitVector` (where to split a range:
//! here its median, as `split` with `find` or `bounds` asks), `splitChunk` and `mergeChunks`
//! (commit a split or a merge through the config server, which alone writes chunk metadata).

use super::super::ShardState;
use crate::catalog::ShardKeyPattern;
use crate::command::{CommandRequest, missing};
use crate::datanode::DataNode;
use crate::datanode::exec::Position;
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::filter::Filter;
use crate::server::RequestContext;
use bson::{Bson, Document, RawDocumentBuf, doc};

/// `{splitVector: ns, keyPattern, min, max, force: true}`: the key of the median document of
/// `[min, max)` (`splitKeys` is empty when the range holds fewer than two distinct keys).
/// Without `force`, MongoDB splits by chunk size, which needs the balancer's size bookkeeping.
pub(super) async fn split_vector(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let (db_name, coll_name) = req.args().namespace()?;
    let args = req.args();
    let pattern = ShardKeyPattern::parse(
        &args
            .document("keyPattern")?
            .ok_or_else(|| missing("splitVector", "keyPattern"))?,
    )?;
    let min = args
        .document("min")?
        .unwrap_or_else(|| pattern.global_min());
    let max = args
        .document("max")?
        .unwrap_or_else(|| pattern.global_max());
    if args.bool("force")? != Some(true) {
        return Err(MongoError::new(
            ErrorCode::NotImplemented,
            "splitVector by chunk size is not supported yet; use force: true to split at the median",
        ));
    }
    let (min_key, max_key) = (pattern.encode(&min), pattern.encode(&max));
    let mut keys: Vec<(Vec<u8>, Document)> = Vec::new();
    if let Some((db, coll)) = state.storage().collection(db_name, coll_name).await {
        let mut read = db.read().await?;
        let all = Filter::match_all();
        let mut position = Position::for_filter(&coll, &Document::new())?;
        while !position.done() {
            for candidate in position.next_matches(&mut read, &coll, &all).await? {
                let key = pattern.extract(&candidate.doc)?;
                let encoded = pattern.encode(&key);
                if encoded >= min_key && encoded < max_key {
                    keys.push((encoded, key));
                }
            }
        }
    }
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    keys.dedup_by(|a, b| a.0 == b.0);
    // The median key starts the upper half; a range of one key cannot be split.
    let split_keys: Vec<Bson> = if keys.len() < 2 {
        Vec::new()
    } else {
        vec![Bson::Document(keys.swap_remove(keys.len() / 2).1)]
    };
    Ok(RawDocumentBuf::from_document(
        &doc! {"splitKeys": split_keys},
    )?)
}

/// `{splitChunk: ns, from, keyPattern, epoch, timestamp, min, max, splitKeys}`: asks the config
/// server to commit the split of a chunk this shard owns.
pub(super) async fn split_chunk(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let (db, coll) = req.args().namespace()?;
    let args = req.args();
    let identity = state.require_identity()?;
    let from = args
        .str("from")?
        .ok_or_else(|| missing("splitChunk", "from"))?;
    if from != identity.shard_name {
        return Err(MongoError::new(
            ErrorCode::StaleConfig,
            format!(
                "splitChunk sent to shard {} for a chunk of shard {from}",
                identity.shard_name
            ),
        ));
    }
    let mut commit = doc! {
        "_configsvrCommitChunkSplit": format!("{db}.{coll}"),
        "shard": from,
        "min": args.document("min")?.ok_or_else(|| missing("splitChunk", "min"))?,
        "max": args.document("max")?.ok_or_else(|| missing("splitChunk", "max"))?,
        "splitPoints": Bson::Array(
            args.array("splitKeys")?
                .ok_or_else(|| missing("splitChunk", "splitKeys"))?,
        ),
    };
    if let Some(bson::RawBsonRef::ObjectId(epoch)) = args.get("epoch")? {
        commit.insert("collEpoch", epoch);
    }
    let config = state.connector.client(&identity.config_host);
    let reply = config.run_doc("admin", commit).await?;
    state.refresh_collection(&format!("{db}.{coll}")).await?;
    Ok(RawDocumentBuf::from_document(&doc! {
        "shardVersion": reply.get_document("shardVersion").cloned().unwrap_or_default(),
    })?)
}

/// `{mergeChunks: ns, bounds: [min, max]}` on the shard owning the chunks: asks the config
/// server to commit the merge.
pub(super) async fn merge_chunks(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let (db, coll) = req.args().namespace()?;
    let identity = state.require_identity()?;
    let (min, max) = req
        .args()
        .bounds("bounds")?
        .ok_or_else(|| missing("mergeChunks", "bounds"))?;
    let config = state.connector.client(&identity.config_host);
    let reply = config
        .run_doc(
            "admin",
            doc! {
                "_configsvrCommitChunksMerge": format!("{db}.{coll}"),
                "shard": &identity.shard_name,
                "chunkRange": {"min": min, "max": max},
            },
        )
        .await?;
    state.refresh_collection(&format!("{db}.{coll}")).await?;
    Ok(RawDocumentBuf::from_document(&doc! {
        "shardVersion": reply.get_document("shardVersion").cloned().unwrap_or_default(),
    })?)
}
