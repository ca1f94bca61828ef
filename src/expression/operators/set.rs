//! Set operators on arrays: `$setEquals`, `$setIntersection`, `$setUnion`, `$setDifference`,
//! `$setIsSubset`, `$anyElementTrue`, `$allElementsTrue`. Elements are equal as values compare
//! (`1`, `1.0` and `NumberLong(1)` are one element); nested arrays are elements, not sets.
//! Set results hold no duplicates and come out in MongoDB's value order (the server leaves
//! the order unspecified), except `$setDifference`, which keeps its first argument's order.

use super::{Args, Expression, Scope};
use super::{Arity, Operator, nary, nary_at_least_two};
use crate::error::{MongoError, Result};
use crate::expression::value::{Value, compare, is_nullish, truthy, type_name};
use bson::Bson;
use std::cmp::Ordering;
use std::collections::BTreeSet;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$allElementsTrue",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: all_elements_true,
    },
    Operator {
        name: "$anyElementTrue",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: any_element_true,
    },
    Operator {
        name: "$setDifference",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: set_difference,
    },
    Operator {
        name: "$setEquals",
        arity: Arity::Any,
        parse: parse_set_equals,
        eval: set_equals,
    },
    Operator {
        name: "$setIntersection",
        arity: Arity::Any,
        parse: nary,
        eval: set_intersection,
    },
    Operator {
        name: "$setIsSubset",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: set_is_subset,
    },
    Operator {
        name: "$setUnion",
        arity: Arity::Any,
        parse: nary,
        eval: set_union,
    },
];

/// A set element, ordered (and equal) as MongoDB compares values under the command's
/// collation: by its collation key when the collation is not the simple one.
struct Element(Bson, Option<Bson>);

impl Element {
    fn new(value: Bson, args: &Args) -> Element {
        let key = args.collation().map(|c| c.comparison_key(&value));
        Element(value, key)
    }

    fn key(&self) -> &Bson {
        self.1.as_ref().unwrap_or(&self.0)
    }
}

impl Ord for Element {
    fn cmp(&self, other: &Self) -> Ordering {
        compare(Some(self.key()), Some(other.key()))
    }
}

impl PartialOrd for Element {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Element {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Element {}

/// The first of equal elements is kept (`insert` does; `collect` would keep the last).
fn to_set(items: Vec<Bson>, args: &Args) -> BTreeSet<Element> {
    let mut set = BTreeSet::new();
    for item in items {
        set.insert(Element::new(item, args));
    }
    set
}

fn into_array(set: BTreeSet<Element>) -> Value {
    Some(Bson::Array(set.into_iter().map(|e| e.0).collect()))
}

pub fn parse_set_equals(
    _: &'static str,
    argument: &Bson,
    scope: &Scope,
) -> Result<Vec<Expression>> {
    let too_few = "$setEquals needs at least two arguments had: ";
    nary_at_least_two(argument, scope, 17045, too_few)
}

/// Every argument must be an array (null is an error here).
pub fn set_equals(args: &Args) -> Result<Value> {
    let mut first: Option<BTreeSet<Element>> = None;
    for i in 0..args.len() {
        let items = match args.eval(i)? {
            Some(Bson::Array(items)) => items,
            other => {
                return Err(MongoError::location(
                    17044,
                    format!(
                        "All operands of $setEquals must be arrays. One argument is of type: {}",
                        type_name(other.as_ref())
                    ),
                ));
            }
        };
        let set = to_set(items, args);
        match &first {
            None => first = Some(set),
            Some(first) if *first != set => return Ok(Some(Bson::Boolean(false))),
            Some(_) => {}
        }
    }
    Ok(Some(Bson::Boolean(true)))
}

/// The arrays of a variadic set operator, or `None` as soon as one is null or missing (the
/// arguments after it are not evaluated).
fn array_arguments(args: &Args, name: &str, code: i32) -> Result<Option<Vec<Vec<Bson>>>> {
    let mut arrays = Vec::with_capacity(args.len());
    for i in 0..args.len() {
        match args.eval(i)? {
            Some(Bson::Array(items)) => arrays.push(items),
            value if is_nullish(value.as_ref()) => return Ok(None),
            other => {
                return Err(MongoError::location(
                    code,
                    format!(
                        "All operands of {name} must be arrays. One argument is of type: {}",
                        type_name(other.as_ref())
                    ),
                ));
            }
        }
    }
    Ok(Some(arrays))
}

/// Null if any argument is null or missing; no arguments give the empty set.
pub fn set_intersection(args: &Args) -> Result<Value> {
    let Some(arrays) = array_arguments(args, "$setIntersection", 17047)? else {
        return Ok(Some(Bson::Null));
    };
    let mut arrays = arrays.into_iter();
    let Some(first) = arrays.next() else {
        return Ok(Some(Bson::Array(Vec::new())));
    };
    let mut intersection = to_set(first, args);
    for items in arrays {
        let next = to_set(items, args);
        intersection.retain(|element| next.contains(element));
    }
    Ok(into_array(intersection))
}

/// Null if any argument is null or missing.
pub fn set_union(args: &Args) -> Result<Value> {
    let Some(arrays) = array_arguments(args, "$setUnion", 17043)? else {
        return Ok(Some(Bson::Null));
    };
    Ok(into_array(to_set(
        arrays.into_iter().flatten().collect(),
        args,
    )))
}

/// The first array's elements missing from the second, without duplicates and in the first
/// array's order. Null if either argument is null or missing.
pub fn set_difference(args: &Args) -> Result<Value> {
    let (lhs, rhs) = args.eval_pair()?;
    if is_nullish(lhs.as_ref()) || is_nullish(rhs.as_ref()) {
        return Ok(Some(Bson::Null));
    }
    let (lhs, rhs) = both_arrays(lhs, rhs, "$setDifference", (17048, 17049))?;
    // Holds the second array's elements and those already output.
    let mut seen = to_set(rhs, args);
    let mut difference = Vec::new();
    for item in lhs {
        let element = Element::new(item, args);
        if !seen.contains(&element) {
            difference.push(element.0.clone());
            seen.insert(element);
        }
    }
    Ok(Some(Bson::Array(difference)))
}

/// Whether every element of the first array is in the second (null is an error here).
pub fn set_is_subset(args: &Args) -> Result<Value> {
    let (lhs, rhs) = args.eval_pair()?;
    let (lhs, rhs) = both_arrays(lhs, rhs, "$setIsSubset", (17046, 17042))?;
    let rhs = to_set(rhs, args);
    let subset = lhs
        .into_iter()
        .all(|item| rhs.contains(&Element::new(item, args)));
    Ok(Some(Bson::Boolean(subset)))
}

fn both_arrays(
    lhs: Value,
    rhs: Value,
    name: &str,
    codes: (i32, i32),
) -> Result<(Vec<Bson>, Vec<Bson>)> {
    let not_array = |code, which, value: &Value| {
        MongoError::location(
            code,
            format!(
                "both operands of {name} must be arrays. {which} argument is of type: {}",
                type_name(value.as_ref())
            ),
        )
    };
    match (lhs, rhs) {
        (Some(Bson::Array(lhs)), Some(Bson::Array(rhs))) => Ok((lhs, rhs)),
        (Some(Bson::Array(_)), rhs) => Err(not_array(codes.1, "Second", &rhs)),
        (lhs, _) => Err(not_array(codes.0, "First", &lhs)),
    }
}

pub fn any_element_true(args: &Args) -> Result<Value> {
    let items = single_array(args, "$anyElementTrue", 17041)?;
    Ok(Some(Bson::Boolean(
        items.iter().any(|item| truthy(Some(item))),
    )))
}

pub fn all_elements_true(args: &Args) -> Result<Value> {
    let items = single_array(args, "$allElementsTrue", 17040)?;
    Ok(Some(Bson::Boolean(
        items.iter().all(|item| truthy(Some(item))),
    )))
}

/// The argument must be an array (null and missing are errors).
fn single_array(args: &Args, name: &str, code: i32) -> Result<Vec<Bson>> {
    match args.eval(0)? {
        Some(Bson::Array(items)) => Ok(items),
        other => Err(MongoError::location(
            code,
            format!(
                "{name}'s argument must be an array, but is {}",
                type_name(other.as_ref())
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
    use bson::{Bson, bson, doc};

    fn run(expr: Bson) -> Option<Bson> {
        eval(expr, &doc! {"a": ["a", "b"], "n": null}).unwrap()
    }

    fn yes() -> Option<Bson> {
        Some(Bson::Boolean(true))
    }

    fn no() -> Option<Bson> {
        Some(Bson::Boolean(false))
    }

    fn failure(expr: Bson) -> (i32, String) {
        let err = eval(expr, &doc! {"s": "x"}).unwrap_err();
        (err.code().code(), err.message().to_string())
    }

    #[test]
    fn set_equals_ignores_order_and_duplicates() {
        assert_eq!(run(bson!({"$setEquals": ["$a", ["b", "a", "a"]]})), yes());
        assert_eq!(
            run(bson!({"$setEquals": [["a", "b"], ["a", "b", "c"]]})),
            no()
        );
        assert_eq!(
            run(bson!({"$setEquals": [[1, 2], [2.0, 1_i64], [2, 1, 1]]})),
            yes()
        );
        assert_eq!(run(bson!({"$setEquals": [[], []]})), yes());
        assert_eq!(run(bson!({"$setEquals": [[[1, 2]], [1, 2]]})), no());
        assert_eq!(
            failure(bson!({"$setEquals": [[1], "$missing"]})),
            (
                17044,
                "All operands of $setEquals must be arrays. One argument is of type: missing"
                    .into()
            )
        );
        assert_eq!(
            failure(bson!({"$setEquals": [[1]]})),
            (
                17045,
                "$setEquals needs at least two arguments had: 1".into()
            )
        );
    }

    #[test]
    fn intersection_and_union() {
        assert_eq!(
            run(bson!({"$setIntersection": [["b", "a", "c", "a"], ["c", "a", "x"]]})),
            Some(bson!(["a", "c"]))
        );
        assert_eq!(
            run(bson!({"$setIntersection": ["$a", []]})),
            Some(bson!([]))
        );
        assert_eq!(
            run(bson!({"$setIntersection": [[1, 2, 3], [3.0, 2_i64], [2, 3, 4]]})),
            Some(bson!([2, 3]))
        );
        assert_eq!(run(bson!({"$setIntersection": []})), Some(bson!([])));
        assert_eq!(
            run(bson!({"$setIntersection": ["$a"]})),
            Some(bson!(["a", "b"]))
        );
        assert_eq!(
            run(bson!({"$setUnion": [["b", "a", "a"], ["c", "b"], []]})),
            Some(bson!(["a", "b", "c"]))
        );
        // The first of equal elements is kept; nested arrays are elements.
        assert_eq!(
            run(bson!({"$setUnion": [[1, [1, 2]], [1.0, [1, 2], 2]]})),
            Some(bson!([1, 2, [1, 2]]))
        );
        assert_eq!(run(bson!({"$setUnion": []})), Some(bson!([])));
        for op in ["$setIntersection", "$setUnion"] {
            assert_eq!(run(bson!({op: ["$a", "$n"]})), Some(Bson::Null));
            assert_eq!(run(bson!({op: ["$missing", [1]]})), Some(Bson::Null));
            // Arguments after a null one are not looked at.
            assert_eq!(run(bson!({op: [null, 1]})), Some(Bson::Null));
        }
        assert_eq!(
            failure(bson!({"$setIntersection": [[1], 1]})),
            (
                17047,
                "All operands of $setIntersection must be arrays. One argument is of type: int"
                    .into()
            )
        );
        assert_eq!(
            failure(bson!({"$setUnion": ["$s", null]})),
            (
                17043,
                "All operands of $setUnion must be arrays. One argument is of type: string".into()
            )
        );
    }

    #[test]
    fn difference_keeps_the_first_order() {
        assert_eq!(
            run(bson!({"$setDifference": [["c", "a", "b", "c", "d"], ["b", "x"]]})),
            Some(bson!(["c", "a", "d"]))
        );
        assert_eq!(
            run(bson!({"$setDifference": [[1, 1.0, 2_i64], [3]]})),
            Some(bson!([1, 2_i64]))
        );
        assert_eq!(
            run(bson!({"$setDifference": ["$a", "$a"]})),
            Some(bson!([]))
        );
        assert_eq!(run(bson!({"$setDifference": ["$n", 1]})), Some(Bson::Null));
        assert_eq!(
            run(bson!({"$setDifference": [1, "$missing"]})),
            Some(Bson::Null)
        );
        assert_eq!(
            failure(bson!({"$setDifference": ["$s", [1]]})),
            (
                17048,
                "both operands of $setDifference must be arrays. First argument is of type: string"
                    .into()
            )
        );
        assert_eq!(failure(bson!({"$setDifference": [[1], 2]})).0, 17049);
        assert_eq!(failure(bson!({"$setDifference": [[1]]})).0, 16020);
    }

    #[test]
    fn subsets() {
        assert_eq!(run(bson!({"$setIsSubset": [["a", "a"], "$a"]})), yes());
        assert_eq!(run(bson!({"$setIsSubset": [[], []]})), yes());
        assert_eq!(run(bson!({"$setIsSubset": [["a", "c"], "$a"]})), no());
        assert_eq!(run(bson!({"$setIsSubset": [[1.0], [1, 2]]})), yes());
        assert_eq!(
            failure(bson!({"$setIsSubset": ["$missing", [1]]})),
            (
                17046,
                "both operands of $setIsSubset must be arrays. First argument is of type: missing"
                    .into()
            )
        );
        assert_eq!(
            failure(bson!({"$setIsSubset": [[1], null]})),
            (
                17042,
                "both operands of $setIsSubset must be arrays. Second argument is of type: null"
                    .into()
            )
        );
    }

    #[test]
    fn element_truthiness() {
        assert_eq!(run(bson!({"$anyElementTrue": [[true, false]]})), yes());
        assert_eq!(run(bson!({"$anyElementTrue": [[[false]]]})), yes());
        assert_eq!(run(bson!({"$anyElementTrue": [[null, false, 0]]})), no());
        assert_eq!(run(bson!({"$anyElementTrue": [[]]})), no());
        assert_eq!(
            run(bson!({"$allElementsTrue": [[true, 1, "someString"]]})),
            yes()
        );
        assert_eq!(run(bson!({"$allElementsTrue": [[[false]]]})), yes());
        assert_eq!(run(bson!({"$allElementsTrue": [[]]})), yes());
        assert_eq!(run(bson!({"$allElementsTrue": [[null, true]]})), no());
        assert_eq!(run(bson!({"$allElementsTrue": [[true, 0]]})), no());
        assert_eq!(run(bson!({"$allElementsTrue": "$a"})), yes());
        assert_eq!(
            failure(bson!({"$anyElementTrue": "$missing"})),
            (
                17041,
                "$anyElementTrue's argument must be an array, but is missing".into()
            )
        );
        assert_eq!(
            failure(bson!({"$allElementsTrue": [null]})),
            (
                17040,
                "$allElementsTrue's argument must be an array, but is null".into()
            )
        );
        assert_eq!(failure(bson!({"$allElementsTrue": [true, false]})).0, 16020);
    }
}
