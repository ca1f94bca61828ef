//! `prepareTransaction` on a data node (`commitTransaction` and `abortTransaction` are every
//! role's, in `server::commands`). In a transaction (`autocommit: false`) the transaction
//! participant runs it (`transaction_table::run_in_transaction`); this handler answers only a
//! request outside one.

use super::super::DataNode;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use bson::RawDocumentBuf;

/// `prepareTransaction` sent outside a transaction.
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
