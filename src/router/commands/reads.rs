//! Reads on the router: `find`, `count`, `distinct` and `aggregate`. An unsharded collection's
//! reads go to the database's primary shard. A sharded collection's reads are targeted by the
//! shard key bounds of their filter: one shard gets the command as it is (with that shard's
//! version); several get it at once and the router merges — a cluster cursor for `find`
//! (merge-sorted, `skip` and `limit` applied once here), summed counts, the union of distinct
//! values, and for `aggregate` the output of the shards' part of the pipeline (`pipeline_split`)
//! run through the merger's part here.

use super::super::RouterState;
use super::super::cluster_cursor::{ClusterCursor, SORT_KEY_FIELD};
use super::super::cursors::CursorSource;
use super::super::forward::{Placement, on_config_server, refuse_stale, reply_count, reply_error};
use super::super::targeting::{By, Filter};
use crate::aggregate::Pipeline;
use crate::command::{CommandRequest, cursor_reply};
use crate::datanode::commands::parsers;
use crate::document::collation::Collation;
use crate::document::order::compare_collated;
use crate::error::{ErrorCategory, MongoError, Result};
use crate::query::sort::SortSpec;
use crate::server::RequestContext;
use crate::server::pipeline_cursor::{PipelineSource, PipelineState};
use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf, doc, rawdoc};
use std::cmp::Ordering;
use std::sync::Arc;

/// The first batch of a find without `batchSize`, as MongoDB sizes it.
pub(super) const DEFAULT_FIRST_BATCH: i64 = 101;

/// The namespace a cursor over `req`'s collection reports.
fn namespace(req: &CommandRequest) -> Result<String> {
    Ok(match req.args().target()? {
        RawBsonRef::String(coll) => format!("{}.{coll}", req.db),
        _ => format!("{}.$cmd.{}", req.db, req.name()),
    })
}

/// A copy of `body` without the `drop` fields, followed by `add`.
fn rewrite(body: &RawDocument, drop: &[&str], add: Document) -> Result<RawDocumentBuf> {
    let mut out = RawDocumentBuf::new();
    for element in body {
        let (name, value) = element?;
        if !drop.contains(&name) && !add.contains_key(name) {
            out.append_ref(name, value);
        }
    }
    for (name, value) in add {
        out.append(name, bson::RawBson::try_from(value)?);
    }
    Ok(out)
}

/// How a read's results from several shards become one reply.
#[derive(Clone, Copy)]
pub(super) enum Merge {
    Find,
    Count,
    Distinct,
    Aggregate,
}

/// Runs a read on its namespace: when one shard is targeted the command goes there unchanged
/// (with that shard's version), across several the replies are merged. A read on a view over a
/// sharded collection, which the primary shard hands back resolved, runs over the source
/// (`sharded_views`). `None` when the database does not exist.
pub(super) async fn targeted_read(
    state: &RouterState,
    req: &CommandRequest,
    filter: impl Into<Filter<'_>>,
    merge: Merge,
) -> Result<Option<RawDocumentBuf>> {
    let filter = filter.into();
    let ns = &namespace(req)?;
    let collation = &request_collation(req)?;
    let routed = state.route(&req.db, Some(ns.as_str()), false, |placement| async move {
        let collation = placement.collation_for(collation.clone())?;
        let target = placement.target_under(By::Filter(filter), collation.as_deref())?;
        if let [shard] = target.shards() {
            let (client, reply) = state.call_shard(&placement, shard, req).await?;
            return state.adopt_cursor(&client, refuse_stale(reply)?);
        }
        let shards = target.shards();
        match merge {
            Merge::Find => scatter_find(state, &placement, shards, req, ns).await,
            Merge::Count => scatter_count(state, &placement, shards, req).await,
            Merge::Distinct => scatter_distinct(state, &placement, shards, req).await,
            Merge::Aggregate => scatter_aggregate(state, &placement, shards, req, ns).await,
        }
    });
    let Some(reply) = routed.await? else {
        return Ok(None);
    };
    match super::sharded_views::resolved_view(&reply)? {
        Some(view) => super::sharded_views::read(state, req, view, merge)
            .await
            .map(Some),
        None => Ok(Some(reply)),
    }
}

/// The collation a request asks for (`None`: not given; see [`Placement::collation_for`]).
pub(super) fn request_collation(req: &CommandRequest) -> Result<Option<Arc<Collation>>> {
    crate::command::parse_collation(req.args().value("collation")?.as_ref())
}

/// Reads of `config`/`admin` go to the config server as they are.
async fn config_read(state: &RouterState, req: CommandRequest) -> Result<RawDocumentBuf> {
    let reply = state.config.call(req).await?;
    state.adopt_cursor(&state.config, reply)
}

pub(super) async fn find(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    super::super::forward::check_routable(&req.db)?;
    if on_config_server(&req.db) {
        return config_read(state, req).await;
    }
    let ns = namespace(&req)?;
    let filter = Filter::Raw(req.args().raw_document("filter")?);
    let merged = targeted_read(state, &req, filter, Merge::Find).await?;
    let empty = || cursor_reply(&ns, Vec::new(), 0, true);
    or_missing(merged, &req, parsers::find, empty)
}

/// The reply, or for a database that does not exist `empty()` once the command parsed as a
/// shard parses it: MongoDB refuses an invalid filter, operator or pipeline whether or not
/// there is data.
fn or_missing(
    reply: Option<RawDocumentBuf>,
    req: &CommandRequest,
    parse: fn(&CommandRequest) -> Result<()>,
    empty: impl FnOnce() -> RawDocumentBuf,
) -> Result<RawDocumentBuf> {
    match reply {
        Some(reply) => Ok(reply),
        None => parse(req).map(|()| empty()),
    }
}

/// A find over several shards: each runs it without `skip` (and with `limit + skip`), sorted
/// results carrying their sort keys; a cluster cursor merges them.
async fn scatter_find(
    state: &RouterState,
    placement: &Placement,
    shards: &[String],
    req: &CommandRequest,
    ns: &str,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let collection = args.collection()?;
    // The options the shards read too, parsed by the one declaration.
    let request = crate::command::requests::FindRequest::parse(req)?;
    let collation = placement.collation_for(request_collation(req)?)?;
    let sort = request
        .sort
        .as_ref()
        .map(SortSpec::parse)
        .transpose()?
        .map(|s| s.with_collation(collation))
        .filter(|s| !s.is_empty());
    // A `$near` orders by distance: each shard's documents carry theirs as `$sortKey`.
    let near = request
        .filter
        .as_ref()
        .is_some_and(crate::query::geo::has_near);
    let sort = match sort {
        None if near => Some(SortSpec::parse(&doc! {"distance": 1})?),
        sort => sort,
    };
    let skip = request.skip.unwrap_or(0);
    let limit = request.limit.filter(|l| *l > 0);
    let batch_size = request.batch_size;
    let single_batch = request.single_batch.unwrap_or(false);
    let allow_partial = request.allow_partial_results.unwrap_or(false);
    let first_batch = batch_size.unwrap_or(DEFAULT_FIRST_BATCH);
    let mut add = Document::new();
    if let Some(limit) = limit {
        add.insert("limit", limit.saturating_add(skip));
    }
    let mut shard_batch = first_batch.saturating_add(skip);
    if let Some(limit) = limit {
        shard_batch = shard_batch.min(limit.saturating_add(skip));
    }
    add.insert("batchSize", shard_batch);
    if sort.is_some() {
        let mut projection = request.projection.clone().unwrap_or_default();
        projection.insert(SORT_KEY_FIELD, doc! {"$meta": "sortKey"});
        add.insert("projection", projection);
    }
    let shard_req = CommandRequest::new(
        req.db.clone(),
        rewrite(&req.body, &["skip", "limit", "singleBatch"], add)?,
    )?;
    let mut cursor = ClusterCursor::new(
        &req.db,
        collection,
        sort,
        skip as u64,
        limit.map(|l| l as u64),
        batch_size.filter(|b| *b > 0),
    );
    let partial = open_remotes(
        state,
        placement,
        shards,
        &shard_req,
        &mut cursor,
        allow_partial,
    )
    .await?;
    open_cursor(state, cursor, ns, first_batch, single_batch, partial).await
}

/// Sends the shards their part of a query and adds the cursors they open to `cursor`; on a
/// failure (a stale refusal included) closes those already open. Answers whether some shard
/// was skipped (`allowPartialResults`).
async fn open_remotes(
    state: &RouterState,
    placement: &Placement,
    shards: &[String],
    shard_req: &CommandRequest,
    cursor: &mut ClusterCursor,
    allow_partial: bool,
) -> Result<bool> {
    let mut partial = false;
    let mut failure: Option<MongoError> = None;
    for (shard, result) in state.scatter(placement, shards, shard_req).await {
        let outcome = result.and_then(|(client, reply)| {
            let reply = refuse_stale(reply)?;
            if let Some(e) = reply_error(&reply)? {
                return Err(e);
            }
            cursor.add_shard(&shard, client, &reply)
        });
        match outcome {
            Ok(()) => {}
            Err(e) if allow_partial && e.code().is(ErrorCategory::NetworkError) => {
                tracing::debug!(shard = %shard, error = %e, "shard unavailable; returning partial results");
                partial = true;
            }
            Err(e) => failure = failure.or(Some(e)),
        }
    }
    if let Some(failure) = failure {
        cursor.kill().await;
        return Err(failure);
    }
    Ok(partial)
}

/// The first batch of a merged cursor, and the cursor registered for the rest.
pub(super) async fn open_cursor(
    state: &RouterState,
    mut cursor: ClusterCursor,
    ns: &str,
    first_batch: i64,
    single_batch: bool,
    partial: bool,
) -> Result<RawDocumentBuf> {
    let batch = match cursor.next_batch(Some(first_batch as usize)).await {
        Ok(batch) => batch,
        Err(e) => {
            cursor.kill().await;
            return Err(e);
        }
    };
    let id = if single_batch || cursor.is_exhausted() {
        cursor.kill().await;
        0
    } else {
        let source = CursorSource::Cluster(Arc::new(tokio::sync::Mutex::new(cursor)));
        state.cursors.register(source, ns.to_string())
    };
    let mut reply = cursor_reply(ns, batch, id, true);
    if partial {
        reply.append("partialResultsReturned", true);
    }
    Ok(reply)
}

pub(super) async fn aggregate(
    state: &RouterState,
    ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    if req.args().bool("explain")? == Some(true) {
        return super::explain::explain_aggregate(state, req).await;
    }
    super::super::forward::check_routable(&req.db)?;
    let stages = crate::aggregate::request::pipeline(&req)?;
    crate::aggregate::check_pipeline(&stages)?;
    let list_sessions = stages
        .first()
        .is_some_and(|s| s.contains_key("$listSessions"));
    if list_sessions && namespace(&req)? != "config.system.sessions" {
        return Err(MongoError::invalid_namespace(
            "$listSessions may only be run against config.system.sessions",
        ));
    }
    if stages
        .first()
        .is_some_and(|s| s.contains_key(super::data_distribution::STAGE))
    {
        return super::data_distribution::run(state, &req, &stages).await;
    }
    if let Some(reply) = super::introspection::aggregate(state, &req, &stages).await? {
        return Ok(reply);
    }
    if on_config_server(&req.db) {
        return config_read(state, req).await;
    }
    if let Some(start) = crate::router::pipeline_split::router_part_start(&stages) {
        return super::router_pipeline::run(state, ctx, &req, &stages, start).await;
    }
    let ns = namespace(&req)?;
    // The stages were for the checks above; the shards read them from the request.
    drop(stages);
    // A leading `$match` targets like a find's filter.
    let first_match = req
        .body
        .get_array("pipeline")
        .ok()
        .and_then(|stages| stages.into_iter().next()?.ok()?.as_document())
        .and_then(|stage| stage.get_document("$match").ok());
    let merged = match req.args().target()? {
        RawBsonRef::String(_) => {
            let filter = Filter::Raw(first_match);
            targeted_read(state, &req, filter, Merge::Aggregate).await?
        }
        // `aggregate: 1` names no collection: the database's primary runs it.
        _ => match state.send_to_primary(req.clone(), false).await? {
            Some((shard, reply)) => Some(state.adopt_cursor(&shard, reply)?),
            None => None,
        },
    };
    let empty = || cursor_reply(&ns, Vec::new(), 0, true);
    or_missing(merged, &req, parsers::aggregate, empty)
}

/// An aggregation over several shards, split as `pipeline_split` says: each shard runs the
/// shards' part (with the command's `let`), the router the merger's part over their output.
async fn scatter_aggregate(
    state: &RouterState,
    placement: &Placement,
    shards: &[String],
    req: &CommandRequest,
    ns: &str,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let collection = args.collection()?;
    let stages = crate::aggregate::request::pipeline(req)?;
    let split = crate::router::pipeline_split::split(&stages);
    // The merger's part is parsed first, so a bad one fails before any shard is asked (the
    // shards check theirs: `$collStats` only runs there).
    // The collection's default applies to a pipeline that gives no collation.
    let vars = args.let_variables()?;
    let vars = vars.for_statement(placement.collation_for(request_collation(req)?)?);
    // The merger reads the shards' documents with the metadata their first stage attached.
    let vars = if crate::aggregate::metadata::Produced::by(&stages).any() {
        Arc::new(vars.carrying_metadata())
    } else {
        vars
    };
    let limits = super::router_pipeline::memory_limits(state, req)?;
    let mut merge = Pipeline::parse_with_variables(&split.merger_part, Arc::clone(&vars))?;
    // The merger reads the metadata the shards' first stage gives documents: the whole
    // pipeline must read none it does not.
    crate::aggregate::metadata::check_available(&stages)?;
    // Shards that sorted their part send sorted streams: merging them keeps the order, so the
    // merger's `$sort` is not run again (and needs no memory).
    // (Unless a stage reads the sort key, which the merger's `$sort` attaches.)
    let reads_sort_key = crate::aggregate::metadata::Produced::by(&stages).sort_key;
    let sorted_by = split
        .merger_part
        .first()
        .filter(|first| first.contains_key("$sort") && split.shards_part.contains(first))
        .filter(|_| !reads_sort_key)
        .and_then(|first| first.get_document("$sort").ok())
        .map(|s| SortSpec::parse_for(s, &vars))
        .transpose()?;
    let mut gathered = match sorted_by {
        Some(sort) => {
            merge = Pipeline::parse_with_variables(&split.merger_part[1..], vars)?;
            ClusterCursor::merging_sorted_documents(&req.db, collection, sort)
        }
        None => ClusterCursor::new(&req.db, collection, None, 0, None, None),
    };
    let batch_size = crate::aggregate::request::cursor_batch_size(req)?;
    let shard_stages = split.shards_part;
    let shard_req = CommandRequest::new(
        req.db.clone(),
        rewrite(
            &req.body,
            &[],
            // `needsMerge`: the shards' documents keep their metadata (text scores, `$geoNear`
            // distances), which the merger sorts by and reads.
            doc! {"pipeline": shard_stages, "cursor": {}, "needsMerge": true},
        )?,
    )?;
    let partial = open_remotes(state, placement, shards, &shard_req, &mut gathered, false).await?;
    // The merger reads the shards' streams as its batches are asked for, and stops asking once
    // its output is complete (a satisfied `$limit`).
    let mut merge = merge.with_limits(limits);
    if args.bool("needsMerge")? == Some(true) {
        // The router's own part of a pipeline reads this one's output (`router_pipeline`).
        merge = merge.keeping_metadata();
    }
    let input: Box<dyn PipelineSource> = Box::new(gathered);
    let run = PipelineState::new(merge.start(), Some(input), false, req.db.clone());
    let first = batch_size.unwrap_or(DEFAULT_FIRST_BATCH);
    let mut reply =
        super::router_pipeline::open_pipeline_cursor(state, req, run, ns, first, None).await?;
    if partial {
        reply.append("partialResultsReturned", true);
    }
    Ok(reply)
}

pub(super) async fn count(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    query_read(state, req, Merge::Count, parsers::count, rawdoc! {"n": 0}).await
}

/// A read targeted by its `query` (count, distinct); `missing` answers for a database that
/// does not exist, once the command parsed (`parse`).
async fn query_read(
    state: &RouterState,
    req: CommandRequest,
    merge: Merge,
    parse: fn(&CommandRequest) -> Result<()>,
    missing: RawDocumentBuf,
) -> Result<RawDocumentBuf> {
    super::super::forward::check_routable(&req.db)?;
    if on_config_server(&req.db) {
        return state.config.call(req).await;
    }
    let query = Filter::Raw(req.args().raw_document("query")?);
    let merged = targeted_read(state, &req, query, merge).await?;
    or_missing(merged, &req, parse, || missing)
}

/// A count over several shards: each counts without `skip` (up to `limit + skip`); the sum,
/// less the skip, capped by the limit, is the answer.
async fn scatter_count(
    state: &RouterState,
    placement: &Placement,
    shards: &[String],
    req: &CommandRequest,
) -> Result<RawDocumentBuf> {
    let request = crate::command::requests::CountRequest::parse(req)?;
    let skip = request.skip.unwrap_or(0);
    let limit = request
        .count_limit()
        .map(|l| i64::try_from(l).unwrap_or(i64::MAX));
    let mut add = Document::new();
    if let Some(limit) = limit {
        add.insert("limit", limit.saturating_add(skip));
    }
    let shard_req =
        CommandRequest::new(req.db.clone(), rewrite(&req.body, &["skip", "limit"], add)?)?;
    let replies = state.gather(placement, shards, &shard_req).await?;
    let mut total: i64 = 0;
    for shard in replies {
        total += reply_count(shard.reply.get("n")?);
    }
    let mut n = (total - skip).max(0);
    if let Some(limit) = limit {
        n = n.min(limit);
    }
    Ok(match i32::try_from(n) {
        Ok(n) => rawdoc! {"n": n},
        Err(_) => rawdoc! {"n": n},
    })
}

pub(super) async fn distinct(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let empty = rawdoc! {"values": []};
    query_read(state, req, Merge::Distinct, parsers::distinct, empty).await
}

/// Distinct values over several shards: the union, in MongoDB's order, without duplicates.
async fn scatter_distinct(
    state: &RouterState,
    placement: &Placement,
    shards: &[String],
    req: &CommandRequest,
) -> Result<RawDocumentBuf> {
    let collation = placement.collation_for(request_collation(req)?)?;
    let collation = collation.as_deref();
    let replies = state.gather(placement, shards, req).await?;
    let mut values: Vec<Bson> = Vec::new();
    for shard in replies {
        if let Some(RawBsonRef::Array(shard_values)) = shard.reply.get("values")? {
            for value in shard_values {
                values.push(Bson::try_from(value?.to_raw_bson())?);
            }
        }
    }
    // Under a collation, strings it holds equal are one value.
    values.sort_by(|a, b| compare_collated(a, b, collation));
    values.dedup_by(|a, b| compare_collated(a, b, collation) == Ordering::Equal);
    Ok(RawDocumentBuf::from_document(&doc! {"values": values})?)
}
