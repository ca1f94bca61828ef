//! find's index-related options: `min`/`max` with `hint`, `returnKey`, `showRecordId`, and
//! `hint` on update, delete and findAndModify.

use crate::harness::{both_modes, error_code, first_batch};
use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::{Client, Database, IndexModel};

async fn setup(client: &Client) -> Database {
    let db = client.database("find_options");
    let coll = db.collection::<Document>("c");
    let docs: Vec<Document> = (0..30)
        .map(|i| doc! {"_id": i, "a": i % 10, "b": i, "tags": [i % 3, 10 + i % 4]})
        .collect();
    coll.insert_many(docs).await.unwrap();
    for keys in [doc! {"a": 1, "b": -1}, doc! {"tags": 1}] {
        coll.create_index(IndexModel::builder().keys(keys).build())
            .await
            .unwrap();
    }
    db
}

async fn find(db: &Database, command: Document) -> Vec<Document> {
    let mut full = doc! {"find": "c", "batchSize": 1000};
    full.extend(command);
    let reply = db.run_command(full).await.unwrap();
    first_batch(&reply)
}

fn ids(docs: &[Document]) -> Vec<i32> {
    docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
}

async fn min_max_and_keys(client: &Client) {
    let db = setup(client).await;
    // [min, max) in the index's order: a ascending, then b descending.
    let docs = find(
        &db,
        doc! {"hint": {"a": 1, "b": -1}, "min": {"a": 2, "b": 12}, "max": {"a": 4, "b": 100}},
    )
    .await;
    assert_eq!(ids(&docs), vec![12, 2, 23, 13, 3]);
    let docs = find(
        &db,
        doc! {"hint": "a_1_b_-1", "max": {"a": 1, "b": 100}, "filter": {"b": {"$lt": 15}}},
    )
    .await;
    assert_eq!(ids(&docs), vec![10, 0]);
    for (command, code) in [
        (doc! {"min": {"a": 1, "b": 1}}, 51173),
        (doc! {"hint": {"a": 1, "b": -1}, "min": {"a": 1}}, 51174),
        (
            doc! {"hint": {"a": 1, "b": -1}, "min": {"b": 1, "a": 1}},
            51174,
        ),
        (
            doc! {"hint": {"a": 1, "b": -1}, "min": {"a": 5, "b": 1}, "max": {"a": 4, "b": 1}},
            51175,
        ),
    ] {
        let mut full = doc! {"find": "c"};
        full.extend(command);
        let err = db.run_command(full).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code));
    }

    // returnKey: the key the document was found by; a collection scan has none.
    let docs = find(
        &db,
        doc! {"filter": {"a": 7}, "returnKey": true, "sort": {"b": -1}},
    )
    .await;
    assert_eq!(
        docs,
        vec![
            doc! {"a": 7, "b": 27},
            doc! {"a": 7, "b": 17},
            doc! {"a": 7, "b": 7}
        ]
    );
    let docs = find(
        &db,
        doc! {"filter": {"tags": 12}, "returnKey": true, "limit": 2},
    )
    .await;
    assert_eq!(docs, vec![doc! {"tags": 12}, doc! {"tags": 12}]);
    let docs = find(&db, doc! {"filter": {"b": 3}, "returnKey": true}).await;
    assert_eq!(docs, vec![doc! {}]);

    // showRecordId: `$recordId` after the projected fields, through sorts too.
    let docs = find(
        &db,
        doc! {"filter": {"_id": {"$lt": 3}}, "showRecordId": true, "projection": {"a": 1}},
    )
    .await;
    assert_eq!(docs.len(), 3);
    for d in &docs {
        let keys: Vec<&String> = d.keys().collect();
        assert_eq!(keys, ["_id", "a", "$recordId"]);
        assert!(matches!(d.get("$recordId"), Some(Bson::Int64(_))));
    }
    let sorted = find(
        &db,
        doc! {"sort": {"b": -1}, "showRecordId": true, "limit": 2},
    )
    .await;
    assert_eq!(ids(&sorted), vec![29, 28]);
    assert!(sorted.iter().all(|d| d.get_i64("$recordId").is_ok()));
}

async fn write_hints(client: &Client) {
    let db = setup(client).await;
    let coll = db.collection::<Document>("c");
    let reply = db
        .run_command(doc! {"update": "c", "updates": [{"q": {"a": 1}, "u": {"$set": {"x": 1}}, "multi": true, "hint": "a_1_b_-1"}]})
        .await
        .unwrap();
    assert_eq!(reply.get_i32("nModified").unwrap(), 3);
    let reply = db
        .run_command(doc! {"delete": "c", "deletes": [{"q": {"a": 2}, "limit": 0, "hint": {"a": 1, "b": -1}}]})
        .await
        .unwrap();
    assert_eq!(reply.get_i32("n").unwrap(), 3);
    let reply = db
        .run_command(doc! {"findAndModify": "c", "query": {"a": 3}, "sort": {"b": 1}, "update": {"$set": {"y": 1}}, "hint": "a_1_b_-1", "new": true})
        .await
        .unwrap();
    assert_eq!(
        reply.get_document("value").unwrap().get_i32("_id").unwrap(),
        3
    );
    // A hint naming no index is an error for writes too.
    let reply = db
        .run_command(
            doc! {"update": "c", "updates": [{"q": {}, "u": {"$set": {"x": 2}}, "hint": "nope"}]},
        )
        .await
        .unwrap();
    let errors = reply.get_array("writeErrors").unwrap();
    assert_eq!(errors[0].as_document().unwrap().get_i32("code").unwrap(), 2);
    let err = db
        .run_command(doc! {"findAndModify": "c", "query": {}, "remove": true, "hint": "nope"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(2));
    let remaining: Vec<Document> = coll
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(remaining.len(), 27);
}

both_modes!(min_max_and_keys, write_hints);

async fn natural_order_and_new_index_rules(client: &Client) {
    let db = client.database("find_options_natural");
    let coll = db.collection::<Document>("c");
    coll.insert_many(vec![doc! {"_id": 3}, doc! {"_id": 1}, doc! {"_id": 2}])
        .await
        .unwrap();
    assert_eq!(
        ids(&find_in(&db, doc! {"sort": {"$natural": -1}}).await),
        vec![2, 1, 3]
    );
    assert_eq!(
        ids(&find_in(&db, doc! {"hint": {"$natural": -1}}).await),
        vec![2, 1, 3]
    );
    assert_eq!(
        ids(&find_in(&db, doc! {"sort": {"$natural": 1}}).await),
        vec![3, 1, 2]
    );
    let explain = db
        .run_command(
            doc! {"explain": {"find": "c", "sort": {"$natural": -1}}, "verbosity": "queryPlanner"},
        )
        .await
        .unwrap();
    let shard_plan = explain
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
    assert_eq!(shard_plan.get_str("direction").unwrap(), "backward");
    // Rules only new indexes follow.
    for (spec, code) in [
        (
            doc! {"key": {"h": "hashed"}, "name": "h_hashed", "unique": true},
            16764,
        ),
        (doc! {"key": {"q": 1}, "name": "*"}, 2),
        (
            doc! {"key": {"r": 1}, "name": "r_1", "partialFilterExpression": {"r": {"$regex": "x"}}},
            67,
        ),
        (
            doc! {"key": {"_id": 1}, "name": "_id_", "unique": true},
            197,
        ),
    ] {
        let err = db
            .run_command(doc! {"createIndexes": "c", "indexes": [spec]})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(code));
    }
}

async fn find_in(db: &Database, command: Document) -> Vec<Document> {
    let mut full = doc! {"find": "c"};
    full.extend(command);
    let reply = db.run_command(full).await.unwrap();
    first_batch(&reply)
}

both_modes!(natural_order_and_new_index_rules);
