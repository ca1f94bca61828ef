//! Arithmetic operators: `$add`, `$subtract`, `$multiply`, `$divide`, `$mod`, `$abs`, on top
//! of the promotion rules in `expression::numeric`.

use super::Args;
use super::{Arity, Operator, nary};
use crate::error::{MongoError, Result};
use crate::expression::numeric::{self, AddState, MultiplyState};
use crate::expression::value::{Value, bson_type_name, is_nullish, is_number};
use bson::Bson;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$abs",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: abs,
    },
    Operator {
        name: "$add",
        arity: Arity::Any,
        parse: nary,
        eval: add,
    },
    Operator {
        name: "$divide",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: divide,
    },
    Operator {
        name: "$mod",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: modulo,
    },
    Operator {
        name: "$multiply",
        arity: Arity::Any,
        parse: nary,
        eval: multiply,
    },
    Operator {
        name: "$subtract",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: subtract,
    },
];

/// Arguments are checked left to right: a null or missing one makes the result null without
/// evaluating the rest, a non-number before it is an error.
pub fn add(args: &Args) -> Result<Value> {
    let mut state = AddState::default();
    for i in 0..args.len() {
        let value = args.eval(i)?;
        let Some(value) = value.filter(|v| !is_nullish(Some(v))) else {
            return Ok(Some(Bson::Null));
        };
        if !is_number(&value) && !matches!(value, Bson::DateTime(_)) {
            return Err(MongoError::type_mismatch(format!(
                "$add only supports numeric or date types, not {}",
                bson_type_name(&value)
            )));
        }
        state.add(&value)?;
    }
    Ok(Some(state.value()))
}

pub fn multiply(args: &Args) -> Result<Value> {
    let mut state = MultiplyState::default();
    for i in 0..args.len() {
        let value = args.eval(i)?;
        let Some(value) = value.filter(|v| !is_nullish(Some(v))) else {
            return Ok(Some(Bson::Null));
        };
        if !is_number(&value) {
            return Err(MongoError::type_mismatch(format!(
                "$multiply only supports numeric types, not {}",
                bson_type_name(&value)
            )));
        }
        state.multiply(&value);
    }
    Ok(Some(state.value()))
}

pub fn subtract(args: &Args) -> Result<Value> {
    let (lhs, rhs) = args.eval_pair()?;
    numeric::subtract(lhs, rhs)
}

pub fn divide(args: &Args) -> Result<Value> {
    let (lhs, rhs) = args.eval_pair()?;
    numeric::divide(lhs, rhs)
}

pub fn modulo(args: &Args) -> Result<Value> {
    let (lhs, rhs) = args.eval_pair()?;
    numeric::modulo(lhs, rhs)
}

pub fn abs(args: &Args) -> Result<Value> {
    numeric::abs(args.eval(0)?)
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
    use bson::{Bson, DateTime, bson, doc};

    #[test]
    fn add_and_multiply_stop_at_the_first_null() {
        let d = doc! {"a": 2, "s": "x"};
        assert_eq!(
            eval(bson!({"$add": [1, "$a", 2.5]}), &d).unwrap(),
            Some(Bson::Double(5.5))
        );
        assert_eq!(eval(bson!({"$add": []}), &d).unwrap(), Some(Bson::Int32(0)));
        assert_eq!(
            eval(bson!({"$add": ["$missing", "$s"]}), &d).unwrap(),
            Some(Bson::Null)
        );
        let err = eval(bson!({"$add": ["$s", "$missing"]}), &d).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (14, "$add only supports numeric or date types, not string")
        );
        assert_eq!(
            eval(bson!({"$add": [null, {"$divide": [1, 0]}]}), &d).unwrap(),
            Some(Bson::Null)
        );
        assert_eq!(
            eval(bson!({"$multiply": ["$a", 3]}), &d).unwrap(),
            Some(Bson::Int32(6))
        );
        assert_eq!(
            eval(bson!({"$multiply": []}), &d).unwrap(),
            Some(Bson::Int32(1))
        );
        assert_eq!(
            eval(bson!({"$multiply": ["$s"]}), &d)
                .unwrap_err()
                .message(),
            "$multiply only supports numeric types, not string"
        );
        let date = doc! {"d": DateTime::from_millis(1000)};
        assert_eq!(
            eval(bson!({"$add": ["$d", 500]}), &date).unwrap(),
            Some(Bson::DateTime(DateTime::from_millis(1500)))
        );
    }

    #[test]
    fn binary_operators_check_their_arity() {
        let d = doc! {};
        let err = eval(bson!({"$subtract": [1]}), &d).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                16020,
                "Expression $subtract takes exactly 2 arguments. 1 were passed in."
            )
        );
        assert_eq!(
            eval(bson!({"$divide": 4}), &d).unwrap_err().code().code(),
            16020
        );
        assert_eq!(
            eval(bson!({"$abs": [1, 2]}), &d).unwrap_err().code().code(),
            16020
        );
        assert_eq!(eval(bson!({"$abs": -3}), &d).unwrap(), Some(Bson::Int32(3)));
        assert_eq!(
            eval(bson!({"$divide": [9, 3]}), &d).unwrap(),
            Some(Bson::Double(3.0))
        );
        assert_eq!(
            eval(bson!({"$mod": [9, 4]}), &d).unwrap(),
            Some(Bson::Int32(1))
        );
        assert_eq!(
            eval(bson!({"$subtract": [9, 4.5]}), &d).unwrap(),
            Some(Bson::Double(4.5))
        );
        let err = eval(bson!({"$divide": [1, 0]}), &d).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (16608, "can't $divide by zero")
        );
    }
}
