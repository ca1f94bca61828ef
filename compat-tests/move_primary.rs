//! `movePrimary` through the router: MongoDB's refusals, then a database with unsharded
//! collections (documents beyond one copy batch, secondary and unique indexes, a capped
//! collection, a view) and a sharded one moved to another shard and back: the database entry
//! names the new primary at lastMod + 1, every collection answers as before from its new
//! place, and writes after the move land there.

use crate::harness::{
    admin, both_modes, cursor_documents, database_entry, error_code, shard_names,
};
use mongodb::Client;
use mongodb::bson::{Document, doc};

async fn refusals_follow_mongodb(client: &Client) {
    let shards = shard_names(client).await;
    client
        .database("mpv")
        .collection::<Document>("c")
        .insert_one(doc! {"x": 1})
        .await
        .unwrap();
    let not_admin = client
        .database("mpv")
        .run_command(doc! {"movePrimary": "mpv", "to": &shards[0]})
        .await
        .unwrap_err();
    assert_eq!(error_code(&not_admin), Some(13));
    for (command, code) in [
        (doc! {"movePrimary": "config", "to": &shards[0]}, 72),
        (doc! {"movePrimary": "admin", "to": &shards[0]}, 72),
        (doc! {"movePrimary": "local", "to": &shards[0]}, 72),
        (doc! {"movePrimary": "a.b", "to": &shards[0]}, 73),
        (doc! {"movePrimary": 5, "to": &shards[0]}, 14),
        (doc! {"movePrimary": "mpv"}, 40414),
        (doc! {"movePrimary": "mpv", "to": ""}, 72),
        (doc! {"movePrimary": "mpv", "to": "noSuchShard"}, 70),
        (doc! {"movePrimary": "mpvMissing", "to": &shards[0]}, 26),
    ] {
        let err = admin(client, command.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{command}: {err}");
    }
    // Moving to the current primary succeeds and changes nothing.
    let before = database_entry(client, "mpv").await;
    let primary = before.get_str("primary").unwrap().to_string();
    admin(client, doc! {"movePrimary": "mpv", "to": &primary})
        .await
        .unwrap();
    assert_eq!(database_entry(client, "mpv").await, before);
}

async fn index_names(client: &Client, db: &str, coll: &str) -> Vec<String> {
    let mut names: Vec<String> = cursor_documents(&client.database(db), doc! {"listIndexes": coll})
        .await
        .unwrap()
        .iter()
        .map(|i| i.get_str("name").unwrap().to_string())
        .collect();
    names.sort();
    names
}

async fn collections_move_with_their_database(client: &Client) {
    let shards = shard_names(client).await;
    let (first, second) = (&shards[0], &shards[1]);
    admin(client, doc! {"enableSharding": "mp", "primaryShard": first})
        .await
        .unwrap();
    let db = client.database("mp");
    let plain = db.collection::<Document>("plain");
    plain
        .insert_many(
            (0..2500).map(|i| doc! {"_id": i, "k": i % 100, "u": i, "pad": "x".repeat(50)}),
        )
        .await
        .unwrap();
    db.run_command(doc! {"createIndexes": "plain", "indexes": [
        {"key": {"k": 1}, "name": "k_1"},
        {"key": {"u": 1}, "name": "u_1", "unique": true},
    ]})
    .await
    .unwrap();
    db.run_command(doc! {"create": "capped", "capped": true, "size": 4096})
        .await
        .unwrap();
    db.collection::<Document>("capped")
        .insert_many((0..5).map(|i| doc! {"i": i}))
        .await
        .unwrap();
    db.run_command(doc! {"create": "small", "viewOn": "plain", "pipeline": [{"$match": {"k": 7}}]})
        .await
        .unwrap();
    let sharded = db.collection::<Document>("sharded");
    sharded
        .insert_many((0..30).map(|i| doc! {"s": i}))
        .await
        .unwrap();
    db.run_command(
        doc! {"createIndexes": "sharded", "indexes": [{"key": {"s": 1}, "name": "s_1"}]},
    )
    .await
    .unwrap();
    admin(
        client,
        doc! {"shardCollection": "mp.sharded", "key": {"s": 1}},
    )
    .await
    .unwrap();
    let before = database_entry(client, "mp").await;

    admin(client, doc! {"movePrimary": "mp", "to": second})
        .await
        .unwrap();
    let after = database_entry(client, "mp").await;
    assert_eq!(after.get_str("primary").unwrap(), second);
    let (v0, v1) = (
        before.get_document("version").unwrap(),
        after.get_document("version").unwrap(),
    );
    assert_eq!(v1.get("uuid"), v0.get("uuid"));
    assert_eq!(
        v1.get_i32("lastMod").unwrap(),
        v0.get_i32("lastMod").unwrap() + 1
    );

    // Every collection answers as before, from the new primary (or its chunks).
    assert_eq!(plain.count_documents(doc! {}).await.unwrap(), 2500);
    assert_eq!(plain.count_documents(doc! {"k": 3}).await.unwrap(), 25);
    assert_eq!(
        index_names(client, "mp", "plain").await,
        ["_id_", "k_1", "u_1"]
    );
    let duplicate = plain.insert_one(doc! {"u": 7}).await.unwrap_err();
    assert_eq!(error_code(&duplicate), Some(11000));
    assert_eq!(
        db.collection::<Document>("small")
            .count_documents(doc! {})
            .await
            .unwrap(),
        25
    );
    let options = crate::harness::collection_options(&db, "capped").await;
    assert_eq!(options.get_bool("capped"), Ok(true));
    assert_eq!(
        db.collection::<Document>("capped")
            .count_documents(doc! {})
            .await
            .unwrap(),
        5
    );
    assert_eq!(sharded.count_documents(doc! {}).await.unwrap(), 30);
    let mut names = db.list_collection_names().await.unwrap();
    names.sort();
    // `system.views` is listed, as MongoDB lists it.
    assert_eq!(
        names,
        ["capped", "plain", "sharded", "small", "system.views"]
    );

    // Writes land on the new primary; moving back keeps them.
    plain
        .insert_one(doc! {"_id": 5000, "k": 1, "u": 5000})
        .await
        .unwrap();
    admin(client, doc! {"movePrimary": "mp", "to": first})
        .await
        .unwrap();
    assert_eq!(
        database_entry(client, "mp")
            .await
            .get_str("primary")
            .unwrap(),
        first
    );
    assert_eq!(plain.count_documents(doc! {}).await.unwrap(), 2501);
    assert!(plain.find_one(doc! {"_id": 5000}).await.unwrap().is_some());
    assert_eq!(
        sharded
            .count_documents(doc! {"s": {"$gte": 10}})
            .await
            .unwrap(),
        20
    );
}

/// Writes racing with the move wait for it (the old primary's critical section) and then go to
/// the new primary: every acknowledged write is there afterwards.
async fn writes_during_a_move_are_kept(client: &Client) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let shards = shard_names(client).await;
    admin(
        client,
        doc! {"enableSharding": "mpw", "primaryShard": &shards[0]},
    )
    .await
    .unwrap();
    let coll = client.database("mpw").collection::<Document>("c");
    coll.insert_many((0..5000).map(|i| doc! {"i": i, "pad": "y".repeat(200)}))
        .await
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (coll, stop) = (coll.clone(), stop.clone());
        tokio::spawn(async move {
            let mut acknowledged = 0u64;
            while !stop.load(Ordering::Relaxed) {
                coll.insert_one(doc! {"w": acknowledged as i64})
                    .await
                    .unwrap();
                acknowledged += 1;
            }
            acknowledged
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    admin(client, doc! {"movePrimary": "mpw", "to": &shards[1]})
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    stop.store(true, Ordering::Relaxed);
    let acknowledged = writer.await.unwrap();
    assert!(acknowledged > 0);
    assert_eq!(
        coll.count_documents(doc! {"w": {"$exists": true}})
            .await
            .unwrap(),
        acknowledged
    );
    assert_eq!(
        coll.count_documents(doc! {}).await.unwrap(),
        5000 + acknowledged
    );
}

both_modes!(
    refusals_follow_mongodb,
    collections_move_with_their_database,
    writes_during_a_move_are_kept
);
