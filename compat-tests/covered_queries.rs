//! Covered queries through the router: a find whose filter, projection (and, on a sharded
//! collection, shard key) lie in one non-multikey index is answered from the index keys
//! (PROJECTION_COVERED over IXSCAN, no FETCH, no documents examined), with the same answer as a
//! scan of the documents: each index entry's type bits give back what the key drops (a
//! number's BSON type and exact decimal, -0.0, String against Symbol, null against missing).

use crate::harness::{admin, both_modes, cursor_documents};
use mongodb::bson::{Bson, DateTime, Document, doc, oid::ObjectId};
use mongodb::{Client, Database};

async fn explain(db: &Database, command: Document) -> Document {
    db.run_command(doc! {"explain": command, "verbosity": "executionStats"})
        .await
        .unwrap()
}

/// Each shard's winning plan, as stage names from the top down.
fn shard_stages(reply: &Document) -> Vec<Vec<String>> {
    let plan = reply
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap();
    plan.get_array("shards")
        .unwrap()
        .iter()
        .map(|shard| {
            let mut plan = shard
                .as_document()
                .unwrap()
                .get_document("winningPlan")
                .unwrap();
            let mut out = vec![plan.get_str("stage").unwrap().to_string()];
            while let Ok(input) = plan.get_document("inputStage") {
                out.push(input.get_str("stage").unwrap().to_string());
                plan = input;
            }
            out
        })
        .collect()
}

fn total(reply: &Document, field: &str) -> i64 {
    match reply.get_document("executionStats").unwrap().get(field) {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        other => panic!("{field} is {other:?} in {reply}"),
    }
}

/// The find's documents, and the same find answered by reading every document.
async fn with_and_without_index(db: &Database, find: Document) -> (Vec<Document>, Vec<Document>) {
    let covered = cursor_documents(db, find.clone()).await.unwrap();
    let mut natural = find;
    natural.insert("hint", doc! {"$natural": 1});
    let mut fetched = cursor_documents(db, natural).await.unwrap();
    let key = |d: &Document| format!("{d:?}");
    let mut covered_sorted = covered.clone();
    covered_sorted.sort_by_key(key);
    fetched.sort_by_key(key);
    (covered_sorted, fetched)
}

/// Same type and value bit for bit (-0.0 is not 0, decimals keep their exponents).
fn identical(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Double(x), Bson::Double(y)) => x.to_bits() == y.to_bits(),
        (Bson::Decimal128(x), Bson::Decimal128(y)) => x.bytes() == y.bytes(),
        _ => a == b,
    }
}

/// Documents with the same fields holding identical values.
fn assert_identical(actual: &[Document], expected: &[Document]) {
    assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
    for (a, e) in actual.iter().zip(expected) {
        let same = a.len() == e.len()
            && a.iter()
                .zip(e)
                .all(|((ka, va), (ke, ve))| ka == ke && identical(va, ve));
        assert!(same, "{a:?} vs {e:?}");
    }
}

fn decimal(s: &str) -> Bson {
    Bson::Decimal128(s.parse().unwrap())
}

/// A number of each BSON type in turn.
fn number(i: i64) -> Bson {
    match i % 5 {
        0 => Bson::Int32(i as i32),
        1 => Bson::Double(i as f64),
        2 => Bson::Int64(i),
        3 => decimal(&format!("{i}.00")),
        _ => Bson::Double(i as f64 + 0.5),
    }
}

fn day(i: i64) -> DateTime {
    DateTime::from_millis(1_700_000_000_000 + i * 86_400_000)
}

async fn unsharded(client: &Client) {
    let db = client.database("covq_plain");
    let coll = db.collection::<Document>("c");
    let docs: Vec<Document> = (0..40i64)
        .map(|i| {
            let s = if i % 4 == 0 { Bson::Symbol(format!("s{i:02}")) } else { Bson::String(format!("s{i:02}")) };
            doc! {"_id": i, "oid": ObjectId::from_bytes([i as u8; 12]), "day": day(i), "n": number(i), "s": s, "flag": i % 3 == 0}
        })
        .collect();
    coll.insert_many(docs).await.unwrap();
    coll.insert_one(doc! {"_id": 100, "oid": ObjectId::from_bytes([200; 12])})
        .await
        .unwrap();
    let zeros = [
        doc! {"_id": 201, "n": -0.0},
        doc! {"_id": 202, "n": decimal("-0.00")},
        doc! {"_id": 203, "n": decimal("0E+5")},
        doc! {"_id": 204, "n": Bson::Null},
    ];
    coll.insert_many(zeros).await.unwrap();
    for key in [
        doc! {"day": 1, "oid": 1},
        doc! {"flag": 1, "day": -1},
        doc! {"n": 1},
        doc! {"s": -1},
    ] {
        coll.create_index(mongodb::IndexModel::builder().keys(key).build())
            .await
            .unwrap();
    }

    // Dates and ObjectIds come back from the keys: no document is read.
    let find = doc! {"find": "c", "filter": {"day": {"$gte": day(30)}}, "projection": {"oid": 1, "day": 1, "_id": 0}};
    let (covered, fetched) = with_and_without_index(&db, find.clone()).await;
    assert_eq!(covered.len(), 10);
    let fetched: Vec<Document> = fetched
        .into_iter()
        .map(|d| doc! {"day": d.get("day").unwrap(), "oid": d.get("oid").unwrap()})
        .collect();
    assert_eq!(covered, fetched);
    // MongoDB's covered projection lists the fields in key-pattern order.
    let keys: Vec<&String> = covered[0].keys().collect();
    assert_eq!(keys, ["day", "oid"]);
    let reply = explain(&db, find).await;
    assert_eq!(shard_stages(&reply), [["PROJECTION_COVERED", "IXSCAN"]]);
    assert_eq!(total(&reply, "totalDocsExamined"), 0);
    assert_eq!(total(&reply, "nReturned"), 10);

    // A descending field, a residual filter on the key and the index's order.
    let find = doc! {"find": "c", "filter": {"flag": true, "day": {"$lt": day(20)}}, "projection": {"day": 1, "_id": 0}, "sort": {"day": -1}};
    let covered = cursor_documents(&db, find.clone()).await.unwrap();
    let expected: Vec<Document> = (0..20)
        .rev()
        .filter(|i| i % 3 == 0)
        .map(|i| doc! {"day": day(i)})
        .collect();
    assert_eq!(covered, expected);
    let reply = explain(&db, find).await;
    assert_eq!(shard_stages(&reply), [["PROJECTION_COVERED", "IXSCAN"]]);
    assert_eq!(total(&reply, "totalDocsExamined"), 0);

    // A missing field is left out, as a scan of the documents leaves it out.
    let find = doc! {"find": "c", "filter": {"oid": ObjectId::from_bytes([200; 12])}, "projection": {"day": 1, "oid": 1, "_id": 0}, "hint": "day_1_oid_1"};
    let covered = cursor_documents(&db, find.clone()).await.unwrap();
    assert_eq!(covered, [doc! {"oid": ObjectId::from_bytes([200; 12])}]);
    let reply = explain(&db, find).await;
    assert_eq!(shard_stages(&reply), [["PROJECTION_COVERED", "IXSCAN"]]);

    // Numbers keep their BSON types and exact values, strings and symbols stay apart, a null
    // stays a null and a missing field missing: all from the keys' type bits.
    for filter in [
        doc! {"n": {"$gte": 25}},
        doc! {"n": {"$lte": 0}},
        doc! {"n": null},
        doc! {"s": {"$gte": "s30"}},
    ] {
        let find = doc! {"find": "c", "filter": filter.clone(), "projection": {"n": 1, "_id": 0}};
        let find = if filter.contains_key("s") {
            doc! {"find": "c", "filter": filter, "projection": {"s": 1, "_id": 0}}
        } else {
            find
        };
        let (covered, fetched) = with_and_without_index(&db, find.clone()).await;
        assert!(!covered.is_empty());
        assert_identical(&covered, &fetched);
        let reply = explain(&db, find).await;
        assert_eq!(shard_stages(&reply), [["PROJECTION_COVERED", "IXSCAN"]]);
        assert_eq!(total(&reply, "totalDocsExamined"), 0, "{reply}");
        assert_eq!(total(&reply, "nReturned"), covered.len() as i64);
    }
    let find = doc! {"find": "c", "filter": {"n": {"$gte": 25}}, "projection": {"n": 1, "_id": 0}, "sort": {"n": 1}};
    let covered = cursor_documents(&db, find).await.unwrap();
    let expected: Vec<Document> = (25..40).map(|i| doc! {"n": number(i)}).collect();
    assert_identical(&covered, &expected);
    let find = doc! {"find": "c", "filter": {"n": {"$lte": 0}}, "projection": {"n": 1, "_id": 0}, "sort": {"n": 1}};
    let covered = cursor_documents(&db, find).await.unwrap();
    // Equal zeros, in record order within the key.
    assert_identical(
        &covered,
        &[
            doc! {"n": 0},
            doc! {"n": -0.0},
            doc! {"n": decimal("-0.00")},
            doc! {"n": decimal("0E+5")},
        ],
    );
    let find = doc! {"find": "c", "filter": {"n": null}, "projection": {"n": 1, "_id": 0}, "sort": {"n": 1}};
    let covered = cursor_documents(&db, find).await.unwrap();
    assert_identical(&covered, &[doc! {}, doc! {"n": null}]);
    let find = doc! {"find": "c", "filter": {"s": {"$gte": "s30"}}, "projection": {"s": 1, "_id": 0}, "sort": {"s": -1}};
    let covered = cursor_documents(&db, find).await.unwrap();
    let expected: Vec<Document> = (30..40)
        .rev()
        .map(|i| {
            let s = format!("s{i}");
            doc! {"s": if i % 4 == 0 { Bson::Symbol(s) } else { Bson::String(s) }}
        })
        .collect();
    assert_identical(&covered, &expected);

    // `_id` from the `_id` index.
    let find = doc! {"find": "c", "filter": {"_id": {"$gte": 35}}, "projection": {"_id": 1}, "hint": {"_id": 1}};
    let ids = cursor_documents(&db, find.clone()).await.unwrap();
    assert_eq!(ids.len(), 10);

    // Not covered: `_id` returned but not indexed, an unindexed filter field, a multikey index.
    for find in [
        doc! {"find": "c", "filter": {"day": {"$gte": day(30)}}, "projection": {"day": 1}},
        doc! {"find": "c", "filter": {"day": {"$gte": day(30)}, "flag": true}, "projection": {"day": 1, "_id": 0}, "hint": "day_1_oid_1"},
    ] {
        let (with_index, fetched) = with_and_without_index(&db, find.clone()).await;
        assert_eq!(with_index, fetched);
        let reply = explain(&db, find).await;
        assert_eq!(
            shard_stages(&reply),
            [["PROJECTION_SIMPLE", "FETCH", "IXSCAN"]]
        );
    }
    coll.insert_one(doc! {"_id": 101, "oid": [ObjectId::from_bytes([1; 12])]})
        .await
        .unwrap();
    let find = doc! {"find": "c", "filter": {"oid": ObjectId::from_bytes([1; 12])}, "projection": {"oid": 1, "day": 1, "_id": 0}, "hint": "day_1_oid_1"};
    let (with_index, fetched) = with_and_without_index(&db, find.clone()).await;
    assert_eq!(with_index, fetched);
    assert!(
        with_index
            .iter()
            .any(|d| matches!(d.get("oid"), Some(Bson::Array(_))))
    );
    let reply = explain(&db, find).await;
    assert_eq!(
        shard_stages(&reply),
        [["PROJECTION_SIMPLE", "FETCH", "IXSCAN"]]
    );
}

async fn sharded(client: &Client) {
    let db = client.database("covq_sharded");
    admin(client, doc! {"enableSharding": "covq_sharded"})
        .await
        .unwrap();
    admin(
        client,
        doc! {"shardCollection": "covq_sharded.c", "key": {"k": "hashed"}},
    )
    .await
    .unwrap();
    let coll = db.collection::<Document>("c");
    let docs: Vec<Document> = (0..60i64)
        .map(|i| doc! {"_id": i, "k": ObjectId::from_bytes([i as u8; 12]), "day": day(i), "n": number(i)})
        .collect();
    coll.insert_many(docs).await.unwrap();
    for key in [
        doc! {"k": 1, "day": 1},
        doc! {"day": 1},
        doc! {"k": 1, "n": -1},
    ] {
        coll.create_index(mongodb::IndexModel::builder().keys(key).build())
            .await
            .unwrap();
    }

    // The shard key is in the index: each shard filters its orphans by the keys.
    let find = doc! {"find": "c", "filter": {"k": {"$gte": ObjectId::from_bytes([10; 12])}}, "projection": {"k": 1, "day": 1, "_id": 0}, "hint": "k_1_day_1"};
    let (covered, fetched) = with_and_without_index(&db, find.clone()).await;
    assert_eq!(covered.len(), 50);
    let fetched: Vec<Document> = fetched
        .into_iter()
        .map(|d| doc! {"k": d.get("k").unwrap(), "day": d.get("day").unwrap()})
        .collect();
    assert_eq!(covered, fetched);
    let reply = explain(&db, find).await;
    let plans = shard_stages(&reply);
    assert!(plans.len() > 1, "{reply}");
    for plan in plans {
        assert_eq!(plan, ["PROJECTION_COVERED", "SHARDING_FILTER", "IXSCAN"]);
    }
    assert_eq!(total(&reply, "totalDocsExamined"), 0);
    assert_eq!(total(&reply, "nReturned"), 50);

    // Numbers of every type come back exact from the keys on every shard.
    let find = doc! {"find": "c", "filter": {"k": {"$gte": ObjectId::from_bytes([10; 12])}}, "projection": {"k": 1, "n": 1, "_id": 0}, "hint": "k_1_n_-1"};
    let (covered, fetched) = with_and_without_index(&db, find.clone()).await;
    let fetched: Vec<Document> = fetched
        .into_iter()
        .map(|d| doc! {"k": d.get("k").unwrap(), "n": d.get("n").unwrap()})
        .collect();
    assert_identical(&covered, &fetched);
    let mut expected: Vec<Document> = (10..60)
        .map(|i| doc! {"k": ObjectId::from_bytes([i as u8; 12]), "n": number(i)})
        .collect();
    expected.sort_by_key(|d| format!("{d:?}"));
    assert_identical(&covered, &expected);
    let reply = explain(&db, find).await;
    for plan in shard_stages(&reply) {
        assert_eq!(plan, ["PROJECTION_COVERED", "SHARDING_FILTER", "IXSCAN"]);
    }
    assert_eq!(total(&reply, "totalDocsExamined"), 0);
    assert_eq!(total(&reply, "nReturned"), 50);

    // Without the shard key in the index the shard reads each document to filter orphans.
    let find = doc! {"find": "c", "filter": {"day": {"$gte": day(50)}}, "projection": {"day": 1, "_id": 0}};
    let (with_index, fetched) = with_and_without_index(&db, find.clone()).await;
    assert_eq!(with_index, fetched);
    assert_eq!(with_index.len(), 10);
    let reply = explain(&db, find).await;
    for plan in shard_stages(&reply) {
        assert_eq!(
            plan,
            ["PROJECTION_SIMPLE", "SHARDING_FILTER", "FETCH", "IXSCAN"]
        );
    }
}

both_modes!(unsharded, sharded);
