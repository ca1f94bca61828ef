//! `$near` on a `2dsphere` index: each cap of the growing search reads the index's keys of
//! the cells it adds, and a document is read only when no unread one can be nearer. A key's
//! cell bounds its document's distance from below, so a query wanting ten documents reads
//! about ten, not every document of the cells around them (each a SQLite join and a BSON
//! parse).

use super::geo_plan::cell_intervals_of_ranges;
use super::near::{NearMatch, subtract};
use super::position::Examined;
use crate::catalog::OwnershipFilter;
use crate::datanode::storage::{
    CollectionMeta, DocumentReads, IndexMeta, IndexRange, IndexRanges, RANGES_PER_STATEMENT,
    ReadTxn, RecordId,
};
use crate::document::key_decode::{KeyValue, decode_key};
use crate::error::Result;
use crate::query::filter::Filter;
use crate::query::geo::{GeometryRegion, NearQuery, SphereIndexParams, merge_ranges};
use bson::Bson;
use s2::cap::Cap;
use s2::cellid::CellID;
use s2::metric::{AVG_EDGEMETRIC, MAX_DIAGMETRIC};
use s2::point::Point;
use s2::s1::{Angle, Rad};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Where a sphere search looks: the index, its parameters and the query's center.
pub(super) struct SphereSearch<'a> {
    pub index: &'a IndexMeta,
    pub params: SphereIndexParams,
    pub center: Point,
}

/// The documents matching `filter` in distance order from a first cap of `radius` radians,
/// doubled until `want` are certain (`None`: all within `$maxDistance`).
#[allow(clippy::too_many_arguments)]
pub(super) async fn sphere_matches(
    read: &mut ReadTxn,
    coll: &CollectionMeta,
    filter: &Filter,
    near: &NearQuery,
    search: &SphereSearch<'_>,
    mut radius: f64,
    ownership: Option<Arc<OwnershipFilter>>,
    want: Option<usize>,
    examined: &mut Examined,
) -> Result<Vec<NearMatch>> {
    let max = near.max_radians();
    let mut scanned: Vec<(i64, i64)> = Vec::new();
    // Documents with a key read but not themselves: the least distance their cells allow.
    let mut unread: HashMap<RecordId, f64> = HashMap::new();
    let mut read_docs: HashSet<RecordId> = HashSet::new();
    // Matches read, in distance order, not yet known to be the nearest left.
    let mut pending: Vec<NearMatch> = Vec::new();
    let mut out: Vec<NearMatch> = Vec::new();
    loop {
        let reach = radius.min(max);
        let cap = Cap::from_center_angle(&search.center, &Angle::from(Rad(reach)));
        let ranges = search.params.scan_ranges(&GeometryRegion::cap(cap));
        let fresh = subtract(&ranges, &scanned);
        scanned = merge_ranges(scanned.into_iter().chain(ranges).collect());
        let intervals = cell_intervals_of_ranges(&fresh);
        for batch in intervals.chunks(RANGES_PER_STATEMENT) {
            let ranges = IndexRanges {
                index: search.index,
                ranges: batch
                    .iter()
                    .map(|i| (&i.low[..], i.high.as_deref()))
                    .collect(),
                reverse: false,
                limit: i64::MAX,
            };
            let keys = read.index_keys_ranges(&ranges).await?;
            examined.keys += keys.len() as u64;
            for (key, rid, types) in keys {
                if read_docs.contains(&rid) {
                    continue;
                }
                let (least, _) = cell_bounds(&search.center, &key, types.as_deref());
                let bound = near.from_radians(least);
                let least = unread.entry(rid).or_insert(bound);
                *least = least.min(bound);
            }
        }
        // Every document within the reach has a key read by now (the caps so far cover it),
        // so one whose cells allow no more than the reach may be among the nearest. In the
        // last round every document keyed may be: the filter then judges `$maxDistance`.
        let last = reach >= max;
        let limit = if last {
            f64::INFINITY
        } else {
            near.from_radians(reach)
        };
        let mut due: Vec<(f64, RecordId)> = unread
            .iter()
            .filter(|(_, least)| **least <= limit)
            .map(|(rid, least)| (*least, *rid))
            .collect();
        due.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut due = due.into_iter().peekable();
        loop {
            // A match no unread document can beat, and within the reach, is final.
            let horizon = due.peek().map_or(limit, |(least, _)| least.min(limit));
            let ready = pending.partition_point(|m| m.distance <= horizon);
            out.extend(pending.drain(..ready));
            if let Some(w) = want.filter(|w| out.len() >= *w) {
                out.truncate(w);
                return Ok(out);
            }
            let Some((_, rid)) = due.next() else { break };
            unread.remove(&rid);
            read_docs.insert(rid);
            // Deleted since its key was read: no longer a match.
            let Some(raw) = read.fetch_by_rid(coll, rid).await? else {
                continue;
            };
            examined.docs += 1;
            let doc = raw.to_document()?;
            if !filter.try_matches(&doc)? {
                continue;
            }
            if !ownership.as_ref().is_none_or(|o| o.owns(&doc)) {
                examined.chunk_skips += 1;
                continue;
            }
            if let Some(distance) = filter.near_distance(&doc) {
                let at = pending.partition_point(|m| m.distance <= distance);
                pending.insert(
                    at,
                    NearMatch {
                        rid,
                        raw,
                        doc,
                        distance,
                    },
                );
            }
        }
        if last {
            out.append(&mut pending);
            if let Some(w) = want {
                out.truncate(w);
            }
            return Ok(out);
        }
        radius *= 2.0;
    }
}

/// The first cap's radius, in radians, from the keys on either side of the center's leaf
/// cell in the index's order (cells near each other on the Hilbert curve lie near each
/// other). The cap reaching the `want`-th of their documents (at most [`NEIGHBOURS`]) holds
/// `want` documents, so a search whose filter keeps them ends after one round. But the curve
/// jumps at the edges of large cells, and where the documents lie in far clusters those keys
/// may be far too: the cap is then at most twice MongoDB's density estimate, three cell edges
/// at the finest level whose cell around the center holds a key (the level the nearest key on
/// either side shares with the center). At least `least`.
pub(super) async fn start_radius(
    read: &mut ReadTxn,
    search: &SphereSearch<'_>,
    want: Option<usize>,
    least: f64,
) -> Result<f64> {
    let want = want.unwrap_or(NEIGHBOURS).clamp(1, NEIGHBOURS);
    let leaf = CellID::from(&search.center);
    let [after] = &cell_intervals_of_ranges(&[(leaf.0 as i64, leaf.0 as i64)])[..] else {
        return Ok(least);
    };
    // Up to `want` keys from the leaf on, and up to `want` before it.
    let sides = [
        (&after.low[..], None, false),
        (&[][..], Some(&after.low[..]), true),
    ];
    let mut farthest: HashMap<RecordId, f64> = HashMap::new();
    let mut density_level = None;
    for (low, high, reverse) in sides {
        let range = IndexRange {
            index: search.index,
            low,
            high,
            resume: None,
            reverse,
            limit: want as i64,
        };
        let keys = read.index_keys(&range).await?;
        if let Some(cell) = keys
            .first()
            .and_then(|(key, _, types)| key_cell(key, types.as_deref()))
        {
            let level = leaf.common_ancestor_level(&cell).unwrap_or(0);
            density_level = density_level.max(Some(level));
        }
        for (key, rid, types) in keys {
            let (_, most) = cell_bounds(&search.center, &key, types.as_deref());
            let at = farthest.entry(rid).or_insert(most);
            *at = at.min(most);
        }
    }
    let Some(level) = density_level else {
        return Ok(least);
    };
    let estimate = (3.0 * AVG_EDGEMETRIC.value(level as u8)).max(least);
    let mut reach: Vec<f64> = farthest.into_values().collect();
    reach.sort_by(f64::total_cmp);
    // Fewer documents than wanted (a small index, or documents of many cells): a cap holding
    // those found, which the search widens if need be.
    let neighbours = reach.get(want - 1).or(reach.last()).copied();
    Ok(neighbours
        .map_or(estimate, |r| r.min(2.0 * estimate))
        .max(least))
}

/// How many documents the first cap is sized to reach at most.
const NEIGHBOURS: usize = 100;

/// The cell a key of a `2dsphere` index names (its first component), if it is one.
fn key_cell(key: &[u8], types: Option<&[u8]>) -> Option<CellID> {
    match decode_key(key, &[false], types).as_deref() {
        Some([KeyValue::Value(Bson::Int64(id))]) => {
            Some(CellID(*id as u64)).filter(CellID::is_valid)
        }
        _ => None,
    }
}

/// The least and greatest angle, in radians, between `center` and a point of the cell a key
/// of a `2dsphere` index names (its first component): the distance to the cell's center
/// point less and plus the cell's diameter, which no cell of its level exceeds. `(0, π)`
/// when the key does not read back as a cell, so that its document is read in any case.
fn cell_bounds(center: &Point, key: &[u8], types: Option<&[u8]>) -> (f64, f64) {
    let Some(cell) = key_cell(key, types) else {
        return (0.0, std::f64::consts::PI);
    };
    // A few ulps for the rounding of the center point and the distance.
    let diameter = MAX_DIAGMETRIC.value(cell.level() as u8) + 1e-12;
    let to_center = center.distance(&Point::from(cell)).rad();
    ((to_center - diameter).max(0.0), to_center + diameter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::keystring::encode_one;
    use crate::document::type_bits::TypeBits;
    use s2::latlng::LatLng;

    #[test]
    fn a_cell_bounds_the_distance_of_what_lies_in_it() {
        let center = Point::from(LatLng::from_degrees(48.0, 2.0));
        let types = TypeBits::of_component(&Bson::Int64(0), false).into_bytes();
        for (lat, lng) in [(48.0, 2.0), (48.01, 2.02), (40.0, -3.0), (-33.0, 151.0)] {
            let at = Point::from(LatLng::from_degrees(lat, lng));
            let exact = center.distance(&at).rad();
            for level in [30u64, 23, 16, 8, 2, 0] {
                let cell = CellID::from(&at).parent(level);
                let key = encode_one(&Bson::Int64(cell.0 as i64));
                let (least, most) = cell_bounds(&center, &key, Some(&types));
                assert!(least <= exact, "level {level}: {least} > {exact}");
                assert!(most >= exact, "level {level}: {most} < {exact}");
            }
            // A leaf cell pins the distance to within centimetres.
            let key = encode_one(&Bson::Int64(CellID::from(&at).0 as i64));
            let (least, most) = cell_bounds(&center, &key, Some(&types));
            assert!(most - least < 1e-8, "{least}..{most}");
        }
        // Without type bits the key is no cell: any distance, read in any case.
        let key = encode_one(&Bson::Int64(CellID::from(&center).0 as i64));
        assert_eq!(
            cell_bounds(&center, &key, None),
            (0.0, std::f64::consts::PI)
        );
    }

    /// Random points (some in tight clusters) and a few lines and polygons: every `$near`
    /// returns what ordering all matching documents by their distance returns.
    #[tokio::test]
    async fn the_search_returns_the_nearest_in_order() {
        use crate::datanode::storage::Storage;
        use bson::{doc, rawdoc};
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
        let db = storage.database_or_create("app").await.unwrap();
        let coll = db.ensure_collection("c").await.unwrap();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut unit = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut docs = Vec::new();
        for i in 0..600 {
            let (lng, lat) = if i % 3 == 0 {
                // A cluster around (2, 48), a few hundred meters wide.
                (2.0 + 0.01 * unit(), 48.0 + 0.01 * unit())
            } else {
                (
                    -180.0 + 360.0 * unit(),
                    (2.0 * unit() - 1.0).asin().to_degrees(),
                )
            };
            docs.push(
                rawdoc! {"_id": i, "k": i % 4, "loc": {"type": "Point", "coordinates": [lng, lat]}},
            );
        }
        docs.push(rawdoc! {"_id": 1000, "k": 0, "loc": {"type": "LineString", "coordinates": [[1.0, 47.0], [3.0, 49.0]]}});
        docs.push(rawdoc! {"_id": 1001, "k": 1, "loc": {"type": "Polygon", "coordinates": [[[10.0, 10.0], [20.0, 10.0], [20.0, 20.0], [10.0, 20.0], [10.0, 10.0]]]}});
        let refs: Vec<_> = docs.iter().map(|d| d.as_ref()).collect();
        let mut txn = db.write().await.unwrap();
        txn.insert(&coll, &refs).await.unwrap();
        txn.commit().await.unwrap();
        let spec = crate::datanode::index::IndexSpec::parse(&doc! {"key": {"loc": "2dsphere"}});
        db.create_index("c", spec.unwrap()).await.unwrap();
        let coll = db.collection("c").unwrap();
        let all: Vec<bson::Document> = docs.iter().map(|d| d.to_document().unwrap()).collect();
        for round in 0..40 {
            let center = if round % 2 == 0 {
                [2.0 + 0.02 * unit() - 0.005, 48.0 + 0.02 * unit() - 0.005]
            } else {
                [-180.0 + 360.0 * unit(), 170.0 * unit() - 85.0]
            };
            let mut near =
                doc! {"$geometry": {"type": "Point", "coordinates": [center[0], center[1]]}};
            if round % 5 == 1 {
                near.insert("$maxDistance", 3_000_000.0 * unit());
            }
            if round % 7 == 3 {
                near.insert("$minDistance", 1_000.0 * unit());
            }
            let mut filter = doc! {"loc": {"$near": near}};
            if round % 3 == 2 {
                filter.insert("k", doc! {"$ne": 1});
            }
            let filter = Filter::parse(&filter).unwrap();
            let want = [Some(1), Some(10), Some(37), None][round % 4];
            let mut expected: Vec<(f64, i32)> = all
                .iter()
                .filter(|d| filter.try_matches(d).unwrap())
                .filter_map(|d| Some((filter.near_distance(d)?, d.get_i32("_id").unwrap())))
                .collect();
            expected.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            if let Some(w) = want {
                expected.truncate(w);
            }
            let got = super::super::near::near_matches(&db, &coll, &filter, None, want, "app.c")
                .await
                .unwrap();
            let got: Vec<(f64, i32)> = got
                .iter()
                .map(|m| (m.distance, m.doc.get_i32("_id").unwrap()))
                .collect();
            let distances = |v: &[(f64, i32)]| v.iter().map(|p| p.0).collect::<Vec<_>>();
            assert_eq!(
                distances(&got),
                distances(&expected),
                "round {round}: {got:?} vs {expected:?}"
            );
        }
    }
}
