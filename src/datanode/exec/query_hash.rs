//! `queryHash` and `planCacheKey`, as MongoDB's profiler entries and explain show them: eight
//! upper-case hex digits naming a query's shape (the filter with its values replaced by their
//! types, the sort, the collation), and that shape together with the collection's indexes —
//! so operations of one shape group together, and a new index gives them a new key.

use super::plan::QueryShape;
use crate::datanode::storage::CollectionMeta;
use crate::document::hashed::hash64;
use bson::{Bson, Document};

/// The shape's `queryHash` and, on `coll`, its `planCacheKey`.
pub fn hashes(coll: &CollectionMeta, shape: &QueryShape<'_>) -> (String, String) {
    let mut shape_doc = Document::new();
    shape_doc.insert("filter", filter_shape(shape.filter, 0));
    if let Some(sort) = shape.sort {
        shape_doc.insert("sort", format!("{sort:?}"));
    }
    if let Some(collation) = shape.collation {
        shape_doc.insert("collation", collation.spec());
    }
    let query_hash = hex(&Bson::Document(shape_doc.clone()));
    let indexes: Vec<Bson> = coll
        .indexes
        .iter()
        .map(|index| Bson::Document(index.spec.clone()))
        .collect();
    shape_doc.insert("indexes", indexes);
    (query_hash, hex(&Bson::Document(shape_doc)))
}

fn hex(value: &Bson) -> String {
    format!("{:08X}", hash64(value, 0) as u64 as u32)
}

/// How deep a filter's shape is followed: a deeper part is one opaque value. Filters reaching
/// the planner are parsed already, so this only bounds the work, never refuses.
const MAX_DEPTH: usize = 32;

/// `filter` with every literal replaced by its type's name: `{a: 5}` and `{a: 6}` share a shape.
fn filter_shape(filter: &Document, depth: usize) -> Bson {
    Bson::Document(
        filter
            .iter()
            .map(|(key, value)| (key.clone(), value_shape(value, depth + 1)))
            .collect(),
    )
}

fn value_shape(value: &Bson, depth: usize) -> Bson {
    if depth > MAX_DEPTH {
        return Bson::String("?".into());
    }
    match value {
        // Operators (`{$gt: 5}`) and clauses (`$and: [{...}]`) keep their structure.
        Bson::Document(doc) if doc.keys().next().is_some_and(|k| k.starts_with('$')) => {
            filter_shape(doc, depth)
        }
        Bson::Array(items) if items.iter().all(|i| matches!(i, Bson::Document(_))) => {
            Bson::Array(items.iter().map(|i| value_shape(i, depth + 1)).collect())
        }
        other => Bson::String(format!("{:?}", other.element_type())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datanode::exec::test_catalog::{collection, index};
    use bson::doc;

    fn of(coll: &CollectionMeta, filter: Document) -> (String, String) {
        hashes(coll, &QueryShape::filter(&filter))
    }

    #[test]
    fn one_shape_one_hash_and_indexes_change_the_cache_key() {
        let plain = collection(vec![]);
        let (hash, key) = of(&plain, doc! {"a": 5, "b": {"$gt": 1}});
        assert_eq!(hash.len(), 8);
        assert!(
            hash.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase())
        );
        assert_eq!(
            of(&plain, doc! {"a": 6, "b": {"$gt": 9}}),
            (hash.clone(), key.clone())
        );
        assert_ne!(of(&plain, doc! {"a": "x", "b": {"$gt": 1}}).0, hash);
        assert_ne!(of(&plain, doc! {"a": 5, "b": {"$lt": 1}}).0, hash);
        let indexed = collection(vec![index(doc! {"a": 1}, 3, false)]);
        let (same_hash, other_key) = of(&indexed, doc! {"a": 5, "b": {"$gt": 1}});
        assert_eq!(same_hash, hash);
        assert_ne!(other_key, key);
    }
}
