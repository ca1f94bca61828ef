//! Evaluating the expression tree against documents: a path resolves into candidate values
//! (through arrays of documents, numeric components as indexes, leaf arrays expanded) and a
//! leaf predicate matches when any candidate does, with MongoDB's type bracketing.

use super::predicates::{bits_match, mod_matches, regex_matches};
use super::{CmpOp, Leaf, Node, Op};
use crate::document::collation::Collation;
use crate::document::order::{canonical_rank, compare_collated};
use crate::error::Result;
use crate::query::values::{is_nan, is_number, type_code};
use bson::{Bson, Document};
use std::cmp::Ordering;

impl Node {
    /// Whether a whole document matches, or the error a `$expr` raised. `$expr` only occurs in
    /// the logical tree above the leaves, so only that part can fail.
    pub(crate) fn try_matches(
        &self,
        doc: &Document,
        key: &mut Option<usize>,
        c: Option<&Collation>,
    ) -> Result<bool> {
        match self {
            Node::And(children) => {
                for child in children {
                    if !child.try_matches(doc, key, c)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Node::Or(children) => {
                for child in children {
                    if child.try_matches(doc, key, c)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Node::Nor(children) => {
                for child in children {
                    if child.try_matches(doc, &mut None, c)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Node::Not(child) => Ok(!child.try_matches(doc, &mut None, c)?),
            Node::Expr(e) => e.matches(doc),
            Node::Text(t) => t.matches(doc),
            _ => Ok(self.matches(doc, key, c)),
        }
    }

    /// Whether a whole document matches; `key` receives the array position of the match.
    pub(crate) fn matches(
        &self,
        doc: &Document,
        key: &mut Option<usize>,
        c: Option<&Collation>,
    ) -> bool {
        match self {
            Node::Expr(e) => e.matches(doc).unwrap_or(false),
            Node::Schema(s) => s.matches(doc),
            Node::Text(t) => t.matches(doc).unwrap_or(false),
            Node::And(children) => children.iter().all(|n| n.matches(doc, key, c)),
            Node::Or(children) => children.iter().any(|n| n.matches(doc, key, c)),
            Node::Nor(children) => !children.iter().any(|n| n.matches(doc, &mut None, c)),
            Node::Not(child) => !child.matches(doc, &mut None, c),
            Node::AlwaysTrue => true,
            Node::AlwaysFalse => false,
            Node::Leaf(l) => l.matches(doc, key, c),
        }
    }

    /// Whether a single value matches, ignoring paths (`$elemMatch` value form).
    fn matches_single(&self, value: Option<&Bson>, c: Option<&Collation>) -> bool {
        match self {
            Node::And(children) => children.iter().all(|n| n.matches_single(value, c)),
            Node::Or(children) => children.iter().any(|n| n.matches_single(value, c)),
            Node::Nor(children) => !children.iter().any(|n| n.matches_single(value, c)),
            Node::Not(child) => !child.matches_single(value, c),
            Node::AlwaysTrue => true,
            Node::AlwaysFalse => false,
            Node::Leaf(l) => l.op.matches_single(value, &mut None, c),
            // Only whole-document predicates; the value form of `$elemMatch` cannot hold them.
            Node::Expr(_) | Node::Schema(_) | Node::Text(_) => false,
        }
    }
}

impl Leaf {
    fn matches(&self, doc: &Document, key: &mut Option<usize>, c: Option<&Collation>) -> bool {
        let expand_leaf_arrays = !matches!(
            self.op,
            Op::Size(_) | Op::ElemMatchObject(_) | Op::ElemMatchValue(_)
        );
        let mut matched = false;
        let mut candidates = 0usize;
        walk_path(
            doc,
            &self.parts,
            expand_leaf_arrays,
            &mut |value, offset| {
                candidates += 1;
                let mut inner = None;
                if self.op.matches_single(value, &mut inner, c) {
                    if let Some(pos) = offset.or(inner) {
                        *key = Some(pos);
                    }
                    matched = true;
                    true
                } else {
                    false
                }
            },
        );
        // An array that yields nothing for the rest of the path (`a.1` in `{a: [5]}`, `a.b` in
        // `{a: [1, 2]}` or `{a: []}`) leaves the path missing, which null matches in MongoDB
        // (jstests/core/query/null_query_semantics.js).
        if candidates == 0 && self.op.matches_single(None, &mut None, c) {
            return true;
        }
        matched
    }
}

/// Resolves `parts` in `doc` into candidate values, calling `f(value, outermost_array_offset)`
/// for each (`None` value = missing) until it returns true. Returns whether it did.
pub(crate) fn walk_path<'a>(
    doc: &'a Document,
    parts: &[String],
    expand_leaf_arrays: bool,
    f: &mut dyn FnMut(Option<&'a Bson>, Option<usize>) -> bool,
) -> bool {
    walk_container(Container::Doc(doc), parts, expand_leaf_arrays, None, f)
}

#[derive(Clone, Copy)]
enum Container<'a> {
    Doc(&'a Document),
    /// An array looked at as a document whose field names are its indexes.
    Arr(&'a [Bson]),
}

impl<'a> Container<'a> {
    fn get(self, name: &str) -> Option<&'a Bson> {
        match self {
            Container::Doc(d) => d.get(name),
            Container::Arr(items) => {
                let index = crate::query::values::array_index(name)?;
                (index.to_string() == name)
                    .then(|| items.get(index))
                    .flatten()
            }
        }
    }
}

fn walk_container<'a>(
    container: Container<'a>,
    parts: &[String],
    expand: bool,
    outer: Option<usize>,
    f: &mut dyn FnMut(Option<&'a Bson>, Option<usize>) -> bool,
) -> bool {
    let Some(first) = parts.first() else {
        return f(None, outer);
    };
    let Some(mut current) = container.get(first) else {
        return f(None, outer);
    };
    let mut index = 0;
    loop {
        if let Bson::Array(items) = current {
            return walk_array(current, items, &parts[index + 1..], expand, outer, f);
        }
        if index + 1 == parts.len() {
            return f(Some(current), outer);
        }
        match current {
            Bson::Document(d) => match d.get(&parts[index + 1]) {
                Some(v) => {
                    current = v;
                    index += 1;
                }
                None => return f(None, outer),
            },
            _ => return f(None, outer),
        }
    }
}

fn walk_array<'a>(
    array: &'a Bson,
    items: &'a [Bson],
    rest: &[String],
    expand: bool,
    outer: Option<usize>,
    f: &mut dyn FnMut(Option<&'a Bson>, Option<usize>) -> bool,
) -> bool {
    if rest.is_empty() {
        if expand {
            for (i, item) in items.iter().enumerate() {
                if f(Some(item), outer.or(Some(i))) {
                    return true;
                }
            }
        }
        return f(Some(array), outer);
    }
    let next = &rest[0];
    let numeric = !next.is_empty() && next.bytes().all(|b| b.is_ascii_digit());
    for (i, item) in items.iter().enumerate() {
        let offset = outer.or(Some(i));
        let offset_match = numeric && *next == i.to_string();
        if let Bson::Document(d) = item {
            if walk_container(Container::Doc(d), rest, expand, offset, f) {
                return true;
            }
        }
        if offset_match {
            if rest.len() == 1 {
                if f(Some(item), offset) {
                    return true;
                }
            } else {
                let sub = match item {
                    Bson::Document(d) => Some(Container::Doc(d)),
                    Bson::Array(inner) => Some(Container::Arr(inner)),
                    _ => None,
                };
                if let Some(sub) = sub {
                    if walk_container(sub, &rest[1..], expand, offset, f) {
                        return true;
                    }
                }
            }
        }
    }
    false
}

impl Op {
    /// MongoDB's `matchesSingleElement`: the predicate against one candidate value.
    fn matches_single(
        &self,
        value: Option<&Bson>,
        key: &mut Option<usize>,
        c: Option<&Collation>,
    ) -> bool {
        match self {
            Op::Cmp(op, rhs) => compare_single(*op, rhs, value, c),
            Op::In {
                values,
                has_null,
                regexes,
            } => match value {
                None => *has_null,
                Some(v) => {
                    values
                        .binary_search_by(|x| compare_collated(x, v, c))
                        .is_ok()
                        || regexes.iter().any(|re| regex_matches(re, v))
                }
            },
            Op::Regex(re) => value.is_some_and(|v| regex_matches(re, v)),
            Op::Exists => value.is_some(),
            Op::Type(set) => value.is_some_and(|v| {
                (set.all_numbers && is_number(v)) || set.codes.contains(&type_code(v))
            }),
            Op::Size(n) => matches!(value, Some(Bson::Array(items)) if items.len() as i64 == *n),
            Op::Mod { divisor, remainder } => {
                value.is_some_and(|v| mod_matches(v, *divisor, *remainder))
            }
            Op::Bits(test, mask) => value.is_some_and(|v| bits_match(v, *test, mask)),
            Op::Geo(predicate) => value.is_some_and(|v| predicate.matches(v)),
            Op::Near(near) => value
                .and_then(|v| near.distance(v))
                .is_some_and(|d| near.within_bounds(d)),
            Op::ElemMatchObject(sub) => {
                let Some(Bson::Array(items)) = value else {
                    return false;
                };
                for (i, item) in items.iter().enumerate() {
                    let matched = match item {
                        Bson::Document(d) => sub.matches(d, &mut None, c),
                        Bson::Array(inner) => sub.matches(
                            &crate::query::values::array_as_document(inner),
                            &mut None,
                            c,
                        ),
                        _ => false,
                    };
                    if matched {
                        *key = Some(i);
                        return true;
                    }
                }
                false
            }
            Op::ElemMatchValue(subs) => {
                let Some(Bson::Array(items)) = value else {
                    return false;
                };
                for (i, item) in items.iter().enumerate() {
                    if subs.iter().all(|s| s.matches_single(Some(item), c)) {
                        *key = Some(i);
                        return true;
                    }
                }
                false
            }
        }
    }
}

/// Comparison of one candidate with the operand, with MongoDB's type bracketing: values of
/// different canonical types never compare, except null against missing/undefined and
/// MinKey/MaxKey bounds; NaN equals only NaN and is neither above nor below anything.
/// Strings compare by the filter's collation `c` (`None`: simple).
pub(super) fn compare_single(
    op: CmpOp,
    rhs: &Bson,
    value: Option<&Bson>,
    c: Option<&Collation>,
) -> bool {
    let inclusive = matches!(op, CmpOp::Eq | CmpOp::Lte | CmpOp::Gte);
    let bound = |rhs: &Bson| match rhs {
        Bson::MaxKey => matches!(op, CmpOp::Lt | CmpOp::Lte),
        Bson::MinKey => matches!(op, CmpOp::Gt | CmpOp::Gte),
        _ => false,
    };
    let Some(value) = value else {
        return match rhs {
            Bson::Null => inclusive,
            Bson::MinKey | Bson::MaxKey => bound(rhs),
            _ => false,
        };
    };
    if canonical_rank(value) != canonical_rank(rhs) {
        if matches!(
            (value, rhs),
            (Bson::Undefined, Bson::Null) | (Bson::Null, Bson::Undefined)
        ) {
            return inclusive;
        }
        return bound(rhs);
    }
    if is_nan(value) || is_nan(rhs) {
        return inclusive && is_nan(value) && is_nan(rhs);
    }
    let ord = compare_collated(value, rhs, c);
    match op {
        CmpOp::Eq => ord == Ordering::Equal,
        CmpOp::Lt => ord == Ordering::Less,
        CmpOp::Lte => ord != Ordering::Greater,
        CmpOp::Gt => ord == Ordering::Greater,
        CmpOp::Gte => ord != Ordering::Less,
    }
}
