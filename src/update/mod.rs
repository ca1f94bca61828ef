//! Updates: operator documents (`$set`, `$inc`, `$push`, ... with positional `$`, `$[]` and
//! `$[<id>]`), replacement documents, pipelines of aggregation stages (MongoDB 4.2+), and the
//! document an upsert starts from. Parsing reports MongoDB's errors; applying works on a copy
//! and reports whether the document changed (MongoDB's `nModified`: setting a field to the
//! value it already has is no change).
//!
//! Like MongoDB 5.0+, operators apply to fields in path order (numeric components numerically),
//! so new fields appear in that order whatever order the update document lists them in.
//!
//! - here: [`UpdateSpec`], [`UpdateContext`] and the parsed form of an update.
//! - `parse`: the update document, its paths (positional parts, `arrayFilters`) and conflicts.
//! - `parse_op`: each operator's argument (`$push` modifiers, `$pull` conditions, `$bit`, ...).
//! - `path`: resolving positional paths against a document and walking to the value to change.
//! - `apply`: applying a replacement or the operators in path order, `_id` immutability.
//! - `field_ops`, `array_ops`, `arith_ops`: what each operator does to the value at its path.
//! - `pipeline`: pipeline-style updates (parsing checks, running, `_id` rules).
//! - `upsert`: the document an upsert starts from.

mod apply;
mod arith_ops;
mod array_ops;
mod field_ops;
mod parse;
mod parse_op;
mod path;
mod pipeline;
mod upsert;

pub use upsert::upsert_seed;

use crate::aggregate::UpdatePipeline;
use crate::document::collation::Collation;
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::LetVariables;
use crate::query::filter::Filter;
use crate::query::values::type_name;
use apply::{apply_modifiers, apply_replacement};
use bson::{Bson, Document};
use parse::parse_modifiers;
use pipeline::{apply_pipeline, parse_pipeline};
use std::collections::HashMap;
use std::sync::Arc;

/// What an update needs to know about the write it is part of.
#[derive(Clone, Copy, Debug)]
pub struct UpdateContext<'a> {
    /// The document is being created by an upsert (`$setOnInsert` applies, `_id` may be set
    /// unless the query gave the seed one and the update is a pipeline).
    pub is_upsert_insert: bool,
    /// The time `$currentDate` writes.
    pub now: bson::DateTime,
    /// The filter that selected the document, for the positional `$`.
    pub matched_filter: Option<&'a Filter>,
    /// The statement's collation, which `$min`, `$max`, `$addToSet`, `$pull`, `$pullAll` and
    /// `$push`'s `$sort` compare strings by (`None`: simple).
    pub collation: Option<&'a Collation>,
}

/// Named constants a pipeline-style update reads as `$$name`.
#[derive(Clone, Copy, Debug, Default)]
pub struct UpdateConstants<'a> {
    /// The statement's `c`: only pipeline-style updates accept it (MongoDB's Location51198
    /// otherwise, even when empty).
    pub statement: Option<&'a Document>,
    /// The command's `let`, already evaluated (with the command's `$$NOW`): visible to a
    /// pipeline, ignored by operators and replacements (which evaluate no expressions).
    pub command_let: Option<&'a Arc<LetVariables>>,
}

/// A parsed update: operators, a replacement document or a pipeline.
#[derive(Clone, Debug)]
pub struct UpdateSpec {
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    Replacement(Document),
    /// Shared: parsed stages are not `Clone`, and one statement's update never changes.
    Pipeline(Arc<UpdatePipeline>),
    Modifiers {
        entries: Vec<Entry>,
        array_filters: HashMap<String, Filter>,
    },
}

#[derive(Clone, Debug)]
struct Entry {
    comps: Vec<Comp>,
    op: Op,
}

#[derive(Clone, Debug, PartialEq)]
enum Comp {
    Field(String),
    /// `$`: the array position the query matched.
    Positional,
    /// `$[]`: every element.
    All,
    /// `$[<id>]`: the elements the array filter `<id>` matches.
    Filtered(String),
}

#[derive(Clone, Debug)]
enum Op {
    Set(Bson),
    SetOnInsert(Bson),
    Unset,
    Inc(Bson),
    Mul(Bson),
    Min(Bson),
    Max(Bson),
    CurrentDate {
        timestamp: bool,
    },
    Rename {
        from: String,
        from_parts: Vec<String>,
    },
    Push(Push),
    AddToSet(Vec<Bson>),
    Pop {
        first: bool,
    },
    Pull(Pull),
    PullAll(Vec<Bson>),
    Bit(Vec<(BitOp, Bson)>),
}

#[derive(Clone, Debug)]
struct Push {
    values: Vec<Bson>,
    slice: Option<i64>,
    sort: Option<PushSort>,
    position: Option<i64>,
}

#[derive(Clone, Debug)]
enum PushSort {
    Whole(bool),
    Fields(Vec<(String, bool)>),
}

#[derive(Clone, Debug)]
enum Pull {
    /// A plain value: elements equal to it.
    Equal(Bson),
    /// A query over the fields of document elements.
    Object(Box<Filter>),
    /// An operator condition or regex applied to each element itself.
    Wrapped(Box<Filter>),
}

#[derive(Clone, Copy, Debug)]
enum BitOp {
    And,
    Or,
    Xor,
}

impl UpdateSpec {
    /// Parses the `u` of an update statement: an operator document, a replacement document or
    /// a pipeline.
    pub fn parse(update: &Bson, array_filters: Option<&[Document]>) -> Result<UpdateSpec> {
        Self::parse_with_constants(update, array_filters, UpdateConstants::default())
    }

    /// [`parse`](Self::parse) with the statement's `c` and the command's `let`.
    pub fn parse_with_constants(
        update: &Bson,
        array_filters: Option<&[Document]>,
        constants: UpdateConstants,
    ) -> Result<UpdateSpec> {
        if let Bson::Array(stages) = update {
            let pipeline = parse_pipeline(stages, array_filters, constants)?;
            return Ok(UpdateSpec {
                kind: Kind::Pipeline(Arc::new(pipeline)),
            });
        }
        match update {
            Bson::Document(_) if constants.statement.is_some() => Err(MongoError::location(
                51198,
                "Constant values may only be specified for pipeline updates",
            )),
            Bson::Document(d) if d.keys().next().is_some_and(|k| k.starts_with('$')) => {
                // Array filters and `$pull` conditions compare by the command's collation.
                let vars = constants
                    .command_let
                    .cloned()
                    .unwrap_or_else(LetVariables::none);
                parse_modifiers(d, array_filters.unwrap_or(&[]), &vars)
            }
            Bson::Document(d) => {
                for key in d.keys() {
                    if key.starts_with('$') {
                        return Err(MongoError::new(
                            ErrorCode::DollarPrefixedFieldName,
                            format!(
                                "The dollar ($) prefixed field '{key}' in '{key}' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith."
                            ),
                        ));
                    }
                }
                Ok(UpdateSpec {
                    kind: Kind::Replacement(d.clone()),
                })
            }
            other => Err(MongoError::failed_to_parse(format!(
                "Update argument must be either an object or an array, not {}",
                type_name(other)
            ))),
        }
    }

    /// Whether this is a replacement document (as opposed to update operators or a pipeline).
    pub fn is_replacement(&self) -> bool {
        matches!(self.kind, Kind::Replacement(_))
    }

    /// Whether this is a pipeline of aggregation stages.
    pub fn is_pipeline(&self) -> bool {
        matches!(self.kind, Kind::Pipeline(_))
    }

    /// Whether applying needs `UpdateContext::matched_filter` (a positional `$` path).
    pub fn is_positional(&self) -> bool {
        match &self.kind {
            Kind::Modifiers { entries, .. } => {
                entries.iter().any(|e| e.comps.contains(&Comp::Positional))
            }
            Kind::Replacement(_) | Kind::Pipeline(_) => false,
        }
    }

    /// Applies the update to `doc`; returns whether the document changed. On error `doc` is
    /// left as it was.
    pub fn apply(&self, doc: &mut Document, ctx: &UpdateContext) -> Result<bool> {
        match &self.kind {
            Kind::Replacement(replacement) => apply_replacement(doc, replacement, ctx),
            Kind::Pipeline(pipeline) => apply_pipeline(doc, pipeline, ctx),
            Kind::Modifiers {
                entries,
                array_filters,
            } => {
                let mut work = doc.clone();
                let modified = apply_modifiers(&mut work, entries, array_filters, ctx)?;
                if modified || ctx.is_upsert_insert {
                    *doc = work;
                }
                Ok(modified)
            }
        }
    }
}

#[cfg(test)]
mod pipeline_tests;
#[cfg(test)]
mod tests;

#[cfg(test)]
mod robustness {
    //! Arbitrary operator soup (the query language's generator) must produce answers or
    //! errors, never panics.

    use super::*;
    use crate::query::robustness::document;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn nothing_panics(spec in document(), target in document(), filters in prop::collection::vec(document(), 0..2)) {
            let _ = upsert_seed(&spec);
            if let Ok(u) = UpdateSpec::parse(&Bson::Document(spec.clone()), Some(&filters)) {
                let matched = Filter::parse(&target).ok();
                let ctx = UpdateContext {
                    is_upsert_insert: false,
                    now: bson::DateTime::from_millis(0),
                    matched_filter: matched.as_ref(),
                    collation: None,
                };
                let mut d = target.clone();
                let _ = u.apply(&mut d, &ctx);
            }
        }
    }
}
