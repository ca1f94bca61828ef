//! Sort specifications (`{a: 1, "b.c": -1}`) and MongoDB's sort order over documents: each key
//! path yields a sort key per document (the minimum of the values it reaches for ascending keys,
//! the maximum for descending ones; missing is null, an empty array sorts before null). The
//! router merges sorted shard streams by the same keys.

use super::values::{check_field_path, is_number, not_implemented, render_element};
use crate::document::collation::Collation;
use crate::document::order::compare_collated;
use crate::error::{MongoError, Result};
use crate::expression::LetVariables;
use bson::{Bson, Document};
use std::cmp::Ordering;
use std::sync::Arc;

/// Most keys a sort (and a compound index) may have: MongoDB orders both with its index key
/// ordering, which has room for 32 fields (`Ordering::kMaxCompoundIndexKeys`).
pub const MAX_COMPOUND_KEYS: usize = 32;

/// Where a document being sorted by `{$meta: "textScore"}` carries its score, and one sorted by
/// `{$meta: "geoNearDistance"}` its distance (its metadata, [`crate::expression::meta`]).
pub use crate::expression::meta::{GEO_NEAR_DISTANCE_FIELD, TEXT_SCORE_FIELD};

/// A parsed sort specification.
#[derive(Clone, Debug, PartialEq)]
pub struct SortSpec {
    keys: Vec<SortKey>,
    natural: Option<bool>,
    /// The command's collation, which strings sort by (`None`: simple).
    collation: Option<Arc<Collation>>,
}

#[derive(Clone, Debug, PartialEq)]
struct SortKey {
    path: String,
    parts: Vec<String>,
    ascending: bool,
}

impl SortSpec {
    /// Parses a sort document with MongoDB's errors.
    pub fn parse(spec: &Document) -> Result<SortSpec> {
        let mut keys = Vec::with_capacity(spec.len());
        let mut natural = None;
        for (name, value) in spec {
            if let Bson::Document(meta) = value {
                let first = meta.keys().next().map(String::as_str).unwrap_or("");
                if first != "$meta" {
                    return Err(MongoError::location(
                        17312,
                        "$meta is the only expression supported by $sort right now",
                    ));
                }
                if meta.len() != 1 {
                    return Err(MongoError::failed_to_parse(
                        "Cannot have additional keys in a $meta sort specification",
                    ));
                }
                // Every metadata key sorts descending (MongoDB's sort pattern: highest scores
                // first, and the same for `$geoNear` distances, farthest first); the executor
                // puts each document's value under the field that carries it before it sorts.
                let carrier = match meta.get_str("$meta") {
                    Ok("textScore") => Some(TEXT_SCORE_FIELD),
                    Ok("geoNearDistance") => Some(GEO_NEAR_DISTANCE_FIELD),
                    _ => None,
                };
                if let Some(field) = carrier {
                    keys.push(SortKey {
                        path: field.to_string(),
                        parts: vec![field.to_string()],
                        ascending: false,
                    });
                    continue;
                }
                return Err(match meta.get("$meta") {
                    // MongoDB's answer to a `searchScore` sort changed around 8.0 (31218 before,
                    // accepted behind its hybrid-search feature flags after).
                    Some(Bson::String(kind)) if kind == "searchScore" || kind == "randVal" => {
                        not_implemented(format!(
                            "sorting by {{$meta: \"{kind}\"}} is not supported yet"
                        ))
                    }
                    Some(Bson::String(kind)) => MongoError::location(
                        31138,
                        format!("Illegal $meta sort: $meta: \"{kind}\""),
                    ),
                    _ => MongoError::location(
                        31138,
                        format!(
                            "Illegal $meta sort: {}",
                            render_element("$meta", meta.get("$meta").unwrap_or(&Bson::Null))
                        ),
                    ),
                });
            }
            if !is_number(value) {
                return Err(MongoError::location(
                    15974,
                    format!(
                        "Illegal key in $sort specification: {}",
                        render_element(name, value)
                    ),
                ));
            }
            let direction = super::values::as_f64(value);
            if direction != 1.0 && direction != -1.0 {
                return Err(MongoError::location(
                    15975,
                    "$sort key ordering must be 1 (for ascending) or -1 (for descending)",
                ));
            }
            if name == "$natural" {
                natural = Some(direction > 0.0);
                continue;
            }
            check_field_path(name)?;
            keys.push(SortKey {
                path: name.clone(),
                parts: name.split('.').map(String::from).collect(),
                ascending: direction > 0.0,
            });
        }
        if keys.len() > MAX_COMPOUND_KEYS {
            return Err(MongoError::location(13103, "too many compound keys"));
        }
        Ok(SortSpec {
            keys,
            natural,
            collation: None,
        })
    }

    /// Parses a sort of a command, whose strings sort by the command's collation.
    pub fn parse_for(spec: &Document, vars: &LetVariables) -> Result<SortSpec> {
        Ok(Self::parse(spec)?.with_collation(vars.collation_arc()))
    }

    /// The same order with strings compared by `collation` (`None`: simple).
    pub fn with_collation(mut self, collation: Option<Arc<Collation>>) -> SortSpec {
        self.collation = collation.filter(|c| !c.is_simple());
        self
    }

    /// The collation strings sort by (`None`: simple).
    pub fn collation(&self) -> Option<&Collation> {
        self.collation.as_deref()
    }

    /// The order of documents that carry values under `leading` fields (ascending, in order)
    /// and then, under `field`, a document `inner` orders: how a stage sorts its input by keys
    /// it computed, without the compound key limit (the keys are the stage's, not a user's).
    pub fn nested(leading: &[&str], field: &str, inner: Option<&SortSpec>) -> SortSpec {
        let key = |path: String, ascending: bool| SortKey {
            parts: path.split('.').map(String::from).collect(),
            path,
            ascending,
        };
        let mut keys: Vec<SortKey> = leading.iter().map(|k| key(k.to_string(), true)).collect();
        for inner in inner.iter().flat_map(|spec| &spec.keys) {
            keys.push(key(format!("{field}.{}", inner.path), inner.ascending));
        }
        SortSpec {
            keys,
            natural: None,
            collation: inner.and_then(|spec| spec.collation.clone()),
        }
    }

    /// Whether a key is `{$meta: "textScore"}`.
    pub fn sorts_by_text_score(&self) -> bool {
        self.keys.iter().any(|k| k.path == TEXT_SCORE_FIELD)
    }

    /// Whether a key is `{$meta: "geoNearDistance"}`.
    pub fn sorts_by_geo_near_distance(&self) -> bool {
        self.keys.iter().any(|k| k.path == GEO_NEAR_DISTANCE_FIELD)
    }

    /// Whether the spec orders nothing (empty, or only `$natural`).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// `Some(ascending)` when the spec asks for `$natural` (storage) order.
    pub fn natural(&self) -> Option<bool> {
        self.natural
    }

    /// The key paths with their directions (`true` = ascending), in priority order.
    pub fn fields(&self) -> impl Iterator<Item = (&str, bool)> {
        self.keys.iter().map(|k| (k.path.as_str(), k.ascending))
    }

    /// Orders two documents.
    pub fn compare(&self, a: &Document, b: &Document) -> Ordering {
        for key in &self.keys {
            let ka = key.extract(a, self.collation());
            let kb = key.extract(b, self.collation());
            let ord = compare_collated(&ka, &kb, self.collation());
            let ord = if key.ascending { ord } else { ord.reverse() };
            if ord != Ordering::Equal {
                return ord;
            }
        }
        Ordering::Equal
    }

    /// The document's sort key: one value per key path, already reduced to the value that
    /// orders it (compare keys with [`SortSpec::compare_keys`]).
    pub fn sort_key(&self, doc: &Document) -> Vec<Bson> {
        self.keys
            .iter()
            .map(|k| k.extract(doc, self.collation()))
            .collect()
    }

    /// Orders two sort keys produced by [`SortSpec::sort_key`].
    pub fn compare_keys(&self, a: &[Bson], b: &[Bson]) -> Ordering {
        for (i, key) in self.keys.iter().enumerate() {
            let (Some(x), Some(y)) = (a.get(i), b.get(i)) else {
                break;
            };
            let ord = compare_collated(x, y, self.collation());
            let ord = if key.ascending { ord } else { ord.reverse() };
            if ord != Ordering::Equal {
                return ord;
            }
        }
        Ordering::Equal
    }
}

impl SortKey {
    fn extract(&self, doc: &Document, collation: Option<&Collation>) -> Bson {
        let mut values = Vec::new();
        if let Some((first, rest)) = self.parts.split_first() {
            collect_keys(doc.get(first), rest, &mut values);
        }
        let mut best: Option<Bson> = None;
        for v in values {
            best = match best {
                None => Some(v),
                Some(b) => {
                    let ord = compare_collated(&v, &b, collation);
                    let better = if self.ascending {
                        ord == Ordering::Less
                    } else {
                        ord == Ordering::Greater
                    };
                    Some(if better { v } else { b })
                }
            };
        }
        best.unwrap_or(Bson::Null)
    }
}

/// The values a path reaches, as index key generation sees them: arrays along the path fan
/// out, a leaf array contributes its elements (or undefined when empty), anything missing is
/// null.
fn collect_keys(value: Option<&Bson>, parts: &[String], out: &mut Vec<Bson>) {
    let Some(value) = value else {
        out.push(Bson::Null);
        return;
    };
    let Some((first, rest)) = parts.split_first() else {
        match value {
            Bson::Array(items) if items.is_empty() => out.push(Bson::Undefined),
            Bson::Array(items) => out.extend(items.iter().cloned()),
            other => out.push(other.clone()),
        }
        return;
    };
    match value {
        Bson::Document(d) => collect_keys(d.get(first), rest, out),
        Bson::Array(items) => {
            if let Some(index) =
                super::values::array_index(first).filter(|i| i.to_string() == *first)
            {
                collect_keys(items.get(index), rest, out);
            } else if items.is_empty() {
                out.push(Bson::Null);
            } else {
                for item in items {
                    match item {
                        Bson::Document(d) => collect_keys(d.get(first), rest, out),
                        _ => out.push(Bson::Null),
                    }
                }
            }
        }
        _ => out.push(Bson::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn sorted(spec: Document, docs: Vec<Document>) -> Vec<i32> {
        let spec = SortSpec::parse(&spec).unwrap();
        let mut docs = docs;
        docs.sort_by(|a, b| spec.compare(a, b));
        docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
    }

    #[test]
    fn strings_sort_by_the_collation_even_in_arrays() {
        let collation = Collation::parse(&doc! {"locale": "en", "numericOrdering": true}).unwrap();
        let spec = SortSpec::parse(&doc! {"a": 1})
            .unwrap()
            .with_collation(Some(Arc::new(collation)));
        let mut docs = [
            doc! {"_id": 1, "a": "item10"},
            doc! {"_id": 2, "a": ["item9", "zz"]},
            doc! {"_id": 3, "a": "B"},
            doc! {"_id": 4, "a": "a"},
        ];
        docs.sort_by(|a, b| spec.compare(a, b));
        let ids: Vec<i32> = docs.iter().map(|d| d.get_i32("_id").unwrap()).collect();
        assert_eq!(ids, [4, 3, 2, 1]);
        let keys: Vec<Vec<Bson>> = docs.iter().map(|d| spec.sort_key(d)).collect();
        assert!(
            keys.windows(2)
                .all(|w| spec.compare_keys(&w[0], &w[1]).is_lt())
        );
    }

    #[test]
    fn scalars_sort_by_type_then_value() {
        let docs = vec![
            doc! {"_id": 1, "a": "x"},
            doc! {"_id": 2, "a": 5},
            doc! {"_id": 3},
            doc! {"_id": 4, "a": null},
            doc! {"_id": 5, "a": 1.5},
        ];
        assert_eq!(sorted(doc! {"a": 1}, docs.clone()), vec![3, 4, 5, 2, 1]);
        assert_eq!(sorted(doc! {"a": -1}, docs), vec![1, 2, 5, 3, 4]);
    }

    #[test]
    fn arrays_sort_by_min_ascending_and_max_descending() {
        let docs = vec![
            doc! {"_id": 1, "a": [1, 10]},
            doc! {"_id": 2, "a": [5]},
            doc! {"_id": 3, "a": 3},
            doc! {"_id": 4, "a": []},
        ];
        assert_eq!(sorted(doc! {"a": 1}, docs.clone()), vec![4, 1, 3, 2]);
        assert_eq!(sorted(doc! {"a": -1}, docs), vec![1, 2, 3, 4]);
    }

    #[test]
    fn dotted_paths_fan_out_through_arrays() {
        let docs = vec![
            doc! {"_id": 1, "a": [{"b": 4}, {"b": 2}]},
            doc! {"_id": 2, "a": {"b": 3}},
            doc! {"_id": 3, "a": [{"b": 5}, {"c": 1}]},
        ];
        // Doc 3's second element has no b: its ascending key is null.
        assert_eq!(sorted(doc! {"a.b": 1}, docs.clone()), vec![3, 1, 2]);
        assert_eq!(sorted(doc! {"a.b": -1}, docs), vec![3, 1, 2]);
        let docs = vec![doc! {"_id": 1, "a": [3, 1]}, doc! {"_id": 2, "a": [2, 9]}];
        assert_eq!(sorted(doc! {"a.0": 1}, docs), vec![2, 1]);
    }

    #[test]
    fn compound_keys_and_sort_keys() {
        let spec = SortSpec::parse(&doc! {"a": 1, "b": -1}).unwrap();
        let x = doc! {"a": 1, "b": 1};
        let y = doc! {"a": 1, "b": 2};
        assert_eq!(spec.compare(&x, &y), Ordering::Greater);
        assert_eq!(
            spec.sort_key(&doc! {"a": [3, 1], "b": [3, 1]}),
            vec![Bson::Int32(1), Bson::Int32(3)]
        );
        assert_eq!(
            spec.compare_keys(&spec.sort_key(&x), &spec.sort_key(&y)),
            Ordering::Greater
        );
        assert_eq!(
            spec.fields().collect::<Vec<_>>(),
            vec![("a", true), ("b", false)]
        );
    }

    #[test]
    fn parse_errors() {
        let e = SortSpec::parse(&doc! {"a": 2}).unwrap_err();
        assert_eq!(e.code().code(), 15975);
        let e = SortSpec::parse(&doc! {"a": "x"}).unwrap_err();
        assert_eq!(
            (e.code().code(), e.message()),
            (15974, "Illegal key in $sort specification: a: \"x\"")
        );
        assert_eq!(
            SortSpec::parse(&doc! {"a": {"$meta": "randVal"}})
                .unwrap_err()
                .code(),
            crate::error::ErrorCode::NotImplemented
        );
        let by_score = SortSpec::parse(&doc! {"a": {"$meta": "textScore"}, "b": 1}).unwrap();
        assert!(by_score.sorts_by_text_score());
        let (high, low) = (
            doc! {TEXT_SCORE_FIELD: 2.0, "b": 9},
            doc! {TEXT_SCORE_FIELD: 1.0, "b": 1},
        );
        assert_eq!(by_score.compare(&high, &low), Ordering::Less);
        // A `$geoNear` distance sorts descending too (farthest first), then by the next key.
        let by_distance =
            SortSpec::parse(&doc! {"d": {"$meta": "geoNearDistance"}, "name": 1}).unwrap();
        assert!(by_distance.sorts_by_geo_near_distance() && !by_distance.sorts_by_text_score());
        let (far, near, near_b) = (
            doc! {GEO_NEAR_DISTANCE_FIELD: 5.0, "name": "z"},
            doc! {GEO_NEAR_DISTANCE_FIELD: 1.0, "name": "b"},
            doc! {GEO_NEAR_DISTANCE_FIELD: 1.0, "name": "a"},
        );
        assert_eq!(by_distance.compare(&far, &near), Ordering::Less);
        assert_eq!(by_distance.compare(&near_b, &near), Ordering::Less);
        assert_eq!(
            by_distance.sort_key(&near),
            vec![Bson::Double(1.0), Bson::String("b".into())]
        );
        let e = SortSpec::parse(&doc! {"a": {"$meta": "searchScore"}}).unwrap_err();
        assert_eq!(e.code().code(), 238);
        let e = SortSpec::parse(&doc! {"a": {"$meta": "geoNearPoint"}}).unwrap_err();
        assert_eq!(
            (e.code().code(), e.message()),
            (31138, "Illegal $meta sort: $meta: \"geoNearPoint\"")
        );
        assert_eq!(
            SortSpec::parse(&doc! {"a": {"x": 1}})
                .unwrap_err()
                .code()
                .code(),
            17312
        );
        assert_eq!(
            SortSpec::parse(&doc! {"": 1}).unwrap_err().code().code(),
            40352
        );
        assert_eq!(
            SortSpec::parse(&doc! {"$a": 1}).unwrap_err().code().code(),
            16410
        );
        assert!(SortSpec::parse(&doc! {"a": 1i64, "b": -1.0}).is_ok());
        let keys =
            |n: usize| -> Document { (0..n).map(|i| (format!("f{i}"), Bson::Int32(1))).collect() };
        assert!(SortSpec::parse(&keys(32)).is_ok());
        let e = SortSpec::parse(&keys(33)).unwrap_err();
        assert_eq!(
            (e.code().code(), e.code().name().to_string(), e.message()),
            (13103, "Location13103".to_string(), "too many compound keys")
        );
        // Each key is checked first, as MongoDB parses the pattern before ordering by it.
        let mut bad = keys(40);
        bad.insert("f39", "x");
        assert_eq!(SortSpec::parse(&bad).unwrap_err().code().code(), 15974);
        let natural = SortSpec::parse(&doc! {"$natural": -1}).unwrap();
        assert_eq!((natural.natural(), natural.is_empty()), (Some(false), true));
    }
}
