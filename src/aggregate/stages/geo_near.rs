//! `$geoNear`: its options parsed with MongoDB's errors. The stage runs where the collection is
//! read (a data node answers it as the `$near` query it amounts to, through a `2dsphere`
//! index), so the pipeline keeps only this specification ([`crate::aggregate::Pipeline::geo_near`]).

use crate::error::{MongoError, Result};
use crate::query::filter::Filter;
use bson::{Bson, Document, doc};

/// A parsed `$geoNear`.
#[derive(Clone, Debug)]
pub struct GeoNearSpec {
    /// `near`: a GeoJSON point or a legacy pair.
    pub near: Bson,
    pub distance_field: String,
    pub spherical: bool,
    pub min_distance: Option<f64>,
    pub max_distance: Option<f64>,
    pub query: Document,
    pub distance_multiplier: f64,
    pub include_locs: Option<String>,
    /// The indexed field to measure from (`None`: the collection's only geo index).
    pub key: Option<String>,
}

fn number(name: &str, value: &Bson) -> Result<f64> {
    let n = crate::query::geo::number(value)
        .ok_or_else(|| MongoError::type_mismatch(format!("{name} must be a number")))?;
    if n.is_nan() || n < 0.0 {
        return Err(MongoError::bad_value(format!("{name} must be nonnegative")));
    }
    Ok(n)
}

fn string(name: &str, value: &Bson) -> Result<String> {
    match value {
        Bson::String(s) if !s.is_empty() => Ok(s.clone()),
        Bson::String(_) => Err(MongoError::bad_value(format!(
            "$geoNear parameter '{name}' cannot be the empty string"
        ))),
        other => Err(MongoError::type_mismatch(format!(
            "$geoNear parameter '{name}' must be of type string but found type: {}",
            crate::document::types::type_name(other)
        ))),
    }
}

/// Parses `{$geoNear: spec}`.
pub fn parse(value: &Bson) -> Result<GeoNearSpec> {
    let Bson::Document(spec) = value else {
        return Err(MongoError::location(
            10065,
            "invalid parameter: expected an object ($geoNear)",
        ));
    };
    let mut out = GeoNearSpec {
        near: Bson::Null,
        distance_field: String::new(),
        spherical: false,
        min_distance: None,
        max_distance: None,
        query: Document::new(),
        distance_multiplier: 1.0,
        include_locs: None,
        key: None,
    };
    for (name, v) in spec {
        match name.as_str() {
            "near" => match v {
                Bson::Document(_) | Bson::Array(_) => out.near = v.clone(),
                _ => {
                    return Err(MongoError::type_mismatch(
                        "$geoNear requires near argument to be a GeoJSON object or a legacy point(array)",
                    ));
                }
            },
            "distanceField" => match v {
                Bson::String(s) => out.distance_field = s.clone(),
                _ => {
                    return Err(MongoError::type_mismatch("distanceField must be a string"));
                }
            },
            "spherical" => out.spherical = crate::query::values::truthy(v),
            "maxDistance" => out.max_distance = Some(number("maxDistance", v)?),
            "minDistance" => out.min_distance = Some(number("minDistance", v)?),
            "distanceMultiplier" => out.distance_multiplier = number("distanceMultiplier", v)?,
            "query" => match v {
                Bson::Document(q) => out.query = q.clone(),
                _ => return Err(MongoError::type_mismatch("query must be an object")),
            },
            "includeLocs" => match v {
                Bson::String(s) => out.include_locs = Some(s.clone()),
                _ => return Err(MongoError::type_mismatch("includeLocs must be a string")),
            },
            "key" => out.key = Some(string("key", v)?),
            // Accepted and ignored by MongoDB 8.0 too.
            "uniqueDocs" => {}
            other => {
                return Err(MongoError::bad_value(format!(
                    "Unknown argument to $geoNear: {other}"
                )));
            }
        }
    }
    if matches!(out.near, Bson::Null) {
        return Err(MongoError::bad_value("$geoNear requires a 'near' argument"));
    }
    if out.distance_field.is_empty() {
        return Err(MongoError::bad_value(
            "$geoNear requires a 'distanceField' argument",
        ));
    }
    Filter::parse(&out.query)?.refuse_near()?;
    // The `$near` it amounts to must be well-formed too.
    Filter::parse(&out.filter_on("loc"))?;
    Ok(out)
}

impl GeoNearSpec {
    /// The query plus the `$near`/`$nearSphere` on `key` this stage amounts to: a GeoJSON
    /// point measures in meters on the sphere, a legacy pair in radians with `spherical`.
    pub fn filter_on(&self, key: &str) -> Document {
        let geojson = matches!(&self.near, Bson::Document(d) if d.contains_key("type"));
        let op = if self.spherical || geojson {
            "$nearSphere"
        } else {
            "$near"
        };
        let mut near = Document::new();
        let mut bounds = Document::new();
        if let Some(max) = self.max_distance {
            bounds.insert("$maxDistance", max);
        }
        if let Some(min) = self.min_distance {
            bounds.insert("$minDistance", min);
        }
        if geojson {
            let mut inner = doc! {"$geometry": self.near.clone()};
            inner.extend(bounds);
            near.insert(op, inner);
        } else {
            near.insert(op, self.near.clone());
            near.extend(bounds);
        }
        let mut filter = self.query.clone();
        if filter.contains_key(key) {
            return doc! {"$and": [filter, {key: near}]};
        }
        filter.insert(key, near);
        filter
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::bson;

    #[test]
    fn options_and_errors() {
        let spec = parse(&bson!({"near": {"type": "Point", "coordinates": [1, 2]},
            "distanceField": "d", "maxDistance": 5, "query": {"a": 1}}))
        .unwrap();
        assert_eq!(
            spec.filter_on("loc"),
            doc! {"a": 1, "loc": {"$nearSphere": {"$geometry": {"type": "Point", "coordinates": [1, 2]}, "$maxDistance": 5.0}}}
        );
        let legacy =
            parse(&bson!({"near": [1, 2], "distanceField": "d", "spherical": true})).unwrap();
        assert_eq!(legacy.filter_on("p"), doc! {"p": {"$nearSphere": [1, 2]}});
        let msg = |v: Bson| parse(&v).unwrap_err().message().to_string();
        assert_eq!(
            msg(bson!({"near": [0, 0]})),
            "$geoNear requires a 'distanceField' argument"
        );
        assert_eq!(
            msg(bson!({"near": [0, 0], "distanceField": "d", "num": 3})),
            "Unknown argument to $geoNear: num"
        );
        assert_eq!(
            msg(bson!({"near": [0, 0], "distanceField": "d", "query": {"x": {"$near": [0, 0]}}})),
            "$geoNear, $near, and $nearSphere are not allowed in this context"
        );
    }
}
