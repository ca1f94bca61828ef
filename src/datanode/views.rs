//! Views (`create` with `viewOn` and `pipeline`): definitions kept, as MongoDB keeps them, in
//! the database's `system.views` collection (`{_id: "<db>.<view>", viewOn, pipeline}`),
//! resolved to their source collection and the concatenated pipelines. Views are read-only.

use super::DataNode;
use super::exec::Position;
use super::storage::Storage;
use super::view_graph::{MAX_VIEW_DEPTH, ViewGraph, references};
use crate::aggregate::Pipeline;
use crate::command::CommandRequest;
use crate::datanode::storage::DocumentReads;
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::filter::Filter;
use bson::{Bson, Document, RawDocumentBuf, doc};

/// Where view definitions live.
pub const VIEWS_COLLECTION: &str = "system.views";

/// Stages a view pipeline may not contain.
const FORBIDDEN_STAGES: [&str; 3] = ["$out", "$merge", "$changeStream"];

/// One stored definition.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewDefinition {
    pub name: String,
    pub view_on: String,
    pub pipeline: Vec<Document>,
    /// The view's default collation (normalized), absent for the simple one.
    pub collation: Option<Document>,
}

/// A view resolved down to a collection.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedView {
    pub source: String,
    /// The pipelines of every view on the way, innermost first.
    pub pipeline: Vec<Document>,
    /// The view's default collation (normalized), absent for the simple one.
    pub collation: Option<Document>,
}

fn parse_definition(doc: &Document) -> Option<ViewDefinition> {
    let id = doc.get_str("_id").ok()?;
    let (_, name) = id.split_once('.')?;
    let pipeline = doc
        .get_array("pipeline")
        .map(|stages| {
            stages
                .iter()
                .filter_map(|s| s.as_document().cloned())
                .collect()
        })
        .unwrap_or_default();
    Some(ViewDefinition {
        name: name.to_string(),
        view_on: doc.get_str("viewOn").ok()?.to_string(),
        pipeline,
        collation: doc.get_document("collation").ok().cloned(),
    })
}

/// Every view of `db`.
pub async fn all(storage: &Storage, db: &str) -> Result<Vec<ViewDefinition>> {
    read_definitions(storage, db, &Document::new()).await
}

/// The view named `name` in `db`, if it is one.
pub async fn definition(storage: &Storage, db: &str, name: &str) -> Result<Option<ViewDefinition>> {
    let filter = doc! {"_id": format!("{db}.{name}")};
    Ok(read_definitions(storage, db, &filter)
        .await?
        .into_iter()
        .next())
}

async fn read_definitions(
    storage: &Storage,
    db: &str,
    filter: &Document,
) -> Result<Vec<ViewDefinition>> {
    // Most databases have no views: no `system.views`, nothing to read.
    let Some((store, coll)) = storage.collection(db, VIEWS_COLLECTION).await else {
        return Ok(Vec::new());
    };
    let matcher = Filter::parse(filter)?;
    let mut read = store.read().await?;
    let mut position = Position::for_filter(&coll, filter)?;
    let mut out = Vec::new();
    while !position.done() {
        for candidate in position.next_matches(&mut read, &coll, &matcher).await? {
            out.extend(parse_definition(&candidate.doc));
        }
    }
    Ok(out)
}

/// Follows `name` through views down to a collection; `None` when `name` is not a view.
pub async fn resolve(storage: &Storage, db: &str, name: &str) -> Result<Option<ResolvedView>> {
    let Some(first) = definition(storage, db, name).await? else {
        return Ok(None);
    };
    let mut pipeline = first.pipeline;
    let mut source = first.view_on;
    let collation = first.collation;
    for _ in 0..MAX_VIEW_DEPTH {
        match definition(storage, db, &source).await? {
            None => {
                return Ok(Some(ResolvedView {
                    source,
                    pipeline,
                    collation,
                }));
            }
            Some(inner) => {
                let mut stages = inner.pipeline;
                stages.extend(pipeline);
                pipeline = stages;
                source = inner.view_on;
            }
        }
    }
    Err(MongoError::new(
        ErrorCode::ViewDepthLimitExceeded,
        format!("View depth too deep or view cycle detected; maximum depth is {MAX_VIEW_DEPTH}"),
    ))
}

/// A router that sent a read on a view over a sharded collection must run it itself over the
/// source's shards: it is told so with the resolved view (MongoDB's
/// CommandOnShardedViewNotSupportedOnMongod), since this shard holds only part of the source.
/// A request sent to this node directly reads the view over its local data.
pub async fn require_unsharded_source<S: DataNode>(
    state: &S,
    request: &CommandRequest,
    view: &ResolvedView,
) -> Result<()> {
    let routed = request.sharding()?.is_versioned();
    let ns = format!("{}.{}", request.db, view.source);
    if !routed || !state.is_sharded(&ns).await? {
        return Ok(());
    }
    let pipeline: Vec<Bson> = view.pipeline.iter().cloned().map(Bson::Document).collect();
    // The read runs under the view's collation, which the router cannot know otherwise.
    let collation = view
        .collation
        .clone()
        .unwrap_or_else(|| doc! {"locale": "simple"});
    Err(MongoError::new(
        ErrorCode::CommandOnShardedViewNotSupportedOnMongod,
        "Resolved views on sharded collections must be executed by mongos",
    )
    .with_extra(doc! {"resolvedView": {"ns": ns, "pipeline": pipeline, "collation": collation}}))
}

/// The error writes and index commands on a view answer.
pub fn not_a_collection(db: &str, name: &str) -> MongoError {
    MongoError::new(
        ErrorCode::CommandNotSupportedOnView,
        format!("Namespace {db}.{name} is a view, not a collection"),
    )
}

/// Fails with [`not_a_collection`] when `name` is a view (for commands views do not support).
pub async fn reject(storage: &Storage, db: &str, name: &str) -> Result<()> {
    match definition(storage, db, name).await? {
        Some(_) => Err(not_a_collection(db, name)),
        None => Ok(()),
    }
}

/// Checks a `create` with `viewOn`, then records the view.
pub async fn create(
    storage: &Storage,
    db: &str,
    name: &str,
    view_on: &str,
    pipeline: Vec<Document>,
    collation: Option<Document>,
) -> Result<()> {
    crate::catalog::validate_collection_name(db, view_on)?;
    // A view on a view compares strings as the view under it does.
    if let Some(under) = definition(storage, db, view_on).await? {
        if under.collation != collation {
            return Err(MongoError::new(
                ErrorCode::OptionNotSupportedOnView,
                format!("View {db}.{name} has conflicting collation with view {db}.{view_on}"),
            ));
        }
    }
    for stage in &pipeline {
        if let Some(key) = stage
            .keys()
            .next()
            .filter(|k| FORBIDDEN_STAGES.contains(&k.as_str()))
        {
            return Err(MongoError::new(
                ErrorCode::OptionNotSupportedOnView,
                format!("{key} cannot be used in a view definition"),
            ));
        }
    }
    Pipeline::parse(&pipeline)?;
    let exists = storage.collection(db, name).await.is_some()
        || definition(storage, db, name).await?.is_some();
    if exists {
        return Err(MongoError::new(
            ErrorCode::NamespaceExists,
            format!("Namespace {db}.{name} already exists"),
        ));
    }
    // The view must not close a cycle or a chain of views too long to read.
    let existing = all(storage, db).await?;
    let views = existing
        .into_iter()
        .map(|view| (view.name, references(&view.view_on, &view.pipeline)));
    ViewGraph::new(db, views).insert(name, references(view_on, &pipeline))?;
    let store = storage.database_or_create(db).await?;
    let coll = store.ensure_collection(VIEWS_COLLECTION).await?;
    let record = doc! {
        "_id": format!("{db}.{name}"),
        "viewOn": view_on,
        "pipeline": pipeline.into_iter().map(Bson::Document).collect::<Vec<_>>(),
    };
    let mut record = record;
    if let Some(collation) = collation {
        record.insert("collation", collation);
    }
    let raw = RawDocumentBuf::from_document(&record)?;
    let mut txn = store.write().await?;
    txn.insert_one(&coll, &raw).await?;
    txn.commit().await?;
    Ok(())
}

/// Removes a view; returns whether `name` was one.
pub async fn drop(storage: &Storage, db: &str, name: &str) -> Result<bool> {
    let Some((store, coll)) = storage.collection(db, VIEWS_COLLECTION).await else {
        return Ok(false);
    };
    let id = Bson::String(format!("{db}.{name}"));
    let mut txn = store.write().await?;
    let Some((rid, raw)) = txn.fetch_by_id(&coll, &id).await? else {
        return Ok(false);
    };
    txn.delete(&coll, rid, &raw).await?;
    txn.commit().await?;
    Ok(true)
}
