//! Query filters: MongoDB's match-expression language, parsed from a filter document into a tree
//! and evaluated against documents with MongoDB's array and dotted-path semantics.
//!
//! Evaluation follows the classic matcher: a path is resolved into a set of candidate values
//! (through arrays of documents, numeric components as indexes or field names, leaf arrays
//! expanded into their elements plus the array itself) and a leaf predicate matches when any
//! candidate does. A path that resolves to nothing yields one "missing" candidate unless it ran
//! into an array, which is why `{"a.b": null}` matches `{a: 5}` but not `{a: [1]}`.
//!
//! - here: [`Filter`], its expression tree and the questions other modules ask of it.
//! - `parse`: the filter document, its top-level and logical operators, and literal equalities.
//! - `parse_field`: the operators after a path (`{path: {$op: ...}}`), `$not`, `$elemMatch`,
//!   `$all` and `$in`.
//! - `predicates`: `$type`, `$mod`, `$regex` and the `$bits*` operators, parsed and tested.
//! - `eval`: matching documents, resolving dotted paths through arrays into candidates.
//! - `expr`: `$expr`, an aggregation expression as a predicate.
//! - `text`: `$text`, bound to a collection's text index by the node that runs it.
//! - `json_schema`: `$jsonSchema` ([`JsonSchema`], also what collection validators use).

mod eval;
mod expr;
mod json_schema;
mod parse;
mod parse_field;
mod predicates;
mod text;

pub use json_schema::JsonSchema;

use crate::document::collation::Collation;
use crate::error::Result;
use crate::expression::LetVariables;
use crate::expression::mongo_regex::MongoRegex;
use bson::{Bson, DateTime, Document};
use parse::Parser;
use std::sync::Arc;

/// A parsed query filter.
#[derive(Clone, Debug)]
pub struct Filter {
    root: Node,
    /// The command's collation, which comparisons of strings follow (`None`: simple);
    /// `$regex` ignores it, as in MongoDB.
    collation: Option<Arc<Collation>>,
}

#[derive(Clone, Debug)]
pub(crate) enum Node {
    And(Vec<Node>),
    Or(Vec<Node>),
    Nor(Vec<Node>),
    Not(Box<Node>),
    AlwaysTrue,
    AlwaysFalse,
    Leaf(Leaf),
    /// `$expr` (only in the top-level logical tree, never inside `$elemMatch`).
    Expr(Box<expr::ExprPredicate>),
    /// `$jsonSchema`, matched against the (sub)document.
    Schema(Box<JsonSchema>),
    /// `$text` (top level or in a top-level `$and`).
    Text(Box<text::TextNode>),
}

#[derive(Clone, Debug)]
pub(crate) struct Leaf {
    path: String,
    parts: Vec<String>,
    op: Op,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CmpOp {
    Eq,
    Lt,
    Lte,
    Gt,
    Gte,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BitTest {
    AllSet,
    AnySet,
    AllClear,
    AnyClear,
}

#[derive(Clone, Debug)]
enum BitMask {
    Positions(Vec<u32>),
}

#[derive(Clone, Debug, Default)]
struct TypeSet {
    all_numbers: bool,
    codes: Vec<i32>,
}

#[derive(Clone, Debug)]
enum Op {
    Cmp(CmpOp, Bson),
    In {
        values: Vec<Bson>,
        has_null: bool,
        regexes: Vec<MongoRegex>,
    },
    Regex(MongoRegex),
    Exists,
    Type(TypeSet),
    Size(i64),
    Mod {
        divisor: i64,
        remainder: i64,
    },
    Bits(BitTest, BitMask),
    ElemMatchObject(Box<Node>),
    ElemMatchValue(Vec<Node>),
    /// `$geoWithin` / `$geoIntersects`, matched against each candidate geometry.
    Geo(Box<crate::query::geo::GeoPredicate>),
    /// `$near` / `$nearSphere`: as a predicate, within the distance bounds; the order is the
    /// executor's (see [`Filter::near`]).
    Near(Box<crate::query::geo::NearQuery>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    /// The filter document itself.
    PredicateTop,
    /// Matching whole documents, below the filter's top (e.g. inside `$and`).
    UserDocumentTop,
    /// Matching embedded documents or array elements (inside `$elemMatch`).
    SubDocument,
}

impl Filter {
    /// Parses a filter document, refusing it with MongoDB's error when it is malformed. `$expr`
    /// sees no user variables and `$$NOW` is the time of parsing.
    pub fn parse(filter: &Document) -> Result<Filter> {
        Self::parse_with_variables(filter, &Arc::new(LetVariables::empty(DateTime::now())))
    }

    /// Parses a filter of a command that has a `let` document: its values are evaluated once
    /// (MongoDB's errors for invalid names or values reading fields) and `$expr` reads them as
    /// `$$name`.
    pub fn parse_with_let(filter: &Document, let_doc: Option<&Document>) -> Result<Filter> {
        let vars = LetVariables::parse(let_doc, DateTime::now())?;
        Self::parse_with_variables(filter, &Arc::new(vars))
    }

    /// Parses a filter with variables already evaluated, so that a command's filter,
    /// projection and pipelines share one `$$NOW` and one evaluation of `let`.
    pub fn parse_with_variables(filter: &Document, vars: &Arc<LetVariables>) -> Result<Filter> {
        let root = Parser::new(Arc::clone(vars), true).parse_doc(filter, Level::PredicateTop)?;
        text::check_placement(&root)?;
        check_near_placement(&root)?;
        Ok(Filter {
            root,
            collation: vars.collation_arc(),
        })
    }

    /// Parses a filter where MongoDB bans its special features (projection `$elemMatch`,
    /// partial index filters): `$expr` and `$jsonSchema` are refused with
    /// QueryFeatureNotAllowed.
    pub fn parse_restricted(filter: &Document) -> Result<Filter> {
        Self::parse_restricted_under(filter, None)
    }

    /// [`Filter::parse_restricted`] comparing strings by `collation` (a partial index's
    /// filter compares as the index's keys do).
    pub fn parse_restricted_under(
        filter: &Document,
        collation: Option<Arc<Collation>>,
    ) -> Result<Filter> {
        let vars = LetVariables::empty(DateTime::now()).with_collation(collation);
        let vars = Arc::new(vars);
        let root = Parser::new(Arc::clone(&vars), false).parse_doc(filter, Level::PredicateTop)?;
        check_near_placement(&root)?;
        Ok(Filter {
            root,
            collation: vars.collation_arc(),
        })
    }

    /// A filter that matches every document.
    pub fn match_all() -> Filter {
        Filter {
            root: Node::And(Vec::new()),
            collation: None,
        }
    }

    /// Whether the document satisfies the filter; a `$expr` whose evaluation fails counts as
    /// no match (use [`Filter::try_matches`] to fail the command as MongoDB does).
    pub fn matches(&self, doc: &Document) -> bool {
        self.try_matches(doc).unwrap_or(false)
    }

    /// Whether the document satisfies the filter, or the error a `$expr` raised evaluating it.
    pub fn try_matches(&self, doc: &Document) -> Result<bool> {
        let mut key = None;
        self.root
            .try_matches(doc, &mut key, self.collation.as_deref())
    }

    /// Whether the document matches, and the array position the match was found at (what the
    /// positional `$` of updates and projections refers to). Errors count as no match.
    pub fn matches_with_position(&self, doc: &Document) -> (bool, Option<usize>) {
        self.try_matches_with_position(doc).unwrap_or((false, None))
    }

    /// [`Filter::matches_with_position`] with `$expr` evaluation errors reported.
    pub fn try_matches_with_position(&self, doc: &Document) -> Result<(bool, Option<usize>)> {
        let mut key = None;
        let matched = self
            .root
            .try_matches(doc, &mut key, self.collation.as_deref())?;
        Ok((matched, if matched { key } else { None }))
    }

    /// Whether the filter has a `$expr` (whose evaluation can fail; see [`Filter::try_matches`]).
    pub fn has_expr(&self) -> bool {
        fn walk(node: &Node) -> bool {
            match node {
                Node::And(c) | Node::Or(c) | Node::Nor(c) => c.iter().any(walk),
                Node::Not(n) => walk(n),
                // An unbound `$text` fails, and a document's language override may be invalid.
                Node::Expr(_) | Node::Text(_) => true,
                _ => false,
            }
        }
        walk(&self.root)
    }

    /// The collation the filter compares strings by (`None`: simple).
    pub fn collation(&self) -> Option<&Collation> {
        self.collation.as_deref()
    }

    /// [`Filter::collation`], shared.
    pub fn collation_arc(&self) -> Option<Arc<Collation>> {
        self.collation.clone()
    }

    /// The value `path` is constrained to by plain equality at the top level (or in a top-level
    /// `$and`), when that value can be looked up exactly: not a regex, array, null or undefined,
    /// nor holding a string the filter's collation compares (another string may equal it).
    pub fn equality(&self, path: &str) -> Option<&Bson> {
        let value = self.equality_value(path)?;
        if self.collation.is_some() && crate::document::collation::has_string(value) {
            return None;
        }
        Some(value)
    }

    fn equality_value(&self, path: &str) -> Option<&Bson> {
        fn find<'a>(node: &'a Node, path: &str) -> Option<&'a Bson> {
            match node {
                Node::Leaf(Leaf {
                    path: p,
                    op: Op::Cmp(CmpOp::Eq, value),
                    ..
                }) if p == path => match value {
                    Bson::RegularExpression(_) | Bson::Array(_) | Bson::Null | Bson::Undefined => {
                        None
                    }
                    _ => Some(value),
                },
                Node::And(children) => children.iter().find_map(|c| find(c, path)),
                _ => None,
            }
        }
        find(&self.root, path)
    }

    /// Whether the filter has no predicates at all (`{}` or only `$comment`).
    pub fn is_empty(&self) -> bool {
        matches!(&self.root, Node::And(children) if children.is_empty())
    }

    /// The paths of the leaf predicates reachable through logical operators (not inside
    /// `$elemMatch`): what positional projection checks its field against.
    pub fn leaf_paths(&self) -> Vec<&str> {
        fn collect<'a>(node: &'a Node, out: &mut Vec<&'a str>) {
            match node {
                Node::And(c) | Node::Or(c) | Node::Nor(c) => c.iter().for_each(|n| collect(n, out)),
                Node::Not(n) => collect(n, out),
                Node::Leaf(l) => out.push(&l.path),
                Node::AlwaysTrue
                | Node::AlwaysFalse
                | Node::Expr(_)
                | Node::Schema(_)
                | Node::Text(_) => {}
            }
        }
        let mut out = Vec::new();
        collect(&self.root, &mut out);
        out
    }
}

/// MongoDB's rules for `$near`: at most one, and only at the top (or in top-level `$and`s).
fn check_near_placement(root: &Node) -> Result<()> {
    fn count(node: &Node, top: bool, found: &mut usize) -> Result<()> {
        match node {
            Node::And(children) => children.iter().try_for_each(|c| count(c, top, found)),
            Node::Or(children) | Node::Nor(children) => {
                children.iter().try_for_each(|c| count(c, false, found))
            }
            Node::Not(child) => count(child, false, found),
            Node::Leaf(Leaf {
                op: Op::Near(_), ..
            }) => {
                if !top {
                    return Err(crate::error::MongoError::bad_value(
                        "geoNear must be top-level expr",
                    ));
                }
                *found += 1;
                if *found > 1 {
                    return Err(crate::error::MongoError::bad_value(
                        "Too many geoNear expressions",
                    ));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
    count(root, true, &mut 0)
}

impl Filter {
    /// The filter's `$near`/`$nearSphere` and its path: its results come in distance order.
    pub fn near(&self) -> Option<(&str, &crate::query::geo::NearQuery)> {
        fn find(node: &Node) -> Option<(&str, &crate::query::geo::NearQuery)> {
            match node {
                Node::And(children) => children.iter().find_map(find),
                Node::Leaf(Leaf {
                    path,
                    op: Op::Near(near),
                    ..
                }) => Some((path.as_str(), near.as_ref())),
                _ => None,
            }
        }
        find(&self.root)
    }

    /// The distance from the filter's `$near` point to the nearest geometry of `doc` at its
    /// path, in the query's units.
    pub fn near_distance(&self, doc: &Document) -> Option<f64> {
        self.near_closest(doc).map(|(d, _)| d)
    }

    /// [`Filter::near_distance`] and the location it was measured to (what `$geoNear`'s
    /// `includeLocs` shows).
    pub fn near_closest<'a>(&self, doc: &'a Document) -> Option<(f64, &'a Bson)> {
        let (path, near) = self.near()?;
        let parts: Vec<String> = path.split('.').map(str::to_string).collect();
        let mut best: Option<(f64, &'a Bson)> = None;
        eval::walk_path(doc, &parts, true, &mut |value, _| {
            if let Some(v) = value {
                if let Some(d) = near.distance(v) {
                    if best.is_none_or(|(b, _)| d < b) {
                        best = Some((d, v));
                    }
                }
            }
            false
        });
        best
    }

    /// Refuses a `$near` where no distance order can be kept (`$match`, `count`,
    /// `distinct`), with MongoDB's error.
    pub fn refuse_near(&self) -> Result<()> {
        if self.near().is_some() {
            return Err(crate::error::MongoError::bad_value(
                "$geoNear, $near, and $nearSphere are not allowed in this context",
            ));
        }
        Ok(())
    }
}

impl Filter {
    /// The `path = value` equalities an upsert seeds its new document with: top-level (and
    /// `$and`) equalities, `$eq`, one-value `$in` and one-branch `$or` (which MongoDB's
    /// optimizer turns into equalities); nothing under other operators.
    pub(crate) fn upsert_equalities(&self) -> Vec<(&str, &Bson)> {
        fn collect<'a>(node: &'a Node, out: &mut Vec<(&'a str, &'a Bson)>) {
            match node {
                Node::And(children) => children.iter().for_each(|c| collect(c, out)),
                Node::Or(children) if children.len() == 1 => collect(&children[0], out),
                Node::Leaf(Leaf {
                    path,
                    op: Op::Cmp(CmpOp::Eq, value),
                    ..
                }) => out.push((path, value)),
                Node::Leaf(Leaf {
                    path,
                    op: Op::In {
                        values, regexes, ..
                    },
                    ..
                }) if values.len() == 1 && regexes.is_empty() => out.push((path, &values[0])),
                _ => {}
            }
        }
        let mut out = Vec::new();
        collect(&self.root, &mut out);
        out
    }
}

#[cfg(test)]
mod collation_tests;
#[cfg(test)]
mod tests;
