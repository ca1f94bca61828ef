//! `$shardedDataDistribution` (`sh.getShardedDataDistribution()`): for every sharded
//! collection, each shard holding its chunks with the documents and bytes it owns — from
//! `$collStats` on those shards. Orphans counted are those awaiting range deletion, as in
//! MongoDB; docgrid has no migrations yet, so there are none (documents written into a shard
//! directly outside its chunks are not counted as orphans, as MongoDB does not count them).

use super::super::RouterState;
use super::reads::{Merge, open_cursor, targeted_read};
use crate::aggregate::Pipeline;
use crate::command::{CommandRequest, first_batch};
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::config::find_all;
use bson::{Bson, Document, RawDocumentBuf, doc};

pub(super) const STAGE: &str = "$shardedDataDistribution";

/// Runs an aggregation whose first stage is `$shardedDataDistribution` (`stages`).
pub(super) async fn run(
    state: &RouterState,
    req: &CommandRequest,
    stages: &[Document],
) -> Result<RawDocumentBuf> {
    let collectionless = matches!(req.args().target()?, bson::RawBsonRef::Int32(1));
    if req.db != "admin" || !collectionless {
        return Err(MongoError::new(
            ErrorCode::InvalidNamespace,
            format!("{STAGE} must be run against the 'admin' database with {{aggregate: 1}}"),
        ));
    }
    match stages.first().and_then(|s| s.get(STAGE)) {
        Some(Bson::Document(options)) if options.is_empty() => {}
        _ => {
            return Err(MongoError::new(
                ErrorCode::FailedToParse,
                format!("{STAGE} takes an empty document: {{{STAGE}: {{}}}}"),
            ));
        }
    }
    let rest = Pipeline::parse_with_variables(&stages[1..], req.args().let_variables()?)?;
    let mut out = Vec::new();
    for entry in find_all(&state.config, "collections", doc! {}, doc! {"_id": 1}).await? {
        let Ok(ns) = entry.get_str("_id") else {
            continue;
        };
        if let Some(distribution) = distribution(state, ns).await? {
            out.push(distribution);
        }
    }
    let docs = rest
        .run(out)?
        .iter()
        .map(RawDocumentBuf::from_document)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let batch_size = req
        .args()
        .document("cursor")?
        .and_then(|c| {
            c.get("batchSize")
                .and_then(Bson::as_i64)
                .or_else(|| c.get("batchSize").and_then(Bson::as_i32).map(i64::from))
        })
        .unwrap_or(101);
    let cursor = super::super::cluster_cursor::ClusterCursor::from_documents(
        "admin",
        "$cmd.aggregate",
        docs,
    );
    open_cursor(
        state,
        cursor,
        "admin.$cmd.aggregate",
        batch_size,
        false,
        false,
    )
    .await
}

/// One collection's entry: `$collStats` on each shard holding its chunks. `None` when the
/// collection went away meanwhile.
async fn distribution(state: &RouterState, ns: &str) -> Result<Option<Document>> {
    let (db, coll) = crate::catalog::split_namespace(ns)?;
    let stats = doc! {
        "aggregate": coll,
        "pipeline": [{"$collStats": {"storageStats": {}}}],
        "cursor": {},
    };
    let request = CommandRequest::from_document(db, &stats)?;
    let Some(reply) = targeted_read(state, &request, &Document::new(), Merge::Aggregate).await?
    else {
        return Ok(None);
    };
    if let Some(error) = super::super::forward::reply_error(&reply)? {
        return Err(error);
    }
    let mut shards = Vec::new();
    for shard in first_batch(&reply.to_document()?) {
        let storage = shard
            .get_document("storageStats")
            .cloned()
            .unwrap_or_default();
        let number = |name: &str| match storage.get(name) {
            Some(Bson::Int32(n)) => i64::from(*n),
            Some(Bson::Int64(n)) => *n,
            Some(Bson::Double(n)) => *n as i64,
            _ => 0,
        };
        // Numbers as MongoDB's pipeline computes them: int32 while they fit.
        let int = |n: i64| i32::try_from(n).map_or(Bson::Int64(n), Bson::Int32);
        // As MongoDB: orphans are the documents awaiting range deletion, sized at the
        // collection's average document size.
        let (count, orphans) = (number("count"), number("numOrphanDocs"));
        let average = number("avgObjSize");
        shards.push(Bson::Document(doc! {
            "shardName": shard.get_str("shard").unwrap_or_default(),
            "numOrphanedDocs": int(orphans),
            "numOwnedDocuments": int((count - orphans).max(0)),
            "ownedSizeBytes": int((number("size") - orphans * average).max(0)),
            "orphanedSizeBytes": int(orphans * average),
        }));
    }
    Ok(Some(doc! {"ns": ns, "shards": shards}))
}
