//! Literal, type and conversion operators: `$literal`, `$type`, `$toString`.

use super::{Args, Expression, Scope};
use super::{Arity, Operator, nary};
use crate::aggregate::value::{
    Value, bson_type_name, format_double_shortest, format_iso_date, type_name, year_of,
};
use crate::error::{ErrorCode, MongoError, Result};
use bson::Bson;
use bson::spec::BinarySubtype;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$literal",
        arity: Arity::Exactly(1),
        parse: parse_literal,
        eval: literal,
    },
    Operator {
        name: "$toString",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: to_string,
    },
    Operator {
        name: "$type",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: type_of,
    },
];

/// The argument is taken as is, without parsing `$` strings or operator objects.
pub fn parse_literal(
    _name: &'static str,
    argument: &Bson,
    _scope: &Scope,
) -> Result<Vec<Expression>> {
    Ok(vec![Expression::Constant(argument.clone())])
}

pub fn literal(args: &Args) -> Result<Value> {
    args.eval(0)
}

/// The type's name, `"missing"` for missing.
pub fn type_of(args: &Args) -> Result<Value> {
    Ok(Some(Bson::String(
        type_name(args.eval(0)?.as_ref()).to_string(),
    )))
}

/// `$convert` to string without `onError`: null and missing stay null, unsupported types fail.
pub fn to_string(args: &Args) -> Result<Value> {
    let text = match args.eval(0)? {
        None | Some(Bson::Null) | Some(Bson::Undefined) => return Ok(Some(Bson::Null)),
        Some(Bson::String(s)) => s,
        Some(Bson::Boolean(b)) => b.to_string(),
        Some(Bson::Int32(v)) => v.to_string(),
        Some(Bson::Int64(v)) => v.to_string(),
        Some(Bson::Double(v)) => format_double(v),
        Some(Bson::Decimal128(d)) => d.to_string(),
        Some(Bson::ObjectId(oid)) => oid.to_hex(),
        Some(Bson::DateTime(date)) => {
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
        Some(Bson::Binary(binary)) => {
            if binary.subtype == BinarySubtype::Uuid && binary.bytes.len() == 16 {
                format_uuid(&binary.bytes)
            } else {
                base64(&binary.bytes)
            }
        }
        Some(other) => {
            return Err(MongoError::new(
                ErrorCode::ConversionFailure,
                format!(
                    "Unsupported conversion from {} to string in $convert with no onError value",
                    bson_type_name(&other)
                ),
            ));
        }
    };
    Ok(Some(Bson::String(text)))
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

fn format_uuid(bytes: &[u8]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let (a, rest) = hex.split_at(8);
    let (b, rest) = rest.split_at(4);
    let (c, rest) = rest.split_at(4);
    let (d, e) = rest.split_at(4);
    format!("{a}-{b}-{c}-{d}-{e}")
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 0x3f) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::aggregate::expression::tests::eval;
    use bson::{Binary, Bson, DateTime, bson, doc, oid::ObjectId, spec::BinarySubtype};

    fn to_string(value: Bson) -> crate::error::Result<Option<Bson>> {
        eval(bson!({"$toString": "$v"}), &doc! {"v": value})
    }

    fn text(value: Bson) -> Bson {
        to_string(value).unwrap().unwrap()
    }

    #[test]
    fn type_names() {
        let d = doc! {"i": 1, "l": 2_i64, "s": "x", "n": null};
        for (path, name) in [
            ("$i", "int"),
            ("$l", "long"),
            ("$s", "string"),
            ("$n", "null"),
            ("$missing", "missing"),
        ] {
            assert_eq!(
                eval(bson!({"$type": path}), &d).unwrap(),
                Some(Bson::String(name.into()))
            );
        }
        assert_eq!(
            eval(bson!({"$type": [[1]]}), &d).unwrap(),
            Some(Bson::String("array".into()))
        );
    }

    #[test]
    fn to_string_converts_scalars() {
        assert_eq!(text(Bson::Int32(42)), Bson::String("42".into()));
        assert_eq!(text(Bson::Double(1.0)), Bson::String("1".into()));
        assert_eq!(text(Bson::Double(0.1)), Bson::String("0.1".into()));
        assert_eq!(text(Bson::Double(-0.0)), Bson::String("-0".into()));
        assert_eq!(text(Bson::Double(f64::NAN)), Bson::String("NaN".into()));
        assert_eq!(
            text(Bson::Double(f64::NEG_INFINITY)),
            Bson::String("-Infinity".into())
        );
        assert_eq!(text(Bson::Boolean(true)), Bson::String("true".into()));
        assert_eq!(
            text(Bson::Decimal128("1.50".parse().unwrap())),
            Bson::String("1.50".into())
        );
        let oid = ObjectId::parse_str("5f1d7a3b2c4e6a8b9c0d1e2f").unwrap();
        assert_eq!(
            text(Bson::ObjectId(oid)),
            Bson::String("5f1d7a3b2c4e6a8b9c0d1e2f".into())
        );
        assert_eq!(
            text(Bson::DateTime(DateTime::from_millis(1_522_169_931_538))),
            Bson::String("2018-03-27T16:58:51.538Z".into())
        );
        assert_eq!(to_string(Bson::Null).unwrap(), Some(Bson::Null));
        assert_eq!(
            eval(bson!({"$toString": "$missing"}), &doc! {}).unwrap(),
            Some(Bson::Null)
        );
        let uuid = Binary {
            subtype: BinarySubtype::Uuid,
            bytes: (0u8..16).collect(),
        };
        assert_eq!(
            text(Bson::Binary(uuid)),
            Bson::String("00010203-0405-0607-0809-0a0b0c0d0e0f".into())
        );
        let blob = Binary {
            subtype: BinarySubtype::Generic,
            bytes: b"hello".to_vec(),
        };
        assert_eq!(text(Bson::Binary(blob)), Bson::String("aGVsbG8=".into()));
    }

    #[test]
    fn to_string_rejects_documents() {
        let err = to_string(bson!({"a": 1})).unwrap_err();
        assert_eq!(err.code().name(), "ConversionFailure");
        assert_eq!(
            err.message(),
            "Unsupported conversion from object to string in $convert with no onError value"
        );
        assert_eq!(
            to_string(Bson::DateTime(DateTime::from_millis(253_402_300_800_000)))
                .unwrap_err()
                .code()
                .code(),
            18537
        );
    }
}
