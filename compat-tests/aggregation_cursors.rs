//! Aggregation cursors that run the pipeline as batches are fetched, through the router and
//! the official driver: a large aggregate read with a small `batchSize` gives every document
//! (in order where the pipeline sorts), `killCursors` in the middle of one ends it, and a
//! `$lookup` whose output multiplies (every document matching every other: about 1 GB joined
//! in all), run by the shard for a client talking to it directly, returns its first batches
//! at once, where a node that computed the whole output first would take minutes and
//! gigabytes. The part of a pipeline the router runs itself (from a `$lookup` on) does the
//! same: its output comes a batch at a time, reading the first part's cursor as it needs input.

use crate::harness::{ProcessCluster, TestCluster, admin, error_code};
use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::{Client, Collection, Database};
use std::time::{Duration, Instant};

const N: i32 = 3000;

fn ids(docs: &[Document]) -> Vec<i32> {
    docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
}

async fn read_all(
    coll: &Collection<Document>,
    pipeline: Vec<Document>,
    batch: u32,
) -> Vec<Document> {
    coll.aggregate(pipeline)
        .batch_size(batch)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

/// An aggregate's cursor id and first batch, by command.
async fn open(db: &Database, coll: &str, pipeline: Vec<Document>, batch: i32) -> (i64, Vec<Bson>) {
    let reply = db
        .run_command(doc! {"aggregate": coll, "pipeline": pipeline, "cursor": {"batchSize": batch}})
        .await
        .unwrap();
    let cursor = reply.get_document("cursor").unwrap();
    (
        cursor.get_i64("id").unwrap(),
        cursor.get_array("firstBatch").unwrap().clone(),
    )
}

async fn get_more(
    db: &Database,
    coll: &str,
    id: i64,
    batch: i32,
) -> mongodb::error::Result<Vec<Bson>> {
    let reply = db
        .run_command(doc! {"getMore": id, "collection": coll, "batchSize": batch})
        .await?;
    Ok(reply
        .get_document("cursor")
        .unwrap()
        .get_array("nextBatch")
        .unwrap()
        .clone())
}

async fn kill_in_the_middle(db: &Database, coll: &str) {
    let pipeline = vec![doc! {"$project": {"pad": 0}}];
    let (id, first) = open(db, coll, pipeline, 5).await;
    assert_eq!(first.len(), 5, "{coll}");
    assert_ne!(id, 0, "{coll}");
    assert_eq!(get_more(db, coll, id, 5).await.unwrap().len(), 5, "{coll}");
    let killed = db
        .run_command(doc! {"killCursors": coll, "cursors": [id]})
        .await
        .unwrap();
    assert_eq!(
        killed.get_array("cursorsKilled").unwrap(),
        &vec![Bson::Int64(id)],
        "{coll}"
    );
    let err = get_more(db, coll, id, 5).await.unwrap_err();
    assert_eq!(error_code(&err), Some(43), "{coll}: {err}");
}

#[tokio::test]
async fn aggregate_cursors_run_as_batches_are_fetched_in_process() {
    let cluster = TestCluster::start().await;
    let client = &cluster.client;
    let db = client.database("aggcursors");
    admin(
        client,
        doc! {"shardCollection": "aggcursors.sharded", "key": {"_id": "hashed"}},
    )
    .await
    .unwrap();
    let docs: Vec<Document> = (0..N)
        .map(|i| doc! {"_id": i, "k": 1, "g": i % 10, "pad": "x".repeat(100)})
        .collect();
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        coll.insert_many(docs.clone()).await.unwrap();

        // Every document, 7 at a time.
        let out = read_all(&coll, vec![doc! {"$project": {"pad": 0}}], 7).await;
        let mut got = ids(&out);
        got.sort_unstable();
        assert_eq!(got, (0..N).collect::<Vec<_>>(), "{name}");
        assert!(out.iter().all(|d| !d.contains_key("pad")), "{name}");

        // Sorted, after a filter, 50 at a time.
        let pipeline = vec![
            doc! {"$match": {"_id": {"$gte": 1000}}},
            doc! {"$sort": {"_id": -1}},
            doc! {"$project": {"_id": 1}},
        ];
        let out = read_all(&coll, pipeline, 50).await;
        assert_eq!(ids(&out), (1000..N).rev().collect::<Vec<_>>(), "{name}");

        // A $group's output, a few groups at a time.
        let pipeline = vec![
            doc! {"$group": {"_id": "$g", "n": {"$sum": 1}}},
            doc! {"$sort": {"_id": 1}},
        ];
        let out = read_all(&coll, pipeline, 3).await;
        let expected: Vec<Document> = (0..10).map(|g| doc! {"_id": g, "n": N / 10}).collect();
        assert_eq!(out, expected, "{name}");

        // A $limit stops the cursor.
        let (id, first) = open(&db, name, vec![doc! {"$limit": 4}], 10).await;
        assert_eq!((id, first.len()), (0, 4), "{name}");

        kill_in_the_middle(&db, name).await;
    }

    // A getMore spends what the command left of its maxTimeMS; the time the cursor sits idle
    // between batches does not count.
    let reply = db
        .run_command(
            doc! {"aggregate": "plain", "pipeline": [{"$project": {"pad": 0}}],
            "cursor": {"batchSize": 1}, "maxTimeMS": 1500},
        )
        .await
        .unwrap();
    let id = reply.get_document("cursor").unwrap().get_i64("id").unwrap();
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert_eq!(get_more(&db, "plain", id, 10).await.unwrap().len(), 10);
    db.run_command(doc! {"killCursors": "plain", "cursors": [id]})
        .await
        .unwrap();

    cluster.shutdown().await;
}

/// Every document joins every other one: 9 million joined documents, about 1 GB. The router
/// runs a `$lookup` itself; a client talking to the collection's shard directly has the shard
/// run it (in separate processes: an in-process shard has no port).
#[tokio::test]
async fn a_multiplying_lookup_streams_from_a_shard_separate_processes() {
    let cluster = ProcessCluster::start(1).await;
    let client = cluster.client().await;
    let docs: Vec<Document> = (0..N).map(|i| doc! {"_id": i, "k": 1}).collect();
    client
        .database("aggcursors")
        .collection::<Document>("plain")
        .insert_many(docs)
        .await
        .unwrap();
    let shard = cluster.shard_client(0).await.database("aggcursors");
    let lookup =
        doc! {"$lookup": {"from": "plain", "localField": "k", "foreignField": "k", "as": "j"}};
    let started = Instant::now();
    let (id, first) = open(&shard, "plain", vec![lookup], 2).await;
    assert_eq!(first.len(), 2);
    assert_ne!(id, 0);
    let joined = first[0].as_document().unwrap().get_array("j").unwrap();
    assert_eq!(joined.len(), N as usize);
    let next = get_more(&shard, "plain", id, 3).await.unwrap();
    assert_eq!(next.len(), 3);
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_secs(20),
        "first batches took {elapsed:?}"
    );
    let killed = shard
        .run_command(doc! {"killCursors": "plain", "cursors": [id]})
        .await
        .unwrap();
    assert_eq!(
        killed.get_array("cursorsKilled").unwrap(),
        &vec![Bson::Int64(id)]
    );
}

/// The router's part of a pipeline (from its `$lookup` on, or the merger's part of a split
/// one) through `client`'s router: read in small batches it gives every document; it computes
/// only what the batches asked for (a document that fails far into the output fails the
/// `getMore` that reaches it, not the command); `killCursors` ends it in the middle; `$out` at
/// its end still writes everything.
async fn router_pipeline_streams(client: &Client) {
    let db = client.database("aggrouter");
    admin(
        client,
        doc! {"shardCollection": "aggrouter.orders", "key": {"_id": "hashed"}},
    )
    .await
    .unwrap();
    let orders: Vec<Document> = (0..500).map(|i| doc! {"_id": i, "k": i % 5}).collect();
    let items: Vec<Document> = (0..50).map(|i| doc! {"_id": i, "k": i % 5}).collect();
    let coll = db.collection::<Document>("orders");
    coll.insert_many(orders).await.unwrap();
    db.collection::<Document>("items")
        .insert_many(items)
        .await
        .unwrap();
    let lookup =
        doc! {"$lookup": {"from": "items", "localField": "k", "foreignField": "k", "as": "j"}};

    // Every order with its ten items, 7 at a time.
    let pipeline = vec![lookup.clone(), doc! {"$project": {"n": {"$size": "$j"}}}];
    let out = read_all(&coll, pipeline, 7).await;
    let mut got = ids(&out);
    got.sort_unstable();
    assert_eq!(got, (0..500).collect::<Vec<_>>());
    assert!(out.iter().all(|d| d.get_i32("n") == Ok(10)), "{out:?}");

    // Orders from 100 on fail: the first batch does not reach them, a later getMore does.
    let failing = doc! {"$project": {"x": {"$cond": [
        {"$lt": ["$_id", 100]}, 1, {"$divide": [1, {"$subtract": ["$_id", "$_id"]}]}
    ]}}};
    let pipeline = vec![doc! {"$sort": {"_id": 1}}, lookup.clone(), failing.clone()];
    let (id, first) = open(&db, "orders", pipeline, 5).await;
    assert_eq!((first.len(), id != 0), (5, true), "{first:?}");
    let err = get_more(&db, "orders", id, 200).await.unwrap_err();
    assert!(error_code(&err).is_some_and(|c| c != 43), "{err}");
    let err = get_more(&db, "orders", id, 5).await.unwrap_err();
    assert_eq!(error_code(&err), Some(43), "{err}");

    // The same through the merger's part of a split pipeline (the projection after the sort
    // runs on the router, over the shards' sorted streams).
    let pipeline = vec![doc! {"$sort": {"_id": 1}}, failing.clone()];
    let (id, first) = open(&db, "orders", pipeline, 5).await;
    assert_eq!((first.len(), id != 0), (5, true), "{first:?}");
    let err = get_more(&db, "orders", id, 200).await.unwrap_err();
    assert!(error_code(&err).is_some_and(|c| c != 43), "{err}");

    // killCursors in the middle.
    let (id, first) = open(&db, "orders", vec![lookup.clone()], 5).await;
    assert_eq!((first.len(), id != 0), (5, true));
    assert_eq!(get_more(&db, "orders", id, 5).await.unwrap().len(), 5);
    let killed = db
        .run_command(doc! {"killCursors": "orders", "cursors": [id]})
        .await
        .unwrap();
    assert_eq!(
        killed.get_array("cursorsKilled").unwrap(),
        &vec![Bson::Int64(id)]
    );
    let err = get_more(&db, "orders", id, 5).await.unwrap_err();
    assert_eq!(error_code(&err), Some(43), "{err}");

    // $out writes the whole output when the command runs, whatever the batch size.
    let (id, first) = open(&db, "orders", vec![lookup, doc! {"$out": "joined"}], 1).await;
    assert_eq!((id, first.len()), (0, 0));
    let joined = db.collection::<Document>("joined");
    assert_eq!(joined.count_documents(doc! {}).await.unwrap(), 500);
}

#[tokio::test]
async fn router_pipelines_run_as_batches_are_fetched_in_process() {
    let cluster = TestCluster::start().await;
    router_pipeline_streams(&cluster.client).await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn router_pipelines_run_as_batches_are_fetched_separate_processes() {
    let cluster = ProcessCluster::start(2).await;
    router_pipeline_streams(&cluster.client().await).await;
}
