//! `profile` on a data node: sets or reads a database's profiling (`server::profiling`); a level
//! of 1 or 2 makes the database's capped `system.profile` when the database exists, as mongod
//! does. The entries are written by `datanode::profiler`.

use super::super::DataNode;
use crate::command::CommandRequest;
use crate::error::Result;
use crate::server::RequestContext;
use crate::server::profiling::ProfileRequest;
use bson::RawDocumentBuf;

pub(super) async fn profile<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let request = ProfileRequest::parse(&req)?;
    let profiling = &state.node().profiling;
    let next = profiling.next(&req.db, &request)?;
    if next.level > 0 {
        if let Some(store) = state.storage().database(&req.db).await {
            crate::datanode::profiler::profile_collection(&store).await?;
        }
    }
    let reply = profiling.apply(&req.db, &request, next);
    Ok(RawDocumentBuf::from_document(&reply)?)
}
