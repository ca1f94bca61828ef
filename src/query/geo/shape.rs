//! Geometries as documents hold them and `$geometry` names them: GeoJSON objects (Point,
//! LineString, Polygon with holes, the Multi* types, GeometryCollection) and legacy coordinate
//! pairs (`[x, y]`, `{x: .., y: ..}`), parsed and validated with MongoDB's messages (BadValue;
//! a 2dsphere index wraps them in 16755 "Can't extract geo keys").

use super::sphere::{Loop, Part, Polygon};
use crate::document::display::{render, render_doc};
use crate::error::{MongoError, Result};
use crate::query::values::not_implemented;
use bson::{Bson, Document};
use s2::latlng::LatLng;
use s2::point::Point;

/// The CRS MongoDB's "big polygons" name (polygons larger than a hemisphere, strict winding).
const STRICT_WINDING_CRS: &str = "urn:x-mongodb:crs:strictwinding:EPSG:4326";

/// A point as given (x: longitude, y: latitude) and, when those are a valid longitude and
/// latitude, its place on the sphere (a legacy pair may lie anywhere on the plane).
#[derive(Clone, Copy, Debug)]
pub struct GeoPoint {
    pub x: f64,
    pub y: f64,
    pub sphere: Option<Point>,
}

impl GeoPoint {
    pub fn new(x: f64, y: f64) -> GeoPoint {
        let valid = (-180.0..=180.0).contains(&x) && (-90.0..=90.0).contains(&y);
        GeoPoint {
            x,
            y,
            sphere: valid.then(|| Point::from(LatLng::from_degrees(y, x))),
        }
    }

    /// The point on the sphere, or MongoDB's error for coordinates off it.
    pub fn on_sphere(&self) -> Result<Point> {
        self.sphere.ok_or_else(|| {
            MongoError::bad_value(format!(
                "longitude/latitude is out of bounds, lng: {} lat: {}",
                self.x, self.y
            ))
        })
    }
}

/// A parsed geometry.
#[derive(Clone, Debug)]
pub enum Geometry {
    /// A GeoJSON Point or a legacy pair (`legacy`), the only geometry flat shapes match.
    Point {
        point: GeoPoint,
        legacy: bool,
    },
    LineString(Vec<Point>),
    Polygon(Polygon),
    /// MultiPoint, MultiLineString, MultiPolygon and GeometryCollection: their members.
    Collection(Vec<Geometry>),
}

/// A number as a double (`None` for another type).
pub fn number(v: &Bson) -> Option<f64> {
    match v {
        Bson::Double(d) => Some(*d),
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Decimal128(_) => crate::document::numeric::Number::from_bson(v).map(|n| n.to_f64()),
        _ => None,
    }
}

/// MongoDB's `parseFlatPoint`: the first two elements of an array or object, numbers; more
/// only where `extra` allows them (stored legacy points may carry a third value).
pub fn parse_flat_point(value: &Bson, extra: bool) -> Result<GeoPoint> {
    let values: Vec<&Bson> = match value {
        Bson::Array(items) => items.iter().collect(),
        Bson::Document(d) => d.values().collect(),
        _ => return Err(MongoError::bad_value("Point must be an array or object")),
    };
    let (Some(x), Some(y)) = (
        values.first().copied().and_then(number),
        values.get(1).copied().and_then(number),
    ) else {
        return Err(MongoError::bad_value(
            "Point must only contain numeric elements",
        ));
    };
    if !extra && values.len() > 2 {
        return Err(MongoError::bad_value(
            "Point must only contain two numeric elements",
        ));
    }
    Ok(GeoPoint::new(x, y))
}

fn coordinate(value: &Bson) -> Result<Point> {
    if !matches!(value, Bson::Array(_)) {
        return Err(MongoError::bad_value(
            "GeoJSON coordinates must be an array",
        ));
    }
    parse_flat_point(value, false)?.on_sphere()
}

fn array<'a>(value: &'a Bson, what: &str) -> Result<&'a Vec<Bson>> {
    match value {
        Bson::Array(items) => Ok(items),
        _ => Err(MongoError::bad_value(format!("{what} must be an array"))),
    }
}

/// Coordinates with consecutive duplicates dropped (S2 chains may not repeat a vertex).
fn points(values: &[Bson]) -> Result<Vec<Point>> {
    let mut out: Vec<Point> = Vec::with_capacity(values.len());
    for v in values {
        let p = coordinate(v)?;
        if out.last() != Some(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

fn parse_line(value: &Bson) -> Result<Vec<Point>> {
    let coords = array(value, "GeoJSON coordinates")?;
    let line = points(coords)?;
    if line.len() < 2 {
        return Err(MongoError::bad_value(format!(
            "GeoJSON LineString must have at least 2 vertices: {}",
            render(value)
        )));
    }
    Ok(line)
}

fn parse_loop(ring: &Bson) -> Result<Loop> {
    let coords = array(ring, "Polygon loop")?;
    let mut vertices = points(coords)?;
    let shown = render(ring);
    if coords.len() < 4 {
        return Err(MongoError::bad_value(format!(
            "Loop must have at least 3 different vertices: {shown}"
        )));
    }
    if vertices.first() != vertices.last() {
        return Err(MongoError::bad_value(format!(
            "Loop is not closed, first vertex does not equal last vertex: {shown}"
        )));
    }
    vertices.pop();
    if vertices.len() < 3 {
        return Err(MongoError::bad_value(format!(
            "Loop must have at least 3 different vertices: {shown}"
        )));
    }
    for i in 0..vertices.len() {
        for j in i + 1..vertices.len() {
            if vertices[i] == vertices[j] {
                return Err(MongoError::bad_value(format!(
                    "Loop is not valid: {shown} Duplicate vertices: {i} and {j}"
                )));
            }
        }
    }
    let l = Loop::new(vertices);
    if let Some((i, j)) = l.crossing_edges() {
        return Err(MongoError::bad_value(format!(
            "Loop is not valid: {shown} Edges {i} and {j} cross"
        )));
    }
    Ok(l)
}

fn parse_polygon(value: &Bson) -> Result<Polygon> {
    let rings = array(value, "Polygon coordinates")?;
    if rings.is_empty() {
        return Err(MongoError::bad_value(format!(
            "Polygon has no loops. {}",
            render(value)
        )));
    }
    let mut loops = Vec::with_capacity(rings.len());
    for ring in rings {
        loops.push(parse_loop(ring)?);
    }
    let shell = Polygon::new(vec![loops[0].clone()]);
    for hole in &loops[1..] {
        let inside = hole.vertices().iter().all(|v| shell.contains(v));
        if !inside || hole.crossing_edges_with(&loops[0]) {
            return Err(MongoError::bad_value(format!(
                "Secondary loops not contained by first exterior loop - secondary loops must be holes: {}",
                render(value)
            )));
        }
    }
    Ok(Polygon::new(loops))
}

fn non_empty<'a>(value: &'a Bson, kind: &str) -> Result<&'a Vec<Bson>> {
    let items = array(value, "GeoJSON coordinates")?;
    if items.is_empty() {
        return Err(MongoError::bad_value(format!(
            "{kind} coordinates must have at least 1 element"
        )));
    }
    Ok(items)
}

/// A GeoJSON type name MongoDB knows.
pub fn is_geojson_type(name: &str) -> bool {
    matches!(
        name,
        "Point"
            | "LineString"
            | "Polygon"
            | "MultiPoint"
            | "MultiLineString"
            | "MultiPolygon"
            | "GeometryCollection"
    )
}

impl Geometry {
    /// A GeoJSON object, and its type name.
    pub fn from_geojson(obj: &Document) -> Result<(Geometry, &str)> {
        let kind = match obj.get("type") {
            Some(Bson::String(kind)) if is_geojson_type(kind) => kind.as_str(),
            _ => {
                return Err(MongoError::bad_value(format!(
                    "unknown GeoJSON type: {}",
                    render_doc(obj)
                )));
            }
        };
        if let Some(crs) = obj.get("crs") {
            let name = match crs {
                Bson::Document(c) => c
                    .get_document("properties")
                    .ok()
                    .and_then(|p| p.get_str("name").ok()),
                _ => None,
            };
            match name {
                Some(STRICT_WINDING_CRS) => {
                    return Err(not_implemented(
                        "big polygons (the strict-winding CRS) are not supported",
                    ));
                }
                Some("EPSG:4326" | "urn:ogc:def:crs:OGC:1.3:CRS84") => {}
                _ => {
                    return Err(MongoError::bad_value(format!(
                        "Unknown CRS name: {}",
                        render(crs)
                    )));
                }
            }
        }
        if kind == "GeometryCollection" {
            let members = match obj.get("geometries") {
                Some(Bson::Array(items)) => items,
                _ => {
                    return Err(MongoError::bad_value(
                        "GeometryCollection geometries must be an array",
                    ));
                }
            };
            if members.is_empty() {
                return Err(MongoError::bad_value(
                    "GeometryCollection geometries must have at least 1 element",
                ));
            }
            let mut out = Vec::with_capacity(members.len());
            for member in members {
                let Bson::Document(m) = member else {
                    return Err(MongoError::bad_value(
                        "Element in GeometryCollection must be an object",
                    ));
                };
                let (geometry, member_kind) = Geometry::from_geojson(m)?;
                if member_kind == "GeometryCollection" {
                    return Err(MongoError::bad_value(
                        "GeometryCollections cannot be nested",
                    ));
                }
                out.push(geometry);
            }
            return Ok((Geometry::Collection(out), kind));
        }
        let coords = obj.get("coordinates").unwrap_or(&Bson::Null);
        let geometry = match kind {
            "Point" => {
                let p = parse_flat_point(
                    match coords {
                        Bson::Array(_) => coords,
                        _ => {
                            return Err(MongoError::bad_value(
                                "GeoJSON coordinates must be an array",
                            ));
                        }
                    },
                    false,
                )?;
                p.on_sphere()?;
                Geometry::Point {
                    point: p,
                    legacy: false,
                }
            }
            "LineString" => Geometry::LineString(parse_line(coords)?),
            "Polygon" => Geometry::Polygon(parse_polygon(coords)?),
            "MultiPoint" => Geometry::Collection(
                non_empty(coords, "MultiPoint")?
                    .iter()
                    .map(|c| {
                        let p = parse_flat_point(c, false)?;
                        p.on_sphere()?;
                        Ok(Geometry::Point {
                            point: p,
                            legacy: false,
                        })
                    })
                    .collect::<Result<_>>()?,
            ),
            "MultiLineString" => Geometry::Collection(
                non_empty(coords, "MultiLineString")?
                    .iter()
                    .map(|c| parse_line(c).map(Geometry::LineString))
                    .collect::<Result<_>>()?,
            ),
            _ => Geometry::Collection(
                non_empty(coords, "MultiPolygon")?
                    .iter()
                    .map(|c| parse_polygon(c).map(Geometry::Polygon))
                    .collect::<Result<_>>()?,
            ),
        };
        Ok((geometry, kind))
    }

    /// A geometry as a document holds it (MongoDB's `parseFromStorage`): an array, or an
    /// object whose first value is a number, is a legacy pair (extra values allowed);
    /// another object is GeoJSON.
    pub fn from_stored(value: &Bson) -> Result<Geometry> {
        match value {
            Bson::Array(_) => Ok(Geometry::Point {
                point: parse_flat_point(value, true)?,
                legacy: true,
            }),
            Bson::Document(d) => {
                if d.values().next().and_then(number).is_some() {
                    Ok(Geometry::Point {
                        point: parse_flat_point(value, true)?,
                        legacy: true,
                    })
                } else {
                    Geometry::from_geojson(d).map(|(g, _)| g)
                }
            }
            other => Err(MongoError::bad_value(format!(
                "geo element must be an array or object: {}",
                render(other)
            ))),
        }
    }

    /// The flat point a legacy shape can match: a legacy pair or a GeoJSON Point.
    pub fn flat_point(&self) -> Option<&GeoPoint> {
        match self {
            Geometry::Point { point, .. } => Some(point),
            _ => None,
        }
    }

    /// The simple parts on the sphere, or `None` when a legacy pair lies off it.
    pub(super) fn parts(&self) -> Option<Vec<Part<'_>>> {
        fn walk<'a>(g: &'a Geometry, out: &mut Vec<Part<'a>>) -> bool {
            match g {
                Geometry::Point { point, .. } => match &point.sphere {
                    Some(p) => {
                        out.push(Part::Point(p));
                        true
                    }
                    None => false,
                },
                Geometry::LineString(l) => {
                    out.push(Part::Line(l));
                    true
                }
                Geometry::Polygon(p) => {
                    out.push(Part::Polygon(p));
                    true
                }
                Geometry::Collection(members) => members.iter().all(|m| walk(m, out)),
            }
        }
        let mut out = Vec::new();
        walk(self, &mut out).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{bson, doc};

    fn err(v: Bson) -> String {
        Geometry::from_stored(&v).unwrap_err().message().to_string()
    }

    #[test]
    fn legacy_pairs_and_geojson_points() {
        let g = Geometry::from_stored(&bson!([1, 2.5, 3])).unwrap();
        assert!(matches!(g, Geometry::Point { legacy: true, .. }));
        let g = Geometry::from_stored(&bson!({"lng": 400, "lat": 0})).unwrap();
        assert!(g.flat_point().unwrap().sphere.is_none());
        let g = Geometry::from_stored(&bson!({"type": "Point", "coordinates": [1, 2]})).unwrap();
        assert!(matches!(g, Geometry::Point { legacy: false, .. }));
        assert_eq!(
            err(bson!({"type": "Point", "coordinates": [200, 0]})),
            "longitude/latitude is out of bounds, lng: 200 lat: 0"
        );
        assert_eq!(
            err(bson!("x")),
            "geo element must be an array or object: \"x\""
        );
        assert_eq!(
            err(bson!([1, "a"])),
            "Point must only contain numeric elements"
        );
    }

    #[test]
    fn polygon_validation() {
        let open = doc! {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]]};
        assert!(err(Bson::Document(open)).starts_with("Loop is not closed"));
        let short = doc! {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [0, 0]]]};
        assert!(err(Bson::Document(short)).starts_with("Loop must have at least 3"));
        let bowtie =
            doc! {"type": "Polygon", "coordinates": [[[0, 0], [10, 10], [10, 0], [0, 10], [0, 0]]]};
        assert!(err(Bson::Document(bowtie)).contains("cross"));
        let outside_hole = doc! {"type": "Polygon", "coordinates": [
            [[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]],
            [[20, 20], [21, 20], [21, 21], [20, 20]],
        ]};
        assert!(err(Bson::Document(outside_hole)).starts_with("Secondary loops"));
        let good = doc! {"type": "Polygon", "coordinates": [
            [[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]],
            [[2, 2], [3, 2], [3, 3], [2, 2]],
        ]};
        assert!(Geometry::from_stored(&Bson::Document(good)).is_ok());
        let unknown = doc! {"type": "Circle", "coordinates": [1, 2]};
        assert!(err(Bson::Document(unknown)).starts_with("unknown GeoJSON type"));
    }
}
