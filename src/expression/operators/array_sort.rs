//! Ordering and picking array elements: `$sortArray` and the expression forms of `$firstN`,
//! `$lastN`, `$maxN`, `$minN`.

use super::{Args, Arity, Expression, Operator, Scope, named_args, requires_object, unspecified};
use crate::document::collation::Collation;
use crate::document::order::compare_collated;
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::decimal::Dec;
use crate::expression::value::{Value, is_nullish, render, type_name};
use bson::{Bson, Document};
use std::cmp::Ordering;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$firstN",
        arity: Arity::Exactly(2),
        parse: parse_n,
        eval: first_n,
    },
    Operator {
        name: "$lastN",
        arity: Arity::Exactly(2),
        parse: parse_n,
        eval: last_n,
    },
    Operator {
        name: "$maxN",
        arity: Arity::Exactly(2),
        parse: parse_n,
        eval: max_n,
    },
    Operator {
        name: "$minN",
        arity: Arity::Exactly(2),
        parse: parse_n,
        eval: min_n,
    },
    Operator {
        name: "$sortArray",
        arity: Arity::Exactly(2),
        parse: parse_sort_array,
        eval: sort_array,
    },
];

/// `{input, sortBy}` as `[input, sortBy]`, `sortBy` checked here and kept as a constant: 1 or
/// -1 to sort whole values, or a sort document on fields of embedded documents.
pub fn parse_sort_array(
    _name: &'static str,
    argument: &Bson,
    scope: &Scope,
) -> Result<Vec<Expression>> {
    let spec = requires_object("$sortArray", argument, 2942500)?;
    let [input, sort_by] = named_args(spec, ["input", "sortBy"], |field| {
        MongoError::location(
            2942501,
            format!("$sortArray found an unknown argument: {field}"),
        )
    })?;
    let input = input.ok_or_else(|| unspecified(2942502, "$sortArray", "input"))?;
    let sort_by = sort_by.ok_or_else(|| unspecified(2942503, "$sortArray", "sortBy"))?;
    let sort_by = match sort_by {
        Bson::Document(pattern) => {
            check_sort_pattern(pattern)?;
            Bson::Document(pattern.clone())
        }
        other => Bson::Int32(direction(other).ok_or_else(|| {
            MongoError::location(2942506, "The $sort element value must be either 1 or -1")
        })?),
    };
    Ok(vec![
        Expression::parse_in(input, scope)?,
        Expression::Constant(sort_by),
    ])
}

/// 1 or -1 (as any numeric type).
fn direction(value: &Bson) -> Option<i32> {
    let order = match value {
        Bson::Int32(v) => f64::from(*v),
        Bson::Int64(v) => *v as f64,
        Bson::Double(v) => *v,
        Bson::Decimal128(d) => Dec::decode(*d).to_f64(),
        _ => return None,
    };
    match order {
        1.0 => Some(1),
        -1.0 => Some(-1),
        _ => None,
    }
}

/// MongoDB's `checkSortClause`.
fn check_sort_pattern(pattern: &Document) -> Result<()> {
    let bad = |message: String| Err(MongoError::new(ErrorCode::BadValue, message));
    if pattern.is_empty() {
        return bad("The sort pattern is empty when it should be a set of fields.".into());
    }
    for (field, order) in pattern {
        if direction(order).is_none() {
            return bad("The sort element value must be either 1 or -1".into());
        }
        if field.is_empty() {
            return bad("The sort field cannot be empty".into());
        }
        if field.split('.').any(str::is_empty) {
            return bad(format!(
                "The sort field is a dotted field but has an empty part: {field}"
            ));
        }
    }
    Ok(())
}

pub fn sort_array(args: &Args) -> Result<Value> {
    let input = args.eval(0)?;
    if is_nullish(input.as_ref()) {
        return Ok(Some(Bson::Null));
    }
    let Some(Bson::Array(mut items)) = input else {
        return Err(MongoError::location(
            2942504,
            format!(
                "The input argument to $sortArray must be an array, but was of type: {}",
                type_name(input.as_ref())
            ),
        ));
    };
    match args.eval(1)? {
        Some(Bson::Document(pattern)) => {
            items.sort_by(|a, b| compare_by_pattern(a, b, &pattern, args.collation()));
        }
        Some(Bson::Int32(-1)) => items.sort_by(|a, b| compare_collated(b, a, args.collation())),
        _ => items.sort_by(|a, b| compare_collated(a, b, args.collation())),
    }
    Ok(Some(Bson::Array(items)))
}

/// Compares the pattern's fields of two elements in turn; a field that is absent, or an element
/// that is not a document, sorts as null.
fn compare_by_pattern(
    a: &Bson,
    b: &Bson,
    pattern: &Document,
    collation: Option<&Collation>,
) -> Ordering {
    for (field, order) in pattern {
        let (x, y) = (sort_key(a, field), sort_key(b, field));
        let ordering = compare_collated(
            x.unwrap_or(&Bson::Null),
            y.unwrap_or(&Bson::Null),
            collation,
        );
        let ordering = match direction(order) {
            Some(-1) => ordering.reverse(),
            _ => ordering,
        };
        if ordering.is_ne() {
            return ordering;
        }
    }
    Ordering::Equal
}

/// The value at a dotted path through embedded documents (and array positions).
fn sort_key<'v>(value: &'v Bson, path: &str) -> Option<&'v Bson> {
    let Bson::Document(_) = value else {
        return None;
    };
    path.split('.')
        .try_fold(value, |current, part| match current {
            Bson::Document(doc) => doc.get(part),
            Bson::Array(items) => part.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        })
}

/// `{n, input}` as `[n, input]`.
pub fn parse_n(name: &'static str, argument: &Bson, scope: &Scope) -> Result<Vec<Expression>> {
    let Bson::Document(spec) = argument else {
        return Err(MongoError::location(
            5787801,
            format!(
                "specification must be an object; found {name}: {}",
                render(Some(argument))
            ),
        ));
    };
    let [n, input] = named_args(spec, ["n", "input"], |field| {
        MongoError::location(
            5787901,
            format!("Unknown argument for 'n' operator: {field}"),
        )
    })?;
    let n = n.ok_or_else(|| MongoError::location(5787906, "Missing value for 'n'"))?;
    let input = input.ok_or_else(|| MongoError::location(5787907, "Missing value for 'input'"))?;
    Ok(vec![
        Expression::parse_in(n, scope)?,
        Expression::parse_in(input, scope)?,
    ])
}

/// `n` (a positive integer) and the input array, evaluated in that order.
fn n_and_input(args: &Args) -> Result<(usize, Vec<Bson>)> {
    let count = crate::expression::numeric::n_argument(&args.eval(0)?)?;
    let Some(Bson::Array(items)) = args.eval(1)? else {
        return Err(MongoError::location(5788200, "Input must be an array"));
    };
    Ok((count, items))
}

pub fn first_n(args: &Args) -> Result<Value> {
    let (n, mut items) = n_and_input(args)?;
    items.truncate(n);
    Ok(Some(Bson::Array(items)))
}

pub fn last_n(args: &Args) -> Result<Value> {
    let (n, items) = n_and_input(args)?;
    let skip = items.len().saturating_sub(n);
    Ok(Some(Bson::Array(items.into_iter().skip(skip).collect())))
}

/// The n largest values, largest first; null and missing values are left out.
pub fn max_n(args: &Args) -> Result<Value> {
    extremes(args, Ordering::Greater)
}

/// The n smallest values, smallest first; null and missing values are left out.
pub fn min_n(args: &Args) -> Result<Value> {
    extremes(args, Ordering::Less)
}

fn extremes(args: &Args, first: Ordering) -> Result<Value> {
    let (n, items) = n_and_input(args)?;
    let mut values: Vec<Bson> = items
        .into_iter()
        .filter(|item| !is_nullish(Some(item)))
        .collect();
    values.sort_by(|a, b| {
        let ordering = args.compare(Some(a), Some(b));
        if first == Ordering::Greater {
            ordering.reverse()
        } else {
            ordering
        }
    });
    values.truncate(n);
    Ok(Some(Bson::Array(values)))
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
    use bson::{Bson, bson, doc};

    fn run(expr: Bson) -> crate::error::Result<Option<Bson>> {
        eval(
            expr,
            &doc! {
                "team": [
                    {"name": "pat", "age": 30, "address": {"street": "12 Baker St", "city": "London"}},
                    {"name": "dallas", "age": 36, "address": {"street": "12 Cowper St", "city": "Palo Alto"}},
                    {"name": "charlie", "age": 42, "address": {"street": "12 French St", "city": "New Brunswick"}}
                ],
                "nums": [1, null, 5, 3, "x", 2.5],
                "s": "str"
            },
        )
    }

    fn code(expr: Bson) -> i32 {
        run(expr).unwrap_err().code().code()
    }

    fn names(value: Option<Bson>) -> Vec<String> {
        let Some(Bson::Array(items)) = value else {
            panic!("not an array: {value:?}");
        };
        items
            .iter()
            .map(|item| {
                item.as_document()
                    .unwrap()
                    .get_str("name")
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn sort_array_by_fields_of_documents() {
        assert_eq!(
            names(run(bson!({"$sortArray": {"input": "$team", "sortBy": {"name": 1}}})).unwrap()),
            ["charlie", "dallas", "pat"]
        );
        assert_eq!(
            names(
                run(bson!({"$sortArray": {"input": "$team", "sortBy": {"address.city": -1}}}))
                    .unwrap()
            ),
            ["dallas", "charlie", "pat"]
        );
        assert_eq!(
            names(
                run(bson!({"$sortArray": {"input": "$team", "sortBy": {"age": -1, "name": 1}}}))
                    .unwrap()
            ),
            ["charlie", "dallas", "pat"]
        );
        // Elements without the field, and non-documents, sort as null.
        assert_eq!(
            run(bson!({"$sortArray": {"input": [{"a": 2}, 7, {"b": 1}, {"a": 1}], "sortBy": {"a": 1}}}))
                .unwrap(),
            Some(bson!([7, {"b": 1}, {"a": 1}, {"a": 2}]))
        );
    }

    #[test]
    fn sort_array_whole_values() {
        assert_eq!(
            run(
                bson!({"$sortArray": {"input": [20, 4, {"a": "Free"}, 6, 21, 5, "Gratis",
                                                {"a": null}, {"a": {"sale": true, "price": 19}},
                                                10.23, {"a": "On sale"}], "sortBy": 1}})
            )
            .unwrap(),
            Some(
                bson!([4, 5, 6, 10.23, 20, 21, "Gratis", {"a": null}, {"a": "Free"},
                        {"a": "On sale"}, {"a": {"sale": true, "price": 19}}])
            )
        );
        assert_eq!(
            run(bson!({"$sortArray": {"input": [1, 3, 2], "sortBy": -1.0}})).unwrap(),
            Some(bson!([3, 2, 1]))
        );
        assert_eq!(
            run(bson!({"$sortArray": {"input": "$missing", "sortBy": 1}})).unwrap(),
            Some(Bson::Null)
        );
    }

    #[test]
    fn sort_array_errors() {
        assert_eq!(code(bson!({"$sortArray": [1]})), 2942500);
        assert_eq!(
            code(bson!({"$sortArray": {"input": [], "sortBy": 1, "x": 1}})),
            2942501
        );
        assert_eq!(code(bson!({"$sortArray": {"sortBy": 1}})), 2942502);
        assert_eq!(code(bson!({"$sortArray": {"input": []}})), 2942503);
        let err = run(bson!({"$sortArray": {"input": "$s", "sortBy": 1}})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                2942504,
                "The input argument to $sortArray must be an array, but was of type: string"
            )
        );
        assert_eq!(
            code(bson!({"$sortArray": {"input": [], "sortBy": 2}})),
            2942506
        );
        assert_eq!(
            code(bson!({"$sortArray": {"input": [], "sortBy": "a"}})),
            2942506
        );
        let err = run(bson!({"$sortArray": {"input": [], "sortBy": {"a": 0}}})).unwrap_err();
        assert_eq!(
            (err.code().name().as_ref(), err.message()),
            ("BadValue", "The sort element value must be either 1 or -1")
        );
        assert_eq!(code(bson!({"$sortArray": {"input": [], "sortBy": {}}})), 2);
        assert_eq!(
            code(bson!({"$sortArray": {"input": [], "sortBy": {"a..b": 1}}})),
            2
        );
    }

    #[test]
    fn first_n_and_last_n() {
        assert_eq!(
            run(bson!({"$firstN": {"n": 3, "input": [12, 90, 7, 89, 8]}})).unwrap(),
            Some(bson!([12, 90, 7]))
        );
        assert_eq!(
            run(bson!({"$lastN": {"input": [12, 90, 7, 89, 8], "n": 3_i64}})).unwrap(),
            Some(bson!([7, 89, 8]))
        );
        // Nulls are kept; n past the end returns the whole array.
        assert_eq!(
            run(bson!({"$firstN": {"n": 10.0, "input": [1293, null, 3489, 9]}})).unwrap(),
            Some(bson!([1293, null, 3489, 9]))
        );
        assert_eq!(
            run(bson!({"$lastN": {"n": 2, "input": []}})).unwrap(),
            Some(bson!([]))
        );
    }

    #[test]
    fn max_n_and_min_n_skip_nulls() {
        assert_eq!(
            run(bson!({"$maxN": {"n": 3, "input": "$nums"}})).unwrap(),
            Some(bson!(["x", 5, 3]))
        );
        assert_eq!(
            run(bson!({"$minN": {"n": 3, "input": "$nums"}})).unwrap(),
            Some(bson!([1, 2.5, 3]))
        );
        assert_eq!(
            run(bson!({"$maxN": {"n": 2, "input": [null]}})).unwrap(),
            Some(bson!([]))
        );
    }

    #[test]
    fn n_operator_errors() {
        assert_eq!(code(bson!({"$firstN": [1]})), 5787801);
        assert_eq!(
            code(bson!({"$lastN": {"n": 1, "input": [], "x": 1}})),
            5787901
        );
        assert_eq!(code(bson!({"$maxN": {"input": []}})), 5787906);
        assert_eq!(code(bson!({"$minN": {"n": 1}})), 5787907);
        let err = run(bson!({"$firstN": {"n": "2", "input": []}})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                5787902,
                "Value for 'n' must be of integral type, but found \"2\""
            )
        );
        assert_eq!(code(bson!({"$firstN": {"n": null, "input": []}})), 5787902);
        assert_eq!(code(bson!({"$firstN": {"n": 1.5, "input": []}})), 5787903);
        let err = run(bson!({"$minN": {"n": 0, "input": []}})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (5787908, "'n' must be greater than 0, found 0")
        );
        assert_eq!(code(bson!({"$firstN": {"n": 1, "input": null}})), 5788200);
        assert_eq!(code(bson!({"$lastN": {"n": 1, "input": "$s"}})), 5788200);
    }
}
