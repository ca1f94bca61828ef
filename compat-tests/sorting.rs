//! Blocking sorts past the memory limit: they spill to disk and merge (MongoDB's default since
//! 6.0), or fail with QueryExceededMemoryLimitNoDiskUseAllowed when `allowDiskUse` is false;
//! top-k sorts under a limit stay within it.

use crate::harness::{TestCluster, error_code};
use futures::TryStreamExt;
use mongodb::bson::{Document, doc};

#[tokio::test]
async fn sorts_spill_past_the_memory_limit() {
    // 64 KiB of sort memory against ~1 MB of documents.
    let cluster =
        TestCluster::with_parameters(&[("internalQueryMaxBlockingSortMemoryUsageBytes", "65536")])
            .await;
    let db = cluster.db("sorting");
    let coll = db.collection::<Document>("c");
    let n = 5000;
    let docs: Vec<Document> = (0..n)
        .map(|i| doc! {"_id": i, "k": (i * 7919) % n, "pad": "x".repeat(200)})
        .collect();
    coll.insert_many(docs).await.unwrap();

    // Spilled and merged: every document, in order, across getMores.
    let sorted: Vec<Document> = coll
        .find(doc! {})
        .sort(doc! {"k": -1})
        .batch_size(700)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let keys: Vec<i32> = sorted.iter().map(|d| d.get_i32("k").unwrap()).collect();
    assert_eq!(keys, (0..n).rev().collect::<Vec<_>>());

    // Skip, limit and projection on a spilled sort.
    let page: Vec<Document> = coll
        .find(doc! {"k": {"$gte": 100}})
        .sort(doc! {"k": 1})
        .skip(10)
        .projection(doc! {"_id": 0, "k": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(page.len() as i32, n - 110);
    assert_eq!(page[0], doc! {"k": 110});

    // Not allowed to use disk: MongoDB's error.
    let err = db
        .run_command(doc! {"find": "c", "sort": {"k": 1}, "allowDiskUse": false})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(292));

    // A top-k sort keeps only skip + limit documents, so it fits without disk.
    let top = db
        .run_command(doc! {"find": "c", "sort": {"k": 1}, "limit": 3, "allowDiskUse": false})
        .await
        .unwrap();
    let batch = top
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let keys: Vec<i32> = batch
        .iter()
        .map(|d| d.as_document().unwrap().get_i32("k").unwrap())
        .collect();
    assert_eq!(keys, vec![0, 1, 2]);
    cluster.shutdown().await;
}
