//! `find`, `getMore` and `killCursors`: queries answered in batches through cursors. A
//! `getMore` on an aggregation's cursor (or a find on a view) runs its pipeline further.

use super::super::DataNode;
use super::super::cursors::{Cursor, CursorBody};
use super::super::exec::{
    BlockingSort, CoverRequest, Covered, Execution, FindOutput, NearMetadata, PlanStats, Position,
    QueryShape, RECORD_ID_FIELD, ScanState, SortLimits, SortedDocs, SortedState, Tail, fill_batch,
    find_sort_error, near_matches, no_collection, take_sort_key_request,
};
use super::super::storage::StorageTransaction;
use super::super::views;
pub use crate::command::cursor_reply;
use crate::command::requests::FindRequest;
use crate::command::{CommandRequest, GetMore, KillCursors};
use crate::document::collation::Collation;
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::LetVariables;
use crate::expression::meta::MetaKind;
use crate::query::filter::Filter;
use crate::query::projection::Projection;
use crate::query::sort::{GEO_NEAR_DISTANCE_FIELD, SortSpec, TEXT_SCORE_FIELD};
use crate::server::RequestContext;
use crate::server::sessions::{check_cursor_session, request_session};
use bson::{Bson, Document, RawDocumentBuf};
use std::collections::VecDeque;
use std::sync::Arc;

/// How long an awaitData `getMore` waits without a `maxTimeMS`.
const AWAIT_DATA_DEFAULT: std::time::Duration = std::time::Duration::from_secs(1);
/// How often a waiting `getMore` looks for new documents.
const AWAIT_DATA_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// Documents in a first batch when the client sets no `batchSize`.
pub const DEFAULT_FIRST_BATCH: usize = 101;

pub(super) struct FindCommand {
    pub(super) collection: String,
    pub(super) filter: Document,
    pub(super) projection: Option<Document>,
    pub(super) sort: Option<Document>,
    pub(super) skip: u64,
    pub(super) limit: Option<u64>,
    pub(super) batch_size: Option<u64>,
    pub(super) single_batch: bool,
    pub(super) no_cursor_timeout: bool,
    pub(super) hint: Option<Bson>,
    pub(super) allow_disk_use: Option<bool>,
    pub(super) min: Option<Document>,
    pub(super) max: Option<Document>,
    pub(super) return_key: bool,
    pub(super) show_record_id: bool,
    /// `tailable` (and `awaitData`): follow a capped collection.
    pub(super) tail: Option<Tail>,
}

impl FindCommand {
    pub(super) fn parse(req: &CommandRequest) -> Result<Self> {
        let fields = req.fields()?;
        let args = fields.args();
        let request = FindRequest::parse(req)?;
        let limit = request.limit.filter(|l| *l > 0).map(|l| l as u64);
        let tailable = request.tailable.unwrap_or(false);
        let await_data = request.await_data.unwrap_or(false);
        if await_data && !tailable {
            return Err(MongoError::failed_to_parse(
                "Cannot set 'awaitData' without also setting 'tailable'",
            ));
        }
        let sort = request.sort.filter(|s| !s.is_empty());
        if tailable
            && sort
                .as_ref()
                .is_some_and(|s| s != &bson::doc! {"$natural": 1})
        {
            return Err(MongoError::bad_value(
                "cannot use tailable option with a sort other than {$natural: 1}",
            ));
        }
        Ok(FindCommand {
            collection: args.collection()?.to_string(),
            filter: request.filter.unwrap_or_default(),
            projection: request.projection.filter(|p| !p.is_empty()),
            sort,
            skip: request.skip.unwrap_or(0) as u64,
            limit,
            batch_size: request.batch_size.map(|b| b as u64),
            single_batch: request.single_batch.unwrap_or(false),
            no_cursor_timeout: request.no_cursor_timeout.unwrap_or(false),
            hint: parse_hint(&args)?,
            allow_disk_use: request.allow_disk_use,
            min: request.min.filter(|d| !d.is_empty()),
            max: request.max.filter(|d| !d.is_empty()),
            return_key: request.return_key.unwrap_or(false),
            show_record_id: request.show_record_id.unwrap_or(false),
            tail: tailable.then_some(Tail { await_data }),
        })
    }
}

/// What a find parses from its arguments before it reads, whether or not the collection
/// exists: the filter, projection and sort, with the command's `let`.
pub(super) struct FindQuery {
    vars: Arc<LetVariables>,
    filter: Filter,
    /// The projection as sent, less a `$sortKey` request.
    projection_spec: Option<Document>,
    projection: Option<Projection>,
    /// The sort as sent: `{$natural: ±1}` included (a scan direction, not a sort).
    sort_spec: Option<SortSpec>,
    /// The sort whose keys a `{$meta: "sortKey"}` projection asks for.
    sort_key: Option<SortSpec>,
    sort: Option<SortSpec>,
    /// A router merging `$near` results asked for each document's distance as `$sortKey`.
    near_sort_key: bool,
    /// The sort whose keys the projection's `{$meta: "sortKey"}` fields read.
    meta_sort: Option<SortSpec>,
}

impl FindQuery {
    /// `collation`: what the collection's or view's default makes of the requested one
    /// (`None`: the request's own applies).
    pub(super) fn parse(
        req: &CommandRequest,
        cmd: &FindCommand,
        collation: Option<Arc<Collation>>,
    ) -> Result<FindQuery> {
        crate::catalog::validate_collection_name(&req.db, &cmd.collection)?;
        let vars = req.args().let_variables()?.for_statement(collation);
        let filter = Filter::parse_with_variables(&cmd.filter, &vars)?;
        refuse_nested_meta(&cmd.filter, cmd.projection.as_ref())?;
        let mut projection_spec = cmd.projection.clone();
        let wants_sort_key = take_sort_key_request(&mut projection_spec);
        let projection = projection_spec
            .as_ref()
            .map(|p| Projection::parse_for_find(p, &filter, &vars))
            .transpose()?;
        let sort_spec = cmd
            .sort
            .as_ref()
            .map(|s| SortSpec::parse_for(s, &vars))
            .transpose()?;
        let sort_key = match (wants_sort_key, &sort_spec) {
            (false, _) => None,
            (true, Some(sort)) if !sort.is_empty() => Some(sort.clone()),
            // A `$near`'s sort key is the distance.
            (true, _) if filter.near().is_some() => None,
            (true, _) => {
                return Err(MongoError::bad_value(
                    "a $sortKey meta-projection requires a sort",
                ));
            }
        };
        if sort_spec
            .as_ref()
            .is_some_and(|s| s.sorts_by_text_score() && !filter.has_text())
        {
            return Err(MongoError::location(
                40218,
                "query requires text score metadata, but it is not available",
            ));
        }
        sorts_by_distance(sort_spec.as_ref(), &filter)?;
        let meta_sort = meta_sort(projection.as_ref(), sort_spec.as_ref(), &filter)?;
        // `{$natural: ±1}` is a scan direction, not a sort.
        let sort = sort_spec.clone().filter(|s| !s.is_empty());
        Ok(FindQuery {
            meta_sort,
            vars,
            filter,
            projection_spec,
            projection,
            sort_spec,
            near_sort_key: wants_sort_key && sort_key.is_none(),
            sort_key,
            sort,
        })
    }
}

/// The sort a projection's `{$meta: "sortKey"}` fields read, with MongoDB's error without one;
/// refuses what the find cannot answer: the index key of a `$text` or `$near` match, the sort
/// key of a `{$natural}` scan (NotImplemented).
fn meta_sort(
    projection: Option<&Projection>,
    sort: Option<&SortSpec>,
    filter: &Filter,
) -> Result<Option<SortSpec>> {
    let Some(projection) = projection else {
        return Ok(None);
    };
    if projection.reads_meta(MetaKind::IndexKey) && (filter.has_text() || filter.near().is_some()) {
        return Err(MongoError::new(
            ErrorCode::NotImplemented,
            "{$meta: \"indexKey\"} with $text or $near is not supported yet",
        ));
    }
    if !projection.reads_meta(MetaKind::SortKey) {
        return Ok(None);
    }
    match sort {
        None => Err(MongoError::bad_value(
            "cannot use sortKey $meta projection without a sort",
        )),
        Some(sort) if sort.is_empty() => Err(MongoError::new(
            ErrorCode::NotImplemented,
            "{$meta: \"sortKey\"} with a $natural sort is not supported yet",
        )),
        Some(sort) => Ok(Some(sort.clone())),
    }
}

/// Whether `sort` orders by `{$meta: "geoNearDistance"}`: MongoDB's 40218 when the filter has
/// no `$near` to measure the distance.
fn sorts_by_distance(sort: Option<&SortSpec>, filter: &Filter) -> Result<bool> {
    let by_distance = sort.is_some_and(SortSpec::sorts_by_geo_near_distance);
    if by_distance && filter.near().is_none() {
        return Err(MetaKind::GeoNearDistance.unavailable());
    }
    Ok(by_distance)
}

/// A write's sort by `{$meta: "geoNearDistance"}`: 40218 without a `$near`, as a find's; with
/// one NotImplemented (a write's `$near` selects its documents, it does not measure them).
pub(super) fn refuse_distance_sort(sort: Option<&SortSpec>, filter: &Filter) -> Result<()> {
    if !sorts_by_distance(sort, filter)? {
        return Ok(());
    }
    Err(MongoError::new(
        ErrorCode::NotImplemented,
        "sorting a write's $near matches by {$meta: \"geoNearDistance\"} is not supported yet",
    ))
}

/// `{$meta: "indexKey"}` of a document found by its `_id` (MongoDB's IDHACK or express path,
/// whose index key metadata differs between releases): refused rather than guessed.
fn refuse_id_lookup_key(
    path: &crate::datanode::exec::AccessPath,
    projection: Option<&Projection>,
) -> Result<()> {
    let id_lookup = matches!(path, crate::datanode::exec::AccessPath::IdPoint(_));
    if id_lookup && projection.is_some_and(|p| p.reads_meta(MetaKind::IndexKey)) {
        return Err(MongoError::new(
            ErrorCode::NotImplemented,
            "{$meta: \"indexKey\"} of an _id lookup is not supported yet",
        ));
    }
    Ok(())
}

/// A find's documents carry no metadata: a `{$meta: ...}` inside an expression (the filter's
/// `$expr`, a computed projection field) is refused rather than read as missing; only a
/// projection field that is `{$meta: ...}` itself is answered (`query::projection`).
fn refuse_nested_meta(filter: &Document, projection: Option<&Document>) -> Result<()> {
    let mut kinds = Vec::new();
    crate::expression::meta::kinds_read(&Bson::Document(filter.clone()), &mut kinds);
    let mut fields = 0;
    for value in projection.into_iter().flat_map(|p| p.values()) {
        let before = kinds.len();
        crate::expression::meta::kinds_read(value, &mut kinds);
        let whole = matches!(value, Bson::Document(d) if d.len() == 1 && d.contains_key("$meta"));
        fields += usize::from(whole && kinds.len() > before);
    }
    if kinds.len() > fields {
        return Err(MongoError::new(
            ErrorCode::NotImplemented,
            "$meta inside an expression of a find is not supported yet",
        ));
    }
    Ok(())
}

pub(super) async fn find<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let cmd = FindCommand::parse(&req)?;
    let ns = format!("{}.{}", req.db, cmd.collection);
    let collation =
        crate::datanode::collation::for_request(state.storage(), &req, &cmd.collection).await?;
    let query = FindQuery::parse(&req, &cmd, collation)?;
    let first_batch = cmd
        .batch_size
        .map(|b| b as usize)
        .unwrap_or(DEFAULT_FIRST_BATCH);
    if let Some(view) = views::resolve(state.storage(), &req.db, &cmd.collection).await? {
        views::require_unsharded_source(state, &req, &view).await?;
        if cmd.tail.is_some() {
            return Err(views::not_a_collection(&req.db, &cmd.collection));
        }
        // Run as its batches are fetched, as an aggregation's cursor is.
        let mut run = super::aggregate::open_pipeline(
            state,
            &req.db,
            Some(&view.source),
            &view_stages(view.pipeline, &cmd),
            &query.vars,
            super::aggregate::Access::default(),
            super::aggregate::memory_limits(state, cmd.allow_disk_use),
        )
        .await?;
        run.time_left = crate::command::max_time(&req.args())?;
        let body = CursorBody::Pipeline(Box::new(run));
        return finish(state, &ns, body, first_batch, &cmd).await;
    }
    let found = state.storage().collection(&req.db, &cmd.collection).await;
    let mut query = query;
    crate::datanode::exec::bind_text(&mut query.filter, found.as_ref().map(|(_, c)| &**c))?;
    let Some((db, coll)) = found else {
        crate::server::operations::set_exec_stats(|| Some(no_collection()));
        return Ok(cursor_reply(&ns, vec![], 0, true));
    };
    if cmd.tail.is_some() && coll.capped_limits().is_none() {
        return Err(MongoError::bad_value(format!(
            "error processing query: ns={ns} tailable cursor requested on non capped collection"
        )));
    }
    if query.filter.near().is_some() {
        let body = near_body(state, &req, &cmd, query, &db, &coll, &ns).await?;
        return finish(state, &ns, body, first_batch, &cmd).await;
    }
    // A tailable cursor follows insertion order.
    let natural = Bson::Document(bson::doc! {"$natural": 1});
    let hint = if cmd.tail.is_some() {
        Some(&natural)
    } else {
        cmd.hint.as_ref()
    };
    let shape = QueryShape {
        filter: &cmd.filter,
        sort: query.sort_spec.as_ref(),
        hint,
        min: cmd.min.as_ref(),
        max: cmd.max.as_ref(),
        collation: query.vars.collation(),
    };
    let ownership = state.ownership(&req);
    let position = Position::plan(&coll, &shape)?.owned_by(ownership.clone());
    refuse_id_lookup_key(position.path(), query.projection.as_ref())?;
    let covered = Covered::analyze(
        position.path(),
        &CoverRequest {
            filter: &cmd.filter,
            projection: query.projection_spec.as_ref(),
            sort: query.sort.as_ref(),
            return_key: cmd.return_key,
            show_record_id: cmd.show_record_id,
            ownership: ownership.as_deref(),
        },
    )
    .ok();
    let position = position.covered_by(covered, &db, &coll);
    db.index_usage()
        .record(&coll, position.path().indexes_used(&coll));
    let mut output = FindOutput::new(
        query.projection,
        &query.filter,
        cmd.show_record_id,
        cmd.return_key,
        position.path(),
    );
    if let Some(sort) = query.sort_key {
        output = output.with_sort_key(sort);
    }
    if let Some(sort) = query.meta_sort {
        output = output.with_meta_sort(sort);
    }
    let blocking = query.sort.is_some() && !position.path().provides_sort();
    // What the profile entry's `execStats` needs, kept only when the database profiles.
    let plan = crate::server::operations::wants_exec_stats().then(|| {
        PlanStats::for_filter(&position, &cmd.filter).with_find_stages(
            cmd.sort.clone(),
            blocking,
            cmd.skip,
            cmd.limit,
            cmd.projection.clone(),
        )
    });
    let body = match query.sort {
        // A sort the access path does not deliver is done in memory over every match.
        Some(sort) if blocking => {
            let limits = sort_limits(state, cmd.allow_disk_use);
            let request = SortRequest {
                sort,
                skip: cmd.skip,
                limit: cmd.limit,
                limits,
                keep_record_id: cmd.show_record_id || output.reads_record_id(),
            };
            let started = std::time::Instant::now();
            let (docs, run) = sorted_matches(&db, &coll, &query.filter, position, request).await?;
            let mut sorted = SortedState::new(docs, cmd.skip, output);
            sorted.plan = plan.map(|mut plan| {
                plan.add_time(started.elapsed());
                (plan, run)
            });
            CursorBody::Sorted(Box::new(sorted))
        }
        _ => CursorBody::Scan(Box::new(ScanState {
            db: db.clone(),
            coll: coll.clone(),
            position,
            filter: query.filter,
            output,
            skip: cmd.skip,
            remaining: cmd.limit,
            pending: VecDeque::new(),
            tail: cmd.tail,
            plan,
            consumed: 0,
        })),
    };
    finish(state, &ns, body, first_batch, &cmd).await
}

/// A `$near`/`$nearSphere` find: the matches in distance order (the first `skip + limit`
/// only, when limited), each with its distance as `$sortKey` when a router asked. A `sort`
/// re-orders them, overriding the distance order, as MongoDB's does (all matches are then
/// sorted; ties keep their distance order).
async fn near_body<S: DataNode>(
    state: &S,
    req: &CommandRequest,
    cmd: &FindCommand,
    query: FindQuery,
    db: &Arc<crate::datanode::storage::DatabaseStore>,
    coll: &Arc<crate::datanode::storage::CollectionMeta>,
    ns: &str,
) -> Result<CursorBody> {
    if cmd.tail.is_some() || cmd.min.is_some() || cmd.max.is_some() {
        return Err(MongoError::new(
            ErrorCode::NotImplemented,
            "$near with min, max or a tailable cursor is not supported",
        ));
    }
    let keep = cmd.limit.map(|l| l.saturating_add(cmd.skip) as usize);
    let want = keep.filter(|_| query.sort.is_none());
    let ownership = state.ownership(req);
    let mut matches = near_matches(db, coll, &query.filter, ownership, want, ns).await?;
    let by_distance = query
        .sort
        .as_ref()
        .is_some_and(SortSpec::sorts_by_geo_near_distance);
    if let Some(sort) = &query.sort {
        // A sort by `{$meta: "geoNearDistance"}` reads each document's distance where the
        // document carries it (the output leaves it out).
        if by_distance {
            for m in &mut matches {
                m.doc.insert(GEO_NEAR_DISTANCE_FIELD, m.distance);
            }
        }
        matches.sort_by(|a, b| sort.compare(&a.doc, &b.doc));
        if let Some(keep) = keep {
            matches.truncate(keep);
        }
    }
    let path = crate::datanode::exec::AccessPath::CollScan { reverse: false };
    let mut output = FindOutput::new(
        query.projection,
        &query.filter,
        cmd.show_record_id,
        cmd.return_key,
        &path,
    )
    .carrying_distance(by_distance);
    if let Some(sort) = query.sort_key {
        output = output.with_sort_key(sort);
    }
    if let Some(sort) = query.meta_sort {
        output = output.with_meta_sort(sort);
    }
    let mut docs = VecDeque::with_capacity(matches.len());
    for m in matches.into_iter().skip(cmd.skip as usize) {
        let mut raw = if output.is_identity() {
            m.raw
        } else {
            let point = query.filter.near_closest(&m.doc).map(|(_, p)| p.clone());
            let near = NearMetadata {
                distance: m.distance,
                point,
            };
            output.render_with(m.rid, &m.doc, Some(near))?
        };
        if query.near_sort_key {
            let mut key = RawDocumentBuf::new();
            key.append("", m.distance);
            raw.append(super::super::exec::SORT_KEY_FIELD, key);
        }
        docs.push_back(raw);
    }
    Ok(CursorBody::Buffered(docs))
}

/// The first batch, and a cursor for the rest.
async fn finish<S: DataNode>(
    state: &S,
    ns: &str,
    mut body: CursorBody,
    first_batch: usize,
    cmd: &FindCommand,
) -> Result<RawDocumentBuf> {
    let (batch, exhausted) = next_batch(state, &mut body, first_batch).await?;
    note_exec_stats(&body);
    // A tailable cursor that found nothing at first is closed, as in MongoDB.
    let dead_tail = cmd.tail.is_some() && batch.is_empty();
    let id = if exhausted || cmd.single_batch || dead_tail {
        0
    } else {
        state
            .cursors()
            .register(Cursor::new(ns.to_string(), body, cmd.no_cursor_timeout))
    };
    Ok(cursor_reply(ns, batch, id, true))
}

/// Gives the operation the `execStats` of the find plan under `body`; an aggregation's cursor
/// has none, as in MongoDB.
fn note_exec_stats(body: &CursorBody) {
    crate::server::operations::set_exec_stats(|| match body {
        CursorBody::Scan(scan) => scan.exec_stats(),
        CursorBody::Sorted(sorted) => sorted.exec_stats(),
        CursorBody::Buffered(_) | CursorBody::Pipeline(_) => None,
    });
}

/// A find on a view as the aggregation it is: the view's pipeline, then the query.
fn view_stages(mut stages: Vec<Document>, cmd: &FindCommand) -> Vec<Document> {
    if !cmd.filter.is_empty() {
        stages.push(bson::doc! {"$match": cmd.filter.clone()});
    }
    if let Some(sort) = cmd.sort.as_ref().filter(|s| !s.contains_key("$natural")) {
        stages.push(bson::doc! {"$sort": sort.clone()});
    }
    if cmd.skip > 0 {
        stages.push(bson::doc! {"$skip": cmd.skip as i64});
    }
    if let Some(limit) = cmd.limit {
        stages.push(bson::doc! {"$limit": limit as i64});
    }
    if let Some(projection) = &cmd.projection {
        stages.push(bson::doc! {"$project": projection.clone()});
    }
    stages
}

/// The `hint` argument: an index name, a key pattern or `{$natural: 1}`.
pub(super) fn parse_hint(args: &crate::command::Args<'_>) -> Result<Option<Bson>> {
    match args.get("hint")? {
        None => Ok(None),
        Some(bson::RawBsonRef::String(name)) => Ok(Some(Bson::String(name.to_string()))),
        Some(bson::RawBsonRef::Document(d)) if d.as_bytes().len() > 5 => {
            Ok(Some(Bson::Document(d.to_owned().to_document()?)))
        }
        Some(bson::RawBsonRef::Document(_)) => Ok(None),
        Some(_) => Err(MongoError::failed_to_parse(
            "hint must be a string or an object",
        )),
    }
}

/// Where the blocking sort may use memory and disk, from the server parameters and the
/// command's `allowDiskUse`.
pub(super) fn sort_limits<S: DataNode>(state: &S, allow_disk_use: Option<bool>) -> SortLimits {
    let params = &state.node().params;
    SortLimits {
        max_bytes: params
            .get_i64("internalQueryMaxBlockingSortMemoryUsageBytes")
            .unwrap_or(100 * 1024 * 1024)
            .max(0) as usize,
        allow_disk_use: allow_disk_use.unwrap_or_else(|| params.get_bool("allowDiskUseByDefault")),
        spill_dir: state.storage().spill_dir(),
    }
}

/// A blocking sort to run.
struct SortRequest {
    sort: SortSpec,
    skip: u64,
    limit: Option<u64>,
    limits: SortLimits,
    /// Carry each document's record id through the sort (for `showRecordId`).
    keep_record_id: bool,
}

/// Every match, sorted (the best `skip + limit` when there is a limit), and what reading
/// them took; the skip itself is applied as the cursor returns documents.
async fn sorted_matches(
    db: &crate::datanode::storage::DatabaseStore,
    coll: &crate::datanode::storage::CollectionMeta,
    filter: &Filter,
    mut position: Position,
    request: SortRequest,
) -> Result<(SortedDocs, Execution)> {
    let keep = request.limit.map(|l| (request.skip + l) as usize);
    let by_text_score = request.sort.sorts_by_text_score();
    let mut sorter = BlockingSort::new(request.sort, keep, request.limits);
    let mut read = db.read().await?;
    let mut matched = 0;
    while !position.done() {
        for candidate in position.next_matches(&mut read, coll, filter).await? {
            matched += 1;
            let size = candidate.raw.as_bytes().len();
            let mut doc = candidate.doc;
            if request.keep_record_id {
                doc.insert(RECORD_ID_FIELD, Bson::Int64(candidate.rid));
            }
            if by_text_score {
                let score = filter.text_score(&doc)?.unwrap_or(0.0);
                doc.insert(TEXT_SCORE_FIELD, score);
            }
            sorter.push(doc, size).map_err(find_sort_error)?;
        }
    }
    Ok((sorter.finish()?, position.execution(matched)))
}

/// The next batch of a cursor and whether the cursor has nothing more.
pub(super) async fn next_batch<S: DataNode>(
    state: &S,
    body: &mut CursorBody,
    max_docs: usize,
) -> Result<(Vec<RawDocumentBuf>, bool)> {
    match body {
        CursorBody::Pipeline(run) => {
            let how = super::aggregate::Drive::Batch(max_docs);
            let batch = super::aggregate::drive(state, run, how).await?;
            Ok((batch, run.exhausted()))
        }
        CursorBody::Buffered(docs) => {
            let mut batch = Vec::new();
            fill_batch(docs, &mut batch, &mut 0, max_docs);
            Ok((batch, docs.is_empty()))
        }
        CursorBody::Scan(scan) => {
            let started = std::time::Instant::now();
            let batch = scan.next_batch(max_docs).await?;
            if let Some(plan) = &mut scan.plan {
                plan.add_time(started.elapsed());
            }
            Ok((batch, scan.exhausted()))
        }
        CursorBody::Sorted(sorted) => {
            let started = std::time::Instant::now();
            let batch = sorted.next_batch(max_docs)?;
            if let Some((plan, _)) = &mut sorted.plan {
                plan.add_time(started.elapsed());
            }
            Ok((batch, sorted.exhausted()))
        }
    }
}

pub(super) async fn get_more<S: DataNode>(
    state: &S,
    ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let cmd = GetMore::parse(&req)?;
    let ns = cmd.namespace(&req.db);
    let Some(mut cursor) = state.cursors().take(cmd.cursor_id) else {
        return Err(MongoError::new(
            ErrorCode::CursorNotFound,
            format!("cursor id {} not found", cmd.cursor_id),
        ));
    };
    if cursor.ns != ns {
        let owner = cursor.ns.clone();
        state.cursors().put_back(cmd.cursor_id, cursor);
        return Err(MongoError::new(
            ErrorCode::Unauthorized,
            format!(
                "Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {owner}"
            ),
        ));
    }
    // A client continues a cursor in the session it opened it in (a router checked its own
    // client's session already).
    if !ctx.is_internal() {
        // The session the getMore runs in (a nested command's: its outer command's).
        let session = request_session();
        let checked =
            check_cursor_session(cmd.cursor_id, cursor.session.as_ref(), session.as_ref());
        if let Err(e) = checked {
            state.cursors().put_back(cmd.cursor_id, cursor);
            return Err(e);
        }
    }
    let await_data =
        matches!(&cursor.body, CursorBody::Scan(scan) if scan.tail.is_some_and(|t| t.await_data));
    if cmd.max_time.is_some() && !await_data {
        state.cursors().put_back(cmd.cursor_id, cursor);
        return Err(MongoError::bad_value(
            "cannot set maxTimeMS on getMore command for a non-awaitData cursor",
        ));
    }
    let max_docs = cmd.batch_size.unwrap_or(usize::MAX);
    // A cursor opened at a snapshot (a snapshot read, a transaction) reads there; a getMore
    // of the transaction runs in its scope already.
    let snapshot = cursor
        .snapshot
        .clone()
        .filter(|_| StorageTransaction::current().is_none());
    let fetched = match snapshot {
        Some(snapshot) => {
            snapshot
                .scope(next_batch(state, &mut cursor.body, max_docs))
                .await
        }
        None => next_batch(state, &mut cursor.body, max_docs).await,
    };
    let (mut batch, mut exhausted) = fetched?;
    if await_data && batch.is_empty() && !exhausted {
        // Wait for new documents, up to maxTimeMS (1 second by default, as MongoDB).
        let deadline = tokio::time::Instant::now() + cmd.max_time.unwrap_or(AWAIT_DATA_DEFAULT);
        while batch.is_empty() && !exhausted && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(AWAIT_DATA_POLL).await;
            (batch, exhausted) = next_batch(state, &mut cursor.body, max_docs).await?;
        }
    }
    note_exec_stats(&cursor.body);
    let reply_id = if exhausted {
        0
    } else {
        state.cursors().put_back(cmd.cursor_id, cursor);
        cmd.cursor_id
    };
    Ok(cursor_reply(&ns, batch, reply_id, false))
}

pub(super) async fn kill_cursors<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let cmd = KillCursors::parse(&req)?;
    let ns = cmd.namespace(&req.db);
    let (killed, not_found): (Vec<i64>, Vec<i64>) = cmd
        .cursor_ids
        .iter()
        .partition(|id| state.cursors().namespace(**id).as_deref() == Some(ns.as_str()));
    for id in &killed {
        state.cursors().kill(*id);
    }
    KillCursors::reply(killed, not_found)
}
