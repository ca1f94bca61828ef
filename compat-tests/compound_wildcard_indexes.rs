//! Compound wildcard indexes (MongoDB 7.0+) end to end through the router, unsharded and
//! sharded across both shards: specs as `listIndexes` shows them with MongoDB's default names
//! and errors, `explain`'s expanded key patterns and bounds, hints, and writes (arrays in a
//! regular field refused) keeping the index correct. The comparison with a collection scan
//! over random documents and filters is in `wildcard_indexes`.

use crate::harness::{both_modes, error_code, find_all};
use crate::wildcard_indexes::{ids, ixscan, list_indexes, setup};
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

async fn compound_specs_and_errors(client: &Client) {
    let index = doc! {"key": {"a": 1, "$**": -1, "c": 1}, "wildcardProjection": {"a": 0, "c": 0}};
    let db = setup(client, "cwi_specs", index).await;
    for name in ["plain", "sharded"] {
        let listed = list_indexes(&db, name).await;
        let cwi = listed
            .iter()
            .find(|i| i.get_str("name") == Ok("a_1_$**_-1_c_1"));
        assert_eq!(
            cwi,
            Some(&doc! {
                "v": 2, "key": {"a": 1, "$**": -1, "c": 1}, "name": "a_1_$**_-1_c_1",
                "wildcardProjection": {"a": 0, "c": 0},
            }),
            "{name}: {listed:?}"
        );
        db.run_command(doc! {"createIndexes": name, "indexes": [{"key": {"a.$**": 1, "b": 1}}]})
            .await
            .unwrap();
        let listed = list_indexes(&db, name).await;
        assert!(
            listed
                .iter()
                .any(|i| i.get_str("name") == Ok("a.$**_1_b_1")),
            "{listed:?}"
        );
    }
    let refused = [
        (doc! {"key": {"a": 1, "a.$**": 1}}, 7246204),
        (doc! {"key": {"a.b.c": 1, "a.b.$**": 1}}, 7246204),
        (doc! {"key": {"a.$**": 1, "b.$**": 1}}, 7246201),
        (doc! {"key": {"a.$**": 1, "b": "hashed"}}, 67),
        (doc! {"key": {"a.$**": 1, "b": 1}, "unique": true}, 67),
        (doc! {"key": {"a.$**": 1, "b": 1}, "sparse": true}, 67),
        (
            doc! {"key": {"a.$**": 1, "b": 1}, "expireAfterSeconds": 60},
            67,
        ),
        (doc! {"key": {"a": 1, "$**": 1}}, 67),
        (
            doc! {"key": {"a": 1, "$**": 1}, "wildcardProjection": {}},
            9,
        ),
        (
            doc! {"key": {"a": 1, "b.$**": 1}, "wildcardProjection": {"x": 1}},
            9,
        ),
        (
            doc! {"key": {"a": 1, "$**": 1}, "wildcardProjection": {"a": 1}},
            7246208,
        ),
        (
            doc! {"key": {"a": 1, "$**": 1}, "wildcardProjection": {"_id": 0}},
            7246210,
        ),
        (
            doc! {"key": {"a": 1, "b": 1, "$**": 1}, "wildcardProjection": {"b": 0}},
            7246209,
        ),
        (
            doc! {"key": {"$**": 1, "c": 1}, "wildcardProjection": {"a.b": 1, "a.b.c": 1}},
            7246200,
        ),
        (
            doc! {"key": {"$**": 1, "c": 1}, "wildcardProjection": {"a": 0, "c": 0, "b": 1}},
            7246211,
        ),
        (
            doc! {"key": {"st": 1, "$**": 1}, "wildcardProjection": {"a": "x"}},
            51271,
        ),
    ];
    for (spec, code) in refused {
        for name in ["plain", "sharded"] {
            let err = db
                .run_command(doc! {"createIndexes": name, "indexes": [spec.clone()]})
                .await
                .unwrap_err();
            assert_eq!(error_code(&err), Some(code), "{spec} on {name}: {err}");
        }
    }
    // A compound wildcard index starting with the shard key's fields cannot serve it.
    let other = db.collection::<Document>("other");
    other.insert_one(doc! {"a": 1}).await.unwrap();
    let index = doc! {"key": {"a": 1, "$**": 1}, "wildcardProjection": {"a": 0}};
    db.run_command(doc! {"createIndexes": "other", "indexes": [index]})
        .await
        .unwrap();
    let err = client
        .database("admin")
        .run_command(doc! {"shardCollection": "cwi_specs.other", "key": {"a": 1}})
        .await
        .unwrap_err();
    assert!(error_code(&err).is_some(), "{err}");
}

async fn compound_explain_and_hints(client: &Client) {
    let index = doc! {"key": {"a": 1, "$**": 1}, "wildcardProjection": {"a": 0}};
    let db = setup(client, "cwi_explain", index).await;
    let coll = db.collection::<Document>("plain");
    coll.insert_many([
        doc! {"_id": 1, "a": 5, "b": 3},
        doc! {"_id": 2, "a": 5, "b": 4},
        doc! {"_id": 3, "a": 5},
        doc! {"_id": 4, "a": 6, "b": 3},
        doc! {"_id": 5, "b": 3},
        doc! {"_id": 6, "x": 1},
    ])
    .await
    .unwrap();
    let explain = |filter: Document| {
        let db = db.clone();
        async move {
            db.run_command(doc! {"explain": {"find": "plain", "filter": filter}})
                .await
                .unwrap()
        }
    };
    let scan = ixscan(&explain(doc! {"a": 5, "b": 3}).await).unwrap();
    assert_eq!(scan.get_str("indexName").unwrap(), "a_1_$**_1");
    assert_eq!(
        scan.get_document("keyPattern").unwrap(),
        &doc! {"a": 1, "$_path": 1, "b": 1}
    );
    assert_eq!(
        scan.get_document("indexBounds").unwrap(),
        &doc! {"a": ["[5, 5]"], "$_path": ["[\"b\", \"b\"]"], "b": ["[3, 3]"]}
    );
    // A regular field after the wildcard field is bounded once the value is fixed.
    db.run_command(doc! {"createIndexes": "after", "indexes": [{"key": {"w.$**": 1, "c": -1}}]})
        .await
        .unwrap();
    let after = db.collection::<Document>("after");
    after
        .insert_many([
            doc! {"_id": 1, "w": {"x": 1}, "c": 2},
            doc! {"_id": 2, "w": {"x": 1}, "c": 3},
            doc! {"_id": 3, "w": {"x": [1, 2]}},
        ])
        .await
        .unwrap();
    let explained = db
        .run_command(doc! {"explain": {"find": "after", "filter": {"w.x": 1, "c": {"$gte": 2}}}})
        .await
        .unwrap();
    assert_eq!(
        ixscan(&explained)
            .unwrap()
            .get_document("indexBounds")
            .unwrap(),
        &doc! {"$_path": ["[\"w.x\", \"w.x\"]"], "w.x": ["[1, 1]"], "c": ["[inf.0, 2]"]}
    );
    // After a range, `$exists` or a regex on the path, the regular field after it keeps its
    // own bounds, checked on each key before its document is read.
    after
        .insert_many([
            doc! {"_id": 4, "w": {"y": "ab"}, "c": 2},
            doc! {"_id": 5, "w": {"y": "ac"}, "c": 3},
            doc! {"_id": 6, "w": {"y": {"z": 1}}, "c": 3},
        ])
        .await
        .unwrap();
    for (filter, bounds, expected) in [
        (
            doc! {"w.x": {"$gt": 0}, "c": {"$gte": 3}},
            doc! {"$_path": ["[\"w.x\", \"w.x\"]"], "w.x": ["(0, inf.0]"], "c": ["[inf.0, 3]"]},
            vec![2],
        ),
        (
            doc! {"w.y": {"$exists": true}, "c": 3},
            doc! {
                "$_path": ["[\"w.y\", \"w.y\"]", "[\"w.y.\", \"w.y/\")"],
                "w.y": ["[MinKey, MaxKey]"], "c": ["[3, 3]"],
            },
            vec![5, 6],
        ),
        (
            doc! {"w.y": {"$regex": "^a"}, "c": 2},
            doc! {
                "$_path": ["[\"w.y\", \"w.y\"]"], "w.y": ["[\"a\", \"b\")", "[/^a/, /^a/]"],
                "c": ["[2, 2]"],
            },
            vec![4],
        ),
    ] {
        let explained = db
            .run_command(doc! {"explain": {"find": "after", "filter": filter.clone()}, "verbosity": "executionStats"})
            .await
            .unwrap();
        let scan = ixscan(&explained).unwrap();
        assert_eq!(
            scan.get_document("indexBounds").unwrap(),
            &bounds,
            "{filter}"
        );
        // Keys outside the bounds are passed over: only matching documents are read.
        let stats = explained.get_document("executionStats").unwrap();
        let docs_examined = match stats.get("totalDocsExamined") {
            Some(Bson::Int32(n)) => i64::from(*n),
            Some(Bson::Int64(n)) => *n,
            other => panic!("{other:?} in {stats}"),
        };
        assert_eq!(docs_examined, expected.len() as i64, "{filter}: {stats}");
        assert_eq!(
            ids(&find_all(&after, filter.clone()).await),
            expected,
            "{filter}"
        );
    }
    for (filter, expected) in [
        (doc! {"w.x": 1, "c": {"$gte": 2}}, vec![1, 2]),
        (doc! {"w.x": 1, "c": null}, vec![3]),
        (
            doc! {"w.x": {"$in": [1, 2]}, "c": {"$exists": false}},
            vec![3],
        ),
    ] {
        assert_eq!(
            ids(&find_all(&after, filter.clone()).await),
            expected,
            "{filter}"
        );
    }
    // The regular field alone: every `$_path`, those of documents with no leaf included.
    let scan = ixscan(&explain(doc! {"a": 5}).await).unwrap();
    assert_eq!(
        scan.get_document("keyPattern").unwrap(),
        &doc! {"a": 1, "$_path": 1}
    );
    assert_eq!(
        scan.get_document("indexBounds").unwrap(),
        &doc! {"a": ["[5, 5]"], "$_path": ["[MinKey, MinKey]", "[\"\", {})"]}
    );
    // The leading field must be bounded, and not to what a missing field matches.
    for unindexed in [doc! {"b": 3}, doc! {"a": null}, doc! {"a": {"$ne": 5}}] {
        assert!(
            ixscan(&explain(unindexed.clone()).await).is_none(),
            "{unindexed}"
        );
    }
    // After a range on the regular field, the path and its value keep their bounds too.
    let scan = ixscan(&explain(doc! {"a": {"$gte": 5}, "b": 3}).await).unwrap();
    assert_eq!(
        scan.get_document("indexBounds").unwrap(),
        &doc! {"a": ["[5, inf.0]"], "$_path": ["[\"b\", \"b\"]"], "b": ["[3, 3]"]}
    );
    for (filter, expected) in [
        (doc! {"a": 5, "b": 3}, vec![1]),
        (doc! {"a": 5}, vec![1, 2, 3]),
        (doc! {"a": {"$gte": 5}, "b": 3}, vec![1, 4]),
        (doc! {"a": 5, "b": {"$exists": true}}, vec![1, 2]),
        (doc! {"a": null}, vec![5, 6]),
    ] {
        assert_eq!(
            ids(&find_all(&coll, filter.clone()).await),
            expected,
            "{filter}"
        );
    }
    // A sort on the regular field before the wildcard field comes from the scan.
    let sorted = doc! {"find": "plain", "filter": {"a": {"$in": [5, 6]}}, "sort": {"a": -1}};
    let explained = db
        .run_command(doc! {"explain": sorted.clone()})
        .await
        .unwrap();
    assert!(!explained.to_string().contains("\"SORT\""), "{explained}");
    assert_eq!(
        ixscan(&explained).unwrap().get_str("direction").unwrap(),
        "backward"
    );
    let found = db.run_command(sorted).await.unwrap();
    let found = crate::harness::first_batch(&found);
    assert_eq!(found[0].get_i32("_id").unwrap(), 4);
    assert_eq!(ids(&found), [1, 2, 3, 4]);
    // A hinted index is scanned whole on a leading field only `$exists: true` bounds, as
    // MongoDB does, with or without a path queried.
    for (filter, bounds, expected) in [
        (
            doc! {"a": {"$exists": true}},
            doc! {"a": ["[MinKey, MaxKey]"], "$_path": ["[MinKey, MinKey]", "[\"\", {})"]},
            vec![1, 2, 3, 4],
        ),
        (
            doc! {"a": {"$exists": true}, "b": 3},
            doc! {"a": ["[MinKey, MaxKey]"], "$_path": ["[\"b\", \"b\"]"], "b": ["[3, 3]"]},
            vec![1, 4],
        ),
    ] {
        let find = doc! {"find": "plain", "filter": filter.clone(), "hint": "a_1_$**_1"};
        let explained = db
            .run_command(doc! {"explain": find.clone()})
            .await
            .unwrap();
        let scan = ixscan(&explained).unwrap();
        assert_eq!(
            scan.get_document("indexBounds").unwrap(),
            &bounds,
            "{filter}"
        );
        let found = db.run_command(find).await.unwrap();
        assert_eq!(
            ids(&crate::harness::first_batch(&found)),
            expected,
            "{filter}"
        );
    }
    // Sorts on the queried path and the fields after it, or on fields one point fixes, come
    // from the scan as MongoDB provides them; not on a path an array holds several values of.
    for (coll_name, find, blocking, expected) in [
        (
            "plain",
            doc! {"filter": {"a": 5, "b": {"$gte": 3}}, "sort": {"b": -1}},
            false,
            vec![2, 1],
        ),
        (
            "plain",
            doc! {"filter": {"a": 5, "b": 3}, "sort": {"b": -1, "a": 1}},
            false,
            vec![1],
        ),
        (
            "after",
            doc! {"filter": {"w.x": 1}, "sort": {"c": 1}},
            false,
            vec![3, 1, 2],
        ),
        (
            "after",
            doc! {"filter": {"w.x": {"$gte": 1}}, "sort": {"w.x": 1}},
            true,
            vec![1, 2, 3],
        ),
    ] {
        let mut command = doc! {"find": coll_name};
        command.extend(find.clone());
        let explained = db
            .run_command(doc! {"explain": command.clone()})
            .await
            .unwrap();
        assert!(ixscan(&explained).is_some(), "{find}: {explained}");
        assert_eq!(
            explained.to_string().contains("\"SORT\""),
            blocking,
            "{find}: {explained}"
        );
        let found = db.run_command(command).await.unwrap();
        let found = crate::harness::first_batch(&found);
        let order: Vec<i32> = found.iter().map(|d| d.get_i32("_id").unwrap()).collect();
        if blocking {
            assert_eq!(order.len(), expected.len(), "{find}");
        } else {
            assert_eq!(order, expected, "{find}");
        }
    }
    // Hints by name and by key pattern; a hint whose leading field no predicate serves plans
    // nothing (MongoDB's planner needs one on an index's first field).
    for hint in [
        Bson::String("a_1_$**_1".into()),
        Bson::Document(doc! {"a": 1, "$**": 1}),
    ] {
        let found = db
            .run_command(doc! {"find": "plain", "filter": {"a": 5}, "sort": {"_id": 1}, "hint": hint.clone()})
            .await
            .unwrap();
        assert_eq!(
            ids(&crate::harness::first_batch(&found)),
            [1, 2, 3],
            "{hint}"
        );
        let err = db
            .run_command(doc! {"find": "plain", "filter": {"b": 3}, "hint": hint.clone()})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(291), "{err}");
        // min/max never go with a wildcard index.
        for bounds in [
            doc! {"min": {"a": 0.5}},
            doc! {"filter": {"a": 5}, "min": {"a": 5}, "max": {"a": 6}},
            doc! {"min": {"a": 5, "$**": 1}},
        ] {
            let mut find = doc! {"find": "plain", "hint": hint.clone()};
            find.extend(bounds.clone());
            let err = db.run_command(find).await.unwrap_err();
            assert_eq!(error_code(&err), Some(51174), "{bounds}: {err}");
        }
    }
}

async fn compound_writes_keep_the_index(client: &Client) {
    let index = doc! {"key": {"k": 1, "$**": 1}, "wildcardProjection": {"k": 0}};
    let db = setup(client, "cwi_writes", index).await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        coll.insert_many([
            doc! {"_id": 1, "k": 1, "a": {"b": 1}},
            doc! {"_id": 70, "k": 2},
        ])
        .await
        .unwrap();
        let found = |filter: Document| {
            let coll = coll.clone();
            async move { ids(&find_all(&coll, filter).await) }
        };
        assert_eq!(found(doc! {"k": {"$gte": 1}}).await, [1, 70], "{name}");
        // An array in a regular field is refused, and nothing is written.
        let err = coll
            .insert_one(doc! {"_id": 2, "k": [1, 2]})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(7246301), "{name}: {err}");
        let err = coll
            .update_one(doc! {"_id": 70}, doc! {"$set": {"k": [3]}})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(7246301), "{name}: {err}");
        assert_eq!(found(doc! {"_id": {"$in": [2]}}).await, Vec::<i32>::new());
        assert_eq!(found(doc! {"k": 2}).await, [70], "{name}");
        coll.update_one(doc! {"_id": 1}, doc! {"$set": {"k": 5, "a.b": 7}})
            .await
            .unwrap();
        assert_eq!(found(doc! {"k": 1}).await, Vec::<i32>::new(), "{name}");
        assert_eq!(found(doc! {"k": 5, "a.b": 7}).await, [1], "{name}");
        coll.update_one(doc! {"_id": 80}, doc! {"$set": {"k": 9, "z": 1}})
            .upsert(true)
            .await
            .unwrap();
        assert_eq!(found(doc! {"k": 9, "z": 1}).await, [80], "{name}");
        coll.find_one_and_update(doc! {"_id": 80}, doc! {"$unset": {"z": ""}})
            .await
            .unwrap();
        assert_eq!(found(doc! {"k": 9, "z": 1}).await, Vec::<i32>::new());
        assert_eq!(found(doc! {"k": 9}).await, [80], "{name}");
        coll.delete_one(doc! {"_id": 80}).await.unwrap();
        assert_eq!(found(doc! {"k": 9}).await, Vec::<i32>::new(), "{name}");
        // A build over a document with an array in a regular field fails, leaving no index.
        let pre = db.collection::<Document>("prebuilt");
        pre.insert_one(doc! {"k": [1], "x": 1}).await.unwrap();
        let spec = doc! {"key": {"k": 1, "$**": 1}, "wildcardProjection": {"k": 0}};
        let err = db
            .run_command(doc! {"createIndexes": "prebuilt", "indexes": [spec]})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(7246301), "{name}: {err}");
        assert_eq!(list_indexes(&db, "prebuilt").await.len(), 1, "{name}");
        pre.drop().await.unwrap();
        // A transaction's writes are found through the index after the commit only.
        let mut session = client.start_session().await.unwrap();
        session.start_transaction().await.unwrap();
        coll.insert_one(doc! {"_id": 90, "k": 3, "t": 1})
            .session(&mut session)
            .await
            .unwrap();
        assert_eq!(found(doc! {"k": 3, "t": 1}).await, Vec::<i32>::new());
        session.commit_transaction().await.unwrap();
        assert_eq!(found(doc! {"k": 3, "t": 1}).await, [90], "{name}");
    }
}

both_modes!(
    compound_specs_and_errors,
    compound_explain_and_hints,
    compound_writes_keep_the_index
);
