//! The operator table: every `{$op: ...}` expression the evaluator knows, with its arity, how
//! its arguments are parsed and how it is evaluated. A new operator is one entry in
//! [`OPERATORS`] and one function in the family module it belongs to.

mod arithmetic;
mod array;
mod comparison;
mod logical;
mod string;
mod types;

use super::{Expression, Scope, Variables};
use crate::aggregate::value::Value;
use crate::error::{MongoError, Result};
use bson::Bson;

/// Turns the operator's argument into argument expressions, resolving `$$name` in `scope`.
type ParseFn = fn(&'static str, &Bson, &Scope) -> Result<Vec<Expression>>;
/// Evaluates the operator; it decides which arguments to evaluate, and in which order.
type EvalFn = fn(&Args) -> Result<Value>;

pub struct Operator {
    pub name: &'static str,
    pub arity: Arity,
    pub parse: ParseFn,
    pub eval: EvalFn,
}

impl std::fmt::Debug for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// How many arguments an operator accepts, checked when the expression is parsed.
#[derive(Clone, Copy, Debug)]
pub enum Arity {
    Exactly(usize),
    Any,
}

impl Arity {
    pub fn check(self, name: &str, count: usize) -> Result<()> {
        match self {
            Arity::Exactly(n) if count != n => Err(MongoError::location(
                16020,
                format!("Expression {name} takes exactly {n} arguments. {count} were passed in."),
            )),
            _ => Ok(()),
        }
    }
}

static OPERATORS: &[Operator] = &[
    // Arithmetic.
    Operator {
        name: "$abs",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: arithmetic::abs,
    },
    Operator {
        name: "$add",
        arity: Arity::Any,
        parse: nary,
        eval: arithmetic::add,
    },
    Operator {
        name: "$divide",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: arithmetic::divide,
    },
    Operator {
        name: "$mod",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: arithmetic::modulo,
    },
    Operator {
        name: "$multiply",
        arity: Arity::Any,
        parse: nary,
        eval: arithmetic::multiply,
    },
    Operator {
        name: "$subtract",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: arithmetic::subtract,
    },
    // Comparison.
    Operator {
        name: "$cmp",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: comparison::cmp,
    },
    Operator {
        name: "$eq",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: comparison::eq,
    },
    Operator {
        name: "$gt",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: comparison::gt,
    },
    Operator {
        name: "$gte",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: comparison::gte,
    },
    Operator {
        name: "$lt",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: comparison::lt,
    },
    Operator {
        name: "$lte",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: comparison::lte,
    },
    Operator {
        name: "$ne",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: comparison::ne,
    },
    // Boolean and conditional.
    Operator {
        name: "$and",
        arity: Arity::Any,
        parse: nary,
        eval: logical::and,
    },
    Operator {
        name: "$cond",
        arity: Arity::Exactly(3),
        parse: logical::parse_cond,
        eval: logical::cond,
    },
    Operator {
        name: "$ifNull",
        arity: Arity::Any,
        parse: logical::parse_if_null,
        eval: logical::if_null,
    },
    Operator {
        name: "$not",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: logical::not,
    },
    Operator {
        name: "$or",
        arity: Arity::Any,
        parse: nary,
        eval: logical::or,
    },
    // Strings.
    Operator {
        name: "$concat",
        arity: Arity::Any,
        parse: nary,
        eval: string::concat,
    },
    Operator {
        name: "$toLower",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: string::to_lower,
    },
    Operator {
        name: "$toUpper",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: string::to_upper,
    },
    // Arrays.
    Operator {
        name: "$arrayElemAt",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: array::array_elem_at,
    },
    Operator {
        name: "$in",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: array::is_in,
    },
    Operator {
        name: "$size",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: array::size,
    },
    // Literals, types and conversion.
    Operator {
        name: "$literal",
        arity: Arity::Exactly(1),
        parse: types::parse_literal,
        eval: types::literal,
    },
    Operator {
        name: "$toString",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: types::to_string,
    },
    Operator {
        name: "$type",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: types::type_of,
    },
];

pub(super) fn lookup(name: &str) -> Option<&'static Operator> {
    OPERATORS.iter().find(|op| op.name == name)
}

/// Whether `name` is an expression operator (a `{$name: ...}` projection value is then an
/// expression rather than a sub-projection).
pub fn is_operator_name(name: &str) -> bool {
    lookup(name).is_some()
}

/// The usual argument form: an array is the argument list, anything else a single argument.
fn nary(_name: &'static str, argument: &Bson, scope: &Scope) -> Result<Vec<Expression>> {
    match argument {
        Bson::Array(items) => items
            .iter()
            .map(|item| Expression::parse_in(item, scope))
            .collect(),
        other => Ok(vec![Expression::parse_in(other, scope)?]),
    }
}

/// An operator's arguments, evaluated on demand so that operators can short-circuit and
/// report errors in the order MongoDB does.
pub struct Args<'a> {
    exprs: &'a [Expression],
    vars: &'a Variables<'a>,
}

impl<'a> Args<'a> {
    pub(super) fn new(exprs: &'a [Expression], vars: &'a Variables<'a>) -> Self {
        Args { exprs, vars }
    }

    pub fn len(&self) -> usize {
        self.exprs.len()
    }

    /// Evaluates argument `index` (missing when there is no such argument).
    pub fn eval(&self, index: usize) -> Result<Value> {
        match self.exprs.get(index) {
            Some(expr) => expr.evaluate(self.vars),
            None => Ok(None),
        }
    }

    /// Evaluates the first two arguments, left to right.
    pub fn eval_pair(&self) -> Result<(Value, Value)> {
        Ok((self.eval(0)?, self.eval(1)?))
    }
}
