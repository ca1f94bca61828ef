//! The keys a document produces in a wildcard index, as MongoDB's `WildcardKeyGenerator`
//! makes them: `($_path, value)` for every leaf the projection keeps, reached through
//! subdocuments and through arrays without their positions; an empty object is indexed as
//! `{}`, an empty array as `undefined`, an array inside an array as the value itself; fields
//! whose names hold a `.` are skipped. Traversing an array makes the index multikey at that
//! path (MongoDB records each such path, and plans each queried path by its own).
//! A compound wildcard index puts its regular fields' values before and after that pair, in
//! its key pattern's order; a document with no leaf under the wildcard but some regular field
//! is keyed with `MinKey` for both path and value; regular fields may not hold arrays.

use super::keys::{IndexKeys, field_values};
use super::spec::{FieldKind, IndexSpec};
use super::wildcard::{Projected, WildcardSpec};
use crate::depth::recurse;
use crate::document::keystring;
use crate::document::type_bits::TypeBits;
use crate::error::{MongoError, Result};
use bson::{Bson, Document};
use std::collections::BTreeSet;

/// The encoded values of a compound wildcard index's regular fields on one side of the
/// wildcard field, with their type bits.
#[derive(Default)]
struct Regular {
    key: Vec<u8>,
    bits: TypeBits,
}

struct Walk<'a> {
    index: &'a IndexSpec,
    spec: &'a WildcardSpec,
    before: &'a Regular,
    after: &'a Regular,
    keys: Vec<(Vec<u8>, TypeBits)>,
    /// The paths whose arrays were traversed.
    multikey_paths: BTreeSet<String>,
}

/// The key of `value` at `path` in a wildcard index.
pub fn wildcard_key(path: &str, value: &Bson, descending: bool) -> Vec<u8> {
    let mut key = keystring::encode_one(&Bson::String(path.to_string()));
    keystring::encode_value(value, descending, &mut key);
    key
}

impl Walk<'_> {
    fn add(&mut self, path: &str, value: &Bson) {
        let collated = self
            .index
            .collation
            .as_ref()
            .map(|c| c.comparison_key(value));
        let value = collated.as_ref().unwrap_or(value);
        let path = Bson::String(path.to_string());
        self.push(&path, value);
    }

    /// The key of `($_path, value)` between the regular fields' values.
    fn push(&mut self, path: &Bson, value: &Bson) {
        let mut key = self.before.key.clone();
        let mut bits = self.before.bits.clone();
        keystring::encode_value(path, false, &mut key);
        keystring::encode_value(value, self.spec.descending, &mut key);
        bits.push_component(path, false);
        bits.push_component(value, false);
        key.extend_from_slice(&self.after.key);
        bits.append(&self.after.bits);
        self.keys.push((key, bits));
    }

    fn state_of(&self, parent: Projected, path: &str) -> Projected {
        match parent {
            Projected::Whole => Projected::Whole,
            _ => self.spec.projected(path),
        }
    }

    /// The fields of `obj` below `prefix`.
    fn object(&mut self, obj: &Document, prefix: &str, state: Projected) {
        for (name, value) in obj {
            // Not queryable by a path: MongoDB skips it.
            if name.contains('.') {
                continue;
            }
            let path = match prefix {
                "" => name.clone(),
                _ => format!("{prefix}.{name}"),
            };
            let child = self.state_of(state, &path);
            if child != Projected::Dropped {
                recurse(|| self.value(value, &path, child, false));
            }
        }
    }

    fn value(&mut self, value: &Bson, path: &str, state: Projected, in_array: bool) {
        match value {
            Bson::Array(_) if in_array => self.add(path, value),
            Bson::Array(items) => {
                if !self.multikey_paths.contains(path) {
                    self.multikey_paths.insert(path.to_string());
                }
                if items.is_empty() {
                    self.add(path, &Bson::Undefined);
                }
                for item in items {
                    recurse(|| self.value(item, path, state, true));
                }
            }
            Bson::Document(d) => {
                // A subdocument that leaves no key below it (the projection empties it, or its
                // fields' names hold dots) is indexed as `{}`, so `$exists` still finds it.
                let before = self.keys.len();
                self.object(d, path, state);
                if self.keys.len() == before {
                    self.add(path, &Bson::Document(Document::new()));
                }
            }
            // Where only some paths below are kept, an inclusion drops the scalars.
            _ if state == Projected::Partly && self.spec.inclusion => {}
            other => self.add(path, other),
        }
    }
}

/// The regular fields' values in `doc` on each side of the wildcard field, and whether any of
/// them is present. An array on a regular field's path is refused, as MongoDB refuses it.
fn regular_values(index: &IndexSpec, doc: &Document) -> Result<(Regular, Regular, bool)> {
    let (mut before, mut after) = (Regular::default(), Regular::default());
    let mut present = false;
    let mut side = &mut before;
    for field in &index.fields {
        if field.kind == FieldKind::Wildcard {
            side = &mut after;
            continue;
        }
        let found = field_values(doc, &field.path);
        if !found.arrays.is_empty() {
            return Err(MongoError::location(
                7246301,
                format!(
                    "The non-wildcard field '{}' of a compound wildcard index cannot be an array",
                    field.path
                ),
            ));
        }
        present |= !found.missing;
        let value = found.values.first().cloned().unwrap_or(Bson::Null);
        let collated = index.collation.as_ref().map(|c| c.comparison_key(&value));
        let value = collated.unwrap_or(value);
        keystring::encode_value(&value, field.kind == FieldKind::Descending, &mut side.key);
        side.bits.push_component(&value, found.missing);
    }
    Ok((before, after, present))
}

/// The keys of `doc` in the wildcard index `index`.
pub fn wildcard_keys(index: &IndexSpec, spec: &WildcardSpec, doc: &Document) -> Result<IndexKeys> {
    let (before, after, regular_present) = regular_values(index, doc)?;
    let mut walk = Walk {
        index,
        spec,
        before: &before,
        after: &after,
        keys: Vec::new(),
        multikey_paths: BTreeSet::new(),
    };
    walk.object(doc, "", Projected::Partly);
    // A document with a regular field but no leaf under the wildcard is still found through
    // the regular fields.
    if walk.keys.is_empty() && regular_present {
        walk.push(&Bson::MinKey, &Bson::MinKey);
    }
    let multikey = !walk.multikey_paths.is_empty();
    let mut keys = IndexKeys::from_unsorted(walk.keys, multikey);
    keys.multikey_paths = walk.multikey_paths.into_iter().collect();
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn keys(spec: Document, doc: Document) -> (Vec<(String, Bson)>, bool) {
        let index = IndexSpec::parse(&spec).unwrap();
        let wildcard = index.wildcard.clone().unwrap();
        let keys = wildcard_keys(&index, &wildcard, &doc).unwrap();
        let mut expected = Vec::new();
        for (key, types) in keys.keys.iter().zip(&keys.types) {
            use crate::document::key_decode::{KeyValue, decode_key};
            let values = decode_key(key, &[false, wildcard.descending], Some(types)).unwrap();
            let [KeyValue::Value(Bson::String(path)), KeyValue::Value(value)] = &values[..] else {
                panic!("a path and a value: {values:?}");
            };
            expected.push((path.clone(), value.clone()));
        }
        (expected, keys.multikey)
    }

    fn pairs(list: &[(&str, Bson)]) -> Vec<(String, Bson)> {
        list.iter()
            .map(|(p, v)| (p.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn leaves_through_objects_and_arrays() {
        let (k, multikey) = keys(
            doc! {"key": {"$**": 1}},
            doc! {"_id": 1, "a": 1, "b": {"c": "x", "d": {}}, "e": [], "f.g": 3},
        );
        // An empty array's path is multikey too, as MongoDB marks it before its key.
        assert!(multikey);
        assert_eq!(
            k,
            pairs(&[
                ("a", Bson::Int32(1)),
                ("b.c", Bson::String("x".into())),
                ("b.d", Bson::Document(doc! {})),
                ("e", Bson::Undefined),
            ])
        );
        let (k, multikey) = keys(
            doc! {"key": {"$**": 1}},
            doc! {"a": [1, {"b": 2}, [3, {"c": 4}], 1]},
        );
        assert!(multikey);
        assert_eq!(
            k,
            pairs(&[
                ("a", Bson::Int32(1)),
                (
                    "a",
                    Bson::Array(vec![Bson::Int32(3), Bson::Document(doc! {"c": 4})])
                ),
                ("a.b", Bson::Int32(2)),
            ])
        );
    }

    #[test]
    fn values_in_the_index_collation() {
        let spec = doc! {"key": {"$**": 1}, "collation": {"locale": "en", "strength": 2}};
        let index = IndexSpec::parse(&spec).unwrap();
        let wildcard = index.wildcard.clone().unwrap();
        let key = |doc: Document| wildcard_keys(&index, &wildcard, &doc).unwrap().keys;
        assert_eq!(key(doc! {"s": "ABC"}), key(doc! {"s": "abc"}));
        assert_ne!(key(doc! {"s": "abc"}), key(doc! {"t": "abc"}));
    }

    #[test]
    fn objects_alone_are_not_multikey() {
        let (k, multikey) = keys(doc! {"key": {"$**": 1}}, doc! {"a": {"b": {"c": 1}}});
        assert!(!multikey);
        assert_eq!(k, pairs(&[("a.b.c", Bson::Int32(1))]));
    }

    #[test]
    fn projections_pick_the_paths() {
        let doc = doc! {"_id": 7, "a": {"b": 1, "c": 2}, "d": [{"b": 3}, 4], "x": 5};
        let (k, _) = keys(doc! {"key": {"a.$**": 1}}, doc.clone());
        assert_eq!(
            k,
            pairs(&[("a.b", Bson::Int32(1)), ("a.c", Bson::Int32(2))])
        );
        let (k, _) = keys(
            doc! {"key": {"$**": 1}, "wildcardProjection": {"d.b": 1, "_id": 1}},
            doc.clone(),
        );
        assert_eq!(
            k,
            pairs(&[("_id", Bson::Int32(7)), ("d.b", Bson::Int32(3))])
        );
        let (k, _) = keys(
            doc! {"key": {"$**": 1}, "wildcardProjection": {"a.b": 0, "d": 0}},
            doc.clone(),
        );
        assert_eq!(k, pairs(&[("a.c", Bson::Int32(2)), ("x", Bson::Int32(5))]));
        // A subdocument the projection empties is indexed as `{}`.
        let (k, _) = keys(
            doc! {"key": {"$**": 1}, "wildcardProjection": {"a.z": 1}},
            doc,
        );
        assert_eq!(k, pairs(&[("a", Bson::Document(doc! {}))]));
    }

    /// The decoded keys of a compound wildcard index, whose directions are `directions`.
    fn compound(spec: Document, directions: &[bool], doc: Document) -> Result<Vec<Vec<Bson>>> {
        use crate::document::key_decode::{KeyValue, decode_key};
        let index = IndexSpec::parse(&spec).unwrap();
        let wildcard = index.wildcard.clone().unwrap();
        let keys = wildcard_keys(&index, &wildcard, &doc)?;
        Ok(keys
            .keys
            .iter()
            .zip(&keys.types)
            .map(|(key, types)| {
                decode_key(key, directions, Some(types))
                    .unwrap()
                    .into_iter()
                    .map(|v| match v {
                        KeyValue::Value(v) => v,
                        // A missing field: a null whose type bits say so.
                        KeyValue::Missing => Bson::Undefined,
                        other => panic!("a value: {other:?}"),
                    })
                    .collect()
            })
            .collect())
    }

    #[test]
    fn compound_keys_hold_the_regular_fields() {
        let spec = doc! {
            "key": {"a": 1, "$**": 1, "c": -1},
            "wildcardProjection": {"a": 0, "c": 0},
        };
        let dirs = [false, false, false, true];
        let keys = compound(
            spec.clone(),
            &dirs,
            doc! {"_id": 1, "a": 5, "b": {"x": 1, "y": "s"}, "c": "z"},
        );
        assert_eq!(
            keys.unwrap(),
            vec![
                vec![
                    Bson::Int32(5),
                    Bson::String("b.x".into()),
                    Bson::Int32(1),
                    Bson::String("z".into())
                ],
                vec![
                    Bson::Int32(5),
                    Bson::String("b.y".into()),
                    Bson::String("s".into()),
                    Bson::String("z".into())
                ],
            ]
        );
        // No leaf under the wildcard: the regular fields with `MinKey` for path and value.
        let keys = compound(spec.clone(), &dirs, doc! {"_id": 1, "a": 5}).unwrap();
        assert_eq!(
            keys,
            vec![vec![
                Bson::Int32(5),
                Bson::MinKey,
                Bson::MinKey,
                Bson::Undefined
            ]]
        );
        // Nothing indexed at all: no key.
        assert!(
            compound(spec.clone(), &dirs, doc! {"_id": 1})
                .unwrap()
                .is_empty()
        );
        let err = compound(spec, &dirs, doc! {"a": [1, 2], "b": 1}).unwrap_err();
        assert_eq!(err.code().code(), 7246301);
    }

    #[test]
    fn compound_subtree_keys() {
        let spec = doc! {"key": {"a.$**": 1, "b.c": 1}};
        let index = IndexSpec::parse(&spec).unwrap();
        let wildcard = index.wildcard.clone().unwrap();
        let keys = wildcard_keys(
            &index,
            &wildcard,
            &doc! {"a": {"x": 1, "y": [2]}, "b": {"c": 3}},
        )
        .unwrap();
        assert!(keys.multikey);
        let keys = compound(
            spec.clone(),
            &[false; 3],
            doc! {"a": {"x": 1, "y": [2]}, "b": {"c": 3}},
        )
        .unwrap();
        assert_eq!(
            keys,
            vec![
                vec![Bson::String("a.x".into()), Bson::Int32(1), Bson::Int32(3)],
                vec![Bson::String("a.y".into()), Bson::Int32(2), Bson::Int32(3)],
            ]
        );
        // An array above a regular field is refused too.
        let err = compound(spec, &[false; 3], doc! {"b": [{"c": 1}]}).unwrap_err();
        assert_eq!(err.code().code(), 7246301);
    }

    #[test]
    fn multikey_paths_are_the_arrays_traversed() {
        let paths = |spec: Document, doc: Document| {
            let index = IndexSpec::parse(&spec).unwrap();
            let wildcard = index.wildcard.clone().unwrap();
            let keys = wildcard_keys(&index, &wildcard, &doc).unwrap();
            assert_eq!(keys.multikey, !keys.multikey_paths.is_empty());
            keys.multikey_paths
        };
        let all = doc! {"key": {"$**": 1}};
        // Each array met, once; an array inside an array is a value, not traversed.
        assert_eq!(
            paths(
                all.clone(),
                doc! {"a": [{"b": [1]}, {"b": [2], "c": [[3]]}], "d": {"e": []}, "f": 1}
            ),
            ["a", "a.b", "a.c", "d.e"]
        );
        assert!(paths(all, doc! {"a": {"b": 1}, "c": 2}).is_empty());
        // Only the paths the index holds.
        let projected = doc! {"key": {"$**": 1}, "wildcardProjection": {"x": 0}};
        assert_eq!(paths(projected, doc! {"x": [1], "y": [2]}), ["y"]);
        assert!(paths(doc! {"key": {"a.$**": 1}}, doc! {"b": [1], "a": {"c": 1}}).is_empty());
        let compound = doc! {"key": {"r": 1, "a.$**": 1}};
        assert_eq!(paths(compound, doc! {"r": 1, "a": {"c": [1]}}), ["a.c"]);
    }
}
