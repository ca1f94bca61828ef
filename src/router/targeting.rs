//! Targeting: which shards a sharded collection's request must reach, from its shard key
//! pattern and chunk map — an inserted document's shard key finds one chunk; a query's bounds
//! on the shard key find the chunks they overlap (every owning shard when it bounds nothing).
//! Each lookup is O(log chunks) per key or interval.

use super::catalog_cache::CollectionRouting;
use crate::catalog::ChunkVersion;
use crate::error::{MongoError, Result};
use bson::Document;

impl CollectionRouting {
    /// The version of the collection on `shard`, as attached to requests sent there.
    pub fn version_on(&self, shard: &str) -> ChunkVersion {
        self.chunks.shard_version(shard, self.entry.generation)
    }

    /// Every shard owning at least one chunk, in name order.
    pub fn owners(&self) -> Vec<String> {
        self.chunks.shards().into_iter().collect()
    }

    /// The shard an inserted document belongs to (missing shard key fields count as null).
    pub fn shard_for_document(&self, doc: &Document) -> Result<String> {
        let key = self.entry.key.extract(doc)?;
        self.chunks
            .chunk_for(&self.entry.key.encode(&key))
            .map(|c| c.shard.clone())
            .ok_or_else(|| MongoError::internal("the chunk map does not cover a shard key"))
    }

    /// The shards a query must reach: the owners of the chunks its shard key bounds overlap,
    /// in name order; never empty.
    pub fn shards_for_filter(&self, filter: &Document) -> Vec<String> {
        let intervals = self.entry.key.target_intervals(filter);
        let shards: Vec<String> = self.chunks.shards_for(&intervals).into_iter().collect();
        if shards.is_empty() {
            // An empty interval set (a contradiction such as `{a: {$in: []}}`) matches nothing;
            // any one shard answers that correctly.
            return self.owners().into_iter().take(1).collect();
        }
        shards
    }

    /// The one shard that can hold a document matching `filter`, when the filter fixes every
    /// shard key field by equality (single-document writes are targeted by it).
    pub fn shard_for_exact_key(&self, filter: &Document) -> Option<String> {
        let key = self.entry.key.equality_key(filter)?;
        self.chunks
            .chunk_for(&self.entry.key.encode(&key))
            .map(|c| c.shard.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Chunk, ChunkMap, CollectionEntry, CollectionGeneration, ShardKeyPattern};
    use bson::{Timestamp, doc};

    fn routing(key: Document) -> CollectionRouting {
        let pattern = ShardKeyPattern::parse(&key).unwrap();
        let generation = CollectionGeneration::new(Timestamp {
            time: 1,
            increment: 0,
        });
        let mut bounds = vec![pattern.global_min()];
        if pattern.has_hashed_prefix() {
            bounds.extend(pattern.hashed_split_points(2));
        } else {
            bounds.push(doc! {"a": 10});
        }
        bounds.push(pattern.global_max());
        let chunks = bounds
            .windows(2)
            .enumerate()
            .map(|(i, w)| {
                Chunk::new(
                    &pattern,
                    w[0].clone(),
                    w[1].clone(),
                    format!("shard{i}"),
                    ChunkVersion::new(generation, 1, i as u32),
                )
            })
            .collect();
        CollectionRouting {
            chunks: ChunkMap::new(&pattern, chunks).unwrap(),
            entry: CollectionEntry {
                ns: "db.c".into(),
                generation,
                uuid: bson::Binary {
                    subtype: bson::spec::BinarySubtype::Uuid,
                    bytes: vec![0; 16],
                },
                key: pattern,
                unique: false,
                last_modified: bson::DateTime::now(),
                no_balance: false,
            },
        }
    }

    #[test]
    fn range_keys_target_by_bounds() {
        let r = routing(doc! {"a": 1});
        assert_eq!(r.shard_for_document(&doc! {"a": 3}).unwrap(), "shard0");
        assert_eq!(r.shard_for_document(&doc! {"a": 10}).unwrap(), "shard1");
        assert_eq!(r.shard_for_document(&doc! {"b": 1}).unwrap(), "shard0");
        assert_eq!(r.shards_for_filter(&doc! {"a": {"$gt": 20}}), ["shard1"]);
        assert_eq!(r.shards_for_filter(&doc! {"b": 1}).len(), 2);
        assert_eq!(r.shards_for_filter(&doc! {"a": {"$in": [1, 11]}}).len(), 2);
        assert_eq!(
            r.shard_for_exact_key(&doc! {"a": 12}).as_deref(),
            Some("shard1")
        );
        assert_eq!(r.shard_for_exact_key(&doc! {"a": {"$gt": 12}}), None);
        assert_eq!(r.version_on("shard1").minor, 1);
        assert!(r.version_on("shard7").is_unset());
    }

    #[test]
    fn hashed_keys_target_equalities_only() {
        let r = routing(doc! {"a": "hashed"});
        let shard = r.shard_for_document(&doc! {"a": "x"}).unwrap();
        assert_eq!(
            r.shards_for_filter(&doc! {"a": "x"}),
            std::slice::from_ref(&shard)
        );
        assert_eq!(r.shard_for_exact_key(&doc! {"a": "x"}), Some(shard));
        assert_eq!(r.shards_for_filter(&doc! {"a": {"$gt": 5}}).len(), 2);
        let spread: std::collections::BTreeSet<String> = (0..50)
            .map(|i| r.shard_for_document(&doc! {"a": i}).unwrap())
            .collect();
        assert_eq!(spread.len(), 2, "hashed values spread over both chunks");
        assert!(r.shard_for_document(&doc! {"a": [1]}).is_err());
    }
}
