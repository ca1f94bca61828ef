//! Boolean and conditional operators: `$and $or $not` (short-circuiting, by truthiness),
//! `$cond` (array and object forms) and the variadic `$ifNull`.

use super::{Args, Expression, Scope, missing_parameter, nary, nary_at_least_two};
use super::{Arity, Operator};
use crate::error::{MongoError, Result};
use crate::expression::value::{Value, is_nullish, truthy};
use bson::Bson;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$and",
        arity: Arity::Any,
        parse: nary,
        eval: and,
    },
    Operator {
        name: "$cond",
        arity: Arity::Exactly(3),
        parse: parse_cond,
        eval: cond,
    },
    Operator {
        name: "$ifNull",
        arity: Arity::Any,
        parse: parse_if_null,
        eval: if_null,
    },
    Operator {
        name: "$not",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: not,
    },
    Operator {
        name: "$or",
        arity: Arity::Any,
        parse: nary,
        eval: or,
    },
];

pub fn and(args: &Args) -> Result<Value> {
    for i in 0..args.len() {
        if !truthy(args.eval(i)?.as_ref()) {
            return Ok(Some(Bson::Boolean(false)));
        }
    }
    Ok(Some(Bson::Boolean(true)))
}

pub fn or(args: &Args) -> Result<Value> {
    for i in 0..args.len() {
        if truthy(args.eval(i)?.as_ref()) {
            return Ok(Some(Bson::Boolean(true)));
        }
    }
    Ok(Some(Bson::Boolean(false)))
}

pub fn not(args: &Args) -> Result<Value> {
    Ok(Some(Bson::Boolean(!truthy(args.eval(0)?.as_ref()))))
}

/// `[if, then, else]` or `{if, then, else}`, parsed into the same three arguments.
pub fn parse_cond(name: &'static str, argument: &Bson, scope: &Scope) -> Result<Vec<Expression>> {
    let Bson::Document(spec) = argument else {
        return nary(name, argument, scope);
    };
    let (mut condition, mut then, mut otherwise) = (None, None, None);
    for (key, value) in spec {
        let slot = match key.as_str() {
            "if" => &mut condition,
            "then" => &mut then,
            "else" => &mut otherwise,
            _ => {
                return Err(MongoError::location(
                    17083,
                    format!("Unrecognized parameter to $cond: {key}"),
                ));
            }
        };
        *slot = Some(Expression::parse_in(value, scope)?);
    }
    let condition = condition.ok_or_else(|| missing_parameter(17080, "$cond", "if"))?;
    let then = then.ok_or_else(|| missing_parameter(17081, "$cond", "then"))?;
    let otherwise = otherwise.ok_or_else(|| missing_parameter(17082, "$cond", "else"))?;
    Ok(vec![condition, then, otherwise])
}

/// Only the chosen branch is evaluated.
pub fn cond(args: &Args) -> Result<Value> {
    if truthy(args.eval(0)?.as_ref()) {
        args.eval(1)
    } else {
        args.eval(2)
    }
}

pub fn parse_if_null(_: &'static str, argument: &Bson, scope: &Scope) -> Result<Vec<Expression>> {
    let too_few = "$ifNull needs at least two arguments, had: ";
    nary_at_least_two(argument, scope, 1257300, too_few)
}

/// The first argument that is not null or missing; the last one's value (even missing)
/// when all are.
pub fn if_null(args: &Args) -> Result<Value> {
    for i in 0..args.len() {
        let value = args.eval(i)?;
        if !is_nullish(value.as_ref()) || i + 1 == args.len() {
            return Ok(value);
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
    use bson::{Bson, bson, doc};

    #[test]
    fn boolean_operators_use_truthiness_and_short_circuit() {
        let d = doc! {"zero": 0, "empty": "", "arr": []};
        assert_eq!(
            eval(bson!({"$and": [1, "$empty", "$arr"]}), &d).unwrap(),
            Some(Bson::Boolean(true))
        );
        assert_eq!(
            eval(bson!({"$and": [1, "$zero"]}), &d).unwrap(),
            Some(Bson::Boolean(false))
        );
        assert_eq!(
            eval(bson!({"$and": []}), &d).unwrap(),
            Some(Bson::Boolean(true))
        );
        assert_eq!(
            eval(bson!({"$or": []}), &d).unwrap(),
            Some(Bson::Boolean(false))
        );
        assert_eq!(
            eval(bson!({"$or": ["$missing", null, 0, "x"]}), &d).unwrap(),
            Some(Bson::Boolean(true))
        );
        assert_eq!(
            eval(bson!({"$and": [false, {"$divide": [1, 0]}]}), &d).unwrap(),
            Some(Bson::Boolean(false))
        );
        assert_eq!(
            eval(bson!({"$not": [null]}), &d).unwrap(),
            Some(Bson::Boolean(true))
        );
        assert_eq!(
            eval(bson!({"$not": 5}), &d).unwrap(),
            Some(Bson::Boolean(false))
        );
        assert_eq!(
            eval(bson!({"$not": [1, 2]}), &d).unwrap_err().code().code(),
            16020
        );
    }

    #[test]
    fn cond_in_both_forms() {
        let d = doc! {"a": 5};
        assert_eq!(
            eval(bson!({"$cond": [{"$gt": ["$a", 3]}, "big", "small"]}), &d).unwrap(),
            Some(Bson::String("big".into()))
        );
        assert_eq!(
            eval(
                bson!({"$cond": {"if": "$missing", "then": 1, "else": {"$add": ["$a", 1]}}}),
                &d
            )
            .unwrap(),
            Some(Bson::Int32(6))
        );
        assert_eq!(
            eval(bson!({"$cond": [true, 1, {"$divide": [1, 0]}]}), &d).unwrap(),
            Some(Bson::Int32(1))
        );
        assert_eq!(
            eval(bson!({"$cond": [true, "$$REMOVE", 1]}), &d).unwrap(),
            None
        );
        assert_eq!(
            eval(bson!({"$cond": [true, 1]}), &d)
                .unwrap_err()
                .code()
                .code(),
            16020
        );
        assert_eq!(
            eval(bson!({"$cond": {"then": 1, "else": 2}}), &d)
                .unwrap_err()
                .code()
                .code(),
            17080
        );
        assert_eq!(
            eval(bson!({"$cond": {"if": 1, "else": 2}}), &d)
                .unwrap_err()
                .code()
                .code(),
            17081
        );
        assert_eq!(
            eval(bson!({"$cond": {"if": 1, "then": 2}}), &d)
                .unwrap_err()
                .code()
                .code(),
            17082
        );
        let err = eval(
            bson!({"$cond": {"if": 1, "then": 2, "else": 3, "x": 4}}),
            &d,
        )
        .unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (17083, "Unrecognized parameter to $cond: x")
        );
    }

    #[test]
    fn if_null_is_variadic() {
        let d = doc! {"n": null, "v": 7};
        assert_eq!(
            eval(bson!({"$ifNull": ["$missing", "$n", "$v", 1]}), &d).unwrap(),
            Some(Bson::Int32(7))
        );
        assert_eq!(
            eval(bson!({"$ifNull": ["$v", {"$divide": [1, 0]}]}), &d).unwrap(),
            Some(Bson::Int32(7))
        );
        assert_eq!(
            eval(bson!({"$ifNull": ["$n", "$missing"]}), &d).unwrap(),
            None
        );
        assert_eq!(
            eval(bson!({"$ifNull": ["$missing", null]}), &d).unwrap(),
            Some(Bson::Null)
        );
        let err = eval(bson!({"$ifNull": ["$v"]}), &d).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (1257300, "$ifNull needs at least two arguments, had: 1")
        );
    }
}
