//! `$convert`'s conversion table between BSON types, shared by `$convert`, its shorthands
//! (`$toInt`, `$toString`...) and anything else that converts values as MongoDB does. Failed
//! conversions are `ConversionFailure` errors, which `$convert`'s `onError` replaces. String
//! and binData conversions, which take a `format` and a `subtype`, are in `binary`.

mod binary;

use super::decimal::Dec;
use super::numeric::to_dec;
use super::parse_text::{parse_decimal, parse_double, parse_integer, parse_iso_date};
use super::value::{
    bson_type_name, format_double_g, format_double_shortest, format_iso_date, truthy, year_of,
};
use crate::error::{ErrorCode, MongoError, Result};
pub use binary::{Format, encode_base64};
use bson::oid::ObjectId;
use bson::{Bson, DateTime};

/// BSON type codes of the conversion targets.
pub mod target {
    pub const DOUBLE: i32 = 1;
    pub const STRING: i32 = 2;
    pub const BIN_DATA: i32 = 5;
    pub const OBJECT_ID: i32 = 7;
    pub const BOOL: i32 = 8;
    pub const DATE: i32 = 9;
    pub const INT: i32 = 16;
    pub const LONG: i32 = 18;
    pub const DECIMAL: i32 = 19;
}

fn failure(message: impl Into<String>) -> MongoError {
    MongoError::new(ErrorCode::ConversionFailure, message)
}

/// What `$convert` says about binary data besides the target type: the `subtype` of
/// `to: {type, subtype}` and the string `format`.
#[derive(Clone, Debug)]
pub struct BinaryArgs {
    pub subtype: Bson,
    pub format: Option<Format>,
}

/// [`convert`] with `$convert`'s binary arguments: string and binData conversions need a
/// `format`, and binData targets a `subtype`.
pub fn convert_with(value: &Bson, target: i32, binary: &BinaryArgs) -> Result<Bson> {
    match (value, target) {
        (Bson::Binary(data), target::STRING) => {
            Ok(Bson::String(binary::to_string(data, binary.format)?))
        }
        (Bson::String(text), target::BIN_DATA) => {
            binary::from_string(text, binary.format, &binary.subtype)
        }
        (Bson::Binary(data), target::BIN_DATA) => binary::to_binary(data, &binary.subtype),
        _ => convert(value, target),
    }
}

/// Converts a value that is not null, undefined or missing to the type with code `target`
/// (`crate::document::types` codes; 0 is "missing"), as the shorthands do.
pub fn convert(value: &Bson, target: i32) -> Result<Bson> {
    let unsupported = || {
        failure(format!(
            "Unsupported conversion from {} to {} in $convert with no onError value",
            bson_type_name(value),
            crate::document::types::type_alias_for_code(target).unwrap_or("missing")
        ))
    };
    Ok(match target {
        target::BOOL => Bson::Boolean(match value {
            Bson::Boolean(_)
            | Bson::Int32(_)
            | Bson::Int64(_)
            | Bson::Double(_)
            | Bson::Decimal128(_) => truthy(Some(value)),
            _ => true,
        }),
        target::STRING => Bson::String(to_string(value)?),
        target::DOUBLE => Bson::Double(match value {
            Bson::Double(v) => *v,
            Bson::Int32(v) => f64::from(*v),
            Bson::Int64(v) => *v as f64,
            Bson::Boolean(b) => f64::from(u8::from(*b)),
            Bson::DateTime(d) => d.timestamp_millis() as f64,
            Bson::Decimal128(d) => decimal_to_double(Dec::decode(*d))?,
            Bson::String(s) => parse_number(s, parse_double)?,
            _ => return Err(unsupported()),
        }),
        target::INT => Bson::Int32(match value {
            Bson::Int32(v) => *v,
            Bson::Boolean(b) => i32::from(*b),
            Bson::Int64(v) => i32::try_from(*v).map_err(|_| overflow(""))?,
            Bson::Double(v) => {
                finite(*v)?;
                if *v < f64::from(i32::MIN) || *v > f64::from(i32::MAX) {
                    return Err(overflow(&format_double_g(*v)));
                }
                *v as i32
            }
            Bson::Decimal128(d) => {
                let n = decimal_to_long(Dec::decode(*d))?;
                i32::try_from(n).map_err(|_| overflow(&d.to_string()))?
            }
            Bson::String(s) => {
                parse_number(s, |s| parse_integer(s, i32::MIN.into(), i32::MAX.into()))? as i32
            }
            _ => return Err(unsupported()),
        }),
        target::LONG => Bson::Int64(match value {
            Bson::Int64(v) => *v,
            Bson::Int32(v) => i64::from(*v),
            Bson::Boolean(b) => i64::from(*b),
            Bson::DateTime(d) => d.timestamp_millis(),
            Bson::Double(v) => double_to_long(*v)?,
            Bson::Decimal128(d) => decimal_to_long(Dec::decode(*d))?,
            Bson::String(s) => parse_number(s, |s| parse_integer(s, i64::MIN, i64::MAX))?,
            _ => return Err(unsupported()),
        }),
        target::DECIMAL => Bson::Decimal128(match value {
            Bson::Decimal128(d) => *d,
            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) => to_dec(value).encode(),
            Bson::Boolean(b) => Dec::from_i64(i64::from(*b)).encode(),
            Bson::DateTime(d) => Dec::from_i64(d.timestamp_millis()).encode(),
            Bson::String(s) => parse_number(s, parse_decimal)?.encode(),
            _ => return Err(unsupported()),
        }),
        target::OBJECT_ID => match value {
            Bson::ObjectId(oid) => Bson::ObjectId(*oid),
            Bson::String(s) => Bson::ObjectId(parse_object_id(s)?),
            _ => return Err(unsupported()),
        },
        target::DATE => Bson::DateTime(DateTime::from_millis(match value {
            Bson::DateTime(d) => d.timestamp_millis(),
            Bson::Int64(v) => *v,
            Bson::Double(v) => double_to_long(*v)?,
            Bson::Decimal128(d) => decimal_to_long(Dec::decode(*d))?,
            Bson::ObjectId(oid) => oid.timestamp().timestamp_millis(),
            Bson::Timestamp(ts) => i64::from(ts.time) * 1000,
            Bson::String(s) => parse_iso_date(s)
                .map_err(|reason| failure(format!("Error parsing date string '{s}'; {reason}")))?,
            _ => return Err(unsupported()),
        })),
        _ => return Err(unsupported()),
    })
}

fn overflow(shown: &str) -> MongoError {
    failure(format!(
        "Conversion would overflow target type in $convert with no onError value: {shown}"
    ))
}

fn finite(v: f64) -> Result<()> {
    if v.is_nan() {
        return Err(failure(
            "Attempt to convert NaN value to integer type in $convert with no onError value",
        ));
    }
    if v.is_infinite() {
        return Err(failure(
            "Attempt to convert infinity value to integer type in $convert with no onError value",
        ));
    }
    Ok(())
}

/// Truncates toward zero; the upper bound is exclusive because i64::MAX rounds up to 2^63.
fn double_to_long(v: f64) -> Result<i64> {
    finite(v)?;
    if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&v) {
        return Err(overflow(&format_double_g(v)));
    }
    Ok(v as i64)
}

fn decimal_to_long(d: Dec) -> Result<i64> {
    match d {
        Dec::NaN => finite(f64::NAN).map(|_| 0),
        Dec::Inf { .. } => finite(f64::INFINITY).map(|_| 0),
        finite_value => finite_value
            .to_i64_truncated()
            .ok_or_else(|| overflow(&finite_value.to_string())),
    }
}

/// Overflow and underflow fail; precision loss does not.
fn decimal_to_double(d: Dec) -> Result<f64> {
    let v = d.to_f64();
    let out_of_range = match d {
        Dec::Finite { coeff, .. } => v.is_infinite() || (coeff != 0 && !v.is_normal()),
        _ => false,
    };
    if out_of_range {
        return Err(overflow(&d.to_string()));
    }
    Ok(v)
}

/// Strings in hexadecimal (`0x`) are refused before parsing, whatever the target.
fn parse_number<T>(
    text: &str,
    parse: impl Fn(&str) -> std::result::Result<T, &'static str>,
) -> Result<T> {
    if text.starts_with("0x") || text.starts_with("0X") {
        return Err(failure(format!(
            "Illegal hexadecimal input in $convert with no onError value: {text}"
        )));
    }
    parse(text).map_err(|reason| {
        failure(format!(
            "Failed to parse number '{text}' in $convert with no onError value: {reason}"
        ))
    })
}

fn parse_object_id(text: &str) -> Result<ObjectId> {
    let reason = if text.len() != 24 {
        format!(
            "Invalid string length for parsing to OID, expected 24 but found {}",
            text.len()
        )
    } else {
        match ObjectId::parse_str(text) {
            Ok(oid) => return Ok(oid),
            Err(_) => format!("Invalid character found in hex string: {text}"),
        }
    };
    Err(failure(format!(
        "Failed to parse objectId '{text}' in $convert with no onError value: {reason}"
    )))
}

/// The string `$toString` and `$convert` produce; binary data is a UUID string for a UUID and
/// base64 otherwise.
pub fn to_string(value: &Bson) -> Result<String> {
    Ok(match value {
        Bson::String(s) => s.clone(),
        Bson::Boolean(b) => b.to_string(),
        Bson::Int32(v) => v.to_string(),
        Bson::Int64(v) => v.to_string(),
        Bson::Double(v) => format_double(*v),
        Bson::Decimal128(d) => d.to_string(),
        Bson::ObjectId(oid) => oid.to_hex(),
        Bson::DateTime(date) => {
            let millis = date.timestamp_millis();
            let year = year_of(millis);
            if !(0..=9999).contains(&year) {
                return Err(MongoError::location(
                    18537,
                    format!(
                        "Could not convert date to string: date component was outside the supported range of 0-9999: {year}"
                    ),
                ));
            }
            format_iso_date(millis)
        }
        Bson::Binary(data) => binary::to_string(data, Some(Format::Auto))?,
        other => {
            return Err(failure(format!(
                "Unsupported conversion from {} to string in $convert with no onError value",
                bson_type_name(other)
            )));
        }
    })
}

fn format_double(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    } else if v == 0.0 && v.is_sign_negative() {
        "-0".into()
    } else {
        format_double_shortest(v)
    }
}
