//! The names a request carries, checked as MongoDB checks them and in its order: the database
//! as it is read off the request, the collection a command names, the database of any command
//! (a router serves no `local`), then what may be written or created.

use super::CommandInfo;
use crate::catalog::{
    check_database_name, validate_collection_name, validate_db_name, validate_user_create,
    validate_user_write,
};
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use bson::RawBsonRef;

/// Commands whose first field names a collection of the request's database.
const COLLECTION_COMMANDS: &[&str] = &[
    "find",
    "insert",
    "update",
    "delete",
    "findAndModify",
    "count",
    "distinct",
    "aggregate",
    "create",
    "drop",
    "createIndexes",
    "dropIndexes",
    "listIndexes",
    "collMod",
    "collStats",
    "killCursors",
];

/// Writes, which go only to collections clients may write.
const WRITES: &[&str] = &["insert", "update", "delete", "findAndModify"];

/// Commands that create the collection they name.
const CREATES: &[&str] = &["create", "createIndexes"];

/// What MongoDB refuses as soon as it reads `$db`, whatever the command.
pub fn check_request_database(db: &str) -> Result<()> {
    check_database_name(db)
}

/// The collection the command names, if it names one of the request's database.
fn target<'a>(request: &'a CommandRequest, command: &CommandInfo<'_>) -> Option<&'a str> {
    if !COLLECTION_COMMANDS.contains(&command.name) {
        return None;
    }
    match request.args().target() {
        Ok(RawBsonRef::String(coll)) => Some(coll),
        _ => None,
    }
}

/// The namespace a command names, as its parse checks it.
pub(super) fn check_command_namespace(
    request: &CommandRequest,
    command: &CommandInfo<'_>,
) -> Result<()> {
    match target(request, command) {
        Some(coll) => validate_collection_name(&request.db, coll),
        None => Ok(()),
    }
}

/// The database any command runs against.
pub(super) fn check_database(request: &CommandRequest, command: &CommandInfo<'_>) -> Result<()> {
    if command.router && request.db == "local" {
        return Err(MongoError::new(
            ErrorCode::IllegalOperation,
            "Can't use 'local' database through mongos",
        ));
    }
    validate_db_name(&request.db)
}

/// Writes and creations go only where clients may write and create. Other nodes write where
/// the server itself does (a database moving to a new primary takes its `system.views`).
pub(super) fn check_target(request: &CommandRequest, command: &CommandInfo<'_>) -> Result<()> {
    if command.internal {
        return Ok(());
    }
    let Some(coll) = target(request, command) else {
        return Ok(());
    };
    if WRITES.contains(&command.name) {
        validate_user_write(&request.db, coll)?;
    } else if CREATES.contains(&command.name) {
        validate_user_create(&request.db, coll)?;
    }
    Ok(())
}
