//! Shapes on the sphere and their predicates, as MongoDB's S2 geometry answers them: loops
//! (normalized to enclose at most a hemisphere, as S2's `Normalize`), polygons with holes,
//! point containment by crossing parity from a reference point, and containment, intersection
//! and distance between points, polylines and polygons built on the `s2` crate's exact
//! edge-crossing predicates.

use s2::edge_crossings::{Crossing, EdgeCrosser, crossing_sign};
use s2::edgeutil::distance_from_segment;
use s2::point::{Point, ordered_ccw, point_area};
use s2::predicates::{Direction, robust_sign};

/// Below this angle (radians, about 0.6 mm on the earth) a point lies on an edge or on another
/// point: coordinates that were equal in degrees come out of the unit-sphere conversion equal
/// only within rounding.
const TOUCH_RADIANS: f64 = 1e-13;

/// A closed ring of distinct vertices (the closing vertex dropped) enclosing at most half the
/// sphere, its interior on the left (counterclockwise).
#[derive(Clone, Debug)]
pub struct Loop {
    vertices: Vec<Point>,
    /// Whether `Point::origin()` lies inside, the start of every crossing-parity test.
    origin_inside: bool,
}

impl Loop {
    /// A loop of at least 3 distinct vertices, turned around when it encloses more than a
    /// hemisphere in the order given (MongoDB's polygons are the smaller side of their rings).
    pub fn new(mut vertices: Vec<Point>) -> Loop {
        if signed_area(&vertices) < 0.0 {
            vertices.reverse();
        }
        let mut l = Loop {
            vertices,
            origin_inside: false,
        };
        // The parity test with the origin assumed outside, checked at vertex 1 against where
        // the interior lies locally (left of the two edges meeting there).
        let v = &l.vertices;
        let v1_inside = ordered_ccw(&v[1].ortho(), &v[0], &v[2], &v[1]);
        if v1_inside != l.contains(&v[1]) {
            l.origin_inside = true;
        }
        l
    }

    pub fn vertices(&self) -> &[Point] {
        &self.vertices
    }

    /// Whether `p` lies inside (semi-open boundary, as S2's loops).
    pub fn contains(&self, p: &Point) -> bool {
        let v = &self.vertices;
        let mut inside = self.origin_inside;
        let mut crosser = EdgeCrosser::new_with_c(&Point::origin(), p, &v[0]);
        for i in 1..=v.len() {
            inside ^= crosser.chain_edge_or_vertex_crossing(&v[i % v.len()]);
        }
        inside
    }

    pub fn edges(&self) -> impl Iterator<Item = (&Point, &Point)> {
        let v = &self.vertices;
        (0..v.len()).map(move |i| (&v[i], &v[(i + 1) % v.len()]))
    }

    /// Whether an edge of this loop properly crosses an edge of `other`.
    pub fn crossing_edges_with(&self, other: &Loop) -> bool {
        self.edges().any(|(a, b)| {
            let mut crosser = EdgeCrosser::new(a, b);
            other
                .edges()
                .any(|(c, d)| crosser.crossing_sign(c, d) == Crossing::Cross)
        })
    }

    /// The first pair of edges that cross, if any: S2's "Edges i and j cross".
    pub fn crossing_edges(&self) -> Option<(usize, usize)> {
        let n = self.vertices.len();
        let v = &self.vertices;
        for i in 0..n {
            for j in i + 2..n {
                if i == 0 && j == n - 1 {
                    continue; // adjacent through the closing edge
                }
                if crossing_sign(&v[i], &v[(i + 1) % n], &v[j], &v[(j + 1) % n]) == Crossing::Cross
                {
                    return Some((i, j));
                }
            }
        }
        None
    }
}

/// Signed area of a ring by a triangle fan from its first vertex: positive when the smaller
/// side lies on the left of the ring as given.
fn signed_area(v: &[Point]) -> f64 {
    let mut area = 0.0;
    for i in 1..v.len().saturating_sub(1) {
        let a = point_area(&v[0], &v[i], &v[i + 1]);
        area += match robust_sign(&v[0], &v[i], &v[i + 1]) {
            Direction::CounterClockwise => a,
            Direction::Clockwise => -a,
            Direction::Indeterminate => 0.0,
        };
    }
    area
}

/// A polygon: its shell, then its holes.
#[derive(Clone, Debug)]
pub struct Polygon {
    loops: Vec<Loop>,
}

impl Polygon {
    pub fn new(loops: Vec<Loop>) -> Polygon {
        Polygon { loops }
    }

    pub fn shell(&self) -> &Loop {
        &self.loops[0]
    }

    pub fn holes(&self) -> &[Loop] {
        &self.loops[1..]
    }

    pub fn contains(&self, p: &Point) -> bool {
        self.shell().contains(p) && !self.holes().iter().any(|h| h.contains(p))
    }

    pub fn edges(&self) -> impl Iterator<Item = (&Point, &Point)> {
        self.loops.iter().flat_map(Loop::edges)
    }

    /// Every vertex of every loop.
    pub fn vertices(&self) -> impl Iterator<Item = &Point> {
        self.loops.iter().flat_map(|l| l.vertices.iter())
    }
}

/// One simple piece of a geometry: what the predicates compare pairwise.
#[derive(Clone, Copy, Debug)]
pub enum Part<'a> {
    Point(&'a Point),
    Line(&'a [Point]),
    Polygon(&'a Polygon),
}

fn line_edges(line: &[Point]) -> impl Iterator<Item = (&Point, &Point)> {
    line.windows(2).map(|w| (&w[0], &w[1]))
}

impl<'a> Part<'a> {
    fn edges(self) -> Box<dyn Iterator<Item = (&'a Point, &'a Point)> + 'a> {
        match self {
            Part::Point(_) => Box::new(std::iter::empty()),
            Part::Line(l) => Box::new(line_edges(l)),
            Part::Polygon(p) => Box::new(p.edges()),
        }
    }

    /// The vertices that must lie inside a region for the part to lie inside it.
    fn outline(self) -> Box<dyn Iterator<Item = &'a Point> + 'a> {
        match self {
            Part::Point(p) => Box::new(std::iter::once(p)),
            Part::Line(l) => Box::new(l.iter()),
            Part::Polygon(p) => Box::new(p.shell().vertices.iter()),
        }
    }

    /// Distance in radians from `p` to the part (0 inside a polygon).
    pub fn distance_from(self, p: &Point) -> f64 {
        match self {
            Part::Point(q) => p.distance(q).rad(),
            Part::Line(_) | Part::Polygon(_) => {
                if let Part::Polygon(poly) = self {
                    if poly.contains(p) {
                        return 0.0;
                    }
                }
                self.edges()
                    .map(|(a, b)| distance_from_segment(p, a, b).rad())
                    .fold(f64::INFINITY, f64::min)
            }
        }
    }
}

fn on_edges<'a>(p: &Point, mut edges: impl Iterator<Item = (&'a Point, &'a Point)>) -> bool {
    edges.any(|(a, b)| distance_from_segment(p, a, b).rad() <= TOUCH_RADIANS)
}

/// Whether some edge of `a` and some edge of `b` give a crossing `hit` accepts.
fn edges_find(a: Part<'_>, b: Part<'_>, hit: fn(Crossing) -> bool) -> bool {
    let others: Vec<(&Point, &Point)> = b.edges().collect();
    a.edges().any(|(a0, a1)| {
        let mut crosser = EdgeCrosser::new(a0, a1);
        others
            .iter()
            .any(|(b0, b1)| hit(crosser.crossing_sign(b0, b1)))
    })
}

/// Whether two edge sets meet: cross, or share or touch a vertex.
fn edges_meet(a: Part<'_>, b: Part<'_>) -> bool {
    edges_find(a, b, |c| c != Crossing::DoNotCross)
}

/// Whether edges of `a` properly cross edges of `b` (touching does not count).
fn edges_cross(a: Part<'_>, b: Part<'_>) -> bool {
    edges_find(a, b, |c| c == Crossing::Cross)
}

/// Whether two parts share at least one point (boundaries included).
pub fn intersects(a: Part<'_>, b: Part<'_>) -> bool {
    match (a, b) {
        (Part::Point(p), Part::Point(q)) => p.distance(q).rad() <= TOUCH_RADIANS,
        (Part::Point(p), other) | (other, Part::Point(p)) => {
            matches!(other, Part::Polygon(poly) if poly.contains(p)) || on_edges(p, other.edges())
        }
        (Part::Line(l), Part::Polygon(poly)) | (Part::Polygon(poly), Part::Line(l)) => {
            l.iter().any(|v| poly.contains(v)) || edges_meet(Part::Line(l), Part::Polygon(poly))
        }
        (Part::Line(_), Part::Line(_)) => edges_meet(a, b),
        (Part::Polygon(x), Part::Polygon(y)) => {
            x.shell().vertices.iter().any(|v| y.contains(v))
                || y.shell().vertices.iter().any(|v| x.contains(v))
                || edges_meet(a, b)
        }
    }
}

/// Whether the part lies inside the polygon `region`.
pub fn within_polygon(part: Part<'_>, region: &Polygon) -> bool {
    if !part.outline().all(|v| region.contains(v)) {
        return false;
    }
    match part {
        Part::Point(_) => true,
        Part::Line(_) => !edges_cross(part, Part::Polygon(region)),
        Part::Polygon(poly) => {
            !edges_cross(part, Part::Polygon(region))
                // A hole of the region inside the part leaves part of the part outside.
                && !region
                    .holes()
                    .iter()
                    .any(|h| poly.contains(&h.vertices[0]))
        }
    }
}

/// Whether the part lies inside the cap (a cap of at most a hemisphere is convex, so its
/// outline's vertices decide).
pub fn within_cap(part: Part<'_>, cap: &s2::cap::Cap) -> bool {
    part.outline().all(|v| cap.contains_point(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use s2::latlng::LatLng;

    fn pt(lng: f64, lat: f64) -> Point {
        Point::from(LatLng::from_degrees(lat, lng))
    }

    fn square(lo: f64, hi: f64, clockwise: bool) -> Loop {
        let mut v = vec![pt(lo, lo), pt(hi, lo), pt(hi, hi), pt(lo, hi)];
        if clockwise {
            v.reverse();
        }
        Loop::new(v)
    }

    #[test]
    fn loops_contain_their_smaller_side_in_either_orientation() {
        for clockwise in [false, true] {
            let l = square(0.0, 10.0, clockwise);
            assert!(l.contains(&pt(5.0, 5.0)));
            assert!(!l.contains(&pt(20.0, 5.0)));
            assert!(!l.contains(&pt(-170.0, -5.0)));
        }
    }

    #[test]
    fn holes_are_outside() {
        let poly = Polygon::new(vec![square(0.0, 10.0, false), square(4.0, 6.0, false)]);
        assert!(poly.contains(&pt(2.0, 2.0)));
        assert!(!poly.contains(&pt(5.0, 5.0)));
    }

    #[test]
    fn crossing_edges_are_found() {
        let bowtie = Loop::new(vec![
            pt(0.0, 0.0),
            pt(10.0, 10.0),
            pt(10.0, 0.0),
            pt(0.0, 10.0),
        ]);
        assert!(bowtie.crossing_edges().is_some());
        assert!(square(0.0, 10.0, false).crossing_edges().is_none());
    }

    #[test]
    fn intersection_and_containment() {
        let region = Polygon::new(vec![square(0.0, 10.0, false)]);
        let inside = [pt(1.0, 1.0), pt(2.0, 2.0)];
        let across = [pt(5.0, 5.0), pt(20.0, 5.0)];
        let outside = [pt(20.0, 20.0), pt(30.0, 20.0)];
        assert!(within_polygon(Part::Line(&inside), &region));
        assert!(!within_polygon(Part::Line(&across), &region));
        assert!(intersects(Part::Line(&across), Part::Polygon(&region)));
        assert!(!intersects(Part::Line(&outside), Part::Polygon(&region)));
        let corner = pt(10.0, 10.0);
        assert!(intersects(Part::Point(&corner), Part::Polygon(&region)));
        let big = Polygon::new(vec![square(-20.0, 20.0, false)]);
        assert!(intersects(Part::Polygon(&big), Part::Polygon(&region)));
        assert!(within_polygon(Part::Polygon(&region), &big));
        assert!(!within_polygon(Part::Polygon(&big), &region));
    }
}
