//! `explain` on the router (and `aggregate` with `explain: true`): the explained command goes to
//! the shard that owns the collection, and its plan is wrapped the way mongos wraps per-shard
//! plans (`SINGLE_SHARD` with a `shards` list; aggregations list their shards by name).

use super::super::RouterState;
use crate::command::{CommandRequest, EXPLAINABLE, ExplainRequest, Verbosity};
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::{NodeState, RequestContext};
use bson::{Bson, Document, RawDocumentBuf, doc};
use std::time::Instant;

pub(super) async fn explain(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let explain = ExplainRequest::parse(&req)?;
    let name = explain.command.name().to_string();
    if !EXPLAINABLE.contains(&name.as_str()) {
        return Err(if state.commands().get(&name).is_some() {
            MongoError::new(
                ErrorCode::IllegalOperation,
                format!("Cannot explain cmd: {name}"),
            )
        } else {
            MongoError::new(
                ErrorCode::CommandNotFound,
                format!("Explain failed due to unknown command: {name}"),
            )
        });
    }
    let mut forwarded = explain.command.body.to_document()?;
    forwarded.remove("$db");
    let outgoing = CommandRequest::from_document(
        req.db.clone(),
        &doc! {"explain": forwarded, "verbosity": explain.verbosity.as_str()},
    )?;
    wrap(
        state,
        outgoing,
        &explain.command,
        explain.verbosity,
        name == "aggregate",
    )
    .await
}

/// `aggregate` with `explain: true`: explained at `queryPlanner` verbosity.
pub(super) async fn explain_aggregate(
    state: &RouterState,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    wrap(state, req.clone(), &req, Verbosity::QueryPlanner, true).await
}

/// Sends `outgoing` to the collection's shard and wraps its reply.
async fn wrap(
    state: &RouterState,
    outgoing: CommandRequest,
    explained: &CommandRequest,
    verbosity: Verbosity,
    aggregate: bool,
) -> Result<RawDocumentBuf> {
    let started = Instant::now();
    let db = explained.db.clone();
    let mut out = match state.send_to_primary(outgoing, false).await? {
        Some((shard, reply)) => {
            let shard_reply = reply.to_document()?;
            if let Some(e) = MongoError::from_reply(&shard_reply) {
                return Err(e);
            }
            let shard_name = state.shard_name_of(&db).await?;
            let millis = i32::try_from(started.elapsed().as_millis()).unwrap_or(i32::MAX);
            if aggregate {
                aggregate_result(&shard_name, shard.host(), shard_reply)
            } else {
                single_shard(&shard_name, shard.host(), shard_reply, verbosity, millis)
            }
        }
        // No database, so no collection: nothing to scan on any shard.
        None => doc! {
            "queryPlanner": {
                "mongosPlannerVersion": 1,
                "winningPlan": {"stage": "EOF"},
            },
        },
    };
    let mut command = explained.body.to_document()?;
    command.insert("$db", db);
    out.insert("command", command);
    out.insert("serverInfo", state.node.server_info());
    Ok(RawDocumentBuf::from_document(&out)?)
}

/// mongos's shape for a command that ran on one shard.
fn single_shard(
    shard_name: &str,
    host: &str,
    mut reply: Document,
    verbosity: Verbosity,
    millis: i32,
) -> Document {
    let mut planner = doc! {"shardName": shard_name, "connectionString": host};
    if let Some(Bson::String(v)) = reply.get("explainVersion") {
        planner.insert("explainVersion", v.clone());
    }
    if let Some(Bson::Document(info)) = reply.remove("serverInfo") {
        planner.insert("serverInfo", info);
    }
    if let Some(Bson::Document(shard_planner)) = reply.remove("queryPlanner") {
        planner.extend(shard_planner);
    }
    let mut out = doc! {
        "explainVersion": "1",
        "queryPlanner": {
            "mongosPlannerVersion": 1,
            "winningPlan": {"stage": "SINGLE_SHARD", "shards": [planner]},
        },
    };
    if !verbosity.executes() {
        return out;
    }
    let Some(Bson::Document(stats)) = reply.remove("executionStats") else {
        return out;
    };
    let number = |name: &str| stats.get(name).cloned().unwrap_or(Bson::Int32(0));
    let mut shard_stats = doc! {"shardName": shard_name};
    for (k, v) in &stats {
        if k != "allPlansExecution" {
            shard_stats.insert(k.clone(), v.clone());
        }
    }
    let mut top = doc! {
        "nReturned": number("nReturned"),
        "executionTimeMillis": millis,
        "totalKeysExamined": number("totalKeysExamined"),
        "totalDocsExamined": number("totalDocsExamined"),
        "executionStages": {
            "stage": "SINGLE_SHARD",
            "nReturned": number("nReturned"),
            "executionTimeMillis": millis,
            "totalKeysExamined": number("totalKeysExamined"),
            "totalDocsExamined": number("totalDocsExamined"),
            "totalChildMillis": number("executionTimeMillis"),
            "shards": [shard_stats],
        },
    };
    if verbosity == Verbosity::AllPlansExecution {
        let plans = stats
            .get("allPlansExecution")
            .cloned()
            .unwrap_or(Bson::Array(Vec::new()));
        top.insert(
            "allPlansExecution",
            vec![doc! {"shardName": shard_name, "allPlans": plans}],
        );
    }
    out.insert("executionStats", top);
    out
}

/// mongos's shape for an aggregation that ran entirely on one shard.
fn aggregate_result(shard_name: &str, host: &str, mut reply: Document) -> Document {
    reply.remove("command");
    reply.remove("ok");
    let mut shard = doc! {"host": host};
    shard.extend(reply);
    doc! {
        "explainVersion": "1",
        "splitPipeline": Bson::Null,
        "shards": {shard_name: shard},
    }
}
