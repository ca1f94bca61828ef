//! `refineCollectionShardKey` through the router: MongoDB's validation (types, admin only,
//! namespace not found / not sharded, keys that do not extend the current one, indexes that
//! cannot serve the new key and why), and a refine's effect: a new epoch and timestamp, chunks
//! that keep their shards and versions with bounds extended by MinKey (MaxKey at the global
//! maximum), and documents that stay where they were and are read and written as before.

use crate::harness::{admin, both_modes, cursor_documents, error_code};
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

async fn refine_err(client: &Client, command: Document) -> (Option<i32>, String) {
    let err = admin(client, command.clone())
        .await
        .expect_err(&format!("{command} should fail"));
    (error_code(&err), err.to_string())
}

async fn refusals_follow_mongodb(client: &Client) {
    let db = client.database("rkv");
    let ns = "rkv.c";
    assert_eq!(
        refine_err(
            client,
            doc! {"refineCollectionShardKey": {"_id": 1}, "key": {"_id": 1, "a": 1}}
        )
        .await
        .0,
        Some(14)
    );
    assert_eq!(
        refine_err(client, doc! {"refineCollectionShardKey": ns, "key": "blah"})
            .await
            .0,
        Some(14)
    );
    let not_admin = db
        .run_command(doc! {"refineCollectionShardKey": ns, "key": {"_id": 1, "a": 1}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&not_admin), Some(13));
    assert_eq!(
        refine_err(
            client,
            doc! {"refineCollectionShardKey": ns, "key": {"_id": 1, "a": 1}}
        )
        .await
        .0,
        Some(26)
    );
    db.collection::<Document>("c")
        .insert_one(doc! {"a": 1})
        .await
        .unwrap();
    assert_eq!(
        refine_err(
            client,
            doc! {"refineCollectionShardKey": ns, "key": {"_id": 1, "a": 1}}
        )
        .await
        .0,
        Some(118)
    );
    admin(client, doc! {"shardCollection": ns, "key": {"_id": 1}})
        .await
        .unwrap();
    for (key, code) in [
        (doc! {"_id": 5}, 2),
        (doc! {"_id": -1}, 2),
        (doc! {"_id": "hashed", "a": "hashed"}, 2),
        (doc! {}, 2),
        // Does not extend {_id: 1}.
        (doc! {"a": 1}, 72),
        (doc! {"a": 1, "_id": 1}, 72),
        // No index serves {_id: 1, a: 1}.
        (doc! {"_id": 1, "a": 1}, 72),
    ] {
        let (got, message) = refine_err(
            client,
            doc! {"refineCollectionShardKey": ns, "key": key.clone()},
        )
        .await;
        assert_eq!(got, Some(code), "{key}: {message}");
    }
    assert_eq!(
        refine_err(client, doc! {"refineCollectionShardKey": ns})
            .await
            .0,
        Some(40414)
    );
    // Indexes on the key that cannot serve it are named with the reason.
    db.run_command(doc! {"createIndexes": "c", "indexes": [
        {"key": {"_id": 1, "a": 1}, "name": "sparse", "sparse": true},
        {"key": {"_id": 1, "a": 1, "b": 1}, "name": "partial", "partialFilterExpression": {"a": {"$gt": 0}}},
    ]})
    .await
    .unwrap();
    let (code, message) = refine_err(
        client,
        doc! {"refineCollectionShardKey": ns, "key": {"_id": 1, "a": 1}},
    )
    .await;
    assert_eq!(code, Some(72));
    assert!(
        message.contains("Index key is sparse.") && message.contains("Index key is partial."),
        "{message}"
    );
    // The current key itself is already "refined".
    admin(
        client,
        doc! {"refineCollectionShardKey": ns, "key": {"_id": 1}},
    )
    .await
    .unwrap();
}

fn chunk_bounds(chunks: &[Document]) -> Vec<(Document, Document)> {
    chunks
        .iter()
        .map(|c| {
            (
                c.get_document("min").unwrap().clone(),
                c.get_document("max").unwrap().clone(),
            )
        })
        .collect()
}

async fn routing(client: &Client, ns: &str) -> (Document, Vec<Document>) {
    let config = client.database("config");
    let entry = config
        .collection::<Document>("collections")
        .find_one(doc! {"_id": ns})
        .await
        .unwrap()
        .unwrap();
    let chunks = cursor_documents(
        &config,
        doc! {"find": "chunks", "filter": {"uuid": entry.get("uuid").unwrap().clone()}, "sort": {"min": 1}},
    )
    .await
    .unwrap();
    (entry, chunks)
}

async fn a_refine_keeps_chunks_and_documents(client: &Client) {
    let ns = "rk.c";
    let db = client.database("rk");
    let coll = db.collection::<Document>("c");
    admin(
        client,
        doc! {"shardCollection": ns, "key": {"a": 1, "b": 1}, "unique": true},
    )
    .await
    .unwrap();
    db.run_command(doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1, "b": 1, "c": 1, "d": 1}, "name": "abcd"}]})
        .await
        .unwrap();
    for middle in [doc! {"a": 0, "b": 0}, doc! {"a": 5, "b": 5}] {
        admin(client, doc! {"split": ns, "middle": middle})
            .await
            .unwrap();
    }
    coll.insert_many([
        doc! {"_id": 1, "a": 5, "b": 5, "c": 5, "d": 5},
        doc! {"_id": 2, "a": 10, "b": 10, "c": 10, "d": 10},
        doc! {"_id": 3, "a": -3, "b": 0},
    ])
    .await
    .unwrap();
    let (old_entry, old_chunks) = routing(client, ns).await;

    admin(
        client,
        doc! {"refineCollectionShardKey": ns, "key": {"a": 1, "b": 1, "c": 1, "d": 1}},
    )
    .await
    .unwrap();
    let (entry, chunks) = routing(client, ns).await;
    assert_eq!(
        entry.get_document("key").unwrap(),
        &doc! {"a": 1, "b": 1, "c": 1, "d": 1}
    );
    assert!(entry.get_bool("unique").unwrap(), "unique is kept");
    assert_ne!(entry.get("lastmodEpoch"), old_entry.get("lastmodEpoch"));
    assert_ne!(entry.get("timestamp"), old_entry.get("timestamp"));
    assert_eq!(entry.get("uuid"), old_entry.get("uuid"));
    let (min, max) = (Bson::MinKey, Bson::MaxKey);
    assert_eq!(
        chunk_bounds(&chunks),
        vec![
            (
                doc! {"a": min.clone(), "b": min.clone(), "c": min.clone(), "d": min.clone()},
                doc! {"a": 0, "b": 0, "c": min.clone(), "d": min.clone()},
            ),
            (
                doc! {"a": 0, "b": 0, "c": min.clone(), "d": min.clone()},
                doc! {"a": 5, "b": 5, "c": min.clone(), "d": min.clone()},
            ),
            (
                doc! {"a": 5, "b": 5, "c": min.clone(), "d": min.clone()},
                doc! {"a": max.clone(), "b": max.clone(), "c": max.clone(), "d": max.clone()},
            ),
        ]
    );
    for (old, new) in old_chunks.iter().zip(&chunks) {
        assert_eq!(old.get("lastmod"), new.get("lastmod"), "versions are kept");
        assert_eq!(old.get("shard"), new.get("shard"));
    }

    // Documents are intact and found by the old prefix and by the full key.
    let found = coll
        .find_one(doc! {"a": 5})
        .projection(doc! {"_id": 0})
        .await
        .unwrap();
    assert_eq!(found, Some(doc! {"a": 5, "b": 5, "c": 5, "d": 5}));
    assert!(
        coll.find_one(doc! {"a": 10, "b": 10, "c": 10, "d": 10})
            .await
            .unwrap()
            .is_some()
    );
    // Missing fields of the new key count as null.
    coll.insert_one(doc! {"_id": 4, "a": 1, "b": 1})
        .await
        .unwrap();
    assert!(
        coll.find_one(doc! {"a": 1, "b": 1, "c": null, "d": null})
            .await
            .unwrap()
            .is_some()
    );
    let updated = coll
        .update_one(
            doc! {"a": 10, "b": 10, "c": 10, "d": 10},
            doc! {"$set": {"x": 1}},
        )
        .await
        .unwrap();
    assert_eq!(updated.modified_count, 1);
    let deleted = coll.delete_many(doc! {"a": {"$lt": 2}}).await.unwrap();
    assert_eq!(deleted.deleted_count, 2);
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 2);

    // Chunk bounds now name the full key.
    let (code, _) = refine_err(client, doc! {"split": ns, "middle": {"a": 1, "b": 1}}).await;
    assert!(code.is_some());
    admin(
        client,
        doc! {"split": ns, "middle": {"a": 1, "b": 1, "c": 1, "d": 1}},
    )
    .await
    .unwrap();
    admin(
        client,
        doc! {"mergeChunks": ns, "bounds": [
            {"a": min.clone(), "b": min.clone(), "c": min.clone(), "d": min.clone()},
            {"a": 5, "b": 5, "c": min.clone(), "d": min.clone()},
        ]},
    )
    .await
    .unwrap();
}

/// A hashed collection spread over every shard: each shard must have the new key's index, and
/// every shard's documents stay visible (each shard's filtering metadata follows the refine).
async fn a_spread_collection_is_refined_on_every_shard(client: &Client) {
    let ns = "rks.h";
    let db = client.database("rks");
    let coll = db.collection::<Document>("h");
    admin(client, doc! {"shardCollection": ns, "key": {"h": "hashed"}})
        .await
        .unwrap();
    coll.insert_many((0..40).map(|i| doc! {"_id": i, "h": i, "x": i % 3}))
        .await
        .unwrap();
    let (_, chunks) = routing(client, ns).await;
    let shards: std::collections::BTreeSet<&str> =
        chunks.iter().map(|c| c.get_str("shard").unwrap()).collect();
    assert!(shards.len() >= 2, "the collection is spread: {shards:?}");
    db.run_command(
        doc! {"createIndexes": "h", "indexes": [{"key": {"h": "hashed", "x": 1}, "name": "hx"}]},
    )
    .await
    .unwrap();
    admin(
        client,
        doc! {"refineCollectionShardKey": ns, "key": {"h": "hashed", "x": 1}},
    )
    .await
    .unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 40);
    assert_eq!(coll.count_documents(doc! {"x": 1}).await.unwrap(), 13);
    let found = coll.find_one(doc! {"h": 7, "x": 1}).await.unwrap();
    assert_eq!(found, Some(doc! {"_id": 7, "h": 7, "x": 1}));
    coll.insert_one(doc! {"_id": 100, "h": 100}).await.unwrap();
    assert_eq!(coll.count_documents(doc! {"x": null}).await.unwrap(), 1);
}

both_modes!(
    refusals_follow_mongodb,
    a_refine_keeps_chunks_and_documents,
    a_spread_collection_is_refined_on_every_shard
);
