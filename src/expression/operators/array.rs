//! Array element access and search: `$size`, `$arrayElemAt`, `$first`, `$last`, `$in`,
//! `$indexOfArray`, `$isArray`.

use super::Args;
use super::{Arity, Operator, nary};
use crate::error::{MongoError, Result};
use crate::expression::decimal::Dec;
use crate::expression::numeric::{int_or_long, to_f64};
use crate::expression::value::{Value, format_double_g, is_nullish, render, type_name};
use bson::Bson;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$arrayElemAt",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: array_elem_at,
    },
    Operator {
        name: "$first",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: first,
    },
    Operator {
        name: "$in",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: is_in,
    },
    Operator {
        name: "$indexOfArray",
        arity: Arity::Range(2, 4),
        parse: nary,
        eval: index_of_array,
    },
    Operator {
        name: "$isArray",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: is_array,
    },
    Operator {
        name: "$last",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: last,
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
    element_at("$arrayElemAt's first argument", array, index)
}

/// `{$arrayElemAt: [<array>, 0]}`.
pub fn first(args: &Args) -> Result<Value> {
    element_at("$first's argument", args.eval(0)?, Some(Bson::Int32(0)))
}

/// `{$arrayElemAt: [<array>, -1]}`.
pub fn last(args: &Args) -> Result<Value> {
    element_at("$last's argument", args.eval(0)?, Some(Bson::Int32(-1)))
}

/// MongoDB's `arrayElemAt`; `argument` names the array in the error message.
fn element_at(argument: &str, array: Value, index: Value) -> Result<Value> {
    if is_nullish(array.as_ref()) || is_nullish(index.as_ref()) {
        return Ok(Some(Bson::Null));
    }
    let Some(Bson::Array(items)) = array else {
        return Err(MongoError::location(
            28689,
            format!(
                "{argument} must be an array, but is {}",
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

pub fn is_array(args: &Args) -> Result<Value> {
    Ok(Some(Bson::Boolean(matches!(
        args.eval(0)?,
        Some(Bson::Array(_))
    ))))
}

/// The first index of a value (by value equality) in `[start, end)`, or -1.
pub fn index_of_array(args: &Args) -> Result<Value> {
    let array = args.eval(0)?;
    if is_nullish(array.as_ref()) {
        return Ok(Some(Bson::Null));
    }
    let Some(Bson::Array(items)) = array else {
        return Err(MongoError::location(
            40090,
            format!(
                "$indexOfArray requires an array as a first argument, found: {}",
                type_name(array.as_ref())
            ),
        ));
    };
    let start = match args.len() > 2 {
        true => index_bound(args.eval(2)?, "starting index")?,
        false => 0,
    };
    let end = match args.len() > 3 {
        true => index_bound(args.eval(3)?, "ending index")?.min(items.len()),
        false => items.len(),
    };
    let needle = args.eval(1)?;
    let found = (start..end).find(|&i| args.compare(needle.as_ref(), Some(&items[i])).is_eq());
    Ok(Some(Bson::Int32(found.map_or(-1, |i| i as i32))))
}

/// A starting or ending index of `$indexOfArray`: an int32-representable, non-negative number.
fn index_bound(value: Value, what: &str) -> Result<usize> {
    let index = value.as_ref().and_then(int32_value).ok_or_else(|| {
        // The missing space after the operator's name is MongoDB's.
        MongoError::location(
            40096,
            format!(
                "$indexOfArrayrequires an integral {what}, found a value of type: {}, with value: {}",
                type_name(value.as_ref()),
                render(value.as_ref())
            ),
        )
    })?;
    usize::try_from(index).map_err(|_| {
        MongoError::location(
            40097,
            format!(
                "$indexOfArray requires a nonnegative {what}, found: {}",
                render(value.as_ref())
            ),
        )
    })
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
        .any(|item| args.compare(needle.as_ref(), Some(item)).is_eq());
    Ok(Some(Bson::Boolean(found)))
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
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
    fn first_and_last() {
        assert_eq!(run(bson!({"$first": "$a"})).unwrap(), Some(Bson::Int32(10)));
        assert_eq!(
            run(bson!({"$last": ["$a"]})).unwrap(),
            Some(Bson::Int32(30))
        );
        assert_eq!(run(bson!({"$first": [[]]})).unwrap(), None);
        assert_eq!(run(bson!({"$last": "$missing"})).unwrap(), Some(Bson::Null));
        let err = run(bson!({"$first": "$s"})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (28689, "$first's argument must be an array, but is string")
        );
        let err = run(bson!({"$last": 1})).unwrap_err();
        assert_eq!(
            err.message(),
            "$last's argument must be an array, but is int"
        );
        assert_eq!(
            run(bson!({"$first": [1, 2]})).unwrap_err().code().code(),
            16020
        );
    }

    #[test]
    fn is_array() {
        assert_eq!(
            run(bson!({"$isArray": "$a"})).unwrap(),
            Some(Bson::Boolean(true))
        );
        assert_eq!(
            run(bson!({"$isArray": ["$s"]})).unwrap(),
            Some(Bson::Boolean(false))
        );
        assert_eq!(
            run(bson!({"$isArray": "$missing"})).unwrap(),
            Some(Bson::Boolean(false))
        );
    }

    #[test]
    fn index_of_array_searches_a_range() {
        let d = doc! {"items": ["one", "two", "three", "two"], "n": null};
        let run = |e: Bson| eval(e, &d);
        assert_eq!(
            run(bson!({"$indexOfArray": ["$items", "two"]})).unwrap(),
            Some(Bson::Int32(1))
        );
        assert_eq!(
            run(bson!({"$indexOfArray": ["$items", "two", 2]})).unwrap(),
            Some(Bson::Int32(3))
        );
        assert_eq!(
            run(bson!({"$indexOfArray": ["$items", "two", 2, 3]})).unwrap(),
            Some(Bson::Int32(-1))
        );
        assert_eq!(
            run(bson!({"$indexOfArray": ["$items", "two", 5, 1]})).unwrap(),
            Some(Bson::Int32(-1))
        );
        assert_eq!(
            run(bson!({"$indexOfArray": [[1, 2.0], 2_i64, 0.0, 100]})).unwrap(),
            Some(Bson::Int32(1))
        );
        assert_eq!(
            run(bson!({"$indexOfArray": ["$n", "two"]})).unwrap(),
            Some(Bson::Null)
        );
        assert_eq!(
            run(bson!({"$indexOfArray": [[null], "$missing"]})).unwrap(),
            Some(Bson::Int32(-1))
        );
        let err = run(bson!({"$indexOfArray": ["x", "two"]})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                40090,
                "$indexOfArray requires an array as a first argument, found: string"
            )
        );
        let err = run(bson!({"$indexOfArray": ["$items", "two", 1.5]})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                40096,
                "$indexOfArrayrequires an integral starting index, found a value of type: double, with value: 1.5"
            )
        );
        let err = run(bson!({"$indexOfArray": ["$items", "two", 0, -1]})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                40097,
                "$indexOfArray requires a nonnegative ending index, found: -1"
            )
        );
        let err = run(bson!({"$indexOfArray": ["$items"]})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                28667,
                "Expression $indexOfArray takes at least 2 arguments, and at most 4, but 1 were passed in."
            )
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
