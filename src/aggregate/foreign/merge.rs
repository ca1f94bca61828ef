//! `$merge`: writes the pipeline's output into a collection document by document, matching
//! existing documents on the `on` fields and acting as `whenMatched`/`whenNotMatched` say.

use super::out::{INTERNAL_DATABASES, indexes, insert, shard_key};
use super::{Host, write_outcome};
use crate::aggregate::stages::RunContext;
use crate::document::path::get_path;
use crate::error::{MongoError, Result};
use crate::expression::value::bson_type_name;
use crate::expression::{Expression, LetVariables};
use bson::{Bson, Document, doc, oid::ObjectId};
use std::sync::Arc;

/// Statements per update command.
const UPDATE_BATCH: usize = 500;

#[derive(Clone, Copy, PartialEq, Debug)]
enum WhenMatched {
    Replace,
    KeepExisting,
    Merge,
    Fail,
    Pipeline,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum WhenNotMatched {
    Insert,
    Discard,
    Fail,
}

pub struct Merge {
    /// Target database (`None`: the pipeline's) and collection.
    db: Option<String>,
    coll: String,
    on: Option<Vec<String>>,
    when_matched: WhenMatched,
    pipeline: Vec<Document>,
    /// `let` of a pipeline `whenMatched` (`new` bound to the output document).
    let_vars: Vec<(String, Expression)>,
    when_not_matched: WhenNotMatched,
}

fn unknown(field: &str) -> MongoError {
    MongoError::location(
        40415,
        format!("BSON field '$merge.{field}' is an unknown field."),
    )
}

fn wrong_type(field: &str, value: &Bson, expected: &str) -> MongoError {
    MongoError::type_mismatch(format!(
        "BSON field '$merge.{field}' is the wrong type '{}', expected type '{expected}'",
        bson_type_name(value)
    ))
}

pub fn parse(spec: &Bson, vars: &Arc<LetVariables>) -> Result<Merge> {
    let mut merge = Merge {
        db: None,
        coll: String::new(),
        on: None,
        when_matched: WhenMatched::Merge,
        pipeline: Vec::new(),
        let_vars: Vec::new(),
        when_not_matched: WhenNotMatched::Insert,
    };
    let spec = match spec {
        Bson::String(coll) => {
            merge.coll = coll.clone();
            return Ok(merge);
        }
        Bson::Document(spec) => spec,
        other => {
            return Err(MongoError::location(
                51182,
                format!(
                    "$merge only supports a string or object argument, not {}",
                    bson_type_name(other)
                ),
            ));
        }
    };
    let mut let_doc = None;
    let mut has_into = false;
    for (name, value) in spec {
        match name.as_str() {
            "into" => {
                let (db, coll) = match value {
                    Bson::String(coll) => (None, coll.clone()),
                    Bson::Document(ns) => (
                        ns.get_str("db").ok().map(String::from),
                        ns.get_str("coll").unwrap_or_default().to_string(),
                    ),
                    other => return Err(wrong_type("into", other, "string or object")),
                };
                (merge.db, merge.coll) = (db, coll);
                has_into = true;
            }
            "on" => {
                let fields = match value {
                    Bson::String(field) => vec![field.clone()],
                    Bson::Array(items) => items
                        .iter()
                        .map(|item| match item {
                            Bson::String(field) => Ok(field.clone()),
                            other => Err(wrong_type("on", other, "string")),
                        })
                        .collect::<Result<Vec<_>>>()?,
                    other => return Err(wrong_type("on", other, "string or array")),
                };
                if fields.is_empty() {
                    return Err(MongoError::location(
                        51187,
                        "If explicitly specifying $merge 'on', must include at least one field",
                    ));
                }
                for (i, field) in fields.iter().enumerate() {
                    crate::expression::fieldpath::FieldPath::parse(field)?;
                    if fields[..i].contains(field) {
                        return Err(MongoError::location(
                            31465,
                            format!("Found a duplicate field '{field}'"),
                        ));
                    }
                }
                merge.on = Some(fields);
            }
            "whenMatched" => match value {
                Bson::String(mode) => {
                    merge.when_matched = match mode.as_str() {
                        "replace" => WhenMatched::Replace,
                        "keepExisting" => WhenMatched::KeepExisting,
                        "merge" => WhenMatched::Merge,
                        "fail" => WhenMatched::Fail,
                        other => {
                            return Err(MongoError::bad_value(format!(
                                "Enumeration value '{other}' for field '$merge.whenMatched' is not a valid value."
                            )));
                        }
                    }
                }
                Bson::Array(_) => {
                    merge.pipeline = super::lookup::parse_pipeline(value)?;
                    merge.when_matched = WhenMatched::Pipeline;
                }
                other => return Err(wrong_type("whenMatched", other, "string or array")),
            },
            "whenNotMatched" => {
                let Bson::String(mode) = value else {
                    return Err(wrong_type("whenNotMatched", value, "string"));
                };
                merge.when_not_matched = match mode.as_str() {
                    "insert" => WhenNotMatched::Insert,
                    "discard" => WhenNotMatched::Discard,
                    "fail" => WhenNotMatched::Fail,
                    other => {
                        return Err(MongoError::bad_value(format!(
                            "Enumeration value '{other}' for field '$merge.whenNotMatched' is not a valid value."
                        )));
                    }
                };
            }
            "let" => match value {
                Bson::Document(d) => let_doc = Some(d.clone()),
                other => return Err(wrong_type("let", other, "object")),
            },
            _ => return Err(unknown(name)),
        }
    }
    if !has_into {
        return Err(MongoError::location(
            40414,
            "BSON field '$merge.into' is missing but a required field",
        ));
    }
    let supported = matches!(
        (merge.when_matched, merge.when_not_matched),
        (
            WhenMatched::KeepExisting | WhenMatched::Fail,
            WhenNotMatched::Insert
        ) | (
            WhenMatched::Replace | WhenMatched::Merge | WhenMatched::Pipeline,
            _
        )
    );
    if !supported {
        return Err(MongoError::location(
            51181,
            format!(
                "Combination of $merge modes 'whenMatched: {}' and 'whenNotMatched: {}' is not supported",
                mode_name(merge.when_matched),
                not_matched_name(merge.when_not_matched)
            ),
        ));
    }
    if merge.when_matched == WhenMatched::Pipeline {
        let let_doc = let_doc.unwrap_or_else(|| doc! {"new": "$$ROOT"});
        if let Some(new) = let_doc.get("new") {
            if new.as_str() != Some("$$ROOT") {
                return Err(MongoError::location(
                    51273,
                    "'let' may not define a value for the reserved 'new' variable other than '$$ROOT'",
                ));
            }
        }
        let mut names = vec!["new".to_string()];
        for (name, value) in &let_doc {
            if name != "new" {
                crate::expression::validate_name_for_user_write(name)?;
                names.push(name.clone());
                merge
                    .let_vars
                    .push((name.clone(), Expression::parse_in(value, vars.scope())?));
            }
        }
        crate::aggregate::UpdatePipeline::parse(
            &merge.pipeline,
            Arc::new(vars.with_constants(&names.iter().map(|n| (n.clone(), Bson::Null)).collect())),
        )
        .map_err(|e| {
            MongoError::new(
                e.code(),
                format!(
                    "Error parsing $merge.whenMatched pipeline :: caused by :: {}",
                    e.message()
                ),
            )
        })?;
    } else if let_doc.is_some() {
        return Err(MongoError::location(
            51199,
            format!(
                "Cannot use 'let' variables with 'whenMatched: {}' mode",
                mode_name(merge.when_matched)
            ),
        ));
    }
    Ok(merge)
}

fn mode_name(mode: WhenMatched) -> &'static str {
    match mode {
        WhenMatched::Replace => "replace",
        WhenMatched::KeepExisting => "keepExisting",
        WhenMatched::Merge => "merge",
        WhenMatched::Fail => "fail",
        WhenMatched::Pipeline => "pipeline",
    }
}

fn not_matched_name(mode: WhenNotMatched) -> &'static str {
    match mode {
        WhenNotMatched::Insert => "insert",
        WhenNotMatched::Discard => "discard",
        WhenNotMatched::Fail => "fail",
    }
}

impl Merge {
    pub async fn run(&self, docs: Vec<Document>, ctx: &RunContext, host: &Host<'_>) -> Result<()> {
        let db = self.db.as_deref().unwrap_or(host.db);
        let coll = self.coll.as_str();
        if crate::catalog::validate_collection_name(db, coll).is_err() {
            return Err(MongoError::invalid_namespace(format!(
                "Invalid $merge target namespace: '{db}.{coll}'"
            )));
        }
        if coll.starts_with("system.") {
            return Err(MongoError::location(
                31319,
                format!("Cannot $merge to special collection: {coll}"),
            ));
        }
        if INTERNAL_DATABASES.contains(&db) {
            return Err(MongoError::location(
                31320,
                format!("Cannot $merge to internal database: {db}"),
            ));
        }
        let on = self.on_fields(host, db, coll).await?;
        let mut statements = Vec::with_capacity(docs.len());
        let mut inserts = Vec::new();
        for mut doc in docs {
            if on.iter().any(|f| f == "_id") && !doc.contains_key("_id") {
                let mut with_id = doc! {"_id": ObjectId::new()};
                with_id.extend(doc);
                doc = with_id;
            }
            let query = match_query(&doc, &on)?;
            match self.when_matched {
                WhenMatched::Fail => inserts.push(doc),
                WhenMatched::Pipeline => {
                    let vars = ctx.variables(&doc);
                    let mut constants = doc! {"new": doc.clone()};
                    for (name, expr) in &self.let_vars {
                        constants.insert(name.clone(), expr.evaluate(&vars)?.unwrap_or(Bson::Null));
                    }
                    let statement = doc! {
                        "q": query, "u": self.pipeline.clone(), "c": constants,
                        "upsert": false, "multi": false,
                    };
                    // A document no pipeline matched is inserted as it is, not as the pipeline
                    // would make it out of the query's fields: one statement at a time.
                    let matched = self.update(host, db, coll, vec![statement]).await?;
                    if matched == 0 {
                        match self.when_not_matched {
                            WhenNotMatched::Insert => insert(host, db, coll, vec![doc]).await?,
                            WhenNotMatched::Discard => {}
                            WhenNotMatched::Fail => return Err(not_found()),
                        }
                    }
                }
                mode => {
                    let update = match mode {
                        WhenMatched::Replace => Bson::Document(doc),
                        WhenMatched::KeepExisting => Bson::Document(doc! {"$setOnInsert": doc}),
                        _ => Bson::Document(doc! {"$set": doc}),
                    };
                    statements.push(doc! {
                        "q": query, "u": update,
                        "upsert": self.when_not_matched == WhenNotMatched::Insert,
                        "multi": false,
                    });
                }
            }
        }
        if !inserts.is_empty() {
            insert(host, db, coll, inserts).await?;
        }
        let mut statements = statements.into_iter().peekable();
        while statements.peek().is_some() {
            let batch: Vec<Document> = statements.by_ref().take(UPDATE_BATCH).collect();
            let expected = batch.len() as i64;
            let matched = self.update(host, db, coll, batch).await?;
            if self.when_not_matched == WhenNotMatched::Fail && matched < expected {
                return Err(not_found());
            }
        }
        Ok(())
    }

    /// The fields documents are matched on: `on`, which a unique index must cover (the
    /// target's shard key among them), or `_id` (with the shard key of a sharded target).
    async fn on_fields(&self, host: &Host<'_>, db: &str, coll: &str) -> Result<Vec<String>> {
        let key = shard_key(host, db, coll).await?;
        let Some(on) = &self.on else {
            let mut fields: Vec<String> = key.iter().flat_map(|k| k.keys().cloned()).collect();
            if !fields.iter().any(|f| f == "_id") {
                fields.push("_id".into());
            }
            return Ok(fields);
        };
        if let Some(key) = &key {
            if let Some(missing) = key.keys().find(|k| !on.contains(k)) {
                return Err(MongoError::location(
                    51190,
                    format!(
                        "$merge write error: 'on' field must contain the shard key field '{missing}'"
                    ),
                ));
            }
        }
        if on.len() == 1 && on[0] == "_id" {
            return Ok(on.clone());
        }
        let unique = indexes(host, db, coll).await?.into_iter().any(|index| {
            let Ok(keys) = index.get_document("key") else {
                return false;
            };
            let covers = keys.len() == on.len() && on.iter().all(|f| keys.contains_key(f));
            covers
                && (index.get_bool("unique") == Ok(true) || index.get_str("name") == Ok("_id_"))
                && !index.contains_key("partialFilterExpression")
        });
        if !unique {
            return Err(MongoError::location(
                51183,
                "Cannot find index to verify that join fields will be unique",
            ));
        }
        Ok(on.clone())
    }

    /// Runs update statements in order; answers how many documents they matched.
    async fn update(
        &self,
        host: &Host<'_>,
        db: &str,
        coll: &str,
        statements: Vec<Document>,
    ) -> Result<i64> {
        let command = doc! {"update": coll, "updates": statements, "ordered": true};
        let reply = host.run_write(db, command).await?;
        write_outcome(&reply)?;
        let n = match reply.get("n") {
            Some(Bson::Int32(n)) => i64::from(*n),
            Some(Bson::Int64(n)) => *n,
            _ => 0,
        };
        let upserted = reply
            .get_array("upserted")
            .map(|u| u.len() as i64)
            .unwrap_or(0);
        Ok(n - upserted)
    }
}

fn not_found() -> MongoError {
    MongoError::location(
        13113,
        "$merge could not find a matching document in the target collection for at least one document in the source collection",
    )
}

/// The equality query on the `on` fields of `doc`, which must each hold a single value.
fn match_query(doc: &Document, on: &[String]) -> Result<Document> {
    let mut query = Document::new();
    for field in on {
        match get_path(doc, field) {
            None | Some(Bson::Null | Bson::Undefined | Bson::Array(_)) => {
                return Err(MongoError::location(
                    51132,
                    "$merge write error: 'on' field cannot be missing, null, undefined or an array",
                ));
            }
            Some(value) => {
                query.insert(field.clone(), doc! {"$eq": value.clone()});
            }
        }
    }
    Ok(query)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(spec: Bson) -> i32 {
        let vars = Arc::new(LetVariables::empty(bson::DateTime::from_millis(0)));
        match parse(&spec, &vars) {
            Ok(_) => 0,
            Err(e) => e.code().code(),
        }
    }

    #[test]
    fn specifications_are_checked_as_mongodb_does() {
        assert_eq!(code(Bson::String("t".into())), 0);
        assert_eq!(code(Bson::Int32(1)), 51182);
        assert_eq!(code(Bson::Document(doc! {"on": "_id"})), 40414);
        assert_eq!(code(Bson::Document(doc! {"into": "t", "x": 1})), 40415);
        assert_eq!(
            code(Bson::Document(
                doc! {"into": "t", "whenMatched": "keepExisting", "whenNotMatched": "fail"}
            )),
            51181
        );
        assert_eq!(
            code(Bson::Document(
                doc! {"into": "t", "whenMatched": "merge", "let": {"a": 1}}
            )),
            51199
        );
        assert_eq!(
            code(Bson::Document(
                doc! {"into": "t", "whenMatched": [{"$set": {"x": "$$new.x"}}]}
            )),
            0
        );
        assert_eq!(
            code(Bson::Document(
                doc! {"into": "t", "whenMatched": [{"$set": {"x": "$$y"}}], "let": {"y": 1}}
            )),
            0
        );
        assert_eq!(
            code(Bson::Document(
                doc! {"into": "t", "whenMatched": [], "let": {"new": 1}}
            )),
            51273
        );
        assert_eq!(
            code(Bson::Document(doc! {"into": "t", "on": ["a", "a"]})),
            31465
        );
        assert_eq!(code(Bson::Document(doc! {"into": "t", "on": []})), 51187);
        assert_eq!(
            code(Bson::Document(doc! {"into": "t", "whenMatched": "upsert"})),
            2
        );
    }

    #[test]
    fn documents_match_on_single_values() {
        assert_eq!(
            match_query(
                &doc! {"_id": 1, "a": {"b": 2}},
                &["_id".into(), "a.b".into()]
            )
            .unwrap(),
            doc! {"_id": {"$eq": 1}, "a.b": {"$eq": 2}}
        );
        for bad in [doc! {}, doc! {"a": null}, doc! {"a": [1]}] {
            assert_eq!(
                match_query(&bad, &["a".into()]).unwrap_err().code().code(),
                51132
            );
        }
    }
}
