//! MongoDB's names and numbers for BSON types (`$type`, `typeName()` in messages).

use bson::Bson;
use bson::spec::ElementType;

const ALL: [ElementType; 21] = [
    ElementType::Double,
    ElementType::String,
    ElementType::EmbeddedDocument,
    ElementType::Array,
    ElementType::Binary,
    ElementType::Undefined,
    ElementType::ObjectId,
    ElementType::Boolean,
    ElementType::DateTime,
    ElementType::Null,
    ElementType::RegularExpression,
    ElementType::DbPointer,
    ElementType::JavaScriptCode,
    ElementType::Symbol,
    ElementType::JavaScriptCodeWithScope,
    ElementType::Int32,
    ElementType::Timestamp,
    ElementType::Int64,
    ElementType::Decimal128,
    ElementType::MinKey,
    ElementType::MaxKey,
];

/// MongoDB's name for a BSON type (as in `$type` and error messages).
pub fn element_type_name(t: ElementType) -> &'static str {
    match t {
        ElementType::Double => "double",
        ElementType::String => "string",
        ElementType::EmbeddedDocument => "object",
        ElementType::Array => "array",
        ElementType::Binary => "binData",
        ElementType::Undefined => "undefined",
        ElementType::ObjectId => "objectId",
        ElementType::Boolean => "bool",
        ElementType::DateTime => "date",
        ElementType::Null => "null",
        ElementType::RegularExpression => "regex",
        ElementType::DbPointer => "dbPointer",
        ElementType::JavaScriptCode => "javascript",
        ElementType::Symbol => "symbol",
        ElementType::JavaScriptCodeWithScope => "javascriptWithScope",
        ElementType::Int32 => "int",
        ElementType::Timestamp => "timestamp",
        ElementType::Int64 => "long",
        ElementType::Decimal128 => "decimal",
        ElementType::MinKey => "minKey",
        ElementType::MaxKey => "maxKey",
    }
}

/// The type name of a value.
pub fn type_name(value: &Bson) -> &'static str {
    element_type_name(value.element_type())
}

/// The number `$type` accepts for a type (MinKey is -1 rather than its 0xFF tag).
fn element_type_code(t: ElementType) -> i32 {
    match t {
        ElementType::MinKey => -1,
        other => i32::from(other as u8),
    }
}

/// The BSON type code of a value.
pub fn type_code(value: &Bson) -> i32 {
    element_type_code(value.element_type())
}

/// The type code for a `$type` alias (`"number"` is handled by the caller).
pub fn type_code_for_alias(alias: &str) -> Option<i32> {
    ALL.into_iter()
        .find(|t| element_type_name(*t) == alias)
        .map(element_type_code)
}

/// The alias of a type code (`-1` is `"minKey"`).
pub fn type_alias_for_code(code: i32) -> Option<&'static str> {
    ALL.into_iter()
        .find(|t| element_type_code(*t) == code)
        .map(element_type_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_match_mongodb() {
        assert_eq!(type_name(&Bson::Int64(1)), "long");
        assert_eq!(type_code(&Bson::Int64(1)), 18);
        assert_eq!(type_code(&Bson::MinKey), -1);
        assert_eq!(type_code(&Bson::MaxKey), 127);
        assert_eq!(type_code_for_alias("decimal"), Some(19));
        assert_eq!(type_code_for_alias("objectId"), Some(7));
        assert_eq!(type_code_for_alias("number"), None);
        assert_eq!(type_alias_for_code(-1), Some("minKey"));
        assert_eq!(type_alias_for_code(19), Some("decimal"));
        assert_eq!(type_alias_for_code(20), None);
    }
}
