//! Stages that reach other collections, end to end through the router: `$lookup` (equality,
//! sub-pipeline with `let`, both, uncorrelated), `$graphLookup`, `$unionWith` and `$documents`
//! reading sharded and unsharded collections, and `$out`/`$merge` writing them, with MongoDB's
//! errors for targets they may not write.

use crate::harness::{admin, aggregate_documents as run, aggregate_error as run_err, both_modes};
use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::{Client, Database};

async fn shard(client: &Client, ns: &str, key: Document) {
    admin(client, doc! {"shardCollection": ns, "key": key})
        .await
        .unwrap();
}

/// The manual's `orders` and `inventory`, the orders sharded, the inventory both unsharded
/// and sharded.
async fn orders_and_inventory(client: &Client) -> Database {
    let db = client.database("lookups");
    db.drop().await.unwrap();
    shard(client, "lookups.orders", doc! {"_id": "hashed"}).await;
    shard(client, "lookups.inventory_sharded", doc! {"sku": "hashed"}).await;
    db.collection::<Document>("orders")
        .insert_many(vec![
            doc! {"_id": 1, "item": "almonds", "price": 12, "quantity": 2},
            doc! {"_id": 2, "item": "pecans", "price": 20, "quantity": 1},
            doc! {"_id": 3},
        ])
        .await
        .unwrap();
    let inventory = vec![
        doc! {"_id": 1, "sku": "almonds", "description": "product 1", "instock": 120},
        doc! {"_id": 2, "sku": "bread", "description": "product 2", "instock": 80},
        doc! {"_id": 3, "sku": "cashews", "description": "product 3", "instock": 60},
        doc! {"_id": 4, "sku": "pecans", "description": "product 4", "instock": 70},
        doc! {"_id": 5, "sku": Bson::Null, "description": "Incomplete"},
        doc! {"_id": 6},
    ];
    for name in ["inventory", "inventory_sharded"] {
        db.collection::<Document>(name)
            .insert_many(inventory.clone())
            .await
            .unwrap();
    }
    db
}

/// The `_id`s of the documents in array field `field` of each output document, in order.
fn joined_ids(docs: &[Document], field: &str) -> Vec<Vec<i32>> {
    docs.iter()
        .map(|d| {
            let mut ids: Vec<i32> = d
                .get_array(field)
                .unwrap()
                .iter()
                .map(|j| j.as_document().unwrap().get_i32("_id").unwrap())
                .collect();
            ids.sort();
            ids
        })
        .collect()
}

async fn lookups_join_sharded_and_unsharded_collections(client: &Client) {
    let db = orders_and_inventory(client).await;
    let orders = db.collection::<Document>("orders");
    for from in ["inventory", "inventory_sharded"] {
        // Equality: a missing `item` joins the null and the missing `sku`.
        let out = run(
            &orders,
            vec![
                doc! {"$lookup": {"from": from, "localField": "item", "foreignField": "sku", "as": "inventory_docs"}},
                doc! {"$sort": {"_id": 1}},
            ],
        )
        .await;
        assert_eq!(
            joined_ids(&out, "inventory_docs"),
            vec![vec![1], vec![4], vec![5, 6]],
            "{from}"
        );
        assert_eq!(out[0].get_i32("price").unwrap(), 12, "the input is kept");

        // A sub-pipeline reading the order through `let`.
        let out = run(
            &orders,
            vec![
                doc! {"$match": {"_id": {"$lte": 2}}},
                doc! {"$lookup": {"from": from, "let": {"want": "$item", "qty": "$quantity"},
                    "pipeline": [
                        {"$match": {"$expr": {"$and": [{"$eq": ["$sku", "$$want"]}, {"$gte": ["$instock", "$$qty"]}]}}},
                        {"$project": {"_id": 0, "sku": 1, "left": {"$subtract": ["$instock", "$$qty"]}}}
                    ],
                    "as": "stock"}},
                doc! {"$sort": {"_id": 1}},
                doc! {"$project": {"stock": 1}},
            ],
        )
        .await;
        assert_eq!(
            out,
            vec![
                doc! {"_id": 1, "stock": [{"sku": "almonds", "left": 118}]},
                doc! {"_id": 2, "stock": [{"sku": "pecans", "left": 69}]},
            ],
            "{from}"
        );

        // Both: the equality first, then the pipeline over what it joined.
        let out = run(
            &orders,
            vec![
                doc! {"$lookup": {"from": from, "localField": "item", "foreignField": "sku",
                "pipeline": [{"$project": {"description": 1}}], "as": "d"}},
                doc! {"$sort": {"_id": 1}},
            ],
        )
        .await;
        assert_eq!(
            out[1].get_array("d").unwrap(),
            &vec![Bson::Document(doc! {"_id": 4, "description": "product 4"})],
            "{from}"
        );

        // Uncorrelated: the same result for every order.
        let out = run(
            &orders,
            vec![doc! {"$lookup": {"from": from, "pipeline": [{"$count": "n"}], "as": "total"}}],
        )
        .await;
        assert_eq!(out.len(), 3);
        for doc in out {
            assert_eq!(
                doc.get_array("total").unwrap(),
                &vec![Bson::Document(doc! {"n": 6})]
            );
        }
    }
    // A `$lookup` inside `$facet`, and a nested one inside a `$lookup`.
    let out = run(
        &orders,
        vec![
            doc! {"$match": {"_id": 1}},
            doc! {"$facet": {"joined": [
                {"$lookup": {"from": "inventory_sharded", "localField": "item", "foreignField": "sku", "as": "inv"}},
                {"$project": {"n": {"$size": "$inv"}}}
            ]}},
        ],
    )
    .await;
    assert_eq!(out, vec![doc! {"joined": [{"_id": 1, "n": 1}]}]);
    let out = run(
        &orders,
        vec![
            doc! {"$match": {"_id": 2}},
            doc! {"$lookup": {"from": "inventory", "let": {"item": "$item"}, "pipeline": [
                {"$match": {"$expr": {"$eq": ["$sku", "$$item"]}}},
                {"$lookup": {"from": "orders", "localField": "sku", "foreignField": "item", "as": "orders"}},
                {"$project": {"_id": 0, "n": {"$size": "$orders"}, "item": "$$item"}}
            ], "as": "back"}},
        ],
    )
    .await;
    assert_eq!(
        out[0].get_array("back").unwrap(),
        &vec![Bson::Document(doc! {"n": 1, "item": "pecans"})]
    );
    assert_eq!(
        run_err(
            &orders,
            vec![doc! {"$lookup": {"from": "inventory", "pipeline": [{"$out": "x"}], "as": "y"}}]
        )
        .await,
        Some(51047)
    );
    // Explain: the shards explain the part before the `$lookup`, which the router runs.
    let lookup = doc! {"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku", "as": "i"}};
    let explained = db
        .run_command(doc! {"aggregate": "orders", "explain": true,
        "pipeline": [{"$match": {"price": {"$gt": 1}}}, lookup.clone()]})
        .await
        .unwrap();
    assert_eq!(explained.get_str("mergeType").unwrap(), "mongos");
    let split = explained.get_document("splitPipeline").unwrap();
    assert_eq!(
        split.get_array("shardsPart").unwrap(),
        &vec![Bson::Document(doc! {"$match": {"price": {"$gt": 1}}})]
    );
    assert_eq!(
        split.get_array("mergerPart").unwrap(),
        &vec![Bson::Document(lookup)]
    );
    assert_eq!(
        run_err(
            &orders,
            vec![doc! {"$lookup": {"from": "inventory", "localField": "item", "as": "y"}}]
        )
        .await,
        Some(9)
    );
}

async fn graph_lookup_and_union_with(client: &Client) {
    let db = client.database("graphs");
    db.drop().await.unwrap();
    shard(client, "graphs.employees", doc! {"_id": "hashed"}).await;
    let employees = db.collection::<Document>("employees");
    employees
        .insert_many(vec![
            doc! {"_id": 1, "name": "Dev"},
            doc! {"_id": 2, "name": "Eliot", "reportsTo": "Dev"},
            doc! {"_id": 3, "name": "Ron", "reportsTo": "Eliot"},
            doc! {"_id": 4, "name": "Andrew", "reportsTo": "Eliot"},
            doc! {"_id": 5, "name": "Asya", "reportsTo": "Ron"},
            doc! {"_id": 6, "name": "Dan", "reportsTo": "Andrew"},
        ])
        .await
        .unwrap();
    let hierarchy = |max_depth: Option<i32>| {
        let mut spec = doc! {"from": "employees", "startWith": "$reportsTo",
        "connectFromField": "reportsTo", "connectToField": "name",
        "as": "chain", "depthField": "depth"};
        if let Some(max) = max_depth {
            spec.insert("maxDepth", max);
        }
        vec![
            doc! {"$match": {"name": "Asya"}},
            doc! {"$graphLookup": spec},
            doc! {"$unwind": "$chain"},
            doc! {"$sort": {"chain.depth": 1}},
            doc! {"$project": {"_id": 0, "name": "$chain.name", "depth": "$chain.depth"}},
        ]
    };
    assert_eq!(
        run(&employees, hierarchy(None)).await,
        vec![
            doc! {"name": "Ron", "depth": 0_i64},
            doc! {"name": "Eliot", "depth": 1_i64},
            doc! {"name": "Dev", "depth": 2_i64},
        ]
    );
    assert_eq!(run(&employees, hierarchy(Some(1))).await.len(), 2);
    assert_eq!(
        run_err(
            &employees,
            vec![doc! {"$graphLookup": {"from": "employees", "startWith": "$x", "connectFromField": "a",
                "connectToField": "b", "as": "c", "maxDepth": -1}}]
        )
        .await,
        Some(40101)
    );

    // `$unionWith`: the sharded employees, then an unsharded collection through a pipeline.
    let contractors = db.collection::<Document>("contractors");
    contractors
        .insert_many(vec![
            doc! {"_id": 10, "name": "Zoe", "rate": 90},
            doc! {"_id": 11, "name": "Yan", "rate": 40},
        ])
        .await
        .unwrap();
    let out = run(
        &employees,
        vec![
            doc! {"$project": {"_id": 0, "name": 1}},
            doc! {"$unionWith": {"coll": "contractors", "pipeline": [
                {"$match": {"rate": {"$gt": 50}}}, {"$project": {"_id": 0, "name": 1}}
            ]}},
            doc! {"$unionWith": "contractors"},
            doc! {"$group": {"_id": null, "names": {"$addToSet": "$name"}, "n": {"$sum": 1}}},
        ],
    )
    .await;
    assert_eq!(out[0].get_i32("n").unwrap(), 6 + 1 + 2);
    assert_eq!(out[0].get_array("names").unwrap().len(), 8);
    assert_eq!(
        run_err(
            &employees,
            vec![doc! {"$unionWith": {"coll": "contractors", "pipeline": [{"$merge": "x"}]}}]
        )
        .await,
        Some(31441)
    );

    // `$documents`: a collection-less pipeline, also as a `$unionWith` source.
    let docs: Vec<Document> = db
        .aggregate(vec![
            doc! {"$documents": [{"x": 1}, {"x": 2}, {"x": 3}]},
            doc! {"$match": {"x": {"$gte": 2}}},
            doc! {"$unionWith": {"pipeline": [{"$documents": [{"x": 10}]}]}},
        ])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(docs, vec![doc! {"x": 2}, doc! {"x": 3}, doc! {"x": 10}]);
    assert_eq!(
        run_err(&employees, vec![doc! {"$documents": [{"x": 1}]}]).await,
        Some(73)
    );
    assert_eq!(
        run_err(
            &employees,
            vec![doc! {"$match": {}}, doc! {"$documents": []}]
        )
        .await,
        Some(40602)
    );
}

async fn out_and_merge_write_collections(client: &Client) {
    let db = client.database("writers");
    db.drop().await.unwrap();
    shard(client, "writers.sales", doc! {"_id": "hashed"}).await;
    let sales = db.collection::<Document>("sales");
    sales
        .insert_many(
            (0..40)
                .map(|i| doc! {"_id": i, "item": format!("i{}", i % 4), "qty": i})
                .collect::<Vec<_>>(),
        )
        .await
        .unwrap();
    let totals = || {
        vec![
            doc! {"$group": {"_id": "$item", "total": {"$sum": "$qty"}}},
            doc! {"$sort": {"_id": 1}},
        ]
    };

    // `$out` replaces the target's documents and keeps its indexes.
    let report = db.collection::<Document>("report");
    report.insert_one(doc! {"_id": "stale"}).await.unwrap();
    report
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! {"total": 1})
                .build(),
        )
        .await
        .unwrap();
    let mut pipeline = totals();
    pipeline.push(doc! {"$out": "report"});
    assert!(run(&sales, pipeline).await.is_empty());
    let written = run(&report, vec![doc! {"$sort": {"_id": 1}}]).await;
    assert_eq!(written.len(), 4);
    assert_eq!(written[0], doc! {"_id": "i0", "total": 180});
    let names: Vec<String> = report.list_index_names().await.unwrap();
    assert!(names.contains(&"total_1".to_string()), "{names:?}");
    let leftovers = db
        .list_collection_names()
        .await
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("tmp.agg_out."))
        .count();
    assert_eq!(leftovers, 0);

    // `$out` refuses a sharded target and must come last.
    let mut pipeline = totals();
    pipeline.push(doc! {"$out": "sales"});
    assert_eq!(run_err(&sales, pipeline).await, Some(28769));
    assert_eq!(
        run_err(&sales, vec![doc! {"$out": "x"}, doc! {"$match": {}}]).await,
        Some(40601)
    );

    // `$merge` into a sharded target, matched on `_id` (the shard key).
    shard(client, "writers.rollup", doc! {"_id": "hashed"}).await;
    let rollup = db.collection::<Document>("rollup");
    rollup
        .insert_one(doc! {"_id": "i1", "total": -1, "note": "kept"})
        .await
        .unwrap();
    let mut pipeline = totals();
    pipeline.push(
        doc! {"$merge": {"into": "rollup", "whenMatched": "merge", "whenNotMatched": "insert"}},
    );
    assert!(run(&sales, pipeline).await.is_empty());
    let merged = run(&rollup, vec![doc! {"$sort": {"_id": 1}}]).await;
    assert_eq!(merged.len(), 4);
    assert_eq!(merged[1], doc! {"_id": "i1", "total": 190, "note": "kept"});

    // A pipeline `whenMatched` reads the existing document and `$$new`.
    let mut pipeline = totals();
    pipeline.push(doc! {"$merge": {"into": "rollup", "whenMatched": [
        {"$set": {"total": {"$add": ["$total", "$$new.total"]}}}
    ], "whenNotMatched": "discard"}});
    run(&sales, pipeline).await;
    let merged = run(&rollup, vec![doc! {"$match": {"_id": "i1"}}]).await;
    assert_eq!(merged[0].get_i32("total").unwrap(), 380);

    // `whenMatched: fail` and `whenNotMatched: fail` report what they found.
    let mut pipeline = totals();
    pipeline.push(doc! {"$merge": {"into": "rollup", "whenMatched": "fail"}});
    assert_eq!(run_err(&sales, pipeline).await, Some(11000));
    let mut pipeline = totals();
    pipeline.push(
        doc! {"$merge": {"into": "fresh", "whenMatched": "replace", "whenNotMatched": "fail"}},
    );
    assert_eq!(run_err(&sales, pipeline).await, Some(13113));

    // `on` fields need a unique index; then documents match on them.
    let keyed = db.collection::<Document>("keyed");
    keyed
        .insert_one(doc! {"item": "i2", "old": true})
        .await
        .unwrap();
    let mut pipeline = totals();
    pipeline.push(doc! {"$project": {"_id": 0, "item": "$_id", "total": 1}});
    pipeline.push(doc! {"$merge": {"into": "keyed", "on": "item"}});
    assert_eq!(run_err(&sales, pipeline.clone()).await, Some(51183));
    keyed
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! {"item": 1})
                .options(
                    mongodb::options::IndexOptions::builder()
                        .unique(true)
                        .build(),
                )
                .build(),
        )
        .await
        .unwrap();
    run(&sales, pipeline).await;
    let keyed_docs = run(
        &keyed,
        vec![doc! {"$sort": {"item": 1}}, doc! {"$project": {"_id": 0}}],
    )
    .await;
    assert_eq!(keyed_docs.len(), 4);
    assert_eq!(
        keyed_docs[2],
        doc! {"item": "i2", "old": true, "total": 200}
    );
    assert_eq!(
        run_err(&sales, vec![doc! {"$merge": {"into": "x", "whenMatched": "keepExisting", "whenNotMatched": "fail"}}]).await,
        Some(51181)
    );
}

both_modes!(
    lookups_join_sharded_and_unsharded_collections,
    graph_lookup_and_union_with,
    out_and_merge_write_collections
);
