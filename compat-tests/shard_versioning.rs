//! Shard versioning across two routers: router A changes a collection's placement (shards it,
//! splits, merges, refines its key, drops and re-shards it) or its database's primary shard;
//! router B, whose cached routing is stale, sends its old version, the shard answers
//! StaleConfig (StaleDbVersion), and B refreshes, retries and answers correctly, counting the
//! retries in `serverStatus.shardingStatistics`. Run in-process and as separate processes.

use crate::harness::{ProcessCluster, TestCluster, admin, error_code};
use futures::TryStreamExt;
use mongodb::Client;
use mongodb::bson::{Document, doc};

async fn stale_config_errors(client: &Client) -> i64 {
    admin(client, doc! {"serverStatus": 1})
        .await
        .unwrap()
        .get_document("shardingStatistics")
        .unwrap()
        .get_i64("countStaleConfigErrors")
        .unwrap()
}

/// `serverStatus.shardingStatistics.catalogCache`: (full, incremental) refreshes started.
async fn refreshes(client: &Client) -> (i64, i64) {
    let status = admin(client, doc! {"serverStatus": 1}).await.unwrap();
    let cache = status
        .get_document("shardingStatistics")
        .unwrap()
        .get_document("catalogCache")
        .unwrap()
        .clone();
    (
        cache.get_i64("countFullRefreshesStarted").unwrap(),
        cache.get_i64("countIncrementalRefreshesStarted").unwrap(),
    )
}

async fn keys(client: &Client) -> Vec<i32> {
    let docs: Vec<Document> = client
        .database("sv")
        .collection::<Document>("c")
        .find(doc! {})
        .sort(doc! {"k": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    docs.iter().map(|d| d.get_i32("k").unwrap()).collect()
}

async fn placement_changes_reach_a_stale_router(a: &Client, b: &Client) {
    let via_a = a.database("sv").collection::<Document>("c");
    let via_b = b.database("sv").collection::<Document>("c");
    via_b
        .insert_many((0..6).map(|k| doc! {"k": k}).collect::<Vec<_>>())
        .await
        .unwrap();
    // B caches the collection as unsharded.
    assert_eq!(keys(b).await, vec![0, 1, 2, 3, 4, 5]);
    let before = stale_config_errors(b).await;

    // A shards it: B's next read is refused once, refreshed and answered.
    a.database("sv")
        .run_command(doc! {"createIndexes": "c", "indexes": [{"key": {"k": 1}, "name": "k_1"}]})
        .await
        .unwrap();
    admin(a, doc! {"shardCollection": "sv.c", "key": {"k": 1}})
        .await
        .unwrap();
    assert_eq!(keys(b).await, vec![0, 1, 2, 3, 4, 5]);
    let after_shard = stale_config_errors(b).await;
    assert!(after_shard > before, "{before} -> {after_shard}");

    // A splits: B's write carries the old version and is retried, after B read only the
    // chunks the split changed (same generation: an incremental refresh).
    admin(a, doc! {"split": "sv.c", "middle": {"k": 3}})
        .await
        .unwrap();
    let (full_before, incremental_before) = refreshes(b).await;
    via_b.insert_one(doc! {"k": 6}).await.unwrap();
    let after_split = stale_config_errors(b).await;
    assert!(after_split > after_shard);
    let (full_after, incremental_after) = refreshes(b).await;
    assert_eq!(full_after, full_before);
    assert!(incremental_after > incremental_before);
    assert_eq!(via_a.count_documents(doc! {}).await.unwrap(), 7);

    // A merges: B's update is retried.
    admin(
        a,
        doc! {"mergeChunks": "sv.c", "bounds": [{"k": mongodb::bson::Bson::MinKey}, {"k": mongodb::bson::Bson::MaxKey}]},
    )
    .await
    .unwrap();
    let updated = via_b
        .update_many(doc! {"k": {"$gte": 5}}, doc! {"$set": {"big": true}})
        .await
        .unwrap();
    assert_eq!(updated.modified_count, 2);
    let after_merge = stale_config_errors(b).await;
    assert!(after_merge > after_split);

    // A refines the shard key: a new epoch, so B's write is refused, and B reloads the
    // collection in full.
    a.database("sv")
        .run_command(
            doc! {"createIndexes": "c", "indexes": [{"key": {"k": 1, "r": 1}, "name": "k_1_r_1"}]},
        )
        .await
        .unwrap();
    admin(
        a,
        doc! {"refineCollectionShardKey": "sv.c", "key": {"k": 1, "r": 1}},
    )
    .await
    .unwrap();
    let (full_before, _) = refreshes(b).await;
    via_b.insert_one(doc! {"k": 7, "r": 1}).await.unwrap();
    assert!(stale_config_errors(b).await > after_merge);
    assert!(refreshes(b).await.0 > full_before);
    assert_eq!(
        via_b
            .count_documents(doc! {"k": {"$gte": 5}})
            .await
            .unwrap(),
        3
    );

    // A drops and re-shards it with another key: a new generation.
    via_a.drop().await.unwrap();
    via_a
        .insert_many((10..13).map(|k| doc! {"k": k, "j": k}).collect::<Vec<_>>())
        .await
        .unwrap();
    a.database("sv")
        .run_command(doc! {"createIndexes": "c", "indexes": [{"key": {"j": 1}, "name": "j_1"}]})
        .await
        .unwrap();
    admin(a, doc! {"shardCollection": "sv.c", "key": {"j": 1}})
        .await
        .unwrap();
    let (full_before, _) = refreshes(b).await;
    assert_eq!(keys(b).await, vec![10, 11, 12]);
    // A new generation is loaded in full.
    assert!(refreshes(b).await.0 > full_before);
    let deleted = via_b.delete_many(doc! {"j": 11}).await.unwrap();
    assert_eq!(deleted.deleted_count, 1);
    assert_eq!(keys(a).await, vec![10, 12]);
}

/// A moves a database's primary shard: B, still sending the old database version to the old
/// primary, is refused (StaleDbVersion), reloads the database entry and reads and writes on
/// the new primary.
async fn primary_moves_reach_a_stale_router(a: &Client, b: &Client) {
    let shards = crate::harness::shard_names(a).await;
    admin(
        a,
        doc! {"enableSharding": "svp", "primaryShard": &shards[0]},
    )
    .await
    .unwrap();
    let via_b = b.database("svp").collection::<Document>("c");
    via_b
        .insert_many((0..3).map(|i| doc! {"i": i}))
        .await
        .unwrap();
    assert_eq!(via_b.count_documents(doc! {}).await.unwrap(), 3);
    admin(a, doc! {"movePrimary": "svp", "to": &shards[1]})
        .await
        .unwrap();
    assert_eq!(via_b.count_documents(doc! {}).await.unwrap(), 3);
    via_b.insert_one(doc! {"i": 3}).await.unwrap();
    let via_a = a.database("svp").collection::<Document>("c");
    assert_eq!(via_a.count_documents(doc! {}).await.unwrap(), 4);
    let entry = a
        .database("config")
        .collection::<Document>("databases")
        .find_one(doc! {"_id": "svp"})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(entry.get_str("primary").unwrap(), shards[1]);
}

/// Per-shard document counts of `sv.<coll>` (router `collStats`).
async fn spread(client: &Client, coll: &str) -> Vec<i64> {
    let stats = client
        .database("sv")
        .run_command(doc! {"collStats": coll})
        .await
        .unwrap();
    stats
        .get_document("shards")
        .unwrap()
        .values()
        .map(|s| {
            let s = s.as_document().unwrap();
            s.get_i64("count")
                .or_else(|_| s.get_i32("count").map(i64::from))
                .unwrap()
        })
        .collect()
}

/// The same with chunks on both shards: B's scattered reads and per-shard writes follow A's
/// placement changes.
async fn spread_placement_reaches_a_stale_router(a: &Client, b: &Client) {
    let via_a = a.database("sv").collection::<Document>("h");
    let via_b = b.database("sv").collection::<Document>("h");
    // B caches the (empty) collection as unsharded.
    assert_eq!(via_b.count_documents(doc! {}).await.unwrap(), 0);
    let before = stale_config_errors(b).await;
    admin(a, doc! {"shardCollection": "sv.h", "key": {"h": "hashed"}})
        .await
        .unwrap();
    // B's insert goes to the primary as unsharded, is refused, re-targeted per document.
    via_b
        .insert_many((0..100).map(|i| doc! {"h": i, "k": i}).collect::<Vec<_>>())
        .await
        .unwrap();
    assert!(stale_config_errors(b).await > before);
    let counts = spread(a, "h").await;
    assert_eq!(counts.len(), 2, "{counts:?}");
    assert!(counts.iter().all(|n| *n > 20), "{counts:?}");
    assert_eq!(counts.iter().sum::<i64>(), 100);
    // A splits a chunk: B's scattered, sorted read refreshes and merges.
    let before = stale_config_errors(b).await;
    admin(a, doc! {"split": "sv.h", "find": {"h": 5}})
        .await
        .unwrap();
    let top: Vec<Document> = via_b
        .find(doc! {"k": {"$gte": 90}})
        .sort(doc! {"k": -1})
        .limit(3)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let ks: Vec<i32> = top.iter().map(|d| d.get_i32("k").unwrap()).collect();
    assert_eq!(ks, vec![99, 98, 97]);
    assert!(stale_config_errors(b).await > before);
    // A drops it and shards it again on another field: B's writes land by the new key.
    via_a.drop().await.unwrap();
    admin(a, doc! {"shardCollection": "sv.h", "key": {"g": "hashed"}})
        .await
        .unwrap();
    via_b
        .insert_many((0..40).map(|i| doc! {"g": i, "k": i}).collect::<Vec<_>>())
        .await
        .unwrap();
    let updated = via_b
        .update_many(doc! {"k": {"$lt": 10}}, doc! {"$set": {"small": true}})
        .await
        .unwrap();
    assert_eq!(updated.modified_count, 10);
    assert_eq!(
        via_a.count_documents(doc! {"small": true}).await.unwrap(),
        10
    );
    assert_eq!(spread(a, "h").await.iter().sum::<i64>(), 40);
}

/// A shard refuses a version newer or older than its own with StaleConfig and MongoDB's fields.
async fn shards_answer_stale_config(a: &Client) {
    admin(a, doc! {"shardCollection": "sv.fields", "key": {"k": 1}})
        .await
        .unwrap();
    let entry = a
        .database("config")
        .collection::<Document>("collections")
        .find_one(doc! {"_id": "sv.fields"})
        .await
        .unwrap()
        .unwrap();
    let shard = a
        .database("config")
        .collection::<Document>("chunks")
        .find_one(doc! {"uuid": entry.get("uuid").unwrap().clone()})
        .await
        .unwrap()
        .unwrap()
        .get_str("shard")
        .unwrap()
        .to_string();
    let host = crate::harness::shard_host(a, &shard).await;
    // Only a multi-process cluster has shards a test can reach directly.
    let Ok(addr) = host.parse::<std::net::SocketAddr>() else {
        return;
    };
    let direct = crate::harness::client_for(addr).await;
    let wrong = doc! {
        "e": entry.get_object_id("lastmodEpoch").unwrap(),
        "t": entry.get_timestamp("timestamp").unwrap(),
        "v": mongodb::bson::Timestamp {time: 7, increment: 0},
    };
    let err = direct
        .database("sv")
        .run_command(doc! {"find": "fields", "shardVersion": wrong.clone()})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(13388));
    let reply = crate::wire::raw_command(
        addr,
        doc! {"find": "fields", "$db": "sv", "shardVersion": wrong.clone()},
    )
    .await;
    assert_eq!(reply.get_str("codeName").unwrap(), "StaleConfig");
    assert_eq!(reply.get_str("ns").unwrap(), "sv.fields");
    assert_eq!(reply.get_document("vReceived").unwrap(), &wrong);
    assert_eq!(
        reply
            .get_document("vWanted")
            .unwrap()
            .get_timestamp("v")
            .unwrap(),
        mongodb::bson::Timestamp {
            time: 1,
            increment: 0
        }
    );
    assert_eq!(reply.get_str("shardId").unwrap(), shard);
}

#[tokio::test]
async fn in_process() {
    let cluster = TestCluster::start_with(2, 2).await;
    let (a, b) = (
        cluster.router_client(0).await,
        cluster.router_client(1).await,
    );
    placement_changes_reach_a_stale_router(&a, &b).await;
    spread_placement_reaches_a_stale_router(&a, &b).await;
    primary_moves_reach_a_stale_router(&a, &b).await;
    shards_answer_stale_config(&a).await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn separate_processes() {
    let mut cluster = ProcessCluster::start(2).await;
    let a = cluster.client().await;
    let b = cluster.add_router().await;
    placement_changes_reach_a_stale_router(&a, &b).await;
    spread_placement_reaches_a_stale_router(&a, &b).await;
    primary_moves_reach_a_stale_router(&a, &b).await;
    shards_answer_stale_config(&a).await;
}
