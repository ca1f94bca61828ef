//! The operands of `$geoWithin` (`$box`, `$polygon`, `$center` on the plane; `$centerSphere`
//! and `$geometry` on the sphere) and `$geoIntersects` (`$geometry`), parsed with MongoDB's
//! errors, and whether a stored value satisfies them. Without an index, as MongoDB's matcher:
//! a value that is no valid geometry simply does not match.

use super::shape::{GeoPoint, Geometry, parse_flat_point};
use super::sphere::{self, Part, Polygon};
use crate::document::display::render;
use crate::error::{MongoError, Result};
use bson::Bson;
use s2::cap::Cap;
use s2::s1::angle::Angle;

/// The region a `$geoWithin` names.
#[derive(Clone, Debug)]
pub enum Region {
    /// `$box`: lower-left and upper-right corners, edges included.
    Box { lo: (f64, f64), hi: (f64, f64) },
    /// `$polygon`: a plane polygon's vertices.
    FlatPolygon(Vec<(f64, f64)>),
    /// `$center`: a plane disc, edge included.
    Center { center: (f64, f64), radius: f64 },
    /// `$centerSphere`: a spherical cap (radius in radians).
    CenterSphere(Cap),
    /// `$geometry` Polygon or MultiPolygon.
    Polygons(Vec<Polygon>),
}

/// A parsed `$geoWithin` or `$geoIntersects`.
#[derive(Clone, Debug)]
pub enum GeoPredicate {
    Within(Region),
    Intersects(Geometry),
}

fn flat(p: &GeoPoint) -> (f64, f64) {
    (p.x, p.y)
}

fn non_negative_radius(value: Option<&Bson>) -> Result<f64> {
    let r = value.and_then(super::shape::number).unwrap_or(f64::NAN);
    if r.is_nan() || r < 0.0 {
        return Err(MongoError::bad_value(
            "radius must be a non-negative number",
        ));
    }
    Ok(r)
}

fn center_args(value: &Bson) -> Result<(GeoPoint, f64)> {
    let Bson::Array(items) = value else {
        return Err(MongoError::bad_value("Point must be an array or object"));
    };
    let center = parse_flat_point(items.first().unwrap_or(&Bson::Null), false)?;
    Ok((center, non_negative_radius(items.get(1))?))
}

/// The shape of `{$geometry: ...}`: GeoJSON, or a legacy pair.
fn geometry_operand(value: &Bson) -> Result<(Geometry, String)> {
    match value {
        Bson::Document(d) if !d.values().next().is_some_and(is_number) => {
            let (g, kind) = Geometry::from_geojson(d)?;
            Ok((g, kind.to_string()))
        }
        Bson::Array(_) | Bson::Document(_) => {
            let point = parse_flat_point(value, false)?;
            Ok((
                Geometry::Point {
                    point,
                    legacy: true,
                },
                "Point".to_string(),
            ))
        }
        _ => Err(MongoError::bad_value(format!(
            "geometry must be an object: $geometry: {}",
            render(value)
        ))),
    }
}

impl GeoPredicate {
    /// Parses the operand of `op` (`$geoWithin`, `$within` or `$geoIntersects`).
    pub fn parse(op: &str, value: &Bson) -> Result<GeoPredicate> {
        let Bson::Document(spec) = value else {
            return Err(MongoError::bad_value(format!("{op} must be an object")));
        };
        let mut shapes = spec.iter().filter(|(k, _)| k.as_str() != "$uniqueDocs");
        let Some((shape, arg)) = shapes.next() else {
            return Err(MongoError::bad_value(format!(
                "{op} geo query doesn't have any geometry"
            )));
        };
        let unsupported = || {
            MongoError::bad_value(format!(
                "{op} not supported with provided geometry: {}",
                crate::document::display::render_doc(spec)
            ))
        };
        if op == "$geoIntersects" {
            if shape != "$geometry" {
                return Err(if is_shape(shape) {
                    unsupported()
                } else {
                    unknown_specifier(shape, arg)
                });
            }
            let (g, _) = geometry_operand(arg)?;
            return Ok(GeoPredicate::Intersects(g));
        }
        let region = match shape.as_str() {
            "$box" => {
                let Bson::Array(corners) = arg else {
                    return Err(MongoError::bad_value("Point must be an array or object"));
                };
                let a = parse_flat_point(corners.first().unwrap_or(&Bson::Null), false)?;
                let b = parse_flat_point(corners.get(1).unwrap_or(&Bson::Null), false)?;
                Region::Box {
                    lo: (a.x.min(b.x), a.y.min(b.y)),
                    hi: (a.x.max(b.x), a.y.max(b.y)),
                }
            }
            "$polygon" => {
                let Bson::Array(items) = arg else {
                    return Err(MongoError::bad_value("Point must be an array or object"));
                };
                let vertices = items
                    .iter()
                    .map(|p| parse_flat_point(p, false).map(|p| flat(&p)))
                    .collect::<Result<Vec<_>>>()?;
                if vertices.len() < 3 {
                    return Err(MongoError::bad_value("Polygon must have at least 3 points"));
                }
                Region::FlatPolygon(vertices)
            }
            "$center" => {
                let (center, radius) = center_args(arg)?;
                Region::Center {
                    center: flat(&center),
                    radius,
                }
            }
            "$centerSphere" => {
                let (center, radius) = center_args(arg)?;
                let center = center.on_sphere()?;
                Region::CenterSphere(Cap::from_center_angle(
                    &center,
                    &Angle::from(s2::s1::Rad(radius)),
                ))
            }
            "$geometry" => {
                let (g, kind) = geometry_operand(arg)?;
                match (kind.as_str(), g) {
                    ("Polygon", Geometry::Polygon(p)) => Region::Polygons(vec![p]),
                    ("MultiPolygon", Geometry::Collection(members)) => Region::Polygons(
                        members
                            .into_iter()
                            .filter_map(|m| match m {
                                Geometry::Polygon(p) => Some(p),
                                _ => None,
                            })
                            .collect(),
                    ),
                    _ => return Err(unsupported()),
                }
            }
            _ => return Err(unknown_specifier(shape, arg)),
        };
        Ok(GeoPredicate::Within(region))
    }

    /// Whether a stored value (one candidate of the path) satisfies the predicate.
    pub fn matches(&self, value: &Bson) -> bool {
        let Ok(stored) = Geometry::from_stored(value) else {
            return false;
        };
        match self {
            GeoPredicate::Within(region) => region.contains(&stored),
            GeoPredicate::Intersects(query) => {
                let (Some(a), Some(b)) = (stored.parts(), query.parts()) else {
                    return false;
                };
                a.iter()
                    .any(|x| b.iter().any(|y| sphere::intersects(*x, *y)))
            }
        }
    }
}

fn is_number(v: &Bson) -> bool {
    matches!(
        v,
        Bson::Double(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Decimal128(_)
    )
}

fn is_shape(name: &str) -> bool {
    matches!(
        name,
        "$box" | "$polygon" | "$center" | "$centerSphere" | "$geometry"
    )
}

fn unknown_specifier(shape: &str, arg: &Bson) -> MongoError {
    MongoError::bad_value(format!("unknown geo specifier: {shape}: {}", render(arg)))
}

impl Region {
    /// Whether the stored geometry lies inside: plane shapes hold only points (legacy pairs
    /// and GeoJSON Points alike), spherical ones hold every part of any geometry.
    pub fn contains(&self, stored: &Geometry) -> bool {
        let spherical = |within: &dyn Fn(Part<'_>) -> bool| {
            stored
                .parts()
                .is_some_and(|parts| !parts.is_empty() && parts.into_iter().all(within))
        };
        match self {
            Region::Box { lo, hi } => stored
                .flat_point()
                .is_some_and(|p| p.x >= lo.0 && p.x <= hi.0 && p.y >= lo.1 && p.y <= hi.1),
            Region::FlatPolygon(vertices) => stored
                .flat_point()
                .is_some_and(|p| flat_polygon_contains(vertices, (p.x, p.y))),
            Region::Center { center, radius } => stored
                .flat_point()
                .is_some_and(|p| (p.x - center.0).hypot(p.y - center.1) <= *radius),
            Region::CenterSphere(cap) => spherical(&|part| sphere::within_cap(part, cap)),
            Region::Polygons(polygons) => spherical(&|part| {
                polygons
                    .iter()
                    .any(|poly| sphere::within_polygon(part, poly))
            }),
        }
    }
}

/// Plane point-in-polygon, the boundary inside (as MongoDB's legacy `$polygon`), by ray
/// casting after an on-edge test.
fn flat_polygon_contains(v: &[(f64, f64)], p: (f64, f64)) -> bool {
    let n = v.len();
    let mut inside = false;
    for i in 0..n {
        let (a, b) = (v[i], v[(i + 1) % n]);
        let cross = (b.0 - a.0) * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0);
        let within_x = p.0 >= a.0.min(b.0) && p.0 <= a.0.max(b.0);
        let within_y = p.1 >= a.1.min(b.1) && p.1 <= a.1.max(b.1);
        if cross == 0.0 && within_x && within_y {
            return true;
        }
        if (a.1 > p.1) != (b.1 > p.1) && p.0 < (b.0 - a.0) * (p.1 - a.1) / (b.1 - a.1) + a.0 {
            inside = !inside;
        }
    }
    inside
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::bson;

    fn within(shape: Bson, value: Bson) -> bool {
        GeoPredicate::parse("$geoWithin", &shape)
            .unwrap()
            .matches(&value)
    }

    #[test]
    fn plane_shapes_match_points() {
        let b = bson!({"$box": [[0, 0], [10, 10]]});
        assert!(within(b.clone(), bson!([5, 5])));
        assert!(within(b.clone(), bson!([10, 10])));
        assert!(within(
            b.clone(),
            bson!({"type": "Point", "coordinates": [5, 5]})
        ));
        assert!(!within(b, bson!([11, 5])));
        let c = bson!({"$center": [[0, 0], 5]});
        assert!(within(c.clone(), bson!([3, 4])));
        assert!(!within(c, bson!([4, 4])));
        let p = bson!({"$polygon": [[0, 0], [10, 0], [0, 10]]});
        assert!(within(p.clone(), bson!([1, 1])));
        assert!(within(p.clone(), bson!([5, 5])));
        assert!(!within(p, bson!([6, 6])));
    }

    #[test]
    fn sphere_shapes() {
        let cap = bson!({"$centerSphere": [[0, 0], 0.1]});
        assert!(within(cap.clone(), bson!([5, 0])));
        assert!(!within(cap, bson!([6, 0])));
        let poly = bson!({"$geometry": {"type": "Polygon", "coordinates": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]]}});
        assert!(within(
            poly.clone(),
            bson!({"type": "LineString", "coordinates": [[1, 1], [2, 2]]})
        ));
        assert!(!within(
            poly,
            bson!({"type": "LineString", "coordinates": [[1, 1], [20, 2]]})
        ));
        let inter = GeoPredicate::parse(
            "$geoIntersects",
            &bson!({"$geometry": {"type": "LineString", "coordinates": [[-5, 5], [15, 5]]}}),
        )
        .unwrap();
        assert!(inter.matches(&bson!({"type": "Polygon", "coordinates": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]]})));
        assert!(!inter.matches(&bson!({"type": "Point", "coordinates": [0, 0]})));
    }

    #[test]
    fn errors() {
        let msg = |op: &str, v: Bson| {
            GeoPredicate::parse(op, &v)
                .unwrap_err()
                .message()
                .to_string()
        };
        assert!(msg("$geoWithin", bson!({"$foo": 1})).starts_with("unknown geo specifier: $foo"));
        assert!(
            msg(
                "$geoWithin",
                bson!({"$geometry": {"type": "Point", "coordinates": [1, 2]}})
            )
            .starts_with("$geoWithin not supported with provided geometry")
        );
        assert_eq!(
            msg("$geoWithin", bson!({"$center": [[0, 0], -1]})),
            "radius must be a non-negative number"
        );
        assert_eq!(
            msg("$geoWithin", bson!({"$polygon": [[0, 0], [1, 1]]})),
            "Polygon must have at least 3 points"
        );
    }
}

#[cfg(test)]
mod robustness {
    //! Any coordinates (degenerate, antipodal, at the poles and the antimeridian, out of
    //! range, NaN) give answers or MongoDB's errors, never panics.

    use super::*;
    use crate::query::geo::{GeometryRegion, SphereIndexParams};
    use bson::{Bson, doc};
    use proptest::prelude::*;

    fn coordinate() -> impl Strategy<Value = f64> {
        prop_oneof![
            prop::sample::select(vec![
                0.0,
                -0.0,
                1.0,
                -1.0,
                90.0,
                -90.0,
                180.0,
                -180.0,
                179.999,
                45.0,
                1e-300,
                f64::NAN,
                f64::INFINITY,
                1e300,
            ]),
            -180.0..180.0f64,
            -2.0..2.0f64,
        ]
    }

    fn pair() -> impl Strategy<Value = Bson> {
        (coordinate(), coordinate()).prop_map(|(x, y)| Bson::Array(vec![x.into(), y.into()]))
    }

    fn ring() -> impl Strategy<Value = Bson> {
        prop::collection::vec(pair(), 0..7).prop_map(|mut points| {
            if let Some(first) = points.first().cloned() {
                points.push(first);
            }
            Bson::Array(points)
        })
    }

    proptest! {
        #[test]
        fn geometry_never_panics(
            shell in ring(),
            hole in ring(),
            line in prop::collection::vec(pair(), 0..5),
            point in pair(),
            radius in coordinate(),
        ) {
            let polygon = doc! {"type": "Polygon", "coordinates": [shell.clone()]};
            let holed = doc! {"type": "Polygon", "coordinates": [shell, hole]};
            let line = doc! {"type": "LineString", "coordinates": line};
            let shapes = [
                doc! {"$geometry": polygon.clone()},
                doc! {"$geometry": holed.clone()},
                doc! {"$centerSphere": [point.clone(), radius]},
                doc! {"$center": [point.clone(), radius]},
                doc! {"$polygon": [point.clone(), [0, 0], [1, 1]]},
                doc! {"$box": [point.clone(), [1, 1]]},
            ];
            let stored = [
                Bson::Document(polygon.clone()),
                Bson::Document(holed),
                Bson::Document(line.clone()),
                point.clone(),
            ];
            let params = SphereIndexParams::defaults(3);
            for value in &stored {
                if let Ok(g) = Geometry::from_stored(value) {
                    let _ = params.index_cells(&g);
                }
            }
            for shape in shapes {
                if let Ok(p) = GeoPredicate::parse("$geoWithin", &Bson::Document(shape)) {
                    for value in &stored {
                        let _ = p.matches(value);
                    }
                    if let Some(region) = GeometryRegion::of_predicate(&p) {
                        let _ = params.scan_ranges(&region);
                    }
                }
            }
            for g in [polygon, line] {
                let spec = Bson::Document(doc! {"$geometry": g});
                if let Ok(p) = GeoPredicate::parse("$geoIntersects", &spec) {
                    for value in &stored {
                        let _ = p.matches(value);
                    }
                }
            }
        }
    }
}
