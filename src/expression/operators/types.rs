//! Literal and type operators: `$literal`, `$type` (conversions are in `conversion`).

use super::{Args, Expression, Scope};
use super::{Arity, Operator, nary};
use crate::error::Result;
use crate::expression::value::{Value, type_name};
use bson::Bson;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$literal",
        arity: Arity::Exactly(1),
        parse: parse_literal,
        eval: literal,
    },
    Operator {
        name: "$type",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: type_of,
    },
];

/// The argument is taken as is, without parsing `$` strings or operator objects.
pub fn parse_literal(
    _name: &'static str,
    argument: &Bson,
    _scope: &Scope,
) -> Result<Vec<Expression>> {
    Ok(vec![Expression::Constant(argument.clone())])
}

pub fn literal(args: &Args) -> Result<Value> {
    args.eval(0)
}

/// The type's name, `"missing"` for missing.
pub fn type_of(args: &Args) -> Result<Value> {
    Ok(Some(Bson::String(
        type_name(args.eval(0)?.as_ref()).to_string(),
    )))
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
    use bson::{Bson, bson, doc};

    #[test]
    fn type_names() {
        let d = doc! {"i": 1, "l": 2_i64, "s": "x", "n": null};
        for (path, name) in [
            ("$i", "int"),
            ("$l", "long"),
            ("$s", "string"),
            ("$n", "null"),
            ("$missing", "missing"),
        ] {
            assert_eq!(
                eval(bson!({"$type": path}), &d).unwrap(),
                Some(Bson::String(name.into()))
            );
        }
        assert_eq!(
            eval(bson!({"$type": [[1]]}), &d).unwrap(),
            Some(Bson::String("array".into()))
        );
    }
}
