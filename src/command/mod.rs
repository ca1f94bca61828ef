//! A command as every role receives and sends it: the target database, the body, and any
//! OP_MSG document sequences. The in-process transport and TCP carry exactly this.

mod args;
mod bulk_write;
mod collation;
mod cursor_commands;
mod explain;
pub mod generic;
mod max_time;
mod replies;
pub mod requests;
mod sharding_state;
mod write_concern;

pub use args::{Args, Fields, bson_type_name};
pub use bulk_write::{
    BULK_WRITE_COUNTS, BULK_WRITE_CURSOR_NS, BulkNamespace, BulkOp, BulkOpKind, BulkWrite,
};
pub use collation::{check_collation, parse_collation};
pub use cursor_commands::{GetMore, KillCursors, missing};
pub use explain::{EXPLAINABLE, ExplainRequest, Verbosity};
pub use max_time::{max_time, time_limit_exceeded, within};
pub use replies::{
    MAX_BATCH_BYTES, MAX_INTERNAL_OBJECT_SIZE, cursor_reply, fill_batch, first_batch,
    result_document, with_at_cluster_time,
};
pub use requests::{GENERIC_ARGUMENTS, check_known_fields, is_generic_argument};
pub use sharding_state::{NamespaceVersion, ShardingState};
pub use write_concern::WriteConcern;

use crate::error::{ErrorCode, MongoError, Result};
use crate::wire::{DocumentSequence, OpMsg};

/// Fields every command may carry that are about the request (session, transaction, time limit,
/// concerns, API version, comment), not parameters of the command itself: MongoDB's generic
/// arguments ([`GENERIC_ARGUMENTS`]) and any other `$`-prefixed name.
pub fn is_generic_field(name: &str) -> bool {
    name.starts_with('$') || is_generic_argument(name)
}
use bson::{Document, RawArrayBuf, RawDocument, RawDocumentBuf};
use std::sync::OnceLock;

/// One command: `body` is the kind-0 section (with or without `$db`), `sequences` the kind-1
/// sections, which MongoDB treats as array fields of the body.
#[derive(Debug)]
pub struct CommandRequest {
    pub db: String,
    name: String,
    pub body: RawDocumentBuf,
    pub sequences: Vec<DocumentSequence>,
    /// The request's sharding state, parsed from the body at its first use.
    sharding: OnceLock<Result<ShardingState>>,
}

/// A clone parses its sharding state again: a copy is usually changed before it is sent (a
/// router attaches versions to it).
impl Clone for CommandRequest {
    fn clone(&self) -> Self {
        CommandRequest {
            db: self.db.clone(),
            name: self.name.clone(),
            body: self.body.clone(),
            sequences: self.sequences.clone(),
            sharding: OnceLock::new(),
        }
    }
}

impl CommandRequest {
    /// A command on `db`; the command name is the body's first field.
    pub fn new(db: impl Into<String>, body: RawDocumentBuf) -> Result<Self> {
        let name = match body.iter().next() {
            Some(Ok((key, _))) => key.to_string(),
            Some(Err(e)) => return Err(e.into()),
            None => {
                return Err(MongoError::new(
                    ErrorCode::Location(40571),
                    "Empty command document",
                ));
            }
        };
        Ok(CommandRequest {
            db: db.into(),
            name,
            body,
            sequences: Vec::new(),
            sharding: OnceLock::new(),
        })
    }

    pub fn from_document(db: impl Into<String>, body: &Document) -> Result<Self> {
        Self::new(db, RawDocumentBuf::from_document(body)?)
    }

    /// The command an OP_MSG carries; `$db` is required, as in MongoDB.
    pub fn from_op_msg(msg: OpMsg) -> Result<Self> {
        let db = match msg.body.get("$db")? {
            Some(bson::RawBsonRef::String(db)) => db.to_string(),
            Some(_) => {
                return Err(MongoError::type_mismatch(
                    "BSON field '$db' is the wrong type, expected type 'string'",
                ));
            }
            None => {
                return Err(MongoError::new(
                    ErrorCode::Location(40571),
                    "OP_MSG requests require a $db argument",
                ));
            }
        };
        let mut request = Self::new(db, msg.body)?;
        request.sequences = msg.sequences;
        Ok(request)
    }

    pub fn with_sequence(
        mut self,
        identifier: impl Into<String>,
        documents: Vec<RawDocumentBuf>,
    ) -> Self {
        // A sequence (`nsInfo`) may carry versions: parsed again if it was read already.
        self.sharding = OnceLock::new();
        self.sequences.push(DocumentSequence {
            identifier: identifier.into(),
            documents,
        });
        self
    }

    /// Gives the body's field `name` the value `value` (at its end), or drops it for `None`.
    pub fn replace_field(&mut self, name: &str, value: Option<bson::RawBson>) {
        if matches!(self.body.get(name), Ok(Some(_))) {
            let mut rebuilt = RawDocumentBuf::new();
            for (field, value) in self.body.iter().flatten() {
                if field != name {
                    rebuilt.append(field, value.to_raw_bson());
                }
            }
            self.body = rebuilt;
        }
        if let Some(value) = value {
            self.body.append(name, value);
        }
    }

    /// The command name (the body's first field).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The OP_MSG for this command, with `$db` added when the body lacks it.
    pub fn to_op_msg(&self) -> OpMsg {
        let body = if self.body.get("$db").ok().flatten().is_some() {
            self.body.clone()
        } else {
            let mut body = self.body.clone();
            body.append("$db", self.db.clone());
            body
        };
        OpMsg {
            flags: Default::default(),
            body,
            sequences: self.sequences.clone(),
        }
    }

    /// The versions a router attached and the namespaces they apply to ([`ShardingState`]),
    /// parsed once: at the first call (the shard's `before_command`), later calls return it.
    /// The body must not change after that call (a changed copy is a clone, which parses again).
    pub fn sharding(&self) -> Result<&ShardingState> {
        self.sharding
            .get_or_init(|| ShardingState::parse(self))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Typed access to the body's fields, with MongoDB's error messages.
    pub fn args(&self) -> Args<'_> {
        Args::new(&self.name, &self.body)
    }

    /// The body's fields read in one pass, for a parse that looks up many of them.
    pub fn fields(&self) -> Result<Fields<'_>> {
        Fields::read(&self.name, &self.body)
    }

    /// The documents of an array argument that may come in the body or as a document sequence
    /// (`documents`, `updates`, `deletes`), as MongoDB merges them.
    pub fn document_array(&self, field: &str) -> Result<Vec<&RawDocument>> {
        let in_body = self.body.get(field)?;
        let sequence = self.sequences.iter().find(|s| s.identifier == field);
        match (in_body, sequence) {
            (Some(_), Some(_)) => Err(MongoError::new(
                ErrorCode::IDLDuplicateField,
                format!("BSON field '{}.{field}' is a duplicate field", self.name),
            )),
            (None, Some(seq)) => Ok(seq.documents.iter().map(|d| d.as_ref()).collect()),
            (Some(bson::RawBsonRef::Array(items)), None) => items
                .into_iter()
                .map(|item| match item? {
                    bson::RawBsonRef::Document(d) => Ok(d),
                    other => Err(MongoError::type_mismatch(format!(
                        "BSON field '{}.{field}' is the wrong type '{}', expected type 'object'",
                        self.name,
                        bson_type_name(other.element_type())
                    ))),
                })
                .collect(),
            (Some(other), None) => Err(MongoError::type_mismatch(format!(
                "BSON field '{}.{field}' is the wrong type '{}', expected type 'array'",
                self.name,
                bson_type_name(other.element_type())
            ))),
            (None, None) => Err(missing(&self.name, field)),
        }
    }
}

/// Builds a raw array from raw documents without re-encoding them.
pub fn raw_array<'a>(docs: impl IntoIterator<Item = &'a RawDocument>) -> RawArrayBuf {
    let mut array = RawArrayBuf::new();
    for doc in docs {
        array.push(doc.to_raw_document_buf());
    }
    array
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn merges_sequences_and_body_arrays() {
        let req =
            CommandRequest::new("db", rawdoc! {"insert": "c", "documents": [{"a": 1}]}).unwrap();
        assert_eq!(req.name(), "insert");
        assert_eq!(req.document_array("documents").unwrap().len(), 1);
        let req = CommandRequest::new("db", rawdoc! {"insert": "c"})
            .unwrap()
            .with_sequence("documents", vec![rawdoc! {"a": 1}, rawdoc! {"a": 2}]);
        assert_eq!(req.document_array("documents").unwrap().len(), 2);
    }

    #[test]
    fn op_msg_requires_db() {
        let err = CommandRequest::from_op_msg(OpMsg::new(rawdoc! {"ping": 1})).unwrap_err();
        assert_eq!(err.code().code(), 40571);
    }
}
