//! The errors MongoDB's IDL parsers give, for the generic structures parsed here the way
//! MongoDB parses them (`OperationSessionInfo`, `readConcern`, `APIParametersFromClient`).

use crate::command::bson_type_name;
use crate::error::{ErrorCode, MongoError, Result};
use bson::RawBsonRef;
use bson::spec::{BinarySubtype, ElementType};

pub(super) fn wrong_type(path: &str, value: RawBsonRef<'_>, expected: &str) -> MongoError {
    MongoError::type_mismatch(format!(
        "BSON field '{path}' is the wrong type '{}', expected type '{expected}'",
        bson_type_name(value.element_type())
    ))
}

pub(super) fn duplicate_field(path: &str) -> MongoError {
    MongoError::new(
        ErrorCode::IDLDuplicateField,
        format!("BSON field '{path}' is a duplicate field"),
    )
}

pub(super) fn unknown_field(path: &str) -> MongoError {
    MongoError::new(
        ErrorCode::IDLUnknownField,
        format!("BSON field '{path}' is an unknown field."),
    )
}

pub(super) fn missing_field(path: &str) -> MongoError {
    MongoError::new(
        ErrorCode::IDLFailedToParse,
        format!("BSON field '{path}' is missing but a required field"),
    )
}

/// A field of one BSON type; null and undefined count as absent, as in MongoDB's IDL.
pub(super) fn typed<'a>(
    path: &str,
    value: Option<RawBsonRef<'a>>,
    expected: ElementType,
) -> Result<Option<RawBsonRef<'a>>> {
    match value {
        None | Some(RawBsonRef::Null | RawBsonRef::Undefined) => Ok(None),
        Some(v) if v.element_type() == expected => Ok(Some(v)),
        Some(v) => Err(wrong_type(path, v, bson_type_name(expected))),
    }
}

/// A boolean field.
pub(super) fn boolean(path: &str, value: Option<RawBsonRef<'_>>) -> Result<Option<bool>> {
    Ok(typed(path, value, ElementType::Boolean)?.and_then(|v| v.as_bool()))
}

/// MongoDB's name for a binary subtype, as its type errors print it.
fn subtype_name(subtype: BinarySubtype) -> String {
    match subtype {
        BinarySubtype::Generic => "general".into(),
        BinarySubtype::Function => "function".into(),
        BinarySubtype::BinaryOld => "binary (old)".into(),
        BinarySubtype::UuidOld => "UUID (old)".into(),
        BinarySubtype::Uuid => "UUID".into(),
        BinarySubtype::Md5 => "MD5".into(),
        BinarySubtype::Encrypted => "encrypt".into(),
        BinarySubtype::Column => "column".into(),
        BinarySubtype::Sensitive => "sensitive".into(),
        BinarySubtype::UserDefined(_) => "user-defined".into(),
        other => format!("{}", u8::from(other)),
    }
}

/// A binData field of one subtype; its bytes.
pub(super) fn binary<'a>(
    path: &str,
    value: Option<RawBsonRef<'a>>,
    subtype: BinarySubtype,
) -> Result<Option<&'a [u8]>> {
    let Some(value) = typed(path, value, ElementType::Binary)? else {
        return Ok(None);
    };
    let RawBsonRef::Binary(bin) = value else {
        return Ok(None);
    };
    if bin.subtype != subtype {
        return Err(MongoError::type_mismatch(format!(
            "BSON field '{path}' is the wrong binData type '{}', expected type '{}'",
            subtype_name(bin.subtype),
            subtype_name(subtype)
        )));
    }
    Ok(Some(bin.bytes))
}

/// A UUID field (binData subtype 4 of 16 bytes).
pub(super) fn uuid(path: &str, value: Option<RawBsonRef<'_>>) -> Result<bool> {
    match binary(path, value, BinarySubtype::Uuid)? {
        None => Ok(false),
        Some(bytes) if bytes.len() == 16 => Ok(true),
        Some(_) => Err(MongoError::new(
            ErrorCode::InvalidUUID,
            "uuid must be a 16-byte binary field with UUID (4) subtype",
        )),
    }
}

/// Most fields a strict sub-document parsed here has.
const MAX_KNOWN: usize = 8;

/// Walks a strict sub-document: each known field once, unknown fields refused.
pub(super) fn strict_fields<'a>(
    path: &str,
    doc: &'a bson::RawDocument,
    known: &[&str],
    mut visit: impl FnMut(&'a str, RawBsonRef<'a>) -> Result<()>,
) -> Result<()> {
    debug_assert!(known.len() <= MAX_KNOWN);
    let mut seen = [false; MAX_KNOWN];
    for element in doc {
        let (name, value) = element?;
        let Some(index) = known.iter().position(|k| *k == name) else {
            return Err(unknown_field(&format!("{path}.{name}")));
        };
        if std::mem::replace(&mut seen[index], true) {
            return Err(duplicate_field(&format!("{path}.{name}")));
        }
        visit(name, value)?;
    }
    Ok(())
}
