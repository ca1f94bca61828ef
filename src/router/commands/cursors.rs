//! `getMore` and `killCursors` on the router: forwarded to the shard behind a cursor, served
//! by the cluster cursor merging several shards' cursors, or by the router's part of a pipeline.

use super::super::RouterState;
use super::super::cursors::{CursorSource, RouterCursor};
use super::super::forward::replace_cursor_id;
use crate::command::{CommandRequest, GetMore, KillCursors, cursor_reply};
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use crate::server::auth::privileges::{Privilege, Resource, allows};
use crate::server::auth::privileges_of;
use crate::server::auth::requires::namespace_resource;
use crate::server::sessions::{check_cursor_session, request_session};
use bson::{Bson, RawBsonRef, RawDocumentBuf, doc};

pub(super) async fn get_more(
    state: &RouterState,
    ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let cmd = GetMore::parse(&req)?;
    let cursor = state.cursors.get(cmd.cursor_id).ok_or_else(|| {
        MongoError::new(
            ErrorCode::CursorNotFound,
            format!("cursor id {} not found", cmd.cursor_id),
        )
    })?;
    if !opened_by_caller(state, ctx, &cursor) {
        return Err(MongoError::new(
            ErrorCode::Unauthorized,
            format!(
                "cursor id {} was not created by the authenticated user",
                cmd.cursor_id
            ),
        ));
    }
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
    // The session the getMore runs in (a nested command's, as a pipeline's reads of this
    // router's own cursors: its outer command's).
    let session = request_session();
    check_cursor_session(cmd.cursor_id, cursor.session.as_ref(), session.as_ref())?;
    let (client, shard_cursor_id, collection) = match &cursor.source {
        CursorSource::Shard {
            client,
            cursor_id,
            collection,
        } => (client, *cursor_id, collection),
        CursorSource::Cluster(cluster) => {
            let mut cluster = cluster.lock().await;
            let batch = match cluster.next_batch(cmd.batch_size).await {
                Ok(batch) => batch,
                Err(e) => {
                    cluster.kill().await;
                    state.cursors.remove(cmd.cursor_id);
                    return Err(e);
                }
            };
            let id = if cluster.is_exhausted() {
                cluster.kill().await;
                state.cursors.remove(cmd.cursor_id);
                0
            } else {
                cmd.cursor_id
            };
            return Ok(cursor_reply(&cursor.ns, batch, id, false));
        }
        CursorSource::Pipeline(run) => {
            let mut run = run.lock().await;
            let batch =
                super::router_pipeline::get_more(state, ctx, &mut run, cmd.batch_size).await;
            let id = match &batch {
                Ok(_) if !run.exhausted() => cmd.cursor_id,
                _ => {
                    state.cursors.remove(cmd.cursor_id);
                    0
                }
            };
            return Ok(cursor_reply(&cursor.ns, batch?, id, false));
        }
    };
    let mut forwarded = doc! {"getMore": shard_cursor_id, "collection": collection};
    for field in ["batchSize", "maxTimeMS", "comment"] {
        if let Some(value) = req.body.get(field)? {
            forwarded.insert(field, Bson::try_from(value.to_raw_bson())?);
        }
    }
    // A cursor opened in a transaction reads on in it.
    let forwarded = super::super::transactions::attach(
        None,
        client.host(),
        CommandRequest::from_document(&req.db, &forwarded)?,
    )?;
    let reply = client.call(forwarded).await?;
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
    ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let cmd = KillCursors::parse(&req)?;
    let ns = cmd.namespace(&req.db);
    // Every cursor named is checked before any is killed, as MongoDB's authorization check
    // runs before the command: another user's cursor needs `killAnyCursor`.
    let others = cmd
        .cursor_ids
        .iter()
        .filter_map(|id| state.cursors.get(*id));
    if others
        .into_iter()
        .any(|c| !opened_by_caller(state, ctx, &c))
    {
        let any_cursor = |resource| Privilege::new(resource, &["killAnyCursor"]);
        let granted = privileges_of(state, ctx).await?.unwrap_or_default();
        let on = [Resource::Cluster, namespace_resource(&ns)];
        if !on.into_iter().any(|r| allows(&granted, &[any_cursor(r)])) {
            return Err(MongoError::new(
                ErrorCode::Unauthorized,
                format!("not authorized to kill cursor on {ns}"),
            ));
        }
    }
    let (mut killed, mut not_found) = (Vec::new(), Vec::new());
    for id in cmd.cursor_ids {
        match state.cursors.get(id) {
            Some(cursor) if cursor.ns == ns => {
                state.cursors.remove(id);
                close(state, ctx, &req.db, cursor).await?;
                killed.push(id);
            }
            _ => not_found.push(id),
        }
    }
    KillCursors::reply(killed, not_found)
}

/// Whether the caller's user opened `cursor` (MongoDB's coauthorization check): only that
/// user may read on it. Without authorization, and for calls between roles in this process
/// (a pipeline reading the router's own cursors), anyone may.
fn opened_by_caller(state: &RouterState, ctx: &RequestContext, cursor: &RouterCursor) -> bool {
    if !state.node.authorization || ctx.in_process() {
        return true;
    }
    let user = ctx.auth().user.as_ref().map(|u| u.name.clone());
    cursor.owner == user
}

/// Closes what is behind a router cursor; a shard cursor that cannot be reached dies with its
/// idle timeout.
pub(in crate::router) async fn close(
    state: &RouterState,
    ctx: &RequestContext,
    db: &str,
    cursor: RouterCursor,
) -> Result<()> {
    match cursor.source {
        CursorSource::Shard {
            client,
            cursor_id,
            collection,
        } => {
            let kill = doc! {"killCursors": collection, "cursors": [cursor_id]};
            let _ = client.call(CommandRequest::from_document(db, &kill)?).await;
        }
        CursorSource::Cluster(cluster) => cluster.lock().await.kill().await,
        CursorSource::Pipeline(run) => {
            super::router_pipeline::kill(state, ctx, &mut *run.lock().await).await
        }
    }
    Ok(())
}
