//! `$currentOp` on a shard or config server: the commands this node is running.

use super::super::super::DataNode;
use crate::command::CommandRequest;
use crate::error::Result;
use crate::server::current_op::{CurrentOpSpec, check_namespace};
use crate::server::operations::Report;
use bson::{Bson, Document};

pub(super) fn documents<S: DataNode>(
    state: &S,
    req: &CommandRequest,
    collection: Option<&str>,
    spec: &Bson,
) -> Result<Vec<Document>> {
    let spec = CurrentOpSpec::parse(spec)?;
    check_namespace(&req.db, collection.is_none())?;
    // Without authentication every operation is the current user's: `allUsers` selects
    // nothing more.
    let node = state.node();
    Ok(node.operations.report(
        &node.host(),
        Report {
            idle_connections: spec.idle_connections,
            truncate: spec.truncate_ops,
        },
    ))
}
