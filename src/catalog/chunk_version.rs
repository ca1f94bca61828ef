//! Chunk versions (the shard versioning protocol): `(major, minor)` within a collection
//! generation (`epoch`, `timestamp`). A shard version is the highest chunk version a shard owns,
//! a collection version the highest overall. On the wire a shard version is
//! `{e: <epoch>, t: <timestamp>, v: Timestamp(major, minor)}`, in `config.chunks` a chunk's is
//! `lastmod: Timestamp(major, minor)`.

use crate::error::{MongoError, Result};
use bson::oid::ObjectId;
use bson::{Bson, Document, Timestamp, doc};
use std::cmp::Ordering;

/// One incarnation of a sharded collection: it changes when the collection is dropped and
/// re-created or its shard key is refined, and versions of different generations do not
/// compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CollectionGeneration {
    pub epoch: ObjectId,
    pub timestamp: Timestamp,
}

impl CollectionGeneration {
    pub fn new(timestamp: Timestamp) -> Self {
        CollectionGeneration {
            epoch: ObjectId::new(),
            timestamp,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChunkVersion {
    pub generation: CollectionGeneration,
    pub major: u32,
    pub minor: u32,
}

fn zero_oid() -> ObjectId {
    ObjectId::from_bytes([0; 12])
}

impl ChunkVersion {
    pub fn new(generation: CollectionGeneration, major: u32, minor: u32) -> Self {
        ChunkVersion {
            generation,
            major,
            minor,
        }
    }

    /// What a router sends for a collection it believes unsharded (`0|0`, no epoch).
    pub fn unsharded() -> Self {
        ChunkVersion {
            generation: CollectionGeneration {
                epoch: zero_oid(),
                timestamp: Timestamp {
                    time: 0,
                    increment: 0,
                },
            },
            major: 0,
            minor: 0,
        }
    }

    /// Tells a shard not to check the version (`0|0` with the maximal timestamp).
    pub fn ignored() -> Self {
        ChunkVersion {
            generation: CollectionGeneration {
                epoch: zero_oid(),
                timestamp: Timestamp {
                    time: u32::MAX,
                    increment: u32::MAX,
                },
            },
            major: 0,
            minor: 0,
        }
    }

    pub fn is_ignored(&self) -> bool {
        *self == Self::ignored()
    }

    /// `0|0`: the shard owns no chunk (or the collection is not sharded).
    pub fn is_unset(&self) -> bool {
        self.major == 0 && self.minor == 0
    }

    pub fn same_generation(&self, other: &ChunkVersion) -> bool {
        self.generation == other.generation
    }

    /// Orders versions of one generation; `None` across generations.
    pub fn compare(&self, other: &ChunkVersion) -> Option<Ordering> {
        self.same_generation(other)
            .then(|| (self.major, self.minor).cmp(&(other.major, other.minor)))
    }

    /// `Timestamp(major, minor)`, as `config.chunks.lastmod` stores it.
    pub fn lastmod(&self) -> Timestamp {
        Timestamp {
            time: self.major,
            increment: self.minor,
        }
    }

    pub fn from_lastmod(generation: CollectionGeneration, lastmod: Timestamp) -> Self {
        ChunkVersion::new(generation, lastmod.time, lastmod.increment)
    }

    /// The wire form `{e, t, v}`.
    pub fn to_document(&self) -> Document {
        doc! {
            "e": self.generation.epoch,
            "t": self.generation.timestamp,
            "v": self.lastmod(),
        }
    }

    pub fn from_document(doc: &Document) -> Result<Self> {
        let bad = || MongoError::failed_to_parse(format!("invalid shardVersion: {doc}"));
        let epoch = match doc.get("e") {
            Some(Bson::ObjectId(oid)) => *oid,
            _ => return Err(bad()),
        };
        let timestamp = doc.get_timestamp("t").map_err(|_| bad())?;
        let v = doc.get_timestamp("v").map_err(|_| bad())?;
        Ok(ChunkVersion::from_lastmod(
            CollectionGeneration { epoch, timestamp },
            v,
        ))
    }

    /// `major|minor||epoch||timestamp`, as MongoDB prints versions in messages.
    pub fn display(&self) -> String {
        format!(
            "{}|{}||{}||Timestamp({}, {})",
            self.major,
            self.minor,
            self.generation.epoch.to_hex(),
            self.generation.timestamp.time,
            self.generation.timestamp.increment
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generation() -> CollectionGeneration {
        CollectionGeneration::new(Timestamp {
            time: 10,
            increment: 1,
        })
    }

    #[test]
    fn versions_compare_within_a_generation_only() {
        let g = generation();
        let a = ChunkVersion::new(g, 1, 5);
        let b = ChunkVersion::new(g, 2, 0);
        assert_eq!(a.compare(&b), Some(Ordering::Less));
        let other = ChunkVersion::new(generation(), 9, 9);
        assert_eq!(a.compare(&other), None);
    }

    #[test]
    fn wire_form_round_trips() {
        let v = ChunkVersion::new(generation(), 3, 7);
        let doc = v.to_document();
        assert_eq!(doc.get_timestamp("v").unwrap().time, 3);
        assert_eq!(ChunkVersion::from_document(&doc).unwrap(), v);
        assert!(ChunkVersion::unsharded().is_unset());
        assert!(ChunkVersion::ignored().is_ignored());
        assert!(!ChunkVersion::unsharded().is_ignored());
    }
}
