//! `commitTransaction` and `abortTransaction`. docgrid has no multi-document transactions yet:
//! a statement that starts or continues one (`autocommit: false`) is refused before it runs
//! (`command::generic`), so these commands only ever meet a request outside a transaction,
//! which MongoDB's router answers as below.

use crate::error::{ErrorCode, MongoError, Result};
use crate::server::dispatch::{CommandSpec, NodeState};
use bson::RawDocumentBuf;

pub(super) fn commands<S: NodeState>() -> Vec<CommandSpec<S>> {
    vec![
        CommandSpec::new("abortTransaction", |_, _, _| {
            Box::pin(outside_a_transaction("abortTransaction"))
        })
        .admin_only()
        .takes_write_concern()
        .help("Aborts a transaction"),
        CommandSpec::new("commitTransaction", |_, _, _| {
            Box::pin(outside_a_transaction("commitTransaction"))
        })
        .admin_only()
        .takes_write_concern()
        .help("Commits a transaction"),
    ]
}

async fn outside_a_transaction(name: &str) -> Result<RawDocumentBuf> {
    Err(MongoError::new(
        ErrorCode::InvalidOptions,
        format!("{name} can only be run within a session"),
    ))
}
