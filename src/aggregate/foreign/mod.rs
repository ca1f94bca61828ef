//! Stages that reach other collections — `$lookup`, `$graphLookup`, `$unionWith` read them,
//! `$out` and `$merge` write them — through commands a [`CommandRunner`] runs where the
//! pipeline runs: on the router through its routing (so the other collection may be sharded,
//! unsharded on another shard, or a view), on a node against the node itself.

mod graph_lookup;
mod host_cursor;
mod lookup;
mod merge;
mod out;
mod union_with;

pub use graph_lookup::GraphLookup;
pub(crate) use graph_lookup::parse as parse_graph_lookup;
pub use host_cursor::HostCursor;
pub use lookup::Lookup;
pub(crate) use lookup::parse as parse_lookup;
pub use merge::Merge;
pub use out::{Out, TEMP_PREFIX as OUT_TEMP_PREFIX};
pub use union_with::UnionWith;
pub(crate) use union_with::parse as parse_union_with;

use crate::aggregate::stages::Stage;
use crate::document::collation::Collation;
use std::sync::Arc;

use crate::error::{MongoError, Result};
use crate::expression::LetVariables;
use bson::{Bson, Document, doc};
use futures::future::BoxFuture;

/// Runs commands for the stages of this module.
pub trait CommandRunner: Send + Sync {
    /// Runs `command` against database `db`; a failed command comes back as its error.
    fn run_command<'a>(&'a self, db: &'a str, command: Document)
    -> BoxFuture<'a, Result<Document>>;
}

/// Where a pipeline runs: the database its namespace is in, how it reaches other collections,
/// and what the aggregate command said about its writes.
pub struct Host<'a> {
    pub db: &'a str,
    pub runner: &'a dyn CommandRunner,
    /// The command's `writeConcern`, for `$out`/`$merge`.
    pub write_concern: Option<Document>,
    pub bypass_document_validation: bool,
}

pub(crate) fn parse_out(_name: &str, spec: &Bson, _vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    Ok(vec![Stage::Out(out::parse(spec)?)])
}

pub(crate) fn parse_merge(
    _name: &str,
    spec: &Bson,
    vars: &Arc<LetVariables>,
) -> Result<Vec<Stage>> {
    Ok(vec![Stage::Merge(merge::parse(spec, vars)?)])
}

impl Host<'_> {
    /// Runs a write `command` with the aggregate's `writeConcern` and, where the command takes
    /// it, its `bypassDocumentValidation`.
    pub(crate) async fn run_write(&self, db: &str, mut command: Document) -> Result<Document> {
        let validates = command.contains_key("insert") || command.contains_key("update");
        if self.bypass_document_validation && validates {
            command.insert("bypassDocumentValidation", true);
        }
        if let Some(wc) = &self.write_concern {
            command.insert("writeConcern", wc.clone());
        }
        self.runner.run_command(db, command).await
    }
}

/// Stages a sub-pipeline of `$lookup`/`$unionWith` may not contain (MongoDB's
/// `isAllowedInLookupPipeline`/`isAllowedInUnionPipeline` constraints).
pub(crate) const WRITE_STAGES: &[&str] = &["$out", "$merge"];

/// Refuses a write stage inside a sub-pipeline of `stage`, with the code MongoDB uses there.
pub(crate) fn check_sub_pipeline(stage: &str, code: i32, pipeline: &[Document]) -> Result<()> {
    for spec in pipeline {
        if let Some(name) = spec
            .keys()
            .next()
            .filter(|n| WRITE_STAGES.contains(&n.as_str()))
        {
            return Err(MongoError::location(
                code,
                format!("{name} is not allowed within a {stage}'s sub-pipeline"),
            ));
        }
    }
    Ok(())
}

/// A sub-pipeline's stages, parsed only to report its errors when the enclosing stage is
/// parsed (it runs later, as its own command); `names` are the variables the enclosing stage
/// binds for it.
pub(crate) fn validate_sub_pipeline(
    pipeline: &[Document],
    vars: &LetVariables,
    names: &[String],
) -> Result<()> {
    super::limits::check_length(pipeline.len())?;
    let mut bound = Document::new();
    for name in names {
        bound.insert(name.clone(), Bson::Null);
    }
    super::limits::check_sub_pipeline_depth(vars.sub_pipeline_depth())?;
    let scope = std::sync::Arc::new(vars.for_sub_pipeline(&bound));
    let mut parsed = 0;
    for spec in pipeline {
        parsed += super::stages::parse(spec, &scope)?.len();
    }
    super::limits::check_parsed_length(parsed)
}

/// The `let` document that gives a sub-command the enclosing pipeline's variables and then
/// `bound` (literal values; the later of two equal names wins, as in the enclosing scope).
pub(crate) fn let_for_sub_command(
    vars: &LetVariables,
    bound: &[(String, Option<Bson>)],
) -> Document {
    let mut out = Document::new();
    for (name, value) in vars.named_values().into_iter().chain(bound.iter().cloned()) {
        let literal = match value {
            Some(value) => Bson::Document(doc! {"$literal": value}),
            // A variable may hold "missing"; no literal says that, `$$REMOVE` does.
            None => Bson::String("$$REMOVE".into()),
        };
        out.insert(name, literal);
    }
    out
}

/// Every document an aggregation outputs: `coll` of `db` (`None`: a collection-less
/// `aggregate: 1`) with the command's `let` and `hint`, the cursor drained with `getMore`.
pub(crate) async fn aggregate_all(
    host: &Host<'_>,
    db: &str,
    coll: Option<&str>,
    pipeline: Vec<Document>,
    let_doc: Document,
    hint: Option<&Bson>,
    collation: Option<&Collation>,
) -> Result<Vec<Document>> {
    let mut cursor =
        HostCursor::aggregate(db, coll, pipeline, let_doc, hint).with_collation(collation);
    let mut out = Vec::new();
    while !cursor.exhausted() {
        out.extend(cursor.next_batch(host, None).await?);
    }
    Ok(out)
}

/// A write command's outcome as an error: its first write error, or its write concern error.
pub(crate) fn write_outcome(reply: &Document) -> Result<()> {
    if let Ok(errors) = reply.get_array("writeErrors") {
        if let Some(Bson::Document(first)) = errors.first() {
            let mut failed = first.clone();
            failed.remove("index");
            failed.insert("ok", 0);
            if let Some(err) = MongoError::from_reply(&failed) {
                return Err(err);
            }
        }
    }
    if let Ok(wce) = reply.get_document("writeConcernError") {
        let mut failed = wce.clone();
        failed.insert("ok", 0);
        if let Some(err) = MongoError::from_reply(&failed) {
            return Err(err);
        }
    }
    Ok(())
}
