//! String operators on whole strings: `$concat`, `$toLower`, `$toUpper`, `$strcasecmp`,
//! `$strLenBytes`, `$strLenCP`, `$split`.

use super::Args;
use super::{Arity, Operator, nary};
use crate::error::{MongoError, Result};
use crate::expression::value::{
    Value, bson_type_name, format_double_g, format_iso_date, is_nullish, type_name,
};
use bson::Bson;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$concat",
        arity: Arity::Any,
        parse: nary,
        eval: concat,
    },
    Operator {
        name: "$split",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: split,
    },
    Operator {
        name: "$strLenBytes",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: str_len_bytes,
    },
    Operator {
        name: "$strLenCP",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: str_len_cp,
    },
    Operator {
        name: "$strcasecmp",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: strcasecmp,
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

/// Compares the ASCII upper-cased strings byte by byte (upper, not lower: `_` sorts after
/// the letters only that way, as in the server): -1, 0 or 1.
pub fn strcasecmp(args: &Args) -> Result<Value> {
    let (left, right) = args.eval_pair()?;
    let left = coerce_to_string(left.as_ref())?.to_ascii_uppercase();
    let right = coerce_to_string(right.as_ref())?.to_ascii_uppercase();
    Ok(Some(Bson::Int32(match left.cmp(&right) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    })))
}

pub fn str_len_bytes(args: &Args) -> Result<Value> {
    match args.eval(0)? {
        Some(Bson::String(s)) => string_length(s.len(), 34470),
        other => Err(MongoError::location(
            34473,
            format!(
                "$strLenBytes requires a string argument, found: {}",
                type_name(other.as_ref())
            ),
        )),
    }
}

pub fn str_len_cp(args: &Args) -> Result<Value> {
    match args.eval(0)? {
        Some(Bson::String(s)) => string_length(s.chars().count(), 34472),
        other => Err(MongoError::location(
            34471,
            format!(
                "$strLenCP requires a string argument, found: {}",
                type_name(other.as_ref())
            ),
        )),
    }
}

/// Lengths are ints; a longer string (impossible within a 16MB document) is an error.
fn string_length(len: usize, code: i32) -> Result<Value> {
    i32::try_from(len)
        .map(|len| Some(Bson::Int32(len)))
        .map_err(|_| {
            MongoError::location(code, "string length could not be represented as an int.")
        })
}

/// Null if either argument is null or missing; a separator at either end yields an empty
/// string there.
pub fn split(args: &Args) -> Result<Value> {
    let (input, separator) = args.eval_pair()?;
    if is_nullish(input.as_ref()) || is_nullish(separator.as_ref()) {
        return Ok(Some(Bson::Null));
    }
    let Some(Bson::String(input)) = input else {
        return Err(MongoError::location(
            40085,
            format!(
                "$split requires an expression that evaluates to a string as a first argument, found: {}",
                type_name(input.as_ref())
            ),
        ));
    };
    let Some(Bson::String(separator)) = separator else {
        return Err(MongoError::location(
            40086,
            format!(
                "$split requires an expression that evaluates to a string as a second argument, found: {}",
                type_name(separator.as_ref())
            ),
        ));
    };
    if separator.is_empty() {
        return Err(MongoError::location(
            40087,
            "$split requires a non-empty separator",
        ));
    }
    Ok(Some(Bson::Array(
        input
            .split(separator.as_str())
            .map(|part| Bson::String(part.to_string()))
            .collect(),
    )))
}

/// `Value::coerceToString`: null and missing become the empty string.
pub(super) fn coerce_to_string(value: Option<&Bson>) -> Result<String> {
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
    use crate::expression::tests::eval;
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

    fn code(expr: Bson) -> i32 {
        eval(expr, &doc! {"o": {}}).unwrap_err().code().code()
    }

    #[test]
    fn strcasecmp_compares_upper_cased_strings() {
        for (a, b, expected) in [
            ("13Q1", "13q4", -1),
            ("13Q4", "13q4", 0),
            ("14Q2", "13q4", 1),
            // '_' is between the upper and the lower case letters.
            ("a", "_", -1),
            ("", "", 0),
        ] {
            assert_eq!(
                string(bson!({"$strcasecmp": [a, b]})),
                Some(Bson::Int32(expected)),
                "{a} vs {b}"
            );
        }
        assert_eq!(
            string(bson!({"$strcasecmp": ["$missing", null]})),
            Some(Bson::Int32(0))
        );
        assert_eq!(
            string(bson!({"$strcasecmp": [2.5, "$n"]})),
            Some(Bson::Int32(0))
        );
        assert_eq!(code(bson!({"$strcasecmp": ["a", "$o"]})), 16007);
        assert_eq!(code(bson!({"$strcasecmp": ["a"]})), 16020);
    }

    #[test]
    fn string_lengths_in_bytes_and_code_points() {
        for (s, bytes, code_points) in [
            ("abcde", 5, 5),
            ("Hello World!", 12, 12),
            ("cafétéria", 11, 9),
            ("", 0, 0),
            ("寿司", 6, 2),
            ("\u{1F600}", 4, 1),
        ] {
            assert_eq!(
                string(bson!({"$strLenBytes": s})),
                Some(Bson::Int32(bytes)),
                "{s}"
            );
            assert_eq!(
                string(bson!({"$strLenCP": [s]})),
                Some(Bson::Int32(code_points)),
                "{s}"
            );
        }
        let err = eval(bson!({"$strLenBytes": "$missing"}), &doc! {}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                34473,
                "$strLenBytes requires a string argument, found: missing"
            )
        );
        let err = eval(bson!({"$strLenCP": null}), &doc! {}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (34471, "$strLenCP requires a string argument, found: null")
        );
        assert_eq!(code(bson!({"$strLenCP": 1})), 34471);
    }

    #[test]
    fn split_on_a_separator() {
        assert_eq!(
            string(bson!({"$split": ["June-15-2013", "-"]})),
            Some(bson!(["June", "15", "2013"]))
        );
        assert_eq!(
            string(bson!({"$split": ["banana split", "a"]})),
            Some(bson!(["b", "n", "n", " split"]))
        );
        assert_eq!(
            string(bson!({"$split": ["Hello World", " "]})),
            Some(bson!(["Hello", "World"]))
        );
        assert_eq!(
            string(bson!({"$split": ["astronomical", "astro"]})),
            Some(bson!(["", "nomical"]))
        );
        assert_eq!(
            string(bson!({"$split": ["pea", "pea"]})),
            Some(bson!(["", ""]))
        );
        assert_eq!(
            string(bson!({"$split": ["aaa", "aa"]})),
            Some(bson!(["", "a"]))
        );
        assert_eq!(string(bson!({"$split": ["", ","]})), Some(bson!([""])));
        assert_eq!(
            string(bson!({"$split": ["abc", "x"]})),
            Some(bson!(["abc"]))
        );
        assert_eq!(
            string(bson!({"$split": ["$missing", ","]})),
            Some(Bson::Null)
        );
        assert_eq!(string(bson!({"$split": ["a", null]})), Some(Bson::Null));
        // Null wins over a type error in the other argument.
        assert_eq!(string(bson!({"$split": [1, null]})), Some(Bson::Null));
        let err = eval(bson!({"$split": [1, ","]}), &doc! {}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                40085,
                "$split requires an expression that evaluates to a string as a first argument, found: int"
            )
        );
        assert_eq!(code(bson!({"$split": ["a", "$o"]})), 40086);
        let err = eval(bson!({"$split": ["abc", ""]}), &doc! {}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (40087, "$split requires a non-empty separator")
        );
        assert_eq!(code(bson!({"$split": ["abc"]})), 16020);
    }
}
