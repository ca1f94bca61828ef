//! The chunks of a sharded collection: contiguous key ranges `[min, max)` covering the whole
//! key space, each owned by one shard at one chunk version, ordered by their encoded lower
//! bound so that finding a key's chunk is O(log chunks).

use super::chunk_version::{ChunkVersion, CollectionGeneration};
use super::shard_key::ShardKeyPattern;
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::key_intervals::KeyInterval;
use bson::Document;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;

/// Whether `a` is a later version than `b` of the same generation.
fn newer(a: &ChunkVersion, b: &ChunkVersion) -> bool {
    (a.major, a.minor) > (b.major, b.minor)
}

/// One chunk.
#[derive(Clone, Debug, PartialEq)]
pub struct Chunk {
    pub min: Document,
    pub max: Document,
    pub shard: String,
    pub version: ChunkVersion,
    /// Encoded `min`.
    pub min_key: Vec<u8>,
    /// Encoded `max`.
    pub max_key: Vec<u8>,
}

impl Chunk {
    pub fn new(
        pattern: &ShardKeyPattern,
        min: Document,
        max: Document,
        shard: String,
        version: ChunkVersion,
    ) -> Chunk {
        Chunk {
            min_key: pattern.encode(&min),
            max_key: pattern.encode(&max),
            min,
            max,
            shard,
            version,
        }
    }

    /// Whether the chunk holds `key` (the last chunk also holds keys equal to MaxKey).
    pub fn contains(&self, key: &[u8], last: bool) -> bool {
        key >= self.min_key.as_slice() && (key < self.max_key.as_slice() || last)
    }
}

/// The chunks of one collection generation. Chunks are shared (`Arc`), so the copy an
/// incremental refresh patches costs pointers, not chunks.
#[derive(Clone, Debug, Default)]
pub struct ChunkMap {
    by_min: BTreeMap<Arc<[u8]>, Arc<Chunk>>,
    /// Each owning shard's version (its highest chunk version) and chunk count, kept up to
    /// date: every routed request needs a version, and a scan of 100k chunks per request would
    /// not do.
    shards: BTreeMap<String, ShardPlacement>,
}

#[derive(Clone, Copy, Debug)]
struct ShardPlacement {
    version: ChunkVersion,
    chunks: usize,
}

impl ChunkMap {
    /// Builds the map and checks that the chunks tile the key space without gaps or overlaps.
    pub fn new(pattern: &ShardKeyPattern, chunks: Vec<Chunk>) -> Result<ChunkMap> {
        let mut map = ChunkMap::default();
        for chunk in chunks {
            map.insert(Arc::new(chunk));
        }
        map.check_coverage(pattern)?;
        Ok(map)
    }

    fn insert(&mut self, chunk: Arc<Chunk>) {
        let placement = self
            .shards
            .entry(chunk.shard.clone())
            .or_insert(ShardPlacement {
                version: chunk.version,
                chunks: 0,
            });
        placement.chunks += 1;
        if newer(&chunk.version, &placement.version) {
            placement.version = chunk.version;
        }
        if let Some(replaced) = self
            .by_min
            .insert(Arc::from(chunk.min_key.as_slice()), chunk)
        {
            self.forget_placement(&replaced);
        }
    }

    fn remove(&mut self, min_key: &[u8]) {
        if let Some(removed) = self.by_min.remove(min_key) {
            self.forget_placement(&removed);
        }
    }

    /// Accounts for a chunk leaving the map: its shard may own nothing any more, or its
    /// version may have been the shard's highest.
    fn forget_placement(&mut self, chunk: &Chunk) {
        let Some(placement) = self.shards.get_mut(&chunk.shard) else {
            return;
        };
        placement.chunks -= 1;
        if placement.chunks == 0 {
            self.shards.remove(&chunk.shard);
        } else if placement.version == chunk.version {
            // Rare (versions only grow in a valid history): find the next highest.
            let highest = self
                .by_min
                .values()
                .filter(|c| c.shard == chunk.shard)
                .map(|c| c.version)
                .max_by_key(|v| (v.major, v.minor));
            if let Some(highest) = highest {
                placement.version = highest;
            }
        }
    }

    fn inconsistent(what: &str) -> MongoError {
        MongoError::new(
            ErrorCode::ConflictingOperationInProgress,
            format!("the routing table is inconsistent: {what}"),
        )
    }

    fn check_coverage(&self, pattern: &ShardKeyPattern) -> Result<()> {
        let Some(first) = self.by_min.values().next() else {
            return Err(Self::inconsistent("no chunks"));
        };
        if first.min_key != pattern.encode(&pattern.global_min()) {
            return Err(Self::inconsistent(
                "the first chunk does not start at MinKey",
            ));
        }
        let mut expected = first.min_key.as_slice();
        for chunk in self.by_min.values() {
            if chunk.min_key != expected {
                return Err(Self::inconsistent("chunks overlap or leave a gap"));
            }
            expected = &chunk.max_key;
        }
        if expected != pattern.encode(&pattern.global_max()) {
            return Err(Self::inconsistent("the last chunk does not end at MaxKey"));
        }
        Ok(())
    }

    /// Whether `chunk` (in the map) meets its neighbours: the previous one ends where it
    /// starts (or it starts at MinKey), the next one starts where it ends (or it ends at MaxKey).
    fn meets_neighbours(&self, pattern: &ShardKeyPattern, chunk: &Chunk) -> bool {
        let before = self
            .by_min
            .range::<[u8], _>((Bound::Unbounded, Bound::Excluded(chunk.min_key.as_slice())))
            .next_back();
        let after = self
            .by_min
            .range::<[u8], _>((Bound::Excluded(chunk.min_key.as_slice()), Bound::Unbounded))
            .next();
        let starts = match before {
            Some((_, previous)) => previous.max_key == chunk.min_key,
            None => chunk.min_key == pattern.encode(&pattern.global_min()),
        };
        let ends = match after {
            Some((next, _)) => **next == *chunk.max_key,
            None => chunk.max_key == pattern.encode(&pattern.global_max()),
        };
        starts && ends
    }

    /// This map with `updates` applied: chunks changed since it was built (splits, merges)
    /// replace the chunks they overlap. The tiling is checked where it changed, so an
    /// incomplete set of updates is an error rather than a wrong map; the rest of the map is
    /// shared with this one.
    pub fn with_updates(&self, pattern: &ShardKeyPattern, updates: Vec<Chunk>) -> Result<ChunkMap> {
        let mut replaced = BTreeSet::new();
        for chunk in &updates {
            let range = KeyInterval {
                low: chunk.min_key.clone(),
                high: Some(chunk.max_key.clone()),
            };
            replaced.extend(
                self.overlapping(&range)
                    .filter(|old| old.max_key > chunk.min_key)
                    .map(|old| old.min_key.clone()),
            );
        }
        // The updates go in first, so that a shard's version moves up to theirs before the
        // chunks they replace leave (no search for the shard's next highest version).
        let mut map = self.clone();
        let updates: Vec<Arc<Chunk>> = updates.into_iter().map(Arc::new).collect();
        for chunk in &updates {
            map.insert(Arc::clone(chunk));
        }
        for min in replaced {
            if !updates.iter().any(|u| u.min_key == min) {
                map.remove(&min);
            }
        }
        for chunk in &updates {
            let present = map
                .by_min
                .get(chunk.min_key.as_slice())
                .is_some_and(|c| Arc::ptr_eq(c, chunk));
            if present && !map.meets_neighbours(pattern, chunk) {
                return Err(Self::inconsistent("chunks overlap or leave a gap"));
            }
        }
        if map.by_min.is_empty() {
            return Err(Self::inconsistent("no chunks"));
        }
        Ok(map)
    }

    pub fn len(&self) -> usize {
        self.by_min.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_min.is_empty()
    }

    pub fn chunks(&self) -> impl Iterator<Item = &Chunk> {
        self.by_min.values().map(|c| &**c)
    }

    fn is_last(&self, chunk: &Chunk) -> bool {
        self.by_min
            .keys()
            .next_back()
            .is_some_and(|k| **k == *chunk.min_key)
    }

    /// The chunk holding an encoded key.
    pub fn chunk_for(&self, key: &[u8]) -> Option<&Chunk> {
        let (_, chunk) = self
            .by_min
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(key)))
            .next_back()?;
        chunk.contains(key, self.is_last(chunk)).then_some(&**chunk)
    }

    /// The chunks overlapping an interval of encoded keys, in key order.
    pub fn overlapping<'a>(
        &'a self,
        interval: &'a KeyInterval,
    ) -> impl Iterator<Item = &'a Chunk> + 'a {
        // The chunk holding `low` may start before it.
        let start = self
            .by_min
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(interval.low.as_slice())))
            .next_back()
            .map(|(k, _)| Arc::clone(k))
            .unwrap_or_else(|| Arc::from(&[][..]));
        self.by_min
            .range::<[u8], _>((Bound::Included(&*start), Bound::Unbounded))
            .map(|(_, c)| &**c)
            .take_while(move |c| {
                interval
                    .high
                    .as_deref()
                    .is_none_or(|h| c.min_key.as_slice() < h)
            })
    }

    /// The shards owning chunks in any of `intervals`.
    pub fn shards_for(&self, intervals: &[KeyInterval]) -> BTreeSet<String> {
        if intervals.iter().any(|iv| *iv == KeyInterval::all()) {
            return self.shards();
        }
        let mut out = BTreeSet::new();
        for interval in intervals {
            for chunk in self.overlapping(interval) {
                out.insert(chunk.shard.clone());
            }
        }
        out
    }

    /// Every shard owning at least one chunk.
    pub fn shards(&self) -> BTreeSet<String> {
        self.shards.keys().cloned().collect()
    }

    /// The highest chunk version overall.
    pub fn collection_version(&self) -> Option<ChunkVersion> {
        self.shards
            .values()
            .map(|p| p.version)
            .max_by_key(|v| (v.major, v.minor))
    }

    /// The highest chunk version on `shard` (`0|0` of the generation when it owns none).
    pub fn shard_version(&self, shard: &str, generation: CollectionGeneration) -> ChunkVersion {
        self.shards
            .get(shard)
            .map(|p| p.version)
            .unwrap_or(ChunkVersion::new(generation, 0, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{Bson, Timestamp, doc};

    fn setup() -> (ShardKeyPattern, ChunkMap, CollectionGeneration) {
        let pattern = ShardKeyPattern::parse(&doc! {"a": 1}).unwrap();
        let generation = CollectionGeneration::new(Timestamp {
            time: 1,
            increment: 0,
        });
        let bounds = [Bson::MinKey, Bson::Int32(10), Bson::Int32(20), Bson::MaxKey];
        let chunks = bounds
            .windows(2)
            .enumerate()
            .map(|(i, w)| {
                Chunk::new(
                    &pattern,
                    doc! {"a": w[0].clone()},
                    doc! {"a": w[1].clone()},
                    format!("shard{}", i % 2),
                    ChunkVersion::new(generation, 1, i as u32),
                )
            })
            .collect();
        let map = ChunkMap::new(&pattern, chunks).unwrap();
        (pattern, map, generation)
    }

    #[test]
    fn updates_replace_the_chunks_they_overlap() {
        let (p, map, generation) = setup();
        let chunk = |min: Bson, max: Bson, shard: &str, minor: u32| {
            Chunk::new(
                &p,
                doc! {"a": min},
                doc! {"a": max},
                shard.into(),
                ChunkVersion::new(generation, 2, minor),
            )
        };
        // [10, 20) split at 15; then [MinKey, 10) and [10, 15) merged.
        let split = map
            .with_updates(
                &p,
                vec![
                    chunk(Bson::Int32(10), Bson::Int32(15), "shard1", 0),
                    chunk(Bson::Int32(15), Bson::Int32(20), "shard1", 1),
                ],
            )
            .unwrap();
        assert_eq!(split.len(), 4);
        let merged = split
            .with_updates(&p, vec![chunk(Bson::MinKey, Bson::Int32(15), "shard0", 2)])
            .unwrap();
        assert_eq!(merged.len(), 3);
        let owner = |v: i32| {
            merged
                .chunk_for(&p.encode(&doc! {"a": v}))
                .unwrap()
                .shard
                .clone()
        };
        assert_eq!(owner(12), "shard0");
        assert_eq!(owner(17), "shard1");
        assert_eq!(
            merged.collection_version().map(|v| (v.major, v.minor)),
            Some((2, 2))
        );
        // Changes that leave a gap are refused, not guessed at.
        assert!(
            map.with_updates(
                &p,
                vec![chunk(Bson::Int32(10), Bson::Int32(15), "shard1", 0)]
            )
            .is_err()
        );
        assert_eq!(map.with_updates(&p, Vec::new()).unwrap().len(), 3);
        assert!(
            map.with_updates(
                &p,
                vec![chunk(Bson::Int32(5), Bson::Int32(15), "shard1", 0)]
            )
            .is_err()
        );
        // A shard whose only chunk moves away owns nothing any more; the map patched from is
        // unchanged.
        let moved = map
            .with_updates(
                &p,
                vec![chunk(Bson::Int32(10), Bson::Int32(20), "shard0", 0)],
            )
            .unwrap();
        assert_eq!(moved.shards().into_iter().collect::<Vec<_>>(), ["shard0"]);
        let version = |m: &ChunkMap, s: &str| {
            let v = m.shard_version(s, generation);
            (v.major, v.minor)
        };
        assert_eq!(version(&moved, "shard1"), (0, 0));
        assert_eq!(version(&moved, "shard0"), (2, 0));
        assert_eq!(version(&map, "shard1"), (1, 1));
        assert_eq!(map.shards().len(), 2);
        // A patched map answers as one built from its chunks.
        for patched in [&split, &merged, &moved] {
            let rebuilt = ChunkMap::new(&p, patched.chunks().cloned().collect()).unwrap();
            for shard in ["shard0", "shard1"] {
                assert_eq!(version(patched, shard), version(&rebuilt, shard));
            }
            assert_eq!(patched.shards(), rebuilt.shards());
        }
    }

    #[test]
    fn keys_find_their_chunk() {
        let (p, map, _) = setup();
        let shard_of = |v: Bson| {
            map.chunk_for(&p.encode(&doc! {"a": v}))
                .unwrap()
                .shard
                .clone()
        };
        assert_eq!(shard_of(Bson::Int32(5)), "shard0");
        assert_eq!(shard_of(Bson::Int32(10)), "shard1");
        assert_eq!(shard_of(Bson::Int32(25)), "shard0");
        assert_eq!(
            shard_of(Bson::MaxKey),
            "shard0",
            "the last chunk holds MaxKey"
        );
        assert_eq!(shard_of(Bson::String("x".into())), "shard0");
    }

    #[test]
    fn intervals_target_overlapping_chunks_and_versions_add_up() {
        let (p, map, generation) = setup();
        let iv = p.target_intervals(&doc! {"a": {"$gte": 12, "$lt": 15}});
        assert_eq!(
            map.shards_for(&iv).into_iter().collect::<Vec<_>>(),
            ["shard1"]
        );
        let wide = p.target_intervals(&doc! {"a": {"$gte": 5}});
        assert_eq!(map.shards_for(&wide).len(), 2);
        assert_eq!(map.collection_version().unwrap().minor, 2);
        assert_eq!(map.shard_version("shard1", generation).minor, 1);
        assert!(map.shard_version("shard9", generation).is_unset());
    }

    #[test]
    fn gaps_are_refused() {
        let (p, map, _) = setup();
        let mut chunks: Vec<Chunk> = map.chunks().cloned().collect();
        chunks.remove(1);
        assert!(ChunkMap::new(&p, chunks).is_err());
    }
}
