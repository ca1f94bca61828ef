//! S2 cell coverings, what a `2dsphere` index stores and scans: a document's geometry becomes
//! the cells covering it (a point its leaf cell, from index version 3), a query's region the
//! cell ranges whose keys may lie in it, with MongoDB's index parameters.

use super::query::{GeoPredicate, Region as QueryRegion};
use super::shape::Geometry;
use super::sphere::{self, Loop, Part, Polygon};
use s2::cap::Cap;
use s2::cell::Cell;
use s2::cellid::CellID;
use s2::metric::AVG_EDGEMETRIC;
use s2::point::Point;
use s2::region::{Region, RegionCoverer};
use std::sync::Arc;

/// How a `2dsphere` index covers geometries (MongoDB's `S2IndexingParams`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SphereIndexParams {
    /// `2dsphereIndexVersion`: 3 indexes points at the leaf level.
    pub version: i32,
    pub finest_level: u8,
    pub coarsest_level: u8,
    pub max_cells: usize,
}

impl SphereIndexParams {
    /// MongoDB's defaults for `version`: from version 3 levels sized for buildings (110 m) to
    /// states (2000 km) and 20 cells, before it 500 m to 100 km and 50 cells.
    pub fn defaults(version: i32) -> SphereIndexParams {
        let level =
            |meters: f64| AVG_EDGEMETRIC.closest_level(meters / super::EARTH_RADIUS_METERS) as u8;
        if version >= 3 {
            SphereIndexParams {
                version,
                finest_level: level(110.0),
                coarsest_level: level(2000.0 * 1000.0),
                max_cells: 20,
            }
        } else {
            SphereIndexParams {
                version,
                finest_level: level(500.0),
                coarsest_level: level(100.0 * 1000.0),
                max_cells: 50,
            }
        }
    }

    fn coverer(&self) -> RegionCoverer {
        RegionCoverer {
            min_level: self.coarsest_level,
            max_level: self.finest_level,
            level_mod: 1,
            max_cells: self.max_cells,
        }
    }

    /// The cells a stored geometry is keyed by.
    pub fn index_cells(&self, geometry: &Geometry) -> Vec<CellID> {
        if self.version >= 3 {
            if let Geometry::Point { point, .. } = geometry {
                if let Some(p) = &point.sphere {
                    return vec![CellID::from(p)];
                }
            }
        }
        let covering = self
            .coverer()
            .covering(&GeometryRegion::new(geometry.clone()));
        covering.0
    }

    /// The inclusive ranges of cell ids (as the index stores them, signed) whose keys may
    /// lie in `region`: each covering cell's descendants, and its ancestors down to the
    /// coarsest indexed level (a stored cell that contains it). Sorted and merged.
    pub fn scan_ranges(&self, region: &GeometryRegion) -> Vec<(i64, i64)> {
        let covering = self.coverer().covering(region);
        let mut ranges = Vec::new();
        for cell in covering.0 {
            ranges.push((cell.range_min().0 as i64, cell.range_max().0 as i64));
            let mut level = cell.level();
            while level > u64::from(self.coarsest_level) {
                level -= 1;
                let parent = cell.parent(level);
                ranges.push((parent.0 as i64, parent.0 as i64));
            }
        }
        merge_ranges(ranges)
    }
}

/// Sorted, overlapping or adjacent ranges merged.
pub fn merge_ranges(mut ranges: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    ranges.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// A region on the sphere the coverer can approximate by cells: a geometry's parts, or a cap.
#[derive(Clone, Debug)]
pub struct GeometryRegion {
    shape: Shape,
    bound: Cap,
}

#[derive(Clone, Debug)]
enum Shape {
    Geometry(Arc<Geometry>),
    Cap(Cap),
}

impl GeometryRegion {
    pub fn new(geometry: Geometry) -> GeometryRegion {
        let bound = geometry
            .parts()
            .map(|parts| bounding_cap(&parts))
            .unwrap_or_else(Cap::full);
        GeometryRegion {
            shape: Shape::Geometry(Arc::new(geometry)),
            bound,
        }
    }

    /// The region a `$geoWithin`/`$geoIntersects` on the sphere names (`None` for the plane
    /// shapes, which a `2dsphere` index cannot answer).
    pub fn of_predicate(predicate: &GeoPredicate) -> Option<GeometryRegion> {
        match predicate {
            GeoPredicate::Intersects(g) => Some(GeometryRegion::new(g.clone())),
            GeoPredicate::Within(QueryRegion::CenterSphere(cap)) => {
                Some(GeometryRegion::cap(cap.clone()))
            }
            GeoPredicate::Within(QueryRegion::Polygons(polygons)) => Some(GeometryRegion::new(
                Geometry::Collection(polygons.iter().cloned().map(Geometry::Polygon).collect()),
            )),
            GeoPredicate::Within(_) => None,
        }
    }

    pub fn cap(cap: Cap) -> GeometryRegion {
        GeometryRegion {
            shape: Shape::Cap(cap.clone()),
            bound: cap,
        }
    }
}

/// A cap around every vertex: the centroid of the vertices and the farthest one (a polygon
/// smaller than a hemisphere lies in the hull of its vertices); the whole sphere past a
/// hemisphere.
fn bounding_cap(parts: &[Part<'_>]) -> Cap {
    let mut vertices: Vec<&Point> = Vec::new();
    for part in parts {
        match part {
            Part::Point(p) => vertices.push(p),
            Part::Line(l) => vertices.extend(l.iter()),
            Part::Polygon(poly) => vertices.extend(poly.shell().vertices().iter()),
        }
    }
    let mut sum = s2::r3::vector::Vector {
        x: 0.0,
        y: 0.0,
        z: 0.0,
    };
    for v in &vertices {
        sum = sum + v.0;
    }
    if sum.norm() < 1e-9 {
        return Cap::full();
    }
    let center = Point(sum.normalize());
    let radius = vertices
        .iter()
        .map(|v| center.distance(v).rad())
        .fold(0.0, f64::max);
    if radius >= std::f64::consts::FRAC_PI_2 {
        return Cap::full();
    }
    // A little slack for rounding in the distances.
    Cap::from_center_angle(&center, &s2::s1::Angle::from(s2::s1::Rad(radius + 1e-9)))
}

fn cell_polygon(cell: &Cell) -> Polygon {
    Polygon::new(vec![Loop::new(cell.vertices().to_vec())])
}

impl Region for GeometryRegion {
    fn cap_bound(&self) -> Cap {
        self.bound.clone()
    }

    fn contains_cell(&self, cell: &Cell) -> bool {
        match &self.shape {
            Shape::Cap(cap) => cap.contains_cell(cell),
            Shape::Geometry(g) => {
                let square = cell_polygon(cell);
                g.parts().is_some_and(|parts| {
                    parts.iter().any(|part| match part {
                        Part::Polygon(poly) => sphere::within_polygon(Part::Polygon(&square), poly),
                        _ => false,
                    })
                })
            }
        }
    }

    fn intersects_cell(&self, cell: &Cell) -> bool {
        match &self.shape {
            Shape::Cap(cap) => cap.intersects_cell(cell),
            Shape::Geometry(g) => {
                if !self.bound.intersects_cell(cell) {
                    return false;
                }
                let square = cell_polygon(cell);
                g.parts().is_some_and(|parts| {
                    parts
                        .iter()
                        .any(|part| sphere::intersects(*part, Part::Polygon(&square)))
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::bson;

    #[test]
    fn mongodb_default_levels() {
        let v3 = SphereIndexParams::defaults(3);
        assert_eq!(
            (v3.finest_level, v3.coarsest_level, v3.max_cells),
            (16, 2, 20)
        );
        let v2 = SphereIndexParams::defaults(2);
        assert_eq!(v2.max_cells, 50);
    }

    fn inside(ranges: &[(i64, i64)], cell: CellID) -> bool {
        let id = cell.0 as i64;
        ranges.iter().any(|(lo, hi)| *lo <= id && id <= *hi)
    }

    #[test]
    fn stored_cells_fall_in_the_ranges_of_regions_meeting_them() {
        let params = SphereIndexParams::defaults(3);
        let polygon = Geometry::from_stored(&bson!({"type": "Polygon",
            "coordinates": [[[0, 0], [2, 0], [2, 2], [0, 2], [0, 0]]]}))
        .unwrap();
        let point = Geometry::from_stored(&bson!([1.5, 1.5])).unwrap();
        let far = Geometry::from_stored(&bson!([50, 50])).unwrap();
        let query = GeometryRegion::new(
            Geometry::from_stored(&bson!({"type": "Polygon",
                "coordinates": [[[1, 1], [3, 1], [3, 3], [1, 3], [1, 1]]]}))
            .unwrap(),
        );
        let ranges = params.scan_ranges(&query);
        let cells = params.index_cells(&polygon);
        assert!(!cells.is_empty() && cells.len() <= 40);
        assert!(cells.iter().any(|c| inside(&ranges, *c)));
        assert!(
            params
                .index_cells(&point)
                .iter()
                .all(|c| inside(&ranges, *c))
        );
        assert!(!params.index_cells(&far).iter().any(|c| inside(&ranges, *c)));
    }
}
