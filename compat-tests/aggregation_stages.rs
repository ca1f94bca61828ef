//! The reshaping and blocking stages end to end through the router, each on an unsharded and
//! on a sharded copy of the same documents (where the router merges what the shards send):
//! `$bucketAuto`, `$sample`, `$redact`, `$densify`, `$fill`, `$replaceRoot`, `$facet`,
//! `$setWindowFields`, `$unwind`'s options, `$sortByCount`, with null and missing values.

use crate::harness::{admin, aggregate_documents as run, both_modes, error_code};
use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::{Client, Collection};

/// The same documents in an unsharded and in a sharded collection.
async fn copies(client: &Client, db: &str, docs: Vec<Document>) -> [Collection<Document>; 2] {
    let database = client.database(db);
    database.drop().await.unwrap();
    admin(
        client,
        doc! {"shardCollection": format!("{db}.sharded"), "key": {"_id": "hashed"}},
    )
    .await
    .unwrap();
    let plain = database.collection::<Document>("plain");
    let sharded = database.collection::<Document>("sharded");
    for coll in [&plain, &sharded] {
        coll.insert_many(docs.clone()).await.unwrap();
    }
    [plain, sharded]
}

/// Runs `pipeline` on both copies: the answers must agree, and that answer is returned.
async fn on_both(colls: &[Collection<Document>; 2], pipeline: Vec<Document>) -> Vec<Document> {
    let plain = run(&colls[0], pipeline.clone()).await;
    let sharded = run(&colls[1], pipeline.clone()).await;
    assert_eq!(plain, sharded, "{pipeline:?}");
    plain
}

fn numbers() -> Vec<Document> {
    (0..10)
        .map(|i| {
            let mut d = doc! {"_id": i, "n": i, "g": i % 3};
            match i {
                0 => {
                    d.insert("tags", vec!["a", "b"]);
                }
                1 => {
                    d.insert("tags", Vec::<String>::new());
                }
                2 => {
                    d.insert("tags", Bson::Null);
                }
                3 => {
                    d.insert("sub", doc! {"a": "mine", "b": 2});
                }
                _ => {}
            }
            d
        })
        .collect()
}

async fn reshaping_and_blocking_stages(client: &Client) {
    let colls = copies(client, "aggstages", numbers()).await;
    assert_eq!(
        on_both(
            &colls,
            vec![doc! {"$bucketAuto": {"groupBy": "$n", "buckets": 5}}]
        )
        .await,
        vec![
            doc! {"_id": {"min": 0, "max": 2}, "count": 2},
            doc! {"_id": {"min": 2, "max": 4}, "count": 2},
            doc! {"_id": {"min": 4, "max": 6}, "count": 2},
            doc! {"_id": {"min": 6, "max": 8}, "count": 2},
            doc! {"_id": {"min": 8, "max": 9}, "count": 2},
        ]
    );
    assert_eq!(
        on_both(
            &colls,
            vec![
                doc! {"$redact": {"$cond": [{"$lte": ["$n", 4]}, "$$KEEP", "$$PRUNE"]}},
                doc! {"$sort": {"_id": 1}},
                doc! {"$project": {"_id": 1}},
            ]
        )
        .await,
        (0..5).map(|i| doc! {"_id": i}).collect::<Vec<_>>()
    );
    assert_eq!(
        on_both(
            &colls,
            vec![
                doc! {"$match": {"_id": {"$in": [3, 4]}}},
                doc! {"$replaceRoot": {"newRoot": {"$mergeObjects": [{"a": "default", "id": "$_id"}, "$sub"]}}},
                doc! {"$sort": {"id": 1}},
            ]
        )
        .await,
        vec![
            doc! {"a": "mine", "id": 3, "b": 2},
            doc! {"a": "default", "id": 4},
        ]
    );
    assert_eq!(
        on_both(
            &colls,
            vec![doc! {"$facet": {
                "counts": [{"$count": "n"}],
                "top": [{"$sort": {"n": -1}}, {"$limit": 1}, {"$project": {"_id": 0, "n": 1}}],
                "none": [{"$match": {"n": {"$gt": 100}}}],
            }}]
        )
        .await,
        vec![doc! {"counts": [{"n": 10}], "top": [{"n": 9}], "none": []}]
    );
    assert_eq!(
        on_both(
            &colls,
            vec![
                doc! {"$setWindowFields": {"partitionBy": "$g", "sortBy": {"n": 1}, "output": {
                    "running": {"$sum": "$n", "window": {"documents": ["unbounded", "current"]}},
                    "rank": {"$rank": {}},
                }}},
                doc! {"$match": {"g": 0}},
                doc! {"$sort": {"n": 1}},
                doc! {"$project": {"_id": 0, "running": 1, "rank": 1}},
            ]
        )
        .await,
        vec![
            doc! {"running": 0, "rank": 1},
            doc! {"running": 3, "rank": 2},
            doc! {"running": 9, "rank": 3},
            doc! {"running": 18, "rank": 4},
        ]
    );
    // `$unwind` keeps what `preserveNullAndEmptyArrays` says and numbers the elements.
    assert_eq!(
        on_both(
            &colls,
            vec![
                doc! {"$match": {"_id": {"$lte": 3}}},
                doc! {"$unwind": {"path": "$tags", "includeArrayIndex": "i", "preserveNullAndEmptyArrays": true}},
                doc! {"$sort": {"_id": 1, "i": 1}},
                doc! {"$project": {"tags": 1, "i": 1}},
            ]
        )
        .await,
        vec![
            doc! {"_id": 0, "tags": "a", "i": 0_i64},
            doc! {"_id": 0, "tags": "b", "i": 1_i64},
            doc! {"_id": 1, "i": Bson::Null},
            doc! {"_id": 2, "tags": Bson::Null, "i": Bson::Null},
            doc! {"_id": 3, "i": Bson::Null},
        ]
    );
    assert_eq!(
        on_both(
            &colls,
            vec![
                doc! {"$sortByCount": "$g"},
                doc! {"$sort": {"count": -1, "_id": 1}}
            ]
        )
        .await,
        vec![
            doc! {"_id": 0, "count": 4},
            doc! {"_id": 1, "count": 3},
            doc! {"_id": 2, "count": 3},
        ]
    );
    // `$sample` draws distinct documents of the collection; all of them when asked for more.
    for coll in &colls {
        let drawn = run(coll, vec![doc! {"$sample": {"size": 3}}]).await;
        let mut ids: Vec<i32> = drawn.iter().map(|d| d.get_i32("_id").unwrap()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 3);
        assert_eq!(
            run(coll, vec![doc! {"$sample": {"size": 50}}]).await.len(),
            10
        );
    }
    let err = colls[1]
        .aggregate(vec![doc! {"$sample": {"size": -1}}])
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(28747));
}

async fn densify_and_fill(client: &Client) {
    let readings = vec![
        doc! {"_id": 1, "x": 0, "v": 1},
        doc! {"_id": 2, "x": 2, "v": Bson::Null},
        doc! {"_id": 3, "x": 3},
        doc! {"_id": 4, "x": 6, "v": 4},
    ];
    let colls = copies(client, "aggfill", readings).await;
    let filled = on_both(
        &colls,
        vec![
            doc! {"$set": {"locf": "$v", "lin": "$v"}},
            doc! {"$fill": {"sortBy": {"x": 1}, "output": {"locf": {"method": "locf"}, "lin": {"method": "linear"}}}},
            doc! {"$project": {"_id": 0, "x": 1, "locf": 1, "lin": 1}},
        ],
    )
    .await;
    assert_eq!(
        filled,
        vec![
            doc! {"x": 0, "locf": 1, "lin": 1},
            doc! {"x": 2, "locf": 1, "lin": 2.0},
            doc! {"x": 3, "locf": 1, "lin": 2.5},
            doc! {"x": 6, "locf": 4, "lin": 4},
        ]
    );
    let dense = on_both(
        &colls,
        vec![
            doc! {"$densify": {"field": "x", "range": {"step": 2, "bounds": "full"}}},
            doc! {"$sort": {"x": 1}},
            doc! {"$project": {"_id": 0, "x": 1}},
        ],
    )
    .await;
    assert_eq!(
        dense,
        [0, 2, 3, 4, 6]
            .into_iter()
            .map(|x| doc! {"x": x})
            .collect::<Vec<_>>()
    );
}

/// `hint` makes the leading `$match` use the named index (`explain` shows it); a hint naming no
/// index is BadValue (2).
async fn aggregate_hint(client: &Client) {
    let colls = copies(client, "agghint", numbers()).await;
    for coll in &colls {
        coll.create_index(mongodb::IndexModel::builder().keys(doc! {"g": 1}).build())
            .await
            .unwrap();
        let pipeline = vec![
            doc! {"$match": {"n": {"$gte": 5}, "g": 1}},
            doc! {"$sort": {"n": 1}},
            doc! {"$project": {"_id": 0, "n": 1}},
        ];
        let hinted: Vec<Document> = coll
            .aggregate(pipeline.clone())
            .hint(mongodb::options::Hint::Name("g_1".into()))
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(hinted, vec![doc! {"n": 7}]);
        let explained = client
            .database("agghint")
            .run_command(
                doc! {"aggregate": coll.name(), "pipeline": pipeline.clone(),
                "explain": true, "hint": {"g": 1}},
            )
            .await
            .unwrap()
            .to_string();
        assert!(
            explained.contains("IXSCAN") && explained.contains("g_1"),
            "{explained}"
        );
        let err = coll
            .aggregate(pipeline)
            .hint(mongodb::options::Hint::Name("nope".into()))
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(2), "{err}");
    }
}

both_modes!(
    reshaping_and_blocking_stages,
    densify_and_fill,
    aggregate_hint
);
