//! `renameCollection` in a cluster. With a sharded collection on either side, as MongoDB 5.0+
//! allows (same database): the collection keeps its UUID, chunks, shard key and indexes under
//! the new name, at a new generation; a router that cached the old routing finds the new
//! placement; a sharded target is replaced with `dropTarget`; CRUD on either name waits while
//! the shards are in the rename's critical section. Unsharded collections also move to another
//! database on the same primary shard (a new target database is created there). MongoDB's
//! refusals.

use crate::harness::{
    ProcessCluster, TestCluster, admin, assert_metadata_consistent, collection_entry,
    cursor_documents, error_code,
};
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

const DB: &str = "srn";

async fn chunk_count(client: &Client, uuid: &Bson) -> u64 {
    client
        .database("config")
        .collection::<Document>("chunks")
        .count_documents(doc! {"uuid": uuid})
        .await
        .unwrap()
}

/// `DB.name`, sharded on hashed `_id` over both shards, with an index on `x` and 100 documents
/// tagged `tag`.
async fn sharded_collection(client: &Client, name: &str, tag: &str) {
    let ns = format!("{DB}.{name}");
    admin(
        client,
        doc! {"shardCollection": &ns, "key": {"_id": "hashed"}},
    )
    .await
    .unwrap();
    let coll = client.database(DB).collection::<Document>(name);
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"x": 1}).build())
        .await
        .unwrap();
    let docs: Vec<Document> = (0..100)
        .map(|i| doc! {"_id": i, "x": i, "tag": tag})
        .collect();
    coll.insert_many(docs).await.unwrap();
}

async fn rename(
    client: &Client,
    from: &str,
    to: &str,
    drop_target: bool,
) -> mongodb::error::Result<Document> {
    admin(
        client,
        doc! {
            "renameCollection": format!("{DB}.{from}"),
            "to": format!("{DB}.{to}"),
            "dropTarget": drop_target,
        },
    )
    .await
}

async fn names(client: &Client) -> Vec<String> {
    let mut names = client.database(DB).list_collection_names().await.unwrap();
    names.sort();
    names
}

async fn count(client: &Client, name: &str, filter: Document) -> u64 {
    client
        .database(DB)
        .collection::<Document>(name)
        .count_documents(filter)
        .await
        .unwrap()
}

/// Renames through router `a` while router `b` holds the old routing of both names.
async fn renames_a_sharded_collection(a: &Client, b: &Client) {
    a.database(DB).drop().await.unwrap();
    sharded_collection(a, "before", "src").await;
    // Router b caches "before" as sharded and "after" as unsharded.
    assert_eq!(count(b, "before", doc! {}).await, 100);
    assert_eq!(count(b, "after", doc! {}).await, 0);
    let old = collection_entry(a, &format!("{DB}.before")).await.unwrap();

    rename(a, "before", "after", false).await.unwrap();

    assert!(collection_entry(a, &format!("{DB}.before")).await.is_none());
    let new = collection_entry(a, &format!("{DB}.after")).await.unwrap();
    assert_eq!(new.get("uuid"), old.get("uuid"), "the UUID stays");
    assert_eq!(new.get("key"), old.get("key"));
    assert_ne!(
        new.get("lastmodEpoch"),
        old.get("lastmodEpoch"),
        "a new generation"
    );
    let uuid = new.get("uuid").unwrap().clone();
    assert!(chunk_count(a, &uuid).await >= 2, "the chunks stay");

    for client in [a, b] {
        assert_eq!(names(client).await, vec!["after"]);
        assert_eq!(count(client, "after", doc! {}).await, 100);
        assert_eq!(
            count(client, "after", doc! {"tag": "src", "x": {"$lt": 10}}).await,
            10
        );
        assert_eq!(count(client, "before", doc! {}).await, 0);
    }
    // Writes through the stale router land in the renamed collection, routed by shard key.
    let after = b.database(DB).collection::<Document>("after");
    after
        .insert_one(doc! {"_id": 1000, "x": 1000})
        .await
        .unwrap();
    let found = after.find_one(doc! {"_id": 1000}).await.unwrap().unwrap();
    assert_eq!(found.get_i32("x").unwrap(), 1000);
    let indexes: Vec<String> = cursor_documents(&a.database(DB), doc! {"listIndexes": "after"})
        .await
        .unwrap()
        .iter()
        .map(|i| i.get_str("name").unwrap().to_string())
        .collect();
    assert!(indexes.contains(&"x_1".to_string()), "{indexes:?}");
    // The old name is free: a write through the stale router creates an unsharded collection.
    b.database(DB)
        .collection::<Document>("before")
        .insert_one(doc! {"_id": 1})
        .await
        .unwrap();
    assert_eq!(count(a, "before", doc! {}).await, 1);
    assert!(collection_entry(a, &format!("{DB}.before")).await.is_none());
    assert_metadata_consistent(a, true, "renaming a sharded collection").await;
}

/// A sharded or unsharded source onto a sharded target: refused without `dropTarget`; with
/// it, the target's data and routing metadata are gone.
async fn drop_target_replaces_a_sharded_target(client: &Client) {
    client.database(DB).drop().await.unwrap();
    sharded_collection(client, "src", "src").await;
    sharded_collection(client, "dst", "dst").await;
    let err = rename(client, "src", "dst", false).await.unwrap_err();
    assert_eq!(error_code(&err), Some(48), "{err}");
    assert_eq!(count(client, "dst", doc! {"tag": "dst"}).await, 100);

    let old_target = collection_entry(client, &format!("{DB}.dst"))
        .await
        .unwrap();
    rename(client, "src", "dst", true).await.unwrap();
    assert_eq!(count(client, "dst", doc! {"tag": "src"}).await, 100);
    assert_eq!(count(client, "dst", doc! {"tag": "dst"}).await, 0);
    assert_eq!(
        chunk_count(client, old_target.get("uuid").unwrap()).await,
        0
    );
    assert_eq!(names(client).await, vec!["dst"]);

    // An unsharded source onto the (now sharded) target.
    let plain = client.database(DB).collection::<Document>("plain");
    plain
        .insert_many((0..5).map(|i| doc! {"_id": i, "tag": "plain"}))
        .await
        .unwrap();
    let sharded_target = collection_entry(client, &format!("{DB}.dst"))
        .await
        .unwrap();
    rename(client, "plain", "dst", true).await.unwrap();
    assert!(
        collection_entry(client, &format!("{DB}.dst"))
            .await
            .is_none()
    );
    assert_eq!(
        chunk_count(client, sharded_target.get("uuid").unwrap()).await,
        0
    );
    assert_eq!(count(client, "dst", doc! {}).await, 5);
    assert_eq!(count(client, "dst", doc! {"tag": "plain"}).await, 5);
    assert_metadata_consistent(client, true, "renaming onto a sharded target").await;
}

async fn refusals_follow_mongodb(client: &Client) {
    client.database(DB).drop().await.unwrap();
    sharded_collection(client, "s", "s").await;
    for (from, to, code) in [("missing", "x", 26), ("s", "s", 20)] {
        let err = rename(client, from, to, false).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{from} -> {to}: {err}");
    }
    // A sharded collection stays in its database.
    let across = admin(
        client,
        doc! {"renameCollection": format!("{DB}.s"), "to": "srn_other.s"},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&across), Some(125), "{across}");
    assert_eq!(count(client, "s", doc! {}).await, 100);
    assert_metadata_consistent(client, true, "refused renames").await;
}

async fn database_primary(client: &Client, db: &str) -> String {
    let entry = crate::harness::database_entry(client, db).await;
    entry.get_str("primary").unwrap().to_string()
}

/// An unsharded collection renamed into another database keeps its documents, options and
/// indexes; a new target database is created on the source's primary; a target database on
/// another shard is refused.
async fn renames_across_databases(client: &Client) {
    for db in ["xdb_a", "xdb_b", "xdb_far"] {
        client.database(db).drop().await.unwrap();
    }
    let source = client.database("xdb_a").collection::<Document>("c");
    source
        .insert_many((0..30).map(|i| doc! {"_id": i, "x": i}))
        .await
        .unwrap();
    source
        .create_index(mongodb::IndexModel::builder().keys(doc! {"x": -1}).build())
        .await
        .unwrap();
    let from = "xdb_a.c".to_string();
    admin(
        client,
        doc! {"renameCollection": &from, "to": "xdb_b.moved"},
    )
    .await
    .unwrap();
    assert_eq!(
        database_primary(client, "xdb_b").await,
        database_primary(client, "xdb_a").await
    );
    let moved = client.database("xdb_b").collection::<Document>("moved");
    assert_eq!(moved.count_documents(doc! {}).await.unwrap(), 30);
    assert_eq!(
        moved
            .count_documents(doc! {"x": {"$gte": 20}})
            .await
            .unwrap(),
        10
    );
    let indexes: Vec<String> =
        cursor_documents(&client.database("xdb_b"), doc! {"listIndexes": "moved"})
            .await
            .unwrap()
            .iter()
            .map(|i| i.get_str("name").unwrap().to_string())
            .collect();
    assert_eq!(indexes, vec!["_id_", "x_-1"]);
    assert!(
        !client
            .database("xdb_a")
            .list_collection_names()
            .await
            .unwrap()
            .contains(&"c".to_string())
    );
    // Back, over an existing target.
    source.insert_one(doc! {"_id": "old"}).await.unwrap();
    let err = admin(
        client,
        doc! {"renameCollection": "xdb_b.moved", "to": &from},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&err), Some(48), "{err}");
    admin(
        client,
        doc! {"renameCollection": "xdb_b.moved", "to": &from, "dropTarget": true},
    )
    .await
    .unwrap();
    assert_eq!(source.count_documents(doc! {}).await.unwrap(), 30);
    assert_eq!(
        source.count_documents(doc! {"_id": "old"}).await.unwrap(),
        0
    );
    // A target database whose primary is another shard.
    let shards = crate::harness::shard_names(client).await;
    let primary = database_primary(client, "xdb_a").await;
    let other = shards.iter().find(|s| **s != primary).unwrap();
    admin(
        client,
        doc! {"enableSharding": "xdb_far", "primaryShard": other},
    )
    .await
    .unwrap();
    let err = admin(client, doc! {"renameCollection": &from, "to": "xdb_far.c"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(5448802), "{err}");
    assert_eq!(source.count_documents(doc! {}).await.unwrap(), 30);
    assert_metadata_consistent(client, true, "renames across databases").await;
}

#[tokio::test]
async fn in_process() {
    let cluster = TestCluster::start_with(2, 2).await;
    let b = cluster.router_client(1).await;
    renames_a_sharded_collection(&cluster.client, &b).await;
    drop_target_replaces_a_sharded_target(&cluster.client).await;
    refusals_follow_mongodb(&cluster.client).await;
    renames_across_databases(&cluster.client).await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn separate_processes() {
    let mut cluster = ProcessCluster::start(2).await;
    let b = cluster.add_router().await;
    let a = cluster.client().await;
    renames_a_sharded_collection(&a, &b).await;
    drop_target_replaces_a_sharded_target(&a).await;
    refusals_follow_mongodb(&a).await;
    renames_across_databases(&a).await;
}

/// While the shards hold the rename's critical section, reads and writes of either name wait
/// (through a router that still has the old routing); the rest of the database does not.
#[tokio::test]
async fn crud_waits_for_the_critical_section() {
    let mut cluster = ProcessCluster::start_with(2, &["--enable-test-commands"]).await;
    let a = cluster.client().await;
    let b = cluster.add_router().await;
    sharded_collection(&a, "blocked", "src").await;
    a.database(DB)
        .collection::<Document>("free")
        .insert_one(doc! {"_id": 1})
        .await
        .unwrap();
    assert_eq!(count(&b, "blocked", doc! {}).await, 100);
    let config = cluster.config_client().await;
    admin(
        &config,
        doc! {
            "configureFailPoint": "hangBeforeDdlPhase",
            "mode": "alwaysOn",
            "data": {"operation": "renameCollection", "phase": "renameMetadata"},
        },
    )
    .await
    .unwrap();
    let renaming = {
        let a = a.clone();
        tokio::spawn(async move { rename(&a, "blocked", "moved", false).await })
    };
    admin(
        &config,
        doc! {"waitForFailPoint": "hangBeforeDdlPhase", "timesEntered": 1, "maxTimeMS": 30000},
    )
    .await
    .unwrap();
    let reading = {
        let b = b.clone();
        tokio::spawn(async move { count(&b, "blocked", doc! {}).await })
    };
    let writing = {
        let b = b.clone();
        tokio::spawn(async move {
            b.database(DB)
                .collection::<Document>("moved")
                .insert_one(doc! {"_id": "late", "x": 0})
                .await
        })
    };
    assert_eq!(count(&b, "free", doc! {}).await, 1, "other collections run");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!reading.is_finished(), "a read of the source waits");
    assert!(!writing.is_finished(), "a write to the target waits");
    admin(
        &config,
        doc! {"configureFailPoint": "hangBeforeDdlPhase", "mode": "off"},
    )
    .await
    .unwrap();
    renaming.await.unwrap().unwrap();
    assert_eq!(
        reading.await.unwrap(),
        0,
        "the source is gone once the read runs"
    );
    writing.await.unwrap().unwrap();
    assert_eq!(count(&a, "moved", doc! {}).await, 101);
    assert_metadata_consistent(&a, true, "a rename with waiting CRUD").await;
}
