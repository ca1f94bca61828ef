//! Database versioning across two routers: a router whose cached database version is stale
//! (the database was dropped and re-created through the other router) is corrected by the
//! shard (StaleDbVersion), refreshes and retries, and never reads or writes the old instance.

use crate::harness::TestCluster;
use futures::TryStreamExt;
use mongodb::bson::{Document, doc};

async fn ids(client: &mongodb::Client) -> Vec<i32> {
    let docs: Vec<Document> = client
        .database("app")
        .collection::<Document>("c")
        .find(doc! {})
        .sort(doc! {"_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
}

async fn entry(client: &mongodb::Client) -> Document {
    client
        .database("config")
        .collection::<Document>("databases")
        .find_one(doc! {"_id": "app"})
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn stale_router_refreshes_when_the_database_is_recreated_on_the_same_primary() {
    let cluster = TestCluster::start_with(2, 2).await;
    let (a, b) = (
        cluster.router_client(0).await,
        cluster.router_client(1).await,
    );
    a.database("app")
        .collection::<Document>("c")
        .insert_one(doc! {"_id": 1})
        .await
        .unwrap();
    assert_eq!(ids(&b).await, vec![1], "router B caches app's version");
    let before = entry(&a).await;
    a.database("app").drop().await.unwrap();
    a.database("app")
        .collection::<Document>("c")
        .insert_one(doc! {"_id": 2})
        .await
        .unwrap();
    let after = entry(&a).await;
    assert_eq!(
        before.get_str("primary").unwrap(),
        after.get_str("primary").unwrap()
    );
    assert_ne!(
        before.get_document("version").unwrap().get("uuid"),
        after.get_document("version").unwrap().get("uuid")
    );
    assert_eq!(
        ids(&b).await,
        vec![2],
        "router B must not see the dropped instance"
    );
    b.database("app")
        .collection::<Document>("c")
        .insert_one(doc! {"_id": 3})
        .await
        .unwrap();
    assert_eq!(ids(&a).await, vec![2, 3]);
    cluster.shutdown().await;
}

#[tokio::test]
async fn stale_router_follows_a_database_recreated_on_another_shard() {
    let cluster = TestCluster::start_with(2, 2).await;
    let (a, b) = (
        cluster.router_client(0).await,
        cluster.router_client(1).await,
    );
    a.database("app")
        .collection::<Document>("c")
        .insert_one(doc! {"_id": 1})
        .await
        .unwrap();
    assert_eq!(ids(&b).await, vec![1]);
    let first_primary = entry(&a).await.get_str("primary").unwrap().to_string();
    a.database("app").drop().await.unwrap();
    // Load the old primary so that the re-created database goes to the other shard.
    let ballast: Vec<Document> = (0..2000)
        .map(|i| doc! {"i": i, "pad": "x".repeat(200)})
        .collect();
    a.database("ballast")
        .collection::<Document>("b")
        .insert_many(ballast)
        .await
        .unwrap();
    let ballast_primary = a
        .database("config")
        .collection::<Document>("databases")
        .find_one(doc! {"_id": "ballast"})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ballast_primary.get_str("primary").unwrap(), first_primary);
    a.database("app")
        .collection::<Document>("c")
        .insert_one(doc! {"_id": 2})
        .await
        .unwrap();
    assert_ne!(
        entry(&a).await.get_str("primary").unwrap(),
        first_primary,
        "app moved to the emptier shard"
    );
    assert_eq!(ids(&b).await, vec![2]);
    b.database("app")
        .collection::<Document>("c")
        .insert_one(doc! {"_id": 3})
        .await
        .unwrap();
    assert_eq!(ids(&a).await, vec![2, 3]);
    cluster.shutdown().await;
}
