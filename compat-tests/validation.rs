//! Document validation (`validator`, `validationLevel`, `validationAction`,
//! `bypassDocumentValidation`) on every write path, and `collMod` for validation options and
//! index TTL/visibility.

use crate::harness::{both_modes, error_code, first_batch};
use mongodb::bson::{Bson, Document, doc};
use mongodb::options::IndexOptions;
use mongodb::{Client, IndexModel};
use std::time::Duration;

fn write_error_code(reply: &Document) -> Option<i32> {
    reply
        .get_array("writeErrors")
        .ok()
        .and_then(|e| e.first())
        .and_then(|e| e.as_document())
        .and_then(|e| e.get_i32("code").ok())
}

async fn validators_guard_every_write(client: &Client) {
    let db = client.database("validation");
    db.run_command(
        doc! {"create": "people", "validator": {"age": {"$gte": 0}, "name": {"$type": "string"}}},
    )
    .await
    .unwrap();
    let options = crate::harness::collection_options(&db, "people").await;
    assert_eq!(options.get_str("validationLevel").unwrap(), "strict");
    assert_eq!(options.get_str("validationAction").unwrap(), "error");

    let coll = db.collection::<Document>("people");
    coll.insert_one(doc! {"_id": 1, "name": "ann", "age": 30})
        .await
        .unwrap();
    let err = coll
        .insert_one(doc! {"_id": 2, "name": "bob", "age": -1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(121));
    // The write error names the failing document.
    let reply = db
        .run_command(doc! {"insert": "people", "documents": [{"_id": 3, "name": 7}]})
        .await
        .unwrap();
    assert_eq!(write_error_code(&reply), Some(121));
    let err_info = reply.get_array("writeErrors").unwrap()[0]
        .as_document()
        .unwrap()
        .get_document("errInfo")
        .unwrap()
        .clone();
    assert_eq!(err_info.get("failingDocumentId"), Some(&Bson::Int32(3)));

    // Updates, upserts and findAndModify are checked on the new document.
    let reply = db
        .run_command(doc! {"update": "people", "updates": [{"q": {"_id": 1}, "u": {"$set": {"age": "old"}}}]})
        .await
        .unwrap();
    assert_eq!(write_error_code(&reply), Some(121));
    let reply = db
        .run_command(doc! {"update": "people", "updates": [{"q": {"_id": 9}, "u": {"$set": {"age": 1}}, "upsert": true}]})
        .await
        .unwrap();
    assert_eq!(
        write_error_code(&reply),
        Some(121),
        "the upserted document has no name"
    );
    let err = db
        .run_command(doc! {"findAndModify": "people", "query": {"_id": 1}, "update": {"$unset": {"name": 1}}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(121));
    let reply = client
        .database("admin")
        .run_command(doc! {"bulkWrite": 1, "ops": [{"insert": 0, "document": {"_id": 4, "age": 1}}], "nsInfo": [{"ns": "validation.people"}]})
        .await
        .unwrap();
    assert_eq!(reply.get_i32("nErrors").unwrap(), 1);
    assert_eq!(
        coll.find_one(doc! {"_id": 1})
            .await
            .unwrap()
            .unwrap()
            .get_i32("age")
            .unwrap(),
        30
    );

    // bypassDocumentValidation skips the check.
    db.run_command(doc! {"insert": "people", "documents": [{"_id": 5, "age": -5}], "bypassDocumentValidation": true})
        .await
        .unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 2);

    // Moderate: a document that already fails may be updated; a valid one must stay valid.
    db.run_command(doc! {"collMod": "people", "validationLevel": "moderate"})
        .await
        .unwrap();
    let reply = db
        .run_command(
            doc! {"update": "people", "updates": [{"q": {"_id": 5}, "u": {"$inc": {"age": -1}}}]},
        )
        .await
        .unwrap();
    assert_eq!(reply.get_i32("nModified").unwrap(), 1);
    let reply = db
        .run_command(
            doc! {"update": "people", "updates": [{"q": {"_id": 1}, "u": {"$set": {"age": -1}}}]},
        )
        .await
        .unwrap();
    assert_eq!(write_error_code(&reply), Some(121));

    // Warn accepts; a new validator applies to later writes only.
    db.run_command(doc! {"collMod": "people", "validationAction": "warn"})
        .await
        .unwrap();
    coll.insert_one(doc! {"_id": 6, "age": -3}).await.unwrap();
    db.run_command(doc! {"collMod": "people", "validator": {"age": {"$lt": 100}}, "validationAction": "error", "validationLevel": "strict"})
        .await
        .unwrap();
    coll.insert_one(doc! {"_id": 7, "age": 50}).await.unwrap();
    let err = coll
        .insert_one(doc! {"_id": 8, "age": 500})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(121));

    // MongoDB's option errors.
    for (command, code) in [
        (doc! {"create": "bad1", "validationLevel": "loose"}, 2),
        (
            doc! {"create": "bad2", "validator": {"$where": "true"}},
            224,
        ),
        (doc! {"create": "bad3", "validator": {"a": {"$nope": 1}}}, 2),
        (doc! {"collMod": "missing", "validationLevel": "off"}, 26),
    ] {
        let err = db.run_command(command).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code));
    }
}

async fn coll_mod_changes_indexes(client: &Client) {
    let db = client.database("collmod");
    let coll = db.collection::<Document>("events");
    coll.insert_one(doc! {"_id": 1, "at": 1, "k": 1})
        .await
        .unwrap();
    coll.create_index(
        IndexModel::builder()
            .keys(doc! {"at": 1})
            .options(
                IndexOptions::builder()
                    .expire_after(Duration::from_secs(60))
                    .build(),
            )
            .build(),
    )
    .await
    .unwrap();
    coll.create_index(IndexModel::builder().keys(doc! {"k": 1}).build())
        .await
        .unwrap();
    let reply = db
        .run_command(doc! {"collMod": "events", "index": {"keyPattern": {"at": 1}, "expireAfterSeconds": 120}})
        .await
        .unwrap();
    assert_eq!(reply.get("expireAfterSeconds_old"), Some(&Bson::Int32(60)));
    assert_eq!(reply.get("expireAfterSeconds_new"), Some(&Bson::Int32(120)));
    let reply = db
        .run_command(doc! {"collMod": "events", "index": {"name": "k_1", "hidden": true}})
        .await
        .unwrap();
    assert!(reply.get_bool("hidden_new").unwrap());
    let specs = db
        .run_command(doc! {"listIndexes": "events"})
        .await
        .unwrap();
    let specs = first_batch(&specs);
    let at = specs
        .iter()
        .find(|s| s.get_str("name") == Ok("at_1"))
        .unwrap();
    assert_eq!(at.get("expireAfterSeconds"), Some(&Bson::Int32(120)));
    let k = specs
        .iter()
        .find(|s| s.get_str("name") == Ok("k_1"))
        .unwrap();
    assert!(k.get_bool("hidden").unwrap());
    // A hidden index cannot be hinted.
    let err = db
        .run_command(doc! {"find": "events", "hint": "k_1"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(2));
    for (index, code) in [
        (doc! {"name": "nope", "hidden": true}, 27),
        (doc! {"name": "k_1"}, 72),
        (doc! {"name": "k_1", "expireAfterSeconds": 5}, 72),
        (doc! {"name": "_id_", "hidden": true}, 2),
    ] {
        let err = db
            .run_command(doc! {"collMod": "events", "index": index})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(code));
    }
}

both_modes!(validators_guard_every_write, coll_mod_changes_indexes);
