//! `find` projections: inclusion and exclusion of (dotted) paths, the `_id` rules, the find-only
//! operators `$slice`, `$elemMatch` and positional `$`, and computed fields limited to constants
//! and field paths until the aggregation expression engine exists. Parsing follows MongoDB 4.4+
//! (`projection_ast`), including its error codes.
//!
//! - here: [`Projection`], its path tree and its public entry points.
//! - `parse`: a specification into the path tree, with the inclusion/exclusion and `_id` rules.
//! - `operators`: the find-only `$slice`, `$elemMatch` and positional `$`, parsed and applied.
//! - `expression`: computed fields (constants, field paths, `$literal`) and their evaluation.
//! - `apply`: projecting a document through the path tree.

mod apply;
mod expression;
mod operators;
mod parse;

use super::filter::Filter;
use crate::error::{MongoError, Result};
use apply::{exclude_doc, include_doc};
use bson::{Bson, Document};
use operators::apply_positional;

/// A parsed projection.
#[derive(Clone, Debug)]
pub struct Projection {
    root: PathNode,
    inclusion: bool,
    /// The positional projection's path (without `.$`), with the query it refers to.
    positional: Option<Vec<String>>,
}

#[derive(Clone, Debug, Default)]
struct PathNode {
    children: Vec<(String, ProjNode)>,
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
    Expr(Expr),
}

/// The computed values a projection can produce without the aggregation engine.
#[derive(Clone, Debug)]
enum Expr {
    Const(Bson),
    /// A field path from the root document (`"$a.b"`, `"$$ROOT.a"`); empty = the root.
    Path(Vec<String>),
    Remove,
    Array(Vec<Expr>),
    Object(Vec<(String, Expr)>),
}

impl Projection {
    /// Parses a projection without a query (a positional `$` is refused, as MongoDB refuses it
    /// without a matcher).
    pub fn parse(spec: &Document) -> Result<Projection> {
        Self::parse_inner(spec, None)
    }

    /// Parses a projection of a `find` whose filter is `query` (needed for positional `$`).
    pub fn parse_with_filter(spec: &Document, query: &Filter) -> Result<Projection> {
        Self::parse_inner(spec, Some(query))
    }

    /// Whether this is an inclusion projection (fields not mentioned are dropped).
    pub fn is_inclusion(&self) -> bool {
        self.inclusion
    }

    /// Whether the projection uses positional `$` (use [`Projection::apply_with_filter`]).
    pub fn has_positional(&self) -> bool {
        self.positional.is_some()
    }

    /// Projects a document. A positional `$` path keeps its whole array here; use
    /// [`Projection::apply_with_filter`] to cut it to the matched element.
    pub fn apply(&self, doc: &Document) -> Document {
        let mut out = if self.inclusion {
            include_doc(doc, &self.root, doc)
        } else {
            exclude_doc(doc, &self.root)
        };
        self.apply_elem_matches(doc, &mut out);
        out
    }

    /// Projects a document that matched `filter` (the query of the `find`), resolving the
    /// positional `$` from the filter's match.
    pub fn apply_with_filter(&self, doc: &Document, filter: &Filter) -> Result<Document> {
        let mut out = self.apply(doc);
        if let Some(path) = &self.positional {
            let (_, position) = filter.matches_with_position(doc);
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
