//! Snapshot reads outside transactions through the router (`readConcern: {level: "snapshot"}`
//! on find, aggregate and distinct): the router chooses the cluster time when the client gave
//! none (its clock's, as mongos does), sends it to every shard it reads from as `atClusterTime`
//! so that all of them read the same state, and names it in its reply as the shards do
//! (`cursor.atClusterTime`; `atClusterTime` for distinct).

use super::RouterState;
use crate::command::CommandRequest;
use crate::error::Result;
use crate::server::Handler;
use bson::{RawBson, RawBsonRef, RawDocumentBuf, Timestamp};
use std::sync::Arc;

/// The commands that read at a snapshot outside transactions.
const READS: &[&str] = &["find", "aggregate", "distinct"];

/// `handler`, with a snapshot read's time chosen and reported.
pub(super) fn wrap(name: &'static str, handler: Handler<RouterState>) -> Handler<RouterState> {
    if !READS.contains(&name) {
        return handler;
    }
    Arc::new(move |state, ctx, request| {
        let handler = Arc::clone(&handler);
        Box::pin(async move {
            let Some(time) = snapshot_time(state, &request)? else {
                return handler(state, ctx, request).await;
            };
            let request = with_time(request, time)?;
            let reply = handler(state, ctx, request).await?;
            crate::command::with_at_cluster_time(reply, name, time)
        })
    })
}

/// The time a snapshot read outside a transaction reads at: the client's `atClusterTime`, or
/// the router's clock now. `None`: not such a read.
fn snapshot_time(state: &RouterState, request: &CommandRequest) -> Result<Option<Timestamp>> {
    if request.body.get("autocommit")?.is_some() {
        return Ok(None);
    }
    let Some(RawBsonRef::Document(concern)) = request.body.get("readConcern")? else {
        return Ok(None);
    };
    if !matches!(concern.get("level")?, Some(RawBsonRef::String("snapshot"))) {
        return Ok(None);
    }
    Ok(Some(match concern.get("atClusterTime")? {
        Some(RawBsonRef::Timestamp(time)) => time,
        _ => state.node.clock.now(),
    }))
}

/// The request with `readConcern: {level: "snapshot", atClusterTime: time}`.
fn with_time(mut request: CommandRequest, time: Timestamp) -> Result<CommandRequest> {
    let mut body = RawDocumentBuf::new();
    for element in request.body.iter() {
        let (name, value) = element?;
        if name == "readConcern" {
            let mut concern = RawDocumentBuf::new();
            concern.append("level", "snapshot");
            concern.append("atClusterTime", RawBson::Timestamp(time));
            body.append(name, concern);
        } else {
            body.append_ref(name, value);
        }
    }
    request.body = body;
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_carries_the_time() {
        let time = Timestamp {
            time: 7,
            increment: 2,
        };
        let request = CommandRequest::from_document(
            "db",
            &bson::doc! {"find": "c", "readConcern": {"level": "snapshot"}},
        )
        .unwrap();
        let request = with_time(request, time).unwrap();
        let concern = request.body.get_document("readConcern").unwrap();
        assert_eq!(concern.get_timestamp("atClusterTime").unwrap(), time);
    }
}
