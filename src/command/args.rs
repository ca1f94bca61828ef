//! Typed reads of command fields, failing with the TypeMismatch messages MongoDB's IDL gives.

use crate::error::{MongoError, Result};
use crate::expression::LetVariables;
use bson::{Bson, Document, RawBsonRef, RawDocument};
use std::sync::Arc;

pub use crate::document::types::element_type_name as bson_type_name;

/// Field access on a command body.
#[derive(Clone, Copy)]
pub struct Args<'a> {
    command: &'a str,
    body: &'a RawDocument,
    /// The body's fields read once (`Fields`), for commands that look up many of them.
    fields: Option<&'a [(&'a str, RawBsonRef<'a>)]>,
}

/// A command body's fields in one pass: each lookup of a raw document walks (and validates)
/// the elements before the one it wants, which for a command reading twenty optional fields
/// costs more than the rest of a point read's parsing.
pub struct Fields<'a> {
    command: &'a str,
    body: &'a RawDocument,
    fields: Vec<(&'a str, RawBsonRef<'a>)>,
}

impl<'a> Fields<'a> {
    pub fn read(command: &'a str, body: &'a RawDocument) -> Result<Self> {
        let fields = body.iter().collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(Fields {
            command,
            body,
            fields,
        })
    }

    pub fn args(&self) -> Args<'_> {
        Args {
            command: self.command,
            body: self.body,
            fields: Some(&self.fields),
        }
    }
}

const NUMBER_TYPES: &str = "[long, int, decimal, double]";

impl<'a> Args<'a> {
    pub fn new(command: &'a str, body: &'a RawDocument) -> Self {
        Args {
            command,
            body,
            fields: None,
        }
    }

    pub fn body(&self) -> &'a RawDocument {
        self.body
    }

    /// A required shard key pattern (BadValue when it is not a valid one).
    pub fn shard_key(&self, field: &str) -> Result<crate::catalog::ShardKeyPattern> {
        let key = self
            .document(field)?
            .ok_or_else(|| super::missing(self.command, field))?;
        crate::catalog::ShardKeyPattern::parse(&key)
    }

    fn mismatch(&self, field: &str, found: RawBsonRef<'_>, expected: &str) -> MongoError {
        let plural = if expected.starts_with('[') {
            "types"
        } else {
            "type"
        };
        MongoError::type_mismatch(format!(
            "BSON field '{}.{field}' is the wrong type '{}', expected {plural} '{expected}'",
            self.command,
            bson_type_name(found.element_type())
        ))
    }

    pub fn get(&self, field: &str) -> Result<Option<RawBsonRef<'a>>> {
        match self.fields {
            Some(fields) => Ok(fields.iter().find(|(k, _)| *k == field).map(|(_, v)| *v)),
            None => Ok(self.body.get(field)?),
        }
    }

    /// The command's own argument (the value of its first field).
    /// A field as an owned value, whatever its type.
    pub fn value(&self, field: &str) -> Result<Option<bson::Bson>> {
        self.get(field)?
            .map(|v| bson::Bson::try_from(v.to_raw_bson()).map_err(Into::into))
            .transpose()
    }

    pub fn target(&self) -> Result<RawBsonRef<'a>> {
        match self.body.iter().next() {
            Some(Ok((_, value))) => Ok(value),
            Some(Err(e)) => Err(e.into()),
            None => Err(MongoError::failed_to_parse("empty command")),
        }
    }

    /// The collection name a command like `find: "coll"` targets.
    pub fn collection(&self) -> Result<&'a str> {
        match self.target()? {
            RawBsonRef::String(name) => Ok(name),
            other => Err(MongoError::new(
                crate::error::ErrorCode::InvalidNamespace,
                format!(
                    "collection name has invalid type {}",
                    bson_type_name(other.element_type())
                ),
            )),
        }
    }

    /// The `"<db>.<collection>"` an admin command like `split: "db.c"` names, split in two.
    pub fn namespace(&self) -> Result<(&'a str, &'a str)> {
        match self.target()? {
            RawBsonRef::String(ns) => crate::catalog::split_namespace(ns).map_err(|_| {
                MongoError::new(
                    crate::error::ErrorCode::InvalidNamespace,
                    format!("Invalid namespace specified '{ns}'"),
                )
            }),
            _ => Err(MongoError::type_mismatch(format!(
                "{} requires a namespace string \"<db>.<collection>\"",
                self.command
            ))),
        }
    }

    /// A `[min, max]` pair of shard key bounds (`bounds` of `split` and `mergeChunks`).
    pub fn bounds(&self, field: &str) -> Result<Option<(Document, Document)>> {
        let Some(items) = self.array(field)? else {
            return Ok(None);
        };
        match <[Bson; 2]>::try_from(items) {
            Ok([Bson::Document(min), Bson::Document(max)]) => Ok(Some((min, max))),
            _ => Err(MongoError::bad_value(format!(
                "{}.{field} must be an array of two documents: [min, max]",
                self.command
            ))),
        }
    }

    /// A string field the command needs (IDLFailedToParse, MongoDB's message, when absent).
    pub fn required_str(&self, field: &str) -> Result<&'a str> {
        self.str(field)?
            .ok_or_else(|| super::missing(self.command, field))
    }

    /// A boolean field the command needs (IDLFailedToParse when absent).
    pub fn required_bool(&self, field: &str) -> Result<bool> {
        self.bool(field)?
            .ok_or_else(|| super::missing(self.command, field))
    }

    /// A document field the command needs (IDLFailedToParse when absent).
    pub fn required_document(&self, field: &str) -> Result<Document> {
        self.document(field)?
            .ok_or_else(|| super::missing(self.command, field))
    }

    pub fn str(&self, field: &str) -> Result<Option<&'a str>> {
        match self.get(field)? {
            None => Ok(None),
            Some(RawBsonRef::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.mismatch(field, other, "string")),
        }
    }

    pub fn document(&self, field: &str) -> Result<Option<Document>> {
        match self.get(field)? {
            None => Ok(None),
            Some(RawBsonRef::Document(d)) => Ok(Some(d.to_owned().to_document()?)),
            Some(other) => Err(self.mismatch(field, other, "object")),
        }
    }

    /// The command's `let` evaluated once, with the command's `$$NOW`, for everything the
    /// command parses (filters, projections, pipelines) to share.
    /// The command's `collation` (`None` when absent), under which its filters, sorts and
    /// pipelines compare strings, comes with them.
    pub fn let_variables(&self) -> Result<Arc<LetVariables>> {
        let let_doc = self.document("let")?;
        let collation = crate::command::parse_collation(self.value("collation")?.as_ref())?;
        Ok(Arc::new(
            LetVariables::parse(let_doc.as_ref(), bson::DateTime::now())?.with_collation(collation),
        ))
    }

    pub fn raw_document(&self, field: &str) -> Result<Option<&'a RawDocument>> {
        match self.get(field)? {
            None => Ok(None),
            Some(RawBsonRef::Document(d)) => Ok(Some(d)),
            Some(other) => Err(self.mismatch(field, other, "object")),
        }
    }

    pub fn array(&self, field: &str) -> Result<Option<Vec<Bson>>> {
        match self.get(field)? {
            None => Ok(None),
            Some(RawBsonRef::Array(a)) => {
                let mut out = Vec::new();
                for item in a {
                    out.push(Bson::try_from(item?.to_raw_bson())?);
                }
                Ok(Some(out))
            }
            Some(other) => Err(self.mismatch(field, other, "array")),
        }
    }

    /// A boolean argument; like MongoDB, numbers are accepted (non-zero is true).
    pub fn bool(&self, field: &str) -> Result<Option<bool>> {
        match self.get(field)? {
            None | Some(RawBsonRef::Null) => Ok(None),
            Some(RawBsonRef::Boolean(b)) => Ok(Some(b)),
            Some(RawBsonRef::Int32(v)) => Ok(Some(v != 0)),
            Some(RawBsonRef::Int64(v)) => Ok(Some(v != 0)),
            Some(RawBsonRef::Double(v)) => Ok(Some(v != 0.0)),
            Some(other) => Err(self.mismatch(field, other, "bool")),
        }
    }

    /// An integer argument given as any numeric type with an integral value.
    pub fn i64(&self, field: &str) -> Result<Option<i64>> {
        match self.get(field)? {
            None | Some(RawBsonRef::Null) => Ok(None),
            Some(RawBsonRef::Int32(v)) => Ok(Some(i64::from(v))),
            Some(RawBsonRef::Int64(v)) => Ok(Some(v)),
            Some(RawBsonRef::Double(v)) if v.fract() == 0.0 && v.abs() < 9.2e18 => {
                Ok(Some(v as i64))
            }
            Some(RawBsonRef::Double(_)) => Err(MongoError::failed_to_parse(format!(
                "BSON field '{}.{field}' has a non-integral value",
                self.command
            ))),
            Some(RawBsonRef::Decimal128(d)) => {
                let v: f64 = d.to_string().parse().unwrap_or(f64::NAN);
                if v.fract() == 0.0 && v.abs() < 9.2e18 {
                    Ok(Some(v as i64))
                } else {
                    Err(self.mismatch(field, RawBsonRef::Decimal128(d), NUMBER_TYPES))
                }
            }
            Some(other) => Err(self.mismatch(field, other, NUMBER_TYPES)),
        }
    }

    /// A non-negative integer argument (`skip`, `batchSize`, ...).
    pub fn non_negative(&self, field: &str) -> Result<Option<i64>> {
        match self.i64(field)? {
            // MongoDB's IDL validator (`validator: {gte: 0}`) raises location 51024.
            Some(v) if v < 0 => Err(MongoError::location(
                51024,
                format!("BSON field '{field}' value must be >= 0, actual value '{v}'"),
            )),
            other => Ok(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn wrong_types_name_field_and_expected_type() {
        let body = rawdoc! {"find": "c", "limit": "x", "filter": 3};
        let args = Args::new("find", &body);
        let err = args.i64("limit").unwrap_err();
        assert_eq!(
            err.message(),
            "BSON field 'find.limit' is the wrong type 'string', expected types '[long, int, decimal, double]'"
        );
        let err = args.document("filter").unwrap_err();
        assert_eq!(
            err.message(),
            "BSON field 'find.filter' is the wrong type 'int', expected type 'object'"
        );
        assert_eq!(args.collection().unwrap(), "c");
    }

    #[test]
    fn fields_read_once_answer_as_the_body_does() {
        let body =
            rawdoc! {"find": "c", "limit": 5, "filter": {"a": 1}, "limit": "dup", "skip": "x"};
        let fields = Fields::read("find", &body).unwrap();
        let (once, walked) = (fields.args(), Args::new("find", &body));
        for args in [once, walked] {
            assert_eq!(
                args.i64("limit").unwrap(),
                Some(5),
                "the first of duplicates"
            );
            assert_eq!(args.document("filter").unwrap(), Some(bson::doc! {"a": 1}));
            assert_eq!(args.bool("singleBatch").unwrap(), None);
            assert_eq!(args.collection().unwrap(), "c");
            assert_eq!(
                args.i64("skip").unwrap_err().message(),
                "BSON field 'find.skip' is the wrong type 'string', expected types '[long, int, decimal, double]'"
            );
        }
    }
}
