//! Aggregations whose pipeline reaches other collections (`$lookup`, `$graphLookup`,
//! `$unionWith`, `$out`, `$merge`) or makes its own documents (`$documents`): the stages before
//! the first such stage run as an ordinary aggregate (targeted, split across shards, through
//! views), the rest on the router, which reaches the other collections through its own
//! command table — so each may be sharded, unsharded on any shard, or a view.

use super::super::RouterState;
use super::super::cluster_cursor::ClusterCursor;
use super::reads::{DEFAULT_FIRST_BATCH, cursor_batch_size, open_cursor};
use crate::aggregate::Pipeline;
use crate::aggregate::foreign::{Host, aggregate_all};
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::{LocalCommands, RequestContext};
use bson::{RawBsonRef, RawDocumentBuf};

pub(super) async fn run(
    state: &RouterState,
    ctx: &RequestContext,
    req: &CommandRequest,
    stages: &[bson::Document],
    start: usize,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let collection = match args.target()? {
        RawBsonRef::String(name) => Some(name.to_string()),
        _ => None,
    };
    let batch_size = cursor_batch_size(req)?;
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
    let pipeline = Pipeline::parse_with_variables(&stages[start..], args.let_variables()?)?;
    let runner = LocalCommands::new(state, ctx);
    let host = Host {
        db: &req.db,
        runner: &runner,
        write_concern: args.document("writeConcern")?,
        bypass_document_validation: args.bool("bypassDocumentValidation")?.unwrap_or(false),
    };
    let input = if makes_input {
        Vec::new()
    } else {
        let let_doc = args.document("let")?.unwrap_or_default();
        aggregate_all(
            &host,
            &req.db,
            collection.as_deref(),
            stages[..start].to_vec(),
            let_doc,
            args.value("hint")?.as_ref(),
        )
        .await?
    };
    // Each part of the output becomes BSON as it comes: a document too large to return stops
    // the run at once, before a join has multiplied the rest.
    let mut output = Vec::new();
    let mut keep = |batch: Vec<bson::Document>| {
        for doc in &batch {
            output.push(crate::command::result_document(doc)?);
        }
        Ok(())
    };
    let mut run = pipeline.start();
    keep(run.push(input)?)?;
    run.finish_with_into(&host, &mut keep).await?;
    let coll = collection.as_deref().unwrap_or("$cmd.aggregate");
    let ns = format!("{}.{coll}", req.db);
    let cursor = ClusterCursor::from_documents(&req.db, coll, output);
    open_cursor(
        state,
        cursor,
        &ns,
        batch_size.unwrap_or(DEFAULT_FIRST_BATCH),
        false,
        false,
    )
    .await
}
