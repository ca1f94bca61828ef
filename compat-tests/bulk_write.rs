//! The 8.0 `bulkWrite` command through the driver's `Client::bulk_write` and directly: mixed
//! operations across databases and collections, per-operation results, ordered and unordered
//! error handling, `errorsOnly`, and MongoDB's validation errors.

use crate::harness::{admin, both_modes, error_code};
use mongodb::bson::{Bson, Document, doc};
use mongodb::options::{
    DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel, UpdateManyModel,
    UpdateOneModel, WriteModel,
};
use mongodb::{Client, Namespace};

fn ns(db: &str, coll: &str) -> Namespace {
    Namespace::new(db, coll)
}

async fn mixed_namespaces(client: &Client) {
    let a = ns("bw_a", "c0");
    let b = ns("bw_a", "c1");
    let c = ns("bw_b", "c2");
    let models: Vec<WriteModel> = vec![
        InsertOneModel::builder()
            .namespace(a.clone())
            .document(doc! {"_id": 1, "x": 1})
            .build()
            .into(),
        InsertOneModel::builder()
            .namespace(a.clone())
            .document(doc! {"_id": 2, "x": 2})
            .build()
            .into(),
        InsertOneModel::builder()
            .namespace(c.clone())
            .document(doc! {"_id": 3, "x": 3})
            .build()
            .into(),
        InsertOneModel::builder()
            .namespace(c.clone())
            .document(doc! {"_id": 4, "x": 4})
            .build()
            .into(),
        UpdateOneModel::builder()
            .namespace(a.clone())
            .filter(doc! {"_id": 1})
            .update(doc! {"$inc": {"x": 10}})
            .build()
            .into(),
        UpdateManyModel::builder()
            .namespace(a.clone())
            .filter(doc! {})
            .update(doc! {"$set": {"y": true}})
            .build()
            .into(),
        UpdateOneModel::builder()
            .namespace(b.clone())
            .filter(doc! {"_id": 9})
            .update(doc! {"$set": {"z": 1}})
            .upsert(true)
            .build()
            .into(),
        ReplaceOneModel::builder()
            .namespace(c.clone())
            .filter(doc! {"_id": 4})
            .replacement(doc! {"x": 45})
            .build()
            .into(),
        DeleteOneModel::builder()
            .namespace(c.clone())
            .filter(doc! {"_id": 3})
            .build()
            .into(),
        DeleteManyModel::builder()
            .namespace(ns("bw_none", "c"))
            .filter(doc! {})
            .build()
            .into(),
    ];
    let result = client.bulk_write(models).verbose_results().await.unwrap();
    assert_eq!(result.summary.inserted_count, 4);
    assert_eq!(result.summary.matched_count, 4);
    assert_eq!(result.summary.modified_count, 4);
    assert_eq!(result.summary.upserted_count, 1);
    assert_eq!(result.summary.deleted_count, 1);
    assert_eq!(result.update_results[&6].upserted_id, Some(Bson::Int32(9)));
    assert_eq!(result.update_results[&5].matched_count, 2);
    assert_eq!(result.delete_results[&9].deleted_count, 0);

    let docs = |db: &str, coll: &str| {
        let coll = client.database(db).collection::<Document>(coll);
        async move {
            let mut cursor = coll.find(doc! {}).sort(doc! {"_id": 1}).await.unwrap();
            let mut out = Vec::new();
            while cursor.advance().await.unwrap() {
                out.push(cursor.deserialize_current().unwrap());
            }
            out
        }
    };
    assert_eq!(
        docs("bw_a", "c0").await,
        vec![
            doc! {"_id": 1, "x": 11, "y": true},
            doc! {"_id": 2, "x": 2, "y": true}
        ]
    );
    assert_eq!(docs("bw_a", "c1").await, vec![doc! {"_id": 9, "z": 1}]);
    assert_eq!(docs("bw_b", "c2").await, vec![doc! {"_id": 4, "x": 45}]);
    let names = client.list_database_names().await.unwrap();
    assert!(
        !names.contains(&"bw_none".to_string()),
        "deletes create nothing"
    );
}

async fn errors_ordered_and_unordered(client: &Client) {
    let db = client.database("bw_err");
    db.collection::<Document>("c")
        .insert_one(doc! {"_id": 1})
        .await
        .unwrap();
    let ops = vec![
        doc! {"insert": 0, "document": {"_id": 2}},
        doc! {"insert": 0, "document": {"_id": 1}},
        doc! {"insert": 1, "document": {"_id": 5}},
        doc! {"update": 0, "filter": {"_id": 2}, "updateMods": {"$set": {"a": 1}}},
    ];
    let ns_info = vec![doc! {"ns": "bw_err.c"}, doc! {"ns": "bw_err2.d"}];

    // Ordered: stops at the duplicate key; later operations never run.
    let reply = admin(
        client,
        doc! {"bulkWrite": 1, "ops": ops.clone(), "nsInfo": ns_info.clone()},
    )
    .await
    .unwrap();
    assert_eq!(reply.get_i32("nErrors").unwrap(), 1);
    assert_eq!(reply.get_i32("nInserted").unwrap(), 1);
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(batch.len(), 2);
    let failed = batch[1].as_document().unwrap();
    assert_eq!(failed.get_i32("idx").unwrap(), 1);
    assert_eq!(failed.get_i32("code").unwrap(), 11000);
    assert_eq!(failed.get_document("keyValue").unwrap(), &doc! {"_id": 1});
    assert_eq!(
        reply.get_document("cursor").unwrap().get_str("ns").unwrap(),
        "admin.$cmd.bulkWrite"
    );
    assert!(
        !client
            .list_database_names()
            .await
            .unwrap()
            .contains(&"bw_err2".to_string())
    );

    // Unordered: every operation runs; errorsOnly returns only the failure.
    db.collection::<Document>("c")
        .delete_many(doc! {"_id": 2})
        .await
        .unwrap();
    let reply = admin(
        client,
        doc! {"bulkWrite": 1, "ops": ops, "nsInfo": ns_info, "ordered": false, "errorsOnly": true},
    )
    .await
    .unwrap();
    assert_eq!(reply.get_i32("nErrors").unwrap(), 1);
    assert_eq!(reply.get_i32("nInserted").unwrap(), 2);
    assert_eq!(reply.get_i32("nModified").unwrap(), 1);
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(batch.len(), 1);
    assert_eq!(batch[0].as_document().unwrap().get_i32("idx").unwrap(), 1);
    let other = client.database("bw_err2").collection::<Document>("d");
    assert_eq!(other.count_documents(doc! {}).await.unwrap(), 1);

    // The driver surfaces per-operation errors with the partial result.
    let models: Vec<WriteModel> = vec![
        InsertOneModel::builder()
            .namespace(ns("bw_err", "c"))
            .document(doc! {"_id": 1})
            .build()
            .into(),
    ];
    let err = client.bulk_write(models).await.unwrap_err();
    match *err.kind {
        mongodb::error::ErrorKind::BulkWrite(ref e) => {
            assert_eq!(e.write_errors[&0].code, 11000);
        }
        ref other => panic!("expected a bulk write error, got {other:?}"),
    }

    // Validation before anything runs.
    for (command, code) in [
        (
            doc! {"bulkWrite": 1, "ops": [{"insert": 3, "document": {}}], "nsInfo": [{"ns": "bw_err.c"}]},
            2,
        ),
        (
            doc! {"bulkWrite": 1, "ops": [{"insert": 0, "document": 5}], "nsInfo": [{"ns": "bw_err.c"}]},
            14,
        ),
        (doc! {"bulkWrite": 1, "nsInfo": [{"ns": "bw_err.c"}]}, 40414),
        (
            doc! {"bulkWrite": 1, "ops": [{"insert": 0, "document": {}}], "nsInfo": [{"ns": "bw_err.c"}], "ordered": "yes"},
            14,
        ),
    ] {
        let err = admin(client, command).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code));
    }
    let err = db
        .run_command(doc! {"bulkWrite": 1, "ops": [{"insert": 0, "document": {}}], "nsInfo": [{"ns": "bw_err.c"}]})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(13), "admin only");
    assert_eq!(
        db.collection::<Document>("c")
            .count_documents(doc! {})
            .await
            .unwrap(),
        2
    );
}

both_modes!(mixed_namespaces, errors_ordered_and_unordered);
