//! Array operators: `$size`, `$arrayElemAt`, `$in`.

use super::Args;
use super::{Arity, Operator, nary};
use crate::aggregate::decimal::Dec;
use crate::aggregate::numeric::{int_or_long, to_f64};
use crate::aggregate::value::{Value, compare, format_double_g, is_nullish, type_name};
use crate::error::{MongoError, Result};
use bson::Bson;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$arrayElemAt",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: array_elem_at,
    },
    Operator {
        name: "$in",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: is_in,
    },
    Operator {
        name: "$size",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: size,
    },
];

pub fn size(args: &Args) -> Result<Value> {
    match args.eval(0)? {
        Some(Bson::Array(items)) => Ok(Some(int_or_long(items.len() as i64))),
        other => Err(MongoError::location(
            17124,
            format!(
                "The argument to $size must be an array. Type of argument: {}",
                type_name(other.as_ref())
            ),
        )),
    }
}

/// A negative index counts from the end; an index out of bounds yields missing.
pub fn array_elem_at(args: &Args) -> Result<Value> {
    let (array, index) = args.eval_pair()?;
    if is_nullish(array.as_ref()) || is_nullish(index.as_ref()) {
        return Ok(Some(Bson::Null));
    }
    let Some(Bson::Array(items)) = array else {
        return Err(MongoError::location(
            28689,
            format!(
                "$arrayElemAt's first argument must be an array, but is {}",
                type_name(array.as_ref())
            ),
        ));
    };
    let Some(index) = index else {
        return Ok(Some(Bson::Null));
    };
    let position = match &index {
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => int32_value(
            &index,
        )
        .ok_or_else(|| {
            MongoError::location(
                28691,
                format!(
                    "$arrayElemAt's second argument must be representable as a 32-bit integer: {}",
                    format_double_g(to_f64(&index))
                ),
            )
        })?,
        other => {
            return Err(MongoError::location(
                28690,
                format!(
                    "$arrayElemAt's second argument must be a numeric value, but is {}",
                    type_name(Some(other))
                ),
            ));
        }
    };
    let len = items.len() as i64;
    let position = i64::from(position);
    let resolved = if position < 0 {
        len + position
    } else {
        position
    };
    if resolved < 0 || resolved >= len {
        return Ok(None);
    }
    Ok(items.into_iter().nth(resolved as usize))
}

/// A number that is integral and fits an int32 (`Value::integral`).
pub(super) fn int32_value(value: &Bson) -> Option<i32> {
    match value {
        Bson::Int32(v) => Some(*v),
        Bson::Int64(v) => i32::try_from(*v).ok(),
        Bson::Double(v)
            if v.fract() == 0.0 && *v >= f64::from(i32::MIN) && *v <= f64::from(i32::MAX) =>
        {
            Some(*v as i32)
        }
        Bson::Decimal128(d) => Dec::decode(*d)
            .to_i64_exact()
            .and_then(|v| i32::try_from(v).ok()),
        _ => None,
    }
}

pub fn is_in(args: &Args) -> Result<Value> {
    let (needle, haystack) = args.eval_pair()?;
    let Some(Bson::Array(items)) = haystack else {
        return Err(MongoError::location(
            40081,
            format!(
                "$in requires an array as a second argument, found: {}",
                type_name(haystack.as_ref())
            ),
        ));
    };
    let found = items
        .iter()
        .any(|item| compare(needle.as_ref(), Some(item)).is_eq());
    Ok(Some(Bson::Boolean(found)))
}

#[cfg(test)]
mod tests {
    use crate::aggregate::expression::tests::eval;
    use bson::{Bson, bson, doc};

    fn run(expr: Bson) -> crate::error::Result<Option<Bson>> {
        eval(expr, &doc! {"a": [10, 20, 30], "s": "x"})
    }

    #[test]
    fn size_of_arrays_only() {
        assert_eq!(run(bson!({"$size": "$a"})).unwrap(), Some(Bson::Int32(3)));
        assert_eq!(run(bson!({"$size": [[]]})).unwrap(), Some(Bson::Int32(0)));
        let err = run(bson!({"$size": "$missing"})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                17124,
                "The argument to $size must be an array. Type of argument: missing"
            )
        );
    }

    #[test]
    fn array_elem_at_indexes_from_either_end() {
        assert_eq!(
            run(bson!({"$arrayElemAt": ["$a", 0]})).unwrap(),
            Some(Bson::Int32(10))
        );
        assert_eq!(
            run(bson!({"$arrayElemAt": ["$a", -1]})).unwrap(),
            Some(Bson::Int32(30))
        );
        assert_eq!(
            run(bson!({"$arrayElemAt": ["$a", 2.0]})).unwrap(),
            Some(Bson::Int32(30))
        );
        assert_eq!(run(bson!({"$arrayElemAt": ["$a", 3]})).unwrap(), None);
        assert_eq!(run(bson!({"$arrayElemAt": ["$a", -4]})).unwrap(), None);
        assert_eq!(
            run(bson!({"$arrayElemAt": ["$missing", 0]})).unwrap(),
            Some(Bson::Null)
        );
        assert_eq!(
            run(bson!({"$arrayElemAt": ["$s", 0]}))
                .unwrap_err()
                .code()
                .code(),
            28689
        );
        assert_eq!(
            run(bson!({"$arrayElemAt": ["$a", "0"]}))
                .unwrap_err()
                .code()
                .code(),
            28690
        );
        let err = run(bson!({"$arrayElemAt": ["$a", 1.5]})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                28691,
                "$arrayElemAt's second argument must be representable as a 32-bit integer: 1.5"
            )
        );
        assert_eq!(
            run(bson!({"$arrayElemAt": ["$a", 1_i64 << 40]}))
                .unwrap_err()
                .code()
                .code(),
            28691
        );
    }

    #[test]
    fn in_uses_value_equality() {
        assert_eq!(
            run(bson!({"$in": [20.0, "$a"]})).unwrap(),
            Some(Bson::Boolean(true))
        );
        assert_eq!(
            run(bson!({"$in": ["$missing", [null]]})).unwrap(),
            Some(Bson::Boolean(false))
        );
        assert_eq!(
            run(bson!({"$in": [null, [null]]})).unwrap(),
            Some(Bson::Boolean(true))
        );
        let err = run(bson!({"$in": [1, "$s"]})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                40081,
                "$in requires an array as a second argument, found: string"
            )
        );
    }
}
