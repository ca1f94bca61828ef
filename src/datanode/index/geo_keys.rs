//! The keys of geo fields. A `2d` field: each legacy pair at the path (an array of pairs
//! holds several locations), its cell in the index's grid. A `2dsphere` field: the geometry at the path (a trailing array is a legacy
//! pair, not a list; arrays on the way to it are expanded) parsed and covered by S2 cells, each
//! cell id a key (NumberLong, as index version 3 stores them). A document whose value there is
//! no valid geometry is refused with 16755, as MongoDB's insert is.

use crate::document::display::render_doc;
use crate::error::{MongoError, Result};
use crate::query::geo::{FlatIndexParams, Geometry, SphereIndexParams, number};
use bson::{Bson, Document};

fn walk<'a>(value: &'a Bson, path: &[&str], out: &mut Vec<&'a Bson>) {
    let Some((first, rest)) = path.split_first() else {
        out.push(value);
        return;
    };
    match value {
        Bson::Document(d) => {
            if let Some(v) = d.get(*first) {
                walk(v, rest, out);
            }
        }
        Bson::Array(items) => match first.parse::<usize>().ok().and_then(|i| items.get(i)) {
            Some(item) => walk(item, rest, out),
            None => {
                for item in items {
                    if let Bson::Document(_) = item {
                        walk(item, path, out);
                    }
                }
            }
        },
        _ => {}
    }
}

/// The cell ids (as Int64 keys) of the geometries at `path`, deduplicated; empty when there
/// is none (a missing or null field: `2dsphere` indexes from version 2 skip the document).
pub fn sphere_keys(params: &SphereIndexParams, doc: &Document, path: &str) -> Result<Vec<Bson>> {
    let values = values_at(doc, path);
    let mut cells = Vec::new();
    for value in values {
        if matches!(value, Bson::Null | Bson::Undefined) {
            continue;
        }
        let refuse = |reason: &str| {
            MongoError::location(
                16755,
                format!("Can't extract geo keys: {}  {reason}", render_doc(doc)),
            )
        };
        let geometry = Geometry::from_stored(value).map_err(|e| refuse(e.message()))?;
        if let Some(point) = geometry.flat_point() {
            point.on_sphere().map_err(|e| refuse(e.message()))?;
        }
        cells.extend(
            params
                .index_cells(&geometry)
                .into_iter()
                .map(|c| c.0 as i64),
        );
    }
    cells.sort_unstable();
    cells.dedup();
    Ok(cells.into_iter().map(Bson::Int64).collect())
}

fn values_at<'a>(doc: &'a Document, path: &str) -> Vec<&'a Bson> {
    let parts: Vec<&str> = path.split('.').collect();
    let mut values = Vec::new();
    if let Some(v) = doc.get(parts[0]) {
        walk(v, &parts[1..], &mut values);
    }
    values
}

/// A legacy pair: an array or object whose first two values are numbers.
fn pair(value: &Bson) -> Option<(f64, f64)> {
    let mut values: Box<dyn Iterator<Item = &Bson>> = match value {
        Bson::Array(items) => Box::new(items.iter()),
        Bson::Document(d) => Box::new(d.values()),
        _ => return None,
    };
    Some((number(values.next()?)?, number(values.next()?)?))
}

/// The grid keys (as Int64) of the legacy pairs at `path`; empty when there is none (`2d`
/// indexes skip such documents).
pub fn flat_keys(params: &FlatIndexParams, doc: &Document, path: &str) -> Result<Vec<Bson>> {
    let mut keys = Vec::new();
    for value in values_at(doc, path) {
        if matches!(value, Bson::Null | Bson::Undefined) {
            continue;
        }
        let points: Vec<(f64, f64)> = match pair(value) {
            Some(p) => vec![p],
            None => {
                let members: Vec<&Bson> = match value {
                    Bson::Array(items) => items.iter().collect(),
                    Bson::Document(d) => d.values().collect(),
                    _ => Vec::new(),
                };
                let points: Option<Vec<_>> = members.into_iter().map(pair).collect();
                match points {
                    Some(points) if !points.is_empty() => points,
                    _ => {
                        return Err(MongoError::location(
                            13026,
                            format!(
                                "geo values must be 'legacy coordinate pairs' for 2d indexes :: caused by :: {}",
                                render_doc(doc)
                            ),
                        ));
                    }
                }
            }
        };
        for (x, y) in points {
            let key = params.key(x, y).map_err(|e| {
                MongoError::location(
                    13027,
                    format!("{} :: caused by :: {}", e.message(), render_doc(doc)),
                )
            })?;
            keys.push(key);
        }
    }
    keys.sort_unstable();
    keys.dedup();
    Ok(keys.into_iter().map(Bson::Int64).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn points_lines_and_refusals() {
        let params = SphereIndexParams::defaults(3);
        let point = doc! {"loc": {"type": "Point", "coordinates": [1, 2]}};
        assert_eq!(sphere_keys(&params, &point, "loc").unwrap().len(), 1);
        let pair = doc! {"a": [{"loc": [1, 2]}, {"loc": [3, 4]}]};
        assert_eq!(sphere_keys(&params, &pair, "a.loc").unwrap().len(), 2);
        assert!(
            sphere_keys(&params, &doc! {"x": 1}, "loc")
                .unwrap()
                .is_empty()
        );
        let bad = doc! {"_id": 1, "loc": {"type": "Point", "coordinates": [200, 0]}};
        let err = sphere_keys(&params, &bad, "loc").unwrap_err();
        assert_eq!(err.code().code(), 16755);
        assert_eq!(
            err.message(),
            "Can't extract geo keys: { _id: 1, loc: { type: \"Point\", coordinates: [ 200, 0 ] } }  longitude/latitude is out of bounds, lng: 200 lat: 0"
        );
        let legacy_off = doc! {"loc": [500, 0]};
        assert!(sphere_keys(&params, &legacy_off, "loc").is_err());
    }
}
