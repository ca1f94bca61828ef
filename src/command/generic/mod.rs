//! The generic arguments every command may carry (session and transaction fields, read and
//! write concerns, the API version, read preference, cluster time), duplicate fields and the
//! request's namespace: checked once per request, on every role, before any handler runs, with
//! MongoDB's errors and in MongoDB's order, including what a command of a multi-document
//! transaction may carry. What docgrid cannot do yet is refused here, so no handler ever
//! ignores it.

mod api;
pub mod audit;
mod fields;
mod idl;
mod metadata;
mod names;
mod read_concern;
mod session;
mod transaction;

pub use metadata::SignedClusterTime;
pub use names::check_request_database;
pub use session::session_from_client;

use super::{CommandRequest, WriteConcern, max_time};
use crate::error::{ErrorCode, MongoError, Result};
use bson::{RawBsonRef, RawDocumentBuf};

/// What the dispatcher knows about the command a request runs.
pub struct CommandInfo<'a> {
    /// The command's canonical name (`findAndModify` for `findandmodify`).
    pub name: &'a str,
    /// The name the request used (`isMaster` for `hello`'s older name).
    pub requested: &'a str,
    /// The command accepts a `writeConcern`.
    pub takes_write_concern: bool,
    /// The request comes from another node of the cluster.
    pub internal: bool,
    /// The node is a router (mongos).
    pub router: bool,
}

/// What the checks found that matters once the command has run.
#[derive(Debug, Default)]
pub struct GenericArgs {
    /// The command's write concern, when it takes one.
    write_concern: Option<WriteConcern>,
    /// The `$clusterTime` the request gossiped.
    pub cluster_time: Option<SignedClusterTime>,
    /// `readConcern.afterClusterTime`: the command sees every write up to it.
    pub after_cluster_time: Option<bson::Timestamp>,
    /// The command is a retryable write (`txnNumber` outside a transaction).
    pub retryable_write: bool,
    /// The multi-document transaction the command runs in (`autocommit: false`).
    pub transaction: Option<TransactionArgs>,
    /// `readConcern.level` as the request gave it.
    pub read_concern_level: Option<&'static str>,
    /// `readConcern.atClusterTime`.
    pub at_cluster_time: Option<bson::Timestamp>,
    /// `$audit`: whom another node runs the command for.
    pub impersonation: Option<audit::Impersonation>,
}

/// A command of a multi-document transaction: its number, whether it starts it, and the read
/// concern the first command gives the transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransactionArgs {
    pub txn_number: i64,
    /// `startTransaction: true`: the transaction's first command.
    pub start: bool,
    /// `readConcern.level` (the first command only).
    pub read_concern_level: Option<&'static str>,
    /// `readConcern.atClusterTime` (level `snapshot`; the first command only).
    pub at_cluster_time: Option<bson::Timestamp>,
}

impl GenericArgs {
    /// A successful reply with the `writeConcernError` the concern calls for (more nodes, or
    /// a mode, than a single-node shard has), unless the command reported one already.
    pub fn complete_reply(&self, reply: RawDocumentBuf) -> Result<RawDocumentBuf> {
        let Some(error) = self.write_concern.as_ref().and_then(WriteConcern::error) else {
            return Ok(reply);
        };
        if !crate::error::raw_reply_ok(&reply) || reply.get("writeConcernError")?.is_some() {
            return Ok(reply);
        }
        let mut reply = reply;
        reply.append("writeConcernError", RawDocumentBuf::from_document(&error)?);
        Ok(reply)
    }
}

/// Checks a request's generic arguments and namespace; `Err` is the reply.
pub fn check(request: &CommandRequest, command: &CommandInfo<'_>) -> Result<GenericArgs> {
    let fields = fields::Fields::read(request.body.as_ref())?;
    if fields.max_time_ms_typo {
        return Err(MongoError::new(
            ErrorCode::InvalidOptions,
            "no such command option $maxTimeMs; use maxTimeMS instead",
        ));
    }
    max_time(&request.args())?;
    api::check(&fields, request.body.as_ref(), command)?;
    if let Some(name) = fields.duplicate {
        return Err(idl::duplicate_field(&format!("{}.{name}", command.name)));
    }
    names::check_command_namespace(request, command)?;
    let session = session::check(&fields, command)?;
    let write_concern = WriteConcern::from_field(fields.write_concern)?;
    let read_concern = read_concern::ReadConcern::parse(fields.read_concern, command)?;
    if session.in_transaction() {
        transaction::check(
            request,
            command,
            session.start,
            read_concern.as_ref(),
            WriteConcern::specified(fields.write_concern),
        )?;
    }
    let takes_write_concern = supports_write_concern(command);
    if WriteConcern::specified(fields.write_concern) && !takes_write_concern {
        return Err(MongoError::new(
            ErrorCode::InvalidOptions,
            "Command does not support writeConcern",
        ));
    }
    // Clients may only name themselves as a concern's source, as mongos checks.
    if takes_write_concern
        && command.router
        && !command.internal
        && write_concern
            .provenance()
            .is_some_and(|p| p != "clientSupplied")
    {
        return Err(MongoError::new(
            ErrorCode::InvalidOptions,
            "writeConcern provenance must be unset or \"clientSupplied\"",
        ));
    }
    if let Some(read_concern) = read_concern.as_ref().filter(|_| !session.in_transaction()) {
        read_concern.check_supported(command)?;
    }
    names::check_database(request, command)?;
    metadata::read_preference(fields.read_preference)?;
    let cluster_time = metadata::cluster_time(fields.cluster_time)?;
    let impersonation = audit::Impersonation::parse(fields.audit)?;
    names::check_target(request, command)?;
    Ok(GenericArgs {
        write_concern: takes_write_concern.then_some(write_concern),
        cluster_time,
        after_cluster_time: read_concern.as_ref().and_then(|r| r.after_cluster_time()),
        retryable_write: session.retryable_write(),
        transaction: session.in_transaction().then(|| TransactionArgs {
            txn_number: session.txn_number.unwrap_or_default(),
            start: session.start,
            read_concern_level: read_concern.as_ref().and_then(|r| r.level()),
            at_cluster_time: read_concern.as_ref().and_then(|r| r.at_cluster_time()),
        }),
        read_concern_level: read_concern.as_ref().and_then(|r| r.level()),
        at_cluster_time: read_concern.as_ref().and_then(|r| r.at_cluster_time()),
        impersonation,
    })
}

/// Whether MongoDB accepts a `writeConcern` on this command. Commands between nodes are
/// exempt (MongoDB's internal commands take one); `endSessions` is sent by mongosh at exit with
/// `{w: 0}` and no reply is read, so refusing it would only leave its sessions behind.
fn supports_write_concern(command: &CommandInfo<'_>) -> bool {
    command.takes_write_concern
        || command.name.starts_with('_')
        || command.name == "endSessions"
        // `aggregate` takes a write concern for its `$out`/`$merge` and accepts it without them
        // (drivers send a collection's write concern with every aggregation).
        || command.name == "aggregate"
}

/// An aggregation ending in `$out` or `$merge` writes, and so takes a write concern.
pub(super) fn pipeline_writes(request: &CommandRequest) -> bool {
    let Ok(Some(RawBsonRef::Array(stages))) = request.body.get("pipeline") else {
        return false;
    };
    let Some(Ok(RawBsonRef::Document(last))) = stages.into_iter().last() else {
        return false;
    };
    matches!(last.into_iter().next(), Some(Ok(("$out" | "$merge", _))))
}

/// A read or write concern's `provenance`: one of MongoDB's sources.
pub(crate) fn provenance(field: &str, value: RawBsonRef<'_>) -> Result<&'static str> {
    const SOURCES: [&str; 5] = [
        "clientSupplied",
        "implicitDefault",
        "customDefault",
        "getLastErrorDefaults",
        "internalWriteDefault",
    ];
    match value {
        RawBsonRef::String(s) => SOURCES
            .into_iter()
            .find(|source| *source == s)
            .ok_or_else(|| {
                MongoError::bad_value(format!(
                    "Enumeration value '{s}' for field '{field}' is not a valid value."
                ))
            }),
        other => Err(idl::wrong_type(field, other, "string")),
    }
}

#[cfg(test)]
mod tests;
