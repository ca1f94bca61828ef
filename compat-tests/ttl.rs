//! TTL indexes: the monitor deletes documents whose indexed date (the earliest of an array)
//! is older than `expireAfterSeconds`, leaves other values alone, and honours partial filters.

use crate::harness::TestCluster;
use mongodb::bson::{DateTime, Document, doc};
use mongodb::options::IndexOptions;
use mongodb::{Collection, IndexModel};
use std::time::Duration;

async fn ids_left(coll: &Collection<Document>) -> Vec<i32> {
    let mut ids: Vec<i32> = coll
        .distinct("_id", doc! {})
        .await
        .unwrap()
        .iter()
        .map(|v| v.as_i32().unwrap())
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn expired_documents_are_deleted() {
    let cluster = TestCluster::with_parameters(&[("ttlMonitorSleepSecs", "1")]).await;
    let db = cluster.db("ttl");
    let coll = db.collection::<Document>("sessions");
    let ttl = |seconds: u64| {
        IndexOptions::builder()
            .expire_after(Duration::from_secs(seconds))
            .build()
    };
    coll.create_index(
        IndexModel::builder()
            .keys(doc! {"at": 1})
            .options(ttl(3600))
            .build(),
    )
    .await
    .unwrap();
    let now = DateTime::now().timestamp_millis();
    let hours_ago = |h: i64| DateTime::from_millis(now - h * 3_600_000);
    coll.insert_many(vec![
        doc! {"_id": 1, "at": hours_ago(2)},
        doc! {"_id": 2, "at": hours_ago(0)},
        doc! {"_id": 3, "at": "not a date"},
        doc! {"_id": 4},
        doc! {"_id": 5, "at": [hours_ago(-5), hours_ago(3)]},
        doc! {"_id": 6, "at": [hours_ago(-5)]},
        doc! {"_id": 7, "at": hours_ago(48)},
    ])
    .await
    .unwrap();

    // A partial TTL index only expires what its filter selects.
    let partial = db.collection::<Document>("events");
    partial
        .create_index(
            IndexModel::builder()
                .keys(doc! {"at": 1})
                .options(
                    IndexOptions::builder()
                        .expire_after(Duration::from_secs(0))
                        .partial_filter_expression(doc! {"kind": "temp"})
                        .build(),
                )
                .build(),
        )
        .await
        .unwrap();
    partial
        .insert_many(vec![
            doc! {"_id": 1, "kind": "temp", "at": hours_ago(1)},
            doc! {"_id": 2, "kind": "keep", "at": hours_ago(1)},
        ])
        .await
        .unwrap();

    let mut left = Vec::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = ids_left(&coll).await;
        if left == [2, 3, 4, 6] && ids_left(&partial).await == [2] {
            break;
        }
    }
    assert_eq!(left, vec![2, 3, 4, 6]);
    assert_eq!(ids_left(&partial).await, vec![2]);
    cluster.shutdown().await;
}
