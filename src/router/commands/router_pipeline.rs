//! Aggregations whose pipeline reaches other collections (`$lookup`, `$graphLookup`,
//! `$unionWith`, `$out`, `$merge`) or makes its own documents (`$documents`): the stages before
//! the first such stage run as an ordinary aggregate (targeted, split across shards, through
//! views), the rest on the router, which reaches the other collections through its own
//! command table — so each may be sharded, unsharded on any shard, or a view. The router's part
//! runs as its cursor's batches are asked for (`server::pipeline_cursor`), reading the first
//! part's cursor as it needs input: a join that multiplies is held a batch at a time.

use super::super::RouterState;
use super::super::cursors::CursorSource;
use super::reads::DEFAULT_FIRST_BATCH;
use crate::aggregate::foreign::{CommandRunner, Host, HostCursor};
use crate::aggregate::{MemoryLimits, Pipeline};
use crate::command::{CommandRequest, cursor_reply};
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::pipeline_cursor::{PipelineSource, PipelineState};
use crate::server::{LocalCommands, RequestContext};
use bson::RawDocumentBuf;
use std::sync::Arc;

pub(super) async fn run(
    state: &RouterState,
    ctx: &RequestContext,
    req: &CommandRequest,
    stages: &[bson::Document],
    start: usize,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let collection = crate::aggregate::request::target(req)?;
    let batch_size = crate::aggregate::request::cursor_batch_size(req)?;
    let makes_input = stages
        .first()
        .is_some_and(|stage| stage.contains_key("$documents"));
    if let (Some(_), true) = (&collection, makes_input) {
        return Err(MongoError::invalid_namespace(
            "'$documents' can only be run with {aggregate: 1}",
        ));
    }
    let writes = stages
        .last()
        .and_then(|stage| stage.keys().next())
        .is_some_and(|name| name == "$out" || name == "$merge");
    let linearizable = args
        .document("readConcern")?
        .is_some_and(|rc| rc.get_str("level") == Ok("linearizable"));
    if writes && linearizable {
        return Err(MongoError::new(
            ErrorCode::InvalidOptions,
            "$out and $merge cannot be used with a 'linearizable' read concern level",
        ));
    }
    // The router's part is parsed first, so that a bad one fails before anything is read.
    // The router's part reads the first part's documents with their metadata, if it has any.
    let vars = args.let_variables()?;
    let vars = if crate::aggregate::metadata::Produced::by(stages).any() {
        std::sync::Arc::new(vars.carrying_metadata())
    } else {
        vars
    };
    let pipeline = Pipeline::parse_with_variables(&stages[start..], vars)?
        .with_limits(memory_limits(state, req)?);
    if collection.is_some() {
        crate::aggregate::metadata::check_available(stages)?;
    }
    let runner = LocalCommands::new(state, ctx);
    let host = Host {
        db: &req.db,
        runner: &runner,
        write_concern: args.document("writeConcern")?,
        bypass_document_validation: args.bool("bypassDocumentValidation")?.unwrap_or(false),
    };
    let input: Option<Box<dyn PipelineSource>> = if makes_input {
        None
    } else {
        let let_doc = args.document("let")?.unwrap_or_default();
        let first_part = stages[..start].to_vec();
        let hint = args.value("hint")?;
        let source = HostCursor::aggregate(
            &req.db,
            collection.as_deref(),
            first_part,
            let_doc,
            hint.as_ref(),
        );
        let source = if crate::aggregate::metadata::Produced::by(stages).any() {
            source.keeping_metadata()
        } else {
            source
        };
        Some(Box::new(source))
    };
    let mut run = PipelineState::new(pipeline.start(), input, true, req.db.clone());
    let coll = collection.as_deref().unwrap_or("$cmd.aggregate");
    let ns = format!("{}.{coll}", req.db);
    if writes {
        // `$out` and `$merge` write when the command runs, not as a cursor is read: the run
        // goes to its end here (it returns no documents).
        let mut sink = |_: Vec<RawDocumentBuf>| Ok(());
        if let Err(e) = run.drain(Some(&host), &mut sink).await {
            run.close(Some(&host)).await;
            return Err(e);
        }
        return Ok(cursor_reply(&ns, Vec::new(), 0, true));
    }
    let first = batch_size.unwrap_or(DEFAULT_FIRST_BATCH);
    open_pipeline_cursor(state, req, run, &ns, first, Some(&host)).await
}

/// What the router's part of a pipeline may hold: MongoDB's limits. With `allowDiskUse` its
/// blocking stages spill to a directory of the system's temporary one, as a shard's spill to
/// its data directory (mongos would move such a merge to a shard instead; a router here keeps
/// no data directory); without it, past a limit they fail as a shard's do.
pub(super) fn memory_limits(state: &RouterState, req: &CommandRequest) -> Result<MemoryLimits> {
    let allow_disk_use = req.args().bool("allowDiskUse")?;
    let spill_dir = std::env::temp_dir().join(format!("docgrid-router-{}", std::process::id()));
    Ok(state
        .node
        .params
        .memory_limits(allow_disk_use, Some(spill_dir)))
}

/// Returns the first batch of `run` (the router's part of the aggregate `req`; `host` for
/// stages that reach other collections) and, when more remains, registers it as a cursor of
/// namespace `ns`; its batches spend what is left of the command's `maxTimeMS`.
pub(super) async fn open_pipeline_cursor(
    state: &RouterState,
    req: &CommandRequest,
    mut run: PipelineState,
    ns: &str,
    first: i64,
    host: Option<&Host<'_>>,
) -> Result<RawDocumentBuf> {
    run.time_left = crate::command::max_time(&req.args())?;
    let first = usize::try_from(first).unwrap_or(usize::MAX);
    let batch = next_batch(&mut run, host, first).await?;
    let id = if run.exhausted() {
        0
    } else {
        let source = CursorSource::Pipeline(Arc::new(tokio::sync::Mutex::new(run)));
        state.cursors.register(source, ns.to_string())
    };
    Ok(cursor_reply(ns, batch, id, true))
}

/// The next batch of the router's part of a pipeline (at most `max_docs` documents); the input
/// is closed when the run fails or ends.
async fn next_batch(
    run: &mut PipelineState,
    host: Option<&Host<'_>>,
    max_docs: usize,
) -> Result<Vec<RawDocumentBuf>> {
    // Only stages that reach other collections run through the host; without them, blocking
    // stages finish over many documents off the runtime threads.
    let reaches = host.filter(|_| run.needs_host());
    match run.next_batch(max_docs, reaches).await {
        Ok(batch) => {
            if run.exhausted() {
                run.close(host).await;
            }
            Ok(batch)
        }
        Err(e) => {
            run.close(host).await;
            Err(e)
        }
    }
}

/// What a `getMore` on a pipeline cursor reaches other collections with: this router's own
/// commands, on behalf of the request that asks.
fn host<'a>(db: &'a str, runner: &'a dyn CommandRunner) -> Host<'a> {
    Host {
        db,
        runner,
        write_concern: None,
        bypass_document_validation: false,
    }
}

/// The next batch of a pipeline cursor, for `getMore` (`None`: as many as 16 MB holds).
pub(super) async fn get_more(
    state: &RouterState,
    ctx: &RequestContext,
    run: &mut PipelineState,
    max_docs: Option<usize>,
) -> Result<Vec<RawDocumentBuf>> {
    let runner = LocalCommands::new(state, ctx);
    let db = run.db_name.clone();
    let host = host(&db, &runner);
    next_batch(run, Some(&host), max_docs.unwrap_or(usize::MAX)).await
}

/// Closes a pipeline cursor's input, for `killCursors`.
pub(super) async fn kill(state: &RouterState, ctx: &RequestContext, run: &mut PipelineState) {
    let runner = LocalCommands::new(state, ctx);
    let db = run.db_name.clone();
    run.close(Some(&host(&db, &runner))).await;
}
