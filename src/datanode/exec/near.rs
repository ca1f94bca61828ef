//! `$near`/`$nearSphere` on a `2dsphere` index, as MongoDB's GEO_NEAR_2DSPHERE stage: caps of
//! growing radius around the point are covered by cells, the index scanned over the ranges
//! the previous caps did not cover, and a document is returned once the cap reached its
//! distance (nothing nearer can come later), so a query that wants ten documents reads about
//! the cells around them rather than the collection.

use super::geo_plan::{cell_intervals_of_ranges, sphere_index};
use super::plan::{AccessPath, IndexScanPlan};
use super::position::Position;
use crate::catalog::OwnershipFilter;
use crate::datanode::storage::{CollectionMeta, DatabaseStore, RecordId};
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::filter::Filter;
use crate::query::geo::{GeometryRegion, merge_ranges};
use bson::RawDocumentBuf;
use s2::cap::Cap;
use s2::metric::AVG_EDGEMETRIC;
use s2::s1::{Angle, Rad};
use std::collections::HashSet;
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
fn subtract(ranges: &[(i64, i64)], done: &[(i64, i64)]) -> Vec<(i64, i64)> {
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
    let Some((path, near)) = filter.near() else {
        return Ok(Vec::new());
    };
    let index = sphere_index(coll, path)
        .filter(|_| near.spherical)
        .ok_or_else(|| no_geo_index(ns))?;
    let params = index
        .parsed
        .as_ref()
        .and_then(|spec| spec.sphere)
        .ok_or_else(|| no_geo_index(ns))?;
    let center = near.sphere_center().ok_or_else(|| no_geo_index(ns))?;
    let max = near.max_radians();
    // MongoDB's first step: five average cell edges at the finest indexed level.
    let mut radius = 5.0 * AVG_EDGEMETRIC.value(params.finest_level);
    let mut scanned: Vec<(i64, i64)> = Vec::new();
    let mut seen: HashSet<RecordId> = HashSet::new();
    let mut pending: Vec<NearMatch> = Vec::new();
    let mut out: Vec<NearMatch> = Vec::new();
    loop {
        let reach = radius.min(max);
        let cap = Cap::from_center_angle(&center, &Angle::from(Rad(reach)));
        let ranges = params.scan_ranges(&GeometryRegion::cap(cap));
        let fresh = subtract(&ranges, &scanned);
        scanned = merge_ranges(scanned.into_iter().chain(ranges).collect());
        if !fresh.is_empty() {
            let plan = IndexScanPlan {
                index: index.clone(),
                intervals: cell_intervals_of_ranges(&fresh),
                reverse: false,
                provides_sort: false,
                bounds: Vec::new(),
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
        }
        let last = reach >= max;
        // Whatever lies within the cap is final: anything nearer was in a cap already read.
        let limit = near.from_radians(reach);
        pending.sort_by(|a, b| a.distance.total_cmp(&b.distance));
        let ready = if last {
            pending.len()
        } else {
            pending.partition_point(|m| m.distance <= limit)
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
