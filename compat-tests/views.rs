//! Views: `create` with `viewOn`/`pipeline`, reads through them (find, count, distinct,
//! aggregate, views on views), `listCollections`, and MongoDB's errors for writes, cycles
//! (through `viewOn` and what a view's pipeline reads) and chains deeper than 20 views.

use crate::harness::{both_modes, error_code, first_batch};
use futures::TryStreamExt;
use mongodb::Client;
use mongodb::bson::{Document, doc};

async fn reads_through_views(client: &Client) {
    let db = client.database("views_db");
    let people = db.collection::<Document>("people");
    people
        .insert_many(
            (0..20)
                .map(|i| doc! {"_id": i, "name": format!("p{i:02}"), "age": i * 5, "team": i % 3}),
        )
        .await
        .unwrap();
    db.run_command(doc! {
        "create": "adults",
        "viewOn": "people",
        "pipeline": [{"$match": {"age": {"$gte": 18}}}, {"$project": {"name": 1, "team": 1}}],
    })
    .await
    .unwrap();
    let adults = db.collection::<Document>("adults");
    let found: Vec<Document> = adults
        .find(doc! {"team": 1})
        .sort(doc! {"name": -1})
        .limit(3)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        found,
        vec![
            doc! {"_id": 19, "name": "p19", "team": 1},
            doc! {"_id": 16, "name": "p16", "team": 1},
            doc! {"_id": 13, "name": "p13", "team": 1},
        ]
    );
    assert_eq!(adults.count_documents(doc! {}).await.unwrap(), 16);
    assert_eq!(adults.estimated_document_count().await.unwrap(), 16);
    let teams = adults
        .distinct("team", doc! {"team": {"$ne": 0}})
        .await
        .unwrap();
    assert_eq!(teams.len(), 2);
    let grouped: Vec<Document> = adults
        .aggregate(vec![
            doc! {"$group": {"_id": "$team", "n": {"$sum": 1}}},
            doc! {"$sort": {"_id": 1}},
        ])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(grouped.len(), 3);

    // A view on a view: pipelines run innermost first.
    db.run_command(
        doc! {"create": "team0", "viewOn": "adults", "pipeline": [{"$match": {"team": 0}}]},
    )
    .await
    .unwrap();
    let team0: Vec<Document> = db
        .collection::<Document>("team0")
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(team0.len(), 5);
    assert!(team0.iter().all(|d| !d.contains_key("age")));

    let listed = db
        .run_command(doc! {"listCollections": 1, "filter": {"type": "view"}})
        .await
        .unwrap();
    let views = first_batch(&listed);
    assert_eq!(views.len(), 2);
    let adults_info = views
        .iter()
        .find(|v| v.get_str("name") == Ok("adults"))
        .unwrap();
    assert_eq!(
        adults_info
            .get_document("options")
            .unwrap()
            .get_str("viewOn")
            .unwrap(),
        "people"
    );
    assert!(
        adults_info
            .get_document("info")
            .unwrap()
            .get_bool("readOnly")
            .unwrap()
    );

    db.collection::<Document>("team0").drop().await.unwrap();
    let names = db.list_collection_names().await.unwrap();
    assert!(!names.contains(&"team0".to_string()));
    assert!(names.contains(&"adults".to_string()));
}

async fn views_refuse_writes_and_cycles(client: &Client) {
    let db = client.database("views_err");
    db.collection::<Document>("base")
        .insert_one(doc! {"_id": 1})
        .await
        .unwrap();
    db.run_command(doc! {"create": "v1", "viewOn": "base"})
        .await
        .unwrap();
    let v1 = db.collection::<Document>("v1");
    let code = |e: mongodb::error::Error| error_code(&e);
    assert_eq!(
        code(v1.insert_one(doc! {"_id": 2}).await.unwrap_err()),
        Some(166)
    );
    assert_eq!(
        code(
            v1.update_one(doc! {}, doc! {"$set": {"a": 1}})
                .await
                .unwrap_err()
        ),
        Some(166)
    );
    assert_eq!(code(v1.delete_many(doc! {}).await.unwrap_err()), Some(166));
    assert_eq!(
        code(
            db.run_command(
                doc! {"createIndexes": "v1", "indexes": [{"key": {"a": 1}, "name": "a_1"}]}
            )
            .await
            .unwrap_err()
        ),
        Some(166)
    );
    // Views may not lead back to themselves, and names are unique.
    db.run_command(doc! {"create": "v2", "viewOn": "v3"})
        .await
        .unwrap();
    assert_eq!(
        code(
            db.run_command(doc! {"create": "v3", "viewOn": "v2"})
                .await
                .unwrap_err()
        ),
        Some(5),
        "GraphContainsCycle"
    );
    // Nor through what their pipelines read (once a process crash: reading a view that
    // `$lookup`s itself recursed until the stack overflowed).
    let lookup = |from: &str| doc! {"$lookup": {"from": from, "pipeline": [], "as": "j"}};
    for pipeline in [
        vec![lookup("self")],
        vec![doc! {"$unionWith": {"coll": "base", "pipeline": [{"$unionWith": "self"}]}}],
        vec![doc! {"$facet": {"f": [lookup("self")]}}],
    ] {
        let create = doc! {"create": "self", "viewOn": "base", "pipeline": pipeline};
        let err = db.run_command(create).await.unwrap_err();
        assert_eq!(code(err), Some(5), "GraphContainsCycle");
    }
    // Chains of views: at most 20 deep, wherever a view joins them.
    for i in 1..=20 {
        let (name, next) = (format!("chain{i}"), format!("chain{}", i + 1));
        db.run_command(doc! {"create": &name, "viewOn": "base", "pipeline": [lookup(&next)]})
            .await
            .unwrap();
    }
    for (name, on) in [("chain0", "chain1"), ("chain21", "chain22")] {
        let err = db
            .run_command(doc! {"create": name, "viewOn": on})
            .await
            .unwrap_err();
        assert_eq!(code(err), Some(165), "ViewDepthLimitExceeded: {name}");
    }
    let deepest: Vec<Document> = db
        .collection::<Document>("chain1")
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(deepest.len(), 1);
    assert_eq!(
        code(
            db.run_command(doc! {"create": "v1", "viewOn": "base"})
                .await
                .unwrap_err()
        ),
        Some(48)
    );
    assert_eq!(
        code(
            db.run_command(doc! {"create": "v4", "viewOn": "base", "pipeline": [{"$out": "x"}]})
                .await
                .unwrap_err()
        ),
        Some(167)
    );
    assert_eq!(
        db.collection::<Document>("base")
            .count_documents(doc! {})
            .await
            .unwrap(),
        1
    );
}

/// A view over a collection sharded across both shards: the primary shard hands the read back
/// resolved and the router runs it over every shard — find (sorted, skipped, limited,
/// projected, with getMores under the view's name), count, distinct and aggregate see every
/// document once, as over an unsharded copy.
async fn views_over_sharded_collections(client: &Client) {
    use crate::harness::admin;
    let db = client.database("vsh");
    admin(
        client,
        doc! {"shardCollection": "vsh.src", "key": {"k": "hashed"}},
    )
    .await
    .unwrap();
    let docs: Vec<Document> = (0..300)
        .map(|i| doc! {"_id": i, "k": i, "g": i % 7, "tags": [i % 3, 10 + i % 2]})
        .collect();
    db.collection::<Document>("src")
        .insert_many(docs.clone())
        .await
        .unwrap();
    db.collection::<Document>("copy")
        .insert_many(docs)
        .await
        .unwrap();
    let pipeline = vec![
        doc! {"$match": {"g": {"$ne": 0}}},
        doc! {"$set": {"twice": {"$multiply": ["$k", 2]}}},
    ];
    for (view, on) in [("sv", "src"), ("cv", "copy")] {
        db.run_command(doc! {"create": view, "viewOn": on, "pipeline": pipeline.clone()})
            .await
            .unwrap();
    }
    // A view on the view stacks both pipelines.
    db.run_command(
        doc! {"create": "sv2", "viewOn": "sv", "pipeline": [{"$match": {"k": {"$lt": 100}}}]},
    )
    .await
    .unwrap();
    let (sharded, copy) = (
        db.collection::<Document>("sv"),
        db.collection::<Document>("cv"),
    );
    for filter in [doc! {}, doc! {"g": 3}, doc! {"k": {"$gte": 150}}] {
        let read = |c: mongodb::Collection<Document>, f: Document| async move {
            c.find(f)
                .sort(doc! {"twice": -1})
                .skip(5)
                .limit(150)
                .projection(doc! {"g": 1, "twice": 1})
                .batch_size(20)
                .await
                .unwrap()
                .try_collect::<Vec<_>>()
                .await
                .unwrap()
        };
        let got = read(sharded.clone(), filter.clone()).await;
        assert!(!got.is_empty());
        assert_eq!(got, read(copy.clone(), filter.clone()).await, "{filter}");
        assert_eq!(
            sharded.count_documents(filter.clone()).await.unwrap(),
            copy.count_documents(filter.clone()).await.unwrap()
        );
    }
    assert_eq!(sharded.count_documents(doc! {}).await.unwrap(), 257);
    let distinct = sharded
        .distinct("tags", doc! {"g": {"$gt": 3}})
        .await
        .unwrap();
    assert_eq!(
        distinct,
        copy.distinct("tags", doc! {"g": {"$gt": 3}}).await.unwrap()
    );
    assert_eq!(distinct.len(), 5);
    let grouped = |c: mongodb::Collection<Document>| async move {
        c.aggregate([
            doc! {"$group": {"_id": "$g", "n": {"$sum": 1}}},
            doc! {"$sort": {"_id": 1}},
        ])
        .await
        .unwrap()
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
    };
    assert_eq!(grouped(sharded.clone()).await, grouped(copy.clone()).await);
    let stacked = db.collection::<Document>("sv2");
    assert_eq!(stacked.count_documents(doc! {}).await.unwrap(), 85);
    // Writes to the view are still refused.
    let err = sharded.insert_one(doc! {"k": 1}).await.unwrap_err();
    assert_eq!(error_code(&err), Some(166));
}

both_modes!(
    reads_through_views,
    views_refuse_writes_and_cycles,
    views_over_sharded_collections
);
