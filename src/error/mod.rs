//! The one error type every role uses: a MongoDB error code with its message and extra info,
//! turned into `{ok: 0, errmsg, code, codeName, ...}` in exactly one place ([`MongoError::to_reply`]).

mod codes;

pub use codes::{ErrorCategory, ErrorCode};

use bson::{Bson, Document, doc};
use std::fmt;

/// A MongoDB error: what a command answers when it fails.
#[derive(Clone, Debug, PartialEq)]
pub struct MongoError {
    code: ErrorCode,
    message: String,
    /// Fields MongoDB attaches next to `code` (e.g. `keyPattern`/`keyValue` for DuplicateKey,
    /// `db`/`vReceived`/`vWanted` for StaleDbVersion).
    extra: Option<Box<Document>>,
    labels: Vec<String>,
}

/// The label telling drivers a retryable write may be retried.
pub const RETRYABLE_WRITE_ERROR: &str = "RetryableWriteError";

/// Whether a data node labels the failure of a retryable write RetryableWriteError, as
/// MongoDB's `ErrorLabelBuilder` does: its code (`code`), or the code of its write concern
/// error (`write_concern_code`), is retriable. Only for a client that is not another node of
/// the cluster (a router handles a shard's retriable errors itself, and a router labels only
/// its own shutdown errors while it shuts down).
pub fn is_retryable_write_error(
    code: Option<ErrorCode>,
    write_concern_code: Option<ErrorCode>,
) -> bool {
    [code, write_concern_code]
        .into_iter()
        .flatten()
        .any(|code| code.is(ErrorCategory::RetriableError))
}

/// The label telling drivers the whole transaction may be retried.
pub const TRANSIENT_TRANSACTION_ERROR: &str = "TransientTransactionError";

/// The label of a command refused because the server is overloaded: it ran nothing.
pub const SYSTEM_OVERLOADED_ERROR: &str = "SystemOverloadedError";

/// The label telling drivers a transaction's commit may or may not have happened.
pub const UNKNOWN_TRANSACTION_COMMIT_RESULT: &str = "UnknownTransactionCommitResult";

/// Whether a transaction's failure with `code` is labelled TransientTransactionError, as
/// MongoDB's `isTransientTransactionError` decides: conflicts, snapshot and routing errors
/// always; on a commit or abort, NoSuchTransaction unless a write concern error came with it
/// (the outcome may then still roll back); on any other command, also retriable errors and
/// NoSuchTransaction.
pub fn is_transient_transaction_error(
    code: ErrorCode,
    has_write_concern_error: bool,
    commit_or_abort: bool,
) -> bool {
    use ErrorCode::*;
    let transient = matches!(
        code,
        WriteConflict
            | LockTimeout
            | PreparedTransactionInProgress
            | ShardCannotRefreshDueToLocksHeld
            | SnapshotTooOld
            | SnapshotUnavailable
            | StaleChunkHistory
            | MigrationConflict
            | StaleDbVersion
    ) || code.is(ErrorCategory::NeedRetargettingError);
    if commit_or_abort {
        transient || (code == NoSuchTransaction && !has_write_concern_error)
    } else {
        transient || code.is(ErrorCategory::RetriableError) || code == NoSuchTransaction
    }
}

/// The first write error of a write reply whose code is a transient transaction error (a
/// write conflict reported for one statement), as an error: in a transaction it fails the
/// whole command, as MongoDB rethrows it, since the client retries the whole transaction.
pub fn transient_write_error(reply: &bson::RawDocument) -> Option<MongoError> {
    let Ok(Some(bson::RawBsonRef::Array(errors))) = reply.get("writeErrors") else {
        return None;
    };
    errors.into_iter().find_map(|error| {
        let bson::RawBsonRef::Document(error) = error.ok()? else {
            return None;
        };
        let Ok(Some(bson::RawBsonRef::Int32(code))) = error.get("code") else {
            return None;
        };
        let code = ErrorCode::from_code(code);
        if !is_transient_transaction_error(code, false, false) {
            return None;
        }
        let message = match error.get("errmsg") {
            Ok(Some(bson::RawBsonRef::String(m))) => m.to_string(),
            _ => String::new(),
        };
        Some(MongoError::new(code, message))
    })
}

/// Results of everything that can fail with a MongoDB error.
pub type Result<T, E = MongoError> = std::result::Result<T, E>;

impl MongoError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        MongoError {
            code: code.named(),
            message: message.into(),
            extra: None,
            labels: Vec::new(),
        }
    }

    /// Attaches MongoDB's extra error info; the fields appear at the top level of the reply.
    pub fn with_extra(mut self, extra: Document) -> Self {
        self.extra = Some(Box::new(extra));
        self
    }

    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.labels.push(label.into());
        self
    }

    pub fn code(&self) -> ErrorCode {
        self.code
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn extra(&self) -> Option<&Document> {
        self.extra.as_deref()
    }

    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// Whether an idempotent internal hop that failed this way may simply be sent again: the
    /// node was unreachable, shutting down or not primary, or the error says so.
    pub fn retryable_hop(&self) -> bool {
        let code = self.code;
        code.is(ErrorCategory::NetworkError)
            || code.is(ErrorCategory::ShutdownError)
            || code.is(ErrorCategory::NotPrimaryError)
            || code.is(ErrorCategory::RetriableError)
            || matches!(
                code,
                ErrorCode::HostUnreachable | ErrorCode::NetworkInterfaceExceededTimeLimit
            )
    }

    pub fn bad_value(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadValue, message)
    }

    pub fn type_mismatch(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::TypeMismatch, message)
    }

    pub fn failed_to_parse(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::FailedToParse, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InternalError, message)
    }

    pub fn invalid_namespace(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidNamespace, message)
    }

    pub fn namespace_not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NamespaceNotFound, message)
    }

    /// An error from a bare code number, named from the one table: a code MongoDB names
    /// (40415 is `IDLUnknownField`) gets its name; only unnamed codes stay `Location<n>`.
    pub fn location(code: i32, message: impl Into<String>) -> Self {
        Self::new(ErrorCode::from_code(code), message)
    }

    /// The command reply for this error.
    pub fn to_reply(&self) -> Document {
        let mut reply = doc! {
            "ok": 0.0,
            "errmsg": self.message.as_str(),
            "code": self.code.code(),
            "codeName": self.code.name().as_ref(),
        };
        if let Some(extra) = &self.extra {
            for (k, v) in extra.iter() {
                reply.insert(k.clone(), v.clone());
            }
        }
        if !self.labels.is_empty() {
            reply.insert("errorLabels", self.labels.clone());
        }
        reply
    }

    /// The `writeErrors[]` entry for this error at batch position `index`.
    pub fn to_write_error(&self, index: usize) -> Document {
        let mut entry = doc! {
            "index": index as i32,
            "code": self.code.code(),
            "errmsg": self.message.as_str(),
        };
        if let Some(extra) = &self.extra {
            for (k, v) in extra.iter() {
                entry.insert(k.clone(), v.clone());
            }
        }
        entry
    }

    /// Rebuilds the error from a failed command reply received from another node, keeping the
    /// extra info so that a router can pass it on unchanged. Returns `None` for `ok: 1` replies.
    pub fn from_reply(reply: &Document) -> Option<Self> {
        if reply_ok(reply) {
            return None;
        }
        let code = reply
            .get("code")
            .and_then(bson_as_i32)
            .unwrap_or(ErrorCode::UnknownError.code());
        let message = reply
            .get_str("errmsg")
            .unwrap_or("unknown error")
            .to_string();
        let mut extra = Document::new();
        let mut labels = Vec::new();
        for (k, v) in reply.iter() {
            match k.as_str() {
                "ok" | "errmsg" | "code" | "codeName" | "$clusterTime" | "operationTime" => {}
                "errorLabels" => {
                    if let Bson::Array(items) = v {
                        labels.extend(items.iter().filter_map(|l| l.as_str().map(String::from)));
                    }
                }
                _ => {
                    extra.insert(k.clone(), v.clone());
                }
            }
        }
        let mut err = MongoError::new(ErrorCode::from_code(code), message);
        if !extra.is_empty() {
            err = err.with_extra(extra);
        }
        err.labels = labels;
        Some(err)
    }
}

/// Whether a command reply succeeded: the one definition every role uses. MongoDB reads `ok` as
/// a number or a boolean, true when non-zero; any other type is a failure. A reply without
/// `ok` has not failed: a command's handler builds its reply without it and the dispatcher
/// adds `ok: 1` on the way out (`server::dispatch`), so every reply on the wire — all a driver
/// sees — carries it, and a reply built in this process (a router's merged reply) is read
/// before it has it.
pub fn ok_value(ok: Option<bson::RawBsonRef<'_>>) -> bool {
    use bson::RawBsonRef;
    match ok {
        None => true,
        Some(RawBsonRef::Double(v)) => v != 0.0,
        Some(RawBsonRef::Int32(v)) => v != 0,
        Some(RawBsonRef::Int64(v)) => v != 0,
        Some(RawBsonRef::Boolean(v)) => v,
        Some(_) => false,
    }
}

/// [`ok_value`] of a reply as received (raw bytes).
pub fn raw_reply_ok(reply: &bson::RawDocument) -> bool {
    ok_value(reply.get("ok").ok().flatten())
}

/// [`ok_value`] of a reply already turned into a document.
pub fn reply_ok(reply: &Document) -> bool {
    // The scalar types `ok` can usefully have convert without allocating.
    let ok = reply
        .get("ok")
        .and_then(|v| bson::RawBson::try_from(v.clone()).ok());
    ok_value(ok.as_ref().map(bson::RawBson::as_raw_bson_ref))
}

fn bson_as_i32(v: &Bson) -> Option<i32> {
    match v {
        Bson::Int32(v) => Some(*v),
        Bson::Int64(v) => i32::try_from(*v).ok(),
        Bson::Double(v) => Some(*v as i32),
        _ => None,
    }
}

impl fmt::Display for MongoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.code.name(),
            self.code.code(),
            self.message
        )
    }
}

impl std::error::Error for MongoError {}

impl From<bson::raw::Error> for MongoError {
    fn from(e: bson::raw::Error) -> Self {
        MongoError::new(ErrorCode::InvalidBSON, format!("invalid BSON: {e}"))
    }
}

impl From<bson::de::Error> for MongoError {
    fn from(e: bson::de::Error) -> Self {
        MongoError::new(ErrorCode::InvalidBSON, format!("invalid BSON: {e}"))
    }
}

impl From<bson::ser::Error> for MongoError {
    fn from(e: bson::ser::Error) -> Self {
        MongoError::new(ErrorCode::InvalidBSON, format!("cannot encode BSON: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_code_takes_its_name_from_the_table() {
        let err = MongoError::location(40415, "BSON field 'find.x' is an unknown field.");
        assert_eq!(err.code(), ErrorCode::IDLUnknownField);
        assert_eq!(
            err.to_reply().get_str("codeName").unwrap(),
            "IDLUnknownField"
        );
        let err = MongoError::new(ErrorCode::Location(16), "x");
        assert_eq!(err.code(), ErrorCode::InvalidLength);
        assert_eq!(ErrorCode::Location(11000).name(), "DuplicateKey");
        // Only codes MongoDB does not name stay locations.
        let err = MongoError::location(51024, "x");
        assert_eq!(err.code(), ErrorCode::Location(51024));
        assert_eq!(err.to_reply().get_str("codeName").unwrap(), "Location51024");
    }

    #[test]
    fn reply_carries_code_name_and_extra_info() {
        let err = MongoError::new(ErrorCode::DuplicateKey, "E11000 duplicate key error")
            .with_extra(doc! {"keyPattern": {"_id": 1}, "keyValue": {"_id": 1}});
        let reply = err.to_reply();
        assert_eq!(reply.get_f64("ok").unwrap(), 0.0);
        assert_eq!(reply.get_i32("code").unwrap(), 11000);
        assert_eq!(reply.get_str("codeName").unwrap(), "DuplicateKey");
        assert_eq!(reply.get_document("keyPattern").unwrap(), &doc! {"_id": 1});
        assert_eq!(MongoError::from_reply(&reply), Some(err));
    }

    #[test]
    fn ok_replies_are_not_errors() {
        assert!(MongoError::from_reply(&doc! {"ok": 1}).is_none());
        assert!(MongoError::from_reply(&doc! {"ok": true}).is_none());
        assert!(MongoError::from_reply(&doc! {"ok": 0.0}).is_some());
        assert!(MongoError::from_reply(&doc! {"ok": 1_i64}).is_none());
        assert!(MongoError::from_reply(&doc! {"ok": false}).is_some());
        // A reply without `ok` (not yet through the dispatcher) has not failed; an `ok` of
        // another type is no success.
        assert!(MongoError::from_reply(&doc! {"n": 1}).is_none());
        assert!(MongoError::from_reply(&doc! {"ok": "1"}).is_some());
        assert!(raw_reply_ok(&bson::rawdoc! {"ok": 1.0}));
        assert!(!raw_reply_ok(&bson::rawdoc! {"ok": 0}));
        assert!(raw_reply_ok(&bson::rawdoc! {"n": 1}));
    }
}
