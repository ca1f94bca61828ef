//! The aggregation expression language: an operand is parsed once into an [`Expression`] tree
//! (field paths, variables, literals, object and array expressions, operators) and evaluated
//! per document against [`Variables`].

mod operators;

use super::fieldpath::{self, FieldPath};
use super::value::Value;
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, DateTime, Document};

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
}

/// What an expression is evaluated against: the document (`$$ROOT`, which `$$CURRENT` equals
/// in the stages implemented here) and the pipeline-wide `$$NOW`.
pub struct Variables<'a> {
    root: &'a Document,
    now: DateTime,
}

impl<'a> Variables<'a> {
    pub fn new(root: &'a Document, now: DateTime) -> Self {
        Variables { root, now }
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
        })
    }
}

impl Expression {
    /// Parses any operand: `"$path"`, `"$$variable"`, an operator object, an object or array
    /// expression, or a literal.
    pub fn parse(value: &Bson) -> Result<Expression> {
        match value {
            Bson::String(s) if s.starts_with('$') => parse_field_path(s),
            Bson::Document(doc) => Expression::parse_object(doc),
            Bson::Array(items) => Ok(Expression::Array(
                items.iter().map(Expression::parse).collect::<Result<_>>()?,
            )),
            other => Ok(Expression::Constant(other.clone())),
        }
    }

    /// An object operand: `{$op: ...}` is an operator, anything else an object expression.
    pub fn parse_object(doc: &Document) -> Result<Expression> {
        match doc.keys().next() {
            None => Ok(Expression::Object(Vec::new())),
            Some(first) if first.starts_with('$') => Expression::parse_operator(doc),
            Some(_) => {
                let mut fields = Vec::with_capacity(doc.len());
                for (name, value) in doc {
                    fieldpath::validate_plain_field_name(name)?;
                    fields.push((name.clone(), Expression::parse(value)?));
                }
                Ok(Expression::Object(fields))
            }
        }
    }

    /// `{$op: <arguments>}`.
    pub fn parse_operator(doc: &Document) -> Result<Expression> {
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
        let args = (op.parse)(op.name, argument)?;
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
}

/// `"$a.b"` or `"$$name.a.b"`.
fn parse_field_path(raw: &str) -> Result<Expression> {
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
        return Ok(Expression::Path {
            base: Base::Current,
            parts: path.parts().to_vec(),
        });
    };
    let name = variable_path.split('.').next().unwrap_or_default();
    validate_variable_name(name)?;
    let base = match name {
        "CURRENT" => Base::Current,
        "ROOT" => Base::Root,
        "REMOVE" => Base::Remove,
        "NOW" => Base::Now,
        "CLUSTER_TIME" => Base::ClusterTime,
        _ => {
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
    let bytes = name.as_bytes();
    let Some(&first) = bytes.first() else {
        return Err(MongoError::failed_to_parse(
            "empty variable names are not allowed",
        ));
    };
    if !(first.is_ascii_alphabetic() || first >= 0x80) {
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
