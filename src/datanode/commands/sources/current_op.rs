//! `$currentOp` on a shard or config server: the commands this node is running and the
//! sessions holding a transaction between commands.

use super::super::super::DataNode;
use crate::command::CommandRequest;
use crate::datanode::transaction_table::lifetime_limit;
use crate::error::Result;
use crate::server::current_op::{CurrentOpSpec, check_namespace};
use crate::server::operations::Report;
use crate::server::sessions::{LogicalSessionId, user_digest};
use bson::{Bson, Document};

pub(super) fn documents<S: DataNode>(
    state: &S,
    req: &CommandRequest,
    collection: Option<&str>,
    spec: &Bson,
) -> Result<Vec<Document>> {
    let spec = CurrentOpSpec::parse(spec)?;
    check_namespace(&req.db, collection.is_none())?;
    // `allUsers: false` shows the operations, connections and sessions of the user the
    // command runs for (the router names its client's); without authentication, or for an
    // internal caller, there is no user and everything is shown, as MongoDB's.
    let runs_as = (!spec.all_users)
        .then(crate::server::operations::current_runs_as)
        .flatten();
    let user = runs_as.as_ref().map(|r| &r.user);
    let node = state.node();
    let mut out = node.operations.report(
        &node.host(),
        Report {
            idle_connections: spec.idle_connections,
            truncate: spec.truncate_ops,
            user,
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
    // The node's own work (migrations, range deletions) runs for no user.
    if user.is_none() {
        out.extend(state.background_operations());
    }
    // Sessions holding a transaction between its commands: a user's are those whose `uid`
    // is that user's digest.
    if spec.idle_sessions {
        let digest = user.map(|u| user_digest(&u.user, &u.db));
        let sessions = table.idle_sessions(&node.host(), lifetime_limit(state));
        out.extend(sessions.into_iter().filter(|session| {
            digest.is_none_or(|digest| {
                let lsid = session.get_document("lsid").ok();
                lsid.and_then(LogicalSessionId::of_document)
                    .is_some_and(|id| id.uid == digest)
            })
        }));
    }
    Ok(out)
}
