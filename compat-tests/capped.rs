//! Capped collections (`capped`, `size`, `max`): the oldest documents make room for new ones,
//! and tailable (awaitData) cursors follow new inserts.

use crate::harness::{both_modes, error_code};
use mongodb::bson::{Document, doc};
use mongodb::{Client, Database};
use std::time::{Duration, Instant};

fn ids_of(batch: &[mongodb::bson::Bson]) -> Vec<i32> {
    batch
        .iter()
        .map(|d| d.as_document().unwrap().get_i32("_id").unwrap())
        .collect()
}

fn cursor_of(reply: &Document) -> (i64, Vec<i32>) {
    let cursor = reply.get_document("cursor").unwrap();
    let batch = cursor
        .get_array("firstBatch")
        .or_else(|_| cursor.get_array("nextBatch"))
        .unwrap();
    (cursor.get_i64("id").unwrap(), ids_of(batch))
}

async fn ids(db: &Database, coll: &str) -> Vec<i32> {
    let reply = db
        .run_command(doc! {"find": coll, "batchSize": 1000})
        .await
        .unwrap();
    cursor_of(&reply).1
}

async fn oldest_documents_make_room(client: &Client) {
    let db = client.database("capped_db");
    db.run_command(doc! {"create": "log", "capped": true, "size": 100_000, "max": 5})
        .await
        .unwrap();
    let coll = db.collection::<Document>("log");
    for i in 0..10 {
        coll.insert_one(doc! {"_id": i}).await.unwrap();
    }
    assert_eq!(ids(&db, "log").await, vec![5, 6, 7, 8, 9]);
    let stats = db.run_command(doc! {"collStats": "log"}).await.unwrap();
    assert!(stats.get_bool("capped").unwrap());
    assert_eq!(stats.get_i64("max").unwrap(), 5);
    let options = crate::harness::collection_options(&db, "log").await;
    assert!(options.get_bool("capped").unwrap());

    // The size limit: ~300-byte documents in 1,000 bytes.
    db.run_command(doc! {"create": "small", "capped": true, "size": 1000})
        .await
        .unwrap();
    let small = db.collection::<Document>("small");
    let docs: Vec<Document> = (0..10)
        .map(|i| doc! {"_id": i, "pad": "x".repeat(280)})
        .collect();
    small.insert_many(docs).await.unwrap();
    let left = ids(&db, "small").await;
    assert_eq!(left, vec![7, 8, 9]);
    let err = small
        .insert_one(doc! {"_id": 99, "pad": "x".repeat(2000)})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(2));

    for (command, code) in [
        (doc! {"create": "nosize", "capped": true}, 72),
        (doc! {"create": "negative", "capped": true, "size": -5}, 2),
    ] {
        let err = db.run_command(command).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code));
    }
}

async fn tailable_cursors_follow_inserts(client: &Client) {
    let db = client.database("capped_tail");
    db.run_command(doc! {"create": "feed", "capped": true, "size": 100_000, "max": 4})
        .await
        .unwrap();
    db.run_command(doc! {"create": "plain"}).await.unwrap();
    let coll = db.collection::<Document>("feed");

    // No documents yet: the tailable cursor is closed at once.
    let reply = db
        .run_command(doc! {"find": "feed", "tailable": true, "awaitData": true})
        .await
        .unwrap();
    assert_eq!(cursor_of(&reply).0, 0);

    coll.insert_many(vec![doc! {"_id": 1}, doc! {"_id": 2}])
        .await
        .unwrap();
    // The cursor is continued in the session that opened it (the writer below uses another).
    let mut session = client.start_session().await.unwrap();
    let reply = db
        .run_command(doc! {"find": "feed", "tailable": true, "awaitData": true})
        .session(&mut session)
        .await
        .unwrap();
    let (id, first) = cursor_of(&reply);
    assert_eq!(first, vec![1, 2]);
    assert_ne!(id, 0, "a tailable cursor stays open at the end");

    // Nothing new: the getMore waits about maxTimeMS, then returns an empty batch.
    let started = Instant::now();
    let reply = db
        .run_command(doc! {"getMore": id, "collection": "feed", "maxTimeMS": 300})
        .session(&mut session)
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert_eq!(cursor_of(&reply), (id, vec![]));

    // A document inserted while the getMore waits comes back in that batch.
    let writer = {
        let coll = coll.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            coll.insert_one(doc! {"_id": 3}).await.unwrap();
        })
    };
    let reply = db
        .run_command(doc! {"getMore": id, "collection": "feed", "maxTimeMS": 5000})
        .session(&mut session)
        .await
        .unwrap();
    writer.await.unwrap();
    assert_eq!(cursor_of(&reply), (id, vec![3]));

    // The last document the cursor saw is evicted: its position is lost.
    for i in 10..16 {
        coll.insert_one(doc! {"_id": i}).await.unwrap();
    }
    let err = db
        .run_command(doc! {"getMore": id, "collection": "feed"})
        .session(&mut session)
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(136));

    for (command, code) in [
        (doc! {"find": "plain", "tailable": true}, 2),
        (doc! {"find": "feed", "awaitData": true}, 9),
        (
            doc! {"find": "feed", "tailable": true, "sort": {"_id": 1}},
            2,
        ),
    ] {
        let err = db.run_command(command).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code));
    }
    // maxTimeMS on a getMore of a cursor that does not await data.
    let reply = db
        .run_command(doc! {"find": "feed", "batchSize": 1})
        .await
        .unwrap();
    let (plain_id, _) = cursor_of(&reply);
    let err = db
        .run_command(doc! {"getMore": plain_id, "collection": "feed", "maxTimeMS": 100})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(2));
}

both_modes!(oldest_documents_make_room, tailable_cursors_follow_inserts);
