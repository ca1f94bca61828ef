//! `config.collections` and `config.chunks` documents in MongoDB's current shapes: a sharded
//! collection's entry (namespace, generation, UUID, shard key) and its chunks, and their
//! conversion to the typed catalog ([`ShardKeyPattern`], [`Chunk`], [`ChunkVersion`]).

use super::chunk_map::Chunk;
use super::chunk_version::{ChunkVersion, CollectionGeneration};
use super::shard_key::ShardKeyPattern;
use crate::error::{MongoError, Result};
use bson::oid::ObjectId;
use bson::{Binary, Bson, DateTime, Document, Timestamp, doc};

/// A sharded collection's entry in `config.collections`.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectionEntry {
    pub ns: String,
    pub generation: CollectionGeneration,
    /// The collection's UUID, the same on every shard; chunks refer to it.
    pub uuid: Binary,
    pub key: ShardKeyPattern,
    pub unique: bool,
    /// When the entry last changed (`lastmod`, a date).
    pub last_modified: DateTime,
    pub no_balance: bool,
    /// `setAllowMigrations`: false stops chunk migrations of the collection (stored as
    /// `permitMigrations: false`, absent otherwise, as MongoDB stores it).
    pub permit_migrations: bool,
    /// The collection's non-simple default collation (`defaultCollation`), which routers
    /// apply to requests that give none.
    pub default_collation: Option<Document>,
}

impl CollectionEntry {
    pub fn to_document(&self) -> Document {
        let mut entry = doc! {
            "_id": &self.ns,
            "lastmodEpoch": self.generation.epoch,
            "lastmod": self.last_modified,
            "timestamp": self.generation.timestamp,
            "uuid": Bson::Binary(self.uuid.clone()),
            "key": self.key.pattern().clone(),
            "unique": self.unique,
            "noBalance": self.no_balance,
        };
        if !self.permit_migrations {
            entry.insert("permitMigrations", false);
        }
        if let Some(collation) = &self.default_collation {
            entry.insert("defaultCollation", collation.clone());
        }
        entry
    }

    pub fn from_document(doc: &Document) -> Result<CollectionEntry> {
        let bad = |field: &str| {
            MongoError::internal(format!(
                "malformed config.collections entry: bad or missing `{field}`"
            ))
        };
        let uuid = match doc.get("uuid") {
            Some(Bson::Binary(b)) => b.clone(),
            _ => return Err(bad("uuid")),
        };
        Ok(CollectionEntry {
            ns: doc.get_str("_id").map_err(|_| bad("_id"))?.to_string(),
            generation: CollectionGeneration {
                epoch: doc
                    .get_object_id("lastmodEpoch")
                    .map_err(|_| bad("lastmodEpoch"))?,
                timestamp: doc
                    .get_timestamp("timestamp")
                    .map_err(|_| bad("timestamp"))?,
            },
            uuid,
            key: ShardKeyPattern::parse(doc.get_document("key").map_err(|_| bad("key"))?)?,
            unique: doc.get_bool("unique").unwrap_or(false),
            last_modified: doc
                .get_datetime("lastmod")
                .copied()
                .unwrap_or(DateTime::MIN),
            no_balance: doc.get_bool("noBalance").unwrap_or(false),
            permit_migrations: doc.get_bool("permitMigrations").unwrap_or(true),
            default_collation: doc.get_document("defaultCollation").ok().cloned(),
        })
    }
}

/// A chunk as `config.chunks` stores it.
pub fn chunk_document(chunk: &Chunk, uuid: &Binary, id: ObjectId, now: Timestamp) -> Document {
    doc! {
        "_id": id,
        "uuid": Bson::Binary(uuid.clone()),
        "min": chunk.min.clone(),
        "max": chunk.max.clone(),
        "shard": &chunk.shard,
        "lastmod": chunk.version.lastmod(),
        "onCurrentShardSince": now,
        "history": [{"validAfter": now, "shard": &chunk.shard}],
    }
}

/// Reads a `config.chunks` document of a collection of generation `generation`.
pub fn chunk_from_document(
    pattern: &ShardKeyPattern,
    generation: CollectionGeneration,
    doc: &Document,
) -> Result<Chunk> {
    let bad = |field: &str| {
        MongoError::internal(format!(
            "malformed config.chunks entry: bad or missing `{field}`"
        ))
    };
    Ok(Chunk::new(
        pattern,
        doc.get_document("min").map_err(|_| bad("min"))?.clone(),
        doc.get_document("max").map_err(|_| bad("max"))?.clone(),
        doc.get_str("shard").map_err(|_| bad("shard"))?.to_string(),
        ChunkVersion::from_lastmod(
            generation,
            doc.get_timestamp("lastmod").map_err(|_| bad("lastmod"))?,
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::spec::BinarySubtype;

    #[test]
    fn entries_round_trip_through_their_documents() {
        let entry = CollectionEntry {
            ns: "db.c".into(),
            generation: CollectionGeneration::new(Timestamp {
                time: 7,
                increment: 1,
            }),
            uuid: Binary {
                subtype: BinarySubtype::Uuid,
                bytes: vec![1; 16],
            },
            key: ShardKeyPattern::parse(&doc! {"a": 1, "b": 1}).unwrap(),
            unique: true,
            last_modified: DateTime::from_millis(5),
            no_balance: false,
            permit_migrations: true,
            default_collation: None,
        };
        let doc = entry.to_document();
        assert_eq!(doc.get_str("_id").unwrap(), "db.c");
        assert_eq!(CollectionEntry::from_document(&doc).unwrap(), entry);

        let chunk = Chunk::new(
            &entry.key,
            entry.key.global_min(),
            doc! {"a": 5, "b": bson::Bson::MinKey},
            "shard0".into(),
            ChunkVersion::new(entry.generation, 2, 3),
        );
        let now = Timestamp {
            time: 9,
            increment: 0,
        };
        let stored = chunk_document(&chunk, &entry.uuid, ObjectId::new(), now);
        assert_eq!(
            stored.get_timestamp("lastmod").unwrap(),
            Timestamp {
                time: 2,
                increment: 3
            }
        );
        assert_eq!(
            chunk_from_document(&entry.key, entry.generation, &stored).unwrap(),
            chunk
        );
        assert!(CollectionEntry::from_document(&doc! {"_id": "x"}).is_err());
    }
}
