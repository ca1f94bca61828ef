//! Variables and multi-way branching: `$let` (binds variables for its `in` expression) and
//! `$switch`.

use super::{
    Args, Arity, Expression, Operator, Scope, bind_variable, missing_parameter, named_args,
    only_object, requires_object,
};
use crate::error::{MongoError, Result};
use crate::expression::validate_name_for_user_write;
use crate::expression::value::{Value, bson_type_name, truthy};
use bson::Bson;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$let",
        arity: Arity::Any,
        parse: parse_let,
        eval: let_in,
    },
    Operator {
        name: "$switch",
        arity: Arity::Any,
        parse: parse_switch,
        eval: switch,
    },
];

/// `{vars: {name: <expr>, ...}, in: <expr>}` as `[variable, value]` pairs then `in`. The values
/// are parsed in the outer scope (they cannot see each other), `in` with all the variables.
pub fn parse_let(_name: &'static str, argument: &Bson, scope: &Scope) -> Result<Vec<Expression>> {
    let spec = only_object("$let", argument, 16874)?;
    let [vars, body] = named_args(spec, ["vars", "in"], |field| {
        MongoError::location(16875, format!("Unrecognized parameter to $let: {field}"))
    })?;
    let vars = vars.ok_or_else(|| missing_parameter(16876, "$let", "vars"))?;
    let body = body.ok_or_else(|| missing_parameter(16877, "$let", "in"))?;
    let Bson::Document(vars) = vars else {
        return Err(MongoError::location(
            10065,
            "invalid parameter: expected an object (vars)",
        ));
    };
    let mut inner = scope.nested();
    let mut args = Vec::with_capacity(2 * vars.len() + 1);
    for (name, value) in vars {
        validate_name_for_user_write(name)?;
        args.push(bind_variable(&mut inner, name));
        args.push(Expression::parse_in(value, scope)?);
    }
    args.push(Expression::parse_in(body, &inner)?);
    Ok(args)
}

pub fn let_in(args: &Args) -> Result<Value> {
    let body = args.len() - 1;
    let mut frame = args.frame();
    for variable in (0..body).step_by(2) {
        frame.bind(variable, args.eval(variable + 1)?);
    }
    frame.eval(body)
}

/// `{branches: [{case, then}, ...], default}` as `[case, then, ...]` then `default` if given.
pub fn parse_switch(
    _name: &'static str,
    argument: &Bson,
    scope: &Scope,
) -> Result<Vec<Expression>> {
    let spec = requires_object("$switch", argument, 40060)?;
    let mut args = Vec::new();
    let mut default = None;
    for (key, value) in spec {
        match key.as_str() {
            "branches" => {
                let Bson::Array(branches) = value else {
                    return Err(MongoError::location(
                        40061,
                        format!(
                            "$switch expected an array for 'branches', found: {}",
                            bson_type_name(value)
                        ),
                    ));
                };
                for branch in branches {
                    args.extend(parse_branch(branch, scope)?);
                }
            }
            "default" => default = Some(Expression::parse_in(value, scope)?),
            _ => {
                return Err(MongoError::location(
                    40067,
                    format!("$switch found an unknown argument: {key}"),
                ));
            }
        }
    }
    if args.is_empty() {
        return Err(MongoError::location(
            40068,
            "$switch requires at least one branch",
        ));
    }
    args.extend(default);
    Ok(args)
}

fn parse_branch(branch: &Bson, scope: &Scope) -> Result<[Expression; 2]> {
    let Bson::Document(branch) = branch else {
        return Err(MongoError::location(
            40062,
            format!(
                "$switch expected each branch to be an object, found: {}",
                bson_type_name(branch)
            ),
        ));
    };
    let [case, then] = named_args(branch, ["case", "then"], |field| {
        MongoError::location(
            40063,
            format!("$switch found an unknown argument to a branch: {field}"),
        )
    })?;
    let case = case.ok_or_else(|| {
        MongoError::location(
            40064,
            "$switch requires each branch have a 'case' expression",
        )
    })?;
    let then = then.ok_or_else(|| {
        MongoError::location(
            40065,
            "$switch requires each branch have a 'then' expression.",
        )
    })?;
    Ok([
        Expression::parse_in(case, scope)?,
        Expression::parse_in(then, scope)?,
    ])
}

/// The `then` of the first branch whose `case` is true; only that one is evaluated.
pub fn switch(args: &Args) -> Result<Value> {
    let branches = args.len() / 2;
    for branch in 0..branches {
        if truthy(args.eval(2 * branch)?.as_ref()) {
            return args.eval(2 * branch + 1);
        }
    }
    if args.len() % 2 == 0 {
        return Err(MongoError::location(
            40066,
            "$switch could not find a matching branch for an input, and no default was specified.",
        ));
    }
    args.eval(args.len() - 1)
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
    use bson::{Bson, bson, doc};

    fn run(expr: Bson) -> crate::error::Result<Option<Bson>> {
        eval(expr, &doc! {"price": 10, "tax": 0.25, "qty": 3})
    }

    fn code(expr: Bson) -> i32 {
        run(expr).unwrap_err().code().code()
    }

    #[test]
    fn let_binds_variables_for_in() {
        // The manual's example: total = (price + tax) * qty.
        let total = bson!({"$let": {
            "vars": {"total": {"$add": ["$price", "$tax"]}, "discounted": {"$cond": [true, 0.9, 1]}},
            "in": {"$multiply": ["$$total", "$$discounted", "$qty"]}
        }});
        assert_eq!(run(total).unwrap(), Some(Bson::Double(10.25 * 0.9 * 3.0)));
        // Nested lets shadow, and the inner vars see the outer variable.
        let nested = bson!({"$let": {"vars": {"x": 1}, "in": {"$let": {
            "vars": {"x": {"$add": ["$$x", 10]}, "y": "$$x"},
            "in": ["$$x", "$$y"]
        }}}});
        assert_eq!(run(nested).unwrap(), Some(bson!([11, 1])));
        // A variable bound to missing is missing; CURRENT may be rebound.
        assert_eq!(
            run(bson!({"$let": {"vars": {"m": "$nope"}, "in": "$$m"}})).unwrap(),
            None
        );
        assert_eq!(
            run(bson!({"$let": {"vars": {"CURRENT": {"price": 99}}, "in": "$price"}})).unwrap(),
            Some(Bson::Int32(99))
        );
    }

    #[test]
    fn let_parse_errors() {
        assert_eq!(code(bson!({"$let": 1})), 16874);
        assert_eq!(code(bson!({"$let": {"vars": {}, "in": 1, "x": 1}})), 16875);
        assert_eq!(code(bson!({"$let": {"in": 1}})), 16876);
        assert_eq!(code(bson!({"$let": {"vars": {}}})), 16877);
        assert_eq!(code(bson!({"$let": {"vars": 1, "in": 1}})), 10065);
        let err = run(bson!({"$let": {"vars": {"Upper": 1}, "in": 1}})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                9,
                "'Upper' starts with an invalid character for a user variable name"
            )
        );
        assert_eq!(code(bson!({"$let": {"vars": {"a-b": 1}, "in": 1}})), 9);
        // The values cannot see each other, and `in` is the only place the variables exist.
        assert_eq!(
            code(bson!({"$let": {"vars": {"a": 1, "b": "$$a"}, "in": 1}})),
            17276
        );
        assert_eq!(
            code(bson!([{"$let": {"vars": {"a": 1}, "in": 1}}, "$$a"])),
            17276
        );
    }

    #[test]
    fn switch_takes_the_first_true_branch() {
        let grade = |score: i32| {
            eval(
                bson!({"$switch": {
                    "branches": [
                        {"case": {"$gte": ["$s", 90]}, "then": "A"},
                        {"case": {"$gte": ["$s", 80]}, "then": "B"}
                    ],
                    "default": "F"
                }}),
                &doc! {"s": score},
            )
            .unwrap()
        };
        assert_eq!(grade(95), Some(Bson::String("A".into())));
        assert_eq!(grade(85), Some(Bson::String("B".into())));
        assert_eq!(grade(10), Some(Bson::String("F".into())));
        // Later branches are not evaluated; a branch's then may be missing.
        assert_eq!(
            run(bson!({"$switch": {"branches": [
                {"case": 1, "then": "$nope"},
                {"case": {"$divide": [1, 0]}, "then": 2}
            ]}}))
            .unwrap(),
            None
        );
        let err = run(bson!({"$switch": {"branches": [{"case": null, "then": 1}]}})).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                40066,
                "$switch could not find a matching branch for an input, and no default was specified."
            )
        );
    }

    #[test]
    fn switch_parse_errors() {
        assert_eq!(code(bson!({"$switch": [1]})), 40060);
        assert_eq!(code(bson!({"$switch": {"branches": {}}})), 40061);
        assert_eq!(code(bson!({"$switch": {"branches": [1]}})), 40062);
        assert_eq!(
            code(bson!({"$switch": {"branches": [{"case": 1, "then": 1, "x": 1}]}})),
            40063
        );
        assert_eq!(code(bson!({"$switch": {"branches": [{"then": 1}]}})), 40064);
        assert_eq!(code(bson!({"$switch": {"branches": [{"case": 1}]}})), 40065);
        assert_eq!(code(bson!({"$switch": {"branches": [], "x": 1}})), 40067);
        assert_eq!(
            code(bson!({"$switch": {"branches": [], "default": 1}})),
            40068
        );
        assert_eq!(code(bson!({"$switch": {"default": 1}})), 40068);
    }
}
