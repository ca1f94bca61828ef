//! The operator table: every `{$op: ...}` expression the evaluator knows, with its arity, how
//! its arguments are parsed and how it is evaluated. Each family module lists its
//! operators (its `OPERATORS`, one entry and one function per operator); [`FAMILIES`] lists
//! the families.

mod arithmetic;
mod array;
mod comparison;
mod conversion;
mod index_of;
mod logical;
mod math;
mod regex;
mod rounding;
mod set;
mod string;
mod string_rewrite;
mod substring;
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

/// Every family's operators.
static FAMILIES: &[&[Operator]] = &[
    arithmetic::OPERATORS,
    math::OPERATORS,
    rounding::OPERATORS,
    comparison::OPERATORS,
    logical::OPERATORS,
    string::OPERATORS,
    array::OPERATORS,
    types::OPERATORS,
    string_rewrite::OPERATORS,
    substring::OPERATORS,
    index_of::OPERATORS,
    regex::OPERATORS,
    set::OPERATORS,
    conversion::OPERATORS,
];

pub(super) fn lookup(name: &str) -> Option<&'static Operator> {
    FAMILIES
        .iter()
        .flat_map(|family| family.iter())
        .find(|op| op.name == name)
}

/// Whether `name` is an expression operator (a `{$name: ...}` projection value is then an
/// expression rather than a sub-projection).
pub fn is_operator_name(name: &str) -> bool {
    lookup(name).is_some()
}

/// The usual argument form: an array is the argument list, anything else a single argument.
pub(super) fn nary(_name: &'static str, argument: &Bson, scope: &Scope) -> Result<Vec<Expression>> {
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
