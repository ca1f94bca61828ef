//! `$near`/`$nearSphere` on a `2dsphere` index (and a legacy `$near` on a `2d` index, with
//! squares on the plane instead of caps), as MongoDB's GEO_NEAR stages: caps of
//! growing radius around the point are covered by cells, the index scanned over the ranges
//! the previous caps did not cover, and a document is returned once the cap reached its
//! distance (nothing nearer can come later), so a query that wants ten documents reads about
//! the cells around them rather than the collection.

use super::geo_plan::{cell_intervals_of_ranges, geo_index, sphere_index};
use super::near_sphere::{SphereSearch, sphere_matches, start_radius};
use super::plan::{AccessPath, IndexScanPlan};
use super::position::{Examined, Position};
use crate::aggregate::GeoNearSpec;
use crate::catalog::OwnershipFilter;
use crate::datanode::index::FieldKind;
use crate::datanode::storage::{CollectionMeta, DatabaseStore, IndexMeta, RecordId};
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::LetVariables;
use crate::expression::meta::{GEO_NEAR_DISTANCE_FIELD, GEO_NEAR_POINT_FIELD};
use crate::query::filter::Filter;
use crate::query::geo::{FlatIndexParams, SphereIndexParams, merge_ranges};
use crate::server::pipeline_cursor::PipelineSource;
use bson::{Bson, Document, RawDocumentBuf};
use futures::future::BoxFuture;
use s2::metric::AVG_EDGEMETRIC;
use std::collections::HashSet;
use std::collections::VecDeque;
use std::sync::Arc;

/// A document in distance order.
pub struct NearMatch {
    pub rid: RecordId,
    pub raw: RawDocumentBuf,
    pub doc: bson::Document,
    /// In the query's units (meters for a GeoJSON point, radians for a legacy pair).
    pub distance: f64,
}

/// MongoDB's answer when no index can serve a `$near`.
pub fn no_geo_index(ns: &str) -> MongoError {
    MongoError::new(
        ErrorCode::NoQueryExecutionPlans,
        format!(
            "error processing query: ns={ns} planner returned error :: caused by :: unable to find index for $geoNear query"
        ),
    )
}

/// Ranges of `ranges` not in the sorted, merged `done`.
pub(super) fn subtract(ranges: &[(i64, i64)], done: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    for &(mut lo, hi) in ranges {
        for &(dlo, dhi) in done {
            if dhi < lo || dlo > hi {
                continue;
            }
            if dlo > lo {
                out.push((lo, dlo - 1));
            }
            if dhi >= hi {
                lo = hi.saturating_add(1);
                break;
            }
            lo = dhi + 1;
        }
        if lo <= hi {
            out.push((lo, hi));
        }
    }
    out
}

/// The documents matching `filter` (whose `$near` this answers) in distance order, stopping
/// once `want` are certain (`None`: all within `$maxDistance`).
pub async fn near_matches(
    db: &DatabaseStore,
    coll: &CollectionMeta,
    filter: &Filter,
    ownership: Option<Arc<OwnershipFilter>>,
    want: Option<usize>,
    ns: &str,
) -> Result<Vec<NearMatch>> {
    let mut examined = Examined::default();
    near_matches_examined(db, coll, filter, ownership, want, ns, &mut examined).await
}

/// The index a `$near` of `filter` reads and whether it measures on the sphere (explain's
/// GEO_NEAR_2DSPHERE) or the plane (GEO_NEAR_2D); `None` without a `$near`.
pub fn near_index<'a>(
    coll: &'a CollectionMeta,
    filter: &Filter,
    ns: &str,
) -> Result<Option<(&'a IndexMeta, bool)>> {
    let Some((path, near)) = filter.near() else {
        return Ok(None);
    };
    let search = search(coll, path, near, ns)?;
    let spherical = matches!(search, Search::Sphere { .. });
    Ok(Some((search.index(), spherical)))
}

/// How a `$near` on `path` searches `coll`: the index and its parameters, with MongoDB's
/// errors when none serves it.
fn search<'a>(
    coll: &'a CollectionMeta,
    path: &str,
    near: &crate::query::geo::NearQuery,
    ns: &str,
) -> Result<Search<'a>> {
    Ok(if near.spherical {
        let Some(index) = sphere_index(coll, path) else {
            if geo_index(coll, path, FieldKind::Flat2d).is_some() {
                return Err(MongoError::new(
                    ErrorCode::NotImplemented,
                    "$nearSphere and spherical $geoNear on a 2d index are not supported yet",
                ));
            }
            return Err(no_geo_index(ns));
        };
        let params = index
            .parsed
            .as_ref()
            .and_then(|spec| spec.sphere)
            .ok_or_else(|| no_geo_index(ns))?;
        let center = near.sphere_center().ok_or_else(|| no_geo_index(ns))?;
        Search::Sphere {
            index,
            params,
            center,
        }
    } else {
        let index = geo_index(coll, path, FieldKind::Flat2d).ok_or_else(|| no_geo_index(ns))?;
        let params = index
            .parsed
            .as_ref()
            .and_then(|spec| spec.flat)
            .ok_or_else(|| no_geo_index(ns))?;
        Search::Plane { index, params }
    })
}

/// [`near_matches`], adding the keys and documents it read to `examined` (explain).
#[allow(clippy::too_many_arguments)]
pub async fn near_matches_examined(
    db: &DatabaseStore,
    coll: &CollectionMeta,
    filter: &Filter,
    ownership: Option<Arc<OwnershipFilter>>,
    want: Option<usize>,
    ns: &str,
    examined: &mut Examined,
) -> Result<Vec<NearMatch>> {
    let Some((path, near)) = filter.near() else {
        return Ok(Vec::new());
    };
    let search = search(coll, path, near, ns)?;
    let (index, params) = match search {
        Search::Sphere {
            index,
            params,
            center,
        } => {
            // At least five average cell edges at the finest indexed level, as MongoDB's
            // first step; more where the documents are sparse.
            let least = 5.0 * AVG_EDGEMETRIC.value(params.finest_level);
            let search = SphereSearch {
                index,
                params,
                center,
            };
            // Every round reads the same snapshot through one reader.
            let mut read = db.read().await?;
            read.hold_snapshot()?;
            let radius = start_radius(&mut read, &search, want, least).await?;
            return sphere_matches(
                &mut read, coll, filter, near, &search, radius, ownership, want, examined,
            )
            .await;
        }
        Search::Plane { index, params } => (index, params),
    };
    // Squares of growing size on the plane, each scanned for the cells the smaller ones did
    // not cover; a document within the square's reach is final.
    let max = near.max_distance.min(2.0 * (params.max - params.min));
    let mut radius = 4.0 * (params.max - params.min) / f64::from(1u32 << params.bits.min(24));
    let mut scanned: Vec<(i64, i64)> = Vec::new();
    let mut seen: HashSet<RecordId> = HashSet::new();
    let mut pending: Vec<NearMatch> = Vec::new();
    let mut out: Vec<NearMatch> = Vec::new();
    loop {
        let reach = radius.min(max);
        let (x, y) = (near.center.x, near.center.y);
        let ranges = params.cover((x - reach, y - reach), (x + reach, y + reach));
        let fresh = subtract(&ranges, &scanned);
        scanned = merge_ranges(scanned.into_iter().chain(ranges).collect());
        if !fresh.is_empty() {
            let plan = IndexScanPlan {
                index: index.clone(),
                intervals: cell_intervals_of_ranges(&fresh),
                reverse: false,
                provides_sort: false,
                bounds: Vec::new(),
                wildcard: None,
            };
            let mut position = Position::with_path(AccessPath::IndexScan(Arc::new(plan)))
                .owned_by(ownership.clone());
            let mut read = db.read().await?;
            while !position.done() {
                for candidate in position.next_matches(&mut read, coll, filter).await? {
                    if !seen.insert(candidate.rid) {
                        continue;
                    }
                    if let Some(distance) = filter.near_distance(&candidate.doc) {
                        pending.push(NearMatch {
                            rid: candidate.rid,
                            raw: candidate.raw,
                            doc: candidate.doc,
                            distance,
                        });
                    }
                }
            }
            let counted = position.examined();
            examined.keys += counted.keys;
            examined.docs += counted.docs;
            examined.chunk_skips += counted.chunk_skips;
        }
        let last = reach >= max;
        pending.sort_by(|a, b| a.distance.total_cmp(&b.distance));
        let ready = if last {
            pending.len()
        } else {
            pending.partition_point(|m| m.distance <= reach)
        };
        out.extend(pending.drain(..ready));
        if last || want.is_some_and(|w| out.len() >= w) {
            if let Some(w) = want {
                out.truncate(w);
            }
            return Ok(out);
        }
        radius *= 2.0;
    }
}

/// Where a `$near` looks: caps on a `2dsphere` index, squares on a `2d` index.
enum Search<'a> {
    Sphere {
        index: &'a IndexMeta,
        params: SphereIndexParams,
        center: s2::point::Point,
    },
    Plane {
        index: &'a IndexMeta,
        params: FlatIndexParams,
    },
}

impl<'a> Search<'a> {
    fn index(&self) -> &'a IndexMeta {
        match self {
            Search::Sphere { index, .. } | Search::Plane { index, .. } => index,
        }
    }
}

/// The field `$geoNear` measures from: its `key`, or the one field of the collection's only
/// `2dsphere` index (MongoDB's IndexNotFound otherwise).
fn geo_near_key<'a>(coll: &'a CollectionMeta, spec: &'a GeoNearSpec, ns: &str) -> Result<&'a str> {
    if let Some(key) = &spec.key {
        return Ok(key);
    }
    // As MongoDB: a 2d index first, then a 2dsphere one; more than one of a kind is ambiguous.
    for (kind, name) in [(FieldKind::Flat2d, "2d"), (FieldKind::Sphere2d, "2dsphere")] {
        let mut fields = coll.indexes.iter().filter_map(|index| {
            let parsed = index.parsed.as_ref().filter(|p| index.ready && !p.hidden)?;
            parsed
                .fields
                .iter()
                .find(|f| f.kind == kind)
                .map(|f| f.path.as_str())
        });
        if let Some(first) = fields.next() {
            if fields.next().is_some() {
                return Err(MongoError::new(
                    ErrorCode::IndexNotFound,
                    format!(
                        "There is more than one {name} index on {ns}; unsure which to use for $geoNear"
                    ),
                ));
            }
            return Ok(first);
        }
    }
    Err(MongoError::new(
        ErrorCode::IndexNotFound,
        "$geoNear requires a 2d or 2dsphere index, but none were found",
    ))
}

/// The `$near` filter a leading `$geoNear` runs on `coll` (its `near`, bounds and `query` on
/// the field it measures from), as written and parsed.
pub fn geo_near_filter(
    coll: &CollectionMeta,
    spec: &GeoNearSpec,
    vars: &Arc<LetVariables>,
    ns: &str,
) -> Result<(Document, Filter)> {
    let key = geo_near_key(coll, spec, ns)?;
    let written = spec.filter_on(key);
    let filter = Filter::parse_with_variables(&written, vars)?;
    Ok((written, filter))
}

/// What a leading `$geoNear` outputs: the matching documents in distance order with
/// `distanceField` (times `distanceMultiplier`) and `includeLocs` set, carrying their distance
/// and point as metadata; the first `want` when
/// the stages after it keep no more.
#[allow(clippy::too_many_arguments)]
pub async fn geo_near_documents(
    db: &DatabaseStore,
    coll: &CollectionMeta,
    spec: &GeoNearSpec,
    vars: &Arc<LetVariables>,
    ownership: Option<Arc<OwnershipFilter>>,
    want: Option<usize>,
    ns: &str,
) -> Result<Vec<Document>> {
    let (_, filter) = geo_near_filter(coll, spec, vars, ns)?;
    let matches = near_matches(db, coll, &filter, ownership, want, ns).await?;
    let mut out = Vec::with_capacity(matches.len());
    for m in matches {
        let mut doc = m.doc;
        let location = filter.near_closest(&doc).map(|(_, loc)| loc.clone());
        super::cover::set_path(
            &mut doc,
            &spec.distance_field,
            Bson::Double(m.distance * spec.distance_multiplier),
        );
        if let (Some(field), Some(location)) = (&spec.include_locs, &location) {
            super::cover::set_path(&mut doc, field, location.clone());
        }
        // The distance (before `distanceMultiplier`) and the point, as metadata.
        doc.insert(GEO_NEAR_DISTANCE_FIELD, m.distance);
        if let Some(location) = location {
            doc.insert(GEO_NEAR_POINT_FIELD, location);
        }
        out.push(doc);
    }
    Ok(out)
}

/// A pipeline's input computed ahead (a leading `$geoNear`'s output).
pub struct BufferedInput {
    pub docs: VecDeque<Document>,
}

impl PipelineSource for BufferedInput {
    fn read<'a>(
        &'a mut self,
        max: usize,
        _filter: &'a Filter,
        _host: Option<&'a crate::aggregate::foreign::Host<'a>>,
    ) -> BoxFuture<'a, Result<Option<Vec<Document>>>> {
        Box::pin(async move {
            if self.docs.is_empty() {
                return Ok(None);
            }
            let n = max.max(1).min(self.docs.len());
            Ok(Some(self.docs.drain(..n).collect()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtracting_ranges() {
        assert_eq!(
            subtract(&[(0, 10)], &[(2, 3), (5, 6)]),
            [(0, 1), (4, 4), (7, 10)]
        );
        assert_eq!(subtract(&[(0, 10)], &[(-5, 20)]), []);
        assert_eq!(
            subtract(&[(0, 10), (20, 30)], &[(5, 25)]),
            [(0, 4), (26, 30)]
        );
        assert_eq!(subtract(&[(0, 10)], &[]), [(0, 10)]);
    }
}
