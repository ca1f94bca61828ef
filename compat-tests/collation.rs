//! Collations end to end through the router, on an unsharded collection and on one sharded by
//! a string key split across both shards: case-insensitive finds, `numericOrdering` sorts,
//! count, distinct, `$group` and expressions, updates (selection and operators), deletes and
//! findAndModify with a collation; `$regex` unaffected; the simple collation still binary.

use crate::harness::{aggregate_documents, both_modes, error_code};
use futures::TryStreamExt;
use mongodb::Client;
use mongodb::bson::{Document, doc};
use mongodb::options::Collation;

fn case_insensitive() -> Collation {
    Collation::builder()
        .locale("en")
        .strength(mongodb::options::CollationStrength::Secondary)
        .build()
}

/// What `filter` finds under `collation`, in `sort` order.
async fn found(
    coll: &mongodb::Collection<Document>,
    filter: Document,
    sort: Document,
    collation: Collation,
) -> Vec<Document> {
    coll.find(filter)
        .sort(sort)
        .collation(collation)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

/// What `pipeline` outputs under the case-insensitive collation.
async fn case_insensitively(
    coll: &mongodb::Collection<Document>,
    pipeline: Vec<Document>,
) -> Vec<Document> {
    let cursor = coll.aggregate(pipeline).collation(case_insensitive());
    cursor.await.unwrap().try_collect().await.unwrap()
}

async fn ids(coll: &mongodb::Collection<Document>, filter: Document) -> Vec<i32> {
    let docs = found(coll, filter, doc! {"_id": 1}, case_insensitive()).await;
    docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
}

/// `{_id: i, s: words[i], n: i}` for each word.
async fn insert_words(coll: &mongodb::Collection<Document>, words: &[&str]) {
    let docs: Vec<Document> = (0..words.len())
        .map(|i| doc! {"_id": i as i32, "s": words[i], "n": i as i32})
        .collect();
    coll.insert_many(docs).await.unwrap();
}

/// Splits `ns` (sharded by `{s: 1}`) at "m", the two chunks on different shards.
async fn split_across_shards(client: &Client, ns: &str) {
    crate::harness::split_across_shards(
        client,
        ns,
        doc! {"s": "m"},
        [doc! {"s": "a"}, doc! {"s": "z"}],
    )
    .await;
}

/// `sharded` is split at "m", the upper chunk on the other shard.
async fn setup(client: &Client) -> mongodb::Database {
    let db = client.database("collation");
    db.drop().await.unwrap();
    client
        .database("admin")
        .run_command(doc! {"shardCollection": "collation.sharded", "key": {"s": 1}})
        .await
        .unwrap();
    split_across_shards(client, "collation.sharded").await;
    let words = [
        "apple", "Apple", "APPLE", "Zebra", "zebra", "item10", "item9", "Éclair",
    ];
    for name in ["plain", "sharded"] {
        insert_words(&db.collection(name), &words).await;
    }
    db
}

async fn queries_compare_by_the_collation(client: &Client) {
    let db = setup(client).await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        assert_eq!(ids(&coll, doc! {"s": "apple"}).await, [0, 1, 2], "{name}");
        assert_eq!(
            ids(&coll, doc! {"s": {"$in": ["ZEBRA"]}}).await,
            [3, 4],
            "{name}"
        );
        assert_eq!(
            ids(&coll, doc! {"s": {"$gte": "Z"}}).await,
            [3, 4],
            "{name}"
        );
        // `$regex` ignores the collation.
        assert_eq!(
            ids(&coll, doc! {"s": {"$regex": "^a"}}).await,
            [0],
            "{name}"
        );
        // The simple collation stays binary.
        assert_eq!(
            coll.count_documents(doc! {"s": "apple"}).await.unwrap(),
            1,
            "{name}"
        );
        let counted = coll
            .count_documents(doc! {"s": "APPLE"})
            .collation(case_insensitive())
            .await
            .unwrap();
        assert_eq!(counted, 3, "{name}");
        let distinct = coll
            .distinct("s", doc! {"s": {"$in": ["apple", "zebra"]}})
            .collation(case_insensitive())
            .await
            .unwrap();
        assert_eq!(distinct.len(), 2, "{name}: {distinct:?}");

        // numericOrdering: "item9" before "item10".
        let numeric = Collation::builder()
            .locale("en")
            .numeric_ordering(true)
            .build();
        let filter = doc! {"s": {"$in": ["item10", "item9"]}};
        let sorted: Vec<String> = found(&coll, filter, doc! {"s": 1}, numeric)
            .await
            .iter()
            .map(|d| d.get_str("s").unwrap().to_string())
            .collect();
        assert_eq!(sorted, ["item9", "item10"], "{name}");

        // `$group` keys and `$eq` in expressions.
        let groups = case_insensitively(
            &coll,
            vec![
                doc! {"$group": {"_id": "$s", "n": {"$sum": 1}}},
                doc! {"$match": {"$expr": {"$eq": ["$_id", "APPLE"]}}},
            ],
        )
        .await;
        assert_eq!(groups.len(), 1, "{name}: {groups:?}");
        assert_eq!(groups[0].get_i32("n").unwrap(), 3, "{name}");

        // `$setWindowFields` partitions by it.
        let window = doc! {"partitionBy": "$s", "output": {"n": {"$count": {}}}};
        let partitioned = case_insensitively(
            &coll,
            vec![
                doc! {"$setWindowFields": window},
                doc! {"$match": {"_id": 2}},
            ],
        )
        .await;
        assert_eq!(
            partitioned[0].get_i32("n").unwrap(),
            3,
            "{name}: {partitioned:?}"
        );

        // `$lookup` joins by the pipeline's collation.
        let lookup = doc! {"from": name, "localField": "s", "foreignField": "s", "as": "same"};
        let joined = case_insensitively(
            &coll,
            vec![doc! {"$match": {"_id": 0}}, doc! {"$lookup": lookup}],
        )
        .await;
        assert_eq!(
            joined[0].get_array("same").unwrap().len(),
            3,
            "{name}: {joined:?}"
        );
    }
}

async fn writes_select_by_the_collation(client: &Client) {
    let db = setup(client).await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        let updated = coll
            .update_many(doc! {"s": "APPLE"}, doc! {"$set": {"fruit": true}})
            .collation(case_insensitive())
            .await
            .unwrap();
        assert_eq!(updated.modified_count, 3, "{name}");
        let found = coll
            .find_one_and_update(doc! {"s": "ÉCLAIR"}, doc! {"$set": {"cake": true}})
            .collation(case_insensitive())
            .await
            .unwrap();
        assert_eq!(found.unwrap().get_i32("_id").unwrap(), 7, "{name}");
        let deleted = coll
            .delete_many(doc! {"s": "ZEBRA"})
            .collation(case_insensitive())
            .await
            .unwrap();
        assert_eq!(deleted.deleted_count, 2, "{name}");
        assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 6, "{name}");
        // Update operators compare strings by the collation too.
        coll.update_one(doc! {"_id": 0}, doc! {"$set": {"tags": ["a", "b"]}})
            .await
            .unwrap();
        coll.update_one(
            doc! {"_id": 0},
            doc! {"$pull": {"tags": "A"}, "$addToSet": {"more": {"$each": ["x", "X"]}}},
        )
        .collation(case_insensitive())
        .await
        .unwrap();
        let back = coll.find_one(doc! {"_id": 0}).await.unwrap().unwrap();
        assert_eq!(back.get_array("tags").unwrap().len(), 1, "{name}: {back}");
        assert_eq!(back.get_array("more").unwrap().len(), 1, "{name}: {back}");
        // So do `$pull` conditions and array filters.
        coll.update_one(
            doc! {"_id": 0},
            doc! {"$pull": {"tags": {"$eq": "B"}}, "$set": {"more.$[e]": "y"}},
        )
        .array_filters(vec![doc! {"e": "X"}])
        .collation(case_insensitive())
        .await
        .unwrap();
        let back = coll.find_one(doc! {"_id": 0}).await.unwrap().unwrap();
        assert_eq!(back.get_array("tags").unwrap().len(), 0, "{name}: {back}");
        assert_eq!(
            back.get_array("more").unwrap()[0].as_str(),
            Some("y"),
            "{name}: {back}"
        );
        assert_eq!(
            coll.count_documents(doc! {"fruit": true}).await.unwrap(),
            3,
            "{name}"
        );
        // And on the document an upsert inserts, for both commands that upsert (a number
        // for the shard key, which a collation leaves exact).
        coll.update_one(
            doc! {"_id": 100, "s": 100},
            doc! {"$addToSet": {"more": {"$each": ["x", "X"]}}},
        )
        .upsert(true)
        .collation(case_insensitive())
        .await
        .unwrap();
        let upserted = coll
            .find_one_and_update(
                doc! {"_id": 101, "s": 101},
                doc! {"$addToSet": {"more": {"$each": ["x", "X"]}}},
            )
            .upsert(true)
            .return_document(mongodb::options::ReturnDocument::After)
            .collation(case_insensitive())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            upserted.get_array("more").unwrap().len(),
            1,
            "{name}: {upserted}"
        );
        let back = coll.find_one(doc! {"_id": 100}).await.unwrap().unwrap();
        assert_eq!(back.get_array("more").unwrap().len(), 1, "{name}: {back}");
        coll.delete_many(doc! {"_id": {"$in": [100, 101]}})
            .await
            .unwrap();
    }
}

/// A collection's default collation (and a view's): shown normalized by listCollections,
/// inherited by operations without one, overridden by `{locale: "simple"}`; a view's own,
/// which an operation may not override.
async fn defaults_of_collections_and_views(client: &Client) {
    let db = client.database("collation_defaults");
    db.drop().await.unwrap();
    db.run_command(doc! {"create": "ci", "collation": {"locale": "en", "strength": 2}})
        .await
        .unwrap();
    let listed = db
        .run_command(doc! {"listCollections": 1, "filter": {"name": "ci"}})
        .await
        .unwrap();
    assert_eq!(
        first_entry(&listed).get_document("options").unwrap(),
        &doc! {"collation": {
            "locale": "en", "caseLevel": false, "caseFirst": "off", "strength": 2,
            "numericOrdering": false, "alternate": "non-ignorable", "maxVariable": "punct",
            "normalization": false, "backwards": false, "version": "57.1",
        }}
    );
    let coll = db.collection::<Document>("ci");
    insert_words(&coll, &["apple", "Apple", "APPLE", "pear"]).await;
    assert_eq!(coll.count_documents(doc! {"s": "apple"}).await.unwrap(), 3);
    let simple = Collation::builder().locale("simple").build();
    let counted = coll
        .count_documents(doc! {"s": "apple"})
        .collation(simple.clone())
        .await
        .unwrap();
    assert_eq!(counted, 1);
    assert_eq!(coll.distinct("s", doc! {}).await.unwrap().len(), 2);
    let groups = aggregate_documents(&coll, vec![doc! {"$group": {"_id": "$s"}}]).await;
    assert_eq!(groups.len(), 2, "{groups:?}");
    let updated = coll
        .update_many(doc! {"s": "APPLE"}, doc! {"$set": {"f": 1}})
        .await
        .unwrap();
    assert_eq!(updated.modified_count, 3);

    // A view does not inherit its source's default; it has its own.
    db.run_command(doc! {"create": "plainView", "viewOn": "ci", "pipeline": []})
        .await
        .unwrap();
    let view = db.collection::<Document>("plainView");
    assert_eq!(view.count_documents(doc! {"s": "apple"}).await.unwrap(), 1);
    let err = view
        .count_documents(doc! {})
        .collation(case_insensitive())
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(167), "{err}");
    db.run_command(doc! {
        "create": "ciView", "viewOn": "ci", "pipeline": [],
        "collation": {"locale": "en", "strength": 2},
    })
    .await
    .unwrap();
    let view = db.collection::<Document>("ciView");
    assert_eq!(view.count_documents(doc! {"s": "apple"}).await.unwrap(), 3);
    let err = view
        .count_documents(doc! {})
        .collation(simple)
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(167), "{err}");
    let listed = db
        .run_command(doc! {"listCollections": 1, "filter": {"name": "ciView"}})
        .await
        .unwrap();
    let options = first_entry(&listed).get_document("options").unwrap();
    let locale = options.get_document("collation").unwrap().get_str("locale");
    assert_eq!(locale.unwrap(), "en");
    // A view on a view compares as the view under it does.
    let err = db
        .run_command(doc! {"create": "mixed", "viewOn": "ciView", "pipeline": []})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(167), "{err}");

    // Shard keys keep the simple collation.
    let err = client
        .database("admin")
        .run_command(doc! {
            "shardCollection": "collation_defaults.other", "key": {"a": 1},
            "collation": {"locale": "fr"},
        })
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(2), "{err}");
}

/// The `_id` index of a collection with a non-simple default collation has that collation, as
/// in MongoDB: `"a"` and `"A"` are one `_id` case-insensitively, found by a query in the
/// collection's collation through the index, and not by one in another collation.
async fn id_index_in_the_default_collation(client: &Client) {
    let db = client.database("collation_ids");
    db.drop().await.unwrap();
    db.run_command(doc! {"create": "ci", "collation": {"locale": "en", "strength": 2}})
        .await
        .unwrap();
    let coll = db.collection::<Document>("ci");
    coll.insert_one(doc! {"_id": "a", "n": 1}).await.unwrap();
    let err = coll.insert_one(doc! {"_id": "A"}).await.unwrap_err();
    assert_eq!(error_code(&err), Some(11000), "{err}");
    let listed = db.run_command(doc! {"listIndexes": "ci"}).await.unwrap();
    let id_index = first_entry(&listed);
    assert_eq!(id_index.get_str("name").unwrap(), "_id_");
    let locale = id_index
        .get_document("collation")
        .unwrap()
        .get_str("locale");
    assert_eq!(locale.unwrap(), "en", "{id_index}");
    // Asking for the `_id` index again is a no-op in its collation, BadValue in another.
    db.run_command(doc! {"createIndexes": "ci", "indexes": [{"key": {"_id": 1}, "name": "_id_"}]})
        .await
        .unwrap();
    let err = db
        .run_command(doc! {"createIndexes": "ci", "indexes": [
            {"key": {"_id": 1}, "name": "_id_", "collation": {"locale": "fr"}},
        ]})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(2), "{err}");

    let found = coll.find_one(doc! {"_id": "A"}).await.unwrap().unwrap();
    assert_eq!(found.get_str("_id").unwrap(), "a");
    let simple = Collation::builder().locale("simple").build();
    let missing = coll
        .find_one(doc! {"_id": "A"})
        .collation(simple.clone())
        .await
        .unwrap();
    assert!(missing.is_none(), "{missing:?}");
    let plan = |collation: Option<Document>| {
        let mut find = doc! {"find": "ci", "filter": {"_id": "A"}};
        if let Some(collation) = collation {
            find.insert("collation", collation);
        }
        let db = db.clone();
        async move {
            let explained = db
                .run_command(doc! {"explain": find, "verbosity": "queryPlanner"})
                .await
                .unwrap();
            explained.to_string()
        }
    };
    let by_index = plan(None).await;
    assert!(!by_index.contains("COLLSCAN"), "{by_index}");
    let scanned = plan(Some(doc! {"locale": "simple"})).await;
    assert!(scanned.contains("COLLSCAN"), "{scanned}");

    let updated = coll
        .update_one(doc! {"_id": "A"}, doc! {"$inc": {"n": 1}})
        .await
        .unwrap();
    assert_eq!(updated.modified_count, 1);
    let upserted = coll
        .update_one(doc! {"_id": "B"}, doc! {"$set": {"n": 5}})
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(upserted.upserted_id, Some(mongodb::bson::Bson::from("B")));
    let err = coll.insert_one(doc! {"_id": "b"}).await.unwrap_err();
    assert_eq!(error_code(&err), Some(11000), "{err}");
    let modified = coll
        .find_one_and_update(doc! {"_id": "b"}, doc! {"$inc": {"n": 1}})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(modified.get_str("_id").unwrap(), "B");
    let deleted = coll.delete_one(doc! {"_id": "b"}).await.unwrap();
    assert_eq!(deleted.deleted_count, 1);
    let left: Vec<Document> = coll
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(left, vec![doc! {"_id": "a", "n": 2}]);
}

fn first_entry(reply: &Document) -> &Document {
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch");
    batch.unwrap()[0].as_document().unwrap()
}

/// Indexes with a collation: keys in its collation (a case-insensitive unique index refuses
/// "A" beside "a"), inherited from the collection's default, shown by listIndexes; used for
/// string bounds only by queries of the same collation (explain shows which).
async fn indexes_with_a_collation(client: &Client) {
    let db = client.database("collation_indexes");
    db.drop().await.unwrap();
    let coll = db.collection::<Document>("users");
    db.run_command(doc! {"createIndexes": "users", "indexes": [
        {"key": {"email": 1}, "name": "email_ci", "unique": true,
         "collation": {"locale": "en", "strength": 2}},
    ]})
    .await
    .unwrap();
    coll.insert_one(doc! {"_id": 1, "email": "ann@example.com"})
        .await
        .unwrap();
    let err = coll
        .insert_one(doc! {"_id": 2, "email": "ANN@example.com"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(11000), "{err}");
    coll.insert_one(doc! {"_id": 3, "email": "bob@example.com"})
        .await
        .unwrap();
    let listed = db.run_command(doc! {"listIndexes": "users"}).await.unwrap();
    let indexes = listed
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch");
    let indexes: Vec<&Document> = indexes
        .unwrap()
        .iter()
        .flat_map(|i| i.as_document())
        .collect();
    let email = indexes.iter().find(|i| i.get_str("name") == Ok("email_ci"));
    let collation = email.unwrap().get_document("collation").unwrap();
    assert_eq!(collation.get_i32("strength").unwrap(), 2, "{collation}");

    // Only a query of the index's collation bounds strings with it.
    let plan = |collation: Option<Document>| {
        let mut find = doc! {"find": "users", "filter": {"email": "ANN@EXAMPLE.COM"}};
        if let Some(collation) = collation {
            find.insert("collation", collation);
        }
        db.run_command(doc! {"explain": find, "verbosity": "queryPlanner"})
    };
    let ci = doc! {"locale": "en", "strength": 2};
    let same = plan(Some(ci.clone())).await.unwrap().to_string();
    assert!(same.contains("IXSCAN"), "{same}");
    let simple = plan(None).await.unwrap().to_string();
    assert!(!simple.contains("IXSCAN"), "{simple}");
    let found = found(
        &coll,
        doc! {"email": "ANN@EXAMPLE.COM"},
        doc! {},
        case_insensitive(),
    );
    assert_eq!(found.await.len(), 1);
    assert_eq!(
        coll.count_documents(doc! {"email": "ANN@EXAMPLE.COM"})
            .await
            .unwrap(),
        0
    );
    // One key pattern in two collations: two indexes, each serving its own queries.
    db.run_command(doc! {"createIndexes": "users", "indexes": [
        {"key": {"email": 1}, "name": "email_simple"},
    ]})
    .await
    .unwrap();
    let simple = plan(None).await.unwrap().to_string();
    assert!(simple.contains("email_simple"), "{simple}");
    let err = db
        .run_command(doc! {"dropIndexes": "users", "index": {"email": 1}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(181), "{err}");

    // Indexes inherit the collection's default collation.
    db.run_command(doc! {"create": "ci", "collation": ci.clone()})
        .await
        .unwrap();
    let ci_coll = db.collection::<Document>("ci");
    db.run_command(doc! {"createIndexes": "ci", "indexes": [
        {"key": {"name": 1}, "name": "name_1", "unique": true},
    ]})
    .await
    .unwrap();
    ci_coll
        .insert_one(doc! {"_id": 1, "name": "Zoë"})
        .await
        .unwrap();
    let err = ci_coll
        .insert_one(doc! {"_id": 2, "name": "ZOË"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(11000), "{err}");
    // Explain plans an operation under the collation it inherits.
    let commands = [
        doc! {"find": "ci", "filter": {"name": "zoë"}},
        doc! {"count": "ci", "query": {"name": "zoë"}},
        doc! {"distinct": "ci", "key": "name", "query": {"name": "zoë"}},
    ];
    for mut explained in commands {
        let command = explained.clone();
        let plan = |explained: Document| {
            db.run_command(doc! {"explain": explained, "verbosity": "queryPlanner"})
        };
        let inherited = plan(explained.clone()).await.unwrap().to_string();
        assert!(inherited.contains("IXSCAN"), "{command}: {inherited}");
        explained.insert("collation", doc! {"locale": "simple"});
        let simple = plan(explained).await.unwrap().to_string();
        assert!(!simple.contains("IXSCAN"), "{command}: {simple}");
    }
}

/// A sharded collection with a non-simple default collation: sharding it needs the simple
/// collation said explicitly; routers then send requests inheriting the default to every shard
/// their strings may be on.
async fn sharded_collection_with_a_default_collation(client: &Client) {
    let db = client.database("collation_sharded");
    db.drop().await.unwrap();
    db.run_command(doc! {"create": "ci", "collation": {"locale": "en", "strength": 2}})
        .await
        .unwrap();
    let admin = client.database("admin");
    let shard = doc! {"shardCollection": "collation_sharded.ci", "key": {"s": 1}};
    let err = admin.run_command(shard.clone()).await.unwrap_err();
    assert_eq!(error_code(&err), Some(2), "{err}");
    assert!(
        err.to_string()
            .contains("Must specify collation {locale: 'simple'}"),
        "{err}"
    );
    let mut simple = shard;
    simple.insert("collation", doc! {"locale": "simple"});
    admin.run_command(simple).await.unwrap();
    split_across_shards(client, "collation_sharded.ci").await;
    let coll = db.collection::<Document>("ci");
    // "Zebra" sorts before the split point "m" bytewise, "zebra" after it.
    insert_words(&coll, &["Zebra", "zebra", "apple"]).await;
    assert_eq!(coll.count_documents(doc! {"s": "ZEBRA"}).await.unwrap(), 2);
    // Each shard's `_id` index has the collection's default collation.
    coll.insert_one(doc! {"_id": "k", "s": "q"}).await.unwrap();
    let err = coll
        .insert_one(doc! {"_id": "K", "s": "q"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(11000), "{err}");
    let found = coll.find_one(doc! {"_id": "K"}).await.unwrap().unwrap();
    assert_eq!(found.get_str("_id").unwrap(), "k");
    coll.delete_one(doc! {"_id": "K"}).await.unwrap();
    let found = coll.find(doc! {"s": "zebra"}).await.unwrap();
    assert_eq!(found.try_collect::<Vec<_>>().await.unwrap().len(), 2);
    // Views over it read under their own collation, which the router learns from the shard.
    let ci = doc! {"locale": "en", "strength": 2};
    let views = [("ciView", Some(ci)), ("plainView", None)];
    for (name, collation) in views {
        let mut create = doc! {"create": name, "viewOn": "ci", "pipeline": []};
        if let Some(collation) = collation {
            create.insert("collation", collation);
        }
        db.run_command(create).await.unwrap();
    }
    let count = |name: &'static str| {
        let view = db.collection::<Document>(name);
        async move { view.count_documents(doc! {"s": "zebra"}).await.unwrap() }
    };
    assert_eq!(count("ciView").await, 2);
    assert_eq!(count("plainView").await, 1);
    let view = db.collection::<Document>("ciView");
    assert_eq!(view.distinct("s", doc! {}).await.unwrap().len(), 2);
    let deleted = coll.delete_many(doc! {"s": "zebra"}).await.unwrap();
    assert_eq!(deleted.deleted_count, 2);
}

/// `backwards`: French accent ordering (the last accent difference decides) for any locale,
/// and off for French of Canada, whose default it is; in sorts, on both collection kinds, and
/// in an index's keys (a sort of the index's collation comes from the scan).
async fn backwards_weighs_the_last_accent_first(client: &Client) {
    let db = setup(client).await;
    let backwards = Collation::builder().locale("en").backwards(true).build();
    let canadian = Collation::builder().locale("fr_CA").build();
    let canadian_forwards = Collation::builder()
        .locale("fr_CA")
        .backwards(false)
        .build();
    let words = ["côté", "coté", "cote", "côte"];
    let french = ["cote", "côte", "coté", "côté"];
    let english = ["cote", "coté", "côte", "côté"];
    let sorted = |coll: mongodb::Collection<Document>, collation: Collation| async move {
        let docs = found(
            &coll,
            doc! {"s": {"$regex": "^c"}},
            doc! {"s": 1},
            collation,
        )
        .await;
        let words: Vec<String> = docs
            .iter()
            .map(|d| d.get_str("s").unwrap().into())
            .collect();
        words
    };
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        let docs: Vec<Document> = words
            .iter()
            .enumerate()
            .map(|(i, w)| doc! {"_id": 100 + i as i32, "s": *w})
            .collect();
        coll.insert_many(docs).await.unwrap();
        assert_eq!(
            sorted(coll.clone(), backwards.clone()).await,
            french,
            "{name}"
        );
        assert_eq!(
            sorted(coll.clone(), canadian.clone()).await,
            french,
            "{name}"
        );
        let plain = sorted(coll.clone(), canadian_forwards.clone()).await;
        assert_eq!(plain, english, "{name}");
    }
    // An index in that collation keys by it: the sort comes from the scan.
    let coll = db.collection::<Document>("plain");
    db.run_command(doc! {"createIndexes": "plain", "indexes": [
        {"key": {"s": 1}, "name": "s_backwards",
         "collation": {"locale": "en", "backwards": true}},
    ]})
    .await
    .unwrap();
    let listed = db.run_command(doc! {"listIndexes": "plain"}).await.unwrap();
    assert!(
        listed.to_string().contains("\"backwards\": true"),
        "{listed}"
    );
    let find = doc! {"find": "plain", "filter": {"s": {"$gte": "c", "$lt": "d"}},
    "sort": {"s": 1}, "collation": {"locale": "en", "backwards": true}};
    let explained = db
        .run_command(doc! {"explain": find, "verbosity": "queryPlanner"})
        .await
        .unwrap()
        .to_string();
    assert!(explained.contains("s_backwards"), "{explained}");
    assert!(!explained.contains("\"SORT\""), "{explained}");
    assert_eq!(sorted(coll, backwards).await, french);
}

both_modes!(
    backwards_weighs_the_last_accent_first,
    queries_compare_by_the_collation,
    writes_select_by_the_collation,
    defaults_of_collections_and_views,
    id_index_in_the_default_collation,
    indexes_with_a_collation,
    sharded_collection_with_a_default_collation
);
