//! The keys a document produces in an index, as MongoDB's B-tree key generator makes them: an
//! array on the path makes one key per element (the index becomes multikey), a missing field
//! is null, an empty array is `undefined`, compound keys are the product of their fields'
//! values, and two fields may not both run through different arrays ("parallel arrays").

use super::spec::{FieldKind, IndexSpec};
use crate::document::type_bits::TypeBits;
use crate::document::{hashed, keystring};
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document};

/// The keys of one document in one index.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IndexKeys {
    /// Encoded keys, deduplicated, in ascending order.
    pub keys: Vec<Vec<u8>>,
    /// Each key's type bits (`document::type_bits`), what the key's bytes leave out of the
    /// values; for a key two array elements share, the first element's.
    pub types: Vec<Vec<u8>>,
    /// An array was expanded: the index is multikey from now on.
    pub multikey: bool,
    /// A wildcard index's paths under which an array was traversed (MongoDB's multikey
    /// metadata keys), in order; empty for other indexes.
    pub multikey_paths: Vec<String>,
}

/// One field's values and the array paths expanded to reach them.
pub(super) struct FieldValues {
    pub(super) values: Vec<Bson>,
    pub(super) arrays: Vec<String>,
    /// No value lies at the path, only the null that stands for it: through an object without
    /// the field, a scalar, or an array none of whose elements has it (`a.b` in `{a: []}` or
    /// `{a: [1]}`). A sparse index skips the document, as MongoDB's does.
    pub(super) missing: bool,
}

fn collect(value: &Bson, path: &[&str], prefix: &str, out: &mut FieldValues) {
    let Some((first, rest)) = path.split_first() else {
        out.missing = false;
        match value {
            Bson::Array(items) => {
                out.arrays.push(prefix.to_string());
                if items.is_empty() {
                    out.values.push(Bson::Undefined);
                } else {
                    out.values.extend(items.iter().cloned());
                }
            }
            other => out.values.push(other.clone()),
        }
        return;
    };
    let child = |name: &str| {
        if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}.{name}")
        }
    };
    match value {
        Bson::Document(d) => match d.get(*first) {
            Some(v) => collect(v, rest, &child(first), out),
            None => out.values.push(Bson::Null),
        },
        Bson::Array(items) => {
            // A numeric component names an element of the array itself (positional path).
            if let Some(item) = first.parse::<usize>().ok().and_then(|i| items.get(i)) {
                collect(item, rest, &child(first), out);
                return;
            }
            out.arrays.push(prefix.to_string());
            let before = out.values.len();
            for item in items {
                if let Bson::Document(d) = item {
                    match d.get(*first) {
                        Some(v) => collect(v, rest, &child(first), out),
                        None => out.values.push(Bson::Null),
                    }
                }
            }
            if out.values.len() == before {
                out.values.push(Bson::Null);
            }
        }
        _ => out.values.push(Bson::Null),
    }
}

pub(super) fn field_values(doc: &Document, path: &str) -> FieldValues {
    let parts: Vec<&str> = path.split('.').collect();
    let mut out = FieldValues {
        values: Vec::new(),
        arrays: Vec::new(),
        missing: true,
    };
    match doc.get(parts[0]) {
        Some(v) => collect(v, &parts[1..], parts[0], &mut out),
        None => out.values.push(Bson::Null),
    }
    out.values.dedup_by(|a, b| {
        crate::document::order::values_equal(a, b) && a.element_type() == b.element_type()
    });
    out
}

/// Whether two expanded array paths are "parallel": neither lies on the other's path.
fn parallel(a: &str, b: &str) -> bool {
    let on_path = |x: &str, y: &str| x == y || y.starts_with(&format!("{x}."));
    !on_path(a, b) && !on_path(b, a)
}

/// The keys of `doc` in `index`.
pub fn index_keys(index: &IndexSpec, doc: &Document) -> Result<IndexKeys> {
    if let Some((_, filter)) = &index.partial_filter {
        if !filter.matches(doc) {
            return Ok(IndexKeys::default());
        }
    }
    if let Some(text) = &index.text {
        return super::text_keys::text_keys(index, text, doc);
    }
    if let Some(wildcard) = &index.wildcard {
        return super::wildcard_keys::wildcard_keys(index, wildcard, doc);
    }
    let mut fields: Vec<FieldValues> = Vec::with_capacity(index.fields.len());
    // Several cells for one document make a `2dsphere` index multikey, as in MongoDB.
    let mut several_cells = false;
    for f in &index.fields {
        let cells = match (f.kind, &index.sphere, &index.flat) {
            (FieldKind::Sphere2d, Some(params), _) => {
                Some(super::geo_keys::sphere_keys(params, doc, &f.path)?)
            }
            (FieldKind::Flat2d, _, Some(params)) => {
                Some(super::geo_keys::flat_keys(params, doc, &f.path)?)
            }
            _ => None,
        };
        match cells {
            Some(cells) => {
                if cells.is_empty() {
                    // From version 2 a document without geometry has no keys at all.
                    return Ok(IndexKeys::default());
                }
                several_cells |= cells.len() > 1;
                fields.push(FieldValues {
                    values: cells,
                    arrays: Vec::new(),
                    missing: false,
                });
            }
            None => fields.push(field_values(doc, &f.path)),
        }
    }
    if index.sparse && fields.iter().all(|f| f.missing) {
        return Ok(IndexKeys::default());
    }
    let array_fields: Vec<(usize, &String)> = fields
        .iter()
        .enumerate()
        .flat_map(|(i, f)| f.arrays.iter().map(move |a| (i, a)))
        .collect();
    for (i, a) in &array_fields {
        for (j, b) in &array_fields {
            if i != j && parallel(a, b) {
                return Err(MongoError::new(
                    ErrorCode::CannotIndexParallelArrays,
                    format!("cannot index parallel arrays [{b}] [{a}]"),
                ));
            }
        }
    }
    let multikey = !array_fields.is_empty() || several_cells;
    // Per field, each value to encode: the value, whether descending, and its type bits.
    let mut components: Vec<Vec<(Bson, bool, TypeBits)>> = Vec::with_capacity(fields.len());
    for (field, values) in index.fields.iter().zip(&fields) {
        let mut encoded = Vec::with_capacity(values.values.len());
        for value in &values.values {
            let collated = index.collation.as_ref().map(|c| c.comparison_key(value));
            let value = collated.as_ref().unwrap_or(value);
            let (value, descending) = match field.kind {
                FieldKind::Hashed => {
                    if !values.arrays.is_empty() {
                        return Err(MongoError::new(
                            ErrorCode::Location(16766),
                            "Error: hashed indexes do not currently support array values",
                        ));
                    }
                    (Bson::Int64(hashed::hash_value(value)?), false)
                }
                FieldKind::Ascending
                | FieldKind::Sphere2d
                | FieldKind::Flat2d
                | FieldKind::Wildcard => (value.clone(), false),
                FieldKind::Descending => (value.clone(), true),
            };
            let bits = TypeBits::of_component(&value, values.missing);
            encoded.push((value, descending, bits));
        }
        components.push(encoded);
    }
    let mut keys = vec![(Vec::new(), TypeBits::new())];
    for options in &components {
        let mut next = Vec::with_capacity(keys.len() * options.len());
        for (prefix, prefix_bits) in &keys {
            for (value, descending, bits) in options {
                let mut key = prefix.clone();
                keystring::encode_value(value, *descending, &mut key);
                let mut key_bits = prefix_bits.clone();
                key_bits.append(bits);
                next.push((key, key_bits));
            }
        }
        keys = next;
    }
    Ok(IndexKeys::from_unsorted(keys, multikey))
}

impl IndexKeys {
    /// Keys with their type bits, in any order, possibly repeated.
    pub(super) fn from_unsorted(mut keys: Vec<(Vec<u8>, TypeBits)>, multikey: bool) -> IndexKeys {
        // Stable: of keys two elements share, the first element's type bits stay.
        keys.sort_by(|a, b| a.0.cmp(&b.0));
        keys.dedup_by(|a, b| a.0 == b.0);
        let (keys, types) = keys
            .into_iter()
            .map(|(key, bits)| (key, bits.into_bytes()))
            .unzip();
        IndexKeys {
            keys,
            types,
            multikey,
            multikey_paths: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn spec(key: Document) -> IndexSpec {
        IndexSpec::parse(&doc! {"key": key}).unwrap()
    }

    fn keys_of(key: Document, doc: Document) -> Vec<Vec<u8>> {
        index_keys(&spec(key), &doc).unwrap().keys
    }

    fn one(value: Bson) -> Vec<u8> {
        keystring::encode_one(&value)
    }

    #[test]
    fn keys_in_the_index_collation() {
        let spec = IndexSpec::parse(&doc! {
            "key": {"a": 1}, "collation": {"locale": "en", "strength": 2}
        })
        .unwrap();
        let key = |doc: Document| index_keys(&spec, &doc).unwrap().keys;
        assert_eq!(key(doc! {"a": "abc"}), key(doc! {"a": "ABC"}));
        assert_ne!(key(doc! {"a": "abc"}), key(doc! {"a": "abd"}));
        assert!(key(doc! {"a": "B"}) > key(doc! {"a": "a"}));
        assert_eq!(key(doc! {"a": 5}), keys_of(doc! {"a": 1}, doc! {"a": 5}));
        assert_eq!(
            spec.document
                .get_document("collation")
                .unwrap()
                .get_i32("strength"),
            Ok(2)
        );
    }

    #[test]
    fn scalars_missing_and_arrays() {
        assert_eq!(
            keys_of(doc! {"a": 1}, doc! {"a": 5}),
            vec![one(Bson::Int32(5))]
        );
        assert_eq!(keys_of(doc! {"a": 1}, doc! {"b": 5}), vec![one(Bson::Null)]);
        assert_eq!(
            keys_of(doc! {"a": 1}, doc! {"a": []}),
            vec![one(Bson::Undefined)]
        );
        let k = index_keys(&spec(doc! {"a": 1}), &doc! {"a": [3, 1, 3, [2]]}).unwrap();
        assert!(k.multikey);
        assert_eq!(k.keys.len(), 3, "1, 3 and the inner array [2]");
        assert_eq!(
            keys_of(doc! {"a.b": 1}, doc! {"a": [{"b": 1}, {"c": 2}]}),
            {
                let mut v = vec![one(Bson::Int32(1)), one(Bson::Null)];
                v.sort();
                v
            }
        );
        assert_eq!(
            keys_of(doc! {"a.1": 1}, doc! {"a": [5, 6]}),
            vec![one(Bson::Int32(6))]
        );
    }

    #[test]
    fn compound_keys_and_parallel_arrays() {
        let k = keys_of(doc! {"a": 1, "b": -1}, doc! {"a": [1, 2], "b": 7});
        assert_eq!(k.len(), 2);
        let err = index_keys(&spec(doc! {"a": 1, "b": 1}), &doc! {"a": [1], "b": [2]}).unwrap_err();
        assert_eq!(err.code().code(), 171);
        // Two fields through the same array are allowed.
        let same = index_keys(
            &spec(doc! {"a.x": 1, "a.y": 1}),
            &doc! {"a": [{"x": 1, "y": 2}, {"x": 3, "y": 4}]},
        )
        .unwrap();
        assert_eq!(same.keys.len(), 4);
    }

    #[test]
    fn sparse_partial_and_hashed() {
        let sparse = IndexSpec::parse(&doc! {"key": {"a": 1}, "sparse": true}).unwrap();
        assert!(index_keys(&sparse, &doc! {"b": 1}).unwrap().keys.is_empty());
        assert_eq!(
            index_keys(&sparse, &doc! {"a": null}).unwrap().keys.len(),
            1
        );
        assert_eq!(index_keys(&sparse, &doc! {"a": []}).unwrap().keys.len(), 1);
        // Under an array the path is missing when no element has the field.
        let dotted = IndexSpec::parse(&doc! {"key": {"a.b": 1}, "sparse": true}).unwrap();
        for absent in [
            doc! {"a": []},
            doc! {"a": [1, 2]},
            doc! {"a": [{"c": 1}]},
            doc! {"a": 5},
        ] {
            assert!(
                index_keys(&dotted, &absent).unwrap().keys.is_empty(),
                "{absent}"
            );
        }
        for present in [
            doc! {"a": [{"b": null}]},
            doc! {"a": {"b": null}},
            doc! {"a": [{}, {"b": 1}]},
        ] {
            assert!(
                !index_keys(&dotted, &present).unwrap().keys.is_empty(),
                "{present}"
            );
        }
        // A compound sparse index skips only a document missing every field.
        let compound = IndexSpec::parse(&doc! {"key": {"a.b": 1, "c": 1}, "sparse": true}).unwrap();
        assert!(
            index_keys(&compound, &doc! {"a": [], "c": 1})
                .unwrap()
                .keys
                .len()
                == 1
        );
        let partial =
            IndexSpec::parse(&doc! {"key": {"a": 1}, "partialFilterExpression": {"a": {"$gt": 5}}})
                .unwrap();
        assert!(
            index_keys(&partial, &doc! {"a": 1})
                .unwrap()
                .keys
                .is_empty()
        );
        assert_eq!(index_keys(&partial, &doc! {"a": 9}).unwrap().keys.len(), 1);
        let hashed = spec(doc! {"a": "hashed"});
        assert_eq!(
            index_keys(&hashed, &doc! {"a": 1}).unwrap().keys,
            index_keys(&hashed, &doc! {"a": 1.0}).unwrap().keys
        );
        assert_eq!(
            index_keys(&hashed, &doc! {"a": [1]})
                .unwrap_err()
                .code()
                .code(),
            16766
        );
    }
}
