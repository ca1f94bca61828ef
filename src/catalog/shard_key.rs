//! Shard key patterns (`{a: 1, b: 1}`, `{a: "hashed"}`, compound with one hashed field): their
//! validation, a document's shard key (missing fields are null, hashed fields hashed), the
//! encoded key chunk boundaries are compared in, and the key intervals a query targets.

use crate::document::{hashed, keystring};
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::key_intervals::{KeyInterval, KeyOrder, KeyPart, key_intervals};
use bson::{Bson, Document};

/// One field of a shard key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardKeyField {
    pub path: String,
    pub hashed: bool,
}

/// A validated shard key pattern.
#[derive(Clone, Debug, PartialEq)]
pub struct ShardKeyPattern {
    pattern: Document,
    fields: Vec<ShardKeyField>,
}

impl ShardKeyPattern {
    pub fn parse(pattern: &Document) -> Result<ShardKeyPattern> {
        let unsupported = || {
            MongoError::bad_value(format!(
                "Unsupported shard key pattern {}. Pattern must either be a single hashed field, or a list of ascending fields",
                crate::document::display::render_doc(pattern)
            ))
        };
        if pattern.is_empty() {
            return Err(unsupported());
        }
        let mut fields = Vec::with_capacity(pattern.len());
        for (path, value) in pattern {
            if path.is_empty()
                || path.starts_with('$')
                || path.split('.').any(|p| p.is_empty() || p.starts_with('$'))
            {
                return Err(unsupported());
            }
            let hashed = match value {
                Bson::String(s) if s == "hashed" => true,
                Bson::Int32(1) | Bson::Int64(1) => false,
                Bson::Double(d) if *d == 1.0 => false,
                _ => return Err(unsupported()),
            };
            fields.push(ShardKeyField {
                path: path.clone(),
                hashed,
            });
        }
        if fields.iter().filter(|f| f.hashed).count() > 1 {
            return Err(unsupported());
        }
        Ok(ShardKeyPattern {
            pattern: pattern.clone(),
            fields,
        })
    }

    pub fn pattern(&self) -> &Document {
        &self.pattern
    }

    pub fn fields(&self) -> &[ShardKeyField] {
        &self.fields
    }

    pub fn is_hashed(&self) -> bool {
        self.fields.iter().any(|f| f.hashed)
    }

    /// Whether the leading field is hashed: then an empty collection starts with its chunks
    /// spread over the shards, since hashed values spread documents evenly.
    pub fn has_hashed_prefix(&self) -> bool {
        self.fields.first().is_some_and(|f| f.hashed)
    }

    /// The split points cutting the hashed prefix's 64-bit range into `chunks` equal parts
    /// (symmetric around 0, as MongoDB places them); the other fields are MinKey.
    pub fn hashed_split_points(&self, chunks: usize) -> Vec<Document> {
        if chunks < 2 || !self.has_hashed_prefix() {
            return Vec::new();
        }
        let chunks = chunks as i64;
        let interval = (i64::MAX / chunks) * 2;
        let mut points = Vec::new();
        let mut current = if chunks % 2 == 0 {
            points.push(0);
            interval
        } else {
            interval / 2
        };
        for _ in 0..(chunks - 1) / 2 {
            points.push(current);
            points.push(-current);
            current = current.saturating_add(interval);
        }
        points.sort_unstable();
        points
            .into_iter()
            .map(|p| {
                self.fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| {
                        let v = if i == 0 { Bson::Int64(p) } else { Bson::MinKey };
                        (f.path.clone(), v)
                    })
                    .collect()
            })
            .collect()
    }

    /// Whether `doc`'s field names are exactly the pattern's, in order.
    pub fn is_key_shaped(&self, doc: &Document) -> bool {
        doc.len() == self.fields.len() && doc.keys().zip(&self.fields).all(|(k, f)| *k == f.path)
    }

    /// Whether a unique index on `index_key` is allowed on a collection with this shard key:
    /// one led by `_id` always (as MongoDB allows it), any other only when the shard key's
    /// fields start its key (directions and hashing aside), so each shard can enforce it alone.
    pub fn is_unique_index_compatible(&self, index_key: &Document) -> bool {
        if index_key.keys().next().is_some_and(|k| k == "_id") {
            return true;
        }
        self.fields.len() <= index_key.len()
            && self
                .fields
                .iter()
                .zip(index_key.keys())
                .all(|(f, k)| f.path == *k)
    }

    /// `{<field>: MinKey, ...}`: the lower end of the first chunk.
    pub fn global_min(&self) -> Document {
        self.fields
            .iter()
            .map(|f| (f.path.clone(), Bson::MinKey))
            .collect()
    }

    /// Whether `refined` keeps this key's fields (names and hashing, in order) and adds
    /// fields after them: what `refineCollectionShardKey` may change a key to.
    pub fn is_extended_by(&self, refined: &ShardKeyPattern) -> bool {
        self.fields.len() <= refined.fields.len()
            && self.fields.iter().zip(&refined.fields).all(|(a, b)| a == b)
    }

    /// [`is_extended_by`](Self::is_extended_by), or MongoDB's InvalidOptions refusal.
    pub fn check_refinement(&self, refined: &ShardKeyPattern) -> Result<()> {
        if self.is_extended_by(refined) {
            return Ok(());
        }
        Err(MongoError::new(
            ErrorCode::InvalidOptions,
            format!(
                "refineCollectionShardKey shard key {} does not extend the current shard key {}",
                crate::document::display::render_doc(refined.pattern()),
                crate::document::display::render_doc(self.pattern())
            ),
        ))
    }

    /// A chunk bound of this key as a bound of `refined` (which extends it): the new fields are
    /// MinKey, except on the global maximum, whose new fields are MaxKey — so every document
    /// stays in the chunk it was in (a key's old prefix decides, whatever the new fields hold).
    pub fn refine_bound(&self, refined: &ShardKeyPattern, bound: &Document) -> Document {
        let filler = if *bound == self.global_max() {
            Bson::MaxKey
        } else {
            Bson::MinKey
        };
        let mut refined_bound = bound.clone();
        for field in &refined.fields[self.fields.len().min(refined.fields.len())..] {
            refined_bound.insert(field.path.clone(), filler.clone());
        }
        refined_bound
    }

    /// `{<field>: MaxKey, ...}`: the upper end of the last chunk.
    pub fn global_max(&self) -> Document {
        self.fields
            .iter()
            .map(|f| (f.path.clone(), Bson::MaxKey))
            .collect()
    }

    /// The shard key of a document: each field's value (null when missing), hashed for hashed
    /// fields. Arrays are refused, as MongoDB refuses them.
    pub fn extract(&self, doc: &Document) -> Result<Document> {
        let mut key = Document::new();
        for field in &self.fields {
            let value = value_at(doc, &field.path)?.unwrap_or(Bson::Null);
            let value = if field.hashed {
                Bson::Int64(hashed::hash_value(&value)?)
            } else {
                value
            };
            key.insert(field.path.clone(), value);
        }
        Ok(key)
    }

    /// The encoded form of a key document (shard key values in pattern order), in which chunk
    /// boundaries and keys compare.
    pub fn encode(&self, key: &Document) -> Vec<u8> {
        keystring::encode_key(key.values().map(|v| (v, false)))
    }

    /// The key intervals `filter` targets (hashed values for hashed fields); one unbounded
    /// interval when the filter does not bound the key's leading field.
    pub fn target_intervals(&self, filter: &Document) -> Vec<KeyInterval> {
        let parts: Vec<KeyPart<'_>> = self
            .fields
            .iter()
            .map(|f| KeyPart {
                path: &f.path,
                order: if f.hashed {
                    KeyOrder::Hashed
                } else {
                    KeyOrder::Ascending
                },
            })
            .collect();
        match key_intervals(&parts, filter, false) {
            Some(found) if found.bounded() => found.intervals,
            _ => vec![KeyInterval::all()],
        }
    }

    /// The full key a filter fixes by equality on every field, if it does (single-document
    /// writes are targeted by it).
    pub fn equality_key(&self, filter: &Document) -> Option<Document> {
        let mut key = Document::new();
        for field in &self.fields {
            let value = match crate::query::bounds::field_bounds(filter, &field.path, false)? {
                crate::query::bounds::FieldBounds::Points(points) if points.len() == 1 => {
                    points.into_iter().next()?
                }
                // `{a: null}` bounds to [undefined, null]: the key value of a missing field.
                crate::query::bounds::FieldBounds::Points(points)
                    if points == [Bson::Undefined, Bson::Null] =>
                {
                    Bson::Null
                }
                _ => return None,
            };
            let value = if field.hashed {
                Bson::Int64(hashed::hash_value(&value).ok()?)
            } else {
                value
            };
            key.insert(field.path.clone(), value);
        }
        Some(key)
    }
}

/// The value at a dotted path, refusing arrays on the way or at the end.
fn value_at(doc: &Document, path: &str) -> Result<Option<Bson>> {
    let array_error = || {
        MongoError::new(
            ErrorCode::BadValue,
            format!("Shard key cannot contain array values or array descendants. Field: {path}"),
        )
    };
    let mut current = doc;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        match current.get(part) {
            None => return Ok(None),
            Some(Bson::Array(_)) => return Err(array_error()),
            Some(Bson::Document(inner)) if parts.peek().is_some() => current = inner,
            Some(value) if parts.peek().is_none() => return Ok(Some(value.clone())),
            Some(_) => return Ok(None),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod refine_tests {
    use super::*;
    use bson::doc;

    #[test]
    fn refined_keys_extend_and_bounds_keep_their_documents() {
        let old = ShardKeyPattern::parse(&doc! {"a": 1, "b": 1}).unwrap();
        let new = ShardKeyPattern::parse(&doc! {"a": 1, "b": 1, "c": 1, "d": 1}).unwrap();
        assert!(old.is_extended_by(&new));
        assert!(old.is_extended_by(&old));
        assert!(!new.is_extended_by(&old));
        let swapped = ShardKeyPattern::parse(&doc! {"b": 1, "a": 1, "c": 1}).unwrap();
        assert!(!old.is_extended_by(&swapped));
        let hashed = ShardKeyPattern::parse(&doc! {"a": "hashed"}).unwrap();
        let ranged = ShardKeyPattern::parse(&doc! {"a": 1, "x": 1}).unwrap();
        assert!(!hashed.is_extended_by(&ranged));

        assert_eq!(
            old.refine_bound(&new, &doc! {"a": 0, "b": 0}),
            doc! {"a": 0, "b": 0, "c": Bson::MinKey, "d": Bson::MinKey}
        );
        assert_eq!(old.refine_bound(&new, &old.global_min()), new.global_min());
        assert_eq!(old.refine_bound(&new, &old.global_max()), new.global_max());
        // A document keeps its chunk: {a: 0, b: 0, c: <anything>} is at or above the refined
        // bound {a: 0, b: 0, c: MinKey, d: MinKey}, and below the next one.
        let bound = new.encode(&old.refine_bound(&new, &doc! {"a": 0, "b": 0}));
        let next = new.encode(&old.refine_bound(&new, &doc! {"a": 0, "b": 1}));
        let key = new.encode(&doc! {"a": 0, "b": 0, "c": Bson::MaxKey, "d": "z"});
        assert!(bound <= key && key < next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn patterns_are_validated() {
        assert!(ShardKeyPattern::parse(&doc! {"a": 1, "b.c": 1}).is_ok());
        assert!(ShardKeyPattern::parse(&doc! {"a": "hashed", "b": 1}).is_ok());
        for bad in [
            doc! {},
            doc! {"a": -1},
            doc! {"a": "hashed", "b": "hashed"},
            doc! {"$a": 1},
            doc! {"a": "text"},
        ] {
            assert_eq!(
                ShardKeyPattern::parse(&bad).unwrap_err().code(),
                ErrorCode::BadValue,
                "{bad}"
            );
        }
    }

    #[test]
    fn unique_indexes_must_start_with_the_shard_key_fields() {
        let range = ShardKeyPattern::parse(&doc! {"a": 1, "b": 1}).unwrap();
        assert!(range.is_unique_index_compatible(&doc! {"_id": 1}));
        assert!(range.is_unique_index_compatible(&doc! {"a": 1, "b": 1}));
        assert!(range.is_unique_index_compatible(&doc! {"a": -1, "b": 1, "c": 1}));
        assert!(!range.is_unique_index_compatible(&doc! {"a": 1}));
        assert!(!range.is_unique_index_compatible(&doc! {"b": 1, "a": 1}));
        assert!(range.is_unique_index_compatible(&doc! {"_id": 1, "c": 1}));
        let hashed = ShardKeyPattern::parse(&doc! {"a": "hashed"}).unwrap();
        assert!(hashed.is_unique_index_compatible(&doc! {"a": 1}));
        assert!(!hashed.is_unique_index_compatible(&doc! {"c": 1, "a": 1}));
    }

    #[test]
    fn keys_are_extracted_with_nulls_and_hashes() {
        let p = ShardKeyPattern::parse(&doc! {"a": 1, "b.c": 1}).unwrap();
        assert_eq!(
            p.extract(&doc! {"a": 5, "b": {"c": "x"}}).unwrap(),
            doc! {"a": 5, "b.c": "x"}
        );
        assert_eq!(
            p.extract(&doc! {"z": 1}).unwrap(),
            doc! {"a": Bson::Null, "b.c": Bson::Null}
        );
        assert!(p.extract(&doc! {"a": [1, 2]}).is_err());
        assert!(p.extract(&doc! {"a": 1, "b": [{"c": 1}]}).is_err());
        let h = ShardKeyPattern::parse(&doc! {"a": "hashed"}).unwrap();
        let key = h.extract(&doc! {"a": 1}).unwrap();
        assert!(matches!(key.get("a"), Some(Bson::Int64(_))));
    }

    #[test]
    fn hashed_split_points_cut_the_range_evenly() {
        let p = ShardKeyPattern::parse(&doc! {"a": "hashed", "b": 1}).unwrap();
        assert!(p.has_hashed_prefix());
        assert!(p.hashed_split_points(1).is_empty());
        assert_eq!(
            p.hashed_split_points(2),
            vec![doc! {"a": 0_i64, "b": Bson::MinKey}]
        );
        let three: Vec<i64> = p
            .hashed_split_points(3)
            .iter()
            .map(|d| d.get_i64("a").unwrap())
            .collect();
        assert_eq!(three, vec![-(i64::MAX / 3), i64::MAX / 3]);
        let four: Vec<i64> = p
            .hashed_split_points(4)
            .iter()
            .map(|d| d.get_i64("a").unwrap())
            .collect();
        assert_eq!(four, vec![-(i64::MAX / 4) * 2, 0, (i64::MAX / 4) * 2]);
        assert!(
            !ShardKeyPattern::parse(&doc! {"a": 1, "b": "hashed"})
                .unwrap()
                .has_hashed_prefix()
        );
    }

    #[test]
    fn targeting_bounds_queries_on_the_key() {
        let p = ShardKeyPattern::parse(&doc! {"a": 1, "b": 1}).unwrap();
        let key = |a: i32, b: i32| p.encode(&doc! {"a": a, "b": b});
        let eq = p.target_intervals(&doc! {"a": 3});
        assert!(eq.iter().any(|iv| iv.contains(&key(3, 9))));
        assert!(!eq.iter().any(|iv| iv.contains(&key(4, 0))));
        let range = p.target_intervals(&doc! {"a": {"$gte": 2, "$lt": 4}});
        assert!(range.iter().any(|iv| iv.contains(&key(3, 0))));
        assert!(!range.iter().any(|iv| iv.contains(&key(4, 0))));
        assert_eq!(p.target_intervals(&doc! {"b": 1}), vec![KeyInterval::all()]);
        assert_eq!(
            p.equality_key(&doc! {"a": 1, "b": 2}),
            Some(doc! {"a": 1, "b": 2})
        );
        assert_eq!(p.equality_key(&doc! {"a": 1}), None);
    }
}
