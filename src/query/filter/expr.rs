//! `$expr`: an aggregation expression used as a predicate, evaluated against the whole document
//! with the command's variables. Its comparisons are the expression language's (values of
//! different types compare in MongoDB's type order, arrays as whole values), not the query
//! language's type-bracketed, array-traversing ones.

use crate::error::Result;
use crate::expression::{Expression, LetVariables, truthy};
use bson::{Bson, Document};
use std::sync::Arc;

#[derive(Clone, Debug)]
pub(crate) struct ExprPredicate {
    expr: Expression,
    vars: Arc<LetVariables>,
}

impl ExprPredicate {
    pub(super) fn parse(value: &Bson, vars: &Arc<LetVariables>) -> Result<ExprPredicate> {
        Ok(ExprPredicate {
            expr: Expression::parse_in(value, vars.scope())?,
            vars: Arc::clone(vars),
        })
    }

    /// Whether the value is truthy (false, 0, null, undefined and missing are not); evaluation
    /// errors (`$divide` by zero, ...) fail the query as they do in MongoDB.
    pub(super) fn matches(&self, doc: &Document) -> Result<bool> {
        let value = self.expr.evaluate(&self.vars.variables(doc))?;
        Ok(truthy(value.as_ref()))
    }
}
