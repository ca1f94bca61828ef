//! What a shard owns of a sharded collection: documents it holds outside its chunks (orphans —
//! written to it directly here, left behind by migrations later) are invisible to every read and
//! write a router sends, and visible to direct reads on the shard, as in MongoDB; the shard's
//! filtering metadata (`config.cache.*`) survives a kill -9. Unique indexes on a sharded
//! collection must be prefixed by the shard key.

use crate::harness::{
    ProcessCluster, admin, all_by_id, both_modes, client_for, cursor_documents, error_code,
};
use mongodb::Client;
use mongodb::bson::{Document, doc};
use std::net::SocketAddr;

/// The shards' names and hosts, by name.
async fn shard_hosts(client: &Client) -> Vec<(String, String)> {
    let shards = client.database("config").collection::<Document>("shards");
    let mut out: Vec<(String, String)> =
        cursor_documents(&client.database("config"), doc! {"find": "shards"})
            .await
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s.get_str("_id").unwrap().to_string(),
                    s.get_str("host").unwrap().to_string(),
                )
            })
            .collect();
    out.sort();
    assert_eq!(
        out.len() as u64,
        shards.count_documents(doc! {}).await.unwrap()
    );
    out
}

async fn direct(host: &str) -> Client {
    client_for(host.parse::<SocketAddr>().expect("a host:port")).await
}

#[tokio::test]
async fn orphans_are_invisible_through_the_router() {
    let mut cluster = ProcessCluster::start(2).await;
    let client = cluster.client().await;
    admin(
        &client,
        doc! {"shardCollection": "orph.c", "key": {"a": "hashed"}},
    )
    .await
    .unwrap();
    let coll = client.database("orph").collection::<Document>("c");
    let docs: Vec<Document> = (0..40).map(|i| doc! {"_id": i, "a": i, "v": 0}).collect();
    coll.insert_many(docs.clone()).await.unwrap();

    let hosts = shard_hosts(&client).await;
    let shard0 = direct(&hosts[0].1).await;
    let shard1 = direct(&hosts[1].1).await;
    let on = |c: &Client| c.database("orph").collection::<Document>("c");
    let owned0 = all_by_id(&on(&shard0)).await;
    let owned1 = all_by_id(&on(&shard1)).await;
    assert!(
        !owned0.is_empty() && !owned1.is_empty(),
        "hashed chunks spread"
    );
    assert_eq!(owned0.len() + owned1.len(), 40);
    // Shard 1's documents copied onto shard 0, where they are orphans.
    on(&shard0).insert_many(owned1.clone()).await.unwrap();
    assert_eq!(
        all_by_id(&on(&shard0)).await.len(),
        40,
        "direct reads see orphans"
    );

    let check_reads = |expected: Vec<Document>| {
        let coll = coll.clone();
        async move {
            assert_eq!(all_by_id(&coll).await, expected);
            assert_eq!(
                coll.count_documents(doc! {"v": {"$gte": 0}}).await.unwrap(),
                expected.len() as u64
            );
            assert_eq!(
                coll.distinct("_id", doc! {}).await.unwrap().len(),
                expected.len()
            );
            let grouped = cursor_documents(
                &client_db(&coll),
                doc! {"aggregate": "c", "pipeline": [
                    {"$match": {"v": {"$gte": 0}}},
                    {"$group": {"_id": null, "n": {"$sum": 1}}},
                ], "cursor": {}},
            )
            .await
            .unwrap();
            assert_eq!(grouped[0].get_i32("n").unwrap(), expected.len() as i32);
        }
    };
    check_reads(docs.clone()).await;

    // Explain shows each shard's SHARDING_FILTER, and shard 0's skipped orphans.
    let explained = client
        .database("orph")
        .run_command(
            doc! {"explain": {"find": "c", "filter": {"v": 0}}, "verbosity": "executionStats"},
        )
        .await
        .unwrap();
    let shards = explained
        .get_document("executionStats")
        .unwrap()
        .get_document("executionStages")
        .unwrap()
        .get_array("shards")
        .unwrap();
    let mut skipped = Vec::new();
    for shard in shards {
        let stages = shard
            .as_document()
            .unwrap()
            .get_document("executionStages")
            .unwrap();
        assert_eq!(
            stages.get_str("stage").unwrap(),
            "SHARDING_FILTER",
            "{stages}"
        );
        assert_eq!(
            stages
                .get_document("inputStage")
                .unwrap()
                .get_str("stage")
                .unwrap(),
            "COLLSCAN"
        );
        skipped.push(stages.get_i32("chunkSkips").unwrap() as usize);
    }
    skipped.sort_unstable();
    assert_eq!(skipped, vec![0, owned1.len()]);

    // Multi-writes skip orphans: the orphans keep v = 0, the owned copies move on.
    let updated = coll
        .update_many(doc! {}, doc! {"$inc": {"v": 1}})
        .await
        .unwrap();
    assert_eq!((updated.matched_count, updated.modified_count), (40, 40));
    for orphan in &owned1 {
        let id = orphan.get_i32("_id").unwrap();
        let here = on(&shard0)
            .find_one(doc! {"_id": id})
            .await
            .unwrap()
            .unwrap();
        assert_eq!(here.get_i32("v").unwrap(), 0, "orphan {id} untouched");
    }
    let bumped: Vec<Document> = (0..40).map(|i| doc! {"_id": i, "a": i, "v": 1}).collect();
    check_reads(bumped.clone()).await;

    // The shard's filtering metadata is persisted: after a kill -9 it still filters.
    let entry = shard0
        .database("config")
        .collection::<Document>("cache.collections")
        .find_one(doc! {"_id": "orph.c"})
        .await
        .unwrap()
        .expect("the shard persisted the collection's routing");
    assert_eq!(entry.get_document("key").unwrap(), &doc! {"a": "hashed"});
    let (_, dir) = cluster.kill_shard(0);
    let port: u16 = hosts[0].1.rsplit(':').next().unwrap().parse().unwrap();
    cluster.restart_shard(&dir, port).await;
    let shard0 = direct(&hosts[0].1).await;
    let persisted = shard0
        .database("config")
        .collection::<Document>("cache.chunks.orph.c")
        .count_documents(doc! {})
        .await
        .unwrap();
    assert_eq!(persisted, 2, "one chunk per shard");
    check_reads(bumped).await;

    // deleteMany removes what the shards own and leaves the orphans.
    let deleted = coll.delete_many(doc! {}).await.unwrap();
    assert_eq!(deleted.deleted_count, 40);
    assert!(all_by_id(&coll).await.is_empty());
    assert_eq!(all_by_id(&on(&shard0)).await.len(), owned1.len());
}

fn client_db(coll: &mongodb::Collection<Document>) -> mongodb::Database {
    coll.client().database(coll.namespace().db.as_str())
}

/// A unique index must start with the shard key's fields (the `_id` index excepted); a
/// non-unique index may be anything.
async fn unique_indexes_are_prefixed_by_the_shard_key(client: &Client) {
    admin(client, doc! {"shardCollection": "uix.r", "key": {"k": 1}})
        .await
        .unwrap();
    let db = client.database("uix");
    let create = |coll: &'static str, key: Document, unique: bool| {
        let db = db.clone();
        async move {
            db.run_command(doc! {
                "createIndexes": coll,
                "indexes": [{"key": key, "name": format!("i{unique}"), "unique": unique}],
            })
            .await
        }
    };
    let err = create("r", doc! {"b": 1}, true).await.unwrap_err();
    assert_eq!(error_code(&err), Some(67), "{err}");
    assert!(
        err.to_string()
            .contains("cannot create unique index over { b: 1 } with shard key pattern { k: 1 }"),
        "{err}"
    );
    create("r", doc! {"b": 1}, false).await.unwrap();
    create("r", doc! {"k": -1, "b": 1}, true).await.unwrap();

    // A hashed shard key spread over both shards: every shard applies the rule.
    admin(
        client,
        doc! {"shardCollection": "uix.h", "key": {"k": "hashed"}},
    )
    .await
    .unwrap();
    let err = create("h", doc! {"b": 1, "k": 1}, true).await.unwrap_err();
    assert_eq!(error_code(&err), Some(67), "{err}");
    create("h", doc! {"k": 1}, true).await.unwrap();
    let h = db.collection::<Document>("h");
    h.insert_one(doc! {"_id": 1, "k": 5}).await.unwrap();
    let dup = h.insert_one(doc! {"_id": 2, "k": 5}).await.unwrap_err();
    assert_eq!(error_code(&dup), Some(11000));
}

both_modes!(unique_indexes_are_prefixed_by_the_shard_key);
