//! Comparison operators: `$eq $ne $gt $gte $lt $lte $cmp`, in MongoDB's BSON order (missing
//! sorts below null).

use super::Args;
use super::{Arity, Operator, nary};
use crate::error::Result;
use crate::expression::value::Value;
use bson::Bson;
use std::cmp::Ordering;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$cmp",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: cmp,
    },
    Operator {
        name: "$eq",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: eq,
    },
    Operator {
        name: "$gt",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: gt,
    },
    Operator {
        name: "$gte",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: gte,
    },
    Operator {
        name: "$lt",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: lt,
    },
    Operator {
        name: "$lte",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: lte,
    },
    Operator {
        name: "$ne",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: ne,
    },
];

fn ordering(args: &Args) -> Result<Ordering> {
    let (lhs, rhs) = args.eval_pair()?;
    Ok(args.compare(lhs.as_ref(), rhs.as_ref()))
}

fn test(args: &Args, accept: fn(Ordering) -> bool) -> Result<Value> {
    Ok(Some(Bson::Boolean(accept(ordering(args)?))))
}

pub fn eq(args: &Args) -> Result<Value> {
    test(args, Ordering::is_eq)
}

pub fn ne(args: &Args) -> Result<Value> {
    test(args, Ordering::is_ne)
}

pub fn gt(args: &Args) -> Result<Value> {
    test(args, Ordering::is_gt)
}

pub fn gte(args: &Args) -> Result<Value> {
    test(args, Ordering::is_ge)
}

pub fn lt(args: &Args) -> Result<Value> {
    test(args, Ordering::is_lt)
}

pub fn lte(args: &Args) -> Result<Value> {
    test(args, Ordering::is_le)
}

/// -1, 0 or 1 as an int.
pub fn cmp(args: &Args) -> Result<Value> {
    Ok(Some(Bson::Int32(ordering(args)? as i32)))
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
    use bson::{Bson, bson, doc};

    fn check(expr: Bson) -> Bson {
        eval(expr, &doc! {"a": 1, "n": null, "s": "b"})
            .unwrap()
            .unwrap()
    }

    #[test]
    fn compares_in_bson_order() {
        assert_eq!(check(bson!({"$eq": ["$a", 1.0]})), Bson::Boolean(true));
        assert_eq!(
            check(bson!({"$eq": ["$missing", null]})),
            Bson::Boolean(false)
        );
        assert_eq!(
            check(bson!({"$lt": ["$missing", null]})),
            Bson::Boolean(true)
        );
        assert_eq!(check(bson!({"$gt": ["$s", 100]})), Bson::Boolean(true));
        assert_eq!(check(bson!({"$gte": ["$a", 1]})), Bson::Boolean(true));
        assert_eq!(check(bson!({"$lte": ["$a", 0]})), Bson::Boolean(false));
        assert_eq!(check(bson!({"$ne": ["$n", null]})), Bson::Boolean(false));
        assert_eq!(check(bson!({"$cmp": ["$s", "a"]})), Bson::Int32(1));
        assert_eq!(check(bson!({"$cmp": ["$a", 2]})), Bson::Int32(-1));
        assert_eq!(check(bson!({"$cmp": [[1, 2], [1, 2]]})), Bson::Int32(0));
        assert_eq!(
            eval(bson!({"$eq": [1]}), &doc! {})
                .unwrap_err()
                .code()
                .code(),
            16020
        );
    }
}
