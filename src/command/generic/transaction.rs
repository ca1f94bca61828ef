//! What a command of a multi-document transaction may be and carry, checked as MongoDB's
//! `validateSessionOptions` and `TransactionParticipant` checks it on every role: the commands a
//! transaction may run, its databases, and where a read or write concern may appear.

use super::read_concern::ReadConcern;
use super::{CommandInfo, pipeline_writes};
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};

/// The commands a transaction may run (MongoDB's transaction allowlist).
const ALLOWED: &[&str] = &[
    "abortTransaction",
    "aggregate",
    "bulkWrite",
    "commitTransaction",
    "coordinateCommitTransaction",
    "create",
    "createIndexes",
    "delete",
    "distinct",
    "find",
    "findAndModify",
    "getMore",
    "insert",
    "killCursors",
    "prepareTransaction",
    "update",
];

/// The commands that end a transaction: they alone take a write concern, and run on `admin`.
const ENDING: &[&str] = &[
    "abortTransaction",
    "commitTransaction",
    "coordinateCommitTransaction",
    "prepareTransaction",
];

/// The read concern levels a transaction may run at.
const LEVELS: &[&str] = &["local", "majority", "snapshot"];

fn not_supported(message: String) -> MongoError {
    MongoError::new(ErrorCode::OperationNotSupportedInTransaction, message)
}

pub(super) fn check(
    request: &CommandRequest,
    command: &CommandInfo<'_>,
    start: bool,
    read_concern: Option<&ReadConcern>,
    write_concern: bool,
) -> Result<()> {
    let name = command.name;
    if !ALLOWED.contains(&name) {
        return Err(not_supported(format!(
            "Cannot run '{name}' in a multi-document transaction."
        )));
    }
    let ending = ENDING.contains(&name);
    match request.db.as_str() {
        "config" | "local" => {
            return Err(not_supported(format!(
                "Cannot run command against the '{}' database in a transaction.",
                request.db
            )));
        }
        // `bulkWrite` names its namespaces itself and always runs on `admin`.
        "admin" if !ending && name != "bulkWrite" => {
            return Err(not_supported(
                "Cannot run command against the 'admin' database in a transaction.".into(),
            ));
        }
        _ => {}
    }
    if name == "aggregate" && pipeline_writes(request) {
        return Err(not_supported(
            "$out and $merge cannot be used in a transaction".into(),
        ));
    }
    if write_concern && !ending {
        return Err(MongoError::new(
            ErrorCode::InvalidOptions,
            "Cannot set write concern after starting a transaction.",
        ));
    }
    if let Some(read_concern) = read_concern {
        if !start {
            return Err(MongoError::new(
                ErrorCode::InvalidOptions,
                "Only the first command in a transaction may specify a readConcern",
            ));
        }
        if read_concern.level().is_some_and(|l| !LEVELS.contains(&l)) {
            return Err(MongoError::new(
                ErrorCode::InvalidOptions,
                "The readConcern level must be either 'local' (default), 'majority' or \
                 'snapshot' in order to run in a transaction",
            ));
        }
    }
    Ok(())
}
