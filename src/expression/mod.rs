//! The aggregation expression language, shared by `$expr` filters, find projections, update
//! pipelines and the aggregation stages: an operand is parsed once into an [`Expression`] tree
//! (field paths, variables, literals, object and array expressions, operators) and evaluated
//! per document against [`Variables`]. Below the query language and the pipeline, it depends on
//! nothing but documents and errors.
//!
//! - here: the tree, parsing (against a [`Scope`] of user variables) and evaluation.
//! - `operators`: the operator table (the one list of expression operator names,
//!   [`is_operator_name`]) and the operators by family.
//! - `let_vars`: a command's `let` parameters, evaluated once into [`LetVariables`], and the
//!   sub-pipeline depth they count (the pipeline holds it to its limit).
//! - [`fold`]: the running sums, extremes, deviations and quantiles the accumulator expressions
//!   (`$sum`, `$avg`...) and `$group`'s accumulators share.
//! - [`numeric`] and [`decimal`] (with `decimal_math`): arithmetic with MongoDB's promotion
//!   rules, Decimal128 arithmetic on libdecNumber.
//! - [`fieldpath`] and [`value`]: paths and values as expressions see them.
//! - `convert`, `parse_text`, `datetime`: `$convert`'s conversions, text to numbers and dates,
//!   calendar arithmetic and formats.
//! - [`mongo_regex`]: MongoDB's regular expressions on PCRE2 (options, errors, match limits).

mod convert;
mod datetime;
pub mod decimal;
mod decimal_math;
pub mod fieldpath;
pub mod fold;
mod let_vars;
pub mod meta;
pub mod mongo_regex;
pub mod numeric;
mod operators;
mod parse_text;
pub mod value;

use crate::document::collation::Collation;
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, DateTime, Document};
use fieldpath::FieldPath;
use std::collections::HashMap;
use std::sync::Arc;
use value::Value;

pub use convert::encode_base64;
pub use let_vars::LetVariables;
use operators::Args;
pub use operators::{NOT_IMPLEMENTED, is_known_operator_name, is_operator_name, operator_names};
/// MongoDB's `coerceToBool`, which `$expr` applies to its expression's value.
pub use value::truthy;

/// A parsed expression.
#[derive(Clone, Debug)]
pub enum Expression {
    Constant(Bson),
    /// `$a.b` (base `CURRENT`) or `$$var.a.b`.
    Path {
        base: Base,
        parts: Vec<String>,
    },
    /// `{a: <expr>, ...}`: fields that evaluate to missing are left out.
    Object(Vec<(String, Expression)>),
    /// `[<expr>, ...]`: elements that evaluate to missing become null.
    Array(Vec<Expression>),
    Operator {
        op: &'static operators::Operator,
        args: Vec<Expression>,
    },
    /// `{$meta: ...}`: the document's metadata under the field that carries it
    /// ([`meta`]).
    Meta(&'static str),
}

/// The variable a path starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    Current,
    Root,
    Remove,
    Now,
    /// `$$CLUSTER_TIME`: parsed, but this server keeps no cluster time, so evaluating it fails
    /// as it does on a MongoDB node whose logical clock is not running.
    ClusterTime,
    /// A user variable: its slot in [`Variables`] (the order the [`Scope`] defined it in).
    User(usize),
}

/// The user variables an expression may name while it is parsed (`$$name`), each with the slot
/// its value will have when the expression is evaluated. Undefined names are refused at parse
/// time, as MongoDB's `VariablesParseState` does. A scope is a chain of levels, shared: the
/// scope an operator opens (`$let`, `$map`...) or a sub-pipeline's constants add a level on top
/// of the one they are in rather than copy it — a command's `let` may define 100,000 names,
/// and each of many operators would otherwise copy them all.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    innermost: Option<Arc<ScopeLevel>>,
}

#[derive(Clone, Debug)]
struct ScopeLevel {
    outer: Option<Arc<ScopeLevel>>,
    /// The slot of this level's first name: how many names the levels outside it define.
    base: usize,
    names: Vec<String>,
    /// The latest slot of each name defined at this level.
    slots: HashMap<String, usize>,
}

/// Parsing without user variables (every stage but those given a command's `let`).
static EMPTY_SCOPE: Scope = Scope { innermost: None };

impl Scope {
    /// Defines `name` (shadowing an earlier definition) and returns its slot.
    pub fn define(&mut self, name: &str) -> usize {
        // Copies the innermost level only if another scope shares it: open a level of your
        // own with `nested` first.
        let level = match &mut self.innermost {
            Some(level) => Arc::make_mut(level),
            empty @ None => Arc::make_mut(empty.insert(Arc::new(ScopeLevel {
                outer: None,
                base: 0,
                names: Vec::new(),
                slots: HashMap::new(),
            }))),
        };
        let slot = level.base + level.names.len();
        level.names.push(name.to_string());
        level.slots.insert(name.to_string(), slot);
        slot
    }

    /// A scope inside this one: what it defines comes after this one's names, which it shares.
    pub fn nested(&self) -> Scope {
        Scope {
            innermost: Some(Arc::new(ScopeLevel {
                outer: self.innermost.clone(),
                base: self.len(),
                names: Vec::new(),
                slots: HashMap::new(),
            })),
        }
    }

    /// How many names are defined (the next slot).
    pub fn len(&self) -> usize {
        self.innermost
            .as_ref()
            .map_or(0, |level| level.base + level.names.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lookup(&self, name: &str) -> Option<usize> {
        let mut level = self.innermost.as_deref();
        while let Some(current) = level {
            if let Some(slot) = current.slots.get(name) {
                return Some(*slot);
            }
            level = current.outer.as_deref();
        }
        None
    }

    /// Every name, by slot.
    pub(crate) fn names(&self) -> Vec<&str> {
        let mut levels = Vec::new();
        let mut level = self.innermost.as_deref();
        while let Some(current) = level {
            levels.push(current);
            level = current.outer.as_deref();
        }
        levels
            .iter()
            .rev()
            .flat_map(|level| level.names.iter().map(String::as_str))
            .collect()
    }
}

/// What an expression is evaluated against: the document (`$$ROOT`, which `$$CURRENT` equals
/// in the stages implemented here), the pipeline-wide `$$NOW` and the user variables' values
/// by slot.
pub struct Variables<'a> {
    root: &'a Document,
    now: DateTime,
    user: UserValues<'a>,
    /// The command's collation, which comparisons of strings follow (`None`: simple).
    collation: Option<&'a Collation>,
    /// Whether the document's carrier fields are metadata, which `$$ROOT` leaves out
    /// ([`LetVariables::carries_metadata`]).
    metadata: bool,
}

/// User variables' values by slot: a command's (or a stage's) as one slice, and above them the
/// ones each operator binds, in a frame of its own — binding a variable copies none of the
/// values below it.
#[derive(Clone, Copy)]
enum UserValues<'a> {
    Slots(&'a [Value]),
    Bound {
        below: &'a UserValues<'a>,
        /// The slot of `own`'s first value.
        base: usize,
        own: &'a [Value],
    },
}

impl UserValues<'_> {
    fn get(&self, slot: usize) -> Option<&Value> {
        let mut values = self;
        loop {
            match values {
                UserValues::Slots(slots) => return slots.get(slot),
                UserValues::Bound { below, base, own } => {
                    if slot >= *base {
                        return own.get(slot - base);
                    }
                    values = below;
                }
            }
        }
    }

    /// One more than the highest slot with a value.
    fn len(&self) -> usize {
        match self {
            UserValues::Slots(slots) => slots.len(),
            UserValues::Bound { base, own, .. } => base + own.len(),
        }
    }
}

impl<'a> Variables<'a> {
    pub fn new(root: &'a Document, now: DateTime) -> Self {
        Variables::with_user(root, now, &[])
    }

    /// Variables with user variables' values, indexed by the slots their [`Scope`] gave them.
    pub fn with_user(root: &'a Document, now: DateTime, user: &'a [Value]) -> Self {
        Variables {
            root,
            now,
            user: UserValues::Slots(user),
            collation: None,
            metadata: false,
        }
    }

    /// The same variables, the document's carrier fields being metadata when `metadata`.
    pub fn with_metadata(mut self, metadata: bool) -> Self {
        self.metadata = metadata;
        self
    }

    /// The same variables, comparing strings by `collation`.
    pub fn with_collation(mut self, collation: Option<&'a Collation>) -> Self {
        self.collation = collation;
        self
    }

    /// The collation comparisons follow (`None`: simple).
    pub fn collation(&self) -> Option<&'a Collation> {
        self.collation
    }

    /// Compares two values in MongoDB's order under the command's collation, missing sorting
    /// with `undefined`.
    pub fn compare(&self, a: Option<&Bson>, b: Option<&Bson>) -> std::cmp::Ordering {
        value::compare_collated(a, b, self.collation)
    }

    /// The same document, `$$NOW` and user variables, plus `bound` from slot `base` on: what
    /// the arguments of an operator that binds variables (`$let`, `$map`...) are evaluated
    /// against.
    fn with_bound<'b>(&'b self, base: usize, bound: &'b [Value]) -> Variables<'b> {
        Variables {
            root: self.root,
            now: self.now,
            user: UserValues::Bound {
                below: &self.user,
                base,
                own: bound,
            },
            collation: self.collation,
            metadata: self.metadata,
        }
    }

    /// The slot from which an operator's variables are bound above these.
    fn user_len(&self) -> usize {
        self.user.len()
    }

    fn user_value(&self, slot: usize) -> Value {
        self.user.get(slot).cloned().flatten()
    }

    fn resolve(&self, base: Base, parts: &[String]) -> Result<Value> {
        Ok(match base {
            Base::Current | Base::Root => {
                if parts.is_empty() && self.metadata {
                    // Metadata is never part of the document as expressions see it.
                    Some(Bson::Document(
                        meta::without_metadata(self.root).into_owned(),
                    ))
                } else if parts.is_empty() {
                    Some(Bson::Document(self.root.clone()))
                } else {
                    fieldpath::lookup(self.root, parts)
                }
            }
            Base::Remove => None,
            Base::Now => fieldpath::lookup_in(&Bson::DateTime(self.now), parts),
            Base::ClusterTime => {
                return Err(MongoError::location(
                    51144,
                    "Builtin variable '$$CLUSTER_TIME' is not available",
                ));
            }
            Base::User(slot) => match self.user.get(slot) {
                Some(Some(value)) => fieldpath::lookup_in(value, parts),
                _ => None,
            },
        })
    }
}

impl Expression {
    /// Parses any operand: `"$path"`, `"$$variable"`, an operator object, an object or array
    /// expression, or a literal.
    pub fn parse(value: &Bson) -> Result<Expression> {
        Expression::parse_in(value, &EMPTY_SCOPE)
    }

    /// [`Expression::parse`] with the user variables of `scope` defined.
    pub fn parse_in(value: &Bson, scope: &Scope) -> Result<Expression> {
        match value {
            Bson::String(s) if s.starts_with('$') => parse_field_path(s, scope),
            Bson::Document(doc) => Expression::parse_object_in(doc, scope),
            Bson::Array(items) => Ok(Expression::Array(
                items
                    .iter()
                    .map(|item| Expression::parse_in(item, scope))
                    .collect::<Result<_>>()?,
            )),
            other => Ok(Expression::Constant(other.clone())),
        }
    }

    /// An object operand: `{$op: ...}` is an operator, anything else an object expression.
    pub fn parse_object(doc: &Document) -> Result<Expression> {
        Expression::parse_object_in(doc, &EMPTY_SCOPE)
    }

    pub fn parse_object_in(doc: &Document, scope: &Scope) -> Result<Expression> {
        match doc.keys().next() {
            None => Ok(Expression::Object(Vec::new())),
            Some(first) if first.starts_with('$') => Expression::parse_operator_in(doc, scope),
            Some(_) => {
                let mut fields = Vec::with_capacity(doc.len());
                for (name, value) in doc {
                    fieldpath::validate_plain_field_name(name)?;
                    fields.push((name.clone(), Expression::parse_in(value, scope)?));
                }
                Ok(Expression::Object(fields))
            }
        }
    }

    /// `{$op: <arguments>}`.
    pub fn parse_operator(doc: &Document) -> Result<Expression> {
        Expression::parse_operator_in(doc, &EMPTY_SCOPE)
    }

    pub fn parse_operator_in(doc: &Document, scope: &Scope) -> Result<Expression> {
        let mut entries = doc.iter();
        let (Some((name, argument)), None) = (entries.next(), entries.next()) else {
            return Err(MongoError::location(
                15983,
                format!(
                    "An object representing an expression must have exactly one field: {}",
                    render_doc(doc)
                ),
            ));
        };
        if name == "$meta" {
            return Ok(Expression::Meta(meta::MetaKind::parse(argument)?.field()?));
        }
        let op = operators::lookup(name).ok_or_else(|| {
            MongoError::new(
                ErrorCode::InvalidPipelineOperator,
                format!("Unrecognized expression '{name}'"),
            )
        })?;
        let args = (op.parse)(op.name, argument, scope)?;
        op.arity.check(op.name, args.len())?;
        Ok(Expression::Operator { op, args })
    }

    pub fn evaluate(&self, vars: &Variables) -> Result<Value> {
        match self {
            Expression::Constant(value) => Ok(Some(value.clone())),
            Expression::Path { base, parts } => vars.resolve(*base, parts),
            Expression::Object(fields) => {
                let mut doc = Document::new();
                for (name, expr) in fields {
                    if let Some(value) = expr.evaluate(vars)? {
                        doc.insert(name.clone(), value);
                    }
                }
                Ok(Some(Bson::Document(doc)))
            }
            Expression::Array(items) => {
                let values = items
                    .iter()
                    .map(|item| Ok(item.evaluate(vars)?.unwrap_or(Bson::Null)))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Some(Bson::Array(values)))
            }
            Expression::Operator { op, args } => (op.eval)(&Args::new(args, vars)),
            Expression::Meta(field) => Ok(vars.root.get(*field).cloned()),
        }
    }

    /// Whether the value depends on the document (a field path, `$$ROOT` or `$$CURRENT`), as
    /// opposed to constants and variables only.
    pub fn depends_on_document(&self) -> bool {
        match self {
            Expression::Constant(_) => false,
            Expression::Path { base, .. } => matches!(base, Base::Current | Base::Root),
            Expression::Meta(_) => true,
            Expression::Object(fields) => fields.iter().any(|(_, e)| e.depends_on_document()),
            Expression::Array(items) | Expression::Operator { args: items, .. } => {
                items.iter().any(Expression::depends_on_document)
            }
        }
    }
}

/// `"$a.b"` or `"$$name.a.b"`.
fn parse_field_path(raw: &str, scope: &Scope) -> Result<Expression> {
    if raw.len() < 2 {
        return Err(MongoError::location(
            16872,
            "'$' by itself is not a valid FieldPath",
        ));
    }
    if raw.contains('\0') {
        return Err(MongoError::location(
            16419,
            "field path must not contain embedded null characters",
        ));
    }
    let Some(variable_path) = raw.strip_prefix("$$") else {
        let path = FieldPath::parse(&raw[1..])?;
        // `$a` is `$$CURRENT.a`, so a user variable named CURRENT (which `let` may define)
        // replaces the document.
        return Ok(Expression::Path {
            base: scope.lookup("CURRENT").map_or(Base::Current, Base::User),
            parts: path.parts().to_vec(),
        });
    };
    let name = variable_path.split('.').next().unwrap_or_default();
    validate_variable_name(name)?;
    // User variables first: MongoDB's parse state looks them up before the builtins.
    let base = match (scope.lookup(name), name) {
        (Some(slot), _) => Base::User(slot),
        (None, "CURRENT") => Base::Current,
        (None, "ROOT") => Base::Root,
        (None, "REMOVE") => Base::Remove,
        (None, "NOW") => Base::Now,
        (None, "CLUSTER_TIME") => Base::ClusterTime,
        (None, _) => {
            return Err(MongoError::location(
                17276,
                format!("Use of undefined variable: {name}"),
            ));
        }
    };
    let path = FieldPath::parse(variable_path)?;
    Ok(Expression::Path {
        base,
        parts: path.parts()[1..].to_vec(),
    })
}

/// Names read as `$$name`: a letter (system variables are upper case) or a non-ASCII byte,
/// then letters, digits, `_` or non-ASCII bytes.
fn validate_variable_name(name: &str) -> Result<()> {
    check_variable_name(name, |first| {
        first.is_ascii_alphabetic() || !first.is_ascii()
    })
}

/// MongoDB's `validateNameForUserWrite`, for the names `let`, `$let`, `$map`... bind: `CURRENT`,
/// or a lowercase letter or non-ASCII character, then letters, digits, `_` or non-ASCII.
pub(crate) fn validate_name_for_user_write(name: &str) -> Result<()> {
    if name == "CURRENT" {
        return Ok(());
    }
    check_variable_name(name, |first| {
        !first.is_ascii() || first.is_ascii_lowercase()
    })
}

/// Reading and binding differ only in the first characters they accept; the errors are alike.
fn check_variable_name(name: &str, valid_first: impl Fn(char) -> bool) -> Result<()> {
    let Some(first) = name.chars().next() else {
        return Err(MongoError::failed_to_parse(
            "empty variable names are not allowed",
        ));
    };
    if !valid_first(first) {
        return Err(MongoError::failed_to_parse(format!(
            "'{name}' starts with an invalid character for a user variable name"
        )));
    }
    if let Some(bad) = name
        .chars()
        .skip(1)
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || !c.is_ascii()))
    {
        return Err(MongoError::failed_to_parse(format!(
            "'{name}' contains an invalid character for a variable name: '{bad}'"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{bson, doc};

    fn now() -> DateTime {
        DateTime::from_millis(1_700_000_000_000)
    }

    /// Parses `expr` and evaluates it against `doc`.
    pub(crate) fn eval(expr: Bson, doc: &Document) -> Result<Value> {
        Expression::parse(&expr)?.evaluate(&Variables::new(doc, now()))
    }

    /// The value of `expr` on an empty document, which must be one.
    pub(crate) fn value_of(expr: Bson) -> Bson {
        eval(expr, &doc! {}).unwrap().unwrap()
    }

    /// The error code of `expr` on an empty document, which must fail.
    pub(crate) fn error_code(expr: Bson) -> i32 {
        eval(expr, &doc! {}).unwrap_err().code().code()
    }

    /// The code and message of an evaluation that must fail.
    pub(crate) fn failure(result: Result<Value>) -> (i32, String) {
        let err = result.unwrap_err();
        (err.code().code(), err.message().to_string())
    }

    /// A date from ISO text, through `$dateFromString`.
    pub(crate) fn date_at(text: &str) -> Bson {
        value_of(bson!({"$dateFromString": {"dateString": text}}))
    }

    pub(crate) fn decimal(text: &str) -> Bson {
        Bson::Decimal128(text.parse().unwrap())
    }

    /// Decimals compare by their printed form, which shows the exponent.
    pub(crate) fn shown(value: Bson) -> String {
        match value {
            Bson::Decimal128(d) => d.to_string(),
            other => format!("{other:?}"),
        }
    }

    fn eval_ok(expr: Bson, doc: &Document) -> Value {
        eval(expr, doc).unwrap()
    }

    fn parse_code(expr: Bson) -> i32 {
        Expression::parse(&expr).unwrap_err().code().code()
    }

    #[test]
    fn field_paths_and_variables() {
        let d = doc! {"a": {"b": [{"c": 1}, {"c": 2}, {"d": 3}]}, "x": 5};
        assert_eq!(eval_ok(bson!("$x"), &d), Some(Bson::Int32(5)));
        assert_eq!(eval_ok(bson!("$a.b.c"), &d), Some(bson!([1, 2])));
        assert_eq!(eval_ok(bson!("$nope"), &d), None);
        assert_eq!(eval_ok(bson!("$$ROOT.x"), &d), Some(Bson::Int32(5)));
        assert_eq!(eval_ok(bson!("$$CURRENT.a.b.d"), &d), Some(bson!([3])));
        assert_eq!(
            eval_ok(bson!("$$ROOT"), &d),
            Some(Bson::Document(d.clone()))
        );
        assert_eq!(eval_ok(bson!("$$REMOVE"), &d), None);
        assert_eq!(eval_ok(bson!("$$NOW"), &d), Some(Bson::DateTime(now())));
    }

    #[test]
    fn nested_scopes_share_the_names_outside_them() {
        let mut outer = Scope::default();
        let (a, b) = (outer.define("a"), outer.define("b"));
        let mut inner = outer.nested();
        let shadow = inner.define("a");
        assert_eq!((a, b, shadow, inner.len()), (0, 1, 2, 3));
        assert_eq!((inner.lookup("a"), inner.lookup("b")), (Some(2), Some(1)));
        assert_eq!((outer.lookup("a"), outer.len()), (Some(0), 2));
        assert_eq!(inner.names(), vec!["a", "b", "a"]);
        // Defining in a scope whose level another shares leaves the other as it was.
        let mut sibling = outer.clone();
        sibling.define("c");
        assert_eq!((outer.lookup("c"), sibling.lookup("c")), (None, Some(2)));
    }

    #[test]
    fn operators_in_a_scope_of_100000_variables() {
        // Each `$let` opens a level on top of the 100,000 names and binds above their values:
        // neither parsing nor evaluating it copies them.
        let names: Document = (0..100_000)
            .map(|i| (format!("v{i}"), Bson::Int32(i)))
            .collect();
        let vars = LetVariables::empty(now()).with_constants(&names);
        let body: Vec<Bson> = (0..2_000)
            .map(|i| bson!({"$let": {"vars": {"x": i}, "in": {"$add": ["$$x", "$$v99999", "$a"]}}}))
            .collect();
        let sum = Expression::parse_in(&bson!({"$sum": body}), vars.scope()).unwrap();
        let d = doc! {"a": 1};
        let total: i32 = (0..2_000).map(|i| i + 100_000).sum();
        assert_eq!(
            sum.evaluate(&vars.variables(&d)).unwrap(),
            Some(Bson::Int32(total))
        );
        // Shadowing and nesting across frames.
        let nested = bson!({"$let": {"vars": {"v5": 50}, "in": {"$map": {
            "input": [1, 2], "as": "v7", "in": {"$let": {"vars": {"y": "$$v5"},
                "in": {"$add": ["$$y", "$$v7", "$$v6"]}}}}}}});
        let parsed = Expression::parse_in(&nested, vars.scope()).unwrap();
        assert_eq!(
            parsed.evaluate(&vars.variables(&d)).unwrap(),
            Some(bson!([57, 58]))
        );
    }

    #[test]
    fn cluster_time_parses_but_is_not_available() {
        let d = doc! {"a": 1};
        let err = eval(bson!({"$add": ["$$CLUSTER_TIME", 1]}), &d).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (51144, "Builtin variable '$$CLUSTER_TIME' is not available")
        );
        // Only evaluating it fails.
        assert_eq!(
            eval_ok(bson!({"$cond": [false, "$$CLUSTER_TIME", 2]}), &d),
            Some(Bson::Int32(2))
        );
    }

    #[test]
    fn literals_objects_and_arrays() {
        let d = doc! {"a": 1};
        assert_eq!(
            eval_ok(bson!("plain"), &d),
            Some(Bson::String("plain".into()))
        );
        assert_eq!(
            eval_ok(bson!({"x": "$a", "y": "$missing", "z": {"w": 2}}), &d),
            Some(bson!({"x": 1, "z": {"w": 2}}))
        );
        assert_eq!(
            eval_ok(bson!(["$a", "$missing", 3]), &d),
            Some(bson!([1, null, 3]))
        );
        assert_eq!(eval_ok(bson!({}), &d), Some(bson!({})));
        assert_eq!(
            eval_ok(bson!({"$literal": "$a"}), &d),
            Some(Bson::String("$a".into()))
        );
        assert_eq!(
            eval_ok(bson!({"$literal": {"$add": [1, 2]}}), &d),
            Some(bson!({"$add": [1, 2]}))
        );
    }

    #[test]
    fn user_variables_from_a_scope() {
        let mut scope = Scope::default();
        let x = scope.define("x");
        let shadowed = scope.define("x");
        let values = [Some(Bson::Int32(1)), Some(bson!({"a": [{"b": 2}]}))];
        let d = doc! {"f": 3};
        let vars = Variables::with_user(&d, now(), &values);
        let eval_in = |e: Bson| Expression::parse_in(&e, &scope).unwrap().evaluate(&vars);
        assert_eq!((x, shadowed), (0, 1));
        assert_eq!(eval_in(bson!("$$x.a.b")).unwrap(), Some(bson!([2])));
        assert_eq!(
            eval_in(bson!({"$add": ["$f", {"$size": "$$x.a"}]})).unwrap(),
            Some(Bson::Int32(4))
        );
        assert!(
            !Expression::parse_in(&bson!("$$x"), &scope)
                .unwrap()
                .depends_on_document()
        );
        assert!(
            Expression::parse(&bson!({"$add": [1, "$f"]}))
                .unwrap()
                .depends_on_document()
        );
        let err = Expression::parse_in(&bson!("$$y"), &scope).unwrap_err();
        assert_eq!(err.message(), "Use of undefined variable: y");
    }

    #[test]
    fn let_variables_rebinding_current() {
        let vars = LetVariables::parse(Some(&doc! {"CURRENT": {"a": 7}}), now()).unwrap();
        let d = doc! {"a": 1};
        let expr =
            Expression::parse_in(&bson!(["$a", "$$ROOT.a", "$$CURRENT.a"]), vars.scope()).unwrap();
        assert_eq!(
            expr.evaluate(&vars.variables(&d)).unwrap(),
            Some(bson!([7, 1, 7]))
        );
    }

    #[test]
    fn parse_errors() {
        assert_eq!(parse_code(bson!("$")), 16872);
        assert_eq!(parse_code(bson!("$a.")), 40353);
        assert_eq!(parse_code(bson!("$a..b")), 15998);
        assert_eq!(parse_code(bson!("$$")), 9);
        assert_eq!(parse_code(bson!("$$1x")), 9);
        assert_eq!(parse_code(bson!("$$foo")), 17276);
        assert_eq!(parse_code(bson!({"$foo": 1})), 168);
        assert_eq!(parse_code(bson!({"a": 1, "b.c": 2})), 16412);
        assert_eq!(parse_code(bson!({"a": 1, "$b": 2})), 16410);
        assert_eq!(parse_code(bson!({"$add": [1], "$x": 1})), 15983);
        let err = Expression::parse(&bson!({"$foo": 1})).unwrap_err();
        assert_eq!(err.code().name(), "InvalidPipelineOperator");
        assert_eq!(err.message(), "Unrecognized expression '$foo'");
        let err = Expression::parse(&bson!("$$bar.x")).unwrap_err();
        assert_eq!(err.message(), "Use of undefined variable: bar");
    }
}
