//! Reads of the routing table that routers and shards make on the config server.

use super::NodeClient;
use crate::catalog::{Chunk, ChunkMap, CollectionEntry, DatabaseEntry, chunk_from_document};
use crate::command::first_batch;
use crate::error::Result;
use bson::{Bson, Document, doc};

/// A database's `config.databases` entry, if the database exists.
pub async fn database_entry(config: &NodeClient, db: &str) -> Result<Option<DatabaseEntry>> {
    let reply = config
        .run_doc("config", DatabaseEntry::find_command(db))
        .await?;
    first_batch(&reply)
        .first()
        .map(DatabaseEntry::from_document)
        .transpose()
}

/// Every document of `config.<collection>` matching `filter`, in `sort` order, following the
/// cursor to its end (a collection's chunks can be more than one batch).
pub async fn find_all(
    config: &NodeClient,
    collection: &str,
    filter: Document,
    sort: Document,
) -> Result<Vec<Document>> {
    let reply = config
        .run_doc(
            "config",
            doc! {"find": collection, "filter": filter, "sort": sort, "batchSize": i32::MAX},
        )
        .await?;
    let mut docs = first_batch(&reply);
    let mut cursor_id = cursor_id(&reply);
    while cursor_id != 0 {
        let more = config
            .run_doc(
                "config",
                doc! {"getMore": cursor_id, "collection": collection, "batchSize": i32::MAX},
            )
            .await?;
        let cursor = more.get_document("cursor").ok();
        docs.extend(
            cursor
                .and_then(|c| c.get_array("nextBatch").ok())
                .into_iter()
                .flatten()
                .filter_map(|d| d.as_document().cloned()),
        );
        cursor_id = cursor_id_of(cursor);
    }
    Ok(docs)
}

fn cursor_id(reply: &Document) -> i64 {
    cursor_id_of(reply.get_document("cursor").ok())
}

fn cursor_id_of(cursor: Option<&Document>) -> i64 {
    match cursor.and_then(|c| c.get("id")) {
        Some(Bson::Int64(id)) => *id,
        Some(Bson::Int32(id)) => i64::from(*id),
        _ => 0,
    }
}

/// A sharded collection's entry, if the collection is sharded.
pub async fn collection_entry(config: &NodeClient, ns: &str) -> Result<Option<CollectionEntry>> {
    let entries = find_all(config, "collections", doc! {"_id": ns}, doc! {}).await?;
    entries
        .first()
        .map(CollectionEntry::from_document)
        .transpose()
}

/// The chunks of `entry`'s collection in key order: all of them, or with `since` only those
/// changed after that version (their `lastmod`), which an incremental refresh reads.
pub async fn chunks_since(
    config: &NodeClient,
    entry: &CollectionEntry,
    since: Option<bson::Timestamp>,
) -> Result<Vec<Chunk>> {
    let mut filter = doc! {"uuid": Bson::Binary(entry.uuid.clone())};
    if let Some(since) = since {
        filter.insert("lastmod", doc! {"$gt": since});
    }
    find_all(config, "chunks", filter, doc! {"min": 1})
        .await?
        .iter()
        .map(|c| chunk_from_document(&entry.key, entry.generation, c))
        .collect()
}

/// How often a routing read starts over because the collection changed while it was read.
const SNAPSHOT_ATTEMPTS: usize = 5;

/// A sharded collection's entry and chunk map, if the collection is sharded. Entry and chunks
/// are separate reads, so a DDL or chunk commit between them (a drop removing the chunks, a
/// re-shard under a new UUID, a split between two pages of chunks) leaves chunks that do not
/// tile; the read then starts over and meets the new state.
pub async fn collection_routing(
    config: &NodeClient,
    ns: &str,
) -> Result<Option<(CollectionEntry, ChunkMap)>> {
    let mut attempt = 1;
    loop {
        let Some(entry) = collection_entry(config, ns).await? else {
            return Ok(None);
        };
        let chunks = chunks_since(config, &entry, None).await?;
        match ChunkMap::new(&entry.key, chunks) {
            Ok(map) => return Ok(Some((entry, map))),
            Err(e) if attempt < SNAPSHOT_ATTEMPTS => {
                tracing::debug!(ns = %ns, error = %e, "the routing table changed while read; reading again");
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Every shard's name and host (`config.shards`), in name order.
pub async fn shard_hosts(config: &NodeClient) -> Result<Vec<(String, String)>> {
    Ok(find_all(config, "shards", doc! {}, doc! {"_id": 1})
        .await?
        .iter()
        .filter_map(|s| {
            Some((
                s.get_str("_id").ok()?.into(),
                s.get_str("host").ok()?.into(),
            ))
        })
        .collect())
}
