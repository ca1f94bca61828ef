//! The values a filter allows for one field path, as point sets or ranges — what an index scan
//! needs. Always a superset of the matching values (the filter itself still runs on every
//! document), so a predicate that cannot be expressed simply adds no bounds.

use crate::document::collation::{Collation, has_string};
use crate::document::order::{canonical_rank, compare_values};
use bson::{Bson, Document};
use std::cmp::Ordering;

/// The values a filter allows for one path.
// Short-lived planning values: the size difference between variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum FieldBounds {
    /// Exactly these values (sorted, distinct).
    Points(Vec<Bson>),
    /// Values between the bounds, within one type (MongoDB's type bracketing: `$gt: 5` means
    /// numbers above 5). A missing side runs to the end of the type.
    Range {
        low: Option<(Bson, bool)>,
        high: Option<(Bson, bool)>,
    },
}

impl FieldBounds {
    /// Every value, `[MinKey, MaxKey]`: what a field the filter leaves unbounded shows between
    /// bounded ones.
    pub fn every_value() -> FieldBounds {
        FieldBounds::Range {
            low: Some((Bson::MinKey, true)),
            high: Some((Bson::MaxKey, true)),
        }
    }

    pub fn is_every_value(&self) -> bool {
        *self == FieldBounds::every_value()
    }
}

/// A value an equality bound can use: arrays (which also match as whole values), regexes and
/// `$`-operator documents cannot be a single point.
fn point(value: &Bson) -> Option<Vec<Bson>> {
    match value {
        Bson::Array(_)
        | Bson::RegularExpression(_)
        | Bson::Undefined
        | Bson::MinKey
        | Bson::MaxKey => None,
        // `{a: null}` also matches a missing field or `undefined`, which index as null/undefined.
        Bson::Null => Some(vec![Bson::Undefined, Bson::Null]),
        other => Some(vec![other.clone()]),
    }
}

fn is_operator_document(value: &Bson) -> Option<&Document> {
    match value {
        Bson::Document(d) if d.keys().next().is_some_and(|k| k.starts_with('$')) => Some(d),
        _ => None,
    }
}

fn range_value(value: &Bson) -> bool {
    !matches!(
        value,
        Bson::Array(_)
            | Bson::RegularExpression(_)
            | Bson::Null
            | Bson::Undefined
            | Bson::MinKey
            | Bson::MaxKey
            | Bson::Document(_)
    )
}

/// The bounds one predicate on the path implies.
fn predicate_bounds(value: &Bson) -> Vec<FieldBounds> {
    let Some(ops) = is_operator_document(value) else {
        return point(value).map(FieldBounds::Points).into_iter().collect();
    };
    let mut out = Vec::new();
    for (op, arg) in ops {
        match op.as_str() {
            "$eq" => out.extend(point(arg).map(FieldBounds::Points)),
            "$in" => {
                if let Bson::Array(items) = arg {
                    let points: Option<Vec<Vec<Bson>>> = items.iter().map(point).collect();
                    if let Some(points) = points {
                        out.push(FieldBounds::Points(points.into_iter().flatten().collect()));
                    }
                }
            }
            "$gt" | "$gte" if range_value(arg) => out.push(FieldBounds::Range {
                low: Some((arg.clone(), op == "$gte")),
                high: None,
            }),
            "$lt" | "$lte" if range_value(arg) => out.push(FieldBounds::Range {
                low: None,
                high: Some((arg.clone(), op == "$lte")),
            }),
            _ => {}
        }
    }
    out
}

/// Every predicate the filter's top level (and its `$and`s) puts on `path`.
fn collect(filter: &Document, path: &str, out: &mut Vec<FieldBounds>) {
    for (key, value) in filter {
        if key == path {
            out.extend(predicate_bounds(value));
        } else if key == "$and" {
            if let Bson::Array(branches) = value {
                for branch in branches.iter().filter_map(Bson::as_document) {
                    collect(branch, path, out);
                }
            }
        }
    }
}

/// `filter` less the predicates bounds could come from that compare strings: what keys stored
/// under one collation may be scanned for when the query compares strings by another (its
/// equal or ordered strings are not the keys' neighbours). Dropping predicates widens the
/// bounds, which stay a superset; the filter itself still runs on every document.
pub fn without_string_comparisons(filter: &Document) -> Document {
    map_bounding_operands(filter, &|operand| {
        (!has_string(operand)).then(|| operand.clone())
    })
}

/// `filter` with the operands bounds could come from (equalities, `$eq`, `$in`, ranges) in
/// `collation`'s keys: what an index whose keys are in that collation is scanned for by a
/// query of the same collation.
pub fn in_collation_keys(filter: &Document, collation: &Collation) -> Document {
    map_bounding_operands(filter, &|operand| Some(collation.comparison_key(operand)))
}

/// `filter` with each bounding operand replaced by `map` of it, or its predicate dropped when
/// `map` gives nothing; through `$and` and `$or` branches.
fn map_bounding_operands(filter: &Document, map: &dyn Fn(&Bson) -> Option<Bson>) -> Document {
    let mut out = Document::new();
    for (key, value) in filter {
        match (key.as_str(), value) {
            ("$and" | "$or", Bson::Array(branches)) => {
                let branches = branches.iter().map(|branch| match branch {
                    Bson::Document(d) => Bson::Document(map_bounding_operands(d, map)),
                    other => other.clone(),
                });
                out.insert(key.clone(), Bson::Array(branches.collect()));
            }
            (name, _) if name.starts_with('$') => {
                out.insert(key.clone(), value.clone());
            }
            _ => match is_operator_document(value) {
                Some(ops) => {
                    let mut kept = Document::new();
                    for (op, arg) in ops {
                        let bounding =
                            matches!(op.as_str(), "$eq" | "$in" | "$gt" | "$gte" | "$lt" | "$lte");
                        match bounding {
                            true => {
                                if let Some(arg) = map(arg) {
                                    kept.insert(op.clone(), arg);
                                }
                            }
                            false => {
                                kept.insert(op.clone(), arg.clone());
                            }
                        }
                    }
                    if !kept.is_empty() {
                        out.insert(key.clone(), kept);
                    }
                }
                None => {
                    if let Some(value) = map(value) {
                        out.insert(key.clone(), value);
                    }
                }
            },
        }
    }
    out
}

fn normalize(mut points: Vec<Bson>) -> Vec<Bson> {
    points.sort_by(compare_values);
    points.dedup_by(|a, b| compare_values(a, b) == Ordering::Equal);
    points
}

fn within(value: &Bson, low: &Option<(Bson, bool)>, high: &Option<(Bson, bool)>) -> bool {
    let type_of = low
        .as_ref()
        .or(high.as_ref())
        .map(|(v, _)| canonical_rank(v));
    if type_of.is_some_and(|t| t != canonical_rank(value)) {
        return false;
    }
    let above = low
        .as_ref()
        .is_none_or(|(l, inclusive)| match compare_values(value, l) {
            Ordering::Greater => true,
            Ordering::Equal => *inclusive,
            Ordering::Less => false,
        });
    let below = high
        .as_ref()
        .is_none_or(|(h, inclusive)| match compare_values(value, h) {
            Ordering::Less => true,
            Ordering::Equal => *inclusive,
            Ordering::Greater => false,
        });
    above && below
}

fn intersect(a: FieldBounds, b: FieldBounds) -> FieldBounds {
    match (a, b) {
        (FieldBounds::Points(x), FieldBounds::Points(y)) => {
            FieldBounds::Points(intersect_points(normalize(x), &normalize(y)))
        }
        (FieldBounds::Points(p), FieldBounds::Range { low, high })
        | (FieldBounds::Range { low, high }, FieldBounds::Points(p)) => {
            FieldBounds::Points(p.into_iter().filter(|v| within(v, &low, &high)).collect())
        }
        (FieldBounds::Range { low: l1, high: h1 }, FieldBounds::Range { low: l2, high: h2 }) => {
            let ranks: Vec<u8> = [&l1, &h1, &l2, &h2]
                .iter()
                .filter_map(|b| b.as_ref().map(|(v, _)| canonical_rank(v)))
                .collect();
            if ranks.windows(2).any(|w| w[0] != w[1]) {
                return FieldBounds::Points(Vec::new());
            }
            let tighter_low = match (l1, l2) {
                (Some(a), Some(b)) => Some(
                    if compare_values(&a.0, &b.0) == Ordering::Greater
                        || (compare_values(&a.0, &b.0) == Ordering::Equal && !a.1)
                    {
                        a
                    } else {
                        b
                    },
                ),
                (a, b) => a.or(b),
            };
            let tighter_high = match (h1, h2) {
                (Some(a), Some(b)) => Some(
                    if compare_values(&a.0, &b.0) == Ordering::Less
                        || (compare_values(&a.0, &b.0) == Ordering::Equal && !a.1)
                    {
                        a
                    } else {
                        b
                    },
                ),
                (a, b) => a.or(b),
            };
            FieldBounds::Range {
                low: tighter_low,
                high: tighter_high,
            }
        }
    }
}

/// The values of both sorted, distinct point lists, by merging them: linear, where looking each
/// value of one up in the other would be quadratic (an `$in` may list 100,000 values).
fn intersect_points(x: Vec<Bson>, y: &[Bson]) -> Vec<Bson> {
    let mut out = Vec::new();
    let mut ys = y.iter().peekable();
    for v in x {
        while ys
            .next_if(|w| compare_values(w, &v) == Ordering::Less)
            .is_some()
        {}
        if ys
            .peek()
            .is_some_and(|w| compare_values(w, &v) == Ordering::Equal)
        {
            out.push(v);
        }
    }
    out
}

/// The bounds `filter` puts on `path`, if any. On a multikey index, predicates may be
/// satisfied by different array elements, so they are not intersected: one suffices.
pub fn field_bounds(filter: &Document, path: &str, multikey: bool) -> Option<FieldBounds> {
    let mut bounds = Vec::new();
    collect(filter, path, &mut bounds);
    let mut bounds = bounds.into_iter();
    let first = bounds.next()?;
    let combined = if multikey {
        // Prefer points (most selective) among the candidates.
        std::iter::once(first)
            .chain(bounds)
            .min_by_key(|b| matches!(b, FieldBounds::Range { .. }))?
    } else {
        bounds.fold(first, intersect)
    };
    Some(match combined {
        FieldBounds::Points(p) => FieldBounds::Points(normalize(p)),
        range => range,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn string_comparisons_leave_the_bounds_under_a_collation() {
        let filter = doc! {
            "a": "x", "b": 1, "c": {"$gt": "m", "$lt": 5, "$regex": "^p"}, "d": {"$in": [1, "y"]},
            "$or": [{"e": ["z"]}, {"e": 2}], "$comment": "kept"
        };
        assert_eq!(
            without_string_comparisons(&filter),
            doc! {
                "b": 1, "c": {"$lt": 5, "$regex": "^p"}, "$or": [{}, {"e": 2}], "$comment": "kept"
            }
        );
    }

    #[test]
    fn equality_in_and_ranges() {
        assert_eq!(
            field_bounds(&doc! {"a": 5}, "a", false),
            Some(FieldBounds::Points(vec![Bson::Int32(5)]))
        );
        assert_eq!(
            field_bounds(&doc! {"a": {"$in": [3, 1, 3]}}, "a", false),
            Some(FieldBounds::Points(vec![Bson::Int32(1), Bson::Int32(3)]))
        );
        assert_eq!(
            field_bounds(&doc! {"a": {"$gt": 1, "$lte": 9}}, "a", false),
            Some(FieldBounds::Range {
                low: Some((Bson::Int32(1), false)),
                high: Some((Bson::Int32(9), true))
            })
        );
        assert_eq!(field_bounds(&doc! {"a": {"$ne": 1}}, "a", false), None);
        assert_eq!(field_bounds(&doc! {"a": [1, 2]}, "a", false), None);
        assert_eq!(field_bounds(&doc! {"b": 1}, "a", false), None);
    }

    #[test]
    fn and_branches_intersect_unless_multikey() {
        let filter =
            doc! {"$and": [{"a": {"$gte": 3}}, {"a": {"$in": [1, 4, 7]}}], "a": {"$lt": 6}};
        assert_eq!(
            field_bounds(&filter, "a", false),
            Some(FieldBounds::Points(vec![Bson::Int32(4)]))
        );
        assert_eq!(
            field_bounds(&filter, "a", true),
            Some(FieldBounds::Points(vec![
                Bson::Int32(1),
                Bson::Int32(4),
                Bson::Int32(7)
            ]))
        );
        let disjoint = doc! {"$and": [{"a": 1}, {"a": 2}]};
        assert_eq!(
            field_bounds(&disjoint, "a", false),
            Some(FieldBounds::Points(vec![]))
        );
    }

    #[test]
    fn large_point_sets_intersect_by_merging() {
        // 100,000 values on each side: a merge, not a lookup of each value in the other list.
        let n = 100_000;
        let evens: Vec<i64> = (0..n).map(|i| 2 * i).collect();
        let thirds: Vec<i64> = (0..n).map(|i| 3 * i).rev().collect();
        let filter = doc! {"$and": [{"a": {"$in": evens}}, {"a": {"$in": thirds}}]};
        let Some(FieldBounds::Points(points)) = field_bounds(&filter, "a", false) else {
            panic!("points expected");
        };
        let expected: Vec<Bson> = (0..2 * n)
            .step_by(6)
            .filter(|v| *v < 2 * n && *v < 3 * n)
            .map(Bson::Int64)
            .collect();
        assert_eq!(points, expected);
    }

    #[test]
    fn expr_and_json_schema_add_no_bounds() {
        // They are whole-document predicates: the filter checks them on every fetched document.
        let filter = doc! {
            "$expr": {"$eq": ["$a", 5]},
            "$jsonSchema": {"properties": {"a": {"enum": [5]}}},
        };
        assert_eq!(field_bounds(&filter, "a", false), None);
        let mixed = doc! {"a": {"$gt": 1}, "$and": [{"$expr": {"$lt": ["$a", 0]}}]};
        assert_eq!(
            field_bounds(&mixed, "a", false),
            Some(FieldBounds::Range {
                low: Some((Bson::Int32(1), false)),
                high: None
            })
        );
    }

    #[test]
    fn null_includes_undefined_and_missing() {
        assert_eq!(
            field_bounds(&doc! {"a": null}, "a", false),
            Some(FieldBounds::Points(vec![Bson::Undefined, Bson::Null]))
        );
    }
}
