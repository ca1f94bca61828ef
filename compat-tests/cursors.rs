//! Cursors through the router: batches, getMore, killCursors, CursorNotFound.

use crate::harness::{both_modes, error_code};
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

async fn first_batch_getmore_and_kill(client: &Client) {
    let db = client.database("app");
    db.collection::<Document>("many")
        .insert_many((0..250).map(|i| doc! {"_id": i}))
        .await
        .unwrap();
    let first = db.run_command(doc! {"find": "many"}).await.unwrap();
    let cursor = first.get_document("cursor").unwrap();
    assert_eq!(cursor.get_array("firstBatch").unwrap().len(), 101);
    assert_eq!(cursor.get_str("ns").unwrap(), "app.many");
    let id = cursor.get_i64("id").unwrap();
    assert_ne!(id, 0);
    let more = db
        .run_command(doc! {"getMore": id, "collection": "many", "batchSize": 100})
        .await
        .unwrap();
    let next = more.get_document("cursor").unwrap();
    assert_eq!(next.get_array("nextBatch").unwrap().len(), 100);
    assert_eq!(next.get_i64("id").unwrap(), id);
    let last = db
        .run_command(doc! {"getMore": id, "collection": "many"})
        .await
        .unwrap();
    let last = last.get_document("cursor").unwrap();
    assert_eq!(last.get_array("nextBatch").unwrap().len(), 49);
    assert_eq!(last.get_i64("id").unwrap(), 0);
    let err = db
        .run_command(doc! {"getMore": id, "collection": "many"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(43));

    let reply = db
        .run_command(doc! {"find": "many", "batchSize": 2})
        .await
        .unwrap();
    let id = reply.get_document("cursor").unwrap().get_i64("id").unwrap();
    let killed = db
        .run_command(doc! {"killCursors": "many", "cursors": [id, 12345_i64]})
        .await
        .unwrap();
    assert_eq!(
        killed.get_array("cursorsKilled").unwrap(),
        &vec![Bson::Int64(id)]
    );
    assert_eq!(
        killed.get_array("cursorsNotFound").unwrap(),
        &vec![Bson::Int64(12345)]
    );
    assert!(killed.get_array("cursorsAlive").unwrap().is_empty());
    assert!(killed.get_array("cursorsUnknown").unwrap().is_empty());
    let err = db
        .run_command(doc! {"getMore": id, "collection": "many"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(43));

    let single = db
        .run_command(doc! {"find": "many", "batchSize": 5, "singleBatch": true})
        .await
        .unwrap();
    assert_eq!(
        single
            .get_document("cursor")
            .unwrap()
            .get_i64("id")
            .unwrap(),
        0
    );
    let limited = db
        .run_command(doc! {"find": "many", "limit": 3})
        .await
        .unwrap();
    let limited = limited.get_document("cursor").unwrap();
    assert_eq!(limited.get_array("firstBatch").unwrap().len(), 3);
    assert_eq!(limited.get_i64("id").unwrap(), 0);
    let err = db
        .run_command(doc! {"getMore": 1_i32, "collection": "many"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(14));
}

both_modes!(first_batch_getmore_and_kill);

#[tokio::test]
async fn idle_cursors_time_out() {
    let cluster = crate::harness::TestCluster::start().await;
    let db = cluster.db("app");
    db.collection::<Document>("idle")
        .insert_many((0..10).map(|i| doc! {"_id": i}))
        .await
        .unwrap();
    cluster
        .admin(doc! {"setParameter": 1, "cursorTimeoutMillis": 200})
        .await
        .unwrap();
    let reply = db
        .run_command(doc! {"find": "idle", "batchSize": 2})
        .await
        .unwrap();
    let id = reply.get_document("cursor").unwrap().get_i64("id").unwrap();
    // The cursor monitor looks every 4 seconds.
    tokio::time::sleep(std::time::Duration::from_millis(4500)).await;
    let err = db
        .run_command(doc! {"getMore": id, "collection": "idle"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(43));
    cluster.shutdown().await;
}
