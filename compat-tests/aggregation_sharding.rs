//! Aggregations split over shards (a partial `$group` on each shard, the merging `$group` on
//! the router) give the answers of one node: random pipelines (`$match`, `$project`, `$set`,
//! `$unwind`, `$group` with every mergeable accumulator, `$sort`, `$skip`, `$limit`, `$count`,
//! `$sortByCount`, `$bucket`) over random documents (int32, int64, double and decimal numbers,
//! nulls, missing fields, strings, arrays) run on a collection sharded in several chunks over
//! both shards and on an unsharded copy, and must agree; plus the numeric merges that are
//! easy to get wrong, the explained split, and errors raised on the shards. Seeded: a failure
//! names its seed.

use crate::harness::{ProcessCluster, Rng, TestCluster, admin, cursor_documents, error_code};
use mongodb::bson::{Bson, Decimal128, Document, doc};
use mongodb::{Client, Database};

fn decimal(text: &str) -> Bson {
    Bson::Decimal128(text.parse::<Decimal128>().unwrap())
}

/// A number whose value gives away its type (ints are integers below 2^31, longs above 2^40,
/// doubles end in .5, decimals in .25), so that equal values never differ in type and the
/// first-seen one of equal values cannot change an answer; or null, a string, a boolean.
fn number(rng: &mut Rng) -> Option<Bson> {
    let r = rng.below(201) as i64 - 100;
    Some(match rng.below(10) {
        0..=2 => Bson::Int32(r as i32),
        3 => Bson::Int32(2_000_000_000 + rng.below(1000) as i32),
        4 => Bson::Int64((1 << 40) + 3 * r),
        5 | 6 => Bson::Double(r as f64 + 0.5),
        7 => decimal(&format!("{r}.25")),
        8 => match rng.below(3) {
            0 => Bson::Null,
            1 => Bson::String(format!("s{}", rng.below(3))),
            _ => Bson::Boolean(rng.chance(50)),
        },
        _ => return None,
    })
}

fn document(rng: &mut Rng, id: i32) -> Document {
    let mut doc = doc! {"_id": id};
    let keys = [
        Some(Bson::from("a")),
        Some(Bson::from("b")),
        Some(Bson::from("c")),
        Some(Bson::Int32(1)),
        Some(Bson::Int32(2)),
        Some(Bson::Null),
        None,
    ];
    if let Some(k) = rng.pick(&keys).clone() {
        doc.insert("k", k);
    }
    doc.insert("g", rng.below(3) as i32);
    if let Some(n) = number(rng) {
        doc.insert("n", n);
    }
    if rng.chance(70) {
        let x = rng.below(4) as i32;
        // A key's value is fixed by its name, so merging order cannot change a value.
        doc.insert("o", doc! {format!("f{x}"): x});
    }
    match rng.below(4) {
        0 => {}
        1 => {
            doc.insert("arr", Vec::<Bson>::new());
        }
        _ => {
            let items: Vec<Bson> = (0..1 + rng.below(3))
                .map(|_| Bson::Int32(rng.below(4) as i32))
                .collect();
            doc.insert("arr", items);
        }
    }
    doc
}

/// Accumulators by output name; the name's prefix tells the comparison how to read the value
/// (`push`/`set`: any order; `merged`: any field order; `sd`: rounded).
fn accumulators() -> Vec<(&'static str, Document)> {
    vec![
        ("sum", doc! {"$sum": "$n"}),
        ("ones", doc! {"$sum": 1}),
        ("cnt", doc! {"$count": {}}),
        (
            "sumif",
            doc! {"$sum": {"$cond": [{"$isNumber": "$n"}, "$n", 1]}},
        ),
        ("avg", doc! {"$avg": "$n"}),
        ("min", doc! {"$min": "$n"}),
        ("max", doc! {"$max": "$n"}),
        ("push", doc! {"$push": "$n"}),
        ("set", doc! {"$addToSet": "$n"}),
        ("merged", doc! {"$mergeObjects": "$o"}),
        ("sdpop", doc! {"$stdDevPop": "$n"}),
        ("sdsamp", doc! {"$stdDevSamp": "$n"}),
        (
            "top",
            doc! {"$top": {"output": "$_id", "sortBy": {"n": -1, "_id": 1}}},
        ),
        (
            "topn",
            doc! {"$topN": {"output": ["$_id", "$n"], "sortBy": {"n": 1, "_id": 1}, "n": 3}},
        ),
        (
            "bottom",
            doc! {"$bottom": {"output": "$n", "sortBy": {"g": 1, "_id": -1}}},
        ),
        (
            "bottomn",
            doc! {"$bottomN": {"output": "$_id", "sortBy": {"n": -1, "_id": 1}, "n": 2}},
        ),
        ("minn", doc! {"$minN": {"input": "$n", "n": 3}}),
        ("maxn", doc! {"$maxN": {"input": "$n", "n": 2}}),
        (
            "median",
            doc! {"$median": {"input": "$n", "method": "approximate"}},
        ),
        (
            "pct",
            doc! {"$percentile": {"input": "$n", "p": [0.25, 0.9], "method": "approximate"}},
        ),
    ]
}

/// A random pipeline, and whether its output order is fully specified.
fn pipeline(rng: &mut Rng) -> (Vec<Document>, bool) {
    let mut stages = Vec::new();
    if rng.chance(40) {
        stages.push(
            rng.pick(&[
                doc! {"$match": {"g": {"$ne": 1}}},
                doc! {"$match": {"n": {"$gte": 0}}},
                doc! {"$match": {"k": {"$in": ["a", "c", 1, null]}}},
                doc! {"$match": {"$expr": {"$isNumber": "$n"}}},
            ])
            .clone(),
        );
    }
    if rng.chance(30) {
        stages.push(
            rng.pick(&[
                doc! {"$project": {"k": 1, "g": 1, "n": 1, "o": 1, "arr": 1}},
                doc! {"$set": {"g": {"$mod": ["$_id", 4]}}},
                doc! {"$set": {"n": {"$cond": [{"$isNumber": "$n"}, {"$add": ["$n", 1]}, "$n"]}}},
            ])
            .clone(),
        );
    }
    if rng.chance(25) {
        stages.push(
            rng.pick(&[
                doc! {"$unwind": "$arr"},
                doc! {"$unwind": {"path": "$arr", "preserveNullAndEmptyArrays": true}},
            ])
            .clone(),
        );
    }
    let mut ordered = false;
    match rng.below(10) {
        0 => {
            stages.push(doc! {"$count": "total"});
            ordered = true;
        }
        1 => stages.push(
            rng.pick(&[
                doc! {"$sortByCount": "$k"},
                doc! {"$sortByCount": {"$type": "$n"}},
            ])
            .clone(),
        ),
        2 => {
            stages.push(doc! {"$bucket": {
                "groupBy": "$n",
                "boundaries": [-1000, 0, 50, 1_000_000_000_i64, 1_i64 << 50],
                "default": "other",
                "output": {"cnt": {"$sum": 1}, "sum": {"$sum": "$n"}, "push": {"$push": "$_id"}},
            }});
            ordered = true;
        }
        3 => {
            // Sorted input: order-dependent accumulators, on the router.
            stages.push(doc! {"$sort": {"n": 1, "_id": 1}});
            stages.push(doc! {"$group": {"_id": "$k", "first": {"$first": "$n"},
            "last": {"$last": "$_id"}, "firstn": {"$firstN": {"input": "$_id", "n": 2}},
            "lastn": {"$lastN": {"input": "$n", "n": 2}}, "sum": {"$sum": "$n"}}});
        }
        4 => {
            // Total up to equal documents (an unwound array may hold a value twice).
            stages.push(doc! {"$sort": {"g": -1, "_id": 1, "arr": 1}});
            stages.push(doc! {"$skip": rng.below(20) as i32});
            stages.push(doc! {"$limit": 1 + rng.below(30) as i32});
            ordered = true;
        }
        _ => {
            let ids = [
                Bson::from("$k"),
                Bson::Null,
                Bson::from(doc! {"k": "$k", "g": "$g"}),
                Bson::from(doc! {"$type": "$n"}),
                // Sorted as a whole (an array `_id` would sort by its smallest element).
                Bson::from(doc! {"a": "$arr"}),
            ];
            let mut spec = doc! {"_id": rng.pick(&ids).clone()};
            let all = accumulators();
            for _ in 0..1 + rng.below(5) {
                let (name, acc) = rng.pick(&all).clone();
                spec.insert(name, acc);
            }
            stages.push(doc! {"$group": spec});
        }
    }
    if rng.chance(40) {
        stages.push(doc! {"$sort": {"_id": 1, "arr": 1}});
        ordered = true;
        if rng.chance(50) {
            stages.push(doc! {"$limit": 1 + rng.below(4) as i32});
        }
    }
    (stages, ordered)
}

/// A document with the values whose order or last digits are not specified made canonical.
fn canonical(doc: &Document) -> Document {
    let mut out = Document::new();
    for (name, value) in doc {
        let value = match value {
            Bson::Array(items) if name.starts_with("push") || name.starts_with("set") => {
                let mut items = items.clone();
                items.sort_by_key(|v| format!("{v:?}"));
                Bson::Array(items)
            }
            Bson::Document(fields) if name.starts_with("merged") => {
                let mut fields: Vec<_> = fields.iter().collect();
                fields.sort_by_key(|(k, _)| k.to_string());
                Bson::Document(
                    fields
                        .into_iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                )
            }
            // The merged deviation adds up in another order.
            Bson::Double(x) if name.starts_with("sd") => Bson::String(format!("{x:.4e}")),
            other => other.clone(),
        };
        out.insert(name, value);
    }
    out
}

async fn aggregate(db: &Database, coll: &str, stages: &[Document]) -> Vec<Document> {
    cursor_documents(
        db,
        doc! {"aggregate": coll, "pipeline": stages.to_vec(), "cursor": {"batchSize": 3}},
    )
    .await
    .unwrap_or_else(|e| panic!("{coll} {stages:?}: {e}"))
}

/// A collection sharded on a hashed `_id` (a chunk on each shard, split further) and an
/// unsharded copy, both holding `docs`.
async fn pair(client: &Client, db_name: &str, docs: &[Document]) -> Database {
    let db = client.database(db_name);
    admin(
        client,
        doc! {"shardCollection": format!("{db_name}.sharded"), "key": {"_id": "hashed"}},
    )
    .await
    .unwrap();
    for coll in ["sharded", "plain"] {
        db.run_command(doc! {"insert": coll, "documents": docs.to_vec()})
            .await
            .unwrap();
    }
    for id in [3, 17, 40, 77] {
        // A chunk holding a single key cannot split: that is fine.
        let _ = admin(
            client,
            doc! {"split": format!("{db_name}.sharded"), "find": {"_id": id}},
        )
        .await;
    }
    db
}

/// `count` random pipelines from `seed` agree on the sharded collection and its copy.
async fn random_pipelines_agree(client: &Client, db_name: &str, seed: u64, count: usize) {
    let mut rng = Rng(seed);
    let docs: Vec<Document> = (0..120).map(|i| document(&mut rng, i)).collect();
    let db = pair(client, db_name, &docs).await;
    for round in 0..count {
        let (stages, ordered) = pipeline(&mut rng);
        let mut results = Vec::new();
        for coll in ["sharded", "plain"] {
            let mut out: Vec<Document> = aggregate(&db, coll, &stages)
                .await
                .iter()
                .map(canonical)
                .collect();
            if !ordered {
                out.sort_by_key(|d| format!("{d:?}"));
            }
            results.push(out);
        }
        assert_eq!(
            results[0], results[1],
            "seed {seed}, round {round}: {stages:?}"
        );
    }
}

#[tokio::test]
async fn random_pipelines_agree_in_process() {
    let cluster = TestCluster::start().await;
    random_pipelines_agree(&cluster.client, "aggsh_random", 0x5eed_a66a, 30).await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn random_pipelines_agree_across_processes() {
    let cluster = ProcessCluster::start(2).await;
    random_pipelines_agree(&cluster.client().await, "aggsh_process", 0x0dd_ba11, 8).await;
}

/// Runs `stages` on both collections; both answers, which must be equal.
async fn both(db: &Database, stages: Vec<Document>) -> Vec<Document> {
    let sharded = aggregate(db, "sharded", &stages).await;
    assert_eq!(sharded, aggregate(db, "plain", &stages).await, "{stages:?}");
    sharded
}

#[tokio::test]
async fn numeric_merges_and_the_explained_split() {
    let cluster = TestCluster::start().await;
    let client = &cluster.client;
    let mut docs: Vec<Document> = (0..40)
        .map(|i| doc! {"_id": i, "k": "big", "n": i32::MAX})
        .collect();
    let mixed = [
        Bson::Int32(1),
        Bson::Int64(2),
        Bson::Double(3.5),
        decimal("4.25"),
        Bson::Null,
        Bson::from("x"),
    ];
    docs.extend(
        (0..36).map(|i| doc! {"_id": 100 + i, "k": "mixed", "n": mixed[i as usize % 6].clone()}),
    );
    let cancel = [
        Bson::Double(1e34),
        decimal("0.1"),
        decimal("0.11"),
        Bson::Double(-1e34),
    ];
    docs.extend(
        (0..4).map(|i| doc! {"_id": 200 + i, "k": "cancel", "n": cancel[i as usize].clone()}),
    );
    let db = pair(client, "aggsh_numeric", &docs).await;

    // int32 partial sums that overflow only once merged: an int64, as on one node.
    let out = both(
        &db,
        vec![
            doc! {"$match": {"k": "big"}},
            doc! {"$group": {"_id": "$k", "s": {"$sum": "$n"}, "a": {"$avg": "$n"}, "c": {"$count": {}}}},
        ],
    )
    .await;
    assert_eq!(
        out,
        vec![doc! {"_id": "big", "s": 40 * i64::from(i32::MAX), "a": f64::from(i32::MAX), "c": 40}]
    );
    // Every numeric type in one average: a decimal.
    let out = both(
        &db,
        vec![
            doc! {"$match": {"k": "mixed"}},
            doc! {"$group": {"_id": null, "a": {"$avg": "$n"}, "s": {"$sum": "$n"},
            "min": {"$min": "$n"}, "max": {"$max": "$n"}, "sd": {"$stdDevPop": "$n"}}},
        ],
    )
    .await;
    assert_eq!(out[0].get("a"), Some(&decimal("2.6875")));
    assert_eq!(out[0].get("s"), Some(&decimal("64.50")));
    assert_eq!(out[0].get("min"), Some(&Bson::Int32(1)));
    assert_eq!(out[0].get("max"), Some(&Bson::from("x")));
    // Doubles and decimals that cancel: the full partial state crosses to the router.
    let out = both(
        &db,
        vec![
            doc! {"$match": {"k": "cancel"}},
            doc! {"$group": {"_id": "$k", "s": {"$sum": "$n"}}},
        ],
    )
    .await;
    assert_eq!(out, vec![doc! {"_id": "cancel", "s": decimal("0.21")}]);
    let out = both(
        &db,
        vec![doc! {"$match": {"k": "nothing"}}, doc! {"$count": "n"}],
    )
    .await;
    assert!(out.is_empty());
    let out = both(&db, vec![doc! {"$sortByCount": "$k"}]).await;
    assert_eq!(
        out,
        vec![
            doc! {"_id": "big", "count": 40},
            doc! {"_id": "mixed", "count": 36},
            doc! {"_id": "cancel", "count": 4}
        ]
    );

    // A shard's error reaches the client as on one node.
    let bad = vec![doc! {"$group": {"_id": null, "m": {"$mergeObjects": "$n"}}}];
    for coll in ["sharded", "plain"] {
        let err = db
            .run_command(doc! {"aggregate": coll, "pipeline": bad.clone(), "cursor": {}})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(40400), "{coll}: {err}");
    }

    // Explain shows both halves as mongos does.
    let explained = db
        .run_command(doc! {"aggregate": "sharded", "explain": true, "pipeline": [
            {"$match": {"k": "big"}},
            {"$group": {"_id": "$k", "s": {"$sum": "$n"}, "f": {"$first": "$n"}}},
        ]})
        .await
        .unwrap();
    let split = explained.get_document("splitPipeline").unwrap();
    assert_eq!(
        split.get_array("shardsPart").unwrap(),
        &vec![Bson::from(doc! {"$match": {"k": "big"}})],
        "a group with $first runs whole on the router"
    );
    let explained = db
        .run_command(doc! {"aggregate": "sharded", "explain": true, "pipeline": [
            {"$group": {"_id": "$k", "s": {"$sum": "$n"}}},
            {"$sort": {"_id": 1}},
        ]})
        .await
        .unwrap();
    assert_eq!(explained.get_str("mergeType").unwrap(), "mongos");
    let split = explained.get_document("splitPipeline").unwrap();
    assert_eq!(
        split.get_array("shardsPart").unwrap(),
        &vec![Bson::from(
            doc! {"$group": {"_id": "$k", "s": {"$sum": "$n"}}}
        )]
    );
    assert_eq!(
        split.get_array("mergerPart").unwrap(),
        &vec![
            Bson::from(
                doc! {"$group": {"_id": "$$ROOT._id", "s": {"$sum": "$$ROOT.s"}, "$doingMerge": true}}
            ),
            Bson::from(doc! {"$sort": {"_id": 1}}),
        ]
    );
    cluster.shutdown().await;
}
