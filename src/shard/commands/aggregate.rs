//! `aggregate` on one node: the pipeline runs over the collection's documents (narrowed by a
//! leading `$match`) and its output is returned through a cursor.

use super::super::DataNode;
use super::super::cursors::{Cursor, CursorBody};
use super::super::exec::Position;
use super::super::views;
use super::find::{DEFAULT_FIRST_BATCH, cursor_reply};
use crate::aggregate::Pipeline;
use crate::aggregate::expression::LetVariables;
use crate::command::CommandRequest;
use crate::error::{MongoError, Result};
use crate::query::filter::Filter;
use crate::server::RequestContext;
use bson::{Bson, Document, RawBsonRef, RawDocumentBuf};
use std::collections::VecDeque;
use std::sync::Arc;

pub(super) struct AggregateCommand {
    /// `None` for `aggregate: 1` (collection-less pipelines).
    pub(super) collection: Option<String>,
    pub(super) pipeline: Vec<Document>,
    pub(super) batch_size: Option<u64>,
    /// The command's `let`, evaluated.
    pub(super) vars: Arc<LetVariables>,
}

impl AggregateCommand {
    pub(super) fn parse(req: &CommandRequest) -> Result<Self> {
        let args = req.args();
        crate::command::check_collation(args.value("collation")?.as_ref())?;
        let collection = match args.target()? {
            RawBsonRef::String(name) => Some(name.to_string()),
            RawBsonRef::Int32(1) | RawBsonRef::Int64(1) | RawBsonRef::Double(1.0) => None,
            _ => {
                return Err(MongoError::failed_to_parse(
                    "Invalid {aggregate: ...} value: must be a string or the number 1",
                ));
            }
        };
        let pipeline = args
            .array("pipeline")?
            .ok_or_else(|| crate::command::missing("aggregate", "pipeline"))?
            .into_iter()
            .map(|stage| match stage {
                Bson::Document(d) => Ok(d),
                _ => Err(MongoError::type_mismatch(
                    "Each element of the 'pipeline' array must be an object",
                )),
            })
            .collect::<Result<Vec<_>>>()?;
        let cursor = args.document("cursor")?;
        if cursor.is_none() && args.bool("explain")? != Some(true) {
            return Err(MongoError::failed_to_parse(
                "The 'cursor' option is required, except for aggregate with the explain argument",
            ));
        }
        let batch_size = match cursor.as_ref().and_then(|c| c.get("batchSize")) {
            Some(Bson::Int32(n)) if *n >= 0 => Some(*n as u64),
            Some(Bson::Int64(n)) if *n >= 0 => Some(*n as u64),
            Some(Bson::Double(n)) if *n >= 0.0 => Some(*n as u64),
            Some(_) => {
                return Err(MongoError::bad_value(
                    "cursor.batchSize must be a non-negative number",
                ));
            }
            None => None,
        };
        Ok(AggregateCommand {
            collection,
            pipeline,
            batch_size,
            vars: args.let_variables()?,
        })
    }
}

/// Runs `stages` over collection `coll` of `db` (a leading `$match` chooses the access path),
/// or over nothing for collection-less pipelines.
pub(super) async fn pipeline_output<S: DataNode>(
    state: &S,
    db: &str,
    coll: Option<&str>,
    stages: &[Document],
    vars: &Arc<LetVariables>,
) -> Result<Vec<Document>> {
    let pipeline = Pipeline::parse_with_variables(stages, Arc::clone(vars))?;
    let mut input = Vec::new();
    if let Some(name) = coll {
        if let Some((store, coll)) = state.storage().collection(db, name).await {
            let all = Filter::match_all();
            let filter = pipeline.leading_match().unwrap_or(&all);
            let empty = Document::new();
            let filter_doc = stages
                .first()
                .and_then(|stage| stage.get_document("$match").ok())
                .unwrap_or(&empty);
            let mut read = store.read().await?;
            let mut position = Position::for_filter(&coll, filter_doc)?;
            while !position.done() {
                input.extend(
                    position
                        .next_matches(&mut read, &coll, filter)
                        .await?
                        .into_iter()
                        .map(|c| c.doc),
                );
            }
        }
    }
    pipeline.run(input)
}

pub(super) async fn run<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    if req.args().bool("explain")? == Some(true) {
        return super::explain::explain(state, req, crate::command::Verbosity::QueryPlanner).await;
    }
    let cmd = AggregateCommand::parse(&req)?;
    let ns = match &cmd.collection {
        Some(name) => {
            crate::catalog::validate_collection_name(&req.db, name)?;
            format!("{}.{name}", req.db)
        }
        None => format!("{}.$cmd.aggregate", req.db),
    };
    let output = match &cmd.collection {
        // A view runs its own pipeline first, on its source collection.
        Some(name) => match views::resolve(state.storage(), &req.db, name).await? {
            Some(view) => {
                let mut stages = view.pipeline;
                stages.extend(cmd.pipeline.iter().cloned());
                pipeline_output(state, &req.db, Some(&view.source), &stages, &cmd.vars).await?
            }
            None => pipeline_output(state, &req.db, Some(name), &cmd.pipeline, &cmd.vars).await?,
        },
        None => pipeline_output(state, &req.db, None, &cmd.pipeline, &cmd.vars).await?,
    };
    let mut docs = output
        .iter()
        .map(RawDocumentBuf::from_document)
        .collect::<Result<VecDeque<_>, _>>()?;
    let first = cmd
        .batch_size
        .map(|b| b as usize)
        .unwrap_or(DEFAULT_FIRST_BATCH);
    let batch: Vec<RawDocumentBuf> = docs.drain(..first.min(docs.len())).collect();
    let id = if docs.is_empty() {
        0
    } else {
        state
            .cursors()
            .register(Cursor::new(ns.clone(), CursorBody::Buffered(docs), false))
    };
    Ok(cursor_reply(&ns, batch, id, true))
}
