//! Text search end to end through the router, on an unsharded collection and on one sharded
//! across both shards: text index specs as `listIndexes` shows them and MongoDB's errors,
//! `$text` terms, phrases, negations, languages and sensitivity in find, count and a leading
//! `$match`, `{$meta: "textScore"}` in projections and sorts (merged by score on the router)
//! and in pipelines, `$text` under `$or`, explain's TEXT_MATCH plans.

use crate::harness::{aggregate_documents, both_modes, error_code, find_all};
use futures::TryStreamExt;
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

const DOCS: [(i32, &str, &str); 6] = [
    (1, "Coffee", "A coffee shop in town"),
    (2, "Tea time", "green tea and cake"),
    (
        3,
        "Coffee and cake",
        "the café serves coffee, coffee and more coffee",
    ),
    (4, "Morning", "a cup of TEA"),
    (5, "Café", "espresso"),
    (6, "Nothing", "the and of"),
];

/// `sharded` is sharded by `_id`, split at 4 with the upper chunk on the other shard.
async fn setup(client: &Client) -> mongodb::Database {
    let db = client.database("text_search");
    db.drop().await.unwrap();
    let admin = client.database("admin");
    admin
        .run_command(doc! {"shardCollection": "text_search.sharded", "key": {"_id": 1}})
        .await
        .unwrap();
    crate::harness::split_across_shards(
        client,
        "text_search.sharded",
        doc! {"_id": 4},
        [doc! {"_id": 1}, doc! {"_id": 5}],
    )
    .await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        let index = doc! {
            "key": {"title": "text", "body": "text"}, "name": "search",
            "weights": {"title": 3},
        };
        db.run_command(doc! {"createIndexes": name, "indexes": [index]})
            .await
            .unwrap();
        let docs: Vec<Document> = DOCS
            .iter()
            .map(|(id, title, body)| doc! {"_id": id, "title": title, "body": body})
            .collect();
        coll.insert_many(docs).await.unwrap();
    }
    db
}

async fn ids(coll: &mongodb::Collection<Document>, search: Document) -> Vec<i32> {
    let found = find_all(coll, doc! {"$text": search}).await;
    let mut ids: Vec<i32> = found.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    ids.sort_unstable();
    ids
}

async fn indexes_as_mongodb_shows_them(client: &Client) {
    let db = setup(client).await;
    for name in ["plain", "sharded"] {
        let raw = db.run_command(doc! {"listIndexes": name}).await.unwrap();
        let batch = raw
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap();
        let text = batch
            .iter()
            .filter_map(Bson::as_document)
            .find(|i| i.get_str("name") == Ok("search"))
            .unwrap_or_else(|| panic!("{name}: {batch:?}"));
        assert_eq!(
            text,
            &doc! {
                "v": 2, "key": {"_fts": "text", "_ftsx": 1}, "name": "search",
                "weights": {"body": 1, "title": 3}, "default_language": "english",
                "language_override": "language", "textIndexVersion": 3,
            },
            "{name}"
        );
        // One text index per collection.
        let second = doc! {"key": {"other": "text"}, "name": "other_text"};
        let err = db
            .run_command(doc! {"createIndexes": name, "indexes": [second]})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(85), "{name}: {err}");
        // The same index again is no change.
        let same = doc! {
            "key": {"title": "text", "body": "text"}, "name": "search", "weights": {"title": 3},
        };
        db.run_command(doc! {"createIndexes": name, "indexes": [same]})
            .await
            .unwrap();
        for bad in [
            doc! {"key": {"a": "text", "b": 1, "c": "text"}, "name": "x"},
            doc! {"key": {"a": "text"}, "name": "x", "default_language": "klingon"},
            doc! {"key": {"a": "text"}, "name": "x", "weights": {"a": 0}},
            doc! {"key": {"a": "text"}, "name": "x", "textIndexVersion": 7},
        ] {
            let err = db
                .run_command(doc! {"createIndexes": "fresh", "indexes": [bad.clone()]})
                .await
                .unwrap_err();
            assert_eq!(error_code(&err), Some(67), "{bad}: {err}");
        }
    }
}

async fn searches(client: &Client) {
    let db = setup(client).await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        // Terms are OR'ed, stemmed ("cakes" finds "cake") and fold diacritics ("cafe").
        assert_eq!(
            ids(&coll, doc! {"$search": "coffee"}).await,
            [1, 3],
            "{name}"
        );
        assert_eq!(
            ids(&coll, doc! {"$search": "cakes tea"}).await,
            [2, 3, 4],
            "{name}"
        );
        assert_eq!(ids(&coll, doc! {"$search": "cafe"}).await, [3, 5], "{name}");
        // Stop words find nothing.
        assert!(
            ids(&coll, doc! {"$search": "the and"}).await.is_empty(),
            "{name}"
        );
        // Negations and phrases.
        assert_eq!(
            ids(&coll, doc! {"$search": "coffee -cake"}).await,
            [1],
            "{name}"
        );
        assert_eq!(
            ids(&coll, doc! {"$search": "\"coffee shop\""}).await,
            [1],
            "{name}"
        );
        assert_eq!(
            ids(&coll, doc! {"$search": "tea -\"green tea\""}).await,
            [4],
            "{name}"
        );
        // Case and diacritic sensitivity.
        assert_eq!(
            ids(&coll, doc! {"$search": "TEA", "$caseSensitive": true}).await,
            [4],
            "{name}"
        );
        assert_eq!(
            ids(&coll, doc! {"$search": "Café", "$diacriticSensitive": true}).await,
            [3, 5],
            "{name}"
        );
        assert_eq!(
            ids(&coll, doc! {"$search": "cafe", "$diacriticSensitive": true}).await,
            Vec::<i32>::new(),
            "{name}"
        );
        // Another language stems otherwise: no English stemming of "coffees" with "none".
        assert!(
            ids(&coll, doc! {"$search": "coffees", "$language": "none"})
                .await
                .is_empty(),
            "{name}"
        );
        // With other predicates, in count and a leading `$match`.
        let filter = doc! {"$text": {"$search": "coffee tea"}, "_id": {"$gt": 2}};
        assert_eq!(
            coll.count_documents(filter.clone()).await.unwrap(),
            2,
            "{name}"
        );
        let matched = aggregate_documents(
            &coll,
            vec![doc! {"$match": filter}, doc! {"$sort": {"_id": 1}}],
        )
        .await;
        let matched: Vec<i32> = matched.iter().map(|d| d.get_i32("_id").unwrap()).collect();
        assert_eq!(matched, [3, 4], "{name}");
        // The candidates come from the text index's keys.
        let find = doc! {"find": name, "filter": {"$text": {"$search": "coffee"}}};
        let explained = db
            .run_command(doc! {"explain": find, "verbosity": "executionStats"})
            .await
            .unwrap();
        let shown = explained.to_string();
        assert!(
            shown.contains("\"indexName\": \"search\""),
            "{name}: {shown}"
        );
        assert!(
            shown.contains("\"totalDocsExamined\": 2"),
            "{name}: {shown}"
        );
        // As MongoDB's classic engine shows it: TEXT_MATCH over FETCH over the IXSCAN, or
        // over TEXT_OR when the score is wanted.
        for (stage, below) in [
            ("TEXT_MATCH", "\"stage\": \"FETCH\""),
            ("TEXT_MATCH", "\"stage\": \"IXSCAN\""),
        ] {
            assert!(
                shown.contains(stage) && shown.contains(below),
                "{name}: {shown}"
            );
        }
        assert!(
            shown.contains("\"parsedTextQuery\": { \"terms\": [\"coffe\"], \"negatedTerms\": [], \"phrases\": [], \"negatedPhrases\": [] }"),
            "{name}: {shown}"
        );
        let by_score = doc! {"find": name, "filter": {"$text": {"$search": "coffee -tea"}}, "sort": {"s": {"$meta": "textScore"}}};
        let explained = db
            .run_command(doc! {"explain": by_score, "verbosity": "queryPlanner"})
            .await
            .unwrap()
            .to_string();
        assert!(explained.contains("\"TEXT_OR\""), "{name}: {explained}");
        assert!(
            explained.contains("\"negatedTerms\": [\"tea\"]"),
            "{name}: {explained}"
        );
        let titles = coll
            .distinct("title", doc! {"$text": {"$search": "cake"}})
            .await
            .unwrap();
        assert_eq!(titles.len(), 2, "{name}: {titles:?}");
        // Writes select by `$text` too.
        let espresso = doc! {"$text": {"$search": "espresso"}};
        let updated = coll
            .update_many(espresso.clone(), doc! {"$set": {"hit": true}})
            .await
            .unwrap();
        assert_eq!(updated.modified_count, 1, "{name}");
        let modified = coll
            .find_one_and_update(espresso.clone(), doc! {"$set": {"hit": 2}})
            .projection(doc! {"hit": 1, "score": {"$meta": "textScore"}})
            .await
            .unwrap()
            .unwrap();
        // "espresso" is the whole body: 1 × 1.1.
        assert_eq!(modified.get_f64("score"), Ok(1.1), "{name}: {modified}");
        let deleted = coll.delete_many(espresso).await.unwrap();
        assert_eq!(deleted.deleted_count, 1, "{name}");
        assert!(
            ids(&coll, doc! {"$search": "espresso"}).await.is_empty(),
            "{name}"
        );
    }
}

async fn scores(client: &Client) {
    let db = setup(client).await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        let found: Vec<Document> = coll
            .find(doc! {"$text": {"$search": "coffee cake"}})
            .projection(doc! {"title": 1, "score": {"$meta": "textScore"}})
            .sort(doc! {"score": {"$meta": "textScore"}})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let scored: Vec<(i32, f64)> = found
            .iter()
            .map(|d| (d.get_i32("_id").unwrap(), d.get_f64("score").unwrap()))
            .collect();
        // Document 3: title "Coffee and cake" (weight 3; "and" a stop word): coffee and cake
        // each 3 × 1 × 0.75; body: coffee three times among 5 terms ("cafe", "serv" and
        // "coffe" × 3): (1 + 1/2 + 1/4) × (0.5 + 0.5 × 3/5). Document 1: title "Coffee" 3 × 1 (the stem is not the whole
        // title); body "A coffee shop in town": 1 × 0.5 + 0.5 / 3.
        let expected_3 = 2.25 + 2.25 + 1.75 * 0.8;
        let expected_1 = 3.0 + (0.5 + 0.5 / 3.0);
        let expected_2 = 0.5 + 0.5 / 3.0;
        let ids: Vec<i32> = scored.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, [3, 1, 2], "{name}: {found:?}");
        for ((_, score), expected) in scored.iter().zip([expected_3, expected_1, expected_2]) {
            assert!((score - expected).abs() < 1e-9, "{name}: {scored:?}");
        }
        assert_eq!(
            found[0].keys().collect::<Vec<_>>(),
            ["_id", "title", "score"]
        );
        // A score projection alone keeps every field.
        let one = coll
            .find_one(doc! {"$text": {"$search": "espresso"}})
            .projection(doc! {"s": {"$meta": "textScore"}})
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            one.keys().collect::<Vec<_>>(),
            ["_id", "title", "body", "s"]
        );
    }
}

/// `{$meta: "textScore"}` in pipelines: the score set by the leading `$match` travels with
/// each document through the stages that keep or replace it (not `$group`), is sorted by
/// (each shard's sorted stream merged by it on the router) and read by expressions, and never
/// shows in `$$ROOT` or the output.
async fn scores_in_pipelines(client: &Client) {
    let db = setup(client).await;
    let expected_3 = 2.25 + 2.25 + 1.75 * 0.8;
    let expected_1 = 3.0 + (0.5 + 0.5 / 3.0);
    let search = doc! {"$match": {"$text": {"$search": "coffee cake"}}};
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        let out = aggregate_documents(
            &coll,
            vec![
                search.clone(),
                doc! {"$sort": {"s": {"$meta": "textScore"}}},
                doc! {"$project": {"title": 1, "score": {"$meta": "textScore"}}},
            ],
        )
        .await;
        let ids: Vec<i32> = out.iter().map(|d| d.get_i32("_id").unwrap()).collect();
        assert_eq!(ids, [3, 1, 2], "{name}: {out:?}");
        assert_eq!(out[0].keys().collect::<Vec<_>>(), ["_id", "title", "score"]);
        let score = out[1].get_f64("score").unwrap();
        assert!((score - expected_1).abs() < 1e-9, "{name}: {out:?}");
        // Through `$replaceWith`, then read by `$addFields`.
        let out = aggregate_documents(
            &coll,
            vec![
                search.clone(),
                doc! {"$replaceWith": {"t": "$title"}},
                doc! {"$addFields": {"s": {"$meta": "textScore"}}},
                doc! {"$sort": {"s": -1}},
                doc! {"$limit": 1},
            ],
        )
        .await;
        assert_eq!(
            out,
            [doc! {"t": "Coffee and cake", "s": expected_3}],
            "{name}"
        );
        // In `$expr` and accumulators.
        let out = aggregate_documents(
            &coll,
            vec![
                search.clone(),
                doc! {"$match": {"$expr": {"$gt": [{"$meta": "textScore"}, 1]}}},
                doc! {"$group": {"_id": null, "n": {"$sum": 1}, "total": {"$sum": {"$meta": "textScore"}}}},
            ],
        )
        .await;
        assert_eq!(out[0].get_i32("n"), Ok(2), "{name}: {out:?}");
        let total = out[0].get_f64("total").unwrap();
        assert!(
            (total - expected_3 - expected_1).abs() < 1e-9,
            "{name}: {out:?}"
        );
        // Read on the router after the shards' part (a `$limit` splits the pipeline).
        let out = aggregate_documents(
            &coll,
            vec![
                search.clone(),
                doc! {"$limit": 5},
                doc! {"$project": {"_id": 0, "s": {"$meta": "textScore"}}},
            ],
        )
        .await;
        assert_eq!(out.len(), 3, "{name}");
        assert!(
            out.iter().all(|d| d.get_f64("s").unwrap() > 0.0),
            "{name}: {out:?}"
        );
        // Never in `$$ROOT` nor in the output; gone after `$group`.
        let out = aggregate_documents(
            &coll,
            vec![
                search.clone(),
                doc! {"$sort": {"_id": 1}},
                doc! {"$limit": 1},
                doc! {"$replaceWith": {"root": "$$ROOT"}},
            ],
        )
        .await;
        let root = out[0].get_document("root").unwrap();
        assert_eq!(
            root.keys().collect::<Vec<_>>(),
            ["_id", "title", "body"],
            "{name}"
        );
        let out = aggregate_documents(
            &coll,
            vec![
                search.clone(),
                doc! {"$group": {"_id": "$title"}},
                doc! {"$project": {"s": {"$meta": "textScore"}}},
            ],
        )
        .await;
        assert_eq!(out.len(), 3, "{name}");
        assert!(out.iter().all(|d| d.len() == 1), "{name}: {out:?}");
    }
}

/// `$text` under `$or`: the text index for its branch and an index for every other one
/// (MongoDB's NoQueryExecutionPlans when one has none).
async fn text_under_or(client: &Client) {
    let db = setup(client).await;
    let either = doc! {"$or": [{"$text": {"$search": "espresso"}}, {"title": "Morning"}]};
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        let err = coll.find_one(either.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(291), "{name}: {err}");
        assert!(
            err.to_string()
                .contains("Failed to produce a solution for TEXT under OR"),
            "{name}: {err}"
        );
        coll.create_index(
            mongodb::IndexModel::builder()
                .keys(doc! {"title": 1})
                .build(),
        )
        .await
        .unwrap();
        assert_eq!(
            ids_of(find_all(&coll, either.clone()).await),
            [4, 5],
            "{name}"
        );
        let nested = doc! {"$and": [{"_id": {"$gt": 4}}, either.clone()]};
        assert_eq!(ids_of(find_all(&coll, nested).await), [5], "{name}");
        let scored = aggregate_documents(
            &coll,
            vec![
                doc! {"$match": either.clone()},
                doc! {"$sort": {"_id": 1}},
                doc! {"$replaceWith": {"s": {"$meta": "textScore"}}},
            ],
        )
        .await;
        // "espresso" is the whole body of 5 (1 × 1.1); 4 came through the other branch,
        // without a score.
        assert_eq!(scored, [doc! {}, doc! {"s": 1.1}], "{name}");
    }
}

fn ids_of(docs: Vec<Document>) -> Vec<i32> {
    let mut ids: Vec<i32> = docs.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    ids.sort_unstable();
    ids
}

async fn errors(client: &Client) {
    let db = setup(client).await;
    let coll = db.collection::<Document>("plain");
    let code = |filter: Document| {
        let coll = coll.clone();
        async move {
            let err = coll.find(filter).await.unwrap_err();
            error_code(&err)
        }
    };
    let search = doc! {"$search": "coffee"};
    assert_eq!(code(doc! {"$text": {"$search": 1}}).await, Some(2));
    assert_eq!(
        code(doc! {"$text": {"$search": "x", "$bogus": 1}}).await,
        Some(2)
    );
    assert_eq!(
        code(doc! {"$text": {"$search": "x", "$language": "klingon"}}).await,
        Some(2)
    );
    assert_eq!(
        code(doc! {"$nor": [{"$text": search.clone()}]}).await,
        Some(2)
    );
    assert_eq!(
        code(doc! {"a": {"$elemMatch": {"$text": search.clone()}}}).await,
        Some(2)
    );
    let later = vec![
        doc! {"$match": {"_id": 1}},
        doc! {"$match": {"$text": search.clone()}},
    ];
    let err = coll.aggregate(later).await.unwrap_err();
    assert_eq!(error_code(&err), Some(17313), "{err}");
    // No text index (and no collection): IndexNotFound.
    for name in ["fresh", "missing"] {
        if name == "fresh" {
            db.collection::<Document>(name)
                .insert_one(doc! {"a": 1})
                .await
                .unwrap();
        }
        let err = db
            .collection::<Document>(name)
            .find(doc! {"$text": search.clone()})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(27), "{name}: {err}");
    }
    // No hint beside `$text`; a compound text index needs equalities on its prefix fields.
    let err = coll
        .find(doc! {"$text": search.clone()})
        .hint(mongodb::options::Hint::Name("_id_".into()))
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(2), "{err}");
    let compound = db.collection::<Document>("compound");
    let index = doc! {"key": {"cat": 1, "t": "text", "n": -1}, "name": "cat_text"};
    db.run_command(doc! {"createIndexes": "compound", "indexes": [index]})
        .await
        .unwrap();
    let docs = (0..6).map(|i| doc! {"_id": i, "cat": i % 2, "t": "coffee", "n": i});
    compound.insert_many(docs).await.unwrap();
    let err = compound
        .find(doc! {"$text": search.clone()})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(291), "{err}");
    let found = find_all(&compound, doc! {"cat": 1, "$text": search.clone()}).await;
    let mut found: Vec<i32> = found.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    found.sort_unstable();
    assert_eq!(found, [1, 3, 5]);
    // In a pipeline the score needs a leading `$match` with `$text` (MongoDB's dependency
    // analysis); `$meta` takes a known name, as a string.
    for stage in [
        doc! {"$project": {"s": {"$meta": "textScore"}}},
        doc! {"$addFields": {"s": {"$meta": "textScore"}}},
        doc! {"$sort": {"s": {"$meta": "textScore"}}},
        doc! {"$group": {"_id": null, "s": {"$max": {"$meta": "textScore"}}}},
    ] {
        for name in ["plain", "sharded"] {
            let pipeline = vec![doc! {"$match": {"_id": {"$gt": 0}}}, stage.clone()];
            let err = db
                .collection::<Document>(name)
                .aggregate(pipeline)
                .await
                .unwrap_err();
            assert_eq!(error_code(&err), Some(40218), "{name} {stage}: {err}");
        }
    }
    for (meta, code) in [
        (Bson::String("bogus".into()), 17308),
        (Bson::Int32(1), 17307),
        (Bson::String("sortKey".into()), 238),
    ] {
        let pipeline = vec![
            doc! {"$match": {"$text": search.clone()}},
            doc! {"$project": {"s": {"$meta": meta.clone()}}},
        ];
        let err = coll.aggregate(pipeline).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{meta}: {err}");
    }
    // A find's documents carry no metadata for expressions to read: refused, never missing.
    let nested = doc! {"find": "plain", "filter": {"$text": search.clone()}, "projection": {"s": {"$add": [{"$meta": "textScore"}, 1]}}};
    let err = db.run_command(nested).await.unwrap_err();
    assert_eq!(error_code(&err), Some(238), "{err}");
    // The score needs a `$text`.
    for option in ["projection", "sort"] {
        let find = doc! {"find": "plain", "filter": {}, option: {"s": {"$meta": "textScore"}}};
        let err = db.run_command(find).await.unwrap_err();
        assert_eq!(error_code(&err), Some(40218), "{option}: {err}");
    }
}

async fn keys_follow_writes_wildcards_and_languages(client: &Client) {
    let db = setup(client).await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        // The index's keys follow updates, replacements and deletes.
        coll.update_one(doc! {"_id": 5}, doc! {"$set": {"body": "a latte"}})
            .await
            .unwrap();
        assert!(
            ids(&coll, doc! {"$search": "espresso"}).await.is_empty(),
            "{name}"
        );
        assert_eq!(ids(&coll, doc! {"$search": "lattes"}).await, [5], "{name}");
        coll.replace_one(doc! {"_id": 6}, doc! {"title": "Latte art"})
            .await
            .unwrap();
        assert_eq!(
            ids(&coll, doc! {"$search": "latte"}).await,
            [5, 6],
            "{name}"
        );
        coll.delete_one(doc! {"_id": 5}).await.unwrap();
        assert_eq!(ids(&coll, doc! {"$search": "latte"}).await, [6], "{name}");
    }
    // Every string with `$**`; each document's (and sub-document's) language.
    let coll = db.collection::<Document>("wild");
    let index = doc! {
        "key": {"$**": "text"}, "name": "all", "default_language": "spanish",
        "language_override": "idioma",
    };
    db.run_command(doc! {"createIndexes": "wild", "indexes": [index]})
        .await
        .unwrap();
    coll.insert_many([
        doc! {"_id": 1, "a": {"b": ["corriendo"]}},
        doc! {"_id": 2, "x": "running", "idioma": "english"},
        doc! {"_id": 3, "sub": {"idioma": "en", "y": "runs"}},
    ])
    .await
    .unwrap();
    assert_eq!(ids(&coll, doc! {"$search": "corriendo"}).await, [1]);
    assert_eq!(
        ids(&coll, doc! {"$search": "run", "$language": "english"}).await,
        [2, 3]
    );
    // A hidden text index answers no `$text`.
    let hide = doc! {"collMod": "wild", "index": {"name": "all", "hidden": true}};
    db.run_command(hide).await.unwrap();
    let err = coll
        .find(doc! {"$text": {"$search": "corriendo"}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(27), "{err}");
    let show = doc! {"collMod": "wild", "index": {"name": "all", "hidden": false}};
    db.run_command(show).await.unwrap();
    // A document naming a language the index cannot stem is refused.
    let err = coll
        .insert_one(doc! {"_id": 4, "x": "hola", "idioma": "klingon"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(17262), "{err}");
}

both_modes!(
    indexes_as_mongodb_shows_them,
    searches,
    scores,
    scores_in_pipelines,
    text_under_or,
    errors,
    keys_follow_writes_wildcards_and_languages
);
