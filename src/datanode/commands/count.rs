//! `count` and `distinct`.

use super::super::DataNode;
use super::super::exec::{PlanStats, Position, QueryShape, StageTree, count_stats, no_collection};
use super::super::storage::CollectionMeta;
use super::super::views;
use crate::command::CommandRequest;
use crate::document::collation::Collation;
use crate::document::keystring;
use crate::document::path::values_at_path;
use crate::error::{MongoError, Result};
use crate::expression::LetVariables;
use crate::query::filter::Filter;
use crate::server::RequestContext;
use bson::{Bson, Document, RawDocumentBuf, doc};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// What `count` and `distinct` parse before they read, whether or not the collection exists.
pub(super) struct QueryRead<'a> {
    collection: &'a str,
    query: Document,
    filter: Filter,
    hint: Option<Bson>,
    /// No user variables; the command's collation.
    vars: Arc<LetVariables>,
}

impl<'a> QueryRead<'a> {
    /// The collection, its collation and the `query` filter and `hint` of `req`.
    /// `collation`: what the collection's or view's default makes of the requested one
    /// (`None`: the request's own applies).
    fn parse(
        req: &'a CommandRequest,
        query: Option<Document>,
        collation: Option<Arc<Collation>>,
    ) -> Result<QueryRead<'a>> {
        let args = req.args();
        let requested = crate::command::parse_collation(args.value("collation")?.as_ref())?;
        let vars = LetVariables::empty(bson::DateTime::now()).with_collation(requested);
        let vars = Arc::new(vars).for_statement(collation);
        let collection = args.collection()?;
        crate::catalog::validate_collection_name(&req.db, collection)?;
        let query = query.unwrap_or_default();
        let filter = Filter::parse_with_variables(&query, &vars)?;
        filter.refuse_near()?;
        let hint = super::find::parse_hint(&args)?;
        Ok(QueryRead {
            collection,
            query,
            filter,
            hint,
            vars,
        })
    }

    /// The collection, the query as sent and parsed, and the hint.
    fn into_parts(self) -> (&'a str, Document, Filter, Option<Bson>, Arc<LetVariables>) {
        (
            self.collection,
            self.query,
            self.filter,
            self.hint,
            self.vars,
        )
    }
}

/// `count`'s arguments and its read.
pub(super) fn parse_count(
    req: &CommandRequest,
    collation: Option<Arc<Collation>>,
) -> Result<(crate::command::requests::CountRequest, QueryRead<'_>)> {
    let request = crate::command::requests::CountRequest::parse(req)?;
    let read = QueryRead::parse(req, request.query.clone(), collation)?;
    Ok((request, read))
}

/// `distinct`'s key (as path components) and its read.
pub(super) fn parse_distinct(
    req: &CommandRequest,
    collation: Option<Arc<Collation>>,
) -> Result<(&str, QueryRead<'_>)> {
    let args = req.args();
    let key = args
        .str("key")?
        .ok_or_else(|| crate::command::missing("distinct", "key"))?;
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(MongoError::bad_value(format!(
            "FieldPath field names may not be empty strings. key: {key}"
        )));
    }
    Ok((
        key,
        QueryRead::parse(req, args.document("query")?, collation)?,
    ))
}

pub(super) async fn count<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let collation = target_collation(state, &req).await?;
    let (request, read) = parse_count(&req, collation)?;
    let (collection, query, filter, hint, vars) = read.into_parts();
    let skip = request.skip.unwrap_or(0) as u64;
    let limit = request.count_limit();
    if let Some(view) = views::resolve(state.storage(), &req.db, collection).await? {
        views::require_unsharded_source(state, &req, &view).await?;
        let mut stages = view.pipeline;
        stages.push(doc! {"$match": query});
        if skip > 0 {
            stages.push(doc! {"$skip": skip as i64});
        }
        if let Some(limit) = limit {
            stages.push(doc! {"$limit": limit as i64});
        }
        let n = super::aggregate::pipeline_output(
            state,
            &req.db,
            Some(&view.source),
            &stages,
            &vars,
            None,
        )
        .await?
        .len() as u64;
        return Ok(RawDocumentBuf::from_document(&doc! {"n": count_bson(n)})?);
    }
    let found = state.storage().collection(&req.db, collection).await;
    let mut filter = filter;
    crate::datanode::exec::bind_text(&mut filter, found.as_ref().map(|(_, c)| &**c))?;
    let started = Instant::now();
    let (n, plan) = match found {
        None => (0, CountPlan::NoCollection),
        // A hinted count reads the hinted index (a sparse one counts its entries, as MongoDB).
        Some((db, coll)) if filter.is_empty() && hint.is_none() => {
            (db.stats(&coll).count.max(0) as u64, CountPlan::Fast)
        }
        Some((db, coll)) => {
            let mut read = db.read().await?;
            let mut position =
                hinted(&coll, &query, hint.as_ref(), &vars)?.owned_by(state.ownership(&req));
            db.index_usage()
                .record(&coll, position.path().indexes_used(&coll));
            let mut n = 0u64;
            while !position.done() {
                n += position
                    .next_matches(&mut read, &coll, &filter)
                    .await?
                    .len() as u64;
            }
            (n, CountPlan::Query(Box::new(position)))
        }
    };
    // Explain's stages: COUNT over the query's, or the record store's count.
    crate::server::operations::set_exec_stats(|| {
        let mut tree = StageTree::empty();
        let stage = match plan {
            CountPlan::NoCollection => return Some(no_collection()),
            CountPlan::Fast => "RECORD_STORE_FAST_COUNT",
            CountPlan::Query(position) => {
                let mut plan = PlanStats::for_filter(&position, &query);
                plan.add_time(started.elapsed());
                tree = plan.tree(position.execution(n));
                "COUNT"
            }
        };
        tree.push(stage, Document::new(), 0, count_stats(n, skip, limit));
        Some(tree.to_document(true))
    });
    let n = n.saturating_sub(skip);
    let n = limit.map_or(n, |l| n.min(l));
    Ok(RawDocumentBuf::from_document(&doc! {"n": count_bson(n)})?)
}

/// How a count found its number, as its plan shows it.
enum CountPlan {
    NoCollection,
    /// The collection's record count.
    Fast,
    /// The matches of a query read through this position.
    Query(Box<Position>),
}

/// Where a count or distinct reads: the index its `hint` names (BadValue if there is none),
/// otherwise the index the filter chooses.
fn hinted(
    coll: &CollectionMeta,
    query: &Document,
    hint: Option<&Bson>,
    vars: &LetVariables,
) -> Result<Position> {
    Position::plan(
        coll,
        &QueryShape {
            hint,
            collation: vars.collation(),
            ..QueryShape::filter(query)
        },
    )
}

/// The collation the collection's or view's default makes of the request's.
async fn target_collation<S: DataNode>(
    state: &S,
    req: &CommandRequest,
) -> Result<Option<Arc<Collation>>> {
    let name = req.args().collection()?;
    crate::datanode::collation::for_request(state.storage(), req, name).await
}

fn count_bson(n: u64) -> Bson {
    i32::try_from(n)
        .map(Bson::Int32)
        .unwrap_or(Bson::Int64(n as i64))
}

pub(super) async fn distinct<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let collation = target_collation(state, &req).await?;
    let (key, read) = parse_distinct(&req, collation)?;
    let (collection, query, filter, hint, vars) = read.into_parts();
    let path: Vec<&str> = key.split('.').collect();
    // Keyed by the order-preserving encoding: equal values (1 and 1.0) collapse, and the
    // values come out in MongoDB's order, as mongod returns them. Under a collation, by the
    // collation key: strings it holds equal collapse into the first one seen.
    let collation = vars.collation_arc();
    let mut values: BTreeMap<Vec<u8>, Bson> = BTreeMap::new();
    let add = |doc: Document, values: &mut BTreeMap<Vec<u8>, Bson>| {
        let mut found = Vec::new();
        values_at_path(&Bson::Document(doc), &path, &mut found);
        for value in found {
            let key = match &collation {
                Some(collation) => keystring::encode_one(&collation.comparison_key(&value)),
                None => keystring::encode_one(&value),
            };
            values.entry(key).or_insert(value);
        }
    };
    if let Some(view) = views::resolve(state.storage(), &req.db, collection).await? {
        views::require_unsharded_source(state, &req, &view).await?;
        let mut stages = view.pipeline;
        stages.push(doc! {"$match": query});
        let docs = super::aggregate::pipeline_output(
            state,
            &req.db,
            Some(&view.source),
            &stages,
            &vars,
            None,
        )
        .await?;
        for doc in docs {
            add(doc, &mut values);
        }
        let values: Vec<Bson> = values.into_values().collect();
        return Ok(RawDocumentBuf::from_document(&doc! {"values": values})?);
    }
    let found = state.storage().collection(&req.db, collection).await;
    let mut filter = filter;
    crate::datanode::exec::bind_text(&mut filter, found.as_ref().map(|(_, c)| &**c))?;
    if let Some((db, coll)) = found {
        let mut read = db.read().await?;
        let mut position =
            hinted(&coll, &query, hint.as_ref(), &vars)?.owned_by(state.ownership(&req));
        db.index_usage()
            .record(&coll, position.path().indexes_used(&coll));
        let started = Instant::now();
        let mut matched = 0;
        while !position.done() {
            for candidate in position.next_matches(&mut read, &coll, &filter).await? {
                matched += 1;
                add(candidate.doc, &mut values);
            }
        }
        crate::server::operations::set_exec_stats(|| {
            let mut plan = PlanStats::for_filter(&position, &query);
            plan.add_time(started.elapsed());
            Some(plan.to_document(position.execution(matched)))
        });
    } else {
        crate::server::operations::set_exec_stats(|| Some(no_collection()));
    }
    let values: Vec<Bson> = values.into_values().collect();
    let reply: Document = doc! {"values": values};
    Ok(RawDocumentBuf::from_document(&reply)?)
}
