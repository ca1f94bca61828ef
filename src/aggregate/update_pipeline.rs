//! The aggregation pipeline as a pipeline-style update (MongoDB 4.2+) runs it: only the stages
//! MongoDB allows within an update (`$addFields`/`$set`, `$project`/`$unset`,
//! `$replaceRoot`/`$replaceWith`), applied to the one document being updated.

use super::stages::{self, MemoryLimits, RunContext, Stage};
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::LetVariables;
use bson::Document;
use std::sync::Arc;

/// A parsed update pipeline: single-document transformations only, with the variables (the
/// command's `let`, the statement's `c`) its expressions read.
pub struct UpdatePipeline {
    stages: Vec<Stage>,
    vars: Arc<LetVariables>,
}

impl std::fmt::Debug for UpdatePipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpdatePipeline")
            .field("stages", &self.stages.len())
            .finish()
    }
}

impl UpdatePipeline {
    /// Parses every stage, then refuses the first one an update may not use with MongoDB's
    /// InvalidOptions. MongoDB parses the whole pipeline before that check, so a malformed
    /// stage is reported even when an earlier stage is not allowed.
    pub fn parse(specs: &[Document], vars: Arc<LetVariables>) -> Result<UpdatePipeline> {
        crate::aggregate::limits::check_length(specs.len())?;
        let mut parsed = Vec::with_capacity(specs.len());
        let mut refused: Option<String> = None;
        for spec in specs {
            if let Some(name) = unsupported_stage(spec) {
                // Stages this server cannot parse yet are all refused within an update anyway.
                refused.get_or_insert_with(|| name.to_string());
                continue;
            }
            for stage in stages::parse(spec, &vars)? {
                if let Some(name) = stage.name_if_refused_in_update() {
                    refused.get_or_insert_with(|| name.to_string());
                }
                parsed.push(stage);
            }
        }
        match refused {
            Some(name) => Err(MongoError::new(
                ErrorCode::InvalidOptions,
                format!("{name} is not allowed to be used within an update"),
            )),
            None => Ok(UpdatePipeline {
                stages: parsed,
                vars,
            }),
        }
    }

    /// Runs the stages over `doc` (`$$ROOT` and `$$CURRENT`). Errors are the expressions'
    /// own: unlike `aggregate`, an update adds no executor prefix.
    pub fn apply(&self, doc: &Document) -> Result<Document> {
        let ctx = RunContext::new(Arc::clone(&self.vars), MemoryLimits::unlimited());
        let mut docs = vec![doc.clone()];
        for stage in &self.stages {
            docs = stage.run(docs, &ctx)?;
        }
        // Every allowed stage maps one document to exactly one document.
        docs.pop()
            .ok_or_else(|| MongoError::internal("an update pipeline produced no document"))
    }
}

/// The name of a one-field stage specification naming a stage this server does not run yet.
fn unsupported_stage(spec: &Document) -> Option<&str> {
    let mut keys = spec.keys();
    match (keys.next(), keys.next()) {
        (Some(name), None) if stages::is_not_yet_supported(name) => Some(name),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{Bson, DateTime, doc};

    const NOW: DateTime = DateTime::from_millis(42);

    fn parse(stages: Vec<Document>) -> Result<UpdatePipeline> {
        UpdatePipeline::parse(&stages, Arc::new(LetVariables::empty(NOW)))
    }

    fn refusal(stages: Vec<Document>) -> (i32, String) {
        let err = parse(stages).unwrap_err();
        (err.code().code(), err.message().to_string())
    }

    #[test]
    fn transformations_run_in_order_on_one_document() {
        let p = parse(vec![
            doc! {"$set": {"total": {"$add": ["$a", "$b"]}}},
            doc! {"$unset": "b"},
            doc! {"$addFields": {"at": "$$NOW"}},
            doc! {"$project": {"a": 0}},
        ])
        .unwrap();
        let now = NOW;
        assert_eq!(
            p.apply(&doc! {"_id": 1, "a": 2, "b": 3}).unwrap(),
            doc! {"_id": 1, "total": 5, "at": now}
        );
        let p = parse(vec![
            doc! {"$replaceWith": {"x": "$$ROOT.a", "c": "$$CURRENT"}},
        ])
        .unwrap();
        assert_eq!(
            p.apply(&doc! {"a": 1}).unwrap(),
            doc! {"x": 1, "c": {"a": 1}}
        );
        let p = parse(vec![doc! {"$replaceRoot": {"newRoot": "$sub"}}]).unwrap();
        assert_eq!(
            p.apply(&doc! {"_id": 1, "sub": {"k": true}}).unwrap(),
            doc! {"k": true}
        );
    }

    #[test]
    fn an_empty_pipeline_returns_the_document() {
        let p = parse(vec![]).unwrap();
        let d = doc! {"_id": 1, "a": [1, 2]};
        assert_eq!(p.apply(&d).unwrap(), d);
    }

    #[test]
    fn other_stages_are_refused_with_invalid_options() {
        for (stage, name) in [
            (doc! {"$match": {"a": 1}}, "$match"),
            (doc! {"$sort": {"a": 1}}, "$sort"),
            (doc! {"$skip": 1}, "$skip"),
            (doc! {"$limit": 1}, "$limit"),
            (doc! {"$unwind": "$a"}, "$unwind"),
            (doc! {"$group": {"_id": null}}, "$group"),
            (doc! {"$count": "n"}, "$group"),
            (doc! {"$sortByCount": "$a"}, "$group"),
            (
                doc! {"$lookup": {"from": "x", "localField": "a", "foreignField": "b", "as": "c"}},
                "$lookup",
            ),
            (doc! {"$facet": {"a": [{"$match": {}}]}}, "$facet"),
            (
                doc! {"$bucket": {"groupBy": "$a", "boundaries": [0, 1]}},
                "$group",
            ),
            (doc! {"$sample": {"size": 1}}, "$sample"),
        ] {
            assert_eq!(
                refusal(vec![doc! {"$set": {"a": 1}}, stage]),
                (
                    72,
                    format!("{name} is not allowed to be used within an update")
                )
            );
        }
    }

    #[test]
    fn parse_errors_come_before_refusals() {
        // A malformed later stage wins over a refused earlier one, as MongoDB parses first.
        assert_eq!(
            refusal(vec![doc! {"$match": {}}, doc! {"$nope": 1}]),
            (40324, "Unrecognized pipeline stage name: '$nope'".into())
        );
        assert_eq!(
            refusal(vec![doc! {"$sort": {"a": 1}}, doc! {"$limit": 1}]).1,
            "$sort is not allowed to be used within an update"
        );
        assert_eq!(
            refusal(vec![doc! {"$set": {"a": 1}, "$unset": "b"}]).0,
            40323
        );
    }

    #[test]
    fn runtime_errors_have_no_executor_prefix() {
        let p = parse(vec![doc! {"$set": {"q": {"$divide": ["$a", 0]}}}]).unwrap();
        let err = p.apply(&doc! {"a": 1}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (16608, "can't $divide by zero")
        );
        let p = parse(vec![doc! {"$replaceWith": "$a"}]).unwrap();
        let err = p.apply(&doc! {"a": Bson::Int32(1)}).unwrap_err();
        assert_eq!(err.code().code(), 40228);
    }
}
