//! What one shard owns of a sharded collection (the design's ownership filter): the collection's
//! entry and chunk map seen from that shard, deciding which of its documents are orphans.

use super::chunk_map::ChunkMap;
use super::chunk_version::ChunkVersion;
use super::collection_entry::CollectionEntry;
use super::shard_key::ShardKeyPattern;
use bson::Document;

/// A sharded collection as one shard knows it.
#[derive(Debug)]
pub struct OwnershipFilter {
    entry: CollectionEntry,
    chunks: ChunkMap,
    shard: String,
    /// Every chunk is this shard's: nothing here can be an orphan, so no key is computed.
    owns_everything: bool,
}

impl OwnershipFilter {
    pub fn new(entry: CollectionEntry, chunks: ChunkMap, shard: &str) -> OwnershipFilter {
        let owns_everything = chunks.shards().iter().all(|s| s == shard);
        OwnershipFilter {
            entry,
            chunks,
            shard: shard.to_string(),
            owns_everything,
        }
    }

    pub fn entry(&self) -> &CollectionEntry {
        &self.entry
    }

    pub fn chunks(&self) -> &ChunkMap {
        &self.chunks
    }

    pub fn key_pattern(&self) -> &ShardKeyPattern {
        &self.entry.key
    }

    /// This shard's version of the collection (`0|0` of its generation when it owns no chunk).
    pub fn shard_version(&self) -> ChunkVersion {
        self.chunks
            .shard_version(&self.shard, self.entry.generation)
    }

    /// Whether `doc` lies in a chunk this shard owns. A document whose shard key cannot be
    /// extracted (an array, written directly to the shard) is kept: hiding it would lose data
    /// no other shard can return.
    pub fn owns(&self, doc: &Document) -> bool {
        if self.owns_everything {
            return true;
        }
        match self.entry.key.extract(doc) {
            Ok(key) => self.owns_key(&self.entry.key.encode(&key)),
            Err(_) => true,
        }
    }

    /// Whether an encoded shard key lies in a chunk this shard owns.
    pub fn owns_key(&self, key: &[u8]) -> bool {
        self.owns_everything
            || self
                .chunks
                .chunk_for(key)
                .is_none_or(|chunk| chunk.shard == self.shard)
    }
}

/// A filter of shard `shard` owning the whole key range of a collection sharded on `key`, for
/// tests.
#[cfg(test)]
pub(crate) fn owning_every_chunk(key: Document, shard: &str) -> OwnershipFilter {
    use crate::catalog::{Chunk, CollectionGeneration};
    let key = ShardKeyPattern::parse(&key).expect("a valid shard key");
    let generation = CollectionGeneration::new(bson::Timestamp {
        time: 1,
        increment: 0,
    });
    let chunk = Chunk::new(
        &key,
        key.global_min(),
        key.global_max(),
        shard.into(),
        ChunkVersion::new(generation, 1, 0),
    );
    let chunks = ChunkMap::new(&key, vec![chunk]).expect("one chunk covers the range");
    let entry = CollectionEntry {
        ns: "db.c".into(),
        generation,
        uuid: bson::Binary {
            subtype: bson::spec::BinarySubtype::Uuid,
            bytes: vec![0; 16],
        },
        key,
        unique: false,
        last_modified: bson::DateTime::MIN,
        no_balance: false,
        permit_migrations: true,
        default_collation: None,
    };
    OwnershipFilter::new(entry, chunks, shard)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Chunk, CollectionGeneration};
    use bson::{Binary, Bson, DateTime, Timestamp, doc, spec::BinarySubtype};

    fn filter(key: Document, split: Document, shard: &str) -> OwnershipFilter {
        let key = ShardKeyPattern::parse(&key).unwrap();
        let generation = CollectionGeneration::new(Timestamp {
            time: 1,
            increment: 0,
        });
        let chunks = vec![
            Chunk::new(
                &key,
                key.global_min(),
                split.clone(),
                "s0".into(),
                ChunkVersion::new(generation, 1, 0),
            ),
            Chunk::new(
                &key,
                split,
                key.global_max(),
                "s1".into(),
                ChunkVersion::new(generation, 1, 1),
            ),
        ];
        let chunks = ChunkMap::new(&key, chunks).unwrap();
        let entry = CollectionEntry {
            ns: "db.c".into(),
            generation,
            uuid: Binary {
                subtype: BinarySubtype::Uuid,
                bytes: vec![0; 16],
            },
            key,
            unique: false,
            last_modified: DateTime::MIN,
            no_balance: false,
            permit_migrations: true,
            default_collation: None,
        };
        OwnershipFilter::new(entry, chunks, shard)
    }

    #[test]
    fn documents_outside_owned_chunks_are_orphans() {
        let s0 = filter(doc! {"a": 1}, doc! {"a": 10}, "s0");
        assert!(s0.owns(&doc! {"a": 9}));
        assert!(!s0.owns(&doc! {"a": 10}));
        // A missing key is null, which sorts below every number.
        assert!(s0.owns(&doc! {"b": 1}));
        assert!(!s0.owns(&doc! {"a": "text"}));
        assert!(s0.owns(&doc! {"a": [1, 20]}), "unextractable keys are kept");
        let s1 = filter(doc! {"a": 1}, doc! {"a": 10}, "s1");
        assert!(s1.owns(&doc! {"a": Bson::MaxKey}));
        assert!(!s1.owns(&doc! {"a": 9}));
        assert_eq!((s1.shard_version().major, s1.shard_version().minor), (1, 1));
    }

    #[test]
    fn hashed_keys_are_owned_by_their_hash() {
        let s0 = filter(doc! {"a": "hashed"}, doc! {"a": 0_i64}, "s0");
        // The chunk split at hash 0: a document is s0's exactly when its hash is negative.
        for a in 0..50 {
            let hash = crate::document::hashed::hash_value(&Bson::Int32(a)).unwrap();
            assert_eq!(s0.owns(&doc! {"a": a}), hash < 0, "a = {a}");
        }
    }

    #[test]
    fn a_shard_owning_every_chunk_has_no_orphans() {
        let only = owning_every_chunk(doc! {"a": 1}, "s0");
        assert!(only.owns(&doc! {"a": [1, 2]}));
        assert!(only.owns(&doc! {"a": 5}));
    }
}
