//! Regular expressions end to end on PCRE2, through the router, on an unsharded and a sharded
//! collection: backreferences and lookaround in `$regex`, BSON regex values, `$in` and `$not`
//! with regexes, the expression operators, `listCollections` filters and `$jsonSchema`
//! patterns; MongoDB's errors for invalid patterns and options, and for a catastrophic
//! pattern, which fails instead of holding the server.

use crate::harness::{aggregate_documents, both_modes, error_code, failure, sorted_ids as ids};
use mongodb::Client;
use mongodb::bson::{Bson, Document, Regex, doc};

fn regex(pattern: &str, options: &str) -> Bson {
    Bson::RegularExpression(Regex {
        pattern: pattern.into(),
        options: options.into(),
    })
}

async fn filters_and_operators_run_pcre2(client: &Client) {
    let db = client.database("regexes");
    db.drop().await.unwrap();
    client
        .database("admin")
        .run_command(doc! {"shardCollection": "regexes.sharded", "key": {"_id": "hashed"}})
        .await
        .unwrap();
    let words = ["aa", "ab", "cb", "Café", "x\ny", "abab", "ba"];
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        let docs: Vec<Document> = words
            .iter()
            .enumerate()
            .map(|(i, w)| doc! {"_id": i as i32, "s": *w})
            .collect();
        coll.insert_many(docs).await.unwrap();

        // Backreference, lookahead, lookbehind: what the translated engine refused.
        assert_eq!(
            ids(&coll, doc! {"s": {"$regex": "(a)\\1"}}).await,
            [0],
            "{name}"
        );
        assert_eq!(
            ids(&coll, doc! {"s": {"$regex": "^(?=.*b)a"}}).await,
            [1, 5],
            "{name}"
        );
        assert_eq!(
            ids(&coll, doc! {"s": {"$regex": "(?<!a)b"}}).await,
            [2, 6],
            "{name}"
        );
        assert_eq!(
            ids(&coll, doc! {"s": {"$regex": "^(ab)\\1$"}}).await,
            [5],
            "{name}"
        );
        // Options as `$options` and as a BSON regex value.
        assert_eq!(
            ids(&coll, doc! {"s": {"$regex": "^CAFÉ$", "$options": "i"}}).await,
            [3],
            "{name}"
        );
        assert_eq!(
            ids(&coll, doc! {"s": regex("^y", "m")}).await,
            [4],
            "{name}"
        );
        assert_eq!(
            ids(&coll, doc! {"s": regex("x.y", "s")}).await,
            [4],
            "{name}"
        );
        assert_eq!(
            ids(&coll, doc! {"s": regex("c a f", "ix")}).await,
            [3],
            "{name}"
        );
        // `$in` with regexes and `$not` with a regex.
        assert_eq!(
            ids(&coll, doc! {"s": {"$in": [regex("^b", ""), "aa"]}}).await,
            [0, 6],
            "{name}"
        );
        assert_eq!(
            ids(&coll, doc! {"s": {"$not": regex("(?<=a)b", "")}}).await,
            [0, 2, 3, 4, 6],
            "{name}"
        );

        let pipeline = vec![
            doc! {"$match": {"_id": 5}},
            doc! {"$project": {
                "_id": 0,
                "all": {"$regexFindAll": {"input": "$s", "regex": "(?<=a)b"}},
                "first": {"$regexFind": {"input": "$s", "regex": "(a)(b)\\1"}},
                "match": {"$regexMatch": {"input": "$s", "regex": "^(?!b)"}},
            }},
        ];
        let found = aggregate_documents(&coll, pipeline).await;
        assert_eq!(
            found,
            [doc! {
                "all": [
                    {"match": "b", "idx": 1, "captures": []},
                    {"match": "b", "idx": 3, "captures": []},
                ],
                "first": {"match": "aba", "idx": 0, "captures": ["a", "b"]},
                "match": true,
            }],
            "{name}"
        );

        // A catastrophic pattern: the expression fails with MongoDB's error, a filter finds no
        // match (MongoDB's matcher reads a failed match as no match); neither hangs.
        let long = format!("{}b", "a".repeat(40));
        coll.insert_one(doc! {"_id": 100, "s": &long})
            .await
            .unwrap();
        let err = coll
            .aggregate(vec![
                doc! {"$match": {"_id": 100}},
                doc! {"$project": {"m": {"$regexMatch": {"input": "$s", "regex": "(a+)+$"}}}},
            ])
            .await
            .unwrap_err();
        let (code, _, message) = failure(&err);
        assert_eq!(code, 51156, "{name}: {message}");
        // After MongoDB's "PlanExecutor error during aggregation :: caused by :: ".
        assert!(
            message.ends_with(
                "Error occurred while executing the regular expression in $regexMatch. \
                 Result code: match limit exceeded"
            ),
            "{name}: {message}"
        );
        assert!(
            ids(&coll, doc! {"_id": 100, "s": {"$regex": "(a+)+$"}})
                .await
                .is_empty(),
            "{name}"
        );

        // Invalid patterns and options.
        let err = coll.find(doc! {"s": {"$regex": "(a"}}).await.unwrap_err();
        let (code, _, message) = failure(&err);
        assert_eq!(
            (code, message.as_str()),
            (
                51091,
                "Regular expression is invalid: missing closing parenthesis"
            ),
            "{name}"
        );
        let err = coll
            .find(doc! {"s": {"$regex": "a", "$options": "g"}})
            .await
            .unwrap_err();
        assert_eq!(failure(&err).0, 51108, "{name}");
        let err = coll
            .aggregate(vec![
                doc! {"$project": {"m": {"$regexFind": {"input": "$s", "regex": "[a"}}}},
            ])
            .await
            .unwrap_err();
        let (code, _, message) = failure(&err);
        assert_eq!(code, 51111, "{name}: {message}");
        assert!(
            message.ends_with(
                "Invalid Regex in $regexFind: missing terminating ] for character class"
            ),
            "{name}: {message}"
        );
    }

    // listCollections filters and `$jsonSchema` patterns.
    let listed: Vec<String> = db
        .list_collection_names()
        .filter(doc! {"name": {"$regex": "^(?!sh)"}})
        .await
        .unwrap();
    assert_eq!(listed, ["plain"]);
    db.create_collection("validated")
        .validator(doc! {"$jsonSchema": {
            "properties": {"code": {"bsonType": "string", "pattern": "^([A-Z])\\1-\\d+$"}},
        }})
        .await
        .unwrap();
    let validated = db.collection::<Document>("validated");
    validated.insert_one(doc! {"code": "AA-12"}).await.unwrap();
    let err = validated
        .insert_one(doc! {"code": "AB-12"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(121), "{err}");
}

both_modes!(filters_and_operators_run_pcre2);
