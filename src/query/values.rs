//! Shared value helpers of the query language: MongoDB's type names and type codes, its textual
//! rendering of BSON in error messages, truthiness, integer coercions and field-path checks.

pub use crate::document::display::{format_g, render, render_doc, render_element};
pub use crate::document::types::{type_code, type_code_for_alias, type_name};

use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document};

pub fn is_number(value: &Bson) -> bool {
    matches!(
        value,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
    )
}

/// MongoDB's `trueValue()`: false for `false`, zero, null, undefined and missing.
pub fn truthy(value: &Bson) -> bool {
    match value {
        Bson::Boolean(b) => *b,
        Bson::Int32(v) => *v != 0,
        Bson::Int64(v) => *v != 0,
        Bson::Double(v) => *v != 0.0,
        Bson::Decimal128(d) => decimal_to_f64(d) != 0.0,
        Bson::Null | Bson::Undefined => false,
        _ => true,
    }
}

pub fn decimal_to_f64(d: &bson::Decimal128) -> f64 {
    let text = d.to_string();
    match text.as_str() {
        "Infinity" | "+Infinity" => f64::INFINITY,
        "-Infinity" => f64::NEG_INFINITY,
        _ => text.parse::<f64>().unwrap_or(f64::NAN),
    }
}

/// A numeric value as a double (NaN for non-numbers).
pub fn as_f64(value: &Bson) -> f64 {
    match value {
        Bson::Int32(v) => f64::from(*v),
        Bson::Int64(v) => *v as f64,
        Bson::Double(v) => *v,
        Bson::Decimal128(d) => decimal_to_f64(d),
        _ => f64::NAN,
    }
}

/// Whether a number is NaN (double or decimal).
pub fn is_nan(value: &Bson) -> bool {
    match value {
        Bson::Double(v) => v.is_nan(),
        Bson::Decimal128(d) => decimal_to_f64(d).is_nan(),
        _ => false,
    }
}

/// The outcome of MongoDB's `parseIntegerElementToLong`: the error text without its prefix.
pub fn integer_to_i64(name: &str, value: &Bson) -> Result<i64> {
    let fail =
        |what: &str| MongoError::failed_to_parse(format!("{what}{}", render_element(name, value)));
    match value {
        Bson::Int32(v) => Ok(i64::from(*v)),
        Bson::Int64(v) => Ok(*v),
        Bson::Double(d) => {
            if d.is_nan() {
                Err(fail("Expected an integer, but found NaN in: "))
            } else if *d >= 9_223_372_036_854_775_808.0 || *d < -9_223_372_036_854_775_808.0 {
                Err(fail("Cannot represent as a 64-bit integer: "))
            } else if d.trunc() != *d {
                Err(fail("Expected an integer: "))
            } else {
                Ok(*d as i64)
            }
        }
        Bson::Decimal128(dec) => {
            let f = decimal_to_f64(dec);
            if f.is_finite() && f.trunc() == f && f.abs() < 9.2e18 {
                Ok(f as i64)
            } else {
                Err(fail("Cannot represent as a 64-bit integer: "))
            }
        }
        _ => Err(fail("Expected a number in: ")),
    }
}

/// MongoDB's `parseIntegerElementToNonNegativeLong`.
pub fn integer_to_non_negative_i64(name: &str, value: &Bson) -> Result<i64> {
    let n = integer_to_i64(name, value)?;
    if n < 0 {
        return Err(MongoError::failed_to_parse(format!(
            "Expected a positive number in: {}",
            render_element(name, value)
        )));
    }
    Ok(n)
}

/// MongoDB's `parseIntegerElementToNonNegativeInt`.
pub fn integer_to_non_negative_i32(name: &str, value: &Bson) -> Result<i32> {
    let n = integer_to_i64(name, value)?;
    let n = i32::try_from(n).map_err(|_| {
        MongoError::failed_to_parse(format!(
            "Cannot represent {} in an int",
            render_element(name, value)
        ))
    })?;
    if n < 0 {
        return Err(MongoError::failed_to_parse(format!(
            "Expected a positive number in: {}",
            render_element(name, value)
        )));
    }
    Ok(n)
}

/// MongoDB's `tryCoerce` to a 64-bit integer (truncating doubles), as `$mod` uses it.
pub fn coerce_i64(value: &Bson) -> std::result::Result<i64, &'static str> {
    match value {
        Bson::Int32(v) => Ok(i64::from(*v)),
        Bson::Int64(v) => Ok(*v),
        Bson::Double(_) | Bson::Decimal128(_) => {
            let d = as_f64(value);
            if !d.is_finite() {
                Err("Unable to coerce NaN/Inf to integral type")
            } else if d.trunc() >= 9_223_372_036_854_775_808.0
                || d.trunc() < -9_223_372_036_854_775_808.0
            {
                Err("Out of bounds coercing to integral value")
            } else {
                Ok(d.trunc() as i64)
            }
        }
        _ => Err("not a number"),
    }
}

/// An integral number that fits in an i64 exactly (doubles must be whole), as bit tests read
/// their operands.
pub fn exact_i64(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(v) => Some(i64::from(*v)),
        Bson::Int64(v) => Some(*v),
        Bson::Double(_) | Bson::Decimal128(_) => {
            let d = as_f64(value);
            if d.is_finite()
                && d.trunc() == d
                && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&d)
            {
                Some(d as i64)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Validates a field path the way MongoDB's `FieldPath` does (projection and sort keys).
pub fn check_field_path(path: &str) -> Result<()> {
    if path.is_empty() {
        return Err(MongoError::location(
            40352,
            "FieldPath cannot be constructed with empty string",
        ));
    }
    if path.ends_with('.') {
        return Err(MongoError::location(
            40353,
            "FieldPath must not end with a '.'.",
        ));
    }
    for part in path.split('.') {
        if part.is_empty() {
            return Err(MongoError::location(
                15998,
                "FieldPath field names may not be empty strings.",
            ));
        }
        if part.starts_with('$') {
            return Err(MongoError::location(
                16410,
                "FieldPath field names may not start with '$'. Consider using $getField or $setField.",
            ));
        }
    }
    Ok(())
}

/// An error for a feature that needs machinery this build does not have yet.
pub fn not_implemented(message: impl Into<String>) -> MongoError {
    MongoError::new(ErrorCode::NotImplemented, message)
}

/// Arrays as documents keyed by index, as `$elemMatch` and positional lookups see them.
pub fn array_as_document(items: &[Bson]) -> Document {
    let mut doc = Document::new();
    for (i, v) in items.iter().enumerate() {
        doc.insert(i.to_string(), v.clone());
    }
    doc
}

/// Parses a path component as an array index the way MongoDB does (digits only, no sign).
pub fn array_index(part: &str) -> Option<usize> {
    if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    part.parse::<usize>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_parsing_reports_mongodb_reasons() {
        assert_eq!(
            integer_to_i64("$size", &Bson::Double(1.5))
                .unwrap_err()
                .message(),
            "Expected an integer: $size: 1.5"
        );
        assert_eq!(
            integer_to_non_negative_i64("$size", &Bson::Int32(-1))
                .unwrap_err()
                .message(),
            "Expected a positive number in: $size: -1"
        );
        assert_eq!(integer_to_i64("x", &Bson::Double(3.0)).unwrap(), 3);
    }
}
