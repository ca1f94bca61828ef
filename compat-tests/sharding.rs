//! Sharding administration through the router: `addShard`/`listShards`, `enableSharding`,
//! `shardCollection` (MongoDB's validation, the `config.collections` and `config.chunks`
//! documents it writes) and `split` (middle, find, bounds) with the chunk versions the
//! versioning protocol prescribes.

use crate::harness::{admin, both_modes, collection_entry, error_code};
use futures::TryStreamExt;
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

/// The chunks of sharded collection `ns`, in key order.
async fn chunks(client: &Client, ns: &str) -> Vec<Document> {
    let entry = collection_entry(client, ns)
        .await
        .expect("a config.collections entry");
    chunks_of(client, entry.get("uuid").unwrap()).await
}

fn lastmod(chunk: &Document) -> (u32, u32) {
    let ts = chunk.get_timestamp("lastmod").unwrap();
    (ts.time, ts.increment)
}

async fn shard_collection_records_the_collection(client: &Client) {
    let shards = admin(client, doc! {"listShards": 1}).await.unwrap();
    let names: Vec<String> = shards
        .get_array("shards")
        .unwrap()
        .iter()
        .map(|s| s.as_document().unwrap().get_str("_id").unwrap().to_string())
        .collect();
    assert!(names.len() >= 2, "{names:?}");
    admin(
        client,
        doc! {"enableSharding": "shapp", "primaryShard": &names[1]},
    )
    .await
    .unwrap();
    let reply = admin(
        client,
        doc! {"shardCollection": "shapp.users", "key": {"region": 1, "uid": 1}},
    )
    .await
    .unwrap();
    assert_eq!(reply.get_str("collectionsharded").unwrap(), "shapp.users");
    // The empty collection got the shard key index.
    let indexes: Vec<Document> = client
        .database("shapp")
        .collection::<Document>("users")
        .list_indexes()
        .await
        .unwrap()
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .into_iter()
        .map(|i| mongodb::bson::to_document(&i).unwrap())
        .collect();
    assert!(
        indexes
            .iter()
            .any(|i| i.get_document("key").unwrap() == &doc! {"region": 1, "uid": 1}),
        "{indexes:?}"
    );
    let entry = collection_entry(client, "shapp.users").await.unwrap();
    assert_eq!(
        entry.get_document("key").unwrap(),
        &doc! {"region": 1, "uid": 1}
    );
    assert!(!entry.get_bool("unique").unwrap());
    assert!(entry.get_object_id("lastmodEpoch").is_ok());
    assert!(entry.get_timestamp("timestamp").is_ok());
    assert!(matches!(entry.get("uuid"), Some(Bson::Binary(_))));
    let all = chunks(client, "shapp.users").await;
    assert_eq!(all.len(), 1);
    assert_eq!(
        all[0].get_document("min").unwrap(),
        &doc! {"region": Bson::MinKey, "uid": Bson::MinKey}
    );
    assert_eq!(
        all[0].get_document("max").unwrap(),
        &doc! {"region": Bson::MaxKey, "uid": Bson::MaxKey}
    );
    assert_eq!(all[0].get_str("shard").unwrap(), names[1]);
    assert_eq!(lastmod(&all[0]), (1, 0));
    // The same key again is accepted; another key is not.
    admin(
        client,
        doc! {"shardCollection": "shapp.users", "key": {"region": 1, "uid": 1}},
    )
    .await
    .unwrap();
    let err = admin(
        client,
        doc! {"shardCollection": "shapp.users", "key": {"uid": 1}},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&err), Some(23));
    // The data stays usable.
    let users = client.database("shapp").collection::<Document>("users");
    users
        .insert_many(vec![
            doc! {"region": "eu", "uid": 1},
            doc! {"region": "us", "uid": 2},
        ])
        .await
        .unwrap();
    assert_eq!(users.count_documents(doc! {}).await.unwrap(), 2);
}

async fn shard_collection_validation(client: &Client) {
    let db = client.database("shval");
    let items = db.collection::<Document>("items");
    items.insert_one(doc! {"a": 1, "b": 1}).await.unwrap();
    // A non-empty collection needs an index on the shard key.
    let err = admin(
        client,
        doc! {"shardCollection": "shval.items", "key": {"a": 1}},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&err), Some(72));
    db.run_command(
        doc! {"createIndexes": "items", "indexes": [{"key": {"a": 1, "b": 1}, "name": "a_1_b_1"}]},
    )
    .await
    .unwrap();
    // A unique index not prefixed by the shard key prevents sharding.
    db.run_command(doc! {"createIndexes": "items", "indexes": [{"key": {"b": 1}, "name": "b_1", "unique": true}]})
        .await
        .unwrap();
    let err = admin(
        client,
        doc! {"shardCollection": "shval.items", "key": {"a": 1}},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&err), Some(72));
    db.run_command(doc! {"dropIndexes": "items", "index": "b_1"})
        .await
        .unwrap();
    // A prefix of an existing index is enough.
    admin(
        client,
        doc! {"shardCollection": "shval.items", "key": {"a": 1}},
    )
    .await
    .unwrap();
    // Shard key indexes may not be multikey.
    let arrays = db.collection::<Document>("arrays");
    arrays.insert_one(doc! {"k": [1, 2]}).await.unwrap();
    db.run_command(doc! {"createIndexes": "arrays", "indexes": [{"key": {"k": 1}, "name": "k_1"}]})
        .await
        .unwrap();
    let err = admin(
        client,
        doc! {"shardCollection": "shval.arrays", "key": {"k": 1}},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&err), Some(72));
    for (command, code) in [
        (
            doc! {"shardCollection": "shval.h", "key": {"h": "hashed"}, "unique": true},
            72,
        ),
        (doc! {"shardCollection": "shval.bad", "key": {"a": -1}}, 2),
        (
            doc! {"shardCollection": "shval.bad", "key": {"a": "hashed", "b": "hashed"}},
            2,
        ),
        (doc! {"shardCollection": "noDot", "key": {"a": 1}}, 73),
        (doc! {"shardCollection": "admin.x", "key": {"a": 1}}, 20),
    ] {
        let err = admin(client, command.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{command}");
    }
    // Hashed keys shard an empty collection, creating the hashed index.
    admin(
        client,
        doc! {"shardCollection": "shval.h", "key": {"h": "hashed"}},
    )
    .await
    .unwrap();
}

async fn split_follows_the_versioning_rules(client: &Client) {
    admin(
        client,
        doc! {"shardCollection": "shsplit.events", "key": {"t": 1}},
    )
    .await
    .unwrap();
    let events = client.database("shsplit").collection::<Document>("events");
    events
        .insert_many((0..10).map(|t| doc! {"t": t * 10}).collect::<Vec<_>>())
        .await
        .unwrap();
    admin(
        client,
        doc! {"split": "shsplit.events", "middle": {"t": 50}},
    )
    .await
    .unwrap();
    let after = chunks(client, "shsplit.events").await;
    assert_eq!(after.len(), 2);
    assert_eq!(after[0].get_document("max").unwrap(), &doc! {"t": 50});
    // The shard owned the collection version: the major version moves, minors count pieces.
    assert_eq!(lastmod(&after[0]), (2, 1));
    assert_eq!(lastmod(&after[1]), (2, 2));
    // Splitting at a chunk boundary is refused.
    let err = admin(
        client,
        doc! {"split": "shsplit.events", "middle": {"t": 50}},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&err), Some(87));
    // `find` splits the chunk holding that key at its median.
    admin(client, doc! {"split": "shsplit.events", "find": {"t": 70}})
        .await
        .unwrap();
    let after = chunks(client, "shsplit.events").await;
    assert_eq!(after.len(), 3);
    assert_eq!(after[1].get_document("min").unwrap(), &doc! {"t": 50});
    assert_eq!(after[1].get_document("max").unwrap(), &doc! {"t": 70});
    assert_eq!(lastmod(&after[1]), (3, 1));
    assert_eq!(lastmod(&after[2]), (3, 2));
    // `bounds` names a chunk exactly.
    admin(
        client,
        doc! {"split": "shsplit.events", "bounds": [{"t": Bson::MinKey}, {"t": 50}]},
    )
    .await
    .unwrap();
    let after = chunks(client, "shsplit.events").await;
    assert_eq!(after.len(), 4);
    assert_eq!(after[0].get_document("max").unwrap(), &doc! {"t": 20});
    for (command, code) in [
        (doc! {"split": "shsplit.events", "middle": {"x": 1}}, 2),
        (
            doc! {"split": "shsplit.events", "middle": {"t": 1}, "find": {"t": 1}},
            2,
        ),
        (
            doc! {"split": "shsplit.events", "bounds": [{"t": 0}, {"t": 1}]},
            2,
        ),
        (doc! {"split": "shsplit.nope", "middle": {"t": 1}}, 118),
    ] {
        let err = admin(client, command.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{command}");
    }
    // Every chunk is still on one shard with the data intact.
    assert_eq!(events.count_documents(doc! {}).await.unwrap(), 10);
}

async fn drops_remove_sharding_metadata(client: &Client) {
    let collections = client
        .database("config")
        .collection::<Document>("collections");
    admin(
        client,
        doc! {"shardCollection": "shdrop.a", "key": {"k": 1}},
    )
    .await
    .unwrap();
    let first = collection_entry(client, "shdrop.a").await.unwrap();
    client
        .database("shdrop")
        .collection::<Document>("a")
        .drop()
        .await
        .unwrap();
    assert!(collection_entry(client, "shdrop.a").await.is_none());
    assert!(
        chunks_of(client, first.get("uuid").unwrap())
            .await
            .is_empty()
    );
    // Sharding it again makes a new generation.
    admin(
        client,
        doc! {"shardCollection": "shdrop.a", "key": {"k": 1}},
    )
    .await
    .unwrap();
    let second = collection_entry(client, "shdrop.a").await.unwrap();
    assert_ne!(
        first.get_object_id("lastmodEpoch").unwrap(),
        second.get_object_id("lastmodEpoch").unwrap()
    );
    admin(
        client,
        doc! {"shardCollection": "shdrop.b", "key": {"k": 1}},
    )
    .await
    .unwrap();
    client.database("shdrop").drop().await.unwrap();
    assert_eq!(
        collections
            .count_documents(doc! {"_id": {"$regex": "^shdrop\\."}})
            .await
            .unwrap(),
        0
    );
    assert!(
        chunks_of(client, second.get("uuid").unwrap())
            .await
            .is_empty()
    );
}

async fn chunks_of(client: &Client, uuid: &Bson) -> Vec<Document> {
    client
        .database("config")
        .collection::<Document>("chunks")
        .find(doc! {"uuid": uuid.clone()})
        .sort(doc! {"min": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

async fn merge_follows_the_versioning_rules(client: &Client) {
    admin(
        client,
        doc! {"shardCollection": "shmerge.m", "key": {"k": 1}},
    )
    .await
    .unwrap();
    for point in [10, 20, 30] {
        admin(client, doc! {"split": "shmerge.m", "middle": {"k": point}})
            .await
            .unwrap();
    }
    // Versions now 2|1 .. 4|2 (each split moved the major); the collection version is 4|2.
    let before = chunks(client, "shmerge.m").await;
    assert_eq!(before.len(), 4);
    let top = before.iter().map(lastmod).max().unwrap();
    admin(
        client,
        doc! {"mergeChunks": "shmerge.m", "bounds": [{"k": 10}, {"k": Bson::MaxKey}]},
    )
    .await
    .unwrap();
    let after = chunks(client, "shmerge.m").await;
    assert_eq!(after.len(), 2);
    assert_eq!(after[1].get_document("min").unwrap(), &doc! {"k": 10});
    assert_eq!(lastmod(&after[1]), (top.0 + 1, 0));
    for (bounds, code) in [
        // Not at chunk boundaries.
        (vec![doc! {"k": 5}, doc! {"k": Bson::MaxKey}], 72),
        (vec![doc! {"k": Bson::MinKey}, doc! {"k": 15}], 72),
        // One chunk only.
        (vec![doc! {"k": Bson::MinKey}, doc! {"k": 10}], 20),
        // Not the shard key.
        (vec![doc! {"x": 1}, doc! {"x": 2}], 2),
    ] {
        let err = admin(
            client,
            doc! {"mergeChunks": "shmerge.m", "bounds": bounds.clone()},
        )
        .await
        .unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{bounds:?}");
    }
    admin(
        client,
        doc! {"mergeChunks": "shmerge.m", "bounds": [{"k": Bson::MinKey}, {"k": Bson::MaxKey}]},
    )
    .await
    .unwrap();
    assert_eq!(chunks(client, "shmerge.m").await.len(), 1);
}

/// `mergeAllChunksOnShard` merges each run of contiguous chunks of the shard; merged chunks are
/// newer than the collection version. `getShardVersion` reports the router's cached version
/// (and chunks), and on the shard itself its filtering metadata; `getShardMap` names every node.
async fn merge_all_chunks_and_version_reports(client: &Client) {
    let ns = "shmergeall.m";
    admin(client, doc! {"shardCollection": ns, "key": {"k": 1}})
        .await
        .unwrap();
    let coll = client.database("shmergeall").collection::<Document>("m");
    coll.insert_many((0..50).map(|k| doc! {"k": k}))
        .await
        .unwrap();
    for point in [10, 20, 30, 40] {
        admin(client, doc! {"split": ns, "middle": {"k": point}})
            .await
            .unwrap();
    }
    let before = chunks(client, ns).await;
    assert_eq!(before.len(), 5);
    let top = before.iter().map(lastmod).max().unwrap();
    let shard = before[0].get_str("shard").unwrap().to_string();
    let entry = collection_entry(client, ns).await.unwrap();

    let version = admin(client, doc! {"getShardVersion": ns, "fullMetadata": true})
        .await
        .unwrap();
    let ts = |t: mongodb::bson::Timestamp| (t.time, t.increment);
    assert_eq!(ts(version.get_timestamp("version").unwrap()), top);
    assert_eq!(
        version.get_object_id("versionEpoch").unwrap(),
        entry.get_object_id("lastmodEpoch").unwrap()
    );
    assert_eq!(version.get_array("chunks").unwrap().len(), 5);
    let plain = admin(client, doc! {"getShardVersion": ns}).await.unwrap();
    assert!(plain.get("chunks").is_none());

    // At most three chunks merged: the first three become one.
    admin(
        client,
        doc! {"mergeAllChunksOnShard": ns, "shard": &shard, "maxNumberOfChunksToMerge": 3},
    )
    .await
    .unwrap();
    let partly = chunks(client, ns).await;
    assert_eq!(partly.len(), 3);
    assert_eq!(partly[0].get_document("max").unwrap(), &doc! {"k": 30});
    assert_eq!(lastmod(&partly[0]), (top.0 + 1, 0));
    admin(client, doc! {"mergeAllChunksOnShard": ns, "shard": &shard})
        .await
        .unwrap();
    let merged = chunks(client, ns).await;
    assert_eq!(merged.len(), 1);
    assert_eq!(lastmod(&merged[0]), (top.0 + 2, 0));
    // Nothing left to merge is not an error.
    admin(client, doc! {"mergeAllChunksOnShard": ns, "shard": &shard})
        .await
        .unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 50);
    let version = admin(client, doc! {"getShardVersion": ns}).await.unwrap();
    assert_eq!(
        ts(version.get_timestamp("version").unwrap()),
        (top.0 + 2, 0)
    );

    for (cmd, code) in [
        (
            doc! {"mergeAllChunksOnShard": ns, "shard": "nosuchshard"},
            70,
        ),
        (
            doc! {"mergeAllChunksOnShard": "shmergeall.plain", "shard": &shard},
            118,
        ),
        (doc! {"mergeAllChunksOnShard": ns}, 40414),
        (doc! {"getShardVersion": "shmergeall.plain"}, 118),
    ] {
        let err = admin(client, cmd.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{cmd}");
    }
    let db = admin(client, doc! {"getShardVersion": "shmergeall"})
        .await
        .unwrap();
    assert_eq!(db.get_str("primaryShard").unwrap(), shard);
    assert!(db.get_document("version").unwrap().contains_key("uuid"));

    let map = admin(client, doc! {"getShardMap": 1}).await.unwrap();
    let shards = crate::harness::shard_documents(client).await;
    let by_name = map.get_document("map").unwrap();
    let by_host = map.get_document("hosts").unwrap();
    for s in &shards {
        let (name, host) = (s.get_str("_id").unwrap(), s.get_str("host").unwrap());
        assert_eq!(by_name.get_str(name).unwrap(), host);
        assert_eq!(by_host.get_str(host).unwrap(), name);
    }
    assert!(by_name.contains_key("config"));

    // The shard's own view, when a test can reach it directly.
    let host = shards
        .iter()
        .find(|s| s.get_str("_id").unwrap() == shard)
        .unwrap()
        .get_str("host")
        .unwrap();
    if let Ok(addr) = host.parse::<std::net::SocketAddr>() {
        let direct = crate::harness::client_for(addr).await;
        let on_shard = admin(&direct, doc! {"getShardVersion": ns, "fullMetadata": true})
            .await
            .unwrap();
        let metadata = on_shard.get_document("metadata").unwrap();
        assert_eq!(
            ts(metadata.get_timestamp("shardVersion").unwrap()),
            (top.0 + 2, 0)
        );
        assert_eq!(metadata.get_document("keyPattern").unwrap(), &doc! {"k": 1});
        assert_eq!(metadata.get_array("chunks").unwrap().len(), 1);
    }
}

both_modes!(
    merge_all_chunks_and_version_reports,
    merge_follows_the_versioning_rules,
    drops_remove_sharding_metadata,
    shard_collection_records_the_collection,
    shard_collection_validation,
    split_follows_the_versioning_rules
);
