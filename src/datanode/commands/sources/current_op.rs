//! `$currentOp` on a shard or config server: the commands this node is running and the
//! sessions holding a transaction between commands.

use super::super::super::DataNode;
use crate::command::CommandRequest;
use crate::datanode::transaction_table::lifetime_limit;
use crate::error::Result;
use crate::server::current_op::{CurrentOpSpec, check_namespace};
use crate::server::operations::Report;
use crate::server::sessions::LogicalSessionId;
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
    // A transaction's statement shows its transaction.
    let table = state.transaction_table();
    for op in out.iter_mut() {
        let session = op
            .get_document("lsid")
            .ok()
            .and_then(LogicalSessionId::of_document);
        if let Some(transaction) = session.and_then(|s| table.running_transaction(&s)) {
            op.insert("transaction", transaction);
        }
    }
    out.extend(state.background_operations());
    // Sessions holding a transaction between its commands.
    if spec.idle_sessions {
        out.extend(table.idle_sessions(&node.host(), lifetime_limit(state)));
    }
    Ok(out)
}
