//! The cluster as separate processes (config server, two shards, router) talking over TCP.

use crate::harness::{ProcessCluster, client_for};
use futures::TryStreamExt;
use mongodb::bson::{Binary, Bson, Document, Timestamp, doc, spec::BinarySubtype};
use std::net::SocketAddr;

#[tokio::test]
async fn user_story_across_processes() {
    let cluster = ProcessCluster::start(2).await;
    let client = cluster.client().await;
    let coll = client.database("app").collection::<Document>("users");
    coll.insert_many((0..150).map(|i| doc! {"_id": i, "name": format!("u{i}"), "age": i % 50}))
        .await
        .unwrap();
    assert_eq!(coll.count_documents(doc! {"age": 10}).await.unwrap(), 3);
    let all: Vec<Document> = coll
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all.len(), 150);
    coll.update_one(doc! {"_id": 1}, doc! {"$set": {"name": "one"}})
        .await
        .unwrap();
    assert_eq!(
        coll.find_one(doc! {"_id": 1})
            .await
            .unwrap()
            .unwrap()
            .get_str("name")
            .unwrap(),
        "one"
    );
    assert_eq!(
        coll.delete_many(doc! {"age": {"$gte": 40}})
            .await
            .unwrap()
            .deleted_count,
        30
    );
    let shards = crate::harness::shard_documents(&client).await;
    assert_eq!(shards.len(), 2);
    assert!(
        shards
            .iter()
            .all(|s| s.get_str("host").unwrap().starts_with("127.0.0.1:"))
    );
    assert!(
        client
            .list_database_names()
            .await
            .unwrap()
            .contains(&"app".to_string())
    );
    client.database("app").drop().await.unwrap();
    assert!(
        !client
            .list_database_names()
            .await
            .unwrap()
            .contains(&"app".to_string())
    );
}

#[tokio::test]
async fn a_shard_answers_stale_db_version_to_an_outdated_router() {
    let cluster = ProcessCluster::start(1).await;
    let client = cluster.client().await;
    client
        .database("app")
        .collection::<Document>("c")
        .insert_one(doc! {"x": 1})
        .await
        .unwrap();
    let entry = client
        .database("config")
        .collection::<Document>("databases")
        .find_one(doc! {"_id": "app"})
        .await
        .unwrap()
        .unwrap();
    let current = entry.get_document("version").unwrap().clone();
    let shard = client
        .database("config")
        .collection::<Document>("shards")
        .find_one(doc! {})
        .await
        .unwrap()
        .unwrap();
    let shard_addr: SocketAddr = shard.get_str("host").unwrap().parse().unwrap();
    let direct = client_for(shard_addr).await;
    let outdated = doc! {
        "uuid": Bson::Binary(Binary {subtype: BinarySubtype::Uuid, bytes: vec![7; 16]}),
        "timestamp": Timestamp {time: 1, increment: 1},
        "lastMod": 1,
    };
    let reply = crate::wire::raw_command(
        shard_addr,
        doc! {"find": "c", "$db": "app", "databaseVersion": outdated.clone()},
    )
    .await;
    assert_eq!(reply.get_i32("code").unwrap(), 249);
    assert_eq!(reply.get_str("codeName").unwrap(), "StaleDbVersion");
    assert_eq!(reply.get_str("db").unwrap(), "app");
    assert_eq!(reply.get_document("vReceived").unwrap(), &outdated);
    assert_eq!(reply.get_document("vWanted").unwrap(), &current);
    // With the current version the same request succeeds.
    let ok = direct
        .database("app")
        .run_command(doc! {"find": "c", "databaseVersion": current})
        .await
        .unwrap();
    assert_eq!(
        ok.get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn a_shard_restarted_on_another_port_keeps_its_name_and_data() {
    let mut cluster = ProcessCluster::start(1).await;
    let client = cluster.client().await;
    let coll = client.database("app").collection::<Document>("kept");
    coll.insert_many((0..50).map(|i| doc! {"_id": i}))
        .await
        .unwrap();
    let (name, data_dir) = cluster.kill_shard(0);
    let port = crate::harness::free_port();
    cluster.restart_shard(&data_dir, port).await;
    let shards = crate::harness::shard_documents(&client).await;
    assert_eq!(shards.len(), 1);
    assert_eq!(shards[0].get_str("_id").unwrap(), name);
    assert_eq!(
        shards[0].get_str("host").unwrap(),
        format!("127.0.0.1:{port}")
    );
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 50);
}

/// A router whose pools hold at most two connections per shard serves sixteen concurrent
/// clients; with one shard down, only the operations that need it fail (`allowPartialResults`
/// answers from the shards that are up).
#[tokio::test]
async fn bounded_pools_and_a_shard_down() {
    let mut cluster = ProcessCluster::start(2).await;
    let client = cluster.client().await;
    let shards = crate::harness::shard_names(&client).await;
    for (db, shard) in [("pa", &shards[0]), ("pb", &shards[1])] {
        client
            .database("admin")
            .run_command(doc! {"enableSharding": db, "primaryShard": shard})
            .await
            .unwrap();
        client
            .database(db)
            .collection::<Document>("c")
            .insert_many((0..100).map(|i| doc! {"_id": i}))
            .await
            .unwrap();
    }
    client
        .database("admin")
        .run_command(doc! {"shardCollection": "pa.h", "key": {"h": "hashed"}})
        .await
        .unwrap();
    let spread = client.database("pa").collection::<Document>("h");
    spread
        .insert_many((0..100).map(|i| doc! {"h": i}))
        .await
        .unwrap();

    let small = cluster
        .add_router_with(&["--setParameter", "ShardingTaskExecutorPoolMaxSize=2"])
        .await;
    let readers: Vec<_> = (0..16)
        .map(|t| {
            let small = small.clone();
            tokio::spawn(async move {
                for i in 0..20 {
                    let db = if (t + i) % 2 == 0 { "pa" } else { "pb" };
                    let found = small
                        .database(db)
                        .collection::<Document>("c")
                        .find_one(doc! {"_id": i})
                        .await
                        .unwrap();
                    assert_eq!(found, Some(doc! {"_id": i}));
                }
            })
        })
        .collect();
    for reader in readers {
        reader.await.unwrap();
    }

    cluster.kill_shard(1);
    let pa = small.database("pa").collection::<Document>("c");
    assert_eq!(pa.count_documents(doc! {}).await.unwrap(), 100);
    let pb = small.database("pb").collection::<Document>("c");
    assert!(pb.count_documents(doc! {}).await.is_err());
    let via_small = small.database("pa").collection::<Document>("h");
    assert!(via_small.count_documents(doc! {}).await.is_err());
    let partial: Vec<Document> = via_small
        .find(doc! {})
        .allow_partial_results(true)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(
        !partial.is_empty() && partial.len() < 100,
        "{} documents from the shard that is up",
        partial.len()
    );
}
