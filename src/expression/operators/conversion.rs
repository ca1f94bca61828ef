//! Type conversion operators: `$convert`, its shorthands `$toBool`, `$toDate`, `$toDecimal`,
//! `$toDouble`, `$toInt`, `$toLong`, `$toObjectId`, `$toString`, `$toUUID`, and `$isNumber`.
//! The conversion table itself is `expression::convert`.

use super::{Args, Expression, Scope};
use super::{Arity, Operator, nary};
use crate::document::types::{type_alias_for_code, type_code_for_alias};
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::convert::{
    BinaryArgs, Format, convert as convert_value, convert_with, target,
};
use crate::expression::value::{Value, bson_type_name, is_nullish, is_number};
use bson::Bson;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$convert",
        arity: Arity::Exactly(6),
        parse: parse_convert,
        eval: convert,
    },
    Operator {
        name: "$isNumber",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: is_number_op,
    },
    Operator {
        name: "$toBool",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: to_bool,
    },
    Operator {
        name: "$toDate",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: to_date,
    },
    Operator {
        name: "$toDecimal",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: to_decimal,
    },
    Operator {
        name: "$toDouble",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: to_double,
    },
    Operator {
        name: "$toInt",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: to_int,
    },
    Operator {
        name: "$toLong",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: to_long,
    },
    Operator {
        name: "$toObjectId",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: to_object_id,
    },
    Operator {
        name: "$toString",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: to_string,
    },
    Operator {
        name: "$toUUID",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: to_uuid,
    },
];

/// Which of `onError` and `onNull` were given, in the first (constant) argument.
const HAS_ON_ERROR: i32 = 1;
const HAS_ON_NULL: i32 = 2;

/// `{input, to, format?, onError?, onNull?}` becomes `[flags, input, to, onError, onNull,
/// format]`, absent fields as missing constants and `flags` saying which were given: an `onError` that
/// evaluates to missing is not the same as no `onError`.
pub fn parse_convert(
    name: &'static str,
    argument: &Bson,
    scope: &Scope,
) -> Result<Vec<Expression>> {
    let Bson::Document(spec) = argument else {
        return Err(MongoError::failed_to_parse(format!(
            "{name} expects an object of named arguments but found: {}",
            bson_type_name(argument)
        )));
    };
    let (mut input, mut to, mut on_error, mut on_null, mut format) = (None, None, None, None, None);
    for (field, value) in spec {
        let slot = match field.as_str() {
            "input" => &mut input,
            "to" => &mut to,
            "onError" => &mut on_error,
            "onNull" => &mut on_null,
            "format" => &mut format,
            _ => {
                return Err(MongoError::failed_to_parse(format!(
                    "{name} found an unknown argument: {field}"
                )));
            }
        };
        *slot = Some(Expression::parse_in(value, scope)?);
    }
    let input = input.ok_or_else(|| {
        MongoError::failed_to_parse(format!("Missing 'input' parameter to {name}"))
    })?;
    let to =
        to.ok_or_else(|| MongoError::failed_to_parse(format!("Missing 'to' parameter to {name}")))?;
    let flags = if on_error.is_some() { HAS_ON_ERROR } else { 0 }
        | if on_null.is_some() { HAS_ON_NULL } else { 0 };
    let absent = || Expression::Path {
        base: super::super::Base::Remove,
        parts: Vec::new(),
    };
    Ok(vec![
        Expression::Constant(Bson::Int32(flags)),
        input,
        to,
        on_error.unwrap_or_else(absent),
        on_null.unwrap_or_else(absent),
        format.unwrap_or_else(absent),
    ])
}

/// `to` is evaluated first, then `input` and `format`; a bad `to` is an error even for a null
/// input (and `onError` does not cover it), a null `to` makes the result null. A bad `format`
/// is an error only for a conversion that happens, and `onError` does not cover it either.
pub fn convert(args: &Args) -> Result<Value> {
    let flags = match args.eval(0)? {
        Some(Bson::Int32(flags)) => flags,
        _ => 0,
    };
    let to = args.eval(2)?;
    let input = args.eval(1)?;
    let format = args.eval(5)?;
    let target = target_type(to.as_ref())?;
    let Some(input) = input.filter(|v| !is_nullish(Some(v))) else {
        if flags & HAS_ON_NULL != 0 {
            return args.eval(4);
        }
        return Ok(Some(Bson::Null));
    };
    let Some((target, subtype)) = target else {
        return Ok(Some(Bson::Null));
    };
    let binary = BinaryArgs {
        subtype,
        format: Format::parse(format.as_ref())?,
    };
    match convert_with(&input, target, &binary) {
        Ok(value) => Ok(Some(value)),
        Err(err) if err.code() == ErrorCode::ConversionFailure && flags & HAS_ON_ERROR != 0 => {
            args.eval(3)
        }
        Err(err) => Err(err),
    }
}

/// The type code `to` names (a type name, a type number, or `{type: ..., subtype: ...}`) and
/// the binData subtype (0 unless the object gives one); `None` when it is null or missing.
fn target_type(to: Option<&Bson>) -> Result<Option<(i32, Bson)>> {
    let (to, subtype) = match to {
        Some(Bson::Document(spec)) if spec.contains_key("type") => (
            spec.get("type"),
            spec.get("subtype").cloned().unwrap_or(Bson::Int32(0)),
        ),
        other => (other, Bson::Int32(0)),
    };
    let code = match to {
        None | Some(Bson::Null) | Some(Bson::Undefined) => Ok(None),
        Some(Bson::String(name)) => match (name.as_str(), type_code_for_alias(name)) {
            ("missing", _) => Ok(Some(0)),
            (_, Some(code)) => Ok(Some(code)),
            (_, None) => Err(MongoError::bad_value(format!("Unknown type name: {name}"))),
        },
        Some(number) if is_number(number) => {
            let code = match number {
                Bson::Int32(v) => Some(i64::from(*v)),
                Bson::Int64(v) => Some(*v),
                Bson::Double(v) if v.fract() == 0.0 && v.abs() < 1e18 => Some(*v as i64),
                Bson::Decimal128(d) => crate::expression::decimal::Dec::decode(*d).to_i64_exact(),
                _ => None,
            };
            let Some(code) = code else {
                return Err(MongoError::failed_to_parse(
                    "In $convert, numeric 'to' argument is not an integer",
                ));
            };
            match i32::try_from(code)
                .ok()
                .filter(|c| *c == 0 || type_alias_for_code(*c).is_some())
            {
                Some(code) => Ok(Some(code)),
                None => Err(MongoError::failed_to_parse(format!(
                    "In $convert, numeric value for 'to' does not correspond to a BSON type: {code}"
                ))),
            }
        }
        Some(other) => Err(MongoError::failed_to_parse(format!(
            "$convert's 'to' argument must be a string or number, but is {}",
            bson_type_name(other)
        ))),
    }?;
    Ok(code.map(|code| (code, subtype)))
}

/// The shorthands: `$convert` without `onError` or `onNull`.
fn shorthand(args: &Args, target: i32) -> Result<Value> {
    match args.eval(0)? {
        Some(value) if !is_nullish(Some(&value)) => Ok(Some(convert_value(&value, target)?)),
        _ => Ok(Some(Bson::Null)),
    }
}

pub fn to_bool(args: &Args) -> Result<Value> {
    shorthand(args, target::BOOL)
}

pub fn to_date(args: &Args) -> Result<Value> {
    shorthand(args, target::DATE)
}

pub fn to_decimal(args: &Args) -> Result<Value> {
    shorthand(args, target::DECIMAL)
}

pub fn to_double(args: &Args) -> Result<Value> {
    shorthand(args, target::DOUBLE)
}

pub fn to_int(args: &Args) -> Result<Value> {
    shorthand(args, target::INT)
}

pub fn to_long(args: &Args) -> Result<Value> {
    shorthand(args, target::LONG)
}

pub fn to_object_id(args: &Args) -> Result<Value> {
    shorthand(args, target::OBJECT_ID)
}

pub fn to_string(args: &Args) -> Result<Value> {
    shorthand(args, target::STRING)
}

/// `$convert` to binData subtype 4 from a string in the `uuid` format.
pub fn to_uuid(args: &Args) -> Result<Value> {
    let uuid = BinaryArgs {
        subtype: Bson::Int32(4),
        format: Some(Format::Uuid),
    };
    match args.eval(0)? {
        Some(value) if !is_nullish(Some(&value)) => {
            Ok(Some(convert_with(&value, target::BIN_DATA, &uuid)?))
        }
        _ => Ok(Some(Bson::Null)),
    }
}

/// Whether the value is an int, long, double or decimal (false for missing).
pub fn is_number_op(args: &Args) -> Result<Value> {
    Ok(Some(Bson::Boolean(
        args.eval(0)?.as_ref().is_some_and(is_number),
    )))
}

#[cfg(test)]
#[path = "conversion_binary_tests.rs"]
mod binary_tests;

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
    use bson::{
        Binary, Bson, DateTime, Decimal128, Timestamp, bson, doc, oid::ObjectId,
        spec::BinarySubtype,
    };

    fn to_string(value: Bson) -> crate::error::Result<Option<Bson>> {
        eval(bson!({"$toString": "$v"}), &doc! {"v": value})
    }

    fn text(value: Bson) -> Bson {
        to_string(value).unwrap().unwrap()
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

    fn ok(expr: Bson) -> Option<Bson> {
        eval(expr, &doc! {}).unwrap()
    }

    fn err(expr: Bson) -> (i32, String) {
        let e = eval(expr, &doc! {}).unwrap_err();
        (e.code().code(), e.message().to_string())
    }

    fn dec(text: &str) -> Bson {
        Bson::Decimal128(text.parse::<Decimal128>().unwrap())
    }

    fn shown(value: Option<Bson>) -> String {
        match value {
            Some(Bson::Decimal128(d)) => d.to_string(),
            other => format!("{other:?}"),
        }
    }

    fn date(millis: i64) -> Option<Bson> {
        Some(Bson::DateTime(DateTime::from_millis(millis)))
    }

    #[test]
    fn to_int_and_to_long() {
        assert_eq!(ok(bson!({"$toInt": 2.5})), Some(Bson::Int32(2)));
        assert_eq!(ok(bson!({"$toInt": -2.9})), Some(Bson::Int32(-2)));
        assert_eq!(ok(bson!({"$toInt": "2"})), Some(Bson::Int32(2)));
        assert_eq!(ok(bson!({"$toInt": true})), Some(Bson::Int32(1)));
        assert_eq!(ok(bson!({"$toInt": 5000_i64})), Some(Bson::Int32(5000)));
        assert_eq!(ok(bson!({"$toInt": dec("-5.9")})), Some(Bson::Int32(-5)));
        assert_eq!(ok(bson!({"$toInt": null})), Some(Bson::Null));
        assert_eq!(ok(bson!({"$toLong": "100"})), Some(Bson::Int64(100)));
        assert_eq!(
            ok(bson!({"$toLong": 1.5e10})),
            Some(Bson::Int64(15_000_000_000))
        );
        let d = doc! {"d": DateTime::from_millis(1_522_127_087_890)};
        assert_eq!(
            eval(bson!({"$toLong": "$d"}), &d).unwrap(),
            Some(Bson::Int64(1_522_127_087_890))
        );
        assert_eq!(
            err(bson!({"$toInt": "1.5"})),
            (
                241,
                "Failed to parse number '1.5' in $convert with no onError value: Did not consume whole string.".into()
            )
        );
        assert_eq!(err(bson!({"$toInt": "  1"})).0, 241);
        assert_eq!(err(bson!({"$toLong": "1e3"})).0, 241);
        assert_eq!(
            err(bson!({"$toInt": "0x1A"})),
            (
                241,
                "Illegal hexadecimal input in $convert with no onError value: 0x1A".into()
            )
        );
        assert_eq!(
            err(bson!({"$toInt": 2_147_483_648.0})),
            (
                241,
                "Conversion would overflow target type in $convert with no onError value: 2.14748e+09".into()
            )
        );
        assert_eq!(err(bson!({"$toInt": 1_i64 << 40})).0, 241);
        assert_eq!(err(bson!({"$toInt": "2147483648"})).0, 241);
        assert_eq!(err(bson!({"$toLong": 9.3e18})).0, 241);
        assert_eq!(err(bson!({"$toLong": dec("1E+19")})).0, 241);
        assert_eq!(
            err(bson!({"$toInt": f64::NAN})).1,
            "Attempt to convert NaN value to integer type in $convert with no onError value"
        );
        assert_eq!(
            err(bson!({"$toLong": dec("-Infinity")})).1,
            "Attempt to convert infinity value to integer type in $convert with no onError value"
        );
        let d = doc! {"d": DateTime::from_millis(0)};
        let e = eval(bson!({"$toInt": "$d"}), &d).unwrap_err();
        assert_eq!(
            e.message(),
            "Unsupported conversion from date to int in $convert with no onError value"
        );
    }

    #[test]
    fn to_double_and_to_decimal() {
        assert_eq!(ok(bson!({"$toDouble": true})), Some(Bson::Double(1.0)));
        assert_eq!(ok(bson!({"$toDouble": "-5.5"})), Some(Bson::Double(-5.5)));
        assert_eq!(ok(bson!({"$toDouble": "1e3"})), Some(Bson::Double(1000.0)));
        assert_eq!(ok(bson!({"$toDouble": 7_i64})), Some(Bson::Double(7.0)));
        assert_eq!(
            ok(bson!({"$toDouble": dec("2.5")})),
            Some(Bson::Double(2.5))
        );
        let d = doc! {"d": DateTime::from_millis(1_522_127_087_890)};
        assert_eq!(
            eval(bson!({"$toDouble": "$d"}), &d).unwrap(),
            Some(Bson::Double(1_522_127_087_890.0))
        );
        assert_eq!(err(bson!({"$toDouble": dec("1E+400")})).0, 241);
        assert_eq!(err(bson!({"$toDouble": "1e400"})).0, 241);
        assert_eq!(err(bson!({"$toDouble": " 1"})).0, 241);
        assert_eq!(shown(ok(bson!({"$toDecimal": 2.5}))), "2.50000000000000");
        assert_eq!(shown(ok(bson!({"$toDecimal": "-5.5"}))), "-5.5");
        assert_eq!(shown(ok(bson!({"$toDecimal": true}))), "1");
        assert_eq!(shown(ok(bson!({"$toDecimal": 5000_i64}))), "5000");
        assert_eq!(
            shown(eval(bson!({"$toDecimal": "$d"}), &d).unwrap()),
            "1522127087890"
        );
        assert_eq!(err(bson!({"$toDecimal": "abc"})).0, 241);
    }

    #[test]
    fn to_bool_is_true_for_everything_but_false_and_zero() {
        for (value, expected) in [
            (bson!("false"), true),
            (bson!(""), true),
            (bson!(0), false),
            (bson!(0.0), false),
            (dec("0.00"), false),
            (bson!(2_i64), true),
            (bson!(false), false),
            (bson!([]), true),
            (bson!({}), true),
            (Bson::DateTime(DateTime::from_millis(0)), true),
            (Bson::MinKey, true),
        ] {
            let d = doc! {"v": value};
            assert_eq!(
                eval(bson!({"$toBool": "$v"}), &d).unwrap(),
                Some(Bson::Boolean(expected))
            );
        }
        assert_eq!(ok(bson!({"$toBool": "$missing"})), Some(Bson::Null));
    }

    #[test]
    fn to_date_and_to_object_id() {
        assert_eq!(
            ok(bson!({"$toDate": 120_000_000_000.5})),
            date(120_000_000_000)
        );
        assert_eq!(
            ok(bson!({"$toDate": dec("1253372036000.50")})),
            date(1_253_372_036_000)
        );
        assert_eq!(
            ok(bson!({"$toDate": -1_100_000_000_000_i64})),
            date(-1_100_000_000_000)
        );
        assert_eq!(
            ok(bson!({"$toDate": "2018-03-03"})),
            date(1_520_035_200_000)
        );
        assert_eq!(
            ok(bson!({"$toDate": "2018-03-20 11:00:06 +0500"})),
            date(1_521_525_606_000)
        );
        let oid = ObjectId::parse_str("5ab9c3da31c2ab715d421285").unwrap();
        let d = doc! {"o": oid, "t": Timestamp { time: 10, increment: 1 }};
        assert_eq!(
            eval(bson!({"$toDate": "$o"}), &d).unwrap(),
            date(1_522_123_738_000)
        );
        assert_eq!(eval(bson!({"$toDate": "$t"}), &d).unwrap(), date(10_000));
        let (code, message) = err(bson!({"$toDate": "not a date"}));
        assert_eq!(code, 241);
        assert!(
            message.starts_with("Error parsing date string 'not a date'"),
            "{message}"
        );
        assert_eq!(err(bson!({"$toDate": 5})).0, 241);
        assert_eq!(err(bson!({"$toDate": true})).0, 241);
        assert_eq!(
            ok(bson!({"$toObjectId": "5ab9c3da31c2ab715d421285"})),
            Some(Bson::ObjectId(oid))
        );
        assert_eq!(
            err(bson!({"$toObjectId": "5ab9"})).1,
            "Failed to parse objectId '5ab9' in $convert with no onError value: Invalid string length for parsing to OID, expected 24 but found 4"
        );
        assert_eq!(
            err(bson!({"$toObjectId": "zzb9c3da31c2ab715d421285"})).0,
            241
        );
        assert_eq!(err(bson!({"$toObjectId": 1})).0, 241);
    }

    #[test]
    fn convert_with_on_error_and_on_null() {
        let d = doc! {"p": "1.5x", "n": null};
        let run = |spec: Bson| eval(bson!({"$convert": spec}), &d);
        assert_eq!(
            run(bson!({"input": "$p", "to": "decimal", "onError": "Error", "onNull": 0})).unwrap(),
            Some(Bson::String("Error".into()))
        );
        assert_eq!(
            run(bson!({"input": "$n", "to": "decimal", "onError": "Error", "onNull": 0})).unwrap(),
            Some(Bson::Int32(0))
        );
        assert_eq!(
            run(bson!({"input": "$missing", "to": "int"})).unwrap(),
            Some(Bson::Null)
        );
        assert_eq!(
            run(bson!({"input": "$p", "to": "int", "onError": "$missing"})).unwrap(),
            None
        );
        assert_eq!(
            run(bson!({"input": null, "to": null, "onNull": "X"})).unwrap(),
            Some(Bson::String("X".into()))
        );
        assert_eq!(
            run(bson!({"input": "1", "to": null, "onNull": "X"})).unwrap(),
            Some(Bson::Null)
        );
        assert_eq!(
            run(bson!({"input": "12", "to": 16})).unwrap(),
            Some(Bson::Int32(12))
        );
        assert_eq!(
            run(bson!({"input": "12", "to": 18.0})).unwrap(),
            Some(Bson::Int64(12))
        );
        assert_eq!(
            run(bson!({"input": 12, "to": {"type": "string"}})).unwrap(),
            Some(Bson::String("12".into()))
        );
        assert_eq!(
            run(bson!({"input": "$p", "to": "int"}))
                .unwrap_err()
                .code()
                .code(),
            241
        );
        // Conversions to types $convert cannot produce fail, and onError covers them.
        for to in ["minKey", "missing", "object", "null", "timestamp"] {
            let e = run(bson!({"input": 1.0, "to": to})).unwrap_err();
            assert_eq!(e.code().code(), 241, "{to}");
            assert_eq!(
                run(bson!({"input": 1.0, "to": to, "onError": "X"})).unwrap(),
                Some(Bson::String("X".into()))
            );
        }
        assert_eq!(
            run(bson!({"input": 1.0, "to": "minKey"}))
                .unwrap_err()
                .message(),
            "Unsupported conversion from double to minKey in $convert with no onError value"
        );
    }

    #[test]
    fn convert_target_errors_are_not_conversion_failures() {
        let run = |spec: Bson| eval(bson!({"$convert": spec}), &doc! {}).unwrap_err();
        let e = run(bson!({"input": "$x", "to": "dinosaur", "onError": 0}));
        assert_eq!(
            (e.code().code(), e.message()),
            (2, "Unknown type name: dinosaur")
        );
        let e = run(bson!({"input": "$x", "to": 3.6, "onError": 0}));
        assert_eq!(
            (e.code().code(), e.message()),
            (9, "In $convert, numeric 'to' argument is not an integer")
        );
        let e = run(bson!({"input": "$x", "to": 100, "onError": 0}));
        assert_eq!(
            (e.code().code(), e.message()),
            (
                9,
                "In $convert, numeric value for 'to' does not correspond to a BSON type: 100"
            )
        );
        assert_eq!(run(bson!({"input": 1, "to": -2})).code().code(), 9);
        let e = run(bson!({"input": 1, "to": {"dinosaur": "T. rex"}, "onError": 0}));
        assert_eq!(
            (e.code().code(), e.message()),
            (
                9,
                "$convert's 'to' argument must be a string or number, but is object"
            )
        );
    }

    #[test]
    fn convert_parse_errors() {
        let parse = |spec: Bson| eval(bson!({"$convert": spec}), &doc! {}).unwrap_err();
        let e = parse(bson!("int"));
        assert_eq!(
            (e.code().code(), e.message()),
            (
                9,
                "$convert expects an object of named arguments but found: string"
            )
        );
        let e = parse(bson!({"input": 1, "to": "int", "targetType": 1}));
        assert_eq!(
            e.message(),
            "$convert found an unknown argument: targetType"
        );
        assert_eq!(
            parse(bson!({"to": "int"})).message(),
            "Missing 'input' parameter to $convert"
        );
        assert_eq!(
            parse(bson!({"input": 1})).message(),
            "Missing 'to' parameter to $convert"
        );
        assert_eq!(
            eval(bson!({"$toInt": [1, 2]}), &doc! {})
                .unwrap_err()
                .code()
                .code(),
            16020
        );
    }

    #[test]
    fn is_number() {
        for (value, expected) in [
            (bson!(1), true),
            (bson!(1_i64), true),
            (bson!(1.5), true),
            (dec("1"), true),
            (bson!("1"), false),
            (Bson::Null, false),
        ] {
            let d = doc! {"v": value};
            assert_eq!(
                eval(bson!({"$isNumber": "$v"}), &d).unwrap(),
                Some(Bson::Boolean(expected))
            );
        }
        assert_eq!(
            ok(bson!({"$isNumber": "$missing"})),
            Some(Bson::Boolean(false))
        );
    }
}
