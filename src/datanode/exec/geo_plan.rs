//! Planning `$geoWithin`/`$geoIntersects` on geo indexes. On a `2d` index, a plane shape's
//! bounding rectangle is covered by grid cells. On a `2dsphere` index, the query region is covered
//! by S2 cells and the index scanned over the ranges of cell ids that may hold a geometry
//! meeting it (each covering cell's descendants and its ancestors); the filter then decides
//! exactly, as MongoDB's fetch after its geo index scan does.

use super::plan::{IndexScanPlan, KeyInterval};
use crate::datanode::index::FieldKind;
use crate::datanode::storage::{CollectionMeta, IndexMeta};
use crate::document::keystring;
use crate::query::geo::{GeoPredicate, GeometryRegion, Region};
use bson::{Bson, Document};

/// The top-level (or top-level `$and`) geo predicates of a filter: path, operator, operand.
fn geo_predicates(filter: &Document) -> Vec<(&str, &str, &Bson)> {
    let mut out = Vec::new();
    for (key, value) in filter {
        match (key.as_str(), value) {
            ("$and", Bson::Array(items)) => {
                for item in items {
                    if let Bson::Document(d) = item {
                        out.extend(geo_predicates(d));
                    }
                }
            }
            (path, Bson::Document(ops)) if !path.starts_with('$') => {
                for (op, operand) in ops {
                    if matches!(op.as_str(), "$geoWithin" | "$within" | "$geoIntersects") {
                        out.push((path, op.as_str(), operand));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// A ready, visible, complete `2dsphere` index led by `path`.
pub(super) fn sphere_index<'a>(coll: &'a CollectionMeta, path: &str) -> Option<&'a IndexMeta> {
    geo_index(coll, path, FieldKind::Sphere2d)
}

/// A ready, visible, complete geo index of `kind` led by `path`.
pub(super) fn geo_index<'a>(
    coll: &'a CollectionMeta,
    path: &str,
    kind: FieldKind,
) -> Option<&'a IndexMeta> {
    coll.indexes.iter().find(|index| {
        index.ready
            && index.parsed.as_ref().is_some_and(|spec| {
                !spec.hidden
                    && spec.partial_filter.is_none()
                    && spec
                        .fields
                        .first()
                        .is_some_and(|f| f.kind == kind && f.path == path)
            })
    })
}

/// The rectangle a plane shape lies in.
fn bounding_rect(region: &Region) -> Option<((f64, f64), (f64, f64))> {
    match region {
        Region::Box { lo, hi } => Some((*lo, *hi)),
        Region::Center { center, radius } => Some((
            (center.0 - radius, center.1 - radius),
            (center.0 + radius, center.1 + radius),
        )),
        Region::FlatPolygon(vertices) => {
            let fold = |f: fn(f64, f64) -> f64, start: f64, axis: fn(&(f64, f64)) -> f64| {
                vertices.iter().map(axis).fold(start, f)
            };
            Some((
                (
                    fold(f64::min, f64::INFINITY, |v| v.0),
                    fold(f64::min, f64::INFINITY, |v| v.1),
                ),
                (
                    fold(f64::max, f64::NEG_INFINITY, |v| v.0),
                    fold(f64::max, f64::NEG_INFINITY, |v| v.1),
                ),
            ))
        }
        Region::CenterSphere(_) | Region::Polygons(_) => None,
    }
}

/// A scan of a `2d` index answering a plane `$geoWithin`: the grid cells meeting the
/// shape's bounding rectangle.
fn flat_scan(coll: &CollectionMeta, path: &str, predicate: &GeoPredicate) -> Option<IndexScanPlan> {
    let GeoPredicate::Within(region) = predicate else {
        return None;
    };
    let (lo, hi) = bounding_rect(region)?;
    let index = geo_index(coll, path, FieldKind::Flat2d)?;
    let params = index.parsed.as_ref()?.flat?;
    Some(IndexScanPlan {
        index: index.clone(),
        intervals: cell_intervals_of_ranges(&params.cover(lo, hi)),
        reverse: false,
        provides_sort: false,
        bounds: Vec::new(),
        wildcard: None,
    })
}

/// The intervals of `index` (a `2dsphere` index) whose keys may meet `region`.
pub(super) fn cell_intervals(index: &IndexMeta, region: &GeometryRegion) -> Vec<KeyInterval> {
    let Some(params) = index.parsed.as_ref().and_then(|spec| spec.sphere) else {
        return vec![KeyInterval::all()];
    };
    cell_intervals_of_ranges(&params.scan_ranges(region))
}

/// Key intervals of inclusive ranges of cell ids.
pub(super) fn cell_intervals_of_ranges(ranges: &[(i64, i64)]) -> Vec<KeyInterval> {
    ranges
        .iter()
        .map(|&(lo, hi)| KeyInterval {
            low: keystring::encode_one(&Bson::Int64(lo)),
            high: hi
                .checked_add(1)
                .map(|next| keystring::encode_one(&Bson::Int64(next))),
        })
        .collect()
}

/// A scan of a geo index answering one of the filter's geo predicates: a `2d` index for the
/// plane shapes, a `2dsphere` index for the spherical ones.
pub(super) fn sphere_scan(coll: &CollectionMeta, filter: &Document) -> Option<IndexScanPlan> {
    for (path, op, operand) in geo_predicates(filter) {
        let Ok(predicate) = GeoPredicate::parse(op, operand) else {
            continue;
        };
        if let Some(plan) = flat_scan(coll, path, &predicate) {
            return Some(plan);
        }
        let Some(index) = sphere_index(coll, path) else {
            continue;
        };
        let Some(region) = GeometryRegion::of_predicate(&predicate) else {
            continue;
        };
        return Some(IndexScanPlan {
            index: index.clone(),
            intervals: cell_intervals(index, &region),
            reverse: false,
            provides_sort: false,
            bounds: Vec::new(),
            wildcard: None,
        });
    }
    None
}
