//! `$unionWith`: the input documents, then the output of a pipeline over another collection
//! (or of a collection-less pipeline starting with `$documents`).

use super::lookup::{parse_pipeline, starts_with_documents};
use super::{Host, aggregate_all, check_sub_pipeline, let_for_sub_command, validate_sub_pipeline};
use crate::aggregate::stages::{RunContext, Stage};
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::LetVariables;
use crate::expression::value::bson_type_name;
use bson::{Bson, Document};
use std::sync::Arc;

pub struct UnionWith {
    /// `None`: the pipeline starts with `$documents`.
    coll: Option<String>,
    pipeline: Vec<Document>,
}

pub fn parse(_name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let (coll, pipeline) = match spec {
        Bson::String(coll) => (Some(coll.clone()), Vec::new()),
        Bson::Document(spec) => {
            let (mut coll, mut pipeline) = (None, None);
            for (name, value) in spec {
                match (name.as_str(), value) {
                    ("coll", Bson::String(c)) => coll = Some(c.clone()),
                    ("coll", other) => {
                        return Err(MongoError::type_mismatch(format!(
                            "BSON field '$unionWith.coll' is the wrong type '{}', expected type 'string'",
                            bson_type_name(other)
                        )));
                    }
                    ("pipeline", value) => pipeline = Some(parse_pipeline(value)?),
                    _ => {
                        return Err(MongoError::location(
                            40415,
                            format!("BSON field '$unionWith.{name}' is an unknown field."),
                        ));
                    }
                }
            }
            let pipeline = pipeline.unwrap_or_default();
            if coll.is_none() && !starts_with_documents(&pipeline) {
                return Err(MongoError::failed_to_parse(
                    "$unionWith stage without explicit collection must have a pipeline with $documents as first stage",
                ));
            }
            (coll, pipeline)
        }
        other => {
            return Err(MongoError::new(
                ErrorCode::FailedToParse,
                format!(
                    "the $unionWith stage specification must be an object or string, but found {}",
                    bson_type_name(other)
                ),
            ));
        }
    };
    check_sub_pipeline("$unionWith", 31441, &pipeline)?;
    validate_sub_pipeline(&pipeline, vars, &[])?;
    Ok(vec![Stage::UnionWith(UnionWith { coll, pipeline })])
}

impl UnionWith {
    pub async fn run(
        &self,
        mut docs: Vec<Document>,
        ctx: &RunContext,
        host: &Host<'_>,
    ) -> Result<Vec<Document>> {
        if let Some(coll) = &self.coll {
            crate::catalog::validate_collection_name(host.db, coll)?;
        }
        let let_doc = let_for_sub_command(&ctx.vars, &[]);
        docs.extend(
            aggregate_all(
                host,
                host.db,
                self.coll.as_deref(),
                self.pipeline.clone(),
                let_doc,
                None,
                ctx.vars.collation(),
            )
            .await?,
        );
        Ok(docs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn code(spec: Bson) -> i32 {
        let vars = Arc::new(LetVariables::empty(bson::DateTime::from_millis(0)));
        match parse("$unionWith", &spec, &vars) {
            Ok(_) => 0,
            Err(e) => e.code().code(),
        }
    }

    #[test]
    fn specifications_are_checked_as_mongodb_does() {
        assert_eq!(code(Bson::String("other".into())), 0);
        assert_eq!(
            code(Bson::Document(
                doc! {"coll": "o", "pipeline": [{"$match": {}}]}
            )),
            0
        );
        assert_eq!(code(Bson::Int32(1)), 9);
        assert_eq!(code(Bson::Document(doc! {"coll": 1})), 14);
        assert_eq!(code(Bson::Document(doc! {"coll": "o", "x": 1})), 40415);
        assert_eq!(code(Bson::Document(doc! {"pipeline": [{"$match": {}}]})), 9);
        assert_eq!(
            code(Bson::Document(
                doc! {"pipeline": [{"$documents": [{"a": 1}]}]}
            )),
            0
        );
        assert_eq!(
            code(Bson::Document(
                doc! {"coll": "o", "pipeline": [{"$merge": "x"}]}
            )),
            31441
        );
    }
}
