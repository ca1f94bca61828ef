//! Substring operators, by UTF-8 byte or by code point: `$substr` (the server's alias of
//! `$substrBytes`), `$substrBytes`, `$substrCP`.

use super::array::int32_value;
use super::string::coerce_to_string;
use super::{Args, Arity, Operator, nary};
use crate::error::{MongoError, Result};
use crate::expression::decimal::Dec;
use crate::expression::value::{Value, format_double_g, render, type_name};
use bson::Bson;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$substr",
        arity: Arity::Exactly(3),
        parse: nary,
        eval: substr_bytes,
    },
    Operator {
        name: "$substrBytes",
        arity: Arity::Exactly(3),
        parse: nary,
        eval: substr_bytes,
    },
    Operator {
        name: "$substrCP",
        arity: Arity::Exactly(3),
        parse: nary,
        eval: substr_cp,
    },
];

/// `[string, start, length]` in bytes. A negative length means "to the end", a start past the
/// end gives the empty string, and a range that cuts a character is an error.
pub fn substr_bytes(args: &Args) -> Result<Value> {
    let (input, start, length) = (args.eval(0)?, args.eval(1)?, args.eval(2)?);
    let input = coerce_to_string(input.as_ref())?;
    let numeric = |value: &Value, code, what| match value {
        Some(v @ (Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_))) => {
            Ok(v.clone())
        }
        other => Err(MongoError::location(
            code,
            format!(
                "$substrBytes:  {what} must be a numeric type (is BSON type {})",
                type_name(other.as_ref())
            ),
        )),
    };
    let start = numeric(&start, 16034, "starting index")?;
    let length = numeric(&length, 16035, "length")?;
    let start = coerce_to_long(&start)?;
    if start < 0 {
        return Err(MongoError::location(
            50752,
            format!("$substrBytes:  starting index must be non-negative (got: {start})"),
        ));
    }
    let length = coerce_to_long(&length)?;
    let bytes = input.len();
    let start = usize::try_from(start).unwrap_or(usize::MAX);
    let end = match usize::try_from(length) {
        Ok(length) => start.saturating_add(length),
        Err(_) => usize::MAX,
    };
    if start < bytes && !input.is_char_boundary(start) {
        return Err(MongoError::location(
            28656,
            "$substrBytes:  Invalid range, starting index is a UTF-8 continuation byte.",
        ));
    }
    if end < bytes && !input.is_char_boundary(end) {
        return Err(MongoError::location(
            28657,
            "$substrBytes:  Invalid range, ending index is in the middle of a UTF-8 character.",
        ));
    }
    let text = input.get(start.min(bytes)..end.min(bytes)).unwrap_or("");
    Ok(Some(Bson::String(text.to_string())))
}

/// `Value::coerceToLong`: doubles truncate, decimals round to even, and values outside the
/// int64 range (NaN included) are errors.
fn coerce_to_long(value: &Bson) -> Result<i64> {
    const TWO_TO_63: f64 = 9_223_372_036_854_775_808.0;
    let out_of_range = |shown: String| {
        MongoError::location(
            31109,
            format!("Can't coerce out of range value {shown} to long"),
        )
    };
    match value {
        Bson::Int32(v) => Ok(i64::from(*v)),
        Bson::Int64(v) => Ok(*v),
        Bson::Double(v) if *v >= -TWO_TO_63 && *v < TWO_TO_63 => Ok(*v as i64),
        Bson::Double(v) => Err(out_of_range(format_double_g(*v))),
        Bson::Decimal128(d) => Dec::decode(*d)
            .to_i64_rounded()
            .ok_or_else(|| out_of_range(d.to_string())),
        _ => Ok(0),
    }
}

/// `[string, start, length]` in code points; both must be non-negative int32 values.
pub fn substr_cp(args: &Args) -> Result<Value> {
    let (input, start, length) = (args.eval(0)?, args.eval(1)?, args.eval(2)?);
    let input = coerce_to_string(input.as_ref())?;
    let int32 = |value: &Value, numeric_code, integral_code, what| {
        let Some(
            number @ (Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)),
        ) = value
        else {
            return Err(MongoError::location(
                numeric_code,
                format!(
                    "$substrCP: {what} must be a numeric type (is BSON type {})",
                    type_name(value.as_ref())
                ),
            ));
        };
        int32_value(number).ok_or_else(|| {
            MongoError::location(
                integral_code,
                format!(
                    "$substrCP: {what} cannot be represented as a 32-bit integral value: {}",
                    render(Some(number))
                ),
            )
        })
    };
    let start = int32(&start, 34450, 34451, "starting index")?;
    let length = int32(&length, 34452, 34453, "length")?;
    if length < 0 {
        return Err(MongoError::location(
            34454,
            "$substrCP: length must be a nonnegative integer.",
        ));
    }
    if start < 0 {
        return Err(MongoError::location(
            34455,
            "$substrCP: the starting index must be nonnegative integer.",
        ));
    }
    let text: String = input
        .chars()
        .skip(start as usize)
        .take(length as usize)
        .collect();
    Ok(Some(Bson::String(text)))
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
    use bson::{Bson, Decimal128, bson, doc};

    fn run(expr: Bson) -> Option<Bson> {
        eval(expr, &doc! {"s": "cafétéria", "n": null}).unwrap()
    }

    fn text(s: &str) -> Option<Bson> {
        Some(Bson::String(s.into()))
    }

    fn failure(expr: Bson) -> (i32, String) {
        let err = eval(expr, &doc! {"s": "cafétéria"}).unwrap_err();
        (err.code().code(), err.message().to_string())
    }

    #[test]
    fn substr_bytes_ranges() {
        assert_eq!(run(bson!({"$substrBytes": ["WIN1", 0, 2]})), text("WI"));
        assert_eq!(run(bson!({"$substr": ["WIN1", 2, -1]})), text("N1"));
        assert_eq!(run(bson!({"$substrBytes": ["$s", 0, 3]})), text("caf"));
        assert_eq!(run(bson!({"$substrBytes": ["$s", 3, 2]})), text("é"));
        assert_eq!(run(bson!({"$substrBytes": ["$s", 5, 100]})), text("téria"));
        assert_eq!(run(bson!({"$substrBytes": ["abc", 3, 1]})), text(""));
        assert_eq!(run(bson!({"$substrBytes": ["abc", 10, 1]})), text(""));
        assert_eq!(run(bson!({"$substrBytes": ["abc", 1.9, 1.9]})), text("b"));
        assert_eq!(
            run(bson!({"$substrBytes": ["abc", 1_i64, 5_i64]})),
            text("bc")
        );
        let one: Decimal128 = "1".parse().unwrap();
        assert_eq!(run(bson!({"$substrBytes": ["abc", one, one]})), text("b"));
        // Null and missing strings are empty, and other scalars are converted.
        assert_eq!(run(bson!({"$substrBytes": ["$missing", 0, 1]})), text(""));
        assert_eq!(run(bson!({"$substr": [12345, 1, 2]})), text("23"));
    }

    #[test]
    fn substr_bytes_errors() {
        assert_eq!(
            failure(bson!({"$substrBytes": ["$s", 4, 1]})),
            (
                28656,
                "$substrBytes:  Invalid range, starting index is a UTF-8 continuation byte.".into()
            )
        );
        assert_eq!(
            failure(bson!({"$substrBytes": ["$s", 0, 4]})),
            (
                28657,
                "$substrBytes:  Invalid range, ending index is in the middle of a UTF-8 character."
                    .into()
            )
        );
        assert_eq!(
            failure(bson!({"$substr": ["abc", -1, 1]})),
            (
                50752,
                "$substrBytes:  starting index must be non-negative (got: -1)".into()
            )
        );
        assert_eq!(
            failure(bson!({"$substrBytes": ["abc", "1", 1]})),
            (
                16034,
                "$substrBytes:  starting index must be a numeric type (is BSON type string)".into()
            )
        );
        assert_eq!(
            failure(bson!({"$substrBytes": ["abc", 0, null]})),
            (
                16035,
                "$substrBytes:  length must be a numeric type (is BSON type null)".into()
            )
        );
        assert_eq!(
            failure(bson!({"$substrBytes": ["abc", f64::NAN, 1]})),
            (31109, "Can't coerce out of range value nan to long".into())
        );
        assert_eq!(failure(bson!({"$substrBytes": ["abc", 1e19, 1]})).0, 31109);
        assert_eq!(failure(bson!({"$substrBytes": [{}, 0, 1]})).0, 16007);
        assert_eq!(failure(bson!({"$substr": ["abc", 0]})).0, 16020);
    }

    #[test]
    fn substr_cp_ranges() {
        assert_eq!(run(bson!({"$substrCP": ["$s", 0, 4]})), text("café"));
        assert_eq!(run(bson!({"$substrCP": ["$s", 3, 3]})), text("été"));
        assert_eq!(run(bson!({"$substrCP": ["$s", 7, 10]})), text("ia"));
        assert_eq!(run(bson!({"$substrCP": ["$s", 20, 1]})), text(""));
        assert_eq!(run(bson!({"$substrCP": ["寿司sushi", 0, 2]})), text("寿司"));
        assert_eq!(run(bson!({"$substrCP": ["abc", 1.0, 1_i64]})), text("b"));
        assert_eq!(run(bson!({"$substrCP": [null, 0, 1]})), text(""));
    }

    #[test]
    fn substr_cp_errors() {
        assert_eq!(
            failure(bson!({"$substrCP": ["abc", "$missing", 1]})),
            (
                34450,
                "$substrCP: starting index must be a numeric type (is BSON type missing)".into()
            )
        );
        assert_eq!(
            failure(bson!({"$substrCP": ["abc", 1.5, 1]})),
            (
                34451,
                "$substrCP: starting index cannot be represented as a 32-bit integral value: 1.5"
                    .into()
            )
        );
        assert_eq!(failure(bson!({"$substrCP": ["abc", 0, true]})).0, 34452);
        assert_eq!(
            failure(bson!({"$substrCP": ["abc", 0, 1_i64 << 40]})),
            (
                34453,
                "$substrCP: length cannot be represented as a 32-bit integral value: 1099511627776"
                    .into()
            )
        );
        assert_eq!(
            failure(bson!({"$substrCP": ["abc", -1, -1]})),
            (
                34454,
                "$substrCP: length must be a nonnegative integer.".into()
            )
        );
        assert_eq!(
            failure(bson!({"$substrCP": ["abc", -1, 1]})),
            (
                34455,
                "$substrCP: the starting index must be nonnegative integer.".into()
            )
        );
    }
}
