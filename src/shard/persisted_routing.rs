//! The shard's persisted copy of the routing of sharded collections it was asked about
//! (MongoDB's `config.cache.collections` and `config.cache.chunks.<ns>` on a shard), so that a
//! restarted shard knows its filtering metadata before it can reach the config server.
//! It is a cache: a copy that is torn (a crash between its writes) fails its consistency check
//! on load and is simply refreshed from the config server.

use crate::catalog::{Chunk, ChunkMap, CollectionEntry, chunk_from_document};
use crate::datanode::storage::Storage;
use crate::error::{MongoError, Result};
use bson::{Bson, Document, RawDocumentBuf, doc};

const DB: &str = "config";
const COLLECTIONS: &str = "cache.collections";

fn chunks_collection(ns: &str) -> String {
    format!("cache.chunks.{ns}")
}

/// The cached entry: the `config.collections` entry with the collection version the chunks
/// beside it were read at.
fn entry_document(entry: &CollectionEntry, chunks: &ChunkMap) -> Document {
    let version = chunks
        .collection_version()
        .map(|v| v.lastmod())
        .unwrap_or(bson::Timestamp {
            time: 0,
            increment: 0,
        });
    let mut doc = entry.to_document();
    doc.insert("lastRefreshedCollectionMajorMinorVersion", version);
    doc
}

fn entry_from_document(doc: &Document) -> Result<(CollectionEntry, bson::Timestamp)> {
    let version = doc
        .get_timestamp("lastRefreshedCollectionMajorMinorVersion")
        .map_err(|_| {
            MongoError::internal(
                "malformed config.cache.collections entry: no lastRefreshedCollectionMajorMinorVersion",
            )
        })?;
    Ok((CollectionEntry::from_document(doc)?, version))
}

/// Every collection's persisted routing that is whole; torn copies are skipped (and logged).
pub(super) async fn load_all(storage: &Storage) -> Result<Vec<(CollectionEntry, ChunkMap)>> {
    let mut out = Vec::new();
    for doc in storage.documents(DB, COLLECTIONS).await? {
        match load_one(storage, &doc).await {
            Ok(loaded) => out.push(loaded),
            Err(e) => tracing::warn!(
                ns = doc.get_str("_id").unwrap_or_default(),
                error = %e,
                "ignoring the persisted routing of a collection; it will be refreshed"
            ),
        }
    }
    Ok(out)
}

async fn load_one(storage: &Storage, doc: &Document) -> Result<(CollectionEntry, ChunkMap)> {
    let (entry, version) = entry_from_document(doc)?;
    let chunks = storage
        .documents(DB, &chunks_collection(&entry.ns))
        .await?
        .iter()
        .map(|c| chunk_from_document(&entry.key, entry.generation, c))
        .collect::<Result<Vec<Chunk>>>()?;
    let map = ChunkMap::new(&entry.key, chunks)?;
    if map.collection_version().map(|v| v.lastmod()) != Some(version) {
        return Err(MongoError::internal(
            "the persisted chunks are not those of the persisted version",
        ));
    }
    Ok((entry, map))
}

/// Replaces the persisted routing of `entry.ns`: the chunks first, then the entry naming their
/// version, so that a crash in between leaves a copy that fails its check on load.
pub(super) async fn store(
    storage: &Storage,
    entry: &CollectionEntry,
    chunks: &ChunkMap,
) -> Result<()> {
    let db = storage.database_or_create(DB).await?;
    let name = chunks_collection(&entry.ns);
    db.drop_collection(&name).await?;
    let coll = db.ensure_collection(&name).await?;
    let docs = chunks
        .chunks()
        .map(|c| {
            RawDocumentBuf::from_document(&doc! {
                "_id": c.min.clone(),
                "min": c.min.clone(),
                "max": c.max.clone(),
                "shard": &c.shard,
                "lastmod": c.version.lastmod(),
            })
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let mut txn = db.write().await?;
    txn.insert(&coll, &docs.iter().map(|d| d.as_ref()).collect::<Vec<_>>())
        .await
        .map_err(|(_, e)| e)?;
    txn.commit().await?;
    put_entry(storage, &entry.ns, Some(&entry_document(entry, chunks))).await
}

/// Forgets the persisted routing of `ns` (it was dropped, or is not sharded any more).
pub(super) async fn remove(storage: &Storage, ns: &str) -> Result<()> {
    put_entry(storage, ns, None).await?;
    if let Some(db) = storage.database(DB).await {
        db.drop_collection(&chunks_collection(ns)).await?;
    }
    Ok(())
}

/// Writes (or with `None` deletes) the `config.cache.collections` entry of `ns`.
async fn put_entry(storage: &Storage, ns: &str, entry: Option<&Document>) -> Result<()> {
    let id = Bson::String(ns.to_string());
    storage
        .put_document(DB, COLLECTIONS, &id, entry, false)
        .await
}
