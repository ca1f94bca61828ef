//! The session and transaction fields (`lsid`, `txnNumber`, `txnRetryCounter`, `autocommit`,
//! `startTransaction`), parsed and checked as MongoDB's `OperationSessionInfo` is: their types,
//! how they combine, and which commands may carry a transaction number.

use super::CommandInfo;
use super::fields::Fields;
use super::idl;
use crate::error::{ErrorCode, MongoError, Result};
use bson::RawBsonRef;
use bson::spec::{BinarySubtype, ElementType};

const CONTEXT: &str = "OperationSessionInfo";

/// The commands that may carry a `txnNumber` outside a transaction: retryable writes (and the
/// internal commands MongoDB lets retry).
const RETRYABLE_WRITES: &[&str] = &[
    "insert",
    "update",
    "delete",
    "findAndModify",
    "bulkWrite",
    "_shardsvrCreateCollectionParticipant",
    "_shardsvrDropCollectionParticipant",
    "_shardsvrRenameCollectionParticipant",
];

/// Commands a client may send before authenticating: MongoDB refuses transaction fields on
/// them outright.
const PRE_AUTH: &[&str] = &["hello", "isMaster", "ping", "saslStart", "saslContinue"];

/// Session commands that do not run inside the session they name.
const SESSION_ADMIN: &[&str] = &["startSession", "endSessions", "refreshSessions"];

/// What the session fields say about the command.
pub(super) struct Session {
    autocommit: Option<bool>,
    /// A `txnNumber` outside a transaction: a retryable write.
    retryable_write: bool,
    pub txn_number: Option<i64>,
    /// `startTransaction: true`.
    pub start: bool,
}

impl Session {
    /// The command starts or continues a multi-document transaction.
    pub fn in_transaction(&self) -> bool {
        self.autocommit == Some(false)
    }

    /// The command is a retryable write.
    pub fn retryable_write(&self) -> bool {
        self.retryable_write
    }
}

fn invalid(message: &str) -> MongoError {
    MongoError::new(ErrorCode::InvalidOptions, message)
}

fn long(name: &str, value: Option<RawBsonRef<'_>>) -> Result<Option<i64>> {
    Ok(
        idl::typed(&format!("{CONTEXT}.{name}"), value, ElementType::Int64)?.and_then(
            |v| match v {
                RawBsonRef::Int64(n) => Some(n),
                _ => None,
            },
        ),
    )
}

/// An `lsid`: `{id: UUID, uid?: SHA-256, txnNumber?: long, txnUUID?: UUID}`; whether it names
/// an internal (child) session.
fn lsid(value: Option<RawBsonRef<'_>>) -> Result<Option<bool>> {
    let path = format!("{CONTEXT}.lsid");
    let Some(value) = idl::typed(&path, value, ElementType::EmbeddedDocument)? else {
        return Ok(None);
    };
    let Some(doc) = value.as_document() else {
        return Ok(None);
    };
    session_from_client(&path, doc).map(Some)
}

/// Checks a session as a client names it (MongoDB's strict `LogicalSessionFromClient`, at
/// `path`: `lsid`, or an entry of the session commands' lists); whether it names an internal
/// (child) session.
pub fn session_from_client(path: &str, doc: &bson::RawDocument) -> Result<bool> {
    let (mut id, mut child) = (false, false);
    idl::strict_fields(
        path,
        doc,
        &["id", "uid", "txnNumber", "txnUUID"],
        |name, value| {
            let field = format!("{path}.{name}");
            match name {
                "id" => id = idl::uuid(&field, Some(value))?,
                "uid" => {
                    let hash = idl::binary(&field, Some(value), BinarySubtype::Generic)?;
                    if let Some(hash) = hash.filter(|hash| hash.len() != 32) {
                        return Err(MongoError::new(
                            ErrorCode::UnsupportedFormat,
                            format!("Unsupported SHA256Block hash length: {}", hash.len()),
                        ));
                    }
                }
                "txnNumber" => {
                    idl::typed(&field, Some(value), ElementType::Int64)?;
                }
                _ => child = idl::uuid(&field, Some(value))?,
            }
            Ok(())
        },
    )?;
    if !id {
        return Err(idl::missing_field(&format!("{path}.id")));
    }
    Ok(child)
}

pub(super) fn check(fields: &Fields<'_>, command: &CommandInfo<'_>) -> Result<Session> {
    let child = lsid(fields.lsid)?;
    let txn_number = long("txnNumber", fields.txn_number)?;
    let retry_counter = idl::typed(
        &format!("{CONTEXT}.txnRetryCounter"),
        fields.txn_retry_counter,
        ElementType::Int32,
    )?
    .and_then(|v| v.as_i32());
    let autocommit = idl::boolean(&format!("{CONTEXT}.autocommit"), fields.autocommit)?;
    let start = idl::boolean(
        &format!("{CONTEXT}.startTransaction"),
        fields.start_transaction,
    )?;

    if PRE_AUTH.contains(&command.name) {
        if autocommit.is_some() {
            return Err(MongoError::new(
                ErrorCode::OperationNotSupportedInTransaction,
                "This command is not supported in transactions",
            ));
        }
        if txn_number.is_some() {
            return Err(MongoError::location(
                50889,
                "It is illegal to provide a txnNumber for this command",
            ));
        }
    }
    match child {
        // These commands name sessions without running in one: MongoDB reads nothing more.
        Some(_) if SESSION_ADMIN.contains(&command.name) => {
            return Ok(Session {
                autocommit: None,
                retryable_write: false,
                txn_number: None,
                start: false,
            });
        }
        Some(true) if !command.internal => {
            return Err(invalid(
                "Internal sessions are only allowed for internal clients",
            ));
        }
        Some(true) if !(txn_number.is_some() && autocommit == Some(false)) => {
            return Err(invalid(
                "Internal sessions are not supported outside of transactions",
            ));
        }
        Some(_) => {}
        None if txn_number.is_some() => {
            return Err(invalid(
                "Transaction number requires a session ID to also be specified",
            ));
        }
        None => {}
    }
    match txn_number {
        Some(n) => {
            if n < 0 {
                return Err(invalid("Transaction number cannot be negative"));
            }
            if let Some(counter) = retry_counter {
                if !command.internal {
                    return Err(invalid(
                        "txnRetryCounter is only allowed for internal clients",
                    ));
                }
                if autocommit.is_none() {
                    return Err(invalid(
                        "Cannot specify txnRetryCounter for a retryable write",
                    ));
                }
                if counter < 0 {
                    return Err(invalid("txnRetryCounter cannot be negative"));
                }
            }
        }
        None if autocommit.is_some() => {
            return Err(invalid(
                "'autocommit' field requires a transaction number to also be specified",
            ));
        }
        None => {}
    }
    match autocommit {
        Some(true) => return Err(invalid("Specifying autocommit=true is not allowed.")),
        Some(false) => {}
        None if start.is_some() => {
            return Err(invalid(
                "'startTransaction' field requires 'autocommit' field to also be specified",
            ));
        }
        None => {}
    }
    if start == Some(false) {
        return Err(invalid("Specifying startTransaction=false is not allowed."));
    }
    if autocommit.is_none() && txn_number.is_some() && !RETRYABLE_WRITES.contains(&command.name) {
        return Err(MongoError::new(
            ErrorCode::NotARetryableWriteCommand,
            format!(
                "txnNumber may only be provided for multi-document transactions and retryable \
                 write commands. autocommit:false was not provided, and {} is not a retryable \
                 write command.",
                command.name
            ),
        ));
    }
    if start == Some(true) {
        let first = match command.name {
            "killCursors" => Some(
                "Cannot run killCursors as the first operation in a multi-document transaction.",
            ),
            "commitTransaction" => Some("Cannot start a transaction with a commit"),
            "abortTransaction" => Some("Cannot start a transaction with an abort"),
            _ => None,
        };
        if let Some(message) = first {
            return Err(MongoError::new(
                ErrorCode::OperationNotSupportedInTransaction,
                message,
            ));
        }
    }
    Ok(Session {
        autocommit,
        retryable_write: txn_number.is_some() && autocommit.is_none(),
        txn_number,
        start: start == Some(true),
    })
}
