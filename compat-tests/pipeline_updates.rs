//! Pipeline-style updates (an array of `$set`/`$unset`/`$project`/`$replaceWith` stages as `u`
//! or as findAndModify's `update`) and decimal128 in `$inc`/`$mul`, through the router.

use crate::harness::{all_by_id as all, both_modes, error_code};
use mongodb::Client;
use mongodb::bson::{Bson, Decimal128, Document, doc, oid::ObjectId};
use mongodb::options::ReturnDocument;

fn dec(s: &str) -> Bson {
    Bson::Decimal128(s.parse::<Decimal128>().unwrap())
}

async fn pipelines_update_and_count_changes(client: &Client) {
    let coll = client.database("pipe").collection::<Document>("p");
    coll.insert_many(vec![
        doc! {"_id": 1, "price": 10, "qty": 2, "tags": ["a"]},
        doc! {"_id": 2, "price": 5, "qty": 1, "tags": ["b"]},
        doc! {"_id": 3, "price": 7, "qty": 0},
    ])
    .await
    .unwrap();

    // Fields computed from the document itself.
    let r = coll
        .update_one(
            doc! {"_id": 1},
            vec![doc! {"$set": {"total": {"$multiply": ["$price", "$qty"]}}}],
        )
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (1, 1));
    assert_eq!(
        coll.find_one(doc! {"_id": 1}).await.unwrap().unwrap(),
        doc! {"_id": 1, "price": 10, "qty": 2, "tags": ["a"], "total": 20}
    );

    // `multi` is fine for a pipeline (only replacements refuse it); a document the pipeline
    // leaves as it was is matched but not modified.
    let r = coll
        .update_many(
            doc! {},
            vec![doc! {"$set": {"total": {"$multiply": ["$price", "$qty"]}}}],
        )
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (3, 2));
    let r = coll
        .update_many(doc! {}, Vec::<Document>::new())
        .await
        .unwrap();
    assert_eq!(
        (r.matched_count, r.modified_count),
        (3, 0),
        "empty pipeline"
    );

    // Removing and reshaping fields; `_id` survives stages that drop it and comes first.
    let r = coll
        .update_many(
            doc! {"_id": {"$lte": 2}},
            vec![
                doc! {"$unset": ["tags", "qty"]},
                doc! {"$project": {"_id": 0, "price": 1, "total": 1}},
            ],
        )
        .await
        .unwrap();
    assert_eq!(r.modified_count, 2);
    coll.update_one(
        doc! {"_id": 3},
        vec![doc! {"$replaceWith": {"summary": {"$concat": ["p=", {"$toString": "$price"}]}, "_id": "$_id"}}],
    )
    .await
    .unwrap();
    assert_eq!(
        all(&coll).await,
        vec![
            doc! {"_id": 1, "price": 10, "total": 20},
            doc! {"_id": 2, "price": 5, "total": 5},
            doc! {"_id": 3, "summary": "p=7"},
        ]
    );

    // `$$NOW` is the time of the write.
    let before = mongodb::bson::DateTime::now();
    coll.update_one(doc! {"_id": 2}, vec![doc! {"$set": {"at": "$$NOW"}}])
        .await
        .unwrap();
    let at = *coll
        .find_one(doc! {"_id": 2})
        .await
        .unwrap()
        .unwrap()
        .get_datetime("at")
        .unwrap();
    assert!(at >= before && at <= mongodb::bson::DateTime::now());
}

async fn pipeline_upserts(client: &Client) {
    let coll = client.database("pipe").collection::<Document>("u");
    // The seed is the query's equality fields; the pipeline runs on it.
    let r = coll
        .update_one(
            doc! {"_id": 1, "x": 1},
            vec![doc! {"$set": {"foo": {"$add": ["$x", 3]}}}],
        )
        .upsert(true)
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (0, 0));
    assert_eq!(r.upserted_id, Some(Bson::Int32(1)));
    let r = coll
        .update_one(
            doc! {"name": "fresh", "n": {"$gt": 1}},
            vec![doc! {"$project": {"name": 1, "upper": {"$toUpper": "$name"}}}],
        )
        .upsert(true)
        .await
        .unwrap();
    let Some(Bson::ObjectId(id)) = r.upserted_id else {
        panic!("an ObjectId _id is generated: {:?}", r.upserted_id);
    };
    assert_eq!(
        all(&coll).await,
        vec![
            doc! {"_id": 1, "x": 1, "foo": 4},
            doc! {"_id": id, "name": "fresh", "upper": "FRESH"},
        ]
    );
    // The pipeline may choose `_id` when the query gave none, not change one it gave.
    let r = coll
        .update_one(doc! {"k": 7}, vec![doc! {"$set": {"_id": "chosen"}}])
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(r.upserted_id, Some(Bson::String("chosen".into())));
    let err = coll
        .update_one(doc! {"_id": 50}, vec![doc! {"$set": {"_id": 51}}])
        .upsert(true)
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(66));
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 3);
}

async fn pipeline_errors(client: &Client) {
    let db = client.database("pipe");
    let coll = db.collection::<Document>("e");
    coll.insert_one(doc! {"_id": 1, "a": 1}).await.unwrap();
    let code = |r: mongodb::error::Result<mongodb::results::UpdateResult>| {
        error_code(&r.expect_err("the update fails"))
    };
    for stage in [
        doc! {"$match": {"a": 1}},
        doc! {"$sort": {"a": 1}},
        doc! {"$group": {"_id": "$a"}},
        doc! {"$limit": 1},
        doc! {"$lookup": {"from": "x", "as": "y", "localField": "a", "foreignField": "b"}},
    ] {
        let r = coll.update_one(doc! {"_id": 1}, vec![stage.clone()]).await;
        assert_eq!(code(r), Some(72), "{stage}");
    }
    let r = coll
        .update_one(doc! {"_id": 1}, vec![doc! {"$set": {"a": 2}}])
        .array_filters(vec![doc! {"x": 1}])
        .await;
    assert_eq!(code(r), Some(9));
    let r = coll
        .update_one(doc! {"_id": 1}, vec![doc! {"$set": {"_id": 2}}])
        .await;
    assert_eq!(code(r), Some(66));
    let r = coll
        .update_one(
            doc! {"_id": 1},
            vec![doc! {"$addFields": {"q": {"$divide": [1, 0]}}}],
        )
        .await;
    assert_eq!(code(r), Some(16608));
    let r = coll
        .update_one(
            doc! {"_id": 1},
            vec![doc! {"$set": {"t": "$$CLUSTER_TIME"}}],
        )
        .await;
    assert_eq!(code(r), Some(51144));
    // A stage outside an array is an unknown update operator.
    let r = coll
        .update_one(doc! {"_id": 1}, doc! {"$addFields": {"x": 1}})
        .await;
    assert_eq!(code(r), Some(9));
    // Elements must be objects (MongoDB refuses the whole command; either way, code 14).
    let reply = db
        .run_command(doc! {"update": "e", "updates": [{"q": {}, "u": [{"$set": {"a": 3}}, 1]}]})
        .await;
    let code = match reply {
        Ok(reply) => reply
            .get_array("writeErrors")
            .ok()
            .and_then(|e| e.first())
            .and_then(Bson::as_document)
            .and_then(|e| e.get_i32("code").ok()),
        Err(err) => error_code(&err),
    };
    assert_eq!(code, Some(14));
    assert_eq!(
        coll.find_one(doc! {}).await.unwrap().unwrap(),
        doc! {"_id": 1, "a": 1},
        "no failed update changed the document"
    );
}

async fn find_and_modify_with_a_pipeline(client: &Client) {
    let coll = client.database("pipe").collection::<Document>("f");
    coll.insert_many(vec![doc! {"_id": 1, "n": 1}, doc! {"_id": 2, "n": 5}])
        .await
        .unwrap();
    let before = coll
        .find_one_and_update(
            doc! {"n": {"$gte": 1}},
            vec![doc! {"$set": {"n": {"$add": ["$n", 10]}, "old": "$n"}}],
        )
        .sort(doc! {"n": -1})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(before, doc! {"_id": 2, "n": 5});
    let after = coll
        .find_one_and_update(doc! {"_id": 1}, vec![doc! {"$replaceWith": {"only": "$n"}}])
        .return_document(ReturnDocument::After)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after, doc! {"_id": 1, "only": 1});
    let created = coll
        .find_one_and_update(
            doc! {"_id": 9, "kind": "new"},
            vec![doc! {"$set": {"label": {"$concat": ["$kind", "!"]}}}],
        )
        .upsert(true)
        .return_document(ReturnDocument::After)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(created, doc! {"_id": 9, "kind": "new", "label": "new!"});
    let err = coll
        .find_one_and_update(doc! {"_id": 9}, vec![doc! {"$sort": {"a": 1}}])
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(72));
    assert_eq!(
        all(&coll).await,
        vec![
            doc! {"_id": 1, "only": 1},
            doc! {"_id": 2, "n": 15, "old": 5},
            doc! {"_id": 9, "kind": "new", "label": "new!"},
        ]
    );
}

async fn decimal_inc_and_mul(client: &Client) {
    let coll = client.database("pipe").collection::<Document>("d");
    let oid = ObjectId::new();
    coll.insert_many(vec![
        doc! {"_id": 1, "d": dec("1.5"), "i": 3, "f": 0.1},
        doc! {"_id": oid, "d": dec("1234567890123456789012345678901235")},
    ])
    .await
    .unwrap();
    let r = coll
        .update_one(
            doc! {"_id": 1},
            doc! {"$inc": {"d": 1, "f": dec("0.2")}, "$mul": {"i": dec("1.10"), "m": dec("-2.50")}},
        )
        .await
        .unwrap();
    assert_eq!(r.modified_count, 1);
    assert_eq!(
        coll.find_one(doc! {"_id": 1}).await.unwrap().unwrap(),
        doc! {"_id": 1, "d": dec("2.5"), "i": dec("3.30"), "f": dec("0.300000000000000"), "m": dec("-0.00")}
    );
    // Adding a zero with more decimal places is no change: the stored value stays as it was.
    let r = coll
        .update_one(doc! {"_id": 1}, doc! {"$inc": {"d": dec("0.000")}})
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (1, 0));
    // 34 significant digits, ties rounded to even.
    coll.update_one(doc! {"_id": oid}, doc! {"$inc": {"d": dec("0.5")}})
        .await
        .unwrap();
    assert_eq!(
        coll.find_one(doc! {"_id": oid}).await.unwrap().unwrap(),
        doc! {"_id": oid, "d": dec("1234567890123456789012345678901236")}
    );
    // Beyond the largest decimal128 the product is Infinity, not an error.
    let r = coll
        .update_one(
            doc! {"_id": oid},
            doc! {"$mul": {"d": dec("9.999999999999999999999999999999999E+6144")}},
        )
        .await
        .unwrap();
    assert_eq!(r.modified_count, 1);
    assert_eq!(
        coll.find_one(doc! {"_id": oid})
            .await
            .unwrap()
            .unwrap()
            .get("d"),
        Some(&dec("Infinity"))
    );
}

both_modes!(
    pipelines_update_and_count_changes,
    pipeline_upserts,
    pipeline_errors,
    find_and_modify_with_a_pipeline,
    decimal_inc_and_mul
);

/// The `_id` rules around updates, compared with MongoDB's numeric equality.
async fn id_rules(client: &Client) {
    let db = client.database("pipeline_id_rules");
    let coll = db.collection::<Document>("c");
    coll.insert_one(doc! {"_id": 1, "x": 1}).await.unwrap();
    // 1.0 equals 1: not a change of `_id`.
    coll.replace_one(doc! {"_id": 1}, doc! {"_id": 1.0, "x": 2})
        .await
        .unwrap();
    assert_eq!(coll.count_documents(doc! {"x": 2}).await.unwrap(), 1);
    // An upsert cannot move away from the `_id` its query fixed.
    let err = coll
        .update_one(doc! {"_id": 5}, doc! {"$set": {"_id": 6}})
        .upsert(true)
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(66));
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
}

both_modes!(id_rules);
