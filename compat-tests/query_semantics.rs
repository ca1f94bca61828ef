//! MongoDB's smaller query and write rules end to end, on an unsharded and a sharded
//! collection: an upsert's fields from the filter in path order, null matching a path an array
//! leaves missing (`a.1` past the end, `a.b` through scalars or `[]`), a sparse unique index
//! skipping documents whose path is missing under an array, and parse errors for invalid
//! filters, operators and pipelines whether or not the database and collection exist.

use crate::harness::{both_modes, error_code, sorted_ids as ids};
use mongodb::bson::{Document, doc};
use mongodb::{Client, Database};

async fn upserts_nulls_and_sparse_indexes(client: &Client) {
    let db = client.database("query_semantics");
    db.drop().await.unwrap();
    client
        .database("admin")
        .run_command(doc! {"shardCollection": "query_semantics.sharded", "key": {"_id": 1}})
        .await
        .unwrap();
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        // The new document's fields come from the filter in the byte order of their paths;
        // the update's new fields follow them.
        coll.update_one(
            doc! {"z": 1, "b.y": 2, "_id": 7, "B": 3, "b.x": 4},
            doc! {"$set": {"c": 5}},
        )
        .upsert(true)
        .await
        .unwrap();
        let inserted = coll.find_one(doc! {"_id": 7}).await.unwrap().unwrap();
        let keys: Vec<&str> = inserted.keys().map(String::as_str).collect();
        assert_eq!(keys, ["_id", "B", "b", "z", "c"], "{name}");
        assert_eq!(inserted.get_document("b").unwrap(), &doc! {"x": 4, "y": 2});
        coll.delete_many(doc! {}).await.unwrap();

        coll.insert_many([
            doc! {"_id": 1, "a": [5]},
            doc! {"_id": 2, "a": [5, 6]},
            doc! {"_id": 3, "a": []},
            doc! {"_id": 4, "a": [5, null]},
            doc! {"_id": 5, "a": [1, 2]},
            doc! {"_id": 6, "a": [{"b": 1}]},
        ])
        .await
        .unwrap();
        for filter in [
            doc! {"a.1": null},
            doc! {"a.1": {"$lte": null}},
            doc! {"a.1": {"$gte": null}},
            doc! {"a.1": {"$in": [null, 9]}},
        ] {
            assert_eq!(
                ids(&coll, filter.clone()).await,
                [1, 3, 4, 6],
                "{name} {filter}"
            );
        }
        assert_eq!(
            ids(&coll, doc! {"a.1": {"$ne": null}}).await,
            [2, 5],
            "{name}"
        );
        assert_eq!(
            ids(&coll, doc! {"a.b": null}).await,
            [1, 2, 3, 4, 5],
            "{name}"
        );
        // The same through an index on the path.
        coll.create_index(mongodb::IndexModel::builder().keys(doc! {"a.1": 1}).build())
            .await
            .unwrap();
        assert_eq!(ids(&coll, doc! {"a.1": null}).await, [1, 3, 4, 6], "{name}");
        coll.delete_many(doc! {}).await.unwrap();

        // A sparse unique index on `x.b` skips documents where no element of `x` has `b` (a
        // unique index on a sharded collection must start with its shard key).
        if name == "sharded" {
            continue;
        }
        db.run_command(doc! {"createIndexes": name, "indexes": [
            {"key": {"x.b": 1}, "name": "x.b_1", "sparse": true, "unique": true}
        ]})
        .await
        .unwrap();
        coll.insert_many([
            doc! {"_id": 10, "x": []},
            doc! {"_id": 11, "x": []},
            doc! {"_id": 12, "x": [1, 2]},
            doc! {"_id": 13, "x": [{"c": 1}]},
            doc! {"_id": 14, "x": [{"b": null}]},
        ])
        .await
        .unwrap();
        let duplicate = coll
            .insert_one(doc! {"_id": 15, "x": {"b": null}})
            .await
            .unwrap_err();
        assert_eq!(error_code(&duplicate), Some(11000), "{name}");
    }
}

/// A command's error code: the command's own, or its first write error's.
async fn code_of(db: &Database, command: Document) -> i32 {
    match db.run_command(command.clone()).await {
        Err(e) => error_code(&e).unwrap_or_else(|| panic!("{command}: {e:?}")),
        Ok(reply) => reply
            .get_array("writeErrors")
            .ok()
            .and_then(|errors| errors.first())
            .and_then(|e| e.as_document())
            .and_then(|e| e.get_i32("code").ok())
            .unwrap_or_else(|| panic!("{command} succeeded: {reply}")),
    }
}

async fn parse_errors_do_not_depend_on_data(client: &Client) {
    let existing = client.database("query_semantics_parse");
    existing.drop().await.unwrap();
    existing
        .collection::<Document>("c")
        .insert_one(doc! {"_id": 1, "a": 1})
        .await
        .unwrap();
    let missing_db = client.database("query_semantics_nowhere");
    missing_db.drop().await.unwrap();
    let bad_filter = doc! {"a": {"$bogus": 1}};
    let cases = [
        (doc! {"find": "COLL", "filter": bad_filter.clone()}, 2),
        (
            doc! {"aggregate": "COLL", "pipeline": [{"$bogus": {}}], "cursor": {}},
            40324,
        ),
        (
            doc! {"aggregate": "COLL", "pipeline": [{"$match": bad_filter.clone()}], "cursor": {}},
            2,
        ),
        (doc! {"count": "COLL", "query": bad_filter.clone()}, 2),
        (
            doc! {"distinct": "COLL", "key": "a", "query": bad_filter.clone()},
            2,
        ),
        (
            doc! {"update": "COLL", "updates": [{"q": bad_filter.clone(), "u": {"$set": {"b": 1}}}]},
            2,
        ),
        (
            doc! {"update": "COLL", "updates": [{"q": {}, "u": {"$bogus": {"b": 1}}}]},
            9,
        ),
        (
            doc! {"delete": "COLL", "deletes": [{"q": bad_filter.clone(), "limit": 0}]},
            2,
        ),
        (
            doc! {"findAndModify": "COLL", "query": bad_filter.clone(), "remove": true},
            2,
        ),
        (
            doc! {"findAndModify": "COLL", "query": {}, "update": {"$bogus": {"b": 1}}},
            9,
        ),
    ];
    for (command, code) in cases {
        for (db, coll) in [(&existing, "c"), (&existing, "none"), (&missing_db, "none")] {
            let mut command = command.clone();
            let first = command.keys().next().unwrap().clone();
            command.insert(first, coll);
            assert_eq!(
                code_of(db, command.clone()).await,
                code,
                "{} {command}",
                db.name()
            );
        }
    }
    // Nothing was created by the refused commands.
    let names = missing_db.list_collection_names().await.unwrap();
    assert!(names.is_empty(), "{names:?}");
}

both_modes!(
    upserts_nulls_and_sparse_indexes,
    parse_errors_do_not_depend_on_data
);
