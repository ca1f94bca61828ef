//! `explain` on the router (and `aggregate` with `explain: true`): the explained command goes to
//! the shard that owns the collection, and its plan is wrapped the way mongos wraps per-shard
//! plans (`SINGLE_SHARD` with a `shards` list; aggregations list their shards by name).

use super::super::RouterState;
use super::super::forward::{check_routable, on_config_server};
use super::super::targeting::{By, Filter};
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

/// Sends `outgoing` to the shards the explained command targets and wraps their replies.
async fn wrap(
    state: &RouterState,
    outgoing: CommandRequest,
    explained: &CommandRequest,
    verbosity: Verbosity,
    aggregate: bool,
) -> Result<RawDocumentBuf> {
    let started = Instant::now();
    let db = explained.db.clone();
    let outgoing = match aggregate {
        true => without_router_part(outgoing)?,
        false => outgoing,
    };
    let mut out = match send_explain(state, &outgoing, explained).await? {
        Some(replies) => {
            let millis = i32::try_from(started.elapsed().as_millis()).unwrap_or(i32::MAX);
            if aggregate {
                aggregate_result(replies, explained)?
            } else {
                let stage = match (replies.len(), explained.name()) {
                    (1, _) => "SINGLE_SHARD",
                    (_, "update" | "delete" | "findAndModify" | "findandmodify") => "SHARD_WRITE",
                    (_, "find")
                        if explained
                            .args()
                            .document("sort")?
                            .is_some_and(|s| !s.is_empty()) =>
                    {
                        "SHARD_MERGE_SORT"
                    }
                    _ => "SHARD_MERGE",
                };
                merged(replies, verbosity, millis, stage)
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

/// The filter that targets an explained command: `filter` (find), `query` (count, distinct,
/// findAndModify), the statement's `q` (update, delete), a leading `$match` (aggregate).
fn targeting_filter(explained: &CommandRequest) -> Result<Document> {
    let args = explained.args();
    Ok(match explained.name() {
        "find" => args.document("filter")?,
        "update" | "delete" => {
            let field = if explained.name() == "update" {
                "updates"
            } else {
                "deletes"
            };
            explained
                .document_array(field)?
                .first()
                .and_then(|s| s.get_document("q").ok())
                .map(Document::try_from)
                .transpose()?
        }
        "aggregate" => args
            .array("pipeline")?
            .and_then(|stages| match stages.first() {
                Some(Bson::Document(stage)) => stage.get_document("$match").ok().cloned(),
                _ => None,
            }),
        _ => args.document("query")?,
    }
    .unwrap_or_default())
}

/// One shard's reply to an explained command.
struct ShardExplain {
    shard: String,
    host: String,
    reply: Document,
}

/// Sends the explain to every targeted shard (with its version). `None` when the database
/// does not exist.
async fn send_explain(
    state: &RouterState,
    outgoing: &CommandRequest,
    explained: &CommandRequest,
) -> Result<Option<Vec<ShardExplain>>> {
    check_routable(&outgoing.db)?;
    if on_config_server(&outgoing.db) {
        let reply = state.config.call(outgoing.clone()).await?.to_document()?;
        if let Some(e) = MongoError::from_reply(&reply) {
            return Err(e);
        }
        let host = state.config.host().to_string();
        return Ok(Some(vec![ShardExplain {
            shard: "config".into(),
            host,
            reply,
        }]));
    }
    let ns = match explained.args().target()? {
        bson::RawBsonRef::String(coll) => Some(format!("{}.{coll}", explained.db)),
        _ => None,
    };
    let filter = &targeting_filter(explained)?;
    let collation = &super::reads::request_collation(explained)?;
    let routed = state.route(&outgoing.db, ns.as_deref(), false, |placement| async move {
        let by = By::Filter(Filter::Document(filter));
        let collation = placement.collation_for(collation.clone())?;
        let target = placement.target_under(by, collation.as_deref())?;
        state.gather(&placement, target.shards(), outgoing).await
    });
    let Some(replies) = routed.await? else {
        return Ok(None);
    };
    replies
        .into_iter()
        .map(|r| {
            Ok(ShardExplain {
                host: r.client.host().to_string(),
                shard: r.shard,
                reply: r.reply.to_document()?,
            })
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// mongos's shape for a command that ran on one shard (`SINGLE_SHARD`) or several
/// (`SHARD_MERGE`, `SHARD_MERGE_SORT`, `SHARD_WRITE`): each shard's plan and statistics under
/// `shards`, the statistics summed at the top.
fn merged(replies: Vec<ShardExplain>, verbosity: Verbosity, millis: i32, stage: &str) -> Document {
    let mut planners = Vec::with_capacity(replies.len());
    let mut shard_stats = Vec::new();
    let mut all_plans = Vec::new();
    for ShardExplain {
        shard,
        host,
        mut reply,
    } in replies
    {
        let mut planner = doc! {"shardName": &shard, "connectionString": host};
        if let Some(Bson::String(v)) = reply.get("explainVersion") {
            planner.insert("explainVersion", v.clone());
        }
        if let Some(Bson::Document(info)) = reply.remove("serverInfo") {
            planner.insert("serverInfo", info);
        }
        if let Some(Bson::Document(shard_planner)) = reply.remove("queryPlanner") {
            planner.extend(shard_planner);
        }
        planners.push(planner);
        if let Some(Bson::Document(stats)) = reply.remove("executionStats") {
            let mut entry = doc! {"shardName": &shard};
            for (k, v) in &stats {
                if k != "allPlansExecution" {
                    entry.insert(k.clone(), v.clone());
                }
            }
            let plans = stats
                .get("allPlansExecution")
                .cloned()
                .unwrap_or(Bson::Array(Vec::new()));
            all_plans.push(doc! {"shardName": &shard, "allPlans": plans});
            shard_stats.push(entry);
        }
    }
    let mut out = doc! {
        "explainVersion": "1",
        "queryPlanner": {
            "mongosPlannerVersion": 1,
            "winningPlan": {"stage": stage, "shards": planners},
        },
    };
    if !verbosity.executes() || shard_stats.is_empty() {
        return out;
    }
    let stat = |s: &Document, name: &str| match s.get(name) {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        _ => 0,
    };
    let sum = |name: &str| -> Bson {
        let total: i64 = shard_stats.iter().map(|s| stat(s, name)).sum();
        i32::try_from(total)
            .map(Bson::Int32)
            .unwrap_or(Bson::Int64(total))
    };
    let child_millis = shard_stats
        .iter()
        .map(|s| stat(s, "executionTimeMillis"))
        .max()
        .unwrap_or(0);
    let mut top = doc! {
        "nReturned": sum("nReturned"),
        "executionTimeMillis": millis,
        "totalKeysExamined": sum("totalKeysExamined"),
        "totalDocsExamined": sum("totalDocsExamined"),
        "executionStages": {
            "stage": stage,
            "nReturned": sum("nReturned"),
            "executionTimeMillis": millis,
            "totalKeysExamined": sum("totalKeysExamined"),
            "totalDocsExamined": sum("totalDocsExamined"),
            "totalChildMillis": child_millis,
            "shards": shard_stats,
        },
    };
    if verbosity == Verbosity::AllPlansExecution {
        top.insert("allPlansExecution", all_plans);
    }
    out.insert("executionStats", top);
    out
}

/// mongos's shape for an aggregation: on one shard the whole pipeline ran there
/// (`splitPipeline: null`); on several the shards ran their part and the router the rest
/// (`mergeType: "mongos"`, `pipeline_split`).
/// An explained aggregation as the shards see it: without the stages the router runs itself
/// (`router_pipeline`), which reach other collections.
fn without_router_part(outgoing: CommandRequest) -> Result<CommandRequest> {
    let mut body = outgoing.body.to_document()?;
    let command = match body.get_mut("explain") {
        Some(Bson::Document(inner)) => inner,
        _ => &mut body,
    };
    let stages: Vec<Document> = match command.get_array("pipeline") {
        Ok(stages) => stages
            .iter()
            .filter_map(|s| s.as_document().cloned())
            .collect(),
        Err(_) => return Ok(outgoing),
    };
    let Some(start) = crate::router::pipeline_split::router_part_start(&stages) else {
        return Ok(outgoing);
    };
    command.insert("pipeline", stages[..start].to_vec());
    body.remove("$db");
    CommandRequest::from_document(outgoing.db.clone(), &body)
}

fn aggregate_result(replies: Vec<ShardExplain>, explained: &CommandRequest) -> Result<Document> {
    let stages = crate::aggregate::request::pipeline(explained)?;
    let router_start = crate::router::pipeline_split::router_part_start(&stages);
    let split = replies.len() > 1 || router_start.is_some();
    let mut shards = Document::new();
    for ShardExplain {
        shard,
        host,
        mut reply,
    } in replies
    {
        reply.remove("command");
        reply.remove("ok");
        let mut entry = doc! {"host": host};
        entry.extend(reply);
        shards.insert(shard, entry);
    }
    if !split {
        return Ok(doc! {"explainVersion": "1", "splitPipeline": Bson::Null, "shards": shards});
    }
    let start = router_start.unwrap_or(stages.len());
    let (shards_part, mut merger_part) = if shards.len() > 1 {
        let split = crate::router::pipeline_split::split(&stages[..start]);
        (split.shards_part_explained(), split.merger_part)
    } else {
        (stages[..start].to_vec(), Vec::new())
    };
    merger_part.extend_from_slice(&stages[start..]);
    Ok(doc! {
        "explainVersion": "1",
        "mergeType": "mongos",
        "splitPipeline": {"shardsPart": shards_part, "mergerPart": merger_part},
        "shards": shards,
    })
}
