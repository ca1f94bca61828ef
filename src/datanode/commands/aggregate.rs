//! `aggregate` on one node: the pipeline runs over the collection's documents (narrowed by a
//! leading `$match`) and its output is returned through a cursor, which runs the pipeline
//! further at each `getMore` (only `$out`/`$merge` pipelines run to their end at once).

use super::super::DataNode;
use super::super::cursors::{Cursor, CursorBody};
use super::super::exec::{KeySource, PipelineInput, PipelineState, Position, QueryShape};
use super::super::views;
use super::find::{DEFAULT_FIRST_BATCH, cursor_reply};
use crate::aggregate::foreign::Host;
use crate::aggregate::{MemoryLimits, Pipeline};
use crate::catalog::OwnershipFilter;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::LetVariables;
use crate::server::pipeline_cursor::PipelineSource;
use crate::server::{LocalCommands, RequestContext};
use bson::{Bson, Document, RawDocumentBuf, doc};
use std::collections::VecDeque;
use std::sync::Arc;

pub(super) struct AggregateCommand {
    /// `None` for `aggregate: 1` (collection-less pipelines).
    pub(super) collection: Option<String>,
    pub(super) pipeline: Vec<Document>,
    pub(super) batch_size: Option<u64>,
    /// The command's `let`, evaluated.
    pub(super) vars: Arc<LetVariables>,
    /// `allowDiskUse`; `None` leaves it to `allowDiskUseByDefault`.
    pub(super) allow_disk_use: Option<bool>,
    /// The index the leading `$match` must use (`hint`: a name, a key pattern, `$natural`).
    pub(super) hint: Option<Bson>,
    /// `needsMerge`: a router merges the output, which keeps the documents' metadata.
    pub(super) needs_merge: bool,
}

/// How a pipeline reads its collection: the ownership filter it runs under and the index hint;
/// and whether its output keeps the documents' metadata for a router merging it.
#[derive(Default)]
pub(super) struct Access {
    pub(super) ownership: Option<Arc<OwnershipFilter>>,
    pub(super) hint: Option<Bson>,
    pub(super) keep_metadata: bool,
}

impl AggregateCommand {
    pub(super) fn parse(req: &CommandRequest) -> Result<Self> {
        let args = req.args();
        let collection = crate::aggregate::request::target(req)?;
        let pipeline = crate::aggregate::request::pipeline(req)?;
        let batch_size = crate::aggregate::request::cursor_batch_size(req)?.map(|n| n as u64);
        Ok(AggregateCommand {
            collection,
            pipeline,
            batch_size,
            vars: args.let_variables()?,
            allow_disk_use: args.bool("allowDiskUse")?,
            hint: super::find::parse_hint(&args)?,
            needs_merge: args.bool("needsMerge")?.unwrap_or(false),
        })
    }

    /// Parses the stages as running them would, past a first stage this node answers from
    /// its own state (`$collStats`, `sources`): what a node checks whether or not the
    /// collection exists.
    pub(super) fn parse_stages(&self) -> Result<()> {
        let first = self.pipeline.first().and_then(|stage| stage.keys().next());
        let own = first.is_some_and(|name| name == "$collStats" || super::sources::answers(name));
        let rest = &self.pipeline[usize::from(own)..];
        Pipeline::parse_with_variables(rest, Arc::clone(&self.vars)).map(drop)
    }
}

/// Where a pipeline's blocking stages may use memory and disk, from the server parameters and
/// the command's `allowDiskUse`.
pub(super) fn memory_limits<S: DataNode>(state: &S, allow_disk_use: Option<bool>) -> MemoryLimits {
    let spill_dir = Some(state.storage().spill_dir());
    state.node().params.memory_limits(allow_disk_use, spill_dir)
}

/// Runs `stages` over collection `coll` of `db` (a leading `$match` chooses the access path),
/// or over nothing for collection-less pipelines, and returns the output.
pub(super) async fn pipeline_output<S: DataNode>(
    state: &S,
    db: &str,
    coll: Option<&str>,
    stages: &[Document],
    vars: &Arc<LetVariables>,
    ownership: Option<Arc<OwnershipFilter>>,
) -> Result<Vec<Document>> {
    let limits = memory_limits(state, None);
    let access = Access {
        ownership,
        ..Access::default()
    };
    let mut run = open_pipeline(state, db, coll, stages, vars, access, limits).await?;
    let mut out = Vec::new();
    let mut sink = |batch: Vec<RawDocumentBuf>| {
        for raw in batch {
            out.push(raw.to_document()?);
        }
        Ok(())
    };
    drive(state, &mut run, Drive::All(&mut sink)).await?;
    Ok(out)
}

/// Starts `stages` over collection `coll` of `db` (a leading `$match` chooses the access path),
/// or over nothing for collection-less pipelines, within `limits`: nothing is read yet; the
/// run reads the collection as its output is asked for ([`drive`]), and stops reading once
/// more input cannot change the output (a satisfied `$limit`).
#[allow(clippy::too_many_arguments)]
pub(super) async fn open_pipeline<S: DataNode>(
    state: &S,
    db: &str,
    coll: Option<&str>,
    stages: &[Document],
    vars: &Arc<LetVariables>,
    access: Access,
    limits: MemoryLimits,
) -> Result<PipelineState> {
    let mut pipeline =
        Pipeline::parse_with_variables(stages, Arc::clone(vars))?.with_limits(limits);
    if coll.is_some() && pipeline.makes_its_input() {
        return Err(MongoError::invalid_namespace(
            "'$documents' can only be run with {aggregate: 1}",
        ));
    }
    if coll.is_some() {
        crate::aggregate::metadata::check_available(stages)?;
    }
    if access.keep_metadata {
        pipeline = pipeline.keeping_metadata();
    }
    let mut input: Option<Box<dyn PipelineSource>> = None;
    if let (Some(name), Some(spec)) = (coll, pipeline.geo_near()) {
        if let Some((store, coll)) = state.storage().collection(db, name).await {
            let ns = format!("{db}.{name}");
            let want = crate::aggregate::limits::documents_needed(&stages[1..])
                .and_then(|n| usize::try_from(n).ok());
            let docs = crate::datanode::exec::geo_near_documents(
                &store,
                &coll,
                spec,
                vars,
                access.ownership,
                want,
                &ns,
            )
            .await?;
            input = Some(Box::new(crate::datanode::exec::BufferedInput {
                docs: docs.into(),
            }));
        }
    } else if let Some(name) = coll {
        let found = state.storage().collection(db, name).await;
        if let Some(filter) = pipeline.leading_match_mut() {
            crate::datanode::exec::bind_text(filter, found.as_ref().map(|(_, c)| &**c))?;
        }
        if let Some((store, coll)) = found {
            let empty = Document::new();
            let filter_doc = stages
                .first()
                .and_then(|stage| stage.get_document("$match").ok())
                .unwrap_or(&empty);
            let shape = QueryShape {
                hint: access.hint.as_ref(),
                collation: vars.collation(),
                ..QueryShape::filter(filter_doc)
            };
            let position = Position::plan(&coll, &shape)?.owned_by(access.ownership);
            let index_keys = crate::aggregate::metadata::Produced::by(stages)
                .index_key
                .then(|| KeySource::of_path(position.path()));
            if matches!(index_keys, Some(KeySource::Id)) {
                // MongoDB's `_id` lookup's index key metadata differs between its releases.
                return Err(MongoError::new(
                    ErrorCode::NotImplemented,
                    "{$meta: \"indexKey\"} of an _id lookup is not supported yet",
                ));
            }
            store
                .index_usage()
                .record(&coll, position.path().indexes_used(&coll));
            input = Some(Box::new(PipelineInput {
                db: store,
                coll,
                position,
                index_keys,
            }));
        }
    }
    Ok(PipelineState::new(
        pipeline.start(),
        input,
        pipeline.reaches_other_collections(),
        db.to_string(),
    ))
}

/// How far to run a pipeline.
pub(super) enum Drive<'s> {
    /// Until a batch of at most this many documents is ready; returns it.
    Batch(usize),
    /// To the end, the output going to the sink as it comes.
    All(&'s mut (dyn FnMut(Vec<RawDocumentBuf>) -> Result<()> + Send)),
}

/// Runs `run` on (see [`Drive`]). Stages that reach other collections reach this node's own:
/// a client talking to this node directly (the router gives shards whole collections to join
/// with only through its own pipeline).
pub(super) async fn drive<S: DataNode>(
    state: &S,
    run: &mut PipelineState,
    how: Drive<'_>,
) -> Result<Vec<RawDocumentBuf>> {
    let ctx = RequestContext::internal();
    let runner = LocalCommands::new(state, &ctx);
    let db = run.db_name.clone();
    let host = Host {
        db: &db,
        runner: &runner,
        write_concern: None,
        bypass_document_validation: false,
    };
    let host = run.needs_host().then_some(&host);
    match how {
        Drive::Batch(max_docs) => run.next_batch(max_docs, host).await,
        Drive::All(sink) => {
            run.drain(host, sink).await?;
            Ok(Vec::new())
        }
    }
}

pub(super) async fn run<S: DataNode>(
    state: &S,
    ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    if req.args().bool("explain")? == Some(true) {
        return super::explain::explain(state, req, crate::command::Verbosity::QueryPlanner).await;
    }
    let mut cmd = AggregateCommand::parse(&req)?;
    let ns = match &cmd.collection {
        Some(name) => {
            crate::catalog::validate_collection_name(&req.db, name)?;
            // The stages are parsed when they run: under the collection's or view's default.
            let collation = crate::datanode::collation::for_request(state.storage(), &req, name);
            cmd.vars = cmd.vars.for_statement(collation.await?);
            format!("{}.{name}", req.db)
        }
        None => format!("{}.$cmd.aggregate", req.db),
    };
    let collection_stats = cmd
        .pipeline
        .first()
        .and_then(|s| s.get_document("$collStats").ok());
    let buffered = |docs: Vec<Document>| -> Result<CursorBody> {
        let docs = docs
            .iter()
            .map(crate::command::result_document)
            .collect::<Result<VecDeque<_>>>()?;
        Ok(CursorBody::Buffered(docs))
    };
    let mut body = match (&cmd.collection, collection_stats) {
        (Some(name), Some(spec)) => {
            let stats = coll_stats_stage(state, ctx, &req.db, name, spec).await?;
            buffered(
                Pipeline::parse_with_variables(&cmd.pipeline[1..], Arc::clone(&cmd.vars))?
                    .run(vec![stats])?,
            )?
        }
        (None, Some(_)) => {
            return Err(MongoError::new(
                crate::error::ErrorCode::InvalidNamespace,
                "$collStats must be run against a collection namespace",
            ));
        }
        _ => match super::sources::run(state, &req, &cmd).await? {
            Some(output) => buffered(output)?,
            None => {
                let ownership = state.ownership(&req);
                let mut run = collection_output(state, &req, &cmd, ownership).await?;
                if writes_output(&cmd.pipeline) {
                    // `$out` and `$merge` write when the command runs, not as a cursor is
                    // read: the run goes to its end here (it returns no documents).
                    let mut docs = VecDeque::new();
                    let mut sink = |batch: Vec<RawDocumentBuf>| {
                        docs.extend(batch);
                        Ok(())
                    };
                    drive(state, &mut run, Drive::All(&mut sink)).await?;
                    CursorBody::Buffered(docs)
                } else {
                    run.time_left = crate::command::max_time(&req.args())?;
                    CursorBody::Pipeline(Box::new(run))
                }
            }
        },
    };
    let first = cmd
        .batch_size
        .map(|b| b as usize)
        .unwrap_or(DEFAULT_FIRST_BATCH);
    // A batch stops at 16 MB as find's do (the reply must stay a valid document).
    let (batch, exhausted) = super::find::next_batch(state, &mut body, first).await?;
    let id = if exhausted {
        0
    } else {
        state
            .cursors()
            .register(Cursor::new(ns.clone(), body, false))
    };
    Ok(cursor_reply(&ns, batch, id, true))
}

/// Whether the pipeline ends with `$out` or `$merge`.
fn writes_output(stages: &[Document]) -> bool {
    stages
        .last()
        .and_then(|stage| stage.keys().next())
        .is_some_and(|name| name == "$out" || name == "$merge")
}

/// The pipeline started over the collection (its documents `ownership` lets through), the
/// view it names, or nothing.
async fn collection_output<S: DataNode>(
    state: &S,
    req: &CommandRequest,
    cmd: &AggregateCommand,
    ownership: Option<Arc<OwnershipFilter>>,
) -> Result<PipelineState> {
    let db = req.db.as_str();
    let limits = memory_limits(state, cmd.allow_disk_use);
    let vars = &cmd.vars;
    match &cmd.collection {
        // A view runs its own pipeline first, on its source collection.
        Some(name) => match views::resolve(state.storage(), db, name).await? {
            Some(view) => {
                views::require_unsharded_source(state, req, &view).await?;
                let mut stages = view.pipeline;
                stages.extend(cmd.pipeline.iter().cloned());
                let source = Some(view.source.as_str());
                let access = Access::default();
                open_pipeline(state, db, source, &stages, vars, access, limits).await
            }
            None => {
                let stages = &cmd.pipeline;
                let access = Access {
                    ownership,
                    hint: cmd.hint.clone(),
                    keep_metadata: cmd.needs_merge,
                };
                open_pipeline(state, db, Some(name), stages, vars, access, limits).await
            }
        },
        None => {
            let access = Access::default();
            open_pipeline(state, db, None, &cmd.pipeline, vars, access, limits).await
        }
    }
}

/// `$collStats` (first stage): one document describing the collection on this node — `ns`,
/// `shard`, `host`, `localTime`, and the sections asked for: `storageStats` (collStats's
/// figures, with `scale`) and `count`. Latency and query execution statistics are not kept.
async fn coll_stats_stage<S: DataNode>(
    state: &S,
    ctx: &RequestContext,
    db: &str,
    coll: &str,
    spec: &Document,
) -> Result<Document> {
    let mut out = doc! {
        "ns": format!("{db}.{coll}"),
        "shard": state.shard_name(),
        "host": state.node().host(),
        "localTime": bson::DateTime::now(),
    };
    for (section, options) in spec {
        match section.as_str() {
            "storageStats" | "count" => {
                let mut command = doc! {"collStats": coll};
                if let Some(scale) = options.as_document().and_then(|o| o.get("scale")) {
                    command.insert("scale", scale.clone());
                }
                let request = CommandRequest::from_document(db, &command)?;
                let stats = super::databases::coll_stats(state, ctx, request)
                    .await
                    .map_err(|e| {
                        MongoError::new(
                            e.code(),
                            format!(
                                "Unable to retrieve {section} in $collStats stage :: caused by :: {}",
                                e.message()
                            ),
                        )
                    })?;
                let mut stats = stats.to_document()?;
                stats.remove("ok");
                if section == "count" {
                    out.insert(
                        "count",
                        stats.get("count").cloned().unwrap_or(Bson::Int64(0)),
                    );
                } else {
                    // MongoDB's shards count the documents of their ranges awaiting deletion.
                    let orphans = state.orphan_count(&format!("{db}.{coll}")).await?;
                    stats.insert("numOrphanDocs", orphans);
                    out.insert("storageStats", stats);
                }
            }
            "latencyStats" | "queryExecStats" => {
                return Err(MongoError::new(
                    crate::error::ErrorCode::NotImplemented,
                    format!(
                        "$collStats {section} is not supported yet: docgrid keeps no per-collection {section}"
                    ),
                ));
            }
            other => {
                return Err(MongoError::location(
                    40168,
                    format!("unrecognized option to $collStats: {other}"),
                ));
            }
        }
    }
    Ok(out)
}
