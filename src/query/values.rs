//! Shared value helpers of the query language: MongoDB's type names and type codes, its textual
//! rendering of BSON in error messages, truthiness, integer coercions and field-path checks.

use crate::error::{ErrorCode, MongoError, Result};
use bson::spec::BinarySubtype;
use bson::{Bson, Document};

/// The type name MongoDB prints in messages and accepts as a `$type` alias.
pub fn type_name(value: &Bson) -> &'static str {
    match value {
        Bson::Double(_) => "double",
        Bson::String(_) => "string",
        Bson::Document(_) => "object",
        Bson::Array(_) => "array",
        Bson::Binary(_) => "binData",
        Bson::Undefined => "undefined",
        Bson::ObjectId(_) => "objectId",
        Bson::Boolean(_) => "bool",
        Bson::DateTime(_) => "date",
        Bson::Null => "null",
        Bson::RegularExpression(_) => "regex",
        Bson::DbPointer(_) => "dbPointer",
        Bson::JavaScriptCode(_) => "javascript",
        Bson::Symbol(_) => "symbol",
        Bson::JavaScriptCodeWithScope(_) => "javascriptWithScope",
        Bson::Int32(_) => "int",
        Bson::Timestamp(_) => "timestamp",
        Bson::Int64(_) => "long",
        Bson::Decimal128(_) => "decimal",
        Bson::MinKey => "minKey",
        Bson::MaxKey => "maxKey",
    }
}

/// The BSON type code of a value (the numbers `$type` accepts).
pub fn type_code(value: &Bson) -> i32 {
    match value {
        Bson::Double(_) => 1,
        Bson::String(_) => 2,
        Bson::Document(_) => 3,
        Bson::Array(_) => 4,
        Bson::Binary(_) => 5,
        Bson::Undefined => 6,
        Bson::ObjectId(_) => 7,
        Bson::Boolean(_) => 8,
        Bson::DateTime(_) => 9,
        Bson::Null => 10,
        Bson::RegularExpression(_) => 11,
        Bson::DbPointer(_) => 12,
        Bson::JavaScriptCode(_) => 13,
        Bson::Symbol(_) => 14,
        Bson::JavaScriptCodeWithScope(_) => 15,
        Bson::Int32(_) => 16,
        Bson::Timestamp(_) => 17,
        Bson::Int64(_) => 18,
        Bson::Decimal128(_) => 19,
        Bson::MinKey => -1,
        Bson::MaxKey => 127,
    }
}

/// The type code for a `$type` alias (`"number"` is handled by the caller).
pub fn type_code_for_alias(alias: &str) -> Option<i32> {
    Some(match alias {
        "double" => 1,
        "string" => 2,
        "object" => 3,
        "array" => 4,
        "binData" => 5,
        "undefined" => 6,
        "objectId" => 7,
        "bool" => 8,
        "date" => 9,
        "null" => 10,
        "regex" => 11,
        "dbPointer" => 12,
        "javascript" => 13,
        "symbol" => 14,
        "javascriptWithScope" => 15,
        "int" => 16,
        "timestamp" => 17,
        "long" => 18,
        "decimal" => 19,
        "minKey" => -1,
        "maxKey" => 127,
        _ => return None,
    })
}

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

/// `%.16g` followed by `.0` when the text has no `.`, `E` or `N` (MongoDB's `appendDoubleNice`).
pub fn double_nice(x: f64) -> String {
    let mut s = format_g(x, 16);
    if !s.contains('.') && !s.contains('E') && !s.contains('N') {
        s.push_str(".0");
    }
    s
}

/// C's `%.<precision>g`.
pub fn format_g(x: f64, precision: usize) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let p = precision.max(1);
    let sci = format!("{:.*e}", p - 1, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let mantissa = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{:.*}", decimals, x)).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// A value as MongoDB's `BSONElement::toString(false)` prints it.
pub fn render(value: &Bson) -> String {
    let mut out = String::new();
    render_into(&mut out, value, 0);
    out
}

/// `name: value`, as MongoDB prints an element.
pub fn render_element(name: &str, value: &Bson) -> String {
    format!("{name}: {}", render(value))
}

/// A document as MongoDB's `BSONObj::toString()` prints it.
pub fn render_doc(doc: &Document) -> String {
    let mut out = String::new();
    render_doc_into(&mut out, doc.iter().map(|(k, v)| (k.as_str(), v)), false, 0);
    out
}

fn render_doc_into<'a>(
    out: &mut String,
    items: impl Iterator<Item = (&'a str, &'a Bson)>,
    is_array: bool,
    depth: usize,
) {
    let mut first = true;
    for (k, v) in items {
        out.push_str(if first {
            if is_array { "[ " } else { "{ " }
        } else {
            ", "
        });
        first = false;
        if !is_array {
            out.push_str(k);
            out.push_str(": ");
        }
        render_into(out, v, depth + 1);
    }
    if first {
        out.push_str(if is_array { "[]" } else { "{}" });
    } else {
        out.push_str(if is_array { " ]" } else { " }" });
    }
}

fn render_into(out: &mut String, value: &Bson, depth: usize) {
    if depth > 150 {
        out.push_str("...");
        return;
    }
    match value {
        Bson::Document(d) => {
            render_doc_into(out, d.iter().map(|(k, v)| (k.as_str(), v)), false, depth)
        }
        Bson::Array(items) => render_doc_into(out, items.iter().map(|v| ("", v)), true, depth),
        Bson::Double(v) => out.push_str(&double_nice(*v)),
        Bson::String(s) | Bson::Symbol(s) => {
            out.push('"');
            if s.len() > 160 {
                let mut cut = 150;
                while !s.is_char_boundary(cut) {
                    cut -= 1;
                }
                out.push_str(&s[..cut]);
                out.push_str("...\"");
            } else {
                out.push_str(s);
                out.push('"');
            }
        }
        Bson::Int32(v) => out.push_str(&v.to_string()),
        Bson::Int64(v) => out.push_str(&v.to_string()),
        Bson::Decimal128(d) => out.push_str(&d.to_string()),
        Bson::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        Bson::Null => out.push_str("null"),
        Bson::Undefined => out.push_str("undefined"),
        Bson::MinKey => out.push_str("MinKey"),
        Bson::MaxKey => out.push_str("MaxKey"),
        Bson::ObjectId(oid) => {
            out.push_str("ObjectId('");
            out.push_str(&oid.to_hex());
            out.push_str("')");
        }
        Bson::DateTime(dt) => out.push_str(&format!("new Date({})", dt.timestamp_millis())),
        Bson::Timestamp(ts) => out.push_str(&format!("Timestamp({}, {})", ts.time, ts.increment)),
        Bson::RegularExpression(re) => {
            out.push('/');
            out.push_str(&re.pattern);
            out.push('/');
            out.push_str(&re.options);
        }
        Bson::Binary(bin) => {
            if bin.subtype == BinarySubtype::Uuid && bin.bytes.len() == 16 {
                let h = hex_lower(&bin.bytes);
                out.push_str(&format!(
                    "UUID(\"{}-{}-{}-{}-{}\")",
                    &h[0..8],
                    &h[8..12],
                    &h[12..16],
                    &h[16..20],
                    &h[20..32]
                ));
            } else {
                let shown = if bin.bytes.len() > 80 {
                    &bin.bytes[..70]
                } else {
                    &bin.bytes[..]
                };
                out.push_str(&format!(
                    "BinData({}, {}",
                    u8::from(bin.subtype),
                    hex_upper(shown)
                ));
                out.push_str(if bin.bytes.len() > 80 { "...)" } else { ")" });
            }
        }
        Bson::JavaScriptCode(code) => out.push_str(code),
        Bson::JavaScriptCodeWithScope(cws) => out.push_str(&format!(
            "CodeWScope( {}, {})",
            cws.code,
            render_doc(&cws.scope)
        )),
        Bson::DbPointer(_) => out.push_str("DBRef(...)"),
    }
}

fn hex_lower(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hex_upper(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
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
    use bson::doc;

    #[test]
    fn doubles_print_like_mongodb() {
        assert_eq!(double_nice(1.5), "1.5");
        assert_eq!(double_nice(42.0), "42.0");
        assert_eq!(double_nice(f64::NAN), "nan.0");
        assert_eq!(double_nice(f64::INFINITY), "inf.0");
        assert_eq!(double_nice(1e20), "1e+20.0");
        assert_eq!(double_nice(0.1), "0.1");
        assert_eq!(double_nice(-0.0), "-0.0");
        assert_eq!(format_g(100.0, 6), "100");
        assert_eq!(format_g(1.5, 6), "1.5");
        assert_eq!(format_g(0.0001, 6), "0.0001");
        assert_eq!(format_g(0.00001, 6), "1e-05");
    }

    #[test]
    fn documents_render_like_bsonobj_to_string() {
        let d = doc! {"v": [{"foo": [{"bar": "hello"}]}], "e": {}, "a": []};
        assert_eq!(
            render_doc(&d),
            "{ v: [ { foo: [ { bar: \"hello\" } ] } ], e: {}, a: [] }"
        );
        assert_eq!(
            render_element("$size", &Bson::String("a".into())),
            "$size: \"a\""
        );
    }

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
