//! String operators: `$concat`, `$toLower`, `$toUpper`.

use super::Args;
use super::{Arity, Operator, nary};
use crate::aggregate::value::{
    Value, bson_type_name, format_double_g, format_iso_date, is_nullish,
};
use crate::error::{MongoError, Result};
use bson::Bson;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$concat",
        arity: Arity::Any,
        parse: nary,
        eval: concat,
    },
    Operator {
        name: "$toLower",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: to_lower,
    },
    Operator {
        name: "$toUpper",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: to_upper,
    },
];

/// Null if any argument is null or missing (checked left to right, after the type of the
/// arguments before it).
pub fn concat(args: &Args) -> Result<Value> {
    let mut out = String::new();
    for i in 0..args.len() {
        match args.eval(i)? {
            Some(Bson::String(s)) => out.push_str(&s),
            value if is_nullish(value.as_ref()) => return Ok(Some(Bson::Null)),
            Some(other) => {
                return Err(MongoError::location(
                    16702,
                    format!(
                        "$concat only supports strings, not {}",
                        bson_type_name(&other)
                    ),
                ));
            }
            None => return Ok(Some(Bson::Null)),
        }
    }
    Ok(Some(Bson::String(out)))
}

/// Case mapping is ASCII-only, as in the server.
pub fn to_lower(args: &Args) -> Result<Value> {
    Ok(Some(Bson::String(
        coerce_to_string(args.eval(0)?.as_ref())?.to_ascii_lowercase(),
    )))
}

pub fn to_upper(args: &Args) -> Result<Value> {
    Ok(Some(Bson::String(
        coerce_to_string(args.eval(0)?.as_ref())?.to_ascii_uppercase(),
    )))
}

/// `Value::coerceToString`: null and missing become the empty string.
fn coerce_to_string(value: Option<&Bson>) -> Result<String> {
    Ok(match value {
        None | Some(Bson::Null) | Some(Bson::Undefined) => String::new(),
        Some(Bson::String(s)) | Some(Bson::Symbol(s)) | Some(Bson::JavaScriptCode(s)) => s.clone(),
        Some(Bson::Int32(v)) => v.to_string(),
        Some(Bson::Int64(v)) => v.to_string(),
        Some(Bson::Double(v)) => format_double_g(*v),
        Some(Bson::Decimal128(d)) => d.to_string(),
        Some(Bson::DateTime(d)) => format_iso_date(d.timestamp_millis()),
        Some(Bson::Timestamp(ts)) => format!("Timestamp({}, {})", ts.time, ts.increment),
        Some(other) => {
            return Err(MongoError::location(
                16007,
                format!(
                    "can't convert from BSON type {} to String",
                    bson_type_name(other)
                ),
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use crate::aggregate::expression::tests::eval;
    use bson::{Bson, DateTime, bson, doc};

    fn string(expr: Bson) -> Option<Bson> {
        eval(
            expr,
            &doc! {"s": "MiXed", "n": 2.5, "d": DateTime::from_millis(0), "o": {}},
        )
        .unwrap()
    }

    #[test]
    fn concat_needs_strings() {
        assert_eq!(
            string(bson!({"$concat": ["a", "$s", "b"]})),
            Some(Bson::String("aMiXedb".into()))
        );
        assert_eq!(
            string(bson!({"$concat": []})),
            Some(Bson::String(String::new()))
        );
        assert_eq!(
            string(bson!({"$concat": ["a", "$missing"]})),
            Some(Bson::Null)
        );
        let err = eval(bson!({"$concat": ["a", 1]}), &doc! {}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (16702, "$concat only supports strings, not int")
        );
    }

    #[test]
    fn case_mapping_coerces_to_string() {
        assert_eq!(
            string(bson!({"$toLower": "$s"})),
            Some(Bson::String("mixed".into()))
        );
        assert_eq!(
            string(bson!({"$toUpper": ["$s"]})),
            Some(Bson::String("MIXED".into()))
        );
        assert_eq!(
            string(bson!({"$toUpper": "$missing"})),
            Some(Bson::String(String::new()))
        );
        assert_eq!(
            string(bson!({"$toLower": "$n"})),
            Some(Bson::String("2.5".into()))
        );
        assert_eq!(
            string(bson!({"$toLower": "$d"})),
            Some(Bson::String("1970-01-01t00:00:00.000z".into()))
        );
        assert_eq!(
            string(bson!({"$toUpper": "é"})),
            Some(Bson::String("é".into()))
        );
        let err = eval(bson!({"$toLower": "$o"}), &doc! {"o": {}}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (16007, "can't convert from BSON type object to String")
        );
    }
}
