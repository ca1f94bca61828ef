//! `getMore` and `killCursors` on the router: forwarded to the shard behind the cursor.

use super::super::RouterState;
use super::super::forward::replace_cursor_id;
use crate::command::{CommandRequest, GetMore, KillCursors};
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use bson::{Bson, RawBsonRef, RawDocumentBuf, doc};

pub(super) async fn get_more(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let cmd = GetMore::parse(&req)?;
    let cursor = state.cursors.get(cmd.cursor_id).ok_or_else(|| {
        MongoError::new(
            ErrorCode::CursorNotFound,
            format!("cursor id {} not found", cmd.cursor_id),
        )
    })?;
    let ns = cmd.namespace(&req.db);
    if cursor.ns != ns {
        return Err(MongoError::new(
            ErrorCode::Unauthorized,
            format!(
                "Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {}",
                cursor.ns
            ),
        ));
    }
    let mut forwarded = doc! {"getMore": cursor.shard_cursor_id, "collection": &cmd.collection};
    for field in ["batchSize", "maxTimeMS", "comment"] {
        if let Some(value) = req.body.get(field)? {
            forwarded.insert(field, Bson::try_from(value.to_raw_bson())?);
        }
    }
    let reply = cursor
        .shard
        .call(CommandRequest::from_document(&req.db, &forwarded)?)
        .await?;
    let shard_id = match reply.get("cursor")? {
        Some(RawBsonRef::Document(c)) => match c.get("id")? {
            Some(RawBsonRef::Int64(next)) => next,
            _ => 0,
        },
        // An error: the shard cursor is gone.
        _ => 0,
    };
    if shard_id == 0 {
        state.cursors.remove(cmd.cursor_id);
        return Ok(reply);
    }
    replace_cursor_id(&reply, cmd.cursor_id)
}

pub(super) async fn kill_cursors(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let cmd = KillCursors::parse(&req)?;
    let ns = cmd.namespace(&req.db);
    let (mut killed, mut not_found) = (Vec::new(), Vec::new());
    for id in cmd.cursor_ids {
        match state.cursors.get(id) {
            Some(cursor) if cursor.ns == ns => {
                state.cursors.remove(id);
                let kill =
                    doc! {"killCursors": &cmd.collection, "cursors": [cursor.shard_cursor_id]};
                // The shard cursor dies with its idle timeout if this fails.
                let _ = cursor
                    .shard
                    .call(CommandRequest::from_document(&req.db, &kill)?)
                    .await;
                killed.push(id);
            }
            _ => not_found.push(id),
        }
    }
    KillCursors::reply(killed, not_found)
}
