//! `getMore` and `killCursors` on the router: forwarded to the shard behind the cursor.

use super::super::RouterState;
use super::super::forward::replace_cursor_id;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use bson::{Bson, RawBsonRef, RawDocumentBuf, doc};

pub(super) async fn get_more(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let id = match args.target()? {
        RawBsonRef::Int64(id) => id,
        other => {
            return Err(MongoError::type_mismatch(format!(
                "BSON field 'getMore.getMore' is the wrong type '{}', expected type 'long'",
                crate::command::bson_type_name(other.element_type())
            )));
        }
    };
    let collection = args.str("collection")?.ok_or_else(|| {
        MongoError::new(
            ErrorCode::IDLFailedToParse,
            "BSON field 'getMore.collection' is missing but a required field",
        )
    })?;
    let cursor = state.cursors.get(id).ok_or_else(|| {
        MongoError::new(
            ErrorCode::CursorNotFound,
            format!("cursor id {id} not found"),
        )
    })?;
    let ns = format!("{}.{collection}", req.db);
    if cursor.ns != ns {
        return Err(MongoError::new(
            ErrorCode::Unauthorized,
            format!(
                "Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {}",
                cursor.ns
            ),
        ));
    }
    let mut forwarded = doc! {"getMore": cursor.shard_cursor_id, "collection": collection};
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
            Some(RawBsonRef::Int64(next)) => Some(next),
            _ => None,
        },
        _ => None,
    };
    match shard_id {
        // The shard reported an error: the cursor is gone there too.
        None => {
            state.cursors.remove(id);
            Ok(reply)
        }
        Some(0) => {
            state.cursors.remove(id);
            Ok(reply)
        }
        Some(_) => replace_cursor_id(&reply, id),
    }
}

pub(super) async fn kill_cursors(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let collection = args.collection()?;
    let ns = format!("{}.{collection}", req.db);
    let ids = args.array("cursors")?.ok_or_else(|| {
        MongoError::new(
            ErrorCode::IDLFailedToParse,
            "BSON field 'killCursors.cursors' is missing but a required field",
        )
    })?;
    let (mut killed, mut not_found) = (Vec::new(), Vec::new());
    for id in ids {
        let Bson::Int64(id) = id else {
            return Err(MongoError::type_mismatch(
                "BSON field 'killCursors.cursors' is the wrong type, expected type 'long'",
            ));
        };
        match state.cursors.get(id) {
            Some(cursor) if cursor.ns == ns => {
                state.cursors.remove(id);
                let kill = doc! {"killCursors": collection, "cursors": [cursor.shard_cursor_id]};
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
    Ok(RawDocumentBuf::from_document(&doc! {
        "cursorsKilled": killed,
        "cursorsNotFound": not_found,
        "cursorsAlive": Bson::Array(vec![]),
        "cursorsUnknown": Bson::Array(vec![]),
    })?)
}
