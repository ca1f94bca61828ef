//! The expression language end to end, through the router: one `$project` using operators of
//! every family (strings, regexes, variables binding operators, arrays, sets, objects,
//! arithmetic, conversion) on an unsharded and on a sharded collection gives MongoDB's
//! values and types; a conversion that fails answers ConversionFailure (241).

use crate::harness::{admin, both_modes, error_code};
use futures::TryStreamExt;
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

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

async fn every_family_evaluates_as_mongodb(client: &Client) {
    let db = client.database("exprops");
    db.drop().await.unwrap();
    admin(
        client,
        doc! {"shardCollection": "exprops.sharded", "key": {"_id": "hashed"}},
    )
    .await
    .unwrap();
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
