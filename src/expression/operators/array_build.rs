//! Operators that build arrays: `$concatArrays`, `$slice`, `$reverseArray`, `$range`.

use super::array::int32_value;
use super::{Args, Arity, Operator, array_or_null, nary};
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::numeric::to_f64;
use crate::expression::value::{
    Value, bson_type_name, format_double_g, is_nullish, is_number, render, type_name,
};
use bson::Bson;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$concatArrays",
        arity: Arity::Any,
        parse: nary,
        eval: concat_arrays,
    },
    Operator {
        name: "$range",
        arity: Arity::Range(2, 3),
        parse: nary,
        eval: range,
    },
    Operator {
        name: "$reverseArray",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: reverse_array,
    },
    Operator {
        name: "$slice",
        arity: Arity::Range(2, 3),
        parse: nary,
        eval: slice,
    },
];

/// `internalQueryMaxRangeBytes`: the memory `$range` may use for its result.
const MAX_RANGE_BYTES: i64 = 100 * 1024 * 1024;
/// What MongoDB counts per `$range` element (`sizeof(Value)`) and for the array itself.
const RANGE_ELEMENT_BYTES: i64 = 16;
const RANGE_ARRAY_BYTES: i64 = 24;

/// Null as soon as an argument is null or missing (later ones are not evaluated).
pub fn concat_arrays(args: &Args) -> Result<Value> {
    let mut out = Vec::new();
    for i in 0..args.len() {
        let items = array_or_null(args.eval(i)?, |value| {
            MongoError::location(
                28664,
                format!(
                    "$concatArrays only supports arrays, not {}",
                    type_name(value.as_ref())
                ),
            )
        })?;
        let Some(items) = items else {
            return Ok(Some(Bson::Null));
        };
        out.extend(items);
    }
    Ok(Some(Bson::Array(out)))
}

pub fn reverse_array(args: &Args) -> Result<Value> {
    let items = array_or_null(args.eval(0)?, |value| {
        MongoError::location(
            34435,
            format!(
                "The argument to $reverseArray must be an array, but was of type: {}",
                type_name(value.as_ref())
            ),
        )
    })?;
    Ok(Some(items.map_or(Bson::Null, |mut items| {
        items.reverse();
        Bson::Array(items)
    })))
}

/// `[array, n]` (the first n, or the last -n) or `[array, position, n]` (a negative position
/// counts from the end).
pub fn slice(args: &Args) -> Result<Value> {
    let (array, first) = args.eval_pair()?;
    if is_nullish(array.as_ref()) || is_nullish(first.as_ref()) {
        return Ok(Some(Bson::Null));
    }
    let Some(Bson::Array(items)) = array else {
        return Err(MongoError::location(
            28724,
            format!(
                "First argument to $slice must be an array, but is of type: {}",
                type_name(array.as_ref())
            ),
        ));
    };
    let first = slice_number(first, "Second", 28725, 28726)?;
    let len = items.len() as i64;
    let (start, end) = if args.len() == 2 {
        if first >= 0 {
            (0, first.min(len))
        } else {
            ((len + first).max(0), len)
        }
    } else {
        let start = if first < 0 {
            (len + first).max(0)
        } else {
            first.min(len)
        };
        let count = args.eval(2)?;
        if is_nullish(count.as_ref()) {
            return Ok(Some(Bson::Null));
        }
        let count = slice_number(count, "Third", 28727, 28728)?;
        if count <= 0 {
            return Err(MongoError::location(
                28729,
                format!("Third argument to $slice must be positive: {count}"),
            ));
        }
        (start, (start + count).min(len))
    };
    let items = items
        .into_iter()
        .skip(start as usize)
        .take((end - start) as usize)
        .collect();
    Ok(Some(Bson::Array(items)))
}

/// The second or third argument of `$slice` as an integer, with its two error codes.
fn slice_number(value: Value, ordinal: &str, not_numeric: i32, not_int: i32) -> Result<i64> {
    let value = value.unwrap_or(Bson::Null);
    if !is_number(&value) {
        // MongoDB words the two arguments slightly differently.
        let expected = if ordinal == "Second" {
            "a numeric value"
        } else {
            "numeric"
        };
        return Err(MongoError::location(
            not_numeric,
            format!(
                "{ordinal} argument to $slice must be {expected}, but is of type: {}",
                bson_type_name(&value)
            ),
        ));
    }
    int32_value(&value).map(i64::from).ok_or_else(|| {
        MongoError::location(
            not_int,
            format!(
                "{ordinal} argument to $slice can't be represented as a 32-bit integer: {}",
                format_double_g(to_f64(&value))
            ),
        )
    })
}

/// `[start, end, step]`: ints from start toward end (excluded), step 1 by default.
pub fn range(args: &Args) -> Result<Value> {
    let (start, end) = args.eval_pair()?;
    let mut current = range_bound(start, "starting value", 34443, 34444)?;
    let end = range_bound(end, "ending value", 34445, 34446)?;
    let step = match args.len() {
        3 => {
            let step = range_bound(args.eval(2)?, "step value", 34447, 34448)?;
            if step == 0 {
                return Err(MongoError::location(
                    34449,
                    "$range requires a non-zero step value",
                ));
            }
            step
        }
        _ => 1,
    };
    let steps = (end - current) / step;
    let length = if steps >= 0 { steps + 1 } else { 0 };
    let bytes = RANGE_ARRAY_BYTES + length * RANGE_ELEMENT_BYTES;
    if bytes >= MAX_RANGE_BYTES {
        return Err(MongoError::new(
            ErrorCode::ExceededMemoryLimit,
            format!(
                "$range would use too much memory ({bytes} bytes) and cannot spill to disk. Memory limit: {MAX_RANGE_BYTES} bytes"
            ),
        ));
    }
    let mut out = Vec::new();
    while (step > 0 && current < end) || (step < 0 && current > end) {
        out.push(Bson::Int32(current as i32));
        current += step;
    }
    Ok(Some(Bson::Array(out)))
}

/// A `$range` argument: a number representable as an int32 (null is not a number here).
fn range_bound(value: Value, what: &str, not_numeric: i32, not_int: i32) -> Result<i64> {
    let value = value.unwrap_or(Bson::Null);
    if !is_number(&value) {
        // No space before the type after "step value", as MongoDB words it.
        let separator = if what == "step value" { "" } else { " " };
        return Err(MongoError::location(
            not_numeric,
            format!(
                "$range requires a numeric {what}, found value of type:{separator}{}",
                bson_type_name(&value)
            ),
        ));
    }
    int32_value(&value).map(i64::from).ok_or_else(|| {
        let article = if what == "ending value" { "an" } else { "a" };
        MongoError::location(
            not_int,
            format!(
                "$range requires {article} {what} that can be represented as a 32-bit integer, found value: {}",
                render(Some(&value))
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::{eval, failure};
    use bson::{Bson, bson, doc};

    fn run(expr: Bson) -> crate::error::Result<Option<Bson>> {
        eval(expr, &doc! {"a": [1, 2, 3, 4, 5], "s": "x", "n": null})
    }

    fn code(expr: Bson) -> i32 {
        failure(run(expr)).0
    }

    fn message(expr: Bson) -> (i32, String) {
        failure(run(expr))
    }

    #[test]
    fn concat_arrays() {
        assert_eq!(
            run(bson!({"$concatArrays": ["$a", [[6]], []]})).unwrap(),
            Some(bson!([1, 2, 3, 4, 5, [6]]))
        );
        assert_eq!(run(bson!({"$concatArrays": []})).unwrap(), Some(bson!([])));
        assert_eq!(
            run(bson!({"$concatArrays": [[1], "$missing", "$s"]})).unwrap(),
            Some(Bson::Null)
        );
        assert_eq!(
            message(bson!({"$concatArrays": [[1], "$s", null]})),
            (
                28664,
                "$concatArrays only supports arrays, not string".into()
            )
        );
    }

    #[test]
    fn reverse_array() {
        assert_eq!(
            run(bson!({"$reverseArray": "$a"})).unwrap(),
            Some(bson!([5, 4, 3, 2, 1]))
        );
        assert_eq!(
            run(bson!({"$reverseArray": [[]]})).unwrap(),
            Some(bson!([]))
        );
        assert_eq!(
            run(bson!({"$reverseArray": "$n"})).unwrap(),
            Some(Bson::Null)
        );
        assert_eq!(
            message(bson!({"$reverseArray": 1})),
            (
                34435,
                "The argument to $reverseArray must be an array, but was of type: int".into()
            )
        );
    }

    #[test]
    fn slice_two_and_three_arguments() {
        let slice = |spec: Bson| run(bson!({"$slice": spec})).unwrap();
        assert_eq!(slice(bson!(["$a", 2])), Some(bson!([1, 2])));
        assert_eq!(slice(bson!(["$a", -2])), Some(bson!([4, 5])));
        assert_eq!(slice(bson!(["$a", 10])), Some(bson!([1, 2, 3, 4, 5])));
        assert_eq!(slice(bson!(["$a", -10])), Some(bson!([1, 2, 3, 4, 5])));
        assert_eq!(slice(bson!(["$a", 1, 2])), Some(bson!([2, 3])));
        assert_eq!(slice(bson!(["$a", -2, 5])), Some(bson!([4, 5])));
        assert_eq!(slice(bson!(["$a", 15, 2])), Some(bson!([])));
        assert_eq!(slice(bson!(["$a", -15, 2])), Some(bson!([1, 2])));
        assert_eq!(slice(bson!(["$a", 2.0, 1_i64])), Some(bson!([3])));
        assert_eq!(slice(bson!(["$n", 1])), Some(Bson::Null));
        assert_eq!(slice(bson!(["$a", "$missing"])), Some(Bson::Null));
        assert_eq!(slice(bson!(["$a", 0, null])), Some(Bson::Null));
    }

    #[test]
    fn slice_errors() {
        assert_eq!(
            message(bson!({"$slice": ["$s", 1]})),
            (
                28724,
                "First argument to $slice must be an array, but is of type: string".into()
            )
        );
        assert_eq!(
            message(bson!({"$slice": ["$a", "1"]})),
            (
                28725,
                "Second argument to $slice must be a numeric value, but is of type: string".into()
            )
        );
        assert_eq!(
            message(bson!({"$slice": ["$a", 1.5]})),
            (
                28726,
                "Second argument to $slice can't be represented as a 32-bit integer: 1.5".into()
            )
        );
        assert_eq!(code(bson!({"$slice": ["$a", 1, "x"]})), 28727);
        assert_eq!(code(bson!({"$slice": ["$a", 1, 1e10]})), 28728);
        assert_eq!(
            message(bson!({"$slice": ["$a", 1, 0]})),
            (28729, "Third argument to $slice must be positive: 0".into())
        );
        assert_eq!(code(bson!({"$slice": ["$a"]})), 28667);
        assert_eq!(code(bson!({"$slice": ["$a", 1, 2, 3]})), 28667);
    }

    #[test]
    fn range_counts_in_ints() {
        assert_eq!(
            run(bson!({"$range": [0, 10, 2]})).unwrap(),
            Some(bson!([0, 2, 4, 6, 8]))
        );
        assert_eq!(
            run(bson!({"$range": [10, 0, -2]})).unwrap(),
            Some(bson!([10, 8, 6, 4, 2]))
        );
        assert_eq!(
            run(bson!({"$range": [0, 10, -2]})).unwrap(),
            Some(bson!([]))
        );
        assert_eq!(
            run(bson!({"$range": [1_i64, 4.0]})).unwrap(),
            Some(bson!([1, 2, 3]))
        );
        assert_eq!(
            run(bson!({"$range": [i32::MAX - 1, i32::MAX]})).unwrap(),
            Some(bson!([i32::MAX - 1]))
        );
    }

    #[test]
    fn range_errors() {
        assert_eq!(
            message(bson!({"$range": ["$n", 1]})),
            (
                34443,
                "$range requires a numeric starting value, found value of type: null".into()
            )
        );
        assert_eq!(
            message(bson!({"$range": [0.5, 1]})),
            (
                34444,
                "$range requires a starting value that can be represented as a 32-bit integer, found value: 0.5"
                    .into()
            )
        );
        assert_eq!(code(bson!({"$range": [0, "$missing"]})), 34445);
        assert_eq!(
            message(bson!({"$range": [0, 1.5]})),
            (
                34446,
                "$range requires an ending value that can be represented as a 32-bit integer, found value: 1.5"
                    .into()
            )
        );
        assert_eq!(code(bson!({"$range": [0, 1, "1"]})), 34447);
        assert_eq!(code(bson!({"$range": [0, 1, 1_i64 << 40]})), 34448);
        assert_eq!(
            message(bson!({"$range": [0, 1, 0]})),
            (34449, "$range requires a non-zero step value".into())
        );
        assert_eq!(
            message(bson!({"$range": [0, 10_000_000]})),
            (
                146,
                "$range would use too much memory (160000040 bytes) and cannot spill to disk. Memory limit: 104857600 bytes"
                    .into()
            )
        );
        assert_eq!(code(bson!({"$range": [0]})), 28667);
    }
}
