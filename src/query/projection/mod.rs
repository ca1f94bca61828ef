//! `find` projections: inclusion and exclusion of (dotted) paths, the `_id` rules, the find-only
//! operators `$slice`, `$elemMatch` and positional `$`, and computed fields that are
//! aggregation expressions. Parsing follows MongoDB 4.4+ (`projection_ast`), including its error
//! codes.
//!
//! - here: [`Projection`], its path tree and its public entry points.
//! - `parse`: a specification into the path tree, with the inclusion/exclusion and `_id` rules.
//! - `operators`: the find-only `$slice`, `$elemMatch` and positional `$`, parsed and applied.
//! - `expression`: computed fields (aggregation expressions, `$meta`) and their evaluation.
//! - `metadata`: top-level `{$meta}` fields and the metadata a find supplies for them.
//! - `apply`: projecting a document through the path tree.

mod apply;
mod expression;
mod metadata;
mod operators;
mod parse;

pub use metadata::FindMetadata;

use super::filter::Filter;
use crate::error::{MongoError, Result};
use crate::expression::{Expression, LetVariables};
use apply::{Mode, exclude_doc, include_doc};
use bson::{DateTime, Document};
use indexmap::IndexMap;
use operators::apply_positional;
use std::sync::Arc;

/// A parsed projection.
#[derive(Clone, Debug)]
pub struct Projection {
    root: PathNode,
    inclusion: bool,
    /// The positional projection's path (without `.$`), with the query it refers to.
    positional: Option<Vec<String>>,
    /// Top-level fields set to the document's metadata (`{$meta: ...}`), in specification
    /// order: the text score, which the find's filter computes
    /// ([`Projection::apply_with_filter`]), and in a `find` the kinds its executor supplies
    /// ([`Projection::apply_with_metadata`]).
    meta_fields: Vec<(String, crate::expression::meta::MetaKind)>,
    /// The positions of the top-level `$elemMatch` children.
    elem_matches: Vec<usize>,
    /// What computed fields read as `$$NOW` and `$$name`.
    vars: Arc<LetVariables>,
}

/// One level of the path tree. Children are looked up by name for every field of every
/// projected document and a specification may name 100,000 of them, so they are an index map
/// (specification order kept, lookups in constant time).
#[derive(Clone, Debug, Default)]
struct PathNode {
    children: IndexMap<String, ProjNode>,
    /// The positions of the children that compute something (a computed field, or a sub-path
    /// with one below it), in specification order, set once parsing is done
    /// ([`PathNode::index_computed`]): projecting a document visits only these after matching
    /// its fields, not every child.
    computed: Vec<usize>,
}

#[derive(Clone, Debug)]
enum ProjNode {
    Path(PathNode),
    Bool(bool),
    Slice {
        skip: Option<i32>,
        limit: i32,
    },
    ElemMatch(Box<Filter>),
    /// Included, then cut down to the element the query matched.
    Positional,
    Expr(Expression),
}

impl Projection {
    /// Parses a projection without a query (a positional `$` is refused, as MongoDB refuses it
    /// without a matcher).
    pub fn parse(spec: &Document) -> Result<Projection> {
        Self::parse_inner(spec, None, &Self::no_variables(), false)
    }

    /// Parses a projection of a `find` whose filter is `query` (needed for positional `$`).
    pub fn parse_with_filter(spec: &Document, query: &Filter) -> Result<Projection> {
        Self::parse_inner(spec, Some(query), &Self::no_variables(), false)
    }

    /// Parses a projection whose computed fields see a command's `let` variables (and its
    /// `$$NOW`); `query` is the `find` filter when there is one (for positional `$`).
    pub fn parse_with_variables(
        spec: &Document,
        query: Option<&Filter>,
        vars: &Arc<LetVariables>,
    ) -> Result<Projection> {
        Self::parse_inner(spec, query, vars, false)
    }

    /// Parses a `find`'s projection: as [`Projection::parse_with_variables`], and its
    /// top-level `{$meta}` fields may read any metadata a find supplies
    /// ([`Projection::apply_with_metadata`]).
    pub fn parse_for_find(
        spec: &Document,
        query: &Filter,
        vars: &Arc<LetVariables>,
    ) -> Result<Projection> {
        Self::parse_inner(spec, Some(query), vars, true)
    }

    fn no_variables() -> Arc<LetVariables> {
        Arc::new(LetVariables::empty(DateTime::now()))
    }

    /// Whether this is an inclusion projection (fields not mentioned are dropped).
    pub fn is_inclusion(&self) -> bool {
        self.inclusion
    }

    /// Whether the projection uses positional `$` (use [`Projection::apply_with_filter`]).
    pub fn has_positional(&self) -> bool {
        self.positional.is_some()
    }

    /// Whether the projection reads the find's filter: a positional `$` or a text score (use
    /// [`Projection::apply_with_filter`]).
    pub fn needs_query(&self) -> bool {
        self.positional.is_some() || self.reads_meta(crate::expression::meta::MetaKind::TextScore)
    }

    /// Projects a document. A positional `$` path keeps its whole array here; use
    /// [`Projection::apply_with_filter`] to cut it to the matched element. A computed field
    /// whose evaluation fails is left out (use [`Projection::try_apply`] to get the error, as
    /// MongoDB fails the command).
    pub fn apply(&self, doc: &Document) -> Document {
        self.project(doc, Mode::Lenient).unwrap_or_default()
    }

    /// Projects a document, or the error a computed field raised (`$add` of a string, ...).
    pub fn try_apply(&self, doc: &Document) -> Result<Document> {
        self.project(doc, Mode::Strict)
    }

    /// Whether the projection has computed fields (whose evaluation can fail).
    pub fn has_expressions(&self) -> bool {
        self.root.has_computed()
    }

    fn project(&self, doc: &Document, mode: Mode) -> Result<Document> {
        let mut out = if self.inclusion {
            include_doc(doc, &self.root, doc, &self.vars, mode)?
        } else {
            exclude_doc(doc, &self.root)
        };
        self.apply_elem_matches(doc, &mut out);
        Ok(out)
    }

    /// Projects a document that matched `filter` (the query of the `find`), resolving the
    /// positional `$` from the filter's match and adding text scores.
    pub fn apply_with_filter(&self, doc: &Document, filter: &Filter) -> Result<Document> {
        self.apply_with_metadata(doc, Some(filter), &FindMetadata::default())
    }

    /// Projects a document that matched `filter`, resolving the positional `$`.
    fn apply_positional(&self, doc: &Document, filter: &Filter) -> Result<Document> {
        let mut out = self.try_apply(doc)?;
        if let Some(path) = &self.positional {
            let (_, position) = filter.try_matches_with_position(doc)?;
            let Some(position) = position else {
                return Err(MongoError::location(
                    51246,
                    "positional operator '.$' couldn't find a matching element in the array",
                ));
            };
            apply_positional(&mut out, path, position)?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
