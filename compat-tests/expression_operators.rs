//! The expression language end to end, through the router: one `$project` using operators of
//! every family (strings, regexes, variables binding operators, arrays, sets, objects,
//! arithmetic, conversion) on an unsharded and on a sharded collection gives MongoDB's
//! values and types; a conversion that fails answers ConversionFailure (241). The expression
//! forms of the accumulators, binData conversions and the N and quantile window functions
//! run the same way.

use crate::harness::{admin, aggregate_documents, both_modes, error_code};
use futures::TryStreamExt;
use mongodb::Client;
use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{Binary, Bson, Document, doc};

fn projection() -> Document {
    doc! {
        "_id": 0,
        "trimmed": {"$trim": {"input": "$s"}},
        "first": {"$substrCP": [{"$trim": {"input": "$s"}}, 0, 5]},
        "parts": {"$split": [{"$trim": {"input": "$s"}}, ", "]},
        "found": {"$regexFind": {"input": "$s", "regex": "W(or)ld"}},
        "doubled": {"$map": {"input": "$arr", "as": "x", "in": {"$multiply": ["$$x", 2]}}},
        "big": {"$filter": {"input": "$arr", "cond": {"$gt": ["$$this", 1]}}},
        "sum": {"$reduce": {"input": "$arr", "initialValue": 0, "in": {"$add": ["$$value", "$$this"]}}},
        "sorted": {"$sortArray": {"input": "$arr", "sortBy": 1}},
        "uniq": {"$setUnion": ["$tags"]},
        "num": {"$toInt": "$text_n"},
        "rounded": {"$round": ["$n", 0]},
        "fallback": {"$convert": {"input": "x", "to": "int", "onError": -1}},
        "merged": {"$mergeObjects": [{"a": 1}, {"b": 2}]},
        "pow": {"$pow": [2, 10]},
        "local": {"$let": {"vars": {"t": 10}, "in": {"$add": ["$$t", 1]}}},
        "size": {"$switch": {"branches": [{"case": {"$gt": ["$n", 2]}, "then": "big"}], "default": "small"}},
    }
}

fn expected() -> Document {
    doc! {
        "trimmed": "Hello, World",
        "first": "Hello",
        "parts": ["Hello", "World"],
        "found": {"match": "World", "idx": 9, "captures": ["or"]},
        "doubled": [6, 2, 4],
        "big": [3, 2],
        "sum": 6,
        "sorted": [1, 2, 3],
        "uniq": ["a", "b"],
        "num": 42,
        "rounded": 2.0,
        "fallback": -1,
        "merged": {"a": 1, "b": 2},
        "pow": 1024,
        "local": 11,
        "size": "big",
    }
}

/// A dropped database `name` whose collection `sharded` is sharded on a hashed `_id`.
async fn fresh_database(client: &Client, name: &str) -> mongodb::Database {
    let db = client.database(name);
    db.drop().await.unwrap();
    admin(
        client,
        doc! {"shardCollection": format!("{name}.sharded"), "key": {"_id": "hashed"}},
    )
    .await
    .unwrap();
    db
}

async fn every_family_evaluates_as_mongodb(client: &Client) {
    let db = fresh_database(client, "exprops").await;
    let source = doc! {
        "s": "  Hello, World  ",
        "arr": [3, 1, 2],
        "n": 2.5,
        "text_n": "42",
        "tags": ["a", "b", "a"],
    };
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        let docs: Vec<Document> = (0..10)
            .map(|i| {
                let mut d = source.clone();
                d.insert("_id", i);
                d
            })
            .collect();
        coll.insert_many(docs).await.unwrap();
        let results: Vec<Document> = coll
            .aggregate(vec![doc! {"$project": projection()}])
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(results.len(), 10, "{name}");
        for result in results {
            assert_eq!(result, expected(), "{name}");
            // Document equality ignores the types of equal numbers: check them too.
            assert!(
                matches!(result.get("sum"), Some(Bson::Int32(6))),
                "{name}: {result}"
            );
            assert!(
                matches!(result.get("pow"), Some(Bson::Int32(1024))),
                "{name}: {result}"
            );
            assert!(
                matches!(result.get("rounded"), Some(Bson::Double(_))),
                "{name}: {result}"
            );
        }
        let err = coll
            .aggregate(vec![doc! {"$project": {"bad": {"$toInt": "$s"}}}])
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(241), "{name}: {err}");
    }
}

both_modes!(every_family_evaluates_as_mongodb);

/// The bytes of the UUID 867dee52-c331-484e-92d1-c56479b8e67e.
const UUID_BYTES: [u8; 16] = [
    0x86, 0x7d, 0xee, 0x52, 0xc3, 0x31, 0x48, 0x4e, 0x92, 0xd1, 0xc5, 0x64, 0x79, 0xb8, 0xe6, 0x7e,
];

async fn accumulator_forms_bin_data_and_n_windows(client: &Client) {
    let db = fresh_database(client, "exprforms").await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        let docs: Vec<Document> = [
            ("CA", 13, 120),
            ("CA", 12, 145),
            ("CA", 41, 162),
            ("WA", 13, 104),
            ("WA", 14, 140),
            ("WA", 43, 134),
        ]
        .iter()
        .enumerate()
        .map(|(i, (state, price, quantity))| {
            doc! {"_id": i as i32, "state": state, "price": price, "quantity": quantity,
            "scores": [85, 90, 71], "uuid": "867dee52-c331-484e-92d1-c56479b8e67e"}
        })
        .collect();
        coll.insert_many(docs).await.unwrap();

        let projected: Vec<Document> = coll
            .aggregate(vec![
                doc! {"$match": {"_id": 0}},
                doc! {"$project": {
                    "_id": 0,
                    "sum": {"$sum": "$scores"},
                    "avg": {"$avg": ["$price", "$quantity", "x"]},
                    "max": {"$max": "$scores"},
                    "median": {"$median": {"input": "$scores", "method": "approximate"}},
                    "pcts": {"$percentile": {"input": "$scores", "p": [0.1, 1], "method": "approximate"}},
                    "sd": {"$stdDevPop": [2, 4]},
                    "uuid": {"$toUUID": "$uuid"},
                    "b64": {"$convert": {"input": "hn3uUsMxSE6S0cVkebjmfg==", "to": {"type": "binData", "subtype": 0}, "format": "base64"}},
                    "hex": {"$convert": {"input": {"$toUUID": "$uuid"}, "to": "string", "format": "hex"}},
                }},
            ])
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let binary = |subtype| {
            Bson::Binary(Binary {
                subtype,
                bytes: UUID_BYTES.to_vec(),
            })
        };
        assert_eq!(
            projected,
            vec![doc! {
                "sum": 246, "avg": 66.5, "max": 90, "median": 85.0, "pcts": [71.0, 90.0], "sd": 1.0,
                "uuid": binary(BinarySubtype::Uuid), "b64": binary(BinarySubtype::Generic),
                "hex": "867DEE52C331484E92D1C56479B8E67E",
            }],
            "{name}"
        );

        let windowed: Vec<Document> = coll
            .aggregate(vec![
                doc! {"$setWindowFields": {"partitionBy": "$state", "sortBy": {"price": 1}, "output": {
                    "cheapest": {"$topN": {"n": 2, "sortBy": {"price": 1}, "output": "$_id"}},
                    "running": {"$median": {"input": "$quantity", "method": "approximate"},
                        "window": {"documents": ["unbounded", "current"]}},
                    "near": {"$maxN": {"input": "$quantity", "n": 2}, "window": {"range": [-1, 1]}},
                }}},
                doc! {"$sort": {"_id": 1}},
                doc! {"$project": {"cheapest": 1, "running": 1, "near": 1}},
            ])
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(
            windowed,
            vec![
                doc! {"_id": 0, "cheapest": [1, 0], "running": 120.0, "near": [145, 120]},
                doc! {"_id": 1, "cheapest": [1, 0], "running": 145.0, "near": [145, 120]},
                doc! {"_id": 2, "cheapest": [1, 0], "running": 145.0, "near": [162]},
                doc! {"_id": 3, "cheapest": [3, 4], "running": 104.0, "near": [140, 104]},
                doc! {"_id": 4, "cheapest": [3, 4], "running": 104.0, "near": [140, 104]},
                doc! {"_id": 5, "cheapest": [3, 4], "running": 134.0, "near": [134]},
            ],
            "{name}"
        );

        for (stage, code) in [
            (
                doc! {"$project": {"s": {"$convert": {"input": "x", "to": "binData", "format": "base32", "onError": 0}}}},
                4341125,
            ),
            (
                doc! {"$project": {"s": {"$convert": {"input": "x", "to": "binData", "format": "uuid"}}}},
                241,
            ),
            (
                doc! {"$setWindowFields": {"output": {"t": {"$topN": {"n": 1, "output": "$_id"}}}}},
                5788005,
            ),
        ] {
            let err = coll.aggregate(vec![stage]).await.unwrap_err();
            assert_eq!(error_code(&err), Some(code), "{name}: {err}");
        }
    }
}

both_modes!(accumulator_forms_bin_data_and_n_windows);

fn decimal(text: &str) -> Bson {
    Bson::Decimal128(text.parse().unwrap())
}

/// Decimal128 arithmetic on libdecNumber: results carry IEEE 754-2008's preferred exponents
/// (`1.0 + 2.00` is `3.00`), as MongoDB's decimal library computes them, through `$group`'s
/// accumulators on a sharded collection and through `$inc`/`$mul`.
async fn decimals_keep_their_exponents(client: &Client) {
    let db = fresh_database(client, "exprdecimals").await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        coll.insert_many(
            (0..4).map(|i| doc! {"_id": i, "a": decimal("1.0"), "b": decimal("2.00")}),
        )
        .await
        .unwrap();
        let pipeline = vec![
            doc! {"$match": {"_id": 0}},
            doc! {"$project": {
                "_id": 0,
                "sum": {"$add": ["$a", "$b"]},
                "difference": {"$subtract": ["$a", "$a"]},
                "product": {"$multiply": ["$b", decimal("1.50")]},
                "quotient": {"$divide": [decimal("1.00"), 4]},
                "third": {"$divide": [decimal("10"), 3]},
                "remainder": {"$mod": [decimal("1E+40"), 3]},
                "root": {"$sqrt": decimal("2.25")},
                "rounded": {"$round": [decimal("2.675"), 2]},
                "string": {"$toString": {"$multiply": [decimal("1E+2"), decimal("1E+1")]}},
            }},
        ];
        let results = aggregate_documents(&coll, pipeline).await;
        assert_eq!(
            results,
            [doc! {
                "sum": decimal("3.00"),
                "difference": decimal("0.0"),
                "product": decimal("3.0000"),
                "quotient": decimal("0.25"),
                "third": decimal("3.333333333333333333333333333333333"),
                "remainder": decimal("1"),
                "root": decimal("1.5"),
                "rounded": decimal("2.68"),
                "string": "1E+3",
            }],
            "{name}"
        );
        // Document equality compares decimals by value: compare the exact representations.
        let shown: Vec<String> = results[0]
            .values()
            .map(|v| match v {
                Bson::Decimal128(d) => d.to_string(),
                other => other.to_string(),
            })
            .collect();
        assert_eq!(
            shown,
            [
                "3.00",
                "0.0",
                "3.0000",
                "0.25",
                "3.333333333333333333333333333333333",
                "1",
                "1.5",
                "2.68",
                "\"1E+3\""
            ],
            "{name}"
        );
        let grouped = aggregate_documents(
            &coll,
            vec![doc! {"$group": {"_id": null, "total": {"$sum": "$a"}, "mean": {"$avg": "$b"}}}],
        )
        .await;
        assert_eq!(
            grouped[0].get("total").map(ToString::to_string),
            Some("4.0".to_string()),
            "{name}"
        );
        assert_eq!(
            grouped[0].get("mean").map(ToString::to_string),
            Some("2.00".to_string()),
            "{name}"
        );
        coll.update_one(
            doc! {"_id": 1},
            doc! {"$inc": {"a": decimal("0.05")}, "$mul": {"b": decimal("1.0")}},
        )
        .await
        .unwrap();
        let updated = coll.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
        assert_eq!(updated.get("a").unwrap().to_string(), "1.05", "{name}");
        // 2.00 × 1.0 = 2.000 equals the stored number: no change, the stored 2.00 stays.
        assert_eq!(updated.get("b").unwrap().to_string(), "2.00", "{name}");
    }
}

both_modes!(decimals_keep_their_exponents);
