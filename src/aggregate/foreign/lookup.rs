//! `$lookup`: each input document gets an array field of the documents of another collection
//! that join it — by `localField`/`foreignField` equality, by a sub-pipeline reading the
//! document through `let` variables, or both.

use super::{Host, aggregate_all, check_sub_pipeline, let_for_sub_command, validate_sub_pipeline};
use crate::aggregate::stages::{RunContext, Stage};
use crate::document::path::values_for_key;
use crate::error::{MongoError, Result};
use crate::expression::fieldpath::{FieldPath, set_nested};
use crate::expression::value::bson_type_name;
use crate::expression::{Expression, LetVariables, validate_name_for_user_write};
use crate::query::filter::Filter;
use bson::{Bson, Document, doc};
use std::sync::Arc;

/// Most bytes of joined documents one input document may gather
/// (`internalLookupStageIntermediateDocumentMaxSizeBytes`).
const MAX_JOINED_BYTES: usize = 100 * 1024 * 1024;

/// Input documents whose equality joins are answered by one query on the other collection.
const JOIN_BATCH: usize = 256;

pub struct Lookup {
    /// `None`: a collection-less sub-pipeline (it starts with `$documents`).
    from: Option<String>,
    as_path: FieldPath,
    /// `localField` and `foreignField`.
    join: Option<(String, String)>,
    let_vars: Vec<(String, Expression)>,
    pipeline: Option<Vec<Document>>,
}

fn failed(message: impl Into<String>) -> MongoError {
    MongoError::failed_to_parse(message)
}

/// A sub-pipeline given as an array of stage documents.
pub(super) fn parse_pipeline(value: &Bson) -> Result<Vec<Document>> {
    let Bson::Array(stages) = value else {
        return Err(MongoError::type_mismatch(
            "'pipeline' option must be specified as an array",
        ));
    };
    stages
        .iter()
        .map(|stage| match stage {
            Bson::Document(stage) => Ok(stage.clone()),
            _ => Err(MongoError::type_mismatch(
                "Each element of the 'pipeline' array must be an object",
            )),
        })
        .collect()
}

pub(super) fn starts_with_documents(pipeline: &[Document]) -> bool {
    pipeline
        .first()
        .is_some_and(|stage| stage.contains_key("$documents"))
}

pub fn parse(_name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let Bson::Document(spec) = spec else {
        return Err(failed("the $lookup specification must be an Object"));
    };
    let (mut from, mut as_field, mut local, mut foreign) = (None, None, None, None);
    let (mut let_doc, mut pipeline) = (None, None);
    for (name, value) in spec {
        match name.as_str() {
            "pipeline" => pipeline = Some(parse_pipeline(value)?),
            "let" => match value {
                Bson::Document(d) => let_doc = Some(d.clone()),
                other => {
                    return Err(failed(format!(
                        "$lookup argument 'let: {other}' must be an object, is type {}",
                        bson_type_name(other)
                    )));
                }
            },
            "from" => match value {
                Bson::String(coll) => from = Some(coll.clone()),
                Bson::Document(ns) => {
                    return Err(failed(format!(
                        "$lookup with syntax {{from: {{db:<>, coll:<>}},..}} is not supported for db: {} and coll: {}",
                        ns.get_str("db").unwrap_or_default(),
                        ns.get_str("coll").unwrap_or_default()
                    )));
                }
                other => {
                    return Err(failed(format!(
                        "$lookup 'from' field must be a string, but found {}",
                        bson_type_name(other)
                    )));
                }
            },
            _ => {
                let Bson::String(text) = value else {
                    return Err(failed(format!(
                        "$lookup argument '{name}: {value}' must be a string, found {value}: {}",
                        bson_type_name(value)
                    )));
                };
                match name.as_str() {
                    "as" => as_field = Some(text.clone()),
                    "localField" => local = Some(text.clone()),
                    "foreignField" => foreign = Some(text.clone()),
                    _ => return Err(failed(format!("unknown argument to $lookup: {name}"))),
                }
            }
        }
    }
    if from.is_none() {
        match &pipeline {
            None => return Err(failed("must specify 'pipeline' when 'from' is empty")),
            Some(stages) if !starts_with_documents(stages) => {
                return Err(failed(
                    "$lookup stage without explicit collection must have a pipeline with $documents as first stage",
                ));
            }
            Some(_) => {}
        }
    }
    let as_path = match as_field.filter(|a| !a.is_empty()) {
        Some(path) => FieldPath::parse(&path)?,
        None => return Err(failed("must specify 'as' field for a $lookup")),
    };
    let local = local.filter(|s| !s.is_empty());
    let foreign = foreign.filter(|s| !s.is_empty());
    let join = match (local, foreign) {
        (Some(local), Some(foreign)) => {
            FieldPath::parse(&local)?;
            FieldPath::parse(&foreign)?;
            Some((local, foreign))
        }
        (None, None) if pipeline.is_some() => None,
        _ if pipeline.is_some() => {
            return Err(failed(
                "$lookup requires both or neither of 'localField' and 'foreignField' to be specified",
            ));
        }
        _ => {
            return Err(failed(
                "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified",
            ));
        }
    };
    if pipeline.is_none() && let_doc.is_some() {
        return Err(failed(
            "$lookup with a 'let' argument must also specify 'pipeline'",
        ));
    }
    let mut let_vars = Vec::new();
    for (name, value) in let_doc.iter().flatten() {
        validate_name_for_user_write(name)?;
        let_vars.push((name.clone(), Expression::parse_in(value, vars.scope())?));
    }
    if let Some(stages) = &pipeline {
        check_sub_pipeline("$lookup", 51047, stages)?;
        let names: Vec<String> = let_vars.iter().map(|(n, _)| n.clone()).collect();
        validate_sub_pipeline(stages, vars, &names)?;
    }
    Ok(vec![Stage::Lookup(Lookup {
        from,
        as_path,
        join,
        let_vars,
        pipeline,
    })])
}

/// The query that selects the documents joining `doc`: its values at `local` (an array
/// contributes its elements; none at all count as null) equal to the value at `foreign`.
fn join_filter(doc: &Document, local: &str, foreign: &str) -> Document {
    let mut values = Vec::new();
    values_for_key(doc, local, &mut values);
    if values.is_empty() {
        values.push(Bson::Null);
    }
    any_value_filter(foreign, values)
}

/// `foreign` equal to one of `values`; regular expressions compare as values, not patterns,
/// so with one of them the query is a `$or` of equalities instead of an `$in`.
pub(super) fn any_value_filter(foreign: &str, mut values: Vec<Bson>) -> Document {
    if values.len() == 1 {
        return doc! {foreign: {"$eq": values.remove(0)}};
    }
    if values
        .iter()
        .any(|v| matches!(v, Bson::RegularExpression(_)))
    {
        let branches: Vec<Bson> = values
            .into_iter()
            .map(|v| Bson::Document(doc! {foreign: {"$eq": v}}))
            .collect();
        return doc! {"$or": branches};
    }
    doc! {foreign: {"$in": values}}
}

impl Lookup {
    pub async fn run(
        &self,
        docs: Vec<Document>,
        ctx: &RunContext,
        host: &Host<'_>,
    ) -> Result<Vec<Document>> {
        if let Some(from) = &self.from {
            crate::catalog::validate_collection_name(host.db, from).map_err(|_| {
                MongoError::invalid_namespace(format!(
                    "invalid $lookup namespace: {}.{from}",
                    host.db
                ))
            })?;
        }
        match (&self.join, &self.pipeline) {
            (Some((local, foreign)), None) => self.run_joins(docs, local, foreign, ctx, host).await,
            _ => self.run_pipelines(docs, ctx, host).await,
        }
    }

    /// Equality joins alone: one query per batch of input documents for every value they
    /// join on, then each document keeps the results its own join query matches.
    async fn run_joins(
        &self,
        docs: Vec<Document>,
        local: &str,
        foreign: &str,
        ctx: &RunContext,
        host: &Host<'_>,
    ) -> Result<Vec<Document>> {
        let mut out = Vec::with_capacity(docs.len());
        let mut docs = docs.into_iter().peekable();
        while docs.peek().is_some() {
            let batch: Vec<Document> = docs.by_ref().take(JOIN_BATCH).collect();
            let mut values: Vec<Bson> = Vec::new();
            for doc in &batch {
                let mut found = Vec::new();
                values_for_key(doc, local, &mut found);
                if found.is_empty() {
                    found.push(Bson::Null);
                }
                for value in found {
                    if !values.contains(&value) {
                        values.push(value);
                    }
                }
            }
            let candidates = aggregate_all(
                host,
                host.db,
                self.from.as_deref(),
                vec![doc! {"$match": any_value_filter(foreign, values)}],
                Document::new(),
                None,
                ctx.vars.collation(),
            )
            .await?;
            for mut doc in batch {
                // Joined by the pipeline's collation, as the query above matched.
                let filter =
                    Filter::parse_with_variables(&join_filter(&doc, local, foreign), &ctx.vars)?;
                let mut joined = Vec::new();
                let mut bytes = 0;
                for candidate in &candidates {
                    if filter.try_matches(candidate)? {
                        bytes += bson::to_vec(candidate).map(|b| b.len()).unwrap_or(0);
                        self.check_size(bytes)?;
                        joined.push(Bson::Document(candidate.clone()));
                    }
                }
                set_nested(&mut doc, self.as_path.parts(), Bson::Array(joined));
                out.push(doc);
            }
        }
        Ok(out)
    }

    /// A sub-pipeline per input document (once for all when it reads nothing of them).
    async fn run_pipelines(
        &self,
        docs: Vec<Document>,
        ctx: &RunContext,
        host: &Host<'_>,
    ) -> Result<Vec<Document>> {
        let correlated = self.join.is_some() || !self.let_vars.is_empty();
        let mut shared: Option<Vec<Bson>> = None;
        let mut out = Vec::with_capacity(docs.len());
        for mut doc in docs {
            let joined = match &shared {
                Some(joined) if !correlated => joined.clone(),
                _ => {
                    let joined = self.joined_for(&doc, ctx, host).await?;
                    if !correlated {
                        shared = Some(joined.clone());
                    }
                    joined
                }
            };
            set_nested(&mut doc, self.as_path.parts(), Bson::Array(joined));
            out.push(doc);
        }
        Ok(out)
    }

    async fn joined_for(
        &self,
        doc: &Document,
        ctx: &RunContext,
        host: &Host<'_>,
    ) -> Result<Vec<Bson>> {
        let user = self.pipeline.clone().unwrap_or_default();
        let mut stages = Vec::with_capacity(user.len() + 1);
        let mut rest = user.into_iter().peekable();
        if let Some((local, foreign)) = &self.join {
            // The join's `$match` comes after a leading `$documents`, which makes the input.
            if rest.peek().is_some_and(|s| s.contains_key("$documents")) {
                stages.extend(rest.next());
            }
            stages.push(doc! {"$match": join_filter(doc, local, foreign)});
        }
        stages.extend(rest);
        let vars = ctx.variables(doc);
        let mut bound = Vec::with_capacity(self.let_vars.len());
        for (name, expr) in &self.let_vars {
            bound.push((name.clone(), expr.evaluate(&vars)?));
        }
        let let_doc = let_for_sub_command(&ctx.vars, &bound);
        let results = aggregate_all(
            host,
            host.db,
            self.from.as_deref(),
            stages,
            let_doc,
            None,
            ctx.vars.collation(),
        )
        .await?;
        let mut bytes = 0;
        let mut joined = Vec::with_capacity(results.len());
        for result in results {
            bytes += bson::to_vec(&result).map(|b| b.len()).unwrap_or(0);
            self.check_size(bytes)?;
            joined.push(Bson::Document(result));
        }
        Ok(joined)
    }

    fn check_size(&self, bytes: usize) -> Result<()> {
        if bytes > MAX_JOINED_BYTES {
            return Err(MongoError::location(
                4568,
                format!(
                    "Total size of documents in {} matching pipeline's $lookup stage exceeds {MAX_JOINED_BYTES} bytes",
                    self.from.as_deref().unwrap_or("$cmd.aggregate")
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_queries_follow_the_local_values() {
        assert_eq!(
            join_filter(&doc! {"a": 1}, "a", "b"),
            doc! {"b": {"$eq": 1}}
        );
        assert_eq!(join_filter(&doc! {}, "a", "b"), doc! {"b": {"$eq": null}});
        assert_eq!(
            join_filter(&doc! {"a": [{"x": 1}, {"x": [2, 3]}]}, "a.x", "b"),
            doc! {"b": {"$in": [1, 2, 3]}}
        );
        let re = Bson::RegularExpression(bson::Regex {
            pattern: "^a".into(),
            options: String::new(),
        });
        assert_eq!(
            join_filter(&doc! {"a": [re.clone(), "x"]}, "a", "b"),
            doc! {"$or": [{"b": {"$eq": re}}, {"b": {"$eq": "x"}}]}
        );
    }

    fn parse_error(spec: Document) -> (i32, String) {
        let vars = Arc::new(LetVariables::empty(bson::DateTime::from_millis(0)));
        match parse("$lookup", &Bson::Document(spec), &vars) {
            Ok(_) => (0, String::new()),
            Err(e) => (e.code().code(), e.message().to_string()),
        }
    }

    #[test]
    fn specifications_are_checked_as_mongodb_does() {
        assert_eq!(
            parse_error(doc! {"from": "b", "localField": "x", "foreignField": "y"}),
            (9, "must specify 'as' field for a $lookup".into())
        );
        assert_eq!(
            parse_error(doc! {"from": "b", "localField": "x", "as": "y"}).1,
            "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified"
        );
        assert_eq!(
            parse_error(doc! {"from": "b", "localField": "x", "as": "y", "pipeline": []}).1,
            "$lookup requires both or neither of 'localField' and 'foreignField' to be specified"
        );
        assert_eq!(
            parse_error(doc! {"from": "b", "as": "y", "pipeline": [{"$out": "z"}]}),
            (
                51047,
                "$out is not allowed within a $lookup's sub-pipeline".into()
            )
        );
        assert_eq!(
            parse_error(doc! {"as": "y", "pipeline": [{"$match": {}}]}).0,
            9
        );
        assert_eq!(
            parse_error(doc! {"from": "b", "as": "y", "bogus": "1", "pipeline": []}).1,
            "unknown argument to $lookup: bogus"
        );
        // The sub-pipeline may read the variables `let` binds, and nothing else.
        assert_eq!(
            parse_error(doc! {"from": "b", "as": "y", "let": {"v": "$x"},
            "pipeline": [{"$match": {"$expr": {"$eq": ["$a", "$$v"]}}}]}),
            (0, String::new())
        );
        assert_eq!(
            parse_error(doc! {"from": "b", "as": "y",
            "pipeline": [{"$match": {"$expr": {"$eq": ["$a", "$$v"]}}}]})
            .0,
            17276
        );
        assert_eq!(
            parse_error(doc! {"from": "b", "as": "y", "pipeline": [{"$bogus": 1}]}).0,
            40324
        );
    }
}
