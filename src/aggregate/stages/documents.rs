//! `$documents`: the documents of an expression (evaluated once, before any input), as the
//! source of a collection-less pipeline or of a `$lookup`/`$unionWith` sub-pipeline.

use super::{RunContext, Stage};
use crate::error::{MongoError, Result};
use crate::expression::value::{render, type_name};
use crate::expression::{Expression, LetVariables};
use bson::{Bson, Document};
use std::sync::Arc;

pub struct Documents {
    documents: Expression,
}

pub fn parse(_name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    Ok(vec![Stage::Documents(Documents {
        documents: Expression::parse_in(spec, vars.scope())?,
    })])
}

impl Documents {
    /// The documents, as MongoDB's expansion into `$project` + `$unwind` + `$replaceRoot`
    /// gives them: an array's elements, a lone object, nothing for null or missing.
    pub fn run(&self, ctx: &RunContext) -> Result<Vec<Document>> {
        let empty = Document::new();
        let value = self.documents.evaluate(&ctx.variables(&empty))?;
        let values = match value {
            None | Some(Bson::Null) => Vec::new(),
            Some(Bson::Array(items)) => items,
            Some(other) => vec![other],
        };
        values
            .into_iter()
            .map(|value| match value {
                Bson::Document(doc) => Ok(doc),
                other => Err(MongoError::location(
                    40228,
                    format!(
                        "'newRoot' expression  must evaluate to an object, but resulting value was: {}. Type of resulting value: '{}'. Input document: {{}}",
                        render(Some(&other)),
                        type_name(Some(&other))
                    ),
                )),
            })
            .collect()
    }
}
