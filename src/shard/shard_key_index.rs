//! Whether a collection has an index that can serve a shard key, with MongoDB's rules: its key
//! starts with the shard key's fields in the same directions (for a unique shard key, it is
//! exactly the shard key), it indexes every document once (not sparse, partial, hidden,
//! multikey, wildcard, or still building) and in the simple collation. Used by `shardCollection` and
//! `refineCollectionShardKey`.

use crate::catalog::ShardKeyPattern;
use crate::datanode::storage::{CollectionMeta, IndexMeta};
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document};

/// What the collection's indexes offer a shard key.
#[derive(Debug, PartialEq)]
pub(crate) enum ShardKeyIndex {
    Usable,
    /// No index's key fits the shard key.
    Missing,
    /// Indexes fit the shard key, but none can serve it, for these reasons.
    Unusable(Vec<&'static str>),
}

/// Which indexes fit a shard key.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum KeyFit {
    /// Indexes whose key starts with the shard key.
    Prefix,
    /// Indexes on exactly the shard key (refining a unique shard key).
    Exact,
    /// Unique indexes on exactly the shard key (sharding with `unique: true`).
    UniqueExact,
}

impl ShardKeyIndex {
    /// The state of `coll`'s indexes for `pattern`.
    pub(crate) fn of(coll: &CollectionMeta, pattern: &ShardKeyPattern, fit: KeyFit) -> Self {
        let fits = |index: &&IndexMeta| {
            let key = index.key_pattern();
            match fit {
                KeyFit::Prefix => is_prefix_of(pattern.pattern(), &key),
                KeyFit::Exact => same_key(&key, pattern.pattern()),
                KeyFit::UniqueExact => index.is_unique() && same_key(&key, pattern.pattern()),
            }
        };
        let mut reasons = Vec::new();
        for index in coll.indexes.iter().filter(fits) {
            let why = unusable_because(index);
            if why.is_empty() {
                return ShardKeyIndex::Usable;
            }
            for reason in why {
                if !reasons.contains(&reason) {
                    reasons.push(reason);
                }
            }
        }
        if reasons.is_empty() {
            ShardKeyIndex::Missing
        } else {
            ShardKeyIndex::Unusable(reasons)
        }
    }

    /// MongoDB's refusal when no index serves the shard key.
    pub(crate) fn require(self, pattern: &ShardKeyPattern) -> Result<()> {
        let reasons = match self {
            ShardKeyIndex::Usable => return Ok(()),
            ShardKeyIndex::Missing => String::new(),
            ShardKeyIndex::Unusable(reasons) => format!(" {}", reasons.join(" ")),
        };
        Err(MongoError::new(
            ErrorCode::InvalidOptions,
            format!(
                "Please create an index that starts with the proposed shard key {} before sharding the collection.{reasons}",
                render_doc(pattern.pattern())
            ),
        ))
    }
}

/// The name of an index of `coll` that serves `pattern` (its key starts with the shard key
/// and it indexes every document once): migrations and the range deleter read ranges through it.
pub(crate) fn serving_index(coll: &CollectionMeta, pattern: &ShardKeyPattern) -> Option<String> {
    coll.indexes
        .iter()
        .find(|index| {
            is_prefix_of(pattern.pattern(), &index.key_pattern())
                && unusable_because(index).is_empty()
        })
        .map(|index| index.name.clone())
}

/// Why an index whose key fits a shard key cannot serve it (nothing: it can).
fn unusable_because(index: &IndexMeta) -> Vec<&'static str> {
    let flag = |name: &str| matches!(index.spec.get(name), Some(Bson::Boolean(true)));
    let mut why = Vec::new();
    if flag("sparse") {
        why.push("Index key is sparse.");
    }
    if index.spec.contains_key("partialFilterExpression") {
        why.push("Index key is partial.");
    }
    if flag("hidden") {
        why.push("Index is hidden.");
    }
    if index.multikey {
        why.push("Index key is multikey.");
    }
    // A compound wildcard index's key may start with the shard key's fields, but it holds a
    // key per leaf under the wildcard and none for a document without indexed fields.
    let wildcard = |field: &str| field == "$**" || field.ends_with(".$**");
    if index.key_pattern().keys().any(|k| wildcard(k)) {
        why.push("Index is a wildcard index.");
    }
    if !index.ready {
        why.push("Index is still being built.");
    }
    // Shard keys compare by the simple collation; an index's keys in another cannot route.
    if index.spec.contains_key("collation") {
        why.push("Index has a non-simple collation.");
    }
    why
}

/// Whether `prefix`'s fields start `key`, with the same directions (`1` and `1.0` alike).
pub(crate) fn is_prefix_of(prefix: &Document, key: &Document) -> bool {
    prefix.len() <= key.len()
        && prefix
            .iter()
            .zip(key.iter())
            .all(|((pf, pv), (kf, kv))| pf == kf && same_direction(pv, kv))
}

fn same_key(a: &Document, b: &Document) -> bool {
    a.len() == b.len() && is_prefix_of(a, b)
}

fn same_direction(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::String(x), Bson::String(y)) => x == y,
        (Bson::String(_), _) | (_, Bson::String(_)) => false,
        _ => crate::document::order::compare_values(a, b) == std::cmp::Ordering::Equal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn prefixes_compare_fields_and_directions() {
        assert!(is_prefix_of(&doc! {"a": 1}, &doc! {"a": 1.0, "b": -1}));
        assert!(!is_prefix_of(&doc! {"a": 1}, &doc! {"a": -1}));
        assert!(!is_prefix_of(&doc! {"a": 1, "b": 1}, &doc! {"a": 1}));
        assert!(is_prefix_of(
            &doc! {"a": "hashed"},
            &doc! {"a": "hashed", "b": 1}
        ));
        assert!(!is_prefix_of(&doc! {"a": "hashed"}, &doc! {"a": 1}));
        assert!(same_key(&doc! {"a": 1}, &doc! {"a": 1_i64}));
    }

    #[test]
    fn unusable_indexes_say_why() {
        let index = |spec: Document, multikey: bool| IndexMeta {
            name: spec.get_str("name").unwrap().to_string(),
            ident: 0,
            spec,
            parsed: None,
            multikey,
            multikey_paths: Default::default(),
            ready: true,
            id_collation: None,
        };
        let mut coll = CollectionMeta {
            name: "c".into(),
            ident: 0,
            uuid: uuid::Uuid::nil(),
            options: doc! {},
            indexes: Vec::new(),
        };
        let pattern = ShardKeyPattern::parse(&doc! {"a": 1}).unwrap();
        assert_eq!(
            ShardKeyIndex::of(&coll, &pattern, KeyFit::Prefix),
            ShardKeyIndex::Missing
        );
        coll.indexes.push(index(
            doc! {"key": {"a": 1, "b": 1}, "name": "s", "sparse": true},
            false,
        ));
        coll.indexes
            .push(index(doc! {"key": {"a": 1}, "name": "m"}, true));
        assert_eq!(
            ShardKeyIndex::of(&coll, &pattern, KeyFit::Prefix),
            ShardKeyIndex::Unusable(vec!["Index key is sparse.", "Index key is multikey."])
        );
        assert_eq!(
            ShardKeyIndex::of(&coll, &pattern, KeyFit::Exact),
            ShardKeyIndex::Unusable(vec!["Index key is multikey."])
        );
        assert_eq!(
            ShardKeyIndex::of(&coll, &pattern, KeyFit::UniqueExact),
            ShardKeyIndex::Missing
        );
        coll.indexes.clear();
        coll.indexes.push(index(
            doc! {"key": {"a": 1, "$**": 1}, "name": "w", "wildcardProjection": {"a": 0}},
            false,
        ));
        assert_eq!(
            ShardKeyIndex::of(&coll, &pattern, KeyFit::Prefix),
            ShardKeyIndex::Unusable(vec!["Index is a wildcard index."])
        );
        coll.indexes
            .push(index(doc! {"key": {"a": 1, "c": -1}, "name": "ok"}, false));
        assert_eq!(
            ShardKeyIndex::of(&coll, &pattern, KeyFit::Prefix),
            ShardKeyIndex::Usable
        );
    }
}
