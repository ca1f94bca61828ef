//! CRUD through the router: insert, find, update, delete, findAndModify, count, distinct and
//! the aggregation subset drivers use for countDocuments.

use crate::harness::{both_modes, error_code};
use futures::TryStreamExt;
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc, oid::ObjectId};
use mongodb::options::{FindOptions, ReturnDocument};

async fn insert_generates_ids_and_keeps_types(client: &Client) {
    let coll = client.database("app").collection::<Document>("types");
    let result = coll.insert_one(doc! {"name": "ann"}).await.unwrap();
    assert!(matches!(result.inserted_id, Bson::ObjectId(_)));
    let doc = doc! {
        "_id": 1,
        "int32": 1_i32,
        "int64": 1_i64,
        "double": 1.5,
        "negzero": -0.0,
        "nan": f64::NAN,
        "dec": mongodb::bson::Decimal128::from_bytes([1; 16]),
        "date": mongodb::bson::DateTime::from_millis(1_700_000_000_000),
        "bin": mongodb::bson::Binary {subtype: mongodb::bson::spec::BinarySubtype::Generic, bytes: vec![1, 2, 3]},
        "oid": ObjectId::new(),
        "nested": {"a": [1, [2, {"b": null}]]},
        "ts": mongodb::bson::Timestamp {time: 5, increment: 6},
        "re": mongodb::bson::Regex {pattern: "^a".into(), options: "i".into()},
    };
    coll.insert_one(doc.clone()).await.unwrap();
    let back = coll.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    assert_eq!(back.get("int32"), Some(&Bson::Int32(1)));
    assert_eq!(back.get("int64"), Some(&Bson::Int64(1)));
    assert!(back.get_f64("negzero").unwrap().is_sign_negative());
    assert!(back.get_f64("nan").unwrap().is_nan());
    for key in ["dec", "date", "bin", "oid", "nested", "ts", "re"] {
        assert_eq!(back.get(key), doc.get(key), "{key} round-trips");
    }
    // _id is stored first even when given last.
    coll.insert_one(doc! {"x": 1, "_id": "last"}).await.unwrap();
    let back = coll.find_one(doc! {"_id": "last"}).await.unwrap().unwrap();
    assert_eq!(back.keys().next().unwrap(), "_id");
}

async fn duplicate_keys_report_pattern_and_value(client: &Client) {
    let db = client.database("app");
    let coll = db.collection::<Document>("dups");
    coll.insert_one(doc! {"_id": 1}).await.unwrap();
    let err = coll.insert_one(doc! {"_id": 1.0}).await.unwrap_err();
    assert_eq!(error_code(&err), Some(11000), "1 and 1.0 are the same _id");
    let reply = db
        .run_command(doc! {"insert": "dups", "documents": [{"_id": 2}, {"_id": 1}, {"_id": 3}], "ordered": true})
        .await
        .unwrap();
    assert_eq!(reply.get_i32("n").unwrap(), 1);
    let errors = reply.get_array("writeErrors").unwrap();
    assert_eq!(errors.len(), 1);
    let e = errors[0].as_document().unwrap();
    assert_eq!(e.get_i32("index").unwrap(), 1);
    assert_eq!(e.get_i32("code").unwrap(), 11000);
    assert_eq!(e.get_document("keyPattern").unwrap(), &doc! {"_id": 1});
    assert_eq!(e.get_document("keyValue").unwrap(), &doc! {"_id": 1});
    assert!(e.get_str("errmsg").unwrap().contains(
        "E11000 duplicate key error collection: app.dups index: _id_ dup key: { _id: 1 }"
    ));
    let reply = db
        .run_command(doc! {"insert": "dups", "documents": [{"_id": 1}, {"_id": 4}, {"_id": 2}, {"_id": 5}], "ordered": false})
        .await
        .unwrap();
    assert_eq!(reply.get_i32("n").unwrap(), 2);
    let indexes: Vec<i32> = reply
        .get_array("writeErrors")
        .unwrap()
        .iter()
        .map(|e| e.as_document().unwrap().get_i32("index").unwrap())
        .collect();
    assert_eq!(indexes, vec![0, 2]);
    // 1 and 2 (3 was never reached by the ordered batch), then 4 and 5.
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 4);
    let err = coll.insert_one(doc! {"_id": [1, 2]}).await.unwrap_err();
    assert_eq!(error_code(&err), Some(53));
}

async fn find_with_filter_projection_sort_skip_limit(client: &Client) {
    let coll = client.database("app").collection::<Document>("people");
    coll.insert_many((0..20).map(|i| doc! {"_id": i, "name": format!("p{i:02}"), "age": 20 + (i % 7), "tags": ["x", format!("t{}", i % 3)]}))
        .await
        .unwrap();
    let found: Vec<Document> = coll
        .find(doc! {"age": {"$gte": 24}, "tags": "t1"})
        .projection(doc! {"name": 1, "_id": 0})
        .sort(doc! {"age": -1, "name": 1})
        .skip(1)
        .limit(3)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let names: Vec<&str> = found.iter().map(|d| d.get_str("name").unwrap()).collect();
    // ages: i%7 -> 20+, tags t1 for i%3==1: 1,4,7,10,13,16,19 -> ages 21,24,20,23,26,22,25
    // age>=24: 4(24),13(26),19(25) sorted desc: 13,19,4 -> skip 1 -> 19,4
    assert_eq!(names, vec!["p19", "p04"]);
    assert!(found.iter().all(|d| !d.contains_key("_id") && d.len() == 1));
    let in_or: Vec<Document> = coll
        .find(doc! {"$or": [{"_id": {"$in": [1, 2]}}, {"name": "p10"}], "age": {"$exists": true}})
        .sort(doc! {"_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        in_or
            .iter()
            .map(|d| d.get_i32("_id").unwrap())
            .collect::<Vec<_>>(),
        vec![1, 2, 10]
    );
    let none = coll
        .find_one(doc! {"missing": {"$exists": true}})
        .await
        .unwrap();
    assert!(none.is_none());
}

async fn updates_replacements_and_upserts(client: &Client) {
    let coll = client.database("app").collection::<Document>("u");
    coll.insert_many(vec![
        doc! {"_id": 1, "n": 1, "tag": "a"},
        doc! {"_id": 2, "n": 2, "tag": "a"},
        doc! {"_id": 3, "n": 3, "tag": "b"},
    ])
    .await
    .unwrap();
    let r = coll
        .update_one(
            doc! {"tag": "a"},
            doc! {"$set": {"seen": true}, "$inc": {"n": 10}},
        )
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (1, 1));
    let r = coll
        .update_many(doc! {"tag": "a"}, doc! {"$set": {"seen": true}})
        .await
        .unwrap();
    assert_eq!(
        (r.matched_count, r.modified_count),
        (2, 1),
        "setting an equal value is not a modification"
    );
    let r = coll
        .update_many(doc! {}, doc! {"$unset": {"tag": ""}})
        .await
        .unwrap();
    assert_eq!(r.modified_count, 3);
    let r = coll
        .replace_one(doc! {"_id": 3}, doc! {"replaced": true})
        .await
        .unwrap();
    assert_eq!(r.modified_count, 1);
    assert_eq!(
        coll.find_one(doc! {"_id": 3}).await.unwrap().unwrap(),
        doc! {"_id": 3, "replaced": true}
    );
    let r = coll
        .update_one(doc! {"_id": 9, "kind": "new"}, doc! {"$set": {"v": 1}})
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(r.upserted_id, Some(Bson::Int32(9)));
    assert_eq!(
        coll.find_one(doc! {"_id": 9}).await.unwrap().unwrap(),
        doc! {"_id": 9, "kind": "new", "v": 1}
    );
    let r = coll
        .update_one(doc! {"name": "fresh"}, doc! {"$set": {"v": 2}})
        .upsert(true)
        .await
        .unwrap();
    assert!(matches!(r.upserted_id, Some(Bson::ObjectId(_))));
    let err = coll
        .update_one(doc! {"_id": 1}, doc! {"$set": {"_id": 5}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(66));
    let doc1 = coll.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    assert_eq!(doc1.get_i32("n").unwrap(), 11);
}

async fn deletes_and_find_and_modify(client: &Client) {
    let coll = client.database("app").collection::<Document>("d");
    coll.insert_many((0..10).map(|i| doc! {"_id": i, "even": i % 2 == 0}))
        .await
        .unwrap();
    assert_eq!(
        coll.delete_one(doc! {"even": true})
            .await
            .unwrap()
            .deleted_count,
        1
    );
    assert_eq!(
        coll.delete_many(doc! {"even": true})
            .await
            .unwrap()
            .deleted_count,
        4
    );
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 5);
    let before = coll
        .find_one_and_update(doc! {"_id": 1}, doc! {"$set": {"x": 1}})
        .await
        .unwrap()
        .unwrap();
    assert!(!before.contains_key("x"));
    let after = coll
        .find_one_and_update(doc! {"_id": 3}, doc! {"$set": {"x": 3}})
        .return_document(ReturnDocument::After)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.get_i32("x").unwrap(), 3);
    let removed = coll
        .find_one_and_delete(doc! {"even": false})
        .sort(doc! {"_id": -1})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(removed.get_i32("_id").unwrap(), 9);
    let replaced = coll
        .find_one_and_replace(doc! {"_id": 42}, doc! {"r": 1})
        .upsert(true)
        .return_document(ReturnDocument::After)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(replaced, doc! {"_id": 42, "r": 1});
    assert!(
        coll.find_one_and_delete(doc! {"_id": 1000})
            .await
            .unwrap()
            .is_none()
    );
}

async fn counts_distinct_and_aggregate(client: &Client) {
    let coll = client.database("app").collection::<Document>("c");
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 0);
    assert_eq!(coll.estimated_document_count().await.unwrap(), 0);
    coll.insert_many((0..30).map(|i| doc! {"_id": i, "g": i % 3, "v": [i % 2, 7]}))
        .await
        .unwrap();
    assert_eq!(coll.estimated_document_count().await.unwrap(), 30);
    assert_eq!(coll.count_documents(doc! {"g": 1}).await.unwrap(), 10);
    assert_eq!(
        coll.count_documents(doc! {"g": 1})
            .skip(2)
            .limit(5)
            .await
            .unwrap(),
        5
    );
    let mut values = coll.distinct("g", doc! {}).await.unwrap();
    values.sort_by_key(|v| v.as_i32());
    assert_eq!(values, vec![Bson::Int32(0), Bson::Int32(1), Bson::Int32(2)]);
    let mut flattened = coll.distinct("v", doc! {"g": 0}).await.unwrap();
    flattened.sort_by_key(|v| v.as_i32());
    assert_eq!(
        flattened,
        vec![Bson::Int32(0), Bson::Int32(1), Bson::Int32(7)]
    );
    let groups: Vec<Document> = coll
        .aggregate(vec![
            doc! {"$match": {"_id": {"$lt": 20}}},
            doc! {"$group": {"_id": "$g", "n": {"$sum": 1}}},
            doc! {"$sort": {"_id": 1}},
            doc! {"$project": {"group": "$_id", "n": 1, "_id": 0}},
        ])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        groups,
        vec![
            doc! {"n": 7, "group": 0},
            doc! {"n": 7, "group": 1},
            doc! {"n": 6, "group": 2}
        ]
    );
    let counted: Vec<Document> = coll
        .aggregate(vec![doc! {"$skip": 25}, doc! {"$count": "left"}])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(counted, vec![doc! {"left": 5}]);
    let opts = FindOptions::builder().batch_size(7).build();
    let all: Vec<Document> = coll
        .find(doc! {})
        .with_options(opts)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all.len(), 30);
}

/// What MongoDB refuses instead of silently answering differently: malformed collations, and
/// `$`-prefixed names inside `_id`.
async fn refusals_instead_of_wrong_answers(client: &Client) {
    let db = client.database("refusals");
    let coll = db.collection::<Document>("c");
    coll.insert_one(doc! {"_id": 1, "s": "a"}).await.unwrap();
    let simple = db
        .run_command(doc! {"count": "c", "collation": {"locale": "simple"}})
        .await
        .unwrap();
    assert_eq!(simple.get_i32("n").unwrap(), 1);
    // A malformed collation answers MongoDB's error.
    for (collation, code) in [
        (doc! {"locale": "en", "strength": 6}, 51024),
        (doc! {"locale": "en", "bogus": 1}, 40415),
        (doc! {"locale": "en", "caseFirst": "middle"}, 2),
        (
            doc! {"locale": "en", "strength": 2, "caseFirst": "upper"},
            2,
        ),
        (doc! {"locale": "not a locale"}, 2),
        (doc! {"locale": "en_GB"}, 2),
        (doc! {"locale": "xx"}, 2),
        (doc! {"locale": 5}, 14),
    ] {
        let command = doc! {"find": "c", "collation": collation};
        let err = db.run_command(command.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{command}");
    }

    let err = coll
        .insert_one(doc! {"_id": {"a": {"$b": 1}}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(52));
    coll.insert_one(doc! {"_id": {"a": {"b$": 1}}})
        .await
        .unwrap();
}

both_modes!(
    refusals_instead_of_wrong_answers,
    insert_generates_ids_and_keeps_types,
    duplicate_keys_report_pattern_and_value,
    find_with_filter_projection_sort_skip_limit,
    updates_replacements_and_upserts,
    deletes_and_find_and_modify,
    counts_distinct_and_aggregate
);

#[tokio::test]
async fn documents_nested_too_deep_are_refused() {
    let cluster = crate::harness::TestCluster::start().await;
    let coll = cluster.db("deep").collection::<Document>("c");
    let nest = |levels: usize| {
        let mut doc = doc! {"leaf": 1};
        for _ in 0..levels {
            doc = doc! {"a": doc};
        }
        doc
    };
    coll.insert_one(nest(170)).await.unwrap();
    let err = coll.insert_one(nest(185)).await.unwrap_err();
    assert_eq!(error_code(&err), Some(15));
    cluster.shutdown().await;
}
