//! `commitTransaction` and `abortTransaction` on the router: they end the transaction the
//! session runs through this router (`router::transactions`), on its participants. Outside a
//! transaction they answer as MongoDB's router does.

use super::super::RouterState;
use super::super::transactions;
use crate::command::CommandRequest;
use crate::command::requests::{AbortTransactionRequest, CommitTransactionRequest};
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::{CommandSpec, RequestContext};
use bson::{RawBsonRef, RawDocumentBuf};

pub(super) fn commands() -> Vec<CommandSpec<RouterState>> {
    vec![
        CommandSpec::new("abortTransaction", abort_transaction)
            .requires(crate::server::auth::Requires::Authenticated)
            .fields(AbortTransactionRequest::FIELDS)
            .admin_only()
            .takes_write_concern()
            .help("Aborts a transaction"),
        CommandSpec::new("commitTransaction", commit_transaction)
            .requires(crate::server::auth::Requires::Authenticated)
            .fields(CommitTransactionRequest::FIELDS)
            .admin_only()
            .takes_write_concern()
            .help("Commits a transaction"),
    ]
}

/// The refusal of a transaction command sent outside a transaction.
fn outside(req: &CommandRequest) -> Result<()> {
    if matches!(
        req.body.get("autocommit")?,
        Some(RawBsonRef::Boolean(false))
    ) {
        return Ok(());
    }
    Err(MongoError::new(
        ErrorCode::InvalidOptions,
        format!("{} can only be run within a session", req.name()),
    ))
}

async fn commit_transaction(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    outside(&req)?;
    CommitTransactionRequest::parse(&req)?;
    if let Some(token) = req.body.get("recoveryToken")? {
        if !matches!(token, RawBsonRef::Document(_)) {
            return Err(MongoError::type_mismatch(
                "BSON field 'commitTransaction.recoveryToken' is the wrong type, expected type 'object'",
            ));
        }
    }
    transactions::commit(state, &req).await
}

async fn abort_transaction(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    outside(&req)?;
    AbortTransactionRequest::parse(&req)?;
    transactions::abort(state, &req).await
}
