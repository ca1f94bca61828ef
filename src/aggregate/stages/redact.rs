//! `$redact`: an expression decides, for the document and then for each embedded document it
//! descends into, whether to keep it whole (`$$KEEP`), drop it (`$$PRUNE`) or keep its
//! scalar fields and decide again for its embedded documents (`$$DESCEND`). As in MongoDB,
//! these three and a `$$CURRENT` that moves to the embedded document are variables the stage
//! defines for its expression only.

use super::{RunContext, Stage};
use crate::error::{MongoError, Result};
use crate::expression::value::{Value, render};
use crate::expression::{Expression, LetVariables, Variables};
use bson::{Bson, Document};
use std::sync::Arc;

pub struct Redact {
    expression: Expression,
    /// The command's variables, then CURRENT, DESCEND, PRUNE and KEEP.
    values: Vec<Value>,
    current: usize,
}

pub fn parse(_name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let mut scope = vars.scope().nested();
    let mut values = vars.values().to_vec();
    let current = scope.define("CURRENT");
    values.push(None);
    for (name, value) in [("DESCEND", "descend"), ("PRUNE", "prune"), ("KEEP", "keep")] {
        scope.define(name);
        values.push(Some(Bson::String(value.to_string())));
    }
    Ok(vec![Stage::Redact(Redact {
        expression: Expression::parse_in(spec, &scope)?,
        values,
        current,
    })])
}

impl Redact {
    pub fn run(&self, docs: Vec<Document>, ctx: &RunContext) -> Result<Vec<Document>> {
        let mut out = Vec::with_capacity(docs.len());
        for doc in &docs {
            if let Some(kept) = self.redact_object(doc, doc, ctx)? {
                out.push(kept);
            }
        }
        Ok(out)
    }

    fn redact_object(
        &self,
        current: &Document,
        root: &Document,
        ctx: &RunContext,
    ) -> Result<Option<Document>> {
        let mut values = self.values.clone();
        if let Some(slot) = values.get_mut(self.current) {
            *slot = Some(Bson::Document(current.clone()));
        }
        let vars = Variables::with_user(root, ctx.vars.now(), &values)
            .with_metadata(ctx.vars.carries_metadata());
        let decision = self.expression.evaluate(&vars)?;
        match decision.as_ref() {
            Some(Bson::String(s)) if s == "keep" => Ok(Some(current.clone())),
            Some(Bson::String(s)) if s == "prune" => Ok(None),
            Some(Bson::String(s)) if s == "descend" => {
                let mut out = Document::new();
                for (name, value) in current {
                    if let Some(value) = self.redact_value(value, root, ctx)? {
                        out.insert(name.clone(), value);
                    }
                }
                Ok(Some(out))
            }
            other => Err(MongoError::location(
                17053,
                format!(
                    "$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, and $$PRUNE, but returned {}",
                    render(other)
                ),
            )),
        }
    }

    /// Embedded documents are decided on, arrays searched for them; other values stay.
    fn redact_value(&self, value: &Bson, root: &Document, ctx: &RunContext) -> Result<Value> {
        match value {
            Bson::Document(doc) => Ok(self.redact_object(doc, root, ctx)?.map(Bson::Document)),
            Bson::Array(items) => {
                let mut kept = Vec::with_capacity(items.len());
                for item in items {
                    kept.extend(self.redact_value(item, root, ctx)?);
                }
                Ok(Some(Bson::Array(kept)))
            }
            other => Ok(Some(other.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::aggregate::Pipeline;
    use bson::{Document, doc};

    fn run(stages: Vec<Document>, docs: Vec<Document>) -> crate::error::Result<Vec<Document>> {
        Pipeline::parse(&stages)?.run(docs)
    }

    /// The manual's "Evaluate Access at Every Document Level" example.
    #[test]
    fn manual_forecasts_by_tags() {
        let forecast = doc! {
            "_id": 1,
            "title": "123 Department Report",
            "tags": ["G", "STLW"],
            "year": 2014,
            "subsections": [
                {"subtitle": "Section 1: Overview", "tags": ["SI", "G"], "content": "Section 1: This is the content of section 1."},
                {"subtitle": "Section 2: Analysis", "tags": ["STLW"], "content": "Section 2: This is the content of section 2."},
                {"subtitle": "Section 3: Budgeting", "tags": ["TK"], "content": {"text": "Section 3: This is the content of section 3.", "tags": ["HCS"]}}
            ]
        };
        let out = run(
            vec![
                doc! {"$match": {"year": 2014}},
                doc! {"$redact": {"$cond": {
                    "if": {"$gt": [{"$size": {"$setIntersection": ["$tags", ["STLW", "G"]]}}, 0]},
                    "then": "$$DESCEND",
                    "else": "$$PRUNE"
                }}},
            ],
            vec![forecast],
        )
        .unwrap();
        assert_eq!(
            out,
            vec![doc! {
                "_id": 1,
                "title": "123 Department Report",
                "tags": ["G", "STLW"],
                "year": 2014,
                "subsections": [
                    {"subtitle": "Section 1: Overview", "tags": ["SI", "G"], "content": "Section 1: This is the content of section 1."},
                    {"subtitle": "Section 2: Analysis", "tags": ["STLW"], "content": "Section 2: This is the content of section 2."}
                ]
            }]
        );
    }

    /// The manual's "Exclude All Fields at a Given Level" example.
    #[test]
    fn manual_accounts_by_level() {
        let account = doc! {
            "_id": 1, "level": 1,
            "acct_id": "xyz123",
            "cc": {"level": 5, "type": "yy", "num": 0, "exp_date": "2015-11-01", "billing_addr": {"level": 5, "addr1": "123 ABC Street", "city": "Some City"}, "shipping_addr": [{"level": 3, "addr1": "987 XYZ Ave", "city": "Some City"}, {"level": 3, "addr1": "PO Box 0123", "city": "Some City"}]},
            "status": "A"
        };
        let out = run(
            vec![
                doc! {"$match": {"status": "A"}},
                doc! {"$redact": {"$cond": {"if": {"$eq": ["$level", 5]}, "then": "$$PRUNE", "else": "$$DESCEND"}}},
            ],
            vec![account],
        )
        .unwrap();
        assert_eq!(
            out,
            vec![doc! {"_id": 1, "level": 1, "acct_id": "xyz123", "status": "A"}]
        );
    }

    #[test]
    fn keep_prune_root_and_errors() {
        let docs = vec![doc! {"a": 1, "b": {"a": 2}}, doc! {"a": 2}];
        let out = run(
            vec![doc! {"$redact": {"$cond": [{"$eq": ["$$ROOT.a", 1]}, "$$KEEP", "$$PRUNE"]}}],
            docs.clone(),
        )
        .unwrap();
        assert_eq!(out, vec![doc! {"a": 1, "b": {"a": 2}}]);
        let err = run(vec![doc! {"$redact": "$a"}], docs).unwrap_err();
        assert_eq!(err.code().code(), 17053);
        assert_eq!(
            Pipeline::parse(&[doc! {"$project": {"a": "$$KEEP"}}])
                .err()
                .map(|e| e.code().code()),
            Some(17276)
        );
    }
}
