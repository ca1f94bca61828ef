//! `$near` and `$nearSphere`: the point they measure from, the distance bounds and their
//! units as MongoDB reads them (a GeoJSON point: meters on the sphere; a legacy pair with
//! `$nearSphere`: radians; a legacy pair with `$near`: the plane, which only a `2d` index
//! answers), and the distance from that point to a stored geometry.

use super::EARTH_RADIUS_METERS;
use super::shape::{GeoPoint, Geometry, number, parse_flat_point};
use crate::document::display::render_doc;
use crate::error::{MongoError, Result};
use bson::{Bson, Document};
use s2::point::Point;

/// A parsed `$near`/`$nearSphere`.
#[derive(Clone, Debug)]
pub struct NearQuery {
    pub center: GeoPoint,
    /// Measured on the sphere (`$nearSphere`, or a GeoJSON point).
    pub spherical: bool,
    /// Distances in meters (GeoJSON point) rather than radians or plane units.
    pub meters: bool,
    pub min_distance: f64,
    pub max_distance: f64,
}

fn distance_bound(name: &str, value: &Bson) -> Result<f64> {
    let d =
        number(value).ok_or_else(|| MongoError::bad_value(format!("{name} must be a number")))?;
    if d.is_nan() || d < 0.0 {
        return Err(MongoError::bad_value(format!(
            "{name} must be non-negative"
        )));
    }
    Ok(d)
}

impl NearQuery {
    /// Parses `{$near | $nearSphere: ..., $maxDistance?, $minDistance?}` (the operators after
    /// the path), `op` being the first.
    pub fn parse(op: &str, obj: &Document) -> Result<NearQuery> {
        let value = obj.get(op).unwrap_or(&Bson::Null);
        let mut query = NearQuery {
            center: GeoPoint::new(0.0, 0.0),
            spherical: op == "$nearSphere",
            meters: false,
            min_distance: 0.0,
            max_distance: f64::INFINITY,
        };
        let geojson = matches!(value, Bson::Document(d) if d.contains_key("$geometry"));
        if geojson {
            let Bson::Document(spec) = value else {
                unreachable!("checked above")
            };
            let point = match spec.get("$geometry") {
                Some(Bson::Document(g)) => match Geometry::from_geojson(g)? {
                    (Geometry::Point { point, .. }, _) => point,
                    _ => {
                        return Err(MongoError::bad_value(format!(
                            "invalid point in geo near query $geometry argument: {}",
                            render_doc(g)
                        )));
                    }
                },
                _ => return Err(MongoError::bad_value("$geometry must be an object")),
            };
            query.center = point;
            query.spherical = true;
            query.meters = true;
            for (key, v) in spec {
                match key.as_str() {
                    "$geometry" => {}
                    "$maxDistance" => query.max_distance = distance_bound(key, v)?,
                    "$minDistance" => query.min_distance = distance_bound(key, v)?,
                    other => {
                        return Err(MongoError::bad_value(format!(
                            "invalid argument in geo near query: {other}"
                        )));
                    }
                }
            }
        } else {
            query.center = parse_flat_point(value, false)?;
            if query.spherical {
                query.center.on_sphere()?;
            }
        }
        for (key, v) in obj {
            match key.as_str() {
                k if k == op => {}
                "$maxDistance" if !geojson => query.max_distance = distance_bound(key, v)?,
                "$minDistance" if !geojson => query.min_distance = distance_bound(key, v)?,
                "$uniqueDocs" => {}
                other => {
                    return Err(MongoError::bad_value(format!(
                        "invalid argument in geo near query: {other}"
                    )));
                }
            }
        }
        Ok(query)
    }

    /// The center on the sphere (a spherical query's center always is).
    pub fn sphere_center(&self) -> Option<Point> {
        self.center.sphere
    }

    /// A distance in radians as this query states distances.
    pub fn from_radians(&self, radians: f64) -> f64 {
        if self.meters {
            radians * EARTH_RADIUS_METERS
        } else {
            radians
        }
    }

    /// `$maxDistance` in radians (at most half the circumference).
    pub fn max_radians(&self) -> f64 {
        let max = if self.meters {
            self.max_distance / EARTH_RADIUS_METERS
        } else {
            self.max_distance
        };
        max.min(std::f64::consts::PI)
    }

    /// The distance from the center to a stored geometry, in the query's units; `None` for a
    /// value that is no geometry (or a legacy pair off the sphere).
    pub fn distance(&self, value: &Bson) -> Option<f64> {
        let stored = Geometry::from_stored(value).ok()?;
        if !self.spherical {
            let p = stored.flat_point()?;
            return Some((p.x - self.center.x).hypot(p.y - self.center.y));
        }
        let center = self.center.sphere?;
        let radians = stored
            .parts()?
            .into_iter()
            .map(|part| part.distance_from(&center))
            .fold(f64::INFINITY, f64::min);
        radians.is_finite().then(|| self.from_radians(radians))
    }

    /// Whether a distance lies within the bounds.
    pub fn within_bounds(&self, distance: f64) -> bool {
        distance >= self.min_distance && distance <= self.max_distance
    }
}

/// Whether a filter document has a `$near`/`$nearSphere` at its top (or in a top-level
/// `$and`): results then come in distance order, which a router merges by.
pub fn has_near(filter: &Document) -> bool {
    filter.iter().any(|(key, value)| match value {
        Bson::Array(items) if key == "$and" => items
            .iter()
            .any(|i| matches!(i, Bson::Document(d) if has_near(d))),
        Bson::Document(ops) if !key.starts_with('$') => ops
            .keys()
            .next()
            .is_some_and(|k| k == "$near" || k == "$nearSphere"),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{bson, doc};

    #[test]
    fn units_follow_the_point_form() {
        let geo = NearQuery::parse(
            "$near",
            &doc! {"$near": {"$geometry": {"type": "Point", "coordinates": [0, 0]}, "$maxDistance": 1000}},
        )
        .unwrap();
        assert!(geo.spherical && geo.meters);
        let d = geo.distance(&bson!([0, 1])).unwrap();
        assert!((d - 111_319.5).abs() < 200.0, "{d}");
        let legacy = NearQuery::parse(
            "$nearSphere",
            &doc! {"$nearSphere": [0, 0], "$maxDistance": 0.1},
        )
        .unwrap();
        assert!(legacy.spherical && !legacy.meters);
        assert!((legacy.distance(&bson!([0, 1])).unwrap() - 1f64.to_radians()).abs() < 1e-9);
        let flat = NearQuery::parse("$near", &doc! {"$near": [0, 0]}).unwrap();
        assert_eq!(flat.distance(&bson!([3, 4])), Some(5.0));
        assert!(NearQuery::parse("$near", &doc! {"$near": [0, 0], "$maxDistance": -1}).is_err());
        assert!(has_near(&doc! {"a": 1, "loc": {"$near": [0, 0]}}));
        assert!(!has_near(&doc! {"loc": {"$geoWithin": {}}}));
    }
}
