//! `{$meta}` fields of `find` projections beyond the text score (see `text_search.rs`) and the
//! `$near` distance and point (see `geo.rs`): `sortKey`, `recordId`, `indexKey` and `randVal`,
//! with MongoDB's errors, on an unsharded collection and on one sharded by `_id` with a chunk
//! on each shard (the router merging by its own `$sortKey` beside the user's fields); and
//! `randVal` in pipelines, which `$sample` attaches.

use crate::harness::{both_modes, first_batch};
use mongodb::bson::{Bson, Document, doc};
use mongodb::{Client, Database, IndexModel};

/// `meta.plain` and `meta.sharded` (split at `_id` 3) holding `{_id: i, a: i % 3, b: i}` for
/// i in 0..6, with an index on `{a: 1, b: 1}`.
async fn setup(client: &Client) -> Database {
    let docs: Vec<Document> = (0..6)
        .map(|i| doc! {"_id": i, "a": i % 3, "b": i})
        .collect();
    plain_and_sharded(client, "find_meta", docs, doc! {"a": 1, "b": 1}).await
}

/// Database `name` with `plain` and `sharded` (on `_id`, split at 3 across the shards), each
/// holding `docs` and an index on `keys`.
async fn plain_and_sharded(
    client: &Client,
    name: &str,
    docs: Vec<Document>,
    keys: Document,
) -> Database {
    let db = client.database(name);
    db.drop().await.unwrap();
    client
        .database("admin")
        .run_command(doc! {"shardCollection": format!("{name}.sharded"), "key": {"_id": 1}})
        .await
        .unwrap();
    crate::harness::split_across_shards(
        client,
        &format!("{name}.sharded"),
        doc! {"_id": 3},
        [doc! {"_id": 0}, doc! {"_id": 3}],
    )
    .await;
    for coll in ["plain", "sharded"] {
        let coll = db.collection::<Document>(coll);
        coll.insert_many(docs.clone()).await.unwrap();
        coll.create_index(IndexModel::builder().keys(keys.clone()).build())
            .await
            .unwrap();
    }
    db
}

async fn find(
    db: &Database,
    name: &str,
    command: Document,
) -> mongodb::error::Result<Vec<Document>> {
    let mut full = doc! {"find": name};
    full.extend(command);
    Ok(first_batch(&db.run_command(full).await?))
}

async fn find_ok(db: &Database, name: &str, command: Document) -> Vec<Document> {
    find(db, name, command).await.unwrap()
}

async fn sort_keys(client: &Client) {
    let db = setup(client).await;
    for name in ["plain", "sharded"] {
        // The key of every sort field, in an array, after the projected fields; the router's
        // own `$sortKey` does not show.
        let docs = find_ok(
            &db,
            name,
            doc! {"sort": {"a": 1, "b": -1}, "projection": {"k": {"$meta": "sortKey"}, "b": 1}},
        )
        .await;
        let expected: Vec<Document> = [3, 0, 4, 1, 5, 2]
            .iter()
            .map(|i: &i32| doc! {"_id": i, "b": i, "k": [i % 3, i]})
            .collect();
        assert_eq!(docs, expected, "{name}");
        // A missing sort field's key is null; an exclusion keeps the rest.
        let docs = find_ok(
            &db,
            name,
            doc! {"filter": {"_id": 1}, "sort": {"z": 1}, "projection": {"a": 0, "k": {"$meta": "sortKey"}}},
        )
        .await;
        assert_eq!(docs, [doc! {"_id": 1, "b": 1, "k": [Bson::Null]}], "{name}");
        // returnKey keeps the sortKey fields beside the index key.
        let docs = find_ok(
            &db,
            name,
            doc! {"filter": {"a": 1}, "hint": {"a": 1, "b": 1}, "sort": {"b": -1}, "returnKey": true,
                  "projection": {"c": {"$meta": "sortKey"}, "x": 1}},
        )
        .await;
        assert_eq!(
            docs,
            [
                doc! {"a": 1, "b": 4, "c": [4]},
                doc! {"a": 1, "b": 1, "c": [1]}
            ],
            "{name}"
        );
        // Without a sort: MongoDB's BadValue.
        let err = find(&db, name, doc! {"projection": {"k": {"$meta": "sortKey"}}})
            .await
            .unwrap_err();
        let message = err.to_string();
        assert_eq!(crate::harness::error_code(&err), Some(2), "{name}: {err}");
        assert!(
            message.contains("cannot use sortKey $meta projection without a sort"),
            "{name}: {message}"
        );
    }
}

async fn record_ids_and_index_keys(client: &Client) {
    let db = setup(client).await;
    for name in ["plain", "sharded"] {
        // A record id per document (a long), the same whatever the order.
        let scanned = find_ok(&db, name, doc! {"projection": {"r": {"$meta": "recordId"}}}).await;
        assert_eq!(scanned.len(), 6, "{name}");
        let by_id = |docs: &[Document]| -> Vec<(i32, i64)> {
            let mut pairs: Vec<(i32, i64)> = docs
                .iter()
                .map(|d| (d.get_i32("_id").unwrap(), d.get_i64("r").unwrap()))
                .collect();
            pairs.sort();
            pairs
        };
        let sorted = find_ok(
            &db,
            name,
            doc! {"sort": {"b": -1}, "projection": {"_id": 1, "r": {"$meta": "recordId"}}},
        )
        .await;
        assert_eq!(by_id(&sorted), by_id(&scanned), "{name}");
        assert_eq!(sorted[0].keys().collect::<Vec<_>>(), ["_id", "r"], "{name}");
        // The whole document stays: `$meta` alone is neither an inclusion nor an exclusion.
        assert_eq!(
            scanned[0].keys().collect::<Vec<_>>(),
            ["_id", "a", "b", "r"],
            "{name}"
        );
        // The index key the document was found by; none from a collection scan.
        let docs = find_ok(
            &db,
            name,
            doc! {"filter": {"a": 2}, "hint": {"a": 1, "b": 1}, "projection": {"_id": 0, "b": 1, "k": {"$meta": "indexKey"}}},
        )
        .await;
        assert_eq!(
            docs,
            [
                doc! {"b": 2, "k": {"a": 2, "b": 2}},
                doc! {"b": 5, "k": {"a": 2, "b": 5}}
            ],
            "{name}"
        );
        let docs = find_ok(
            &db,
            name,
            doc! {"filter": {"b": 2}, "projection": {"k": {"$meta": "indexKey"}}},
        )
        .await;
        assert_eq!(docs, [doc! {"_id": 2, "a": 2, "b": 2}], "{name}");
        // The `_id` lookup's key: not yet (MongoDB's releases differ).
        let err = find(
            &db,
            name,
            doc! {"filter": {"_id": 2}, "projection": {"k": {"$meta": "indexKey"}}},
        )
        .await
        .unwrap_err();
        assert_eq!(crate::harness::error_code(&err), Some(238), "{name}: {err}");
        // A find draws no random value: the field is missing.
        let docs = find_ok(
            &db,
            name,
            doc! {"filter": {"_id": 4}, "projection": {"v": {"$meta": "randVal"}}},
        )
        .await;
        assert_eq!(docs, [doc! {"_id": 4, "a": 1, "b": 4}], "{name}");
    }
}

async fn sampled_rand_vals(client: &Client) {
    let db = setup(client).await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        // The value each document was drawn by, kept by later stages.
        let out = crate::harness::aggregate_documents(
            &coll,
            vec![
                doc! {"$sample": {"size": 4}},
                doc! {"$match": {}},
                doc! {"$project": {"_id": 1, "r": {"$meta": "randVal"}}},
            ],
        )
        .await;
        assert_eq!(out.len(), 4, "{name}");
        for doc in &out {
            assert_eq!(
                doc.keys().collect::<Vec<_>>(),
                ["_id", "r"],
                "{name}: {doc}"
            );
            let r = doc.get_f64("r").unwrap();
            assert!((0.0..1.0).contains(&r), "{name}: {r}");
        }
        // Without a `$sample` (MongoDB does not refuse it): missing.
        let out = crate::harness::aggregate_documents(
            &coll,
            vec![
                doc! {"$match": {"_id": 1}},
                doc! {"$addFields": {"r": {"$meta": "randVal"}}},
            ],
        )
        .await;
        assert_eq!(out, [doc! {"_id": 1, "a": 1, "b": 1}], "{name}");
    }
}

async fn pipeline_sort_keys(client: &Client) {
    let db = setup(client).await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        // The key under the `$sort` before, an array, kept by later stages.
        let out = crate::harness::aggregate_documents(
            &coll,
            vec![
                doc! {"$sort": {"a": 1, "b": -1}},
                doc! {"$limit": 4},
                doc! {"$project": {"_id": 1, "k": {"$meta": "sortKey"}}},
            ],
        )
        .await;
        let expected: Vec<Document> = [3, 0, 4, 1]
            .iter()
            .map(|i: &i32| doc! {"_id": i, "k": [i % 3, i]})
            .collect();
        assert_eq!(out, expected, "{name}");
        let out = crate::harness::aggregate_documents(
            &coll,
            vec![
                doc! {"$sort": {"b": 1}},
                doc! {"$group": {"_id": null, "m": {"$max": {"$meta": "sortKey"}}}},
            ],
        )
        .await;
        assert_eq!(out, [doc! {"_id": null, "m": [5]}], "{name}");
        // With no `$sort` before: not yet.
        let err = crate::harness::aggregate_error(
            &coll,
            vec![
                doc! {"$match": {}},
                doc! {"$addFields": {"k": {"$meta": "sortKey"}}},
            ],
        )
        .await;
        assert_eq!(err, Some(238), "{name}");
    }
}

/// `meta_geo.plain` and `meta_geo.sharded` (split at `_id` 3) holding points on the equator,
/// in pairs the same distance east and west of the origin, with a 2dsphere index.
async fn geo_setup(client: &Client) -> Database {
    let places = [
        (0.01, "e"),
        (-0.01, "a"),
        (0.02, "c"),
        (-0.02, "b"),
        (0.03, "d"),
        (0.005, "f"),
    ];
    let docs: Vec<Document> = places
        .iter()
        .enumerate()
        .map(|(i, (x, name))| {
            doc! {"_id": i as i32, "name": *name, "loc": {"type": "Point", "coordinates": [*x, 0.0]}}
        })
        .collect();
    plain_and_sharded(client, "meta_geo", docs, doc! {"loc": "2dsphere"}).await
}

fn ids(docs: &[Document]) -> Vec<i32> {
    docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
}

/// A sort by `{$meta: "geoNearDistance"}` orders as MongoDB's every `$meta` sort key does:
/// descending (farthest first), ties by the next key; through the router merged by the same key.
async fn geo_near_distance_sorts(client: &Client) {
    let db = geo_setup(client).await;
    let near = doc! {"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": [0.0, 0.0]}}}};
    let by_distance = doc! {"d": {"$meta": "geoNearDistance"}, "name": 1};
    for name in ["plain", "sharded"] {
        let docs = find_ok(
            &db,
            name,
            doc! {"filter": near.clone(), "sort": by_distance.clone(),
                  "projection": {"name": 1, "d": {"$meta": "geoNearDistance"}, "k": {"$meta": "sortKey"}}},
        )
        .await;
        assert_eq!(ids(&docs), [4, 3, 2, 1, 0, 5], "{name}: {docs:?}");
        let distances: Vec<f64> = docs.iter().map(|d| d.get_f64("d").unwrap()).collect();
        assert!(
            distances.windows(2).all(|w| w[0] >= w[1]),
            "{name}: {distances:?}"
        );
        // The sort key is the distance, then the name; no carried field shows.
        let first = &docs[0];
        assert_eq!(
            first.get_array("k").unwrap(),
            &vec![Bson::Double(distances[0]), Bson::String("d".into())],
            "{name}"
        );
        assert_eq!(first.len(), 4, "{name}: {first:?}");
        // A limit keeps the farthest.
        let docs = find_ok(
            &db,
            name,
            doc! {"filter": near.clone(), "sort": by_distance.clone(), "limit": 3},
        )
        .await;
        assert_eq!(ids(&docs), [4, 3, 2], "{name}");
        assert!(docs.iter().all(|d| !d.contains_key("$dis")), "{name}");
        // Without a `$near` there is no distance: MongoDB's 40218.
        let err = find(&db, name, doc! {"sort": by_distance.clone()})
            .await
            .unwrap_err();
        assert_eq!(
            crate::harness::error_code(&err),
            Some(40218),
            "{name}: {err}"
        );
        assert!(
            err.to_string()
                .contains("query requires $geoNear distance metadata, but it is not available"),
            "{name}: {err}"
        );
        // Nor in a write's sort.
        let err = db
            .run_command(
                doc! {"findAndModify": name, "query": {}, "sort": by_distance.clone(),
                "update": {"$set": {"x": 1}}},
            )
            .await
            .unwrap_err();
        assert_eq!(
            crate::harness::error_code(&err),
            Some(40218),
            "{name}: {err}"
        );
        // After a `$geoNear` in a pipeline: the same order.
        let coll = db.collection::<Document>(name);
        let geo_near = doc! {"$geoNear": {"near": {"type": "Point", "coordinates": [0.0, 0.0]},
        "distanceField": "dist", "spherical": true}};
        let out = crate::harness::aggregate_documents(
            &coll,
            vec![
                geo_near.clone(),
                doc! {"$sort": by_distance.clone()},
                doc! {"$project": {"_id": 1}},
            ],
        )
        .await;
        assert_eq!(ids(&out), [4, 3, 2, 1, 0, 5], "{name}");
        let out = crate::harness::aggregate_documents(
            &coll,
            vec![
                geo_near,
                doc! {"$sort": {"x": {"$meta": "geoNearDistance"}}},
                doc! {"$limit": 1},
                doc! {"$project": {"_id": 1, "k": {"$meta": "sortKey"}}},
            ],
        )
        .await;
        assert_eq!(ids(&out), [4], "{name}");
        // Without one: 40218.
        let err = crate::harness::aggregate_error(
            &coll,
            vec![doc! {"$match": {}}, doc! {"$sort": by_distance.clone()}],
        )
        .await;
        assert_eq!(err, Some(40218), "{name}");
    }
}

/// `{$meta: "indexKey"}` in pipelines: the key of the index scan a leading `$match` chose
/// (missing after a collection scan), as MongoDB's query layer attaches it; computed by each
/// shard. Where this server's plan may differ from MongoDB's (a leading `$sort`, an `_id`
/// lookup) NotImplemented; `recordId` in pipelines too.
async fn pipeline_index_keys(client: &Client) {
    let db = setup(client).await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        let out = crate::harness::aggregate_documents(
            &coll,
            vec![
                doc! {"$match": {"a": 2}},
                doc! {"$addFields": {"k": {"$meta": "indexKey"}}},
                doc! {"$sort": {"b": 1}},
            ],
        )
        .await;
        assert_eq!(
            out,
            [
                doc! {"_id": 2, "a": 2, "b": 2, "k": {"a": 2, "b": 2}},
                doc! {"_id": 5, "a": 2, "b": 5, "k": {"a": 2, "b": 5}}
            ],
            "{name}"
        );
        // A collection scan has no key: missing (a `$project` of `$meta` alone keeps `_id`).
        let out = crate::harness::aggregate_documents(
            &coll,
            vec![
                doc! {"$match": {"b": 2}},
                doc! {"$project": {"k": {"$meta": "indexKey"}}},
            ],
        )
        .await;
        assert_eq!(out, [doc! {"_id": 2}], "{name}");
        for pipeline in [
            vec![
                doc! {"$sort": {"a": 1}},
                doc! {"$project": {"k": {"$meta": "indexKey"}}},
            ],
            vec![
                doc! {"$match": {"_id": 2}},
                doc! {"$project": {"k": {"$meta": "indexKey"}}},
            ],
            vec![doc! {"$addFields": {"r": {"$meta": "recordId"}}}],
        ] {
            let err = crate::harness::aggregate_error(&coll, pipeline.clone()).await;
            assert_eq!(err, Some(238), "{name}: {pipeline:?}");
        }
    }
}

both_modes!(
    sort_keys,
    record_ids_and_index_keys,
    sampled_rand_vals,
    pipeline_sort_keys,
    geo_near_distance_sorts,
    pipeline_index_keys
);
