//! The aggregation source stages a node answers from its own state rather than a collection:
//! `$currentOp`, `$listLocalSessions` (`server::sessions`), `$indexStats` and
//! `$planCacheStats`. Each makes the documents the rest of the pipeline then runs over.
//! `$listSessions` reads `config.system.sessions`, where routers flush their session caches.

mod current_op;
mod index_stats;
mod plan_cache_stats;

use super::super::DataNode;
use super::aggregate::AggregateCommand;
use crate::aggregate::Pipeline;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::current_op::check_sources_first;
use crate::server::sessions::{list_local_sessions, owners_filter, parse_list_sessions};
use bson::Document;
use std::sync::Arc;

/// Whether `stage` is one of these stages (which the pipeline parser does not know).
pub(super) fn answers(stage: &str) -> bool {
    matches!(
        stage,
        "$currentOp" | "$listLocalSessions" | "$indexStats" | "$listSessions" | "$planCacheStats"
    )
}

/// The pipeline's output when it starts with one of these stages; `None` otherwise.
pub(super) async fn run<S: DataNode>(
    state: &S,
    req: &CommandRequest,
    cmd: &AggregateCommand,
) -> Result<Option<Vec<Document>>> {
    check_sources_first(&cmd.pipeline)?;
    let Some((name, spec)) = cmd.pipeline.first().and_then(|stage| stage.iter().next()) else {
        return Ok(None);
    };
    let collection = cmd.collection.as_deref();
    let docs = match name.as_str() {
        "$currentOp" => current_op::documents(state, req, collection, spec)?,
        "$listLocalSessions" => list_local_sessions(state.node(), collection, spec)?,
        "$indexStats" => {
            let coll = required_collection(name, collection)?;
            index_stats::documents(state, &req.db, coll, spec).await?
        }
        "$listSessions" => {
            if req.db != "config" || collection != Some("system.sessions") {
                return Err(MongoError::new(
                    ErrorCode::InvalidNamespace,
                    "$listSessions may only be run against config.system.sessions",
                ));
            }
            let owners = parse_list_sessions(name, spec)?;
            let mut stages = vec![bson::doc! {"$match": owners_filter(&owners)}];
            stages.extend(cmd.pipeline[1..].iter().cloned());
            let docs = super::aggregate::pipeline_output(
                state, &req.db, collection, &stages, &cmd.vars, None,
            )
            .await?;
            return Ok(Some(docs));
        }
        "$planCacheStats" => {
            let coll = required_collection(name, collection)?;
            plan_cache_stats::documents(state, &req.db, coll, spec).await?
        }
        _ => return Ok(None),
    };
    let rest = Pipeline::parse_with_variables(&cmd.pipeline[1..], Arc::clone(&cmd.vars))?;
    Ok(Some(rest.run(docs)?))
}

/// The collection a collection-level stage reports on.
fn required_collection<'a>(stage: &str, collection: Option<&'a str>) -> Result<&'a str> {
    collection.ok_or_else(|| {
        MongoError::new(
            ErrorCode::InvalidNamespace,
            format!("{{aggregate: 1}} is not valid for '{stage}'; a collection is required."),
        )
    })
}
