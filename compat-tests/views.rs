//! Views: `create` with `viewOn`/`pipeline`, reads through them (find, count, distinct,
//! aggregate, views on views), `listCollections`, and MongoDB's errors for writes and cycles.

use crate::harness::{both_modes, error_code};
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
    let views: Vec<Document> = listed
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .map(|d| d.as_document().unwrap().clone())
        .collect();
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

both_modes!(reads_through_views, views_refuse_writes_and_cycles);
