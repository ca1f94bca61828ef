//! CRUD commands on the router: each goes to the primary shard of its database (or the config
//! server for `config`/`admin`); cursors are adopted so `getMore` finds its shard again.

use super::super::RouterState;
use crate::command::{CommandRequest, cursor_reply};
use crate::error::Result;
use crate::server::RequestContext;
use crate::server::stats::Stats;
use bson::{RawDocumentBuf, rawdoc};
use std::sync::atomic::AtomicI64;

/// Writes create the database when it does not exist yet.
async fn write(state: &RouterState, req: CommandRequest) -> Result<RawDocumentBuf> {
    let (_, reply) = state
        .send_to_primary(req, true)
        .await?
        .expect("writes create the database");
    Ok(reply)
}

/// A batched write: counted per statement in `opcounters`, as mongos counts them.
async fn batch_write(
    state: &RouterState,
    req: CommandRequest,
    field: &str,
    counter: fn(&Stats) -> &AtomicI64,
) -> Result<RawDocumentBuf> {
    let statements = req.document_array(field)?.len();
    Stats::add(counter(&state.node.stats), statements as i64);
    write(state, req).await
}

pub(super) async fn insert(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    batch_write(state, req, "documents", |s| &s.op_insert).await
}

pub(super) async fn update(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    batch_write(state, req, "updates", |s| &s.op_update).await
}

pub(super) async fn delete(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    batch_write(state, req, "deletes", |s| &s.op_delete).await
}

pub(super) async fn find_and_modify(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    write(state, req).await
}

/// The namespace a cursor over `req`'s collection reports.
fn namespace(req: &CommandRequest) -> Result<String> {
    Ok(match req.args().target()? {
        bson::RawBsonRef::String(coll) => format!("{}.{coll}", req.db),
        _ => format!("{}.$cmd.{}", req.db, req.name()),
    })
}

/// Reads returning a cursor: an empty cursor when the database does not exist.
async fn cursor_read(state: &RouterState, req: CommandRequest) -> Result<RawDocumentBuf> {
    let ns = namespace(&req)?;
    match state.send_to_primary(req, false).await? {
        Some((shard, reply)) => state.adopt_cursor(&shard, reply),
        None => Ok(cursor_reply(&ns, Vec::new(), 0, true)),
    }
}

pub(super) async fn find(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    cursor_read(state, req).await
}

pub(super) async fn aggregate(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    if req.args().bool("explain")? == Some(true) {
        return super::explain::explain_aggregate(state, req).await;
    }
    cursor_read(state, req).await
}

pub(super) async fn count(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    Ok(state
        .send_to_primary(req, false)
        .await?
        .map(|(_, r)| r)
        .unwrap_or_else(|| rawdoc! {"n": 0}))
}

pub(super) async fn distinct(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    Ok(state
        .send_to_primary(req, false)
        .await?
        .map(|(_, r)| r)
        .unwrap_or_else(|| rawdoc! {"values": []}))
}
