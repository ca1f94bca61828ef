//! The config database through the router: what mongosh's `sh.status()` reads, and the
//! settings it writes.

use crate::harness::TestCluster;
use futures::TryStreamExt;
use mongodb::bson::{Document, doc};

#[tokio::test]
async fn routing_table_is_readable_through_the_router() {
    let cluster = TestCluster::start().await;
    let config = cluster.db("config");
    let version = config
        .collection::<Document>("version")
        .find_one(doc! {})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(version.get_i32("_id").unwrap(), 1);
    assert!(version.get_object_id("clusterId").is_ok());
    let shards: Vec<Document> = config
        .collection::<Document>("shards")
        .find(doc! {})
        .sort(doc! {"_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(shards.len(), 2);
    assert_eq!(shards[0].get_str("_id").unwrap(), "shard0");
    assert_eq!(shards[0].get_i32("state").unwrap(), 1);
    assert!(shards[0].get_str("host").is_ok());
    let mut names = config.list_collection_names().await.unwrap();
    names.sort();
    for expected in [
        "changelog",
        "chunks",
        "collections",
        "databases",
        "mongos",
        "settings",
        "shards",
        "version",
    ] {
        assert!(
            names.contains(&expected.to_string()),
            "config.{expected} exists"
        );
    }
    // sh.disableAutoSplit() and friends write config.settings directly.
    let settings = config.collection::<Document>("settings");
    settings
        .update_one(doc! {"_id": "autosplit"}, doc! {"$set": {"enabled": false}})
        .upsert(true)
        .await
        .unwrap();
    assert!(
        !settings
            .find_one(doc! {"_id": "autosplit"})
            .await
            .unwrap()
            .unwrap()
            .get_bool("enabled")
            .unwrap()
    );
    cluster.shutdown().await;
}
