//! `commitTransaction`, `abortTransaction` and `prepareTransaction` on a data node. In a
//! transaction (`autocommit: false`) the transaction participant runs them
//! (`transaction_table::run_in_transaction`); these handlers answer only a request outside one.

use super::super::DataNode;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use bson::RawDocumentBuf;

/// Fields of the commands that end a transaction, besides the generic ones.
pub const COMMIT_FIELDS: &[&str] = &["commitTimestamp", "recoveryToken"];
pub const ABORT_FIELDS: &[&str] = &["recoveryToken"];

/// Any of the three, sent outside a transaction.
pub(super) async fn outside_transaction<S: DataNode>(
    _state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    Err(MongoError::new(
        ErrorCode::InvalidOptions,
        format!("{} must be run within a transaction", req.name()),
    ))
}
