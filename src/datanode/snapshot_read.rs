//! Reads at a snapshot outside transactions (`readConcern: {level: "snapshot", atClusterTime?}`
//! on find, aggregate and distinct): the command runs in a read-only storage transaction at the
//! cluster time asked for (the node's latest when none is), its cursor keeps the snapshot for
//! its `getMore`s (`cursors::Cursor::snapshot`), and the reply names the time as MongoDB's does
//! (`cursor.atClusterTime`; `atClusterTime` for distinct).

use super::DataNode;
use super::storage::StorageTransaction;
use crate::command::CommandRequest;
use crate::error::Result;
use crate::server::TransactionStatement;
use bson::{RawDocumentBuf, Timestamp};

pub async fn run_at_snapshot<S: DataNode>(
    state: &S,
    at: Option<Timestamp>,
    request: CommandRequest,
    run: TransactionStatement<'_>,
) -> Result<RawDocumentBuf> {
    let clock = &state.node().clock;
    let time = at.unwrap_or_else(|| clock.now());
    // Every write up to the time is visible before the snapshot is taken.
    clock.wait_until_visible(time).await?;
    let snapshot = StorageTransaction::at(time);
    let name = request.name().to_string();
    let reply = snapshot.scope(run(request)).await?;
    crate::command::with_at_cluster_time(reply, &name, time)
}
