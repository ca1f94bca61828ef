//! `commitTransaction` and `abortTransaction` outside a transaction, on every role. In a
//! transaction (`autocommit: false`) a data node's participant runs them
//! (`datanode::transaction_table`), and a router its own (`router::commands::transactions`).

use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use crate::server::dispatch::{CommandSpec, NodeState};
use bson::RawDocumentBuf;

pub(super) fn commands<S: NodeState>() -> Vec<CommandSpec<S>> {
    vec![
        CommandSpec::new("abortTransaction", outside_a_transaction)
            .requires(crate::server::auth::Requires::Authenticated)
            .fields(crate::command::requests::AbortTransactionRequest::FIELDS)
            .admin_only()
            .takes_write_concern()
            .help("Aborts a transaction"),
        CommandSpec::new("commitTransaction", outside_a_transaction)
            .requires(crate::server::auth::Requires::Authenticated)
            .fields(crate::command::requests::CommitTransactionRequest::FIELDS)
            .admin_only()
            .takes_write_concern()
            .help("Commits a transaction"),
    ]
}

async fn outside_a_transaction<S: NodeState>(
    _state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let name = req.name();
    Err(MongoError::new(
        ErrorCode::InvalidOptions,
        format!("{name} can only be run within a session"),
    ))
}
