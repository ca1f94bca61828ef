//! The typed `bulkWrite` command (MongoDB 8.0), parsed the same way by routers and shards: its
//! operations (kind, namespace index, raw specification) and namespaces, checked before any
//! operation runs.

use super::CommandRequest;
use crate::catalog::split_namespace;
use crate::error::{ErrorCode, MongoError, Result};
use crate::wire::MAX_WRITE_BATCH_SIZE;
use bson::{RawBsonRef, RawDocument};

/// The cursor namespace of `bulkWrite` replies.
pub const BULK_WRITE_CURSOR_NS: &str = "admin.$cmd.bulkWrite";

/// The summary counts of a `bulkWrite` reply, in MongoDB's order.
pub const BULK_WRITE_COUNTS: [&str; 6] = [
    "nErrors",
    "nInserted",
    "nMatched",
    "nModified",
    "nUpserted",
    "nDeleted",
];

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BulkOpKind {
    Insert,
    Update,
    Delete,
}

/// One operation.
pub struct BulkOp<'a> {
    pub kind: BulkOpKind,
    /// Index into the namespaces.
    pub ns: usize,
    pub raw: &'a RawDocument,
}

impl BulkOp<'_> {
    /// Whether the operation creates its collection when missing (an insert or an upsert).
    pub fn creates(&self) -> bool {
        self.kind == BulkOpKind::Insert
            || (self.kind == BulkOpKind::Update
                && matches!(self.raw.get("upsert"), Ok(Some(RawBsonRef::Boolean(true)))))
    }
}

/// A namespace of `nsInfo`.
pub struct BulkNamespace {
    pub ns: String,
    pub db: String,
    pub coll: String,
}

pub struct BulkWrite<'a> {
    pub ops: Vec<BulkOp<'a>>,
    pub namespaces: Vec<BulkNamespace>,
    pub ordered: bool,
    pub errors_only: bool,
    pub bypass_document_validation: bool,
}

impl<'a> BulkWrite<'a> {
    pub fn parse(req: &'a CommandRequest) -> Result<Self> {
        let request = super::requests::BulkWriteRequest::parse(req)?;
        let raw_ops = req.document_array("ops")?;
        let ns_info = req.document_array("nsInfo")?;
        if raw_ops.is_empty() || raw_ops.len() > MAX_WRITE_BATCH_SIZE {
            return Err(MongoError::new(
                ErrorCode::InvalidLength,
                format!(
                    "Write batch sizes must be between 1 and {MAX_WRITE_BATCH_SIZE}. Got {} operations.",
                    raw_ops.len()
                ),
            ));
        }
        let mut namespaces = Vec::with_capacity(ns_info.len());
        for entry in &ns_info {
            let ns = match entry.get("ns")? {
                Some(RawBsonRef::String(ns)) => ns,
                _ => {
                    return Err(MongoError::type_mismatch(
                        "BSON field 'bulkWrite.nsInfo.ns' is the wrong type, expected type 'string'",
                    ));
                }
            };
            let (db, coll) = split_namespace(ns)?;
            namespaces.push(BulkNamespace {
                ns: ns.to_string(),
                db: db.to_string(),
                coll: coll.to_string(),
            });
        }
        let mut ops = Vec::with_capacity(raw_ops.len());
        for (i, raw) in raw_ops.into_iter().enumerate() {
            ops.push(parse_op(i, raw, namespaces.len())?);
        }
        Ok(BulkWrite {
            ops,
            namespaces,
            ordered: request.ordered.unwrap_or(true),
            errors_only: request.errors_only.unwrap_or(false),
            bypass_document_validation: request.bypass_document_validation.unwrap_or(false),
        })
    }

    pub fn db_of(&self, op: &BulkOp<'_>) -> &str {
        &self.namespaces[op.ns].db
    }

    /// The end of the run of operations from `start` on the same database.
    pub fn database_run(&self, start: usize) -> usize {
        let db = self.db_of(&self.ops[start]);
        (start..self.ops.len())
            .find(|&j| self.db_of(&self.ops[j]) != db)
            .unwrap_or(self.ops.len())
    }
}

fn parse_op<'a>(i: usize, raw: &'a RawDocument, namespaces: usize) -> Result<BulkOp<'a>> {
    let (key, value) =
        raw.iter().next().transpose()?.ok_or_else(|| {
            MongoError::failed_to_parse(format!("BulkWrite ops entry {i} is empty"))
        })?;
    let kind = match key {
        "insert" => BulkOpKind::Insert,
        "update" => BulkOpKind::Update,
        "delete" => BulkOpKind::Delete,
        other => {
            return Err(MongoError::failed_to_parse(format!(
                "Unrecognized bulkWrite operation: {other}"
            )));
        }
    };
    let ns = match value {
        RawBsonRef::Int32(n) => n as i64,
        RawBsonRef::Int64(n) => n,
        _ => {
            return Err(MongoError::type_mismatch(format!(
                "BSON field 'bulkWrite.ops.{key}' is the wrong type, expected type 'int'"
            )));
        }
    };
    if ns < 0 || ns as usize >= namespaces {
        return Err(MongoError::bad_value(format!(
            "BulkWrite ops entry {i} has an invalid nsInfo index {ns}"
        )));
    }
    let required = match kind {
        BulkOpKind::Insert => "document",
        BulkOpKind::Update => "updateMods",
        BulkOpKind::Delete => "filter",
    };
    match (kind, raw.get(required)?) {
        (_, None) => {
            return Err(super::missing("bulkWrite.ops", required));
        }
        (BulkOpKind::Insert | BulkOpKind::Delete, Some(RawBsonRef::Document(_))) => {}
        (BulkOpKind::Update, Some(RawBsonRef::Document(_) | RawBsonRef::Array(_))) => {}
        (_, Some(_)) => {
            return Err(MongoError::type_mismatch(format!(
                "BSON field 'bulkWrite.ops.{required}' is the wrong type, expected type 'object'"
            )));
        }
    }
    if kind == BulkOpKind::Update && !matches!(raw.get("filter")?, Some(RawBsonRef::Document(_))) {
        return Err(super::missing("bulkWrite.ops", "filter"));
    }
    Ok(BulkOp {
        kind,
        ns: ns as usize,
        raw,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn parse(body: bson::Document) -> Result<usize> {
        let req = CommandRequest::from_document("admin", &body)?;
        BulkWrite::parse(&req).map(|b| b.ops.len())
    }

    #[test]
    fn checks_structure_before_anything_runs() {
        let ns = vec![doc! {"ns": "db.c"}];
        assert_eq!(
            parse(
                doc! {"bulkWrite": 1, "ops": [{"insert": 0, "document": {}}], "nsInfo": ns.clone()}
            )
            .unwrap(),
            1
        );
        let code = |body| parse(body).unwrap_err().code();
        assert_eq!(
            code(
                doc! {"bulkWrite": 1, "ops": [{"insert": 1, "document": {}}], "nsInfo": ns.clone()}
            ),
            ErrorCode::BadValue
        );
        assert_eq!(
            code(
                doc! {"bulkWrite": 1, "ops": [{"insert": "x", "document": {}}], "nsInfo": ns.clone()}
            ),
            ErrorCode::TypeMismatch
        );
        assert_eq!(
            code(
                doc! {"bulkWrite": 1, "ops": [{"insert": 0, "document": "x"}], "nsInfo": ns.clone()}
            ),
            ErrorCode::TypeMismatch
        );
        assert_eq!(
            code(doc! {"bulkWrite": 1, "nsInfo": ns.clone()}),
            ErrorCode::IDLFailedToParse
        );
        assert_eq!(
            code(doc! {"bulkWrite": 1, "ops": [{"update": 0, "filter": {}}], "nsInfo": ns}),
            ErrorCode::IDLFailedToParse
        );
    }
}
