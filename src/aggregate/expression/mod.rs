//! The aggregation expression language: an operand is parsed once into an [`Expression`] tree
//! (field paths, variables, literals, object and array expressions, operators) and evaluated
//! per document against [`Variables`].
//!
//! - here: the tree, parsing (against a [`Scope`] of user variables) and evaluation.
//! - `operators`: the operator table and the operators by family.
//! - `let_vars`: a command's `let` parameters, evaluated once into [`LetVariables`].

mod let_vars;
mod operators;

use super::fieldpath::{self, FieldPath};
use super::value::Value;
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, DateTime, Document};

/// MongoDB's `coerceToBool`, which `$expr` applies to its expression's value.
pub use super::value::truthy;
pub use let_vars::LetVariables;
use operators::Args;
pub(crate) use operators::is_operator_name;

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
/// time, as MongoDB's `VariablesParseState` does.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    names: Vec<String>,
}

/// Parsing without user variables (every stage but those given a command's `let`).
static EMPTY_SCOPE: Scope = Scope { names: Vec::new() };

impl Scope {
    /// Defines `name` (shadowing an earlier definition) and returns its slot.
    pub fn define(&mut self, name: &str) -> usize {
        self.names.push(name.to_string());
        self.names.len() - 1
    }

    fn lookup(&self, name: &str) -> Option<usize> {
        self.names.iter().rposition(|n| n == name)
    }
}

/// What an expression is evaluated against: the document (`$$ROOT`, which `$$CURRENT` equals
/// in the stages implemented here), the pipeline-wide `$$NOW` and the user variables' values
/// by slot.
pub struct Variables<'a> {
    root: &'a Document,
    now: DateTime,
    user: &'a [Value],
}

impl<'a> Variables<'a> {
    pub fn new(root: &'a Document, now: DateTime) -> Self {
        Variables::with_user(root, now, &[])
    }

    /// Variables with user variables' values, indexed by the slots their [`Scope`] gave them.
    pub fn with_user(root: &'a Document, now: DateTime, user: &'a [Value]) -> Self {
        Variables { root, now, user }
    }

    /// The same document and `$$NOW` with other user variable values: what the arguments of an
    /// operator that binds variables (`$let`, `$map`...) are evaluated against.
    fn with_user_values<'b>(&'b self, user: &'b [Value]) -> Variables<'b> {
        Variables {
            root: self.root,
            now: self.now,
            user,
        }
    }

    fn user_values(&self) -> &[Value] {
        self.user
    }

    fn resolve(&self, base: Base, parts: &[String]) -> Result<Value> {
        Ok(match base {
            Base::Current | Base::Root => {
                if parts.is_empty() {
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
        }
    }

    /// Whether the value depends on the document (a field path, `$$ROOT` or `$$CURRENT`), as
    /// opposed to constants and variables only.
    pub fn depends_on_document(&self) -> bool {
        match self {
            Expression::Constant(_) => false,
            Expression::Path { base, .. } => matches!(base, Base::Current | Base::Root),
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
