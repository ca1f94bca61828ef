//! A collection sharded over several shards, through the router: hashed sharding spreads an
//! empty collection's chunks over the shards; reads are targeted or scattered and merged
//! (sort, skip, limit, projection, getMore, count, distinct); writes are targeted per
//! statement (multi-writes broadcast, single writes without the shard key in two phases);
//! drop removes the data everywhere. Results are compared with an unsharded copy.

use crate::harness::{admin, all_by_id as contents, both_modes, cursor_documents, error_code};
use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::{Client, Collection, Database};

/// Documents with a hashed shard key `a`, a low-cardinality `b` and a string `s`.
fn documents(n: i32) -> Vec<Document> {
    (0..n)
        .map(|i| doc! {"_id": i, "a": i * 7 % 101, "b": i % 5, "s": format!("x{i:03}")})
        .collect()
}

/// A sharded collection (`key`) and an unsharded copy holding the same documents.
async fn pair(
    client: &Client,
    db: &str,
    key: Document,
    docs: &[Document],
) -> (Collection<Document>, Collection<Document>) {
    let database = client.database(db);
    admin(
        client,
        doc! {"shardCollection": format!("{db}.sharded"), "key": key},
    )
    .await
    .unwrap();
    let sharded = database.collection::<Document>("sharded");
    let plain = database.collection::<Document>("plain");
    sharded.insert_many(docs.to_vec()).await.unwrap();
    plain.insert_many(docs.to_vec()).await.unwrap();
    (sharded, plain)
}

/// Per-shard document counts from the router's `collStats`.
async fn per_shard_counts(database: &Database, coll: &str) -> Vec<(String, i64)> {
    let stats = database
        .run_command(doc! {"collStats": coll})
        .await
        .unwrap();
    assert!(stats.get_bool("sharded").unwrap());
    stats
        .get_document("shards")
        .unwrap()
        .iter()
        .map(|(shard, s)| {
            let count = match s.as_document().unwrap().get("count") {
                Some(Bson::Int32(n)) => i64::from(*n),
                Some(Bson::Int64(n)) => *n,
                other => panic!("count {other:?}"),
            };
            (shard.clone(), count)
        })
        .collect()
}

async fn hashed_collections_spread_over_the_shards(client: &Client) {
    let docs = documents(300);
    let (sharded, _) = pair(client, "shq_spread", doc! {"a": "hashed"}, &docs).await;
    let entry = client
        .database("config")
        .collection::<Document>("collections")
        .find_one(doc! {"_id": "shq_spread.sharded"})
        .await
        .unwrap()
        .unwrap();
    let chunks: Vec<Document> = client
        .database("config")
        .collection::<Document>("chunks")
        .find(doc! {"uuid": entry.get("uuid").unwrap()})
        .sort(doc! {"min": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    // One chunk per shard, split at the middle of the hashed range.
    assert_eq!(chunks.len(), 2, "{chunks:?}");
    assert_ne!(chunks[0].get_str("shard"), chunks[1].get_str("shard"));
    assert_eq!(chunks[1].get_document("min").unwrap(), &doc! {"a": 0_i64});
    let counts = per_shard_counts(&client.database("shq_spread"), "sharded").await;
    assert_eq!(counts.len(), 2, "{counts:?}");
    assert!(counts.iter().all(|(_, n)| *n > 50), "{counts:?}");
    assert_eq!(counts.iter().map(|(_, n)| n).sum::<i64>(), 300);
    // Every shard holding chunks got the shard key index.
    let stats = client
        .database("shq_spread")
        .run_command(doc! {"collStats": "sharded"})
        .await
        .unwrap();
    for (shard, s) in stats.get_document("shards").unwrap() {
        let sizes = s.as_document().unwrap().get_document("indexSizes").unwrap();
        assert!(sizes.contains_key("a_hashed"), "{shard}: {sizes:?}");
    }
    assert_eq!(sharded.count_documents(doc! {"a": 7}).await.unwrap(), 3);
}

/// Runs `find` with the options in `spec` on a collection.
async fn find(coll: &Collection<Document>, spec: &Document) -> Vec<Document> {
    let mut command = doc! {"find": coll.name()};
    command.extend(spec.clone());
    let db = coll.client().database(&coll.namespace().db);
    let mut docs = cursor_documents(&db, command)
        .await
        .unwrap_or_else(|e| panic!("{spec}: {e}"));
    if !spec.contains_key("sort") {
        docs.sort_by_key(|d| format!("{:?}", d.get("_id")));
    }
    docs
}

async fn run(database: &Database, command: Document) -> Document {
    let mut reply = database
        .run_command(command.clone())
        .await
        .unwrap_or_else(|e| panic!("{command}: {e}"));
    reply.remove("ok");
    reply.remove("$clusterTime");
    reply.remove("operationTime");
    reply
}

async fn scattered_reads_match_an_unsharded_collection(client: &Client) {
    let docs = documents(250);
    let (sharded, plain) = pair(client, "shq_reads", doc! {"a": "hashed"}, &docs).await;
    let database = client.database("shq_reads");
    let filters = [
        doc! {},
        doc! {"a": 14},
        doc! {"a": {"$in": [1, 2, 3, 50]}},
        doc! {"a": {"$gte": 10, "$lt": 40}},
        doc! {"b": 3},
        doc! {"$or": [{"a": 5}, {"b": 1}]},
        doc! {"s": {"$regex": "^x1"}},
        doc! {"a": {"$in": []}},
    ];
    let shapes = [
        doc! {},
        doc! {"sort": {"b": 1, "_id": 1}},
        doc! {"sort": {"a": -1, "_id": 1}, "skip": 7, "limit": 20},
        doc! {"sort": {"s": 1}, "projection": {"b": 1, "_id": 0}, "batchSize": 3},
        doc! {"sort": {"b": -1, "s": 1}, "limit": 5, "batchSize": 2},
        doc! {"projection": {"s": 0}, "batchSize": 5},
        doc! {"sort": {"_id": 1}, "skip": 240},
        doc! {"sort": {"_id": 1}, "limit": 3, "singleBatch": true},
    ];
    for filter in &filters {
        for shape in &shapes {
            let mut spec = shape.clone();
            spec.insert("filter", filter.clone());
            assert_eq!(
                find(&sharded, &spec).await,
                find(&plain, &spec).await,
                "find {spec}"
            );
        }
        for (skip, limit) in [(0, 0), (3, 0), (0, 4), (200, 100)] {
            let count = |coll: &str| {
                doc! {"count": coll, "query": filter.clone(), "skip": skip, "limit": limit}
            };
            assert_eq!(
                run(&database, count("sharded")).await,
                run(&database, count("plain")).await,
                "count {filter} skip {skip} limit {limit}"
            );
        }
        for key in ["b", "a", "s"] {
            let distinct =
                |coll: &str| doc! {"distinct": coll, "key": key, "query": filter.clone()};
            assert_eq!(
                run(&database, distinct("sharded")).await,
                run(&database, distinct("plain")).await,
                "distinct {key} {filter}"
            );
        }
    }
    // Aggregations: the shards run the per-document stages and a sort with what the skip and
    // limit after it keep, the router the rest.
    let pipelines = [
        vec![
            doc! {"$project": {"a": 1, "b": 1}},
            doc! {"$addFields": {"c": {"$multiply": ["$a", 2]}}},
            doc! {"$match": {"c": {"$gte": 4}}},
            doc! {"$sort": {"c": -1, "_id": 1}},
            doc! {"$skip": 3},
            doc! {"$limit": 4},
        ],
        vec![
            doc! {"$set": {"pair": ["$a", "$b"]}},
            doc! {"$unwind": "$pair"},
            doc! {"$limit": 5},
            doc! {"$count": "n"},
        ],
        vec![
            doc! {"$match": {"b": {"$gte": 2}}},
            doc! {"$group": {"_id": "$b", "n": {"$sum": 1}, "total": {"$sum": "$a"}}},
            doc! {"$sort": {"_id": 1}},
        ],
        vec![
            doc! {"$sort": {"a": 1, "_id": 1}},
            doc! {"$skip": 5},
            doc! {"$limit": 7},
            doc! {"$project": {"a": 1}},
        ],
        vec![
            doc! {"$match": {"a": {"$in": [3, 4, 5]}}},
            doc! {"$count": "n"},
        ],
        vec![
            doc! {"$match": {"$expr": {"$eq": ["$b", "$$wanted"]}}},
            doc! {"$sort": {"_id": -1}},
        ],
    ];
    for pipeline in pipelines {
        let aggregate = |coll: &str| {
            doc! {"aggregate": coll, "pipeline": pipeline.clone(), "cursor": {"batchSize": 4}, "let": {"wanted": 2}}
        };
        let mut results = Vec::new();
        for coll in ["sharded", "plain"] {
            results.push(cursor_documents(&database, aggregate(coll)).await.unwrap());
        }
        assert_eq!(results[0], results[1], "aggregate {pipeline:?}");
    }
    assert_eq!(
        sharded.count_documents(doc! {"b": 3}).await.unwrap(),
        plain.count_documents(doc! {"b": 3}).await.unwrap()
    );
    // Explain shows targeted and broadcast queries.
    let stage = |reply: &Document| {
        let plan = reply
            .get_document("queryPlanner")
            .unwrap()
            .get_document("winningPlan")
            .unwrap();
        (
            plan.get_str("stage").unwrap().to_string(),
            plan.get_array("shards").unwrap().len(),
        )
    };
    let explain = |command: Document| doc! {"explain": command, "verbosity": "executionStats"};
    let targeted = run(
        &database,
        explain(doc! {"find": "sharded", "filter": {"a": 14}}),
    )
    .await;
    assert_eq!(stage(&targeted), ("SINGLE_SHARD".to_string(), 1));
    // The shard filters what it does not own, as MongoDB's shards do.
    let shard_plan = targeted
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap()
        .get_array("shards")
        .unwrap()[0]
        .as_document()
        .unwrap()
        .get_document("winningPlan")
        .unwrap()
        .clone();
    assert_eq!(
        shard_plan.get_str("stage").unwrap(),
        "SHARDING_FILTER",
        "{shard_plan}"
    );
    let broadcast = run(
        &database,
        explain(doc! {"find": "sharded", "filter": {"b": 1}}),
    )
    .await;
    assert_eq!(stage(&broadcast), ("SHARD_MERGE".to_string(), 2));
    let stats = broadcast.get_document("executionStats").unwrap();
    assert_eq!(stats.get_i32("nReturned").unwrap(), 50);
    let sorted = run(
        &database,
        explain(doc! {"find": "sharded", "filter": {}, "sort": {"s": 1}}),
    )
    .await;
    assert_eq!(stage(&sorted), ("SHARD_MERGE_SORT".to_string(), 2));
    let counted = run(
        &database,
        explain(doc! {"count": "sharded", "query": {"a": {"$in": [1, 2]}}}),
    )
    .await;
    assert!(counted.get_document("queryPlanner").is_ok());
    let aggregated = run(
        &database,
        doc! {"aggregate": "sharded", "pipeline": [{"$match": {"b": 2}}, {"$group": {"_id": null, "n": {"$sum": 1}}}], "explain": true},
    )
    .await;
    assert_eq!(aggregated.get_str("mergeType").unwrap(), "mongos");
    assert_eq!(aggregated.get_document("shards").unwrap().len(), 2);
    assert_eq!(
        aggregated
            .get_document("splitPipeline")
            .unwrap()
            .get_array("mergerPart")
            .unwrap()
            .len(),
        1
    );
    // `$collStats` describes each shard's part: it runs on the shards, the rest on the router.
    let per_shard = cursor_documents(
        &database,
        doc! {"aggregate": "sharded", "pipeline": [{"$collStats": {"count": {}}}, {"$project": {"shard": 1, "count": 1}}], "cursor": {}},
    )
    .await
    .unwrap();
    assert_eq!(per_shard.len(), 2, "{per_shard:?}");
    let sorted = run(
        &database,
        doc! {"aggregate": "sharded", "pipeline": [{"$sort": {"a": 1}}, {"$skip": 2}, {"$limit": 3}], "explain": true},
    )
    .await;
    let split = sorted.get_document("splitPipeline").unwrap();
    assert_eq!(
        split.get_array("shardsPart").unwrap(),
        &vec![
            Bson::Document(doc! {"$sort": {"a": 1}}),
            Bson::Document(doc! {"$limit": 5_i64})
        ]
    );
    assert_eq!(split.get_array("mergerPart").unwrap().len(), 3);
    // Killing a scattered cursor closes it.
    let reply = run(
        &database,
        doc! {"find": "sharded", "sort": {"_id": 1}, "batchSize": 2},
    )
    .await;
    let id = reply.get_document("cursor").unwrap().get_i64("id").unwrap();
    assert_ne!(id, 0);
    let killed = run(&database, doc! {"killCursors": "sharded", "cursors": [id]}).await;
    assert_eq!(
        killed.get_array("cursorsKilled").unwrap(),
        &vec![Bson::Int64(id)]
    );
    let err = database
        .run_command(doc! {"getMore": id, "collection": "sharded"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(43));
}

async fn targeted_writes_match_an_unsharded_collection(client: &Client) {
    let docs = documents(120);
    let (sharded, plain) = pair(client, "shq_writes", doc! {"a": "hashed"}, &docs).await;
    let database = client.database("shq_writes");
    let writes = [
        // Multi-writes reach every shard the filter may match on.
        doc! {"update": "C", "updates": [{"q": {"b": 3}, "u": {"$inc": {"c": 1}}, "multi": true}]},
        doc! {"update": "C", "updates": [{"q": {"a": {"$in": [7, 14]}}, "u": {"$set": {"t": 1}}, "multi": true}]},
        // Single writes: by shard key, or without it (two phases).
        doc! {"update": "C", "updates": [{"q": {"a": 21}, "u": {"$set": {"one": true}}}]},
        doc! {"update": "C", "updates": [{"q": {"s": "x017"}, "u": {"$set": {"found": 1}}}]},
        doc! {"update": "C", "updates": [{"q": {"s": "nope"}, "u": {"$set": {"found": 1}}}]},
        doc! {"update": "C", "updates": [{"q": {"a": 1000}, "u": {"$set": {"up": 1}}, "upsert": true}]},
        doc! {"update": "C", "updates": [
            {"q": {"s": "x018"}, "u": {"$set": {"m": 1}}},
            {"q": {"b": 2}, "u": {"$set": {"m": 2}}, "multi": true},
            {"q": {"a": 28}, "u": {"$set": {"m": 3}}},
        ], "ordered": false},
        doc! {"delete": "C", "deletes": [{"q": {"s": "x020"}, "limit": 1}]},
        doc! {"delete": "C", "deletes": [{"q": {"b": 4}, "limit": 0}, {"q": {"a": 35}, "limit": 1}]},
        // Duplicates: unordered keeps going, ordered stops at the first error.
        doc! {"insert": "C", "documents": [{"_id": 1000, "a": 1}, {"_id": 1, "a": 7}, {"_id": 1001, "a": 2}], "ordered": false},
        doc! {"insert": "C", "documents": [{"_id": 1002, "a": 3}, {"_id": 2, "a": 14}, {"_id": 1003, "a": 4}]},
    ];
    for write in writes {
        let on = |coll: &str| {
            let mut w = write.clone();
            let name = w.keys().next().unwrap().clone();
            w.insert(name, coll);
            w
        };
        let mut from_sharded = run(&database, on("sharded")).await;
        let mut from_plain = run(&database, on("plain")).await;
        for reply in [&mut from_sharded, &mut from_plain] {
            if let Ok(errors) = reply.get_array_mut("writeErrors") {
                for e in errors {
                    let e = e.as_document_mut().unwrap();
                    e.remove("errmsg");
                    e.remove("keyPattern");
                    e.remove("keyValue");
                    e.remove("errInfo");
                }
            }
            if let Ok(upserted) = reply.get_array_mut("upserted") {
                for u in upserted {
                    u.as_document_mut().unwrap().remove("_id");
                }
            }
        }
        assert_eq!(from_sharded, from_plain, "{write}");
    }
    let upserted = |docs: Vec<Document>| -> Vec<Document> {
        docs.into_iter()
            .map(|mut d| {
                if d.get_i32("up").is_ok() {
                    d.remove("_id");
                }
                d
            })
            .collect()
    };
    assert_eq!(
        upserted(contents(&sharded).await),
        upserted(contents(&plain).await)
    );
    // findAndModify without the shard key finds its document in two phases.
    let modified = sharded
        .find_one_and_update(doc! {"s": "x040"}, doc! {"$set": {"fam": 1}})
        .return_document(mongodb::options::ReturnDocument::After)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(modified.get_i32("fam").unwrap(), 1);
    assert!(
        sharded
            .find_one_and_delete(doc! {"s": "none"})
            .await
            .unwrap()
            .is_none()
    );
    // bulkWrite does not target per shard yet: refused before anything runs.
    let err = admin(
        client,
        doc! {"bulkWrite": 1, "ops": [{"insert": 0, "document": {"_id": 5000, "a": 1}}], "nsInfo": [{"ns": "shq_writes.sharded"}]},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&err), Some(238), "{err}");
    assert_eq!(
        sharded.count_documents(doc! {"_id": 5000}).await.unwrap(),
        0
    );
    // An upsert must name the whole shard key.
    let err = sharded
        .update_one(doc! {"s": "new"}, doc! {"$set": {"x": 1}})
        .upsert(true)
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(61), "{err}");
}

async fn dropping_a_sharded_collection_drops_every_shard_part(client: &Client) {
    let docs = documents(60);
    let (sharded, _) = pair(client, "shq_drop", doc! {"a": "hashed"}, &docs).await;
    // Renamed away and back (`renames` tests renames in depth), then dropped.
    for (from, to) in [("sharded", "renamed"), ("renamed", "sharded")] {
        admin(
            client,
            doc! {"renameCollection": format!("shq_drop.{from}"), "to": format!("shq_drop.{to}")},
        )
        .await
        .unwrap();
    }
    assert_eq!(sharded.count_documents(doc! {}).await.unwrap(), 60);
    sharded.drop().await.unwrap();
    assert_eq!(sharded.count_documents(doc! {}).await.unwrap(), 0);
    // Re-created unsharded: everything lives on the primary again.
    sharded.insert_many(documents(10)).await.unwrap();
    let stats = client
        .database("shq_drop")
        .run_command(doc! {"collStats": "sharded"})
        .await
        .unwrap();
    assert!(!stats.get_bool("sharded").unwrap());
    assert_eq!(
        stats
            .get_i32("count")
            .unwrap_or_else(|_| stats.get_i64("count").unwrap() as i32),
        10
    );
}

both_modes!(
    hashed_collections_spread_over_the_shards,
    scattered_reads_match_an_unsharded_collection,
    targeted_writes_match_an_unsharded_collection,
    dropping_a_sharded_collection_drops_every_shard_part,
);
