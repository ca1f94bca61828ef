//! Pipeline-style updates (MongoDB 4.2+): `u` is an array of aggregation stages whose output
//! replaces the document, as MongoDB's `PipelineExecutor` and `ObjectReplaceExecutor` do it:
//!
//! - no change when the pipeline's output is byte-for-byte the stored document (so removing
//!   `_id` counts as a change even though `_id` comes back);
//! - an output without `_id` keeps the original `_id`; an output with a different `_id` fails
//!   with ImmutableField, also for an upsert whose query gave the seed an `_id`;
//! - `_id` ends up first, as MongoDB's update stage puts it.

use super::apply::{identical_docs, validate_id};
use super::upsert::id_first;
use super::{UpdateConstants, UpdateContext};
use crate::aggregate::UpdatePipeline;
use crate::document::order::compare_values;
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::LetVariables;
use crate::query::values::render_element;
use bson::{Bson, DateTime, Document, doc};
use std::cmp::Ordering;
use std::sync::Arc;

/// Parses the stages of a pipeline-style update, with MongoDB's checks in MongoDB's order:
/// every element an object, no `arrayFilters`, then the pipeline itself.
pub(super) fn parse_pipeline(
    items: &[Bson],
    array_filters: Option<&[Document]>,
    constants: UpdateConstants,
) -> Result<UpdatePipeline> {
    let stages = items
        .iter()
        .map(|item| match item {
            Bson::Document(stage) => Ok(stage.clone()),
            _ => Err(MongoError::type_mismatch(
                "Each element of the 'pipeline' array must be an object",
            )),
        })
        .collect::<Result<Vec<_>>>()?;
    if array_filters.is_some_and(|f| !f.is_empty()) {
        return Err(MongoError::failed_to_parse(
            "arrayFilters may not be specified for pipeline-style updates",
        ));
    }
    let command = constants
        .command_let
        .cloned()
        .unwrap_or_else(|| Arc::new(LetVariables::empty(DateTime::now())));
    let vars = match constants.statement {
        Some(c) if !c.is_empty() => Arc::new(command.with_constants(c)),
        _ => command,
    };
    UpdatePipeline::parse(&stages, vars)
}

/// Runs the pipeline on `doc` and replaces it with the output; returns whether the document
/// changed. On error `doc` is left as it was.
pub(super) fn apply_pipeline(
    doc: &mut Document,
    pipeline: &UpdatePipeline,
    ctx: &UpdateContext,
) -> Result<bool> {
    let output = pipeline.apply(doc)?;
    if identical_docs(doc, &output) {
        return Ok(false);
    }
    let old_id = doc.get("_id");
    let new = match (old_id, output.contains_key("_id")) {
        (Some(id), false) => {
            let mut with_id = doc! {"_id": id.clone()};
            with_id.extend(output);
            with_id
        }
        _ => output,
    };
    if ctx.is_upsert_insert {
        // An upsert checks `_id` against the seed before validating the document it inserts.
        check_id_unchanged(old_id, &new)?;
        validate_id(&new)?;
    } else {
        validate_id(&new)?;
        check_id_unchanged(old_id, &new)?;
    }
    *doc = id_first(new);
    Ok(true)
}

/// `_id` is immutable: once the document (or an upsert's seed) has one, the output must carry
/// an equal value (`1` and `1.0` are equal, as MongoDB compares them).
fn check_id_unchanged(old_id: Option<&Bson>, new: &Document) -> Result<()> {
    let (Some(old_id), Some(new_id)) = (old_id, new.get("_id")) else {
        return Ok(());
    };
    if matches!(new_id, Bson::Array(_)) {
        return Err(MongoError::new(
            ErrorCode::NotSingleValueField,
            "After applying the update to the document, the (immutable) field '_id' was found to be an array or array descendant.",
        ));
    }
    if compare_values(new_id, old_id) != Ordering::Equal {
        return Err(MongoError::new(
            ErrorCode::ImmutableField,
            format!(
                "After applying the update, the (immutable) field '_id' was found to have been altered to {}",
                render_element("_id", new_id)
            ),
        ));
    }
    Ok(())
}
