//! The router's introspection: `$currentOp` (every shard's operations, named as mongos names
//! them — `shard`, `"<shard>:<opid>"`, `client_s` — or with `localOps` the router's own),
//! `$listLocalSessions` (the router's session cache) and `killOp` (a local op id, or
//! `"<shard>:<opid>"` sent on to that shard). `$indexStats` and `$planCacheStats` are reads of a
//! collection: routed like any aggregation, they run on the shards (`pipeline_split`).

use super::super::RouterState;
use super::super::cluster_cursor::ClusterCursor;
use super::reads::open_cursor;
use crate::aggregate::Pipeline;
use crate::command::{CommandRequest, first_batch};
use crate::error::{MongoError, Result};
use crate::server::RequestContext;
use crate::server::current_op::{CurrentOpSpec, STAGE, check_namespace, check_sources_first};
use crate::server::operations::Report;
use crate::server::sessions::list_local_sessions;
use bson::{Bson, Document, RawBsonRef, RawDocumentBuf, doc};

/// The reply of an aggregation starting with a stage the router answers itself; `None` for
/// any other pipeline.
pub(super) async fn aggregate(
    state: &RouterState,
    req: &CommandRequest,
    stages: &[Document],
) -> Result<Option<RawDocumentBuf>> {
    check_sources_first(stages)?;
    let Some((name, spec)) = stages.first().and_then(|stage| stage.iter().next()) else {
        return Ok(None);
    };
    let collection = match req.args().target()? {
        RawBsonRef::String(name) => Some(name.to_string()),
        _ => None,
    };
    let docs = match name.as_str() {
        STAGE => current_op(state, req, collection.is_none(), spec).await?,
        "$listLocalSessions" => list_local_sessions(&state.node, collection.as_deref(), spec)?,
        _ => return Ok(None),
    };
    let rest = Pipeline::parse_with_variables(&stages[1..], req.args().let_variables()?)?;
    let output = rest
        .run(docs)?
        .iter()
        .map(RawDocumentBuf::from_document)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let batch_size = match req.args().document("cursor")? {
        Some(cursor) => match cursor.get("batchSize") {
            Some(Bson::Int32(n)) if *n >= 0 => i64::from(*n),
            Some(Bson::Int64(n)) if *n >= 0 => *n,
            Some(Bson::Double(n)) if *n >= 0.0 => *n as i64,
            None => 101,
            Some(_) => {
                return Err(MongoError::bad_value(
                    "cursor.batchSize must be a non-negative number",
                ));
            }
        },
        None => {
            return Err(MongoError::failed_to_parse(
                "The 'cursor' option is required, except for aggregate with the explain argument",
            ));
        }
    };
    let coll = collection.unwrap_or_else(|| "$cmd.aggregate".to_string());
    let ns = format!("{}.{coll}", req.db);
    let cursor = ClusterCursor::from_documents(&req.db, &coll, output);
    open_cursor(state, cursor, &ns, batch_size, false, false)
        .await
        .map(Some)
}

/// `$currentOp`'s documents: the router's own operations with `localOps`, otherwise those of
/// every shard.
async fn current_op(
    state: &RouterState,
    req: &CommandRequest,
    collectionless: bool,
    spec: &Bson,
) -> Result<Vec<Document>> {
    let spec = CurrentOpSpec::parse(spec)?;
    check_namespace(&req.db, collectionless)?;
    if spec.local_ops {
        // `allUsers: false`: the client's own operations and connections (which is all
        // `localOps` may show a user without `inprog`).
        let runs_as = (!spec.all_users)
            .then(crate::server::operations::current_runs_as)
            .flatten();
        let node = &state.node;
        return Ok(node.operations.report(
            &node.host(),
            Report {
                idle_connections: spec.idle_connections,
                truncate: spec.truncate_ops,
                user: runs_as.as_ref().map(|r| &r.user),
            },
        ));
    }
    let command = doc! {
        "aggregate": 1,
        "pipeline": [{STAGE: spec.for_shards()}],
        "cursor": {"batchSize": i32::MAX},
    };
    let shards = state.shards.all(&state.config).await?;
    let replies = futures::future::join_all(shards.iter().map(|(_, client)| {
        let command = &command;
        async move {
            client
                .call(CommandRequest::from_document("admin", command)?)
                .await
        }
    }))
    .await;
    let mut out = Vec::new();
    for ((shard, _), reply) in shards.iter().zip(replies) {
        let reply = reply?;
        if let Some(error) = super::super::forward::reply_error(&reply)? {
            return Err(error);
        }
        out.extend(
            first_batch(&reply.to_document()?)
                .into_iter()
                .map(|op| as_seen_from_router(shard, op)),
        );
    }
    Ok(out)
}

/// A shard's operation as mongos reports it: `shard` first, the op id qualified with the
/// shard's name (what `killOp` on the router takes), and the client (the router's connection
/// to the shard) as `client_s`.
fn as_seen_from_router(shard: &str, op: Document) -> Document {
    let mut out = doc! {"shard": shard};
    for (name, value) in op {
        match name.as_str() {
            "opid" => {
                let id = match value {
                    Bson::Int32(n) => i64::from(n),
                    Bson::Int64(n) => n,
                    other => {
                        out.insert("opid", other);
                        continue;
                    }
                };
                out.insert("opid", format!("{shard}:{id}"));
            }
            "client" => {
                out.insert("client_s", value);
            }
            _ => {
                out.insert(name, value);
            }
        }
    }
    out
}

/// `killOp` on the router: a number is one of the router's own operations, `"<shard>:<opid>"`
/// one of a shard's (sent on as `killOp` with the shard's op id). Like mongos it answers
/// success whether or not the operation still ran.
pub(super) async fn kill_op(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let op = match req.body.get("op")? {
        Some(op) => op,
        None => return Err(MongoError::location(50759, "Did not provide \"op\" field")),
    };
    match op {
        RawBsonRef::Int32(_) | RawBsonRef::Int64(_) | RawBsonRef::Double(_) => {
            let opid = crate::server::commands::parse_op_id(&req)?;
            tracing::info!(opid, "going to kill op");
            state.node.operations.kill(opid);
            Ok(RawDocumentBuf::new())
        }
        RawBsonRef::String(text) => {
            let malformed = || {
                MongoError::location(
                    28625,
                    format!(
                        "The op argument to killOp must be of the format shardid:opid but found \"{text}\""
                    ),
                )
            };
            let (shard, id) = text.split_once(':').ok_or_else(malformed)?;
            if shard.is_empty() || id.is_empty() {
                return Err(malformed());
            }
            let client = state.shards.client(&state.config, shard).await?;
            let opid: i32 = id.parse().map_err(|_| {
                MongoError::failed_to_parse(format!("Did not consume whole string. in: {id}"))
            })?;
            tracing::info!(op = text, "about to kill op");
            // The shard's answer is not reported, as mongos does not report it.
            let _ = client
                .call(CommandRequest::from_document(
                    "admin",
                    &doc! {"killOp": 1, "op": opid},
                )?)
                .await;
            Ok(RawDocumentBuf::from_document(
                &doc! {"shard": shard, "shardid": opid},
            )?)
        }
        other => Err(MongoError::location(
            50760,
            format!(
                "\"op\" field was of unsupported type {}",
                other.element_type() as u8
            ),
        )),
    }
}

/// `profile` on the router, as on mongos: level 0 sets `slowms`, `sampleRate` and `filter` (for
/// the router's own log), -1 reads them; the router has no collections to profile into, so
/// levels 1 and 2 are refused.
pub(super) async fn profile(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let request = crate::server::profiling::ProfileRequest::parse(&req)?;
    if request.level != -1 && request.level != 0 {
        return Err(MongoError::bad_value(
            "Profiling is not permitted on mongoS: the 'profile' field should be 0 to change 'slowms', 'sampleRate', or 'filter' settings for logging, or -1 to view current values",
        ));
    }
    let profiling = &state.node.profiling;
    let next = profiling.next(&req.db, &request)?;
    Ok(RawDocumentBuf::from_document(
        &profiling.apply(&req.db, &request, next),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_operations_are_renamed_for_the_router() {
        let op = doc! {"type": "op", "opid": 12, "client": "1.2.3.4:5", "ns": "a.b"};
        let seen = as_seen_from_router("shard1", op);
        assert_eq!(seen.keys().next().unwrap(), "shard");
        assert_eq!(seen.get_str("shard").unwrap(), "shard1");
        assert_eq!(seen.get_str("opid").unwrap(), "shard1:12");
        assert_eq!(seen.get_str("client_s").unwrap(), "1.2.3.4:5");
        assert!(!seen.contains_key("client"));
        assert_eq!(seen.get_str("ns").unwrap(), "a.b");
    }
}
