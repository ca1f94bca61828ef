//! `explain` (and `aggregate` with `explain: true`): the plan a find, count, distinct,
//! aggregate, update, delete or findAndModify would use and, at `executionStats` verbosity,
//! what running its read side examines and returns. Nothing is written and no cursor is kept.

use super::super::DataNode;
use super::super::exec::{
    AccessPath, Candidate, CoverRequest, Covered, Execution, ExplainedQuery, Position, QueryShape,
    StageTree, WriteStage, count_stats, number, parsed_query, take_sort_key_request, update_stats,
};
use super::super::storage::{CollectionMeta, DatabaseStore};
use super::aggregate::AggregateCommand;
use super::delete::DeleteStatement;
use super::find::{FindCommand, parse_hint};
use super::find_and_modify::FindAndModifyCommand;
use super::update::UpdateStatement;
use crate::aggregate::Pipeline;
use crate::catalog::OwnershipFilter;
use crate::command::{CommandRequest, ExplainRequest, Verbosity};
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::LetVariables;
use crate::query::filter::Filter;
use crate::query::sort::SortSpec;
use crate::server::RequestContext;
use crate::update::{UpdateContext, UpdateSpec};
use bson::{Bson, Document, RawDocumentBuf, doc};
use std::sync::Arc;
use std::time::Instant;

pub(super) async fn run<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let mut explain_req = ExplainRequest::parse(&req)?;
    // The explained command runs under the version the router sent with it.
    for field in ["shardVersion", "databaseVersion"] {
        if let Some(version) = req.body.get(field)? {
            explain_req
                .command
                .body
                .append(field, version.to_raw_bson());
        }
    }
    explain(state, explain_req.command, explain_req.verbosity).await
}

/// Explains `cmd` (already unwrapped from `explain`).
pub(super) async fn explain<S: DataNode>(
    state: &S,
    cmd: CommandRequest,
    verbosity: Verbosity,
) -> Result<RawDocumentBuf> {
    let mut reply = match cmd.name() {
        "find" => find(state, &cmd, verbosity).await?,
        "count" => count(state, &cmd, verbosity).await?,
        "distinct" => distinct(state, &cmd, verbosity).await?,
        "aggregate" => aggregate(state, &cmd, verbosity).await?,
        "update" => update(state, &cmd, verbosity).await?,
        "delete" => delete(state, &cmd, verbosity).await?,
        "findAndModify" | "findandmodify" => find_and_modify(state, &cmd, verbosity).await?,
        name if state.commands().get(name).is_some() => {
            return Err(MongoError::new(
                ErrorCode::IllegalOperation,
                format!("Cannot explain cmd: {name}"),
            ));
        }
        name => {
            return Err(MongoError::new(
                ErrorCode::CommandNotFound,
                format!("Explain failed due to unknown command: {name}"),
            ));
        }
    };
    let mut command = cmd.body.to_document()?;
    command.insert("$db", cmd.db.clone());
    reply.insert("command", command);
    reply.insert("serverInfo", state.node().server_info());
    Ok(RawDocumentBuf::from_document(&reply)?)
}

/// A query's read side, as the commands describe it.
struct Query<'a> {
    ns: String,
    filter: &'a Document,
    /// The command's `let` variables, which the filter's `$expr` reads.
    vars: Arc<LetVariables>,
    sort: Option<Document>,
    hint: Option<Bson>,
    skip: u64,
    /// Shown in the plan (LIMIT, or SORT's `limitAmount`).
    limit: Option<u64>,
    /// Matches to stop after when running (`skip + limit`, or 1 for single-document writes).
    stop_after: Option<u64>,
    projection: Option<&'a Document>,
    min: Option<Document>,
    max: Option<Document>,
    /// The shard's ownership filter when a router versioned the request (SHARDING_FILTER).
    ownership: Option<Arc<OwnershipFilter>>,
    /// find's `returnKey` and `showRecordId`, which a covered projection does not answer.
    return_key: bool,
    show_record_id: bool,
}

impl<'a> Query<'a> {
    /// A query of `filter` on `ns` alone: no sort, hint, skip, limit, projection or bounds.
    fn new(ns: String, filter: &'a Document, vars: Arc<LetVariables>) -> Self {
        Query {
            ns,
            filter,
            vars,
            sort: None,
            hint: None,
            skip: 0,
            limit: None,
            stop_after: None,
            projection: None,
            min: None,
            max: None,
            ownership: None,
            return_key: false,
            show_record_id: false,
        }
    }
}

impl Query<'_> {
    /// The query as the stage tree shows it, run along `path`.
    fn explained<'q>(
        &'q self,
        path: &'q AccessPath,
        blocking_sort: bool,
        covered: bool,
    ) -> ExplainedQuery<'q> {
        ExplainedQuery {
            path,
            filter: self.filter,
            sort: self.sort.as_ref(),
            blocking_sort,
            skip: self.skip,
            limit: self.limit,
            projection: self.projection,
            sharded: self.ownership.is_some(),
            covered,
        }
    }
}

/// What explaining a query found: the stage tree and what running it produced.
struct Explained {
    tree: StageTree,
    run: Execution,
    ns: String,
    filter: Document,
}

impl Explained {
    /// `queryPlanner` (and `executionStats` when the verbosity asks) for this plan.
    fn sections(&self, verbosity: Verbosity, out: &mut Document) {
        out.insert("explainVersion", "1");
        out.insert(
            "queryPlanner",
            doc! {
                "namespace": &self.ns,
                "parsedQuery": parsed_query(&self.filter),
                "indexFilterSet": false,
                "maxIndexedOrSolutionsReached": false,
                "maxIndexedAndSolutionsReached": false,
                "maxScansToExplodeReached": false,
                "prunedSimilarIndexes": false,
                "winningPlan": self.tree.to_document(false),
                "rejectedPlans": [],
            },
        );
        if verbosity.executes() {
            let mut stats = doc! {
                "executionSuccess": true,
                "nReturned": number(self.tree.returned()),
                "executionTimeMillis": number(self.run.millis),
                "totalKeysExamined": number(self.run.examined.keys),
                "totalDocsExamined": number(self.run.examined.docs),
                "executionStages": self.tree.to_document(true),
            };
            if verbosity == Verbosity::AllPlansExecution {
                // One candidate plan: there are no other plans' trials to show.
                stats.insert("allPlansExecution", Bson::Array(Vec::new()));
            }
            out.insert("executionStats", stats);
        }
    }

    fn into_reply(self, verbosity: Verbosity) -> Document {
        let mut out = Document::new();
        self.sections(verbosity, &mut out);
        out
    }
}

/// Plans `query` on `target` and, when the verbosity asks, runs it, calling `each` on every
/// match (up to `stop_after`).
async fn explain_query(
    target: Option<(Arc<DatabaseStore>, Arc<CollectionMeta>)>,
    query: Query<'_>,
    verbosity: Verbosity,
    mut each: impl FnMut(&Candidate) -> Result<()>,
) -> Result<Explained> {
    let mut filter = Filter::parse_with_variables(query.filter, &query.vars)?;
    crate::datanode::exec::bind_text(&mut filter, target.as_ref().map(|(_, c)| &**c))?;
    let sort = query
        .sort
        .as_ref()
        .map(|s| SortSpec::parse_for(s, &query.vars))
        .transpose()?;
    if sort
        .as_ref()
        .is_some_and(SortSpec::sorts_by_geo_near_distance)
        && filter.near().is_none()
    {
        return Err(crate::expression::meta::MetaKind::GeoNearDistance.unavailable());
    }
    let Some((db, coll)) = target else {
        let mut tree = StageTree::empty();
        tree.push("EOF", Document::new(), 0, Document::new());
        return Ok(Explained {
            tree,
            run: Execution::default(),
            ns: query.ns,
            filter: query.filter.clone(),
        });
    };
    if filter.near().is_some() {
        return explain_near(db, coll, &filter, query, verbosity, each).await;
    }
    let shape = QueryShape {
        filter: query.filter,
        sort: sort.as_ref(),
        hint: query.hint.as_ref(),
        min: query.min.as_ref(),
        max: query.max.as_ref(),
        collation: query.vars.collation(),
    };
    let mut position = Position::plan(&coll, &shape)?.owned_by(query.ownership.clone());
    let blocking_sort =
        sort.as_ref().is_some_and(|s| !s.is_empty()) && !position.path().provides_sort();
    let mut projection = query.projection.cloned();
    take_sort_key_request(&mut projection);
    let covered = Covered::analyze(
        position.path(),
        &CoverRequest {
            filter: query.filter,
            projection: projection.as_ref(),
            sort: sort.as_ref(),
            return_key: query.return_key,
            show_record_id: query.show_record_id,
            ownership: query.ownership.as_deref(),
        },
    )
    .ok();
    position = position.covered_by(covered, &db, &coll);
    let stop_after = if blocking_sort {
        None
    } else {
        query.stop_after
    };
    // Read one row at a time under a limit, so that what is reported examined is exact.
    if stop_after.is_some_and(|n| n <= 10_000) {
        position = position.with_chunk(1);
    }
    let mut run = Execution::default();
    if verbosity.executes() {
        let started = Instant::now();
        let mut read = db.read().await?;
        'scan: while !position.done() {
            for candidate in position.next_matches(&mut read, &coll, &filter).await? {
                run.matched += 1;
                each(&candidate)?;
                if stop_after.is_some_and(|n| run.matched >= n) {
                    break 'scan;
                }
            }
        }
        run.examined = position.examined();
        run.keys_per_scan = position.keys_per_scan();
        run.millis = started.elapsed().as_millis() as u64;
    }
    let path: &AccessPath = position.path();
    let tree = StageTree::for_query(
        &query.explained(path, blocking_sort, position.is_covered()),
        &run,
    );
    Ok(Explained {
        tree,
        run,
        ns: query.ns,
        filter: query.filter.clone(),
    })
}

/// A `$near` query's plan (GEO_NEAR_2DSPHERE or GEO_NEAR_2D) and, when the verbosity asks,
/// its run: the documents in distance order, up to `stop_after`.
async fn explain_near(
    db: Arc<DatabaseStore>,
    coll: Arc<CollectionMeta>,
    filter: &Filter,
    query: Query<'_>,
    verbosity: Verbosity,
    mut each: impl FnMut(&Candidate) -> Result<()>,
) -> Result<Explained> {
    if query.min.is_some() || query.max.is_some() {
        return Err(MongoError::new(
            ErrorCode::NotImplemented,
            "explain of a $near query with min or max is not supported yet",
        ));
    }
    // A sort re-orders every match (see find's `near_body`).
    let blocking_sort = query.sort.as_ref().is_some_and(|s| !s.is_empty());
    let (index, spherical) = crate::datanode::exec::near_index(&coll, filter, &query.ns)?
        .ok_or_else(|| MongoError::internal("a $near query without its $near"))?;
    let mut run = Execution::default();
    if verbosity.executes() {
        let started = Instant::now();
        let want = query
            .stop_after
            .filter(|_| !blocking_sort)
            .and_then(|n| usize::try_from(n).ok());
        let matches = crate::datanode::exec::near_matches_examined(
            &db,
            &coll,
            filter,
            query.ownership.clone(),
            want,
            &query.ns,
            &mut run.examined,
        )
        .await?;
        for m in matches {
            run.matched += 1;
            each(&Candidate {
                rid: m.rid,
                raw: m.raw,
                doc: m.doc,
            })?;
        }
        run.millis = started.elapsed().as_millis() as u64;
    }
    let unused = AccessPath::CollScan { reverse: false };
    let explained = query.explained(&unused, blocking_sort, false);
    let tree = StageTree::for_near(index, spherical, &explained, &run);
    Ok(Explained {
        tree,
        run,
        ns: query.ns,
        filter: query.filter.clone(),
    })
}

async fn collection<S: DataNode>(
    state: &S,
    cmd: &CommandRequest,
) -> Result<(String, Option<(Arc<DatabaseStore>, Arc<CollectionMeta>)>)> {
    let name = cmd.args().collection()?;
    crate::catalog::validate_collection_name(&cmd.db, name)?;
    Ok((
        format!("{}.{name}", cmd.db),
        state.storage().collection(&cmd.db, name).await,
    ))
}

/// `vars` under the collation the explained command runs under: its own, else its
/// collection's or view's default.
async fn under_collation<S: DataNode>(
    state: &S,
    cmd: &CommandRequest,
    vars: Arc<LetVariables>,
) -> Result<Arc<LetVariables>> {
    let name = cmd.args().collection()?;
    let collation = crate::datanode::collation::for_request(state.storage(), cmd, name).await?;
    Ok(vars.for_statement(collation))
}

async fn find<S: DataNode>(
    state: &S,
    cmd: &CommandRequest,
    verbosity: Verbosity,
) -> Result<Document> {
    let find = FindCommand::parse(cmd)?;
    let vars = under_collation(state, cmd, cmd.args().let_variables()?).await?;
    let filter = Filter::parse_with_variables(&find.filter, &vars)?;
    if let Some(p) = &find.projection {
        crate::query::projection::Projection::parse_for_find(p, &filter, &vars)?;
    }
    let (ns, target) = collection(state, cmd).await?;
    let query = Query {
        sort: find.sort.clone(),
        hint: find.hint.clone(),
        skip: find.skip,
        limit: find.limit,
        stop_after: find.limit.map(|l| find.skip + l),
        projection: find.projection.as_ref(),
        min: find.min.clone(),
        max: find.max.clone(),
        ownership: state.ownership(cmd),
        return_key: find.return_key,
        show_record_id: find.show_record_id,
        ..Query::new(ns, &find.filter, vars)
    };
    Ok(explain_query(target, query, verbosity, |_| Ok(()))
        .await?
        .into_reply(verbosity))
}

async fn count<S: DataNode>(
    state: &S,
    cmd: &CommandRequest,
    verbosity: Verbosity,
) -> Result<Document> {
    let args = cmd.args();
    let filter = args.document("query")?.unwrap_or_default();
    let skip = args.non_negative("skip")?.unwrap_or(0) as u64;
    let limit = args
        .i64("limit")?
        .map(|l| l.unsigned_abs())
        .filter(|l| *l > 0);
    let hint = parse_hint(&args)?;
    let (ns, target) = collection(state, cmd).await?;
    let fast = filter.is_empty() && hint.is_none();
    let vars = under_collation(state, cmd, LetVariables::none()).await?;
    let query = Query {
        hint,
        stop_after: limit.map(|l| skip + l),
        ownership: state.ownership(cmd),
        ..Query::new(ns, &filter, vars)
    };
    let has_collection = target.is_some();
    let fast_count = match (&target, fast) {
        (Some((db, coll)), true) => Some(db.stats(coll).count.max(0) as u64),
        _ => None,
    };
    let mut explained = if fast_count.is_some() {
        let mut tree = StageTree::empty();
        tree.push("EOF", Document::new(), 0, Document::new());
        Explained {
            tree,
            run: Execution::default(),
            ns: query.ns.clone(),
            filter: filter.clone(),
        }
    } else {
        explain_query(target, query, verbosity, |_| Ok(())).await?
    };
    let total = fast_count.unwrap_or(explained.run.matched);
    let stats = if verbosity.executes() {
        count_stats(total, skip, limit)
    } else {
        Document::new()
    };
    if fast_count.is_some() {
        explained.tree = StageTree::empty();
        explained
            .tree
            .push("RECORD_STORE_FAST_COUNT", Document::new(), 0, stats);
    } else if has_collection {
        explained.tree.push("COUNT", Document::new(), 0, stats);
    }
    Ok(explained.into_reply(verbosity))
}

async fn distinct<S: DataNode>(
    state: &S,
    cmd: &CommandRequest,
    verbosity: Verbosity,
) -> Result<Document> {
    let args = cmd.args();
    args.str("key")?
        .ok_or_else(|| crate::command::missing("distinct", "key"))?;
    let filter = args.document("query")?.unwrap_or_default();
    let (ns, target) = collection(state, cmd).await?;
    let vars = under_collation(state, cmd, LetVariables::none()).await?;
    let query = Query {
        hint: parse_hint(&args)?,
        ownership: state.ownership(cmd),
        ..Query::new(ns, &filter, vars)
    };
    Ok(explain_query(target, query, verbosity, |_| Ok(()))
        .await?
        .into_reply(verbosity))
}

/// The only statement of an explained write batch.
fn single_statement<'a>(cmd: &'a CommandRequest, field: &str) -> Result<&'a bson::RawDocument> {
    let statements = cmd.document_array(field)?;
    match statements.as_slice() {
        [only] => Ok(only),
        _ => Err(MongoError::new(
            ErrorCode::InvalidLength,
            "explained write batches must be of size 1",
        )),
    }
}

/// Whether applying `update` to a match would change it.
fn would_modify(update: &UpdateSpec, filter: &Filter, candidate: &Candidate) -> Result<bool> {
    let mut doc = candidate.doc.clone();
    let ctx = UpdateContext {
        is_upsert_insert: false,
        now: bson::DateTime::now(),
        matched_filter: Some(filter),
        collation: filter.collation(),
    };
    update.apply(&mut doc, &ctx)
}

/// Puts the write stage (`UPDATE`, `DELETE`, ...) on top of the read plan, or replaces the plan
/// by the express stage MongoDB uses for a single-document write by `_id`.
fn write_stage(
    explained: &mut Explained,
    stage: &'static str,
    express: &'static str,
    single: bool,
    stats: Document,
) {
    let write = WriteStage {
        stage,
        express,
        single,
        stats,
    };
    explained.tree.push_write(write, explained.run.examined);
}

async fn update<S: DataNode>(
    state: &S,
    cmd: &CommandRequest,
    verbosity: Verbosity,
) -> Result<Document> {
    let vars = under_collation(state, cmd, cmd.args().let_variables()?).await?;
    let stmt = UpdateStatement::parse(single_statement(cmd, "updates")?, &vars)?;
    let vars = vars.with_exact_collation(stmt.filter.collation_arc());
    let (ns, target) = collection(state, cmd).await?;
    let query = Query {
        hint: stmt.hint.clone(),
        stop_after: (!stmt.multi).then_some(1),
        ownership: state.ownership(cmd),
        ..Query::new(ns, &stmt.query, vars)
    };
    let mut modified = 0u64;
    let mut explained = explain_query(target, query, verbosity, |c| {
        modified += would_modify(&stmt.update, &stmt.filter, c)? as u64;
        Ok(())
    })
    .await?;
    let stats = verbosity.executes().then(|| {
        let matched = explained.run.matched;
        update_stats(matched, modified, matched == 0 && stmt.upsert)
    });
    write_stage(
        &mut explained,
        "UPDATE",
        "EXPRESS_UPDATE",
        !stmt.multi,
        stats.unwrap_or_default(),
    );
    Ok(explained.into_reply(verbosity))
}

async fn delete<S: DataNode>(
    state: &S,
    cmd: &CommandRequest,
    verbosity: Verbosity,
) -> Result<Document> {
    let vars = under_collation(state, cmd, cmd.args().let_variables()?).await?;
    let stmt = DeleteStatement::parse(single_statement(cmd, "deletes")?, &vars)?;
    let vars = vars.with_exact_collation(stmt.filter.collation_arc());
    let (ns, target) = collection(state, cmd).await?;
    let query = Query {
        hint: stmt.hint.clone(),
        stop_after: stmt.limit_one.then_some(1),
        ownership: state.ownership(cmd),
        ..Query::new(ns, &stmt.query, vars)
    };
    let mut explained = explain_query(target, query, verbosity, |_| Ok(())).await?;
    let stats = if verbosity.executes() {
        doc! {"nWouldDelete": number(explained.run.matched)}
    } else {
        Document::new()
    };
    // Multi-document deletes are batched, as in MongoDB 6.1 and later.
    let stage = if stmt.limit_one {
        "DELETE"
    } else {
        "BATCHED_DELETE"
    };
    write_stage(
        &mut explained,
        stage,
        "EXPRESS_DELETE",
        stmt.limit_one,
        stats,
    );
    Ok(explained.into_reply(verbosity))
}

async fn find_and_modify<S: DataNode>(
    state: &S,
    cmd: &CommandRequest,
    verbosity: Verbosity,
) -> Result<Document> {
    let vars = under_collation(state, cmd, cmd.args().let_variables()?).await?;
    let fam = FindAndModifyCommand::parse(cmd, vars.collation_arc())?;
    let args = cmd.args();
    let sort = args.document("sort")?.filter(|s| !s.is_empty());
    let (ns, target) = collection(state, cmd).await?;
    let query = Query {
        sort: sort.clone(),
        hint: parse_hint(&args)?,
        // A sort keeps only the first document.
        limit: sort.is_some().then_some(1),
        stop_after: Some(1),
        ownership: state.ownership(cmd),
        ..Query::new(ns, &fam.query, vars)
    };
    let mut modified = 0u64;
    let mut explained = explain_query(target, query, verbosity, |c| {
        if let Some(update) = &fam.update {
            modified += would_modify(update, &fam.filter, c)? as u64;
        }
        Ok(())
    })
    .await?;
    let matched = explained.run.matched.min(1);
    let (stage, express, stats) = if fam.remove {
        (
            "DELETE",
            "EXPRESS_DELETE",
            doc! {"nWouldDelete": number(matched)},
        )
    } else {
        (
            "UPDATE",
            "EXPRESS_UPDATE",
            update_stats(matched, modified.min(1), matched == 0 && fam.upsert),
        )
    };
    let stats = if verbosity.executes() {
        stats
    } else {
        Document::new()
    };
    write_stage(&mut explained, stage, express, sort.is_none(), stats);
    Ok(explained.into_reply(verbosity))
}

async fn aggregate<S: DataNode>(
    state: &S,
    cmd: &CommandRequest,
    verbosity: Verbosity,
) -> Result<Document> {
    let mut agg = AggregateCommand::parse(cmd)?;
    if agg.collection.is_some() {
        agg.vars = under_collation(state, cmd, Arc::clone(&agg.vars)).await?;
    }
    let pipeline = Pipeline::parse_with_variables(&agg.pipeline, Arc::clone(&agg.vars))?;
    if agg.collection.is_some() {
        crate::aggregate::metadata::check_available(&agg.pipeline)?;
    }
    if let (Some(spec), Some(name)) = (pipeline.geo_near(), &agg.collection) {
        return explain_geo_near(state, cmd, &agg, name, &pipeline, spec, verbosity).await;
    }
    let leading_match = agg
        .pipeline
        .first()
        .and_then(|s| s.get_document("$match").ok())
        .cloned();
    let rest: &[Document] = match leading_match {
        Some(_) => &agg.pipeline[1..],
        None => &agg.pipeline,
    };
    let filter = leading_match.clone().unwrap_or_default();
    let Some(name) = &agg.collection else {
        return Ok(doc! {"explainVersion": "1", "stages": stages_doc(rest, None)});
    };
    crate::catalog::validate_collection_name(&cmd.db, name)?;
    let target = state.storage().collection(&cmd.db, name).await;
    let query = Query {
        hint: parse_hint(&cmd.args())?,
        ownership: state.ownership(cmd),
        ..Query::new(format!("{}.{name}", cmd.db), &filter, Arc::clone(&agg.vars))
    };
    let mut input = Vec::new();
    let explained = explain_query(target, query, verbosity, |c| {
        input.push(c.doc.clone());
        Ok(())
    })
    .await?;
    if rest.is_empty() {
        // The whole pipeline is the query: MongoDB explains it like a find.
        let mut out = explained.into_reply(verbosity);
        if let Ok(planner) = out.get_document_mut("queryPlanner") {
            planner.insert("optimizedPipeline", true);
        }
        return Ok(out);
    }
    let counts = if verbosity.executes() {
        let (_, counts) = pipeline.run_counted(input)?;
        // Per-stage counts line up with the user's stages when no stage expanded.
        (counts.len() == agg.pipeline.len())
            .then(|| counts[agg.pipeline.len() - rest.len()..].to_vec())
    } else {
        None
    };
    let mut cursor = Document::new();
    explained.sections(verbosity, &mut cursor);
    cursor.remove("explainVersion");
    let mut stages = vec![Bson::Document(doc! {"$cursor": cursor})];
    stages.extend(stages_doc(rest, counts.as_deref()));
    Ok(doc! {"explainVersion": "1", "stages": stages})
}

/// A pipeline that starts with `$geoNear`: its `$geoNearCursor` (the plan of the `$near` it
/// runs, GEO_NEAR_2DSPHERE or GEO_NEAR_2D) and the stages after it.
async fn explain_geo_near<S: DataNode>(
    state: &S,
    cmd: &CommandRequest,
    agg: &AggregateCommand,
    name: &str,
    pipeline: &Pipeline,
    spec: &crate::aggregate::GeoNearSpec,
    verbosity: Verbosity,
) -> Result<Document> {
    crate::catalog::validate_collection_name(&cmd.db, name)?;
    let ns = format!("{}.{name}", cmd.db);
    let rest = &agg.pipeline[1..];
    let Some((db, coll)) = state.storage().collection(&cmd.db, name).await else {
        let empty = Document::new();
        let query = Query::new(ns, &empty, Arc::clone(&agg.vars));
        let explained = explain_query(None, query, verbosity, |_| Ok(())).await?;
        return Ok(geo_near_stages(explained, verbosity, rest, None));
    };
    let (written, _) = crate::datanode::exec::geo_near_filter(&coll, spec, &agg.vars, &ns)?;
    let ownership = state.ownership(cmd);
    let want = crate::aggregate::limits::documents_needed(rest).and_then(|n| u64::try_from(n).ok());
    let query = Query {
        ownership: ownership.clone(),
        stop_after: want,
        ..Query::new(ns.clone(), &written, Arc::clone(&agg.vars))
    };
    let target = Some((Arc::clone(&db), Arc::clone(&coll)));
    let explained = explain_query(target, query, verbosity, |_| Ok(())).await?;
    let counts = if verbosity.executes() {
        let want = want.and_then(|n| usize::try_from(n).ok());
        let input = crate::datanode::exec::geo_near_documents(
            &db, &coll, spec, &agg.vars, ownership, want, &ns,
        )
        .await?;
        let (_, counts) = pipeline.run_counted(input)?;
        (counts.len() == rest.len()).then_some(counts)
    } else {
        None
    };
    Ok(geo_near_stages(
        explained,
        verbosity,
        rest,
        counts.as_deref(),
    ))
}

/// `{explainVersion, stages: [{$geoNearCursor: ...}, ...rest]}`.
fn geo_near_stages(
    explained: Explained,
    verbosity: Verbosity,
    rest: &[Document],
    counts: Option<&[u64]>,
) -> Document {
    let mut cursor = Document::new();
    explained.sections(verbosity, &mut cursor);
    cursor.remove("explainVersion");
    let mut stages = vec![Bson::Document(doc! {"$geoNearCursor": cursor})];
    stages.extend(stages_doc(rest, counts));
    doc! {"explainVersion": "1", "stages": stages}
}

/// The pipeline's stages as explain lists them, with their output counts when known.
fn stages_doc(stages: &[Document], counts: Option<&[u64]>) -> Vec<Bson> {
    stages
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let mut out = spec.clone();
            if let Some(n) = counts.and_then(|c| c.get(i)) {
                out.insert("nReturned", number(*n));
            }
            Bson::Document(out)
        })
        .collect()
}
