//! The operator table: every `{$op: ...}` expression the evaluator knows, with its arity, how
//! its arguments are parsed and how it is evaluated. Each family module lists its
//! operators (its `OPERATORS`, one entry and one function per operator); [`FAMILIES`] lists
//! the families; [`NOT_IMPLEMENTED`] names MongoDB's other expression operators. Together they
//! are the one list of expression operator names: whatever recognises an expression operator
//! (`$expr`, projections, pipeline stages) asks [`is_operator_name`] or
//! [`is_known_operator_name`].

mod arithmetic;
mod array;
mod array_build;
mod array_sort;
mod comparison;
mod conversion;
mod date_args;
mod date_arith;
mod date_format;
mod date_from_parts;
mod date_parts;
mod date_trunc;
mod from_accumulator;
mod higher_order;
mod index_of;
mod logical;
mod math;
mod object;
mod regex;
mod reshape;
mod rounding;
mod set;
mod string;
mod string_rewrite;
mod substring;
mod types;
mod variables;

use super::{Base, Expression, Scope, Variables};
use crate::error::{MongoError, Result};
use crate::expression::value::{Value, bson_type_name, is_nullish};
use bson::{Bson, Document};

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
    /// From the first to the second number of arguments.
    Range(usize, usize),
    Any,
}

impl Arity {
    pub fn check(self, name: &str, count: usize) -> Result<()> {
        match self {
            Arity::Exactly(n) if count != n => Err(MongoError::location(
                16020,
                format!("Expression {name} takes exactly {n} arguments. {count} were passed in."),
            )),
            Arity::Range(min, max) if count < min || count > max => Err(MongoError::location(
                28667,
                format!(
                    "Expression {name} takes at least {min} arguments, and at most {max}, but {count} were passed in."
                ),
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
    variables::OPERATORS,
    higher_order::OPERATORS,
    array_build::OPERATORS,
    array_sort::OPERATORS,
    object::OPERATORS,
    reshape::OPERATORS,
    date_parts::OPERATORS,
    date_format::OPERATORS,
    date_from_parts::OPERATORS,
    date_arith::OPERATORS,
    date_trunc::OPERATORS,
    from_accumulator::OPERATORS,
];

pub(super) fn lookup(name: &str) -> Option<&'static Operator> {
    FAMILIES
        .iter()
        .flat_map(|family| family.iter())
        .find(|op| op.name == name)
}

/// MongoDB's expression operators that docgrid does not evaluate. Where a list of known names
/// matters (a find projection's `{$name: ...}`), these are refused as not implemented rather
/// than as unrecognized names.
pub static NOT_IMPLEMENTED: &[&str] = &[
    "$acos",
    "$acosh",
    "$asin",
    "$asinh",
    "$atan",
    "$atan2",
    "$atanh",
    "$binarySize",
    "$bitAnd",
    "$bitNot",
    "$bitOr",
    "$bitXor",
    "$bsonSize",
    "$cos",
    "$cosh",
    "$degreesToRadians",
    "$function",
    "$radiansToDegrees",
    "$sampleRate",
    "$sin",
    "$sinh",
    "$tan",
    "$tanh",
    "$toHashedIndexKey",
    "$tsIncrement",
    "$tsSecond",
];

/// Whether `name` is an expression operator docgrid evaluates (a `{$name: ...}` projection
/// value is then an expression rather than a sub-projection).
pub fn is_operator_name(name: &str) -> bool {
    lookup(name).is_some()
}

/// Whether `name` is one of MongoDB's expression operators, evaluated here or
/// [`NOT_IMPLEMENTED`].
pub fn is_known_operator_name(name: &str) -> bool {
    is_operator_name(name) || NOT_IMPLEMENTED.contains(&name)
}

/// The names of the operators docgrid evaluates, family by family.
pub fn operator_names() -> impl Iterator<Item = &'static str> {
    FAMILIES
        .iter()
        .flat_map(|family| family.iter())
        .map(|op| op.name)
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

/// [`nary`] for the operators that need two arguments or more; their error is `code` with
/// `too_few` followed by the count.
pub(super) fn nary_at_least_two(
    argument: &Bson,
    scope: &Scope,
    code: i32,
    too_few: &str,
) -> Result<Vec<Expression>> {
    let args = nary("", argument, scope)?;
    if args.len() < 2 {
        return Err(MongoError::location(
            code,
            format!("{too_few}{}", args.len()),
        ));
    }
    Ok(args)
}

/// The operand must be an object; `message` says so otherwise.
pub(super) fn object_argument(
    argument: &Bson,
    code: i32,
    message: impl FnOnce() -> String,
) -> Result<&Document> {
    match argument {
        Bson::Document(spec) => Ok(spec),
        _ => Err(MongoError::location(code, message())),
    }
}

/// [`object_argument`] for the operators whose message names the type found.
pub(super) fn requires_object<'b>(
    name: &str,
    argument: &'b Bson,
    code: i32,
) -> Result<&'b Document> {
    object_argument(argument, code, || {
        format!(
            "{name} requires an object as an argument, found: {}",
            bson_type_name(argument)
        )
    })
}

/// [`object_argument`] for the operators whose message does not name the type found.
pub(super) fn only_object<'b>(name: &str, argument: &'b Bson, code: i32) -> Result<&'b Document> {
    object_argument(argument, code, || {
        format!("{name} only supports an object as its argument")
    })
}

/// The error for a named argument left out, in the `$filter`/`$let`/`$dateDiff` wording.
pub(super) fn missing_parameter(code: i32, name: &str, field: &str) -> MongoError {
    MongoError::location(code, format!("Missing '{field}' parameter to {name}"))
}

/// The error for a named argument left out, in the `$reduce`/`$getField`/`$replaceOne` wording.
pub(super) fn unspecified(code: i32, name: &str, field: &str) -> MongoError {
    MongoError::location(code, format!("{name} requires '{field}' to be specified"))
}

/// An argument that must be an array: `None` when it is null or missing (the operator's
/// result is then null), `wrong(value)` for anything else.
pub(super) fn array_or_null(
    value: Value,
    wrong: impl FnOnce(Value) -> MongoError,
) -> Result<Option<Vec<Bson>>> {
    match value {
        Some(Bson::Array(items)) => Ok(Some(items)),
        value if is_nullish(value.as_ref()) => Ok(None),
        value => Err(wrong(value)),
    }
}

/// [`array_or_null`] for an argument that must be a document.
pub(super) fn document_or_null(
    value: Value,
    wrong: impl FnOnce(Value) -> MongoError,
) -> Result<Option<Document>> {
    match value {
        Some(Bson::Document(doc)) => Ok(Some(doc)),
        value if is_nullish(value.as_ref()) => Ok(None),
        value => Err(wrong(value)),
    }
}

/// The fields of a named-argument operand (`{input: ..., as: ...}`) in the order of `names`,
/// refusing any other field with `unknown(field)`.
pub(super) fn named_args<'b, const N: usize>(
    spec: &'b Document,
    names: [&str; N],
    unknown: impl Fn(&str) -> MongoError,
) -> Result<[Option<&'b Bson>; N]> {
    let mut found = [None; N];
    for (key, value) in spec {
        let position = names
            .iter()
            .position(|name| name == key)
            .ok_or_else(|| unknown(key))?;
        found[position] = Some(value);
    }
    Ok(found)
}

/// A variable that an operator binds for some of its arguments (`$let`, `$map`, `$filter`,
/// `$reduce`): `name` is defined in `scope`, the child scope those arguments are parsed in, and
/// the reference returned is passed to the operator as one more argument, which
/// [`Frame::bind`] is given to set the variable.
pub(super) fn bind_variable(scope: &mut Scope, name: &str) -> Expression {
    Expression::Path {
        base: Base::User(scope.define(name)),
        parts: Vec::new(),
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

    /// Compares two values as the command's collation orders them (see [`Variables::compare`]).
    pub fn compare(&self, a: Option<&Bson>, b: Option<&Bson>) -> std::cmp::Ordering {
        self.vars.compare(a, b)
    }

    /// The command's collation (`None`: simple).
    pub fn collation(&self) -> Option<&'a crate::document::collation::Collation> {
        self.vars.collation()
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

    /// A frame in which to bind the variables of [`bind_variable`] and evaluate the arguments
    /// that see them.
    pub fn frame(&self) -> Frame<'_> {
        Frame {
            args: self,
            base: self.vars.user_len(),
            bound: Vec::new(),
        }
    }
}

/// The user variables of an operator's expression plus the ones the operator binds, which
/// take the slots from `base` on (its scope defined them after every name it sees).
pub struct Frame<'a> {
    args: &'a Args<'a>,
    base: usize,
    bound: Vec<Value>,
}

impl Frame<'_> {
    /// Sets the variable that argument `variable` refers to (see [`bind_variable`]).
    pub fn bind(&mut self, variable: usize, value: Value) {
        let Some(Expression::Path {
            base: Base::User(slot),
            ..
        }) = self.args.exprs.get(variable)
        else {
            unreachable!("argument {variable} is not a bound variable");
        };
        if *slot < self.base {
            // A slot below the frame (not seen from a scope of this server's making): the
            // values below are copied into the frame so that it may hold the binding.
            let below: Vec<Value> = (0..self.base)
                .map(|s| self.args.vars.user_value(s))
                .collect();
            self.bound.splice(0..0, below);
            self.base = 0;
        }
        let at = slot - self.base;
        if self.bound.len() <= at {
            self.bound.resize(at + 1, None);
        }
        self.bound[at] = value;
    }

    /// Evaluates argument `index` with the variables bound so far.
    pub fn eval(&self, index: usize) -> Result<Value> {
        match self.args.exprs.get(index) {
            Some(expr) => expr.evaluate(&self.args.vars.with_bound(self.base, &self.bound)),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{FAMILIES, array_or_null, document_or_null};
    use crate::error::MongoError;
    use bson::{Bson, bson, doc};

    #[test]
    fn every_operator_is_listed_once() {
        let mut names: Vec<&str> = FAMILIES
            .iter()
            .flat_map(|family| family.iter().map(|op| op.name))
            .collect();
        let listed = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), listed, "an operator is listed twice");
        assert!(names.iter().all(|n| n.starts_with('$')));
    }

    #[test]
    fn null_or_missing_inputs_are_no_error() {
        let wrong = |_| MongoError::location(1, "wrong");
        assert_eq!(array_or_null(None, wrong).unwrap(), None);
        assert_eq!(array_or_null(Some(Bson::Undefined), wrong).unwrap(), None);
        assert_eq!(
            array_or_null(Some(bson!([1])), wrong).unwrap(),
            Some(vec![Bson::Int32(1)])
        );
        let err = array_or_null(Some(Bson::Int32(1)), wrong).unwrap_err();
        assert_eq!(err.code().code(), 1);
        assert_eq!(document_or_null(Some(Bson::Null), wrong).unwrap(), None);
        assert_eq!(
            document_or_null(Some(bson!({"a": 1})), wrong).unwrap(),
            Some(doc! {"a": 1})
        );
        assert!(document_or_null(Some(bson!([])), wrong).is_err());
    }
}
