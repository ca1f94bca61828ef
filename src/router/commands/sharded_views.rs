//! Reads on a view over a sharded collection. The database's primary shard holds the view's
//! definition but only part of its source, so it answers CommandOnShardedViewNotSupportedOnMongod
//! with the resolved view (source namespace and pipeline), as MongoDB's shards do. The router
//! then runs the read as an aggregation on the source — targeted and merged like any other —
//! and answers in the shape of the read it was asked: a find's or an aggregation's cursor under
//! the view's namespace, a count's `n`, distinct's `values`.

use super::super::RouterState;
use super::reads::{Merge, targeted_read};
use crate::command::{CommandRequest, cursor_reply, first_batch};
use crate::document::collation::Collation;
use crate::document::keystring;
use crate::document::path::values_at_path;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use bson::{Bson, Document, RawBsonRef, RawDocumentBuf, doc, rawdoc};
use std::collections::BTreeMap;

/// The generic arguments a read on a view passes on to the aggregation that answers it.
const PASSED_ON: [&str; 7] = [
    "let",
    "maxTimeMS",
    "comment",
    "collation",
    "readConcern",
    "lsid",
    "allowDiskUse",
];

/// A view resolved by a shard: its source collection (in the same database) and the
/// pipeline of every view on the way.
pub(super) struct ResolvedView {
    source: String,
    pipeline: Vec<Document>,
    /// The view's collation, which the read runs under (the shard checked the request's).
    collation: Option<Document>,
}

/// The resolved view a shard's refusal carries, if `reply` is one.
pub(super) fn resolved_view(reply: &RawDocumentBuf) -> Result<Option<ResolvedView>> {
    let code = ErrorCode::CommandOnShardedViewNotSupportedOnMongod.code();
    if !matches!(reply.get("code")?, Some(RawBsonRef::Int32(c)) if c == code) {
        return Ok(None);
    }
    let bad = || MongoError::internal("a shard refused a view read without a valid resolvedView");
    let Some(RawBsonRef::Document(view)) = reply.get("resolvedView")? else {
        return Err(bad());
    };
    let view = Document::try_from(view)?;
    let source = view
        .get_str("ns")
        .ok()
        .and_then(|ns| ns.split_once('.'))
        .map(|(_, coll)| coll.to_string())
        .ok_or_else(bad)?;
    let pipeline = view
        .get_array("pipeline")
        .map_err(|_| bad())?
        .iter()
        .map(|s| s.as_document().cloned().ok_or_else(bad))
        .collect::<Result<_>>()?;
    let collation = view.get_document("collation").ok().cloned();
    Ok(Some(ResolvedView {
        source,
        pipeline,
        collation,
    }))
}

/// Answers `req` (a read on a view) by aggregating over the view's sharded source.
pub(super) async fn read(
    state: &RouterState,
    req: &CommandRequest,
    view: ResolvedView,
    merge: Merge,
) -> Result<RawDocumentBuf> {
    let view_ns = format!("{}.{}", req.db, req.args().collection()?);
    let aggregation = aggregation(req, &view, &merge)?;
    let first_match = view
        .pipeline
        .first()
        .and_then(|s| s.get_document("$match").ok().cloned())
        .unwrap_or_default();
    let reply = Box::pin(targeted_read(
        state,
        &aggregation,
        &first_match,
        Merge::Aggregate,
    ))
    .await?
    .ok_or_else(|| MongoError::internal("the database of a view disappeared"))?;
    if let Some(error) = super::super::forward::reply_error(&reply)? {
        return Err(error);
    }
    match merge {
        Merge::Find | Merge::Aggregate => under_view_namespace(state, &reply, &view_ns),
        Merge::Count => {
            let n = first_batch(&reply.to_document()?)
                .first()
                .and_then(|d| d.get("n").cloned())
                .unwrap_or(Bson::Int32(0));
            Ok(RawDocumentBuf::from_document(&doc! {"n": n})?)
        }
        Merge::Distinct => {
            let key = req.args().str("key")?.unwrap_or_default().to_string();
            let path: Vec<&str> = key.split('.').collect();
            // Keyed by the order-preserving encoding, as a shard orders distinct values (of
            // the collation key under the view's collation).
            let collation = match &view.collation {
                Some(spec) => Some(Collation::parse(spec)?).filter(|c| !c.is_simple()),
                None => None,
            };
            let mut values: BTreeMap<Vec<u8>, Bson> = BTreeMap::new();
            for doc in all_documents(state, &reply, &req.db, &view.source).await? {
                let mut found = Vec::new();
                values_at_path(&Bson::Document(doc), &path, &mut found);
                for value in found {
                    let key = match &collation {
                        Some(collation) => collation.comparison_key(&value),
                        None => value.clone(),
                    };
                    values.entry(keystring::encode_one(&key)).or_insert(value);
                }
            }
            let values: Vec<Bson> = values.into_values().collect();
            Ok(RawDocumentBuf::from_document(&doc! {"values": values})?)
        }
    }
}

/// The aggregation on the view's source that answers `req`.
fn aggregation(req: &CommandRequest, view: &ResolvedView, merge: &Merge) -> Result<CommandRequest> {
    let args = req.args();
    let mut stages = view.pipeline.clone();
    let mut cursor = Document::new();
    match merge {
        Merge::Find => {
            if let Some(filter) = args.document("filter")?.filter(|f| !f.is_empty()) {
                stages.push(doc! {"$match": filter});
            }
            if let Some(sort) = args.document("sort")?.filter(|s| !s.is_empty()) {
                stages.push(doc! {"$sort": sort});
            }
            if let Some(skip) = args.non_negative("skip")?.filter(|s| *s > 0) {
                stages.push(doc! {"$skip": skip});
            }
            if let Some(limit) = args.non_negative("limit")?.filter(|l| *l > 0) {
                stages.push(doc! {"$limit": limit});
            }
            if let Some(projection) = args.document("projection")?.filter(|p| !p.is_empty()) {
                stages.push(doc! {"$project": projection});
            }
            if let Some(batch_size) = args.non_negative("batchSize")? {
                cursor.insert("batchSize", batch_size);
            }
        }
        Merge::Count | Merge::Distinct => {
            stages.push(doc! {"$match": args.document("query")?.unwrap_or_default()});
            if matches!(merge, Merge::Count) {
                if let Some(skip) = args.non_negative("skip")?.filter(|s| *s > 0) {
                    stages.push(doc! {"$skip": skip});
                }
                // A negative limit counts like its absolute value.
                if let Some(limit) = args.i64("limit")?.map(i64::abs).filter(|l| *l > 0) {
                    stages.push(doc! {"$limit": limit});
                }
                stages.push(doc! {"$count": "n"});
            } else {
                let key = args.str("key")?.unwrap_or_default();
                let projection = if key == "_id" || key.starts_with("_id.") {
                    doc! {key: 1}
                } else {
                    doc! {"_id": 0, key: 1}
                };
                stages.push(doc! {"$project": projection});
            }
        }
        Merge::Aggregate => {
            stages.extend(crate::aggregate::request::pipeline(req)?);
            cursor = args.document("cursor")?.unwrap_or_default();
        }
    }
    let mut body = doc! {
        "aggregate": &view.source,
        "pipeline": stages.into_iter().map(Bson::Document).collect::<Vec<_>>(),
        "cursor": cursor,
    };
    for name in PASSED_ON {
        if let Some(value) = req.body.get(name)? {
            body.insert(name, Bson::try_from(value.to_raw_bson())?);
        }
    }
    if let Some(collation) = &view.collation {
        body.insert("collation", collation.clone());
    }
    CommandRequest::from_document(req.db.clone(), &body)
}

/// A cursor reply on the source, as the view's: its `ns`, and the router cursor behind it
/// registered under the view's namespace (getMore names the view).
fn under_view_namespace(
    state: &RouterState,
    reply: &RawDocumentBuf,
    view_ns: &str,
) -> Result<RawDocumentBuf> {
    let Some(RawBsonRef::Document(cursor)) = reply.get("cursor")? else {
        return Ok(reply.clone());
    };
    let id = match cursor.get("id")? {
        Some(RawBsonRef::Int64(id)) => id,
        _ => 0,
    };
    if id != 0 {
        state.cursors.rename(id, view_ns);
    }
    let batch = match cursor.get("firstBatch")? {
        Some(RawBsonRef::Array(docs)) => docs
            .into_iter()
            .map(|d| match d? {
                RawBsonRef::Document(d) => Ok(d.to_owned()),
                _ => Err(MongoError::internal("a batch of non-documents")),
            })
            .collect::<Result<Vec<_>>>()?,
        _ => Vec::new(),
    };
    Ok(cursor_reply(view_ns, batch, id, true))
}

/// Every document of a cursor reply: its first batch and, while it stays open, the router's
/// own getMores.
async fn all_documents(
    state: &RouterState,
    reply: &RawDocumentBuf,
    db: &str,
    collection: &str,
) -> Result<Vec<Document>> {
    let mut docs = first_batch(&reply.to_document()?);
    let mut id = reply
        .to_document()?
        .get_document("cursor")
        .ok()
        .and_then(|c| c.get_i64("id").ok())
        .unwrap_or(0);
    let ctx = RequestContext::internal();
    while id != 0 {
        let more = CommandRequest::new(db, rawdoc! {"getMore": id, "collection": collection})?;
        let next = super::cursors::get_more(state, &ctx, more)
            .await?
            .to_document()?;
        let cursor = next
            .get_document("cursor")
            .map_err(|_| MongoError::internal("a getMore reply without a cursor"))?;
        docs.extend(
            cursor
                .get_array("nextBatch")
                .map(|b| {
                    b.iter()
                        .filter_map(|d| d.as_document().cloned())
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default(),
        );
        id = cursor.get_i64("id").unwrap_or(0);
    }
    Ok(docs)
}
