//! Computed projection fields: values that are aggregation expressions (field paths,
//! variables, literals, array and object expressions, every operator of
//! [`crate::expression`]) and `$meta`, parsed against the command's variables and
//! evaluated against the document being projected (its `$$ROOT` and `$$CURRENT`).

use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::{
    Expression, LetVariables, Scope, is_known_operator_name, is_operator_name,
};
use crate::query::values::{not_implemented, render_doc};
use bson::{Bson, Document};

/// `{$name: arg}` (the whole object `obj`) as a computed field: `$meta` here, operators the
/// expression language has through it, MongoDB's other operators NotImplemented.
pub(super) fn parse_expression_object(
    key: &str,
    arg: &Bson,
    obj: &Document,
    scope: &Scope,
) -> Result<Expression> {
    match key {
        "$meta" => {
            let Bson::String(kind) = arg else {
                return Err(MongoError::location(
                    17307,
                    "$meta only supports string arguments",
                ));
            };
            match kind.as_str() {
                "textScore" => Err(MongoError::location(
                    40218,
                    "query requires text score metadata, but it is not available",
                )),
                "randVal"
                | "searchScore"
                | "searchHighlights"
                | "geoNearDistance"
                | "geoNearPoint"
                | "recordId"
                | "indexKey"
                | "sortKey"
                | "searchScoreDetails"
                | "searchSequenceToken"
                | "vectorSearchScore"
                | "score"
                | "scoreDetails" => Err(not_implemented(format!(
                    "$meta: \"{kind}\" is not supported yet"
                ))),
                _ => Err(MongoError::location(
                    17308,
                    format!("Unsupported argument to $meta: {kind}"),
                )),
            }
        }
        _ if is_operator_name(key) => Expression::parse_operator_in(obj, scope),
        _ => Err(not_implemented(format!(
            "the aggregation expression {key} is not supported yet"
        ))),
    }
}

/// MongoDB's `Expression::parseOperand` for a projection value that is not an inclusion or
/// exclusion: a string, array, object expression, or `{$op: ...}` with MongoDB's checks of the
/// operator object before the operator itself is parsed.
pub(super) fn parse_operand(value: &Bson, scope: &Scope) -> Result<Expression> {
    let Bson::Document(d) = value else {
        return Expression::parse_in(value, scope);
    };
    let Some(first) = d.keys().next().filter(|k| k.starts_with('$')) else {
        return Expression::parse_in(value, scope);
    };
    if d.len() != 1 {
        return Err(MongoError::location(
            15983,
            format!(
                "an expression specification must contain exactly one field, the name of the expression. Found {} fields in {}, while parsing object {}",
                d.len(),
                render_doc(d),
                render_doc(d)
            ),
        ));
    }
    if !is_expression_name(first) {
        return Err(MongoError::new(
            ErrorCode::InvalidPipelineOperator,
            format!("Unrecognized expression '{first}'"),
        ));
    }
    parse_expression_object(first, d.get(first).unwrap_or(&Bson::Null), d, scope)
}

/// What `{$name: ...}` may be in a projection: `$meta`, or one of MongoDB's expression
/// operators (the expression layer's table, [`is_known_operator_name`]).
pub(super) fn is_expression_name(name: &str) -> bool {
    name == "$meta" || is_known_operator_name(name)
}

/// Evaluates a computed field against the document being projected; `None` is "missing" (the
/// field is left out).
pub(super) fn evaluate(
    expr: &Expression,
    root: &Document,
    vars: &LetVariables,
) -> Result<Option<Bson>> {
    expr.evaluate(&vars.variables(root))
}
