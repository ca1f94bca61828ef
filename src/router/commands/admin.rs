//! Router administration: `isdbgrid`, `flushRouterConfig`.

use super::super::RouterState;
use crate::command::CommandRequest;
use crate::error::Result;
use crate::server::RequestContext;
use bson::{RawDocumentBuf, rawdoc};

pub(super) async fn isdbgrid(
    state: &RouterState,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    Ok(rawdoc! {"isdbgrid": 1, "hostname": state.node.host()})
}

/// Drops the cached routing table; the next requests reload it from the config server.
pub(super) async fn flush_router_config(
    state: &RouterState,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    state.databases.clear();
    state.collections.clear();
    state.shards.reload(&state.config).await?;
    Ok(rawdoc! {"flushed": true})
}
