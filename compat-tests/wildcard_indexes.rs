//! Wildcard indexes end to end through the router, on an unsharded collection and on one
//! sharded across both shards: specs as `listIndexes` shows them and MongoDB's errors, queries
//! through the index returning exactly what a collection scan returns (random documents and
//! filters), `explain`'s `$_path` bounds, hints, and writes keeping the index correct.

use crate::harness::{both_modes, error_code, find_all};
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

/// `sharded` is sharded by `_id`, split at 50 with the upper chunk on the other shard.
pub(crate) async fn setup(client: &Client, db_name: &str, index: Document) -> mongodb::Database {
    let db = client.database(db_name);
    db.drop().await.unwrap();
    let ns = format!("{db_name}.sharded");
    client
        .database("admin")
        .run_command(doc! {"shardCollection": &ns, "key": {"_id": 1}})
        .await
        .unwrap();
    crate::harness::split_across_shards(
        client,
        &ns,
        doc! {"_id": 50},
        [doc! {"_id": 1}, doc! {"_id": 60}],
    )
    .await;
    for name in ["plain", "sharded"] {
        db.run_command(doc! {"createIndexes": name, "indexes": [index.clone()]})
            .await
            .unwrap();
    }
    db
}

pub(crate) async fn list_indexes(db: &mongodb::Database, name: &str) -> Vec<Document> {
    let raw = db.run_command(doc! {"listIndexes": name}).await.unwrap();
    crate::harness::first_batch(&raw)
}

async fn specs_and_errors(client: &Client) {
    let index = doc! {"key": {"$**": 1}, "name": "wild", "wildcardProjection": {"a": 1, "_id": 1}};
    let db = setup(client, "wildcard_specs", index).await;
    for name in ["plain", "sharded"] {
        let listed = list_indexes(&db, name).await;
        let wild = listed.iter().find(|i| i.get_str("name") == Ok("wild"));
        assert_eq!(
            wild,
            Some(
                &doc! {"v": 2, "key": {"$**": 1}, "name": "wild", "wildcardProjection": {"a": 1, "_id": 1}}
            ),
            "{name}: {listed:?}"
        );
        let sub = doc! {"key": {"a.b.$**": -1}};
        db.run_command(doc! {"createIndexes": name, "indexes": [sub]})
            .await
            .unwrap();
        let listed = list_indexes(&db, name).await;
        assert!(
            listed.iter().any(|i| i.get_str("name") == Ok("a.b.$**_-1")),
            "{listed:?}"
        );
    }
    // A nested projection names dotted paths, and is listed as given.
    let nested = doc! {"key": {"$**": 1}, "name": "nested", "wildcardProjection": {"n": {"b": 1, "c": {"d": true}}}};
    for name in ["nested_plain", "nested_sharded"] {
        if name == "nested_sharded" {
            client
                .database("admin")
                .run_command(
                    doc! {"shardCollection": "wildcard_specs.nested_sharded", "key": {"_id": 1}},
                )
                .await
                .unwrap();
        }
        db.run_command(doc! {"createIndexes": name, "indexes": [nested.clone()]})
            .await
            .unwrap();
        let listed = list_indexes(&db, name).await;
        let found = listed.iter().find(|i| i.get_str("name") == Ok("nested"));
        assert_eq!(
            found.and_then(|i| i.get_document("wildcardProjection").ok()),
            Some(&doc! {"n": {"b": 1, "c": {"d": true}}}),
            "{name}: {listed:?}"
        );
        let coll = db.collection::<Document>(name);
        coll.insert_many([
            doc! {"_id": 1, "n": {"b": 5, "c": {"d": 5, "e": 5}}},
            doc! {"_id": 2, "n": {"b": 6}},
        ])
        .await
        .unwrap();
        for (filter, indexed, expected) in [
            (doc! {"n.b": 5}, true, vec![1]),
            (doc! {"n.c.d": 5}, true, vec![1]),
            (doc! {"n.c.e": 5}, false, vec![1]),
        ] {
            let find = doc! {"find": name, "filter": filter.clone(), "hint": "nested"};
            let reply = db.run_command(find).await;
            if indexed {
                let docs = crate::harness::first_batch(&reply.unwrap());
                assert_eq!(ids(&docs), expected, "{filter}");
            } else {
                // The index holds no keys for paths its projection leaves out.
                assert_eq!(error_code(&reply.unwrap_err()), Some(291), "{filter}");
                assert_eq!(ids(&find_all(&coll, filter.clone()).await), expected);
            }
        }
    }
    let refused = [
        (
            doc! {"key": {"$**": 1}, "wildcardProjection": {"a": {}}},
            51270,
        ),
        (
            doc! {"key": {"$**": 1}, "wildcardProjection": {"a": {"b": 1}, "a.b": 0}},
            31250,
        ),
        (
            doc! {"key": {"$**": 1}, "wildcardProjection": {"a": {"b": 1, "c": 0}}},
            31254,
        ),
        (doc! {"key": {"$**": 1}, "unique": true}, 67),
        (doc! {"key": {"$**": 1}, "sparse": true}, 67),
        (doc! {"key": {"$**": 1}, "expireAfterSeconds": 10}, 67),
        (doc! {"key": {"$**": 1, "a": "hashed"}}, 67),
        (doc! {"key": {"a": "2dsphere", "b.$**": 1}}, 67),
        (doc! {"key": {"$**": "hashed"}}, 67),
        (doc! {"key": {"a": 1}, "wildcardProjection": {"a": 1}}, 2),
        (
            doc! {"key": {"a.$**": 1}, "wildcardProjection": {"b": 1}},
            9,
        ),
        (doc! {"key": {"$**": 1}, "wildcardProjection": {}}, 9),
        (
            doc! {"key": {"$**": 1}, "wildcardProjection": {"a": 1, "b": 0}},
            31254,
        ),
        (doc! {"key": {"$**": 1, "a.$**": 1}}, 7246201),
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
    // A wildcard key is no shard key.
    let err = client
        .database("admin")
        .run_command(doc! {"shardCollection": "wildcard_specs.other", "key": {"$**": 1}})
        .await
        .unwrap_err();
    assert!(error_code(&err).is_some(), "{err}");
}

/// A small deterministic generator (xorshift).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    pub(crate) fn scalar(&mut self) -> Bson {
        match self.below(9) {
            0..=2 => Bson::Int32(self.below(5) as i32),
            3 => Bson::Double(self.below(5) as f64 + 0.5),
            4 => Bson::String(["x", "xa", "y", "ab"][self.below(4) as usize].into()),
            5 => Bson::Null,
            6 => Bson::Boolean(self.below(2) == 0),
            7 => Bson::Int64(self.below(5) as i64),
            _ => Bson::String("x".into()),
        }
    }

    pub(crate) fn value(&mut self, depth: u32) -> Bson {
        match self.below(if depth > 1 { 1 } else { 10 }) {
            0 => self.scalar(),
            1 | 2 => self.scalar(),
            3 => Bson::Document(doc! {}),
            4 => Bson::Array(vec![]),
            5 => {
                let mut d = Document::new();
                for field in ["b", "c"] {
                    if self.below(3) > 0 {
                        d.insert(field, self.value(depth + 1));
                    }
                }
                Bson::Document(d)
            }
            6 | 7 => Bson::Array(
                (0..self.below(3) + 1)
                    .map(|_| self.value(depth + 1))
                    .collect(),
            ),
            8 => Bson::Array(vec![Bson::Array(vec![self.scalar()])]),
            _ => Bson::Array(vec![
                Bson::Document(doc! {"b": self.scalar()}),
                self.scalar(),
            ]),
        }
    }

    pub(crate) fn document(&mut self, id: i32) -> Document {
        let mut d = doc! {"_id": id};
        for field in ["a", "b"] {
            if self.below(4) > 0 {
                d.insert(field, self.value(0));
            }
        }
        d
    }

    pub(crate) fn predicate(&mut self) -> Bson {
        let v = match self.scalar() {
            Bson::Null => Bson::Int32(1),
            v => v,
        };
        match self.below(12) {
            0 => v,
            1 => Bson::Document(doc! {"$in": [v, self.scalar()]}),
            2 => Bson::Document(doc! {"$gt": v}),
            3 => Bson::Document(doc! {"$lte": v}),
            4 => Bson::Document(doc! {"$gte": 1, "$lt": 4}),
            5 => Bson::Document(doc! {"$exists": true}),
            6 => Bson::RegularExpression(mongodb::bson::Regex {
                pattern: "^x".into(),
                options: String::new(),
            }),
            7 => Bson::Document(doc! {}),
            8 => Bson::Null,
            9 => Bson::Document(doc! {"$exists": false}),
            10 => Bson::Document(doc! {"$ne": v}),
            _ => Bson::Document(doc! {"$regex": "a$"}),
        }
    }

    pub(crate) fn one(&mut self) -> Document {
        let paths = ["a", "b", "a.b", "a.c", "b.b"];
        let mut d = Document::new();
        d.insert(paths[self.below(5) as usize], self.predicate());
        d
    }

    pub(crate) fn filter(&mut self) -> Document {
        match self.below(5) {
            0 => doc! {"$and": [self.one(), self.one()]},
            1 => doc! {"$or": [self.one(), self.one()]},
            _ => self.one(),
        }
    }
}

pub(crate) fn ids(docs: &[Document]) -> Vec<i32> {
    let mut ids: Vec<i32> = docs.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    ids.sort_unstable();
    ids
}

async fn queries_match_a_collection_scan(client: &Client) {
    let db = setup(client, "wildcard_queries", doc! {"key": {"$**": 1}}).await;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let docs: Vec<Document> = (0..100).map(|i| rng.document(i)).collect();
    for name in ["plain", "sharded"] {
        db.collection::<Document>(name)
            .insert_many(docs.clone())
            .await
            .unwrap();
    }
    let mut used = 0;
    for _ in 0..150 {
        let filter = rng.filter();
        for name in ["plain", "sharded"] {
            let coll = db.collection::<Document>(name);
            let planned = find_all(&coll, filter.clone()).await;
            let scanned: Vec<Document> = {
                use futures::TryStreamExt;
                coll.find(filter.clone())
                    .hint(mongodb::options::Hint::Keys(doc! {"$natural": 1}))
                    .await
                    .unwrap()
                    .try_collect()
                    .await
                    .unwrap()
            };
            assert_eq!(ids(&planned), ids(&scanned), "{filter} on {name}");
        }
        let explained = db
            .run_command(doc! {"explain": {"find": "plain", "filter": filter.clone()}})
            .await
            .unwrap();
        if explained.to_string().contains("$_path") {
            used += 1;
        }
    }
    assert!(used > 30, "the wildcard index answered only {used} filters");
}

/// The same comparison with two compound wildcard indexes, `{k: 1, "$**": 1}` (projection
/// `{k: 0}`) and `{"a.$**": 1, k: -1}`, on documents whose `k` is a scalar or missing.
async fn compound_queries_match_a_collection_scan(client: &Client) {
    let index = doc! {"key": {"k": 1, "$**": 1}, "wildcardProjection": {"k": 0}};
    let db = setup(client, "wildcard_compound_queries", index).await;
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let docs: Vec<Document> = (0..100)
        .map(|i| {
            let mut d = rng.document(i);
            if rng.below(5) > 0 {
                d.insert("k", rng.scalar());
            }
            d
        })
        .collect();
    for name in ["plain", "sharded"] {
        db.run_command(doc! {"createIndexes": name, "indexes": [{"key": {"a.$**": 1, "k": -1}}]})
            .await
            .unwrap();
        db.collection::<Document>(name)
            .insert_many(docs.clone())
            .await
            .unwrap();
    }
    let mut used = 0;
    for _ in 0..150 {
        let filter = match rng.below(3) {
            0 => doc! {"k": rng.predicate()},
            1 => doc! {"$and": [{"k": rng.predicate()}, rng.filter()]},
            _ => rng.filter(),
        };
        // A sort on `k` may come from the first index's scan.
        let sort = match rng.below(3) {
            0 => doc! {"k": 1},
            1 => doc! {"k": -1},
            _ => doc! {"_id": 1},
        };
        for name in ["plain", "sharded"] {
            let coll = db.collection::<Document>(name);
            let run = |natural: bool| {
                let coll = coll.clone();
                let (filter, sort) = (filter.clone(), sort.clone());
                async move {
                    use futures::TryStreamExt;
                    let mut find = coll.find(filter).sort(sort);
                    if natural {
                        find = find.hint(mongodb::options::Hint::Keys(doc! {"$natural": 1}));
                    }
                    find.await
                        .unwrap()
                        .try_collect::<Vec<Document>>()
                        .await
                        .unwrap()
                }
            };
            let (planned, scanned) = (run(false).await, run(true).await);
            assert_eq!(ids(&planned), ids(&scanned), "{filter} on {name}");
            // Ties may come in any order: compare the sort key's values.
            let keys = |docs: &[Document]| -> Vec<String> {
                docs.iter()
                    .map(|d| match d.get("k") {
                        Some(Bson::Int32(n)) => (*n as f64).to_string(),
                        Some(Bson::Int64(n)) => (*n as f64).to_string(),
                        Some(Bson::Double(n)) => n.to_string(),
                        Some(other) => other.to_string(),
                        None => "null".into(),
                    })
                    .collect()
            };
            assert_eq!(keys(&planned), keys(&scanned), "{filter} {sort} on {name}");
        }
        let explained = db
            .run_command(doc! {"explain": {"find": "plain", "filter": filter.clone()}})
            .await
            .unwrap();
        if explained.to_string().contains("$_path") {
            used += 1;
        }
    }
    assert!(
        used > 30,
        "the compound wildcard indexes answered only {used} filters"
    );
}

/// The IXSCAN stage of an unsharded explain through the router.
pub(crate) fn ixscan(reply: &Document) -> Option<Document> {
    let shard = reply
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap()
        .get_array("shards")
        .unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    let mut plan = shard.get_document("winningPlan").unwrap().clone();
    loop {
        if plan.get_str("stage") == Ok("IXSCAN") {
            return Some(plan);
        }
        plan = plan.get_document("inputStage").ok()?.clone();
    }
}

async fn explain_and_hints(client: &Client) {
    let db = setup(client, "wildcard_explain", doc! {"key": {"$**": 1}}).await;
    let coll = db.collection::<Document>("plain");
    coll.insert_many([
        doc! {"_id": 1, "a": 5, "s": "xyz"},
        doc! {"_id": 2, "a": {"b": 1}},
        doc! {"_id": 3, "c": [1, 2]},
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
    let scan = ixscan(&explain(doc! {"a": 5}).await).unwrap();
    assert_eq!(
        scan.get_document("keyPattern").unwrap(),
        &doc! {"$_path": 1, "a": 1}
    );
    assert_eq!(scan.get_str("indexName").unwrap(), "$**_1");
    assert_eq!(
        scan.get_document("indexBounds").unwrap(),
        &doc! {"$_path": ["[\"a\", \"a\"]"], "a": ["[5, 5]"]}
    );
    let scan = ixscan(&explain(doc! {"a": {"$exists": true}}).await).unwrap();
    assert_eq!(
        scan.get_document("indexBounds").unwrap(),
        &doc! {"$_path": ["[\"a\", \"a\"]", "[\"a.\", \"a/\")"], "a": ["[MinKey, MaxKey]"]}
    );
    let scan = ixscan(&explain(doc! {"s": {"$regex": "^xy"}}).await).unwrap();
    assert_eq!(
        scan.get_document("indexBounds").unwrap(),
        &doc! {"$_path": ["[\"s\", \"s\"]"], "s": ["[\"xy\", \"xz\")", "[/^xy/, /^xy/]"]}
    );
    for unindexed in [
        doc! {"a": null},
        doc! {"a": {"$exists": false}},
        doc! {"a": {"$ne": 5}},
        doc! {"a": {"b": 1}},
        doc! {"c": [1, 2]},
        doc! {"c.0": 1},
    ] {
        assert!(
            ixscan(&explain(unindexed.clone()).await).is_none(),
            "{unindexed}"
        );
    }
    assert_eq!(ids(&find_all(&coll, doc! {"a.b": 1}).await), [2]);
    assert_eq!(
        ids(&find_all(&coll, doc! {"a": {"$exists": true}}).await),
        [1, 2]
    );
    assert_eq!(ids(&find_all(&coll, doc! {"c": {"$gte": 2}}).await), [3]);
    // Hints by name and by key pattern; a hint with no path the filter bounds plans nothing.
    for hint in [
        Bson::String("$**_1".into()),
        Bson::Document(doc! {"$**": 1}),
    ] {
        let found = db
            .run_command(doc! {"find": "plain", "filter": {"a": 5}, "hint": hint.clone()})
            .await
            .unwrap();
        let batch = found
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap();
        assert_eq!(batch.len(), 1, "{hint}");
        let err = db
            .run_command(doc! {"find": "plain", "filter": {"a": null}, "hint": hint})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(291), "{err}");
    }
    // A sort on the queried path comes from the scan while no array was met there ("plain"
    // has one at `c`, so a sort on `c` is blocking; `wildcard_multikey` has more).
    db.run_command(doc! {"createIndexes": "flat", "indexes": [{"key": {"$**": 1}, "name": "w"}]})
        .await
        .unwrap();
    let flat = db.collection::<Document>("flat");
    flat.insert_many([
        doc! {"_id": 1, "a": 2},
        doc! {"_id": 2, "a": 7},
        doc! {"_id": 3, "b": 1},
    ])
    .await
    .unwrap();
    let sorted = db
        .run_command(
            doc! {"explain": {"find": "flat", "filter": {"a": {"$gt": 0}}, "sort": {"a": -1}}},
        )
        .await
        .unwrap();
    let scan = ixscan(&sorted).unwrap();
    assert_eq!(scan.get_str("direction").unwrap(), "backward", "{sorted}");
    assert!(!sorted.to_string().contains("\"SORT\""), "{sorted}");
    let found = db
        .run_command(doc! {"find": "flat", "filter": {"a": {"$gt": 0}}, "sort": {"a": -1}})
        .await
        .unwrap();
    let batch = crate::harness::first_batch(&found);
    assert_eq!(ids_in_order(&batch), [2, 1]);
    let sorted = db
        .run_command(
            doc! {"explain": {"find": "plain", "filter": {"c": {"$gt": 0}}, "sort": {"c": -1}}},
        )
        .await
        .unwrap();
    assert!(sorted.to_string().contains("\"SORT\""), "{sorted}");
}

pub(crate) fn ids_in_order(docs: &[Document]) -> Vec<i32> {
    docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
}

async fn writes_keep_the_index(client: &Client) {
    let db = setup(client, "wildcard_writes", doc! {"key": {"$**": 1}}).await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        coll.insert_many([
            doc! {"_id": 1, "a": {"b": 1}},
            doc! {"_id": 70, "a": [{"b": 2}]},
        ])
        .await
        .unwrap();
        let found = |filter: Document| {
            let coll = coll.clone();
            async move { ids(&find_all(&coll, filter).await) }
        };
        assert_eq!(found(doc! {"a.b": {"$gte": 1}}).await, [1, 70], "{name}");
        coll.update_one(doc! {"_id": 1}, doc! {"$set": {"a.b": 5, "x": "new"}})
            .await
            .unwrap();
        assert_eq!(found(doc! {"a.b": 1}).await, Vec::<i32>::new(), "{name}");
        assert_eq!(found(doc! {"a.b": 5}).await, [1], "{name}");
        assert_eq!(found(doc! {"x": "new"}).await, [1], "{name}");
        coll.update_one(doc! {"_id": 1}, doc! {"$unset": {"x": ""}})
            .await
            .unwrap();
        assert_eq!(
            found(doc! {"x": {"$exists": true}}).await,
            Vec::<i32>::new()
        );
        coll.replace_one(doc! {"_id": 70}, doc! {"y": [3, 4]})
            .await
            .unwrap();
        assert_eq!(found(doc! {"a.b": 2}).await, Vec::<i32>::new(), "{name}");
        assert_eq!(found(doc! {"y": 4}).await, [70], "{name}");
        coll.update_one(doc! {"_id": 80}, doc! {"$set": {"z": 9}})
            .upsert(true)
            .await
            .unwrap();
        assert_eq!(found(doc! {"z": 9}).await, [80], "{name}");
        coll.find_one_and_update(doc! {"_id": 80}, doc! {"$inc": {"z": 1}})
            .await
            .unwrap();
        assert_eq!(found(doc! {"z": {"$gt": 9}}).await, [80], "{name}");
        coll.delete_one(doc! {"_id": 80}).await.unwrap();
        assert_eq!(
            found(doc! {"z": {"$exists": true}}).await,
            Vec::<i32>::new()
        );
        // A transaction's writes: its own reads see them through the index, others after
        // the commit; an abort leaves no key.
        let mut session = client.start_session().await.unwrap();
        session.start_transaction().await.unwrap();
        coll.insert_one(doc! {"_id": 90, "t": {"u": [1, 2]}})
            .session(&mut session)
            .await
            .unwrap();
        let mine: Vec<Document> = {
            use futures::TryStreamExt;
            let mut cursor = coll
                .find(doc! {"t.u": 2})
                .session(&mut session)
                .await
                .unwrap();
            cursor.stream(&mut session).try_collect().await.unwrap()
        };
        assert_eq!(ids(&mine), [90], "{name}");
        assert_eq!(found(doc! {"t.u": 2}).await, Vec::<i32>::new(), "{name}");
        session.commit_transaction().await.unwrap();
        assert_eq!(found(doc! {"t.u": 2}).await, [90], "{name}");
        session.start_transaction().await.unwrap();
        coll.insert_one(doc! {"_id": 91, "t": {"u": 2}})
            .session(&mut session)
            .await
            .unwrap();
        session.abort_transaction().await.unwrap();
        assert_eq!(found(doc! {"t.u": 2}).await, [90], "{name}");
    }
}

both_modes!(
    specs_and_errors,
    queries_match_a_collection_scan,
    compound_queries_match_a_collection_scan,
    explain_and_hints,
    writes_keep_the_index
);
