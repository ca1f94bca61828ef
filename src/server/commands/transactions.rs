//! `commitTransaction` and `abortTransaction`. docgrid has no multi-document transactions yet:
//! a statement that starts or continues one (`autocommit: false`) is refused before it runs
//! (`command::generic`), so these commands only ever meet a request outside a transaction,
//! which MongoDB's router answers as below.

use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use crate::server::dispatch::{CommandSpec, NodeState};
use bson::RawDocumentBuf;

pub(super) fn commands<S: NodeState>() -> Vec<CommandSpec<S>> {
    vec![
        CommandSpec::new("abortTransaction", outside_a_transaction)
            .fields(crate::command::requests::AbortTransactionRequest::FIELDS)
            .admin_only()
            .takes_write_concern()
            .help("Aborts a transaction"),
        CommandSpec::new("commitTransaction", outside_a_transaction)
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
