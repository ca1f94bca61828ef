//! Array operators that evaluate an expression per element, with the element bound to a
//! variable: `$filter`, `$map`, `$reduce`.

use super::array::int32_value;
use super::{
    Args, Arity, Expression, Operator, Scope, bind_variable, missing_parameter, named_args,
    only_object, requires_object, unspecified,
};
use crate::error::{MongoError, Result};
use crate::expression::validate_name_for_user_write;
use crate::expression::value::{Value, is_nullish, render, truthy, type_name};
use bson::Bson;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$filter",
        arity: Arity::Any,
        parse: parse_filter,
        eval: filter,
    },
    Operator {
        name: "$map",
        arity: Arity::Exactly(3),
        parse: parse_map,
        eval: map,
    },
    Operator {
        name: "$reduce",
        arity: Arity::Exactly(5),
        parse: parse_reduce,
        eval: reduce,
    },
];

/// The variable named by `as` (`this` by default; a name that is not a string is empty, as
/// `BSONElement::str` makes it) and the scope it is defined in.
fn bind_as(name: Option<&Bson>, scope: &Scope) -> Result<(Expression, Scope)> {
    let name = match name {
        None => "this",
        Some(Bson::String(name)) => name.as_str(),
        Some(_) => "",
    };
    validate_name_for_user_write(name)?;
    let mut inner = scope.nested();
    let variable = bind_variable(&mut inner, name);
    Ok((variable, inner))
}

/// `{input, as, cond, limit}` as `[input, variable, cond]` then `limit` if given.
pub fn parse_filter(
    _name: &'static str,
    argument: &Bson,
    scope: &Scope,
) -> Result<Vec<Expression>> {
    let spec = only_object("$filter", argument, 28646)?;
    let [input, name, cond, limit] = named_args(spec, ["input", "as", "cond", "limit"], |field| {
        MongoError::location(28647, format!("Unrecognized parameter to $filter: {field}"))
    })?;
    let input = input.ok_or_else(|| missing_parameter(28648, "$filter", "input"))?;
    let cond = cond.ok_or_else(|| missing_parameter(28650, "$filter", "cond"))?;
    let input = Expression::parse_in(input, scope)?;
    let (variable, inner) = bind_as(name, scope)?;
    let mut args = vec![input, variable, Expression::parse_in(cond, &inner)?];
    if let Some(limit) = limit {
        args.push(Expression::parse_in(limit, scope)?);
    }
    Ok(args)
}

/// The elements for which `cond` is true, at most `limit` of them (a null limit is none).
pub fn filter(args: &Args) -> Result<Value> {
    let input = args.eval(0)?;
    if is_nullish(input.as_ref()) {
        return Ok(Some(Bson::Null));
    }
    let Some(Bson::Array(items)) = input else {
        return Err(MongoError::location(
            28651,
            format!(
                "input to $filter must be an array not {}",
                type_name(input.as_ref())
            ),
        ));
    };
    if items.is_empty() {
        return Ok(Some(Bson::Array(items)));
    }
    let mut remaining = match args.len() > 3 {
        true => filter_limit(args.eval(3)?)?,
        false => None,
    };
    let mut frame = args.frame();
    let mut kept = Vec::new();
    for item in items {
        frame.bind(1, Some(item.clone()));
        if truthy(frame.eval(2)?.as_ref()) {
            kept.push(item);
            if let Some(left) = remaining.as_mut() {
                *left -= 1;
                if *left == 0 {
                    break;
                }
            }
        }
    }
    Ok(Some(Bson::Array(kept)))
}

fn filter_limit(limit: Value) -> Result<Option<i32>> {
    let Some(limit) = limit.filter(|l| !is_nullish(Some(l))) else {
        return Ok(None);
    };
    let count = int32_value(&limit).ok_or_else(|| {
        MongoError::location(
            327391,
            format!(
                "$filter: limit must be represented as a 32-bit integral value: {}",
                render(Some(&limit))
            ),
        )
    })?;
    if count <= 0 {
        return Err(MongoError::location(
            327392,
            format!(
                "$filter: limit must be greater than 0: {}",
                render(Some(&limit))
            ),
        ));
    }
    Ok(Some(count))
}

/// `{input, as, in}` as `[input, variable, in]`.
pub fn parse_map(_name: &'static str, argument: &Bson, scope: &Scope) -> Result<Vec<Expression>> {
    let spec = only_object("$map", argument, 16878)?;
    let [input, name, each] = named_args(spec, ["input", "as", "in"], |field| {
        MongoError::location(16879, format!("Unrecognized parameter to $map: {field}"))
    })?;
    let input = input.ok_or_else(|| missing_parameter(16880, "$map", "input"))?;
    let each = each.ok_or_else(|| missing_parameter(16882, "$map", "in"))?;
    let input = Expression::parse_in(input, scope)?;
    let (variable, inner) = bind_as(name, scope)?;
    Ok(vec![input, variable, Expression::parse_in(each, &inner)?])
}

/// `in` for each element; a missing result becomes null, as arrays cannot hold missing.
pub fn map(args: &Args) -> Result<Value> {
    let input = args.eval(0)?;
    if is_nullish(input.as_ref()) {
        return Ok(Some(Bson::Null));
    }
    let Some(Bson::Array(items)) = input else {
        return Err(MongoError::location(
            16883,
            format!(
                "input to $map must be an array not {}",
                type_name(input.as_ref())
            ),
        ));
    };
    let mut frame = args.frame();
    let mut mapped = Vec::with_capacity(items.len());
    for item in items {
        frame.bind(1, Some(item));
        mapped.push(frame.eval(2)?.unwrap_or(Bson::Null));
    }
    Ok(Some(Bson::Array(mapped)))
}

/// `{input, initialValue, in}` as `[input, initialValue, $$this, $$value, in]`.
pub fn parse_reduce(
    _name: &'static str,
    argument: &Bson,
    scope: &Scope,
) -> Result<Vec<Expression>> {
    let spec = requires_object("$reduce", argument, 40075)?;
    let [input, initial, each] = named_args(spec, ["input", "initialValue", "in"], |field| {
        MongoError::location(40076, format!("$reduce found an unknown argument: {field}"))
    })?;
    let input = input.ok_or_else(|| unspecified(40077, "$reduce", "input"))?;
    let initial = initial.ok_or_else(|| unspecified(40078, "$reduce", "initialValue"))?;
    let each = each.ok_or_else(|| unspecified(40079, "$reduce", "in"))?;
    let mut inner = scope.nested();
    let this = bind_variable(&mut inner, "this");
    let value = bind_variable(&mut inner, "value");
    Ok(vec![
        Expression::parse_in(input, scope)?,
        Expression::parse_in(initial, scope)?,
        this,
        value,
        Expression::parse_in(each, &inner)?,
    ])
}

/// Folds `in` over the elements, starting from `initialValue`.
pub fn reduce(args: &Args) -> Result<Value> {
    let input = args.eval(0)?;
    if is_nullish(input.as_ref()) {
        return Ok(Some(Bson::Null));
    }
    let Some(Bson::Array(items)) = input else {
        return Err(MongoError::location(
            40080,
            format!(
                "$reduce requires that 'input' be an array, found: {}",
                render(input.as_ref())
            ),
        ));
    };
    let mut accumulated = args.eval(1)?;
    let mut frame = args.frame();
    for item in items {
        frame.bind(2, Some(item));
        frame.bind(3, accumulated);
        accumulated = frame.eval(4)?;
        // The one operator whose result can nest deeper with every element: refused as soon as
        // it could no longer become BSON, before walks over it outgrow any stack.
        if accumulated
            .as_ref()
            .is_some_and(crate::depth::value_too_deep)
        {
            return Err(crate::depth::too_deep_for_bson());
        }
    }
    Ok(accumulated)
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
    use crate::expression::{Expression, LetVariables};
    use bson::{Bson, DateTime, bson, doc};

    fn run(expr: Bson) -> crate::error::Result<Option<Bson>> {
        eval(
            expr,
            &doc! {"items": [{"id": 1, "price": 110}, {"id": 2, "price": 5}, {"id": 3, "price": 50}],
            "nums": [1, 2, 3, 4], "s": "x", "n": null},
        )
    }

    fn code(expr: Bson) -> i32 {
        run(expr).unwrap_err().code().code()
    }

    #[test]
    fn filter_keeps_matching_elements() {
        assert_eq!(
            run(bson!({"$filter": {"input": "$items", "as": "item",
                                   "cond": {"$gte": ["$$item.price", 50]}}}))
            .unwrap(),
            Some(bson!([{"id": 1, "price": 110}, {"id": 3, "price": 50}]))
        );
        // `this` by default; limit stops after that many matches; a null limit is no limit.
        assert_eq!(
            run(bson!({"$filter": {"input": "$nums", "cond": {"$gt": ["$$this", 1]}, "limit": 2}}))
                .unwrap(),
            Some(bson!([2, 3]))
        );
        assert_eq!(
            run(bson!({"$filter": {"input": "$nums", "cond": true, "limit": null}})).unwrap(),
            Some(bson!([1, 2, 3, 4]))
        );
        assert_eq!(
            run(bson!({"$filter": {"input": "$missing", "cond": true}})).unwrap(),
            Some(Bson::Null)
        );
        // An empty input is returned before the limit is looked at.
        assert_eq!(
            run(bson!({"$filter": {"input": [], "cond": true, "limit": "x"}})).unwrap(),
            Some(bson!([]))
        );
    }

    #[test]
    fn filter_errors() {
        assert_eq!(code(bson!({"$filter": []})), 28646);
        assert_eq!(
            code(bson!({"$filter": {"input": [], "cond": 1, "x": 1}})),
            28647
        );
        assert_eq!(code(bson!({"$filter": {"cond": 1}})), 28648);
        assert_eq!(code(bson!({"$filter": {"input": []}})), 28650);
        assert_eq!(
            code(bson!({"$filter": {"input": [], "as": 1, "cond": 1}})),
            9
        );
        assert_eq!(
            code(bson!({"$filter": {"input": [], "as": "X", "cond": 1}})),
            9
        );
        let err = run(bson!({"$filter": {"input": "$s", "cond": 1}})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (28651, "input to $filter must be an array not string")
        );
        let err = run(bson!({"$filter": {"input": "$nums", "cond": 1, "limit": 1.5}})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                327391,
                "$filter: limit must be represented as a 32-bit integral value: 1.5"
            )
        );
        assert_eq!(
            code(bson!({"$filter": {"input": "$nums", "cond": 1, "limit": 0}})),
            327392
        );
        // The variable exists only in cond.
        assert_eq!(
            code(bson!({"$filter": {"input": [], "cond": 1, "limit": "$$this"}})),
            17276
        );
    }

    #[test]
    fn map_applies_in_to_each_element() {
        assert_eq!(
            run(bson!({"$map": {"input": "$nums", "as": "n", "in": {"$multiply": ["$$n", 10]}}}))
                .unwrap(),
            Some(bson!([10, 20, 30, 40]))
        );
        assert_eq!(
            run(bson!({"$map": {"input": "$items", "in": "$$this.nope"}})).unwrap(),
            Some(bson!([null, null, null]))
        );
        // Nested maps with the default name: the inner `this` shadows the outer one.
        assert_eq!(
            run(bson!({"$map": {"input": [[1, 2], [3]], "as": "row",
                "in": {"$map": {"input": "$$row", "in": {"$add": ["$$this", {"$size": "$$row"}]}}}}}))
            .unwrap(),
            Some(bson!([[3, 4], [4]]))
        );
        assert_eq!(
            run(bson!({"$map": {"input": "$n", "in": 1}})).unwrap(),
            Some(Bson::Null)
        );
        assert_eq!(code(bson!({"$map": 1})), 16878);
        assert_eq!(code(bson!({"$map": {"input": [], "in": 1, "x": 1}})), 16879);
        assert_eq!(code(bson!({"$map": {"in": 1}})), 16880);
        assert_eq!(code(bson!({"$map": {"input": []}})), 16882);
        let err = run(bson!({"$map": {"input": "$s", "in": 1}})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (16883, "input to $map must be an array not string")
        );
    }

    #[test]
    fn reduce_folds_with_this_and_value() {
        assert_eq!(
            run(bson!({"$reduce": {"input": "$nums", "initialValue": 0,
                                   "in": {"$add": ["$$value", "$$this"]}}}))
            .unwrap(),
            Some(Bson::Int32(10))
        );
        // The manual's example: concatenating strings, and building a document.
        assert_eq!(
            run(
                bson!({"$reduce": {"input": ["a", "b", "c"], "initialValue": "",
                                   "in": {"$concat": ["$$value", "$$this"]}}})
            )
            .unwrap(),
            Some(Bson::String("abc".into()))
        );
        assert_eq!(
            run(
                bson!({"$reduce": {"input": [1, 2, 3], "initialValue": {"sum": 5, "product": 2},
                "in": {"sum": {"$add": ["$$value.sum", "$$this"]},
                       "product": {"$multiply": ["$$value.product", "$$this"]}}}})
            )
            .unwrap(),
            Some(bson!({"sum": 11, "product": 12}))
        );
        assert_eq!(
            run(bson!({"$reduce": {"input": [], "initialValue": "$nope", "in": 1}})).unwrap(),
            None
        );
        assert_eq!(
            run(bson!({"$reduce": {"input": null, "initialValue": {"$divide": [1, 0]}, "in": 1}}))
                .unwrap(),
            Some(Bson::Null)
        );
    }

    #[test]
    fn reduce_errors() {
        assert_eq!(code(bson!({"$reduce": 1})), 40075);
        assert_eq!(
            code(bson!({"$reduce": {"input": [], "initialValue": 0, "in": 1, "as": "x"}})),
            40076
        );
        assert_eq!(
            code(bson!({"$reduce": {"initialValue": 0, "in": 1}})),
            40077
        );
        assert_eq!(code(bson!({"$reduce": {"input": [], "in": 1}})), 40078);
        assert_eq!(
            code(bson!({"$reduce": {"input": [], "initialValue": 0}})),
            40079
        );
        let err = run(bson!({"$reduce": {"input": "$s", "initialValue": 0, "in": 1}})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                40080,
                "$reduce requires that 'input' be an array, found: \"x\""
            )
        );
        assert_eq!(
            code(bson!({"$reduce": {"input": [], "initialValue": "$$value", "in": 1}})),
            17276
        );
    }

    #[test]
    fn bound_variables_sit_above_command_let_variables() {
        let now = DateTime::from_millis(0);
        let vars = LetVariables::parse(Some(&doc! {"factor": 3}), now).unwrap();
        let expr = Expression::parse_in(
            &bson!({"$map": {"input": "$a", "as": "x",
                "in": {"$let": {"vars": {"y": {"$multiply": ["$$x", "$$factor"]}},
                                "in": {"$add": ["$$y", "$$factor"]}}}}}),
            vars.scope(),
        )
        .unwrap();
        let d = doc! {"a": [1, 2]};
        assert_eq!(
            expr.evaluate(&vars.variables(&d)).unwrap(),
            Some(bson!([6, 9]))
        );
    }
}
