//! `$currentOp` on a shard or config server: the commands this node is running and the
//! sessions holding a transaction between commands.

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
    let mut out = node.operations.report(
        &node.host(),
        Report {
            idle_connections: spec.idle_connections,
            truncate: spec.truncate_ops,
        },
    );
    // Sessions holding a transaction between its commands.
    if spec.idle_sessions {
        let limit = node
            .params
            .get_i64("transactionLifetimeLimitSeconds")
            .unwrap_or(60)
            .max(1);
        out.extend(
            state
                .transaction_table()
                .idle_sessions(&node.host(), std::time::Duration::from_secs(limit as u64)),
        );
    }
    Ok(out)
}
