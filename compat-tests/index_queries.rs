//! Queries answered through indexes give exactly the answers of a collection scan: the same
//! data in an indexed and an unindexed collection, compared query by query (arrays, missing
//! fields, nulls, mixed types, ranges, `$in`, compound and hashed indexes, sorted scans).

use crate::harness::both_modes;
use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::{Client, IndexModel};

fn value(i: i64) -> Bson {
    match i % 9 {
        0 => Bson::Int32((i % 10) as i32),
        1 => Bson::Double((i % 10) as f64 + 0.5),
        2 => Bson::String(format!("s{}", i % 7)),
        3 => Bson::Null,
        4 => Bson::Array(vec![
            Bson::Int32((i % 5) as i32),
            Bson::Int32((i % 5 + 3) as i32),
        ]),
        5 => Bson::Int64(i % 10),
        6 => Bson::Document(doc! {"k": i % 3}),
        _ => Bson::Int32(((i * 7) % 10) as i32),
    }
}

fn document(i: i64) -> Document {
    let mut d = doc! {"_id": i, "b": i % 4, "s": format!("{}", (b'a' + (i % 26) as u8) as char)};
    if i % 11 != 0 {
        d.insert("a", value(i));
    }
    if i % 3 == 0 {
        d.insert("c", doc! {"d": i % 5});
    } else if i % 3 == 1 {
        d.insert(
            "c",
            vec![
                Bson::Document(doc! {"d": i % 5}),
                Bson::Document(doc! {"d": (i + 2) % 5}),
            ],
        );
    }
    d
}

async fn ids(client: &Client, coll: &str, filter: Document) -> Vec<i64> {
    let docs: Vec<Document> = client
        .database("ixq")
        .collection::<Document>(coll)
        .find(filter)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut ids: Vec<i64> = docs.iter().map(|d| d.get_i64("_id").unwrap()).collect();
    ids.sort();
    ids
}

async fn indexed_answers_match_scans(client: &Client) {
    let db = client.database("ixq");
    let _ = db.drop().await;
    let docs: Vec<Document> = (0..600).map(document).collect();
    db.collection::<Document>("plain")
        .insert_many(docs.clone())
        .await
        .unwrap();
    let indexed = db.collection::<Document>("indexed");
    indexed.insert_many(docs).await.unwrap();
    for keys in [
        doc! {"a": 1},
        doc! {"b": 1, "a": -1},
        doc! {"c.d": 1},
        doc! {"s": -1},
        doc! {"b": "hashed"},
    ] {
        indexed
            .create_index(IndexModel::builder().keys(keys).build())
            .await
            .unwrap();
    }
    let queries = vec![
        doc! {"a": 5},
        doc! {"a": 5.5},
        doc! {"a": {"$gt": 3}},
        doc! {"a": {"$gte": 2, "$lt": 7}},
        doc! {"a": {"$lte": 4}},
        doc! {"a": {"$in": [1, 5, "s3", {"k": 1}]}},
        doc! {"a": null},
        doc! {"a": {"$exists": false}},
        doc! {"a": {"$gt": "s2"}},
        doc! {"a": {"k": 2}},
        doc! {"b": 3, "a": {"$lt": 5}},
        doc! {"b": {"$in": [1, 2]}, "a": 4},
        doc! {"b": 2},
        doc! {"c.d": 2},
        doc! {"c.d": {"$lte": 1}},
        doc! {"c.d": {"$gt": 1, "$lt": 4}},
        doc! {"s": {"$gte": "m"}},
        doc! {"s": {"$lt": "c"}},
        doc! {"$and": [{"a": {"$gt": 2}}, {"a": {"$lt": 8}}]},
        doc! {"$and": [{"b": 1}, {"b": {"$in": [1, 3]}}]},
        doc! {"b": 1, "$or": [{"a": 1}, {"s": "b"}]},
        doc! {"a": {"$in": []}},
        // Unions of index scans: overlapping branches, multikey branches, `_id`, and a branch
        // no index answers (a collection scan).
        doc! {"$or": [{"a": 5}, {"s": "c"}]},
        doc! {"$or": [{"a": {"$gte": 3}}, {"a": {"$lt": 6}}, {"c.d": 1}]},
        doc! {"$or": [{"_id": 7}, {"c.d": {"$in": [0, 4]}}], "b": {"$ne": 2}},
        doc! {"$or": [{"a": 2}, {"zzz": 1}]},
        doc! {"$or": [{"a": {"$in": []}}, {"s": {"$gt": "x"}}]},
    ];
    for query in queries {
        assert_eq!(
            ids(client, "indexed", query.clone()).await,
            ids(client, "plain", query.clone()).await,
            "query {query}"
        );
    }
    // Sorted scans through an index: same documents, in order.
    for (filter, sort, limit) in [
        (doc! {}, doc! {"b": 1, "a": -1}, 50),
        (doc! {}, doc! {"b": -1, "a": 1}, 50),
        (doc! {"b": 2}, doc! {"a": -1}, 500),
        (doc! {"s": {"$gt": "d"}}, doc! {"s": -1}, 30),
        (doc! {}, doc! {"s": 1}, 600),
    ] {
        let find = |coll: &'static str| {
            let (filter, sort) = (filter.clone(), sort.clone());
            async move {
                let docs: Vec<Document> = client
                    .database("ixq")
                    .collection::<Document>(coll)
                    .find(filter)
                    .sort(sort)
                    .limit(limit)
                    .await
                    .unwrap()
                    .try_collect()
                    .await
                    .unwrap();
                docs
            }
        };
        let (got, want) = (find("indexed").await, find("plain").await);
        assert_eq!(got.len(), want.len(), "sort {sort}");
        let sort_spec = docgrid::query::sort::SortSpec::parse(&sort).unwrap();
        for pair in got.windows(2) {
            assert_ne!(
                sort_spec.compare(&pair[0], &pair[1]),
                std::cmp::Ordering::Greater,
                "sorted by {sort}"
            );
        }
        let keys = |docs: &[Document]| {
            docs.iter()
                .map(|d| sort_spec.sort_key(d))
                .collect::<Vec<_>>()
        };
        assert_eq!(keys(&got), keys(&want), "same sort keys for {sort}");
    }
    // A hint forces an index; an unknown one is an error.
    let hinted: Vec<Document> = indexed
        .find(doc! {"b": 1})
        .hint(mongodb::options::Hint::Name("s_-1".into()))
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        hinted.len(),
        ids(client, "plain", doc! {"b": 1}).await.len()
    );
    let err = indexed
        .find(doc! {})
        .hint(mongodb::options::Hint::Name("nope".into()))
        .await
        .unwrap_err();
    assert_eq!(crate::harness::error_code(&err), Some(2));
    // Updates and deletes found through indexes.
    let updated = indexed
        .update_many(doc! {"c.d": 3}, doc! {"$set": {"hit": true}})
        .await
        .unwrap();
    assert_eq!(
        updated.matched_count as usize,
        ids(client, "plain", doc! {"c.d": 3}).await.len()
    );
    let deleted = indexed.delete_many(doc! {"a": {"$gte": 8}}).await.unwrap();
    assert_eq!(
        deleted.deleted_count as usize,
        ids(client, "plain", doc! {"a": {"$gte": 8}}).await.len()
    );
}

both_modes!(indexed_answers_match_scans);
