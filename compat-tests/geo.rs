//! Geospatial queries end to end through the router, on an unsharded collection and on one
//! sharded by `_id` with a chunk on each shard: `$geoWithin` (every shape) and `$geoIntersects`
//! without an index, MongoDB's errors for malformed query geometry; `$near` and `$geoNear` on
//! geo indexes, their `{$meta: "geoNearDistance"}`/`"geoNearPoint"` and their explain.

use crate::harness::{aggregate_documents, aggregate_error, both_modes, error_code, sorted_ids};
use futures::TryStreamExt;
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

/// `_id`s 0..=4: legacy pairs and GeoJSON points near (0, 0); 5: a line, 6: a polygon,
/// 7: no location, 8: a point far away.
fn places() -> Vec<Document> {
    vec![
        doc! {"_id": 0, "loc": [1, 1]},
        doc! {"_id": 1, "loc": {"x": 2, "y": 2}},
        doc! {"_id": 2, "loc": {"type": "Point", "coordinates": [3, 3]}},
        doc! {"_id": 3, "loc": {"type": "Point", "coordinates": [-1, -1]}},
        doc! {"_id": 4, "loc": [[5, 5], [6, 6]]},
        doc! {"_id": 5, "loc": {"type": "LineString", "coordinates": [[1, 2], [2, 1]]}},
        doc! {"_id": 6, "loc": {"type": "Polygon", "coordinates": [[[1, 1], [2, 1], [2, 2], [1, 2], [1, 1]]]}},
        doc! {"_id": 7, "name": "nowhere"},
        doc! {"_id": 8, "loc": {"type": "Point", "coordinates": [100, 50]}},
    ]
}

/// `geo.plain` and `geo.sharded` (by `_id`, split at 5, the chunks on both shards) holding
/// [`places`].
async fn setup(client: &Client) -> mongodb::Database {
    setup_with(client, places()).await
}

async fn setup_with(client: &Client, docs: Vec<Document>) -> mongodb::Database {
    let db = client.database("geo");
    db.drop().await.unwrap();
    let admin = client.database("admin");
    admin
        .run_command(doc! {"shardCollection": "geo.sharded", "key": {"_id": 1}})
        .await
        .unwrap();
    crate::harness::split_across_shards(
        client,
        "geo.sharded",
        doc! {"_id": 5},
        [doc! {"_id": 0}, doc! {"_id": 5}],
    )
    .await;
    for name in ["plain", "sharded"] {
        db.collection::<Document>(name)
            .insert_many(docs.clone())
            .await
            .unwrap();
    }
    db
}

fn square(lo: i32, hi: i32) -> Bson {
    Bson::Array(vec![Bson::Array(
        [(lo, lo), (hi, lo), (hi, hi), (lo, hi), (lo, lo)]
            .iter()
            .map(|(x, y)| Bson::Array(vec![Bson::Int32(*x), Bson::Int32(*y)]))
            .collect(),
    )])
}

async fn within_and_intersects_without_an_index(client: &Client) {
    let db = setup(client).await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        let within = |shape: Document| doc! {"loc": {"$geoWithin": shape}};
        // Plane shapes hold points only: legacy pairs and GeoJSON Points.
        assert_eq!(
            sorted_ids(&coll, within(doc! {"$box": [[0, 0], [5, 5]]})).await,
            [0, 1, 2, 4],
            "{name}"
        );
        assert_eq!(
            sorted_ids(&coll, within(doc! {"$center": [[0, 0], 2]})).await,
            [0, 3],
            "{name}"
        );
        assert_eq!(
            sorted_ids(
                &coll,
                within(doc! {"$polygon": [[0, 0], [4, 0], [4, 4], [0, 4]]})
            )
            .await,
            [0, 1, 2],
            "{name}"
        );
        // Spherical shapes hold any geometry lying wholly inside.
        assert_eq!(
            sorted_ids(
                &coll,
                within(doc! {"$geometry": {"type": "Polygon", "coordinates": square(0, 4)}})
            )
            .await,
            [0, 1, 2, 5, 6],
            "{name}"
        );
        assert_eq!(
            sorted_ids(&coll, within(doc! {"$centerSphere": [[0, 0], 0.06]})).await,
            [0, 1, 3, 5, 6],
            "{name}"
        );
        let crossing = doc! {"loc": {"$geoIntersects": {"$geometry": {
            "type": "LineString", "coordinates": [[0, 1.5], [10, 1.5]],
        }}}};
        assert_eq!(sorted_ids(&coll, crossing).await, [5, 6], "{name}");
        let multi = doc! {"loc": {"$geoIntersects": {"$geometry": {
            "type": "MultiPolygon", "coordinates": [
                [[[95, 45], [105, 45], [105, 55], [95, 55], [95, 45]]], square(-2, 0),
            ],
        }}}};
        assert_eq!(sorted_ids(&coll, multi).await, [3, 8], "{name}");
        // Malformed query geometry: BadValue.
        for bad in [
            doc! {"loc": {"$geoWithin": {"$box": [[0, 0]]}}},
            doc! {"loc": {"$geoWithin": {"$circle": [[0, 0], 1]}}},
            doc! {"loc": {"$geoWithin": {"$geometry": {"type": "Point", "coordinates": [0, 0]}}}},
            doc! {"loc": {"$geoIntersects": {"$geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0]]]}}}},
            doc! {"loc": {"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": [181, 0]}}}},
        ] {
            let err = coll.find_one(bad.clone()).await.unwrap_err();
            assert_eq!(error_code(&err), Some(2), "{name}: {bad}");
        }
    }
}

/// The `winningPlan` of explaining `find` with `filter` (through the router: the first
/// shard's).
async fn winning_plan(db: &mongodb::Database, coll: &str, filter: Document) -> String {
    let reply = db
        .run_command(
            doc! {"explain": {"find": coll, "filter": filter}, "verbosity": "queryPlanner"},
        )
        .await
        .unwrap();
    format!("{reply}")
}

async fn sphere_indexes(client: &Client) {
    let db = setup(client).await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        // An array of legacy pairs is no geometry a 2dsphere index takes.
        let err = db
            .run_command(doc! {"createIndexes": name, "indexes": [{"key": {"loc": "2dsphere"}, "name": "loc_2dsphere"}]})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(16755), "{name}: {err}");
        coll.delete_one(doc! {"_id": 4}).await.unwrap();
        db.run_command(doc! {"createIndexes": name, "indexes": [{"key": {"loc": "2dsphere"}, "name": "loc_2dsphere"}]})
            .await
            .unwrap();
        let listed = db.run_command(doc! {"listIndexes": name}).await.unwrap();
        let spec = listed
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()
            .iter()
            .filter_map(Bson::as_document)
            .find(|i| i.get_str("name") == Ok("loc_2dsphere"))
            .cloned()
            .expect("the index is listed");
        assert_eq!(
            spec,
            doc! {"v": 2, "key": {"loc": "2dsphere"}, "name": "loc_2dsphere", "2dsphereIndexVersion": 3},
            "{name}"
        );
        // The same answers through the index, which the plan shows.
        let poly = doc! {"loc": {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": square(0, 4)}}}};
        assert_eq!(
            sorted_ids(&coll, poly.clone()).await,
            [0, 1, 2, 5, 6],
            "{name}"
        );
        let plan = winning_plan(&db, name, poly).await;
        assert!(
            plan.contains("IXSCAN") && plan.contains("loc_2dsphere"),
            "{name}: {plan}"
        );
        let cap = doc! {"loc": {"$geoWithin": {"$centerSphere": [[0, 0], 0.06]}}};
        assert_eq!(sorted_ids(&coll, cap).await, [0, 1, 3, 5, 6], "{name}");
        let crossing = doc! {"loc": {"$geoIntersects": {"$geometry": {
            "type": "LineString", "coordinates": [[0, 1.5], [10, 1.5]],
        }}}};
        assert_eq!(sorted_ids(&coll, crossing).await, [5, 6], "{name}");
        let far = doc! {"loc": {"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": [100, 50]}}}};
        assert_eq!(sorted_ids(&coll, far).await, [8], "{name}");
        // A document whose location is no valid geometry is refused, and nothing is written.
        for bad in [
            doc! {"_id": 20, "loc": {"type": "Point", "coordinates": [200, 0]}},
            doc! {"_id": 20, "loc": {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0]]]}},
            doc! {"_id": 20, "loc": "here"},
        ] {
            let err = coll.insert_one(bad.clone()).await.unwrap_err();
            assert_eq!(error_code(&err), Some(16755), "{name}: {bad}");
        }
        assert_eq!(coll.count_documents(doc! {"_id": 20}).await.unwrap(), 0);
        // Without a location the document is not indexed (2dsphere from version 2 is sparse).
        coll.insert_one(doc! {"_id": 21}).await.unwrap();
    }
}

async fn sphere_index(coll: &mongodb::Collection<Document>, field: &str) {
    let model = mongodb::IndexModel::builder()
        .keys(doc! {field: "2dsphere"})
        .build();
    coll.create_index(model).await.unwrap();
}

/// The `_id`s `filter` finds, in the order they come (with `limit` when given).
async fn ordered_ids(
    coll: &mongodb::Collection<Document>,
    filter: Document,
    limit: Option<i64>,
) -> Vec<i32> {
    let mut find = coll.find(filter);
    if let Some(limit) = limit {
        find = find.limit(limit);
    }
    let docs: Vec<Document> = futures::TryStreamExt::try_collect(find.await.unwrap())
        .await
        .unwrap();
    docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
}

async fn near_queries(client: &Client) {
    // `_id` i lies i hundredths of a degree east of (0, 0), about 1113 m apart; inserted
    // out of order, so that each shard holds near and far points.
    let order = [7, 2, 9, 0, 5, 3, 8, 1, 6, 4];
    let docs = order
        .iter()
        .map(|i| doc! {"_id": *i, "loc": {"type": "Point", "coordinates": [f64::from(*i) / 100.0, 0.0]}})
        .collect();
    let db = setup_with(client, docs).await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        let point = doc! {"type": "Point", "coordinates": [0, 0]};
        // Without a 2dsphere index: MongoDB's NoQueryExecutionPlans.
        let err = coll
            .find_one(doc! {"loc": {"$near": {"$geometry": point.clone()}}})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(291), "{name}: {err}");
        sphere_index(&coll, "loc").await;
        let near = |extra: Document| {
            let mut spec = doc! {"$geometry": point.clone()};
            spec.extend(extra);
            doc! {"loc": {"$near": spec}}
        };
        assert_eq!(
            ordered_ids(&coll, near(doc! {}), None).await,
            (0..10).collect::<Vec<_>>(),
            "{name}"
        );
        assert_eq!(
            ordered_ids(&coll, near(doc! {}), Some(3)).await,
            [0, 1, 2],
            "{name}"
        );
        assert_eq!(
            ordered_ids(&coll, near(doc! {"$maxDistance": 2500}), None).await,
            [0, 1, 2],
            "{name}"
        );
        assert_eq!(
            ordered_ids(
                &coll,
                near(doc! {"$minDistance": 5000, "$maxDistance": 7000}),
                None
            )
            .await,
            [5, 6],
            "{name}"
        );
        // From the far end, with another predicate.
        let east = doc! {"loc": {"$nearSphere": {"$geometry": {"type": "Point", "coordinates": [0.1, 0]}}}, "_id": {"$lt": 5}};
        assert_eq!(ordered_ids(&coll, east, Some(2)).await, [4, 3], "{name}");
        // A sort re-orders what `$near` finds, overriding the distance order (MongoDB's
        // documented behavior); on the sharded collection the router merges by the sort.
        let sorted: Vec<Document> = coll
            .find(near(doc! {"$maxDistance": 4500}))
            .sort(doc! {"_id": -1})
            .limit(2)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let sorted: Vec<i32> = sorted.iter().map(|d| d.get_i32("_id").unwrap()).collect();
        assert_eq!(sorted, [4, 3], "{name}");
        // A legacy pair with $nearSphere: radians.
        let legacy = doc! {"loc": {"$nearSphere": [0, 0], "$maxDistance": 0.0004}};
        assert_eq!(ordered_ids(&coll, legacy, None).await, [0, 1, 2], "{name}");
        // A legacy $near measures on the plane, which only a 2d index answers.
        let flat = coll
            .find_one(doc! {"loc": {"$near": [0, 0]}})
            .await
            .unwrap_err();
        assert_eq!(error_code(&flat), Some(291), "{name}: {flat}");
        // MongoDB's placement rules.
        let nested = doc! {"$or": [{"loc": {"$near": {"$geometry": point.clone()}}}, {"_id": 1}]};
        assert_eq!(
            error_code(&coll.find_one(nested).await.unwrap_err()),
            Some(2),
            "{name}"
        );
        // Explained as MongoDB's GEO_NEAR_2DSPHERE, under a FETCH for the other predicates.
        let find = doc! {"find": name, "filter": {"loc": {"$near": {"$geometry": point.clone()}}, "_id": {"$lt": 5}}, "limit": 2};
        let explained = db
            .run_command(doc! {"explain": find, "verbosity": "executionStats"})
            .await
            .unwrap()
            .to_string();
        for part in [
            "\"stage\": \"GEO_NEAR_2DSPHERE\"",
            "\"indexName\": \"loc_2dsphere\"",
            "\"filter\": { \"_id\": { \"$lt\": 5 } }",
            "\"stage\": \"LIMIT\"",
        ] {
            assert!(explained.contains(part), "{name}: {part} in {explained}");
        }
        let counted = coll.count_documents(near(doc! {})).await.unwrap_err();
        assert_eq!(error_code(&counted), Some(2), "{name}: {counted}");
    }
}

/// `{$meta: "geoNearDistance"}` and `{$meta: "geoNearPoint"}` in a `$near` find's projection:
/// each document's distance (meters for a GeoJSON point, radians for a legacy pair) and the
/// location measured to, surviving the router's merge by distance.
async fn near_metadata(client: &Client) {
    let order = [7, 2, 9, 0, 5, 3, 8, 1, 6, 4];
    let docs = order
        .iter()
        .map(|i| doc! {"_id": *i, "loc": {"type": "Point", "coordinates": [f64::from(*i) / 100.0, 0.0]}, "x": i})
        .collect();
    let db = setup_with(client, docs).await;
    let meta = doc! {"d": {"$meta": "geoNearDistance"}, "p": {"$meta": "geoNearPoint"}};
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        sphere_index(&coll, "loc").await;
        let point = doc! {"type": "Point", "coordinates": [0, 0]};
        let near = doc! {"loc": {"$near": {"$geometry": point.clone()}}};
        let found: Vec<Document> = coll
            .find(near.clone())
            .projection(
                doc! {"_id": 1, "d": {"$meta": "geoNearDistance"}, "p": {"$meta": "geoNearPoint"}},
            )
            .limit(4)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(found.len(), 4, "{name}");
        for (i, doc) in found.iter().enumerate() {
            assert_eq!(doc.keys().collect::<Vec<_>>(), ["_id", "d", "p"], "{name}");
            assert_eq!(doc.get_i32("_id"), Ok(i as i32), "{name}");
            let meters = doc.get_f64("d").unwrap();
            assert!((meters - 1113.195 * i as f64).abs() < 0.5, "{name}: {doc}");
            let x = f64::from(i as i32) / 100.0;
            assert_eq!(
                doc.get_document("p").unwrap(),
                &doc! {"type": "Point", "coordinates": [x, 0.0]},
                "{name}"
            );
        }
        // A `$meta`-only projection keeps the document; a sort re-orders, the distances stay.
        let sorted: Vec<Document> = coll
            .find(near.clone())
            .projection(meta.clone())
            .sort(doc! {"_id": -1})
            .limit(1)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(sorted[0].get_i32("x"), Ok(9), "{name}");
        let meters = sorted[0].get_f64("d").unwrap();
        assert!((meters - 1113.195 * 9.0).abs() < 0.5, "{name}: {meters}");
        // A legacy pair with $nearSphere: radians.
        let legacy: Vec<Document> = coll
            .find(doc! {"loc": {"$nearSphere": [0, 0]}, "_id": 2})
            .projection(doc! {"d": {"$meta": "geoNearDistance"}})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let radians = legacy[0].get_f64("d").unwrap();
        assert!(
            (radians - 0.02f64.to_radians()).abs() < 1e-9,
            "{name}: {radians}"
        );
        // Without a `$near`: MongoDB's 40218.
        let err = coll
            .find_one(doc! {})
            .projection(doc! {"p": {"$meta": "geoNearPoint"}})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(40218), "{name}: {err}");
        assert!(
            err.to_string()
                .contains("query requires $geoNear point metadata, but it is not available"),
            "{name}: {err}"
        );
        // The index key of a `$near` match: not yet.
        let err = coll
            .find_one(near.clone())
            .projection(doc! {"k": {"$meta": "indexKey"}})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(238), "{name}: {err}");
    }
}

async fn geo_near_stage(client: &Client) {
    let order = [7, 2, 9, 0, 5, 3, 8, 1, 6, 4];
    let docs = order
        .iter()
        .map(|i| doc! {"_id": *i, "loc": {"type": "Point", "coordinates": [f64::from(*i) / 100.0, 0.0]}, "odd": i % 2 == 1})
        .collect();
    let db = setup_with(client, docs).await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        let geo_near = |extra: Document| {
            let mut spec =
                doc! {"near": {"type": "Point", "coordinates": [0, 0]}, "distanceField": "dist.m"};
            spec.extend(extra);
            doc! {"$geoNear": spec}
        };
        // No geo index: MongoDB's IndexNotFound.
        let err = aggregate_error(&coll, vec![geo_near(doc! {})]).await;
        assert_eq!(err, Some(27), "{name}");
        sphere_index(&coll, "loc").await;
        let out = aggregate_documents(
            &coll,
            vec![
                geo_near(doc! {"query": {"odd": true}, "includeLocs": "where", "distanceMultiplier": 0.001}),
                doc! {"$limit": 3},
            ],
        )
        .await;
        let ids: Vec<i32> = out.iter().map(|d| d.get_i32("_id").unwrap()).collect();
        assert_eq!(ids, [1, 3, 5], "{name}");
        let km = out[1].get_document("dist").unwrap().get_f64("m").unwrap();
        assert!((km - 3.339).abs() < 0.01, "{name}: {km}");
        assert_eq!(
            out[0].get_document("where").unwrap(),
            &doc! {"type": "Point", "coordinates": [0.01, 0.0]},
            "{name}"
        );
        // The distance (before `distanceMultiplier`) and the point as metadata, read on the
        // router after the shards' sorted streams merged.
        let out = aggregate_documents(
            &coll,
            vec![
                geo_near(doc! {"distanceMultiplier": 0.001}),
                doc! {"$limit": 2},
                doc! {"$project": {"_id": 1, "d": {"$meta": "geoNearDistance"}, "p": {"$meta": "geoNearPoint"}}},
            ],
        )
        .await;
        assert_eq!(out[1].get_i32("_id"), Ok(1), "{name}: {out:?}");
        let meters = out[1].get_f64("d").unwrap();
        assert!((meters - 1113.19).abs() < 0.1, "{name}: {meters}");
        assert_eq!(
            out[1].get_document("p").unwrap(),
            &doc! {"type": "Point", "coordinates": [0.01, 0.0]},
            "{name}"
        );
        let err = aggregate_error(
            &coll,
            vec![
                doc! {"$match": {}},
                doc! {"$addFields": {"d": {"$meta": "geoNearDistance"}}},
            ],
        )
        .await;
        assert_eq!(err, Some(40218), "{name}");
        // Explained with its `$geoNearCursor`.
        let explained = db
            .run_command(doc! {"explain": {"aggregate": name, "pipeline": [geo_near(doc! {}), {"$limit": 2}], "cursor": {}}, "verbosity": "executionStats"})
            .await
            .unwrap()
            .to_string();
        for part in ["$geoNearCursor", "\"stage\": \"GEO_NEAR_2DSPHERE\""] {
            assert!(explained.contains(part), "{name}: {part} in {explained}");
        }
        let bounded = aggregate_documents(
            &coll,
            vec![
                geo_near(doc! {"maxDistance": 2500, "minDistance": 1000}),
                doc! {"$project": {"_id": 1}},
            ],
        )
        .await;
        assert_eq!(bounded, [doc! {"_id": 1}, doc! {"_id": 2}], "{name}");
        // A legacy pair with spherical: radians.
        let legacy = aggregate_documents(
            &coll,
            vec![doc! {"$geoNear": {"near": [0, 0], "distanceField": "d", "spherical": true, "maxDistance": 0.0002}}],
        )
        .await;
        assert_eq!(legacy.len(), 2, "{name}");
        // MongoDB's errors: not first, a second geo index without `key`, a bad option.
        let err = aggregate_error(&coll, vec![doc! {"$match": {}}, geo_near(doc! {})]).await;
        assert_eq!(err, Some(40603), "{name}");
        let err = aggregate_error(&coll, vec![geo_near(doc! {"num": 3})]).await;
        assert_eq!(err, Some(2), "{name}");
        sphere_index(&coll, "other").await;
        let err = aggregate_error(&coll, vec![geo_near(doc! {})]).await;
        assert_eq!(err, Some(27), "{name}");
        let keyed = aggregate_documents(
            &coll,
            vec![geo_near(doc! {"key": "loc"}), doc! {"$limit": 1}],
        )
        .await;
        assert_eq!(keyed[0].get_i32("_id"), Ok(0), "{name}");
    }
}

async fn flat_indexes(client: &Client) {
    // `_id` i at (i, i) on a plane from 0 to 100; 10 holds two locations.
    let mut docs: Vec<Document> = [7, 2, 9, 0, 5, 3, 8, 1, 6, 4]
        .iter()
        .map(|i| doc! {"_id": *i, "p": [f64::from(*i), f64::from(*i)]})
        .collect();
    docs.push(doc! {"_id": 10, "p": [[50, 50], [0.5, 0.5]]});
    let db = setup_with(client, docs).await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        let create =
            |spec: Document| db.run_command(doc! {"createIndexes": name, "indexes": [spec]});
        let err = create(doc! {"key": {"p": "2d"}, "name": "p_2d", "bits": 40})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(13028), "{name}");
        let err = create(doc! {"key": {"a": 1, "p": "2d"}, "name": "x"})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(16801), "{name}");
        // A point outside the grid is refused, as is a GeoJSON object.
        let err = create(doc! {"key": {"p": "2d"}, "name": "p_2d", "min": 20, "max": 30})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(13027), "{name}: {err}");
        create(doc! {"key": {"p": "2d"}, "name": "p_2d", "min": -1, "max": 101})
            .await
            .unwrap();
        let err = coll
            .insert_one(doc! {"_id": 20, "p": {"type": "Point", "coordinates": [1, 1]}})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(13026), "{name}");
        // Plane shapes through the index.
        let boxed = doc! {"p": {"$geoWithin": {"$box": [[1.5, 1.5], [4, 4]]}}};
        assert_eq!(sorted_ids(&coll, boxed.clone()).await, [2, 3, 4], "{name}");
        let plan = winning_plan(&db, name, boxed).await;
        assert!(plan.contains("p_2d"), "{name}: {plan}");
        let circle = doc! {"p": {"$geoWithin": {"$center": [[50, 50], 1]}}};
        assert_eq!(sorted_ids(&coll, circle).await, [10], "{name}");
        // A legacy $near: plane distances, in order.
        let near = doc! {"p": {"$near": [0, 0], "$maxDistance": 3}};
        assert_eq!(
            ordered_ids(&coll, near, None).await,
            [0, 10, 1, 2],
            "{name}"
        );
        let far = doc! {"p": {"$near": [100, 100]}};
        assert_eq!(ordered_ids(&coll, far, Some(2)).await, [10, 9], "{name}");
        let out = aggregate_documents(
            &coll,
            vec![
                doc! {"$geoNear": {"near": [9, 9], "distanceField": "d"}},
                doc! {"$limit": 2},
            ],
        )
        .await;
        let ids: Vec<i32> = out.iter().map(|d| d.get_i32("_id").unwrap()).collect();
        assert_eq!(ids, [9, 8], "{name}");
        assert!(
            (out[1].get_f64("d").unwrap() - 2f64.sqrt()).abs() < 1e-9,
            "{name}"
        );
    }
}

both_modes!(
    within_and_intersects_without_an_index,
    sphere_indexes,
    near_queries,
    near_metadata,
    geo_near_stage,
    flat_indexes
);
