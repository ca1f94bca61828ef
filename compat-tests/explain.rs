//! `explain` through the router: the plan each query uses (COLLSCAN, IXSCAN under FETCH with
//! bounds, EXPRESS_IXSCAN, SORT, SKIP, LIMIT, projections, COUNT, UPDATE, DELETE, aggregation
//! stages) wrapped as mongos wraps it, what running it examined, and that explaining a write
//! writes nothing.

use crate::harness::{both_modes, error_code};
use mongodb::bson::{Bson, Document, doc};
use mongodb::{Client, Database, IndexModel};

async fn setup(client: &Client) -> Database {
    let db = client.database("explain_db");
    let coll = db.collection::<Document>("c");
    let docs: Vec<Document> = (0..100)
        .map(|i| doc! {"_id": i, "a": i % 10, "b": format!("s{i}"), "tags": [i % 3, i % 5]})
        .collect();
    coll.insert_many(docs).await.unwrap();
    coll.create_index(IndexModel::builder().keys(doc! {"a": 1, "b": -1}).build())
        .await
        .unwrap();
    coll.create_index(IndexModel::builder().keys(doc! {"tags": 1}).build())
        .await
        .unwrap();
    db
}

async fn explain(db: &Database, command: Document, verbosity: &str) -> Document {
    db.run_command(doc! {"explain": command, "verbosity": verbosity})
        .await
        .unwrap()
}

/// The one shard's part of `queryPlanner` (checking mongos's SINGLE_SHARD wrapper on the way).
fn shard_planner(reply: &Document) -> Document {
    let plan = reply
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap();
    assert_eq!(plan.get_str("stage").unwrap(), "SINGLE_SHARD", "{reply}");
    let shards = plan.get_array("shards").unwrap();
    assert_eq!(shards.len(), 1);
    let shard = shards[0].as_document().unwrap().clone();
    assert!(shard.get_str("shardName").is_ok());
    shard
}

fn winning_plan(reply: &Document) -> Document {
    shard_planner(reply)
        .get_document("winningPlan")
        .unwrap()
        .clone()
}

fn shard_stats(reply: &Document) -> Document {
    let stats = reply.get_document("executionStats").unwrap();
    let stages = stats.get_document("executionStages").unwrap();
    assert_eq!(stages.get_str("stage").unwrap(), "SINGLE_SHARD");
    let shard = stages.get_array("shards").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    for field in ["nReturned", "totalKeysExamined", "totalDocsExamined"] {
        assert_eq!(stats.get(field), shard.get(field), "{field}");
    }
    shard
}

fn int(doc: &Document, field: &str) -> i64 {
    match doc.get(field) {
        Some(Bson::Int32(n)) => *n as i64,
        Some(Bson::Int64(n)) => *n,
        other => panic!("{field} is {other:?} in {doc}"),
    }
}

/// The stage names from the top down.
fn stages(mut plan: &Document) -> Vec<String> {
    let mut out = vec![plan.get_str("stage").unwrap().to_string()];
    while let Ok(input) = plan.get_document("inputStage") {
        out.push(input.get_str("stage").unwrap().to_string());
        plan = input;
    }
    out
}

fn stage<'a>(mut plan: &'a Document, name: &str) -> &'a Document {
    loop {
        if plan.get_str("stage").unwrap() == name {
            return plan;
        }
        plan = plan
            .get_document("inputStage")
            .unwrap_or_else(|_| panic!("no {name} stage"));
    }
}

async fn find_plans(client: &Client) {
    let db = setup(client).await;

    // An indexed range, sorted by the index (backwards), limited.
    let reply = explain(
        &db,
        doc! {"find": "c", "filter": {"a": {"$gte": 3, "$lt": 5}}, "sort": {"a": -1}, "limit": 4},
        "executionStats",
    )
    .await;
    let plan = winning_plan(&reply);
    assert_eq!(stages(&plan), ["LIMIT", "FETCH", "IXSCAN"]);
    let ixscan = stage(&plan, "IXSCAN");
    assert_eq!(ixscan.get_str("indexName").unwrap(), "a_1_b_-1");
    assert_eq!(
        ixscan.get_document("keyPattern").unwrap(),
        &doc! {"a": 1, "b": -1}
    );
    assert_eq!(ixscan.get_str("direction").unwrap(), "backward");
    assert_eq!(
        ixscan.get_document("indexBounds").unwrap(),
        &doc! {"a": ["(5, 3]"], "b": ["[MinKey, MaxKey]"]}
    );
    assert!(!ixscan.get_bool("isMultiKey").unwrap());
    assert!(
        stage(&plan, "FETCH").get("filter").is_none(),
        "bounds express the whole filter"
    );
    let stats = shard_stats(&reply);
    assert_eq!(int(&stats, "nReturned"), 4);
    assert_eq!(int(&stats, "totalKeysExamined"), 4, "stops at the limit");
    assert_eq!(int(&stats, "totalDocsExamined"), 4);
    assert_eq!(
        int(
            &reply.get_document("executionStats").unwrap().clone(),
            "nReturned"
        ),
        4
    );

    // No usable index: a collection scan with the filter, a blocking sort keeping skip + limit.
    let reply = explain(
        &db,
        doc! {"find": "c", "filter": {"b": {"$gt": "s5"}}, "sort": {"b": 1}, "skip": 2, "limit": 3, "projection": {"b": 1}},
        "executionStats",
    )
    .await;
    let plan = winning_plan(&reply);
    assert_eq!(
        stages(&plan),
        ["PROJECTION_SIMPLE", "SKIP", "SORT", "COLLSCAN"]
    );
    let sort = stage(&plan, "SORT");
    assert_eq!(sort.get_document("sortPattern").unwrap(), &doc! {"b": 1});
    assert_eq!(int(sort, "limitAmount"), 5);
    assert_eq!(
        stage(&plan, "COLLSCAN").get_document("filter").unwrap(),
        &doc! {"b": {"$gt": "s5"}}
    );
    let stats = shard_stats(&reply);
    assert_eq!(int(&stats, "totalDocsExamined"), 100);
    assert_eq!(int(&stats, "totalKeysExamined"), 0);
    assert_eq!(int(&stats, "nReturned"), 3);
    let exec = stats.get_document("executionStages").unwrap();
    assert_eq!(int(stage(exec, "SORT"), "nReturned"), 5);
    let matches = (0..100).filter(|i| format!("s{i}").as_str() > "s5").count() as i64;
    assert_eq!(int(stage(exec, "COLLSCAN"), "nReturned"), matches);

    // An `_id` lookup is the express path; other predicates keep a FETCH filter.
    let plan = winning_plan(
        &explain(
            &db,
            doc! {"find": "c", "filter": {"_id": 7}},
            "queryPlanner",
        )
        .await,
    );
    assert_eq!(stages(&plan), ["EXPRESS_IXSCAN"]);
    assert_eq!(plan.get_str("indexName").unwrap(), "_id_");
    let plan = winning_plan(
        &explain(
            &db,
            doc! {"find": "c", "filter": {"_id": 7, "b": "s7"}},
            "queryPlanner",
        )
        .await,
    );
    assert_eq!(stages(&plan), ["FETCH", "IXSCAN"]);
    assert_eq!(
        stage(&plan, "FETCH").get_document("filter").unwrap(),
        &doc! {"b": {"$eq": "s7"}}
    );

    // Multikey: the index says so, and each document is returned once.
    let reply = explain(
        &db,
        doc! {"find": "c", "filter": {"tags": {"$in": [0, 1]}}},
        "executionStats",
    )
    .await;
    let plan = winning_plan(&reply);
    let ixscan = stage(&plan, "IXSCAN");
    assert!(ixscan.get_bool("isMultiKey").unwrap());
    assert_eq!(
        ixscan.get_document("indexBounds").unwrap(),
        &doc! {"tags": ["[0, 0]", "[1, 1]"]}
    );
    let expected = (0..100)
        .filter(|i| [i % 3, i % 5].iter().any(|t| *t <= 1))
        .count() as i64;
    let stats = shard_stats(&reply);
    assert_eq!(int(&stats, "nReturned"), expected);
    assert!(int(&stats, "totalKeysExamined") > expected);

    // A `$or` whose branches are all indexed: a union of index scans under one FETCH.
    let reply = explain(
        &db,
        doc! {"find": "c", "filter": {"$or": [{"a": 1}, {"tags": 4}, {"_id": {"$lt": 3}}]}},
        "executionStats",
    )
    .await;
    let plan = winning_plan(&reply);
    assert_eq!(stages(&plan), ["FETCH", "OR"]);
    let or = stage(&plan, "OR");
    let inputs = or.get_array("inputStages").unwrap();
    assert_eq!(inputs.len(), 3);
    let names: Vec<&str> = inputs
        .iter()
        .map(|i| i.as_document().unwrap().get_str("indexName").unwrap())
        .collect();
    assert_eq!(names, ["a_1_b_-1", "tags_1", "_id_"]);
    let stats = shard_stats(&reply);
    let expected = (0..100)
        .filter(|i| i % 10 == 1 || i % 5 == 4 || *i < 3)
        .count() as i64;
    assert_eq!(int(&stats, "nReturned"), expected, "each document once");
    let plan = winning_plan(
        &explain(
            &db,
            doc! {"find": "c", "filter": {"$or": [{"a": 1}, {"nope": 2}]}},
            "queryPlanner",
        )
        .await,
    );
    assert_eq!(stages(&plan), ["COLLSCAN"]);

    // The parsed query and the echoed command.
    let reply = explain(
        &db,
        doc! {"find": "c", "filter": {"a": 1, "b": {"$ne": "x"}}},
        "queryPlanner",
    )
    .await;
    assert_eq!(
        shard_planner(&reply).get_document("parsedQuery").unwrap(),
        &doc! {"$and": [{"a": {"$eq": 1}}, {"b": {"$ne": "x"}}]}
    );
    assert_eq!(
        reply
            .get_document("command")
            .unwrap()
            .get_str("find")
            .unwrap(),
        "c"
    );
    assert!(reply.get_document("serverInfo").is_ok());
    assert!(reply.get("executionStats").is_none());

    // A hint that names no index.
    let err = db
        .run_command(doc! {"explain": {"find": "c", "hint": "nope_1"}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(2));
}

async fn other_commands(client: &Client) {
    let db = setup(client).await;
    let coll = db.collection::<Document>("c");

    let reply = explain(&db, doc! {"count": "c"}, "executionStats").await;
    let exec = shard_stats(&reply);
    let top = exec.get_document("executionStages").unwrap();
    assert_eq!(top.get_str("stage").unwrap(), "RECORD_STORE_FAST_COUNT");
    assert_eq!(int(top, "nCounted"), 100);

    let reply = explain(
        &db,
        doc! {"count": "c", "query": {"a": 3}, "skip": 2},
        "executionStats",
    )
    .await;
    assert_eq!(stages(&winning_plan(&reply)), ["COUNT", "FETCH", "IXSCAN"]);
    let top = shard_stats(&reply)
        .get_document("executionStages")
        .unwrap()
        .clone();
    assert_eq!(int(&top, "nCounted"), 8);
    assert_eq!(int(&top, "nSkipped"), 2);

    let plan = winning_plan(
        &explain(
            &db,
            doc! {"distinct": "c", "key": "b", "query": {"a": 2}},
            "queryPlanner",
        )
        .await,
    );
    assert_eq!(stages(&plan), ["FETCH", "IXSCAN"]);

    // Explaining writes reports what they would do and changes nothing.
    let reply = explain(
        &db,
        doc! {"update": "c", "updates": [{"q": {"a": 4}, "u": {"$set": {"z": 1}}, "multi": true}]},
        "executionStats",
    )
    .await;
    let top = shard_stats(&reply)
        .get_document("executionStages")
        .unwrap()
        .clone();
    assert_eq!(top.get_str("stage").unwrap(), "UPDATE");
    assert_eq!(int(&top, "nMatched"), 10);
    assert_eq!(int(&top, "nWouldModify"), 10);
    assert_eq!(int(&top, "nWouldUpsert"), 0);
    let reply = explain(
        &db,
        doc! {"update": "c", "updates": [{"q": {"a": 42}, "u": {"$set": {"z": 1}}, "upsert": true}]},
        "executionStats",
    )
    .await;
    let top = shard_stats(&reply)
        .get_document("executionStages")
        .unwrap()
        .clone();
    assert_eq!(int(&top, "nWouldUpsert"), 1);
    let reply = explain(
        &db,
        doc! {"delete": "c", "deletes": [{"q": {"a": 5}, "limit": 0}]},
        "executionStats",
    )
    .await;
    let top = shard_stats(&reply)
        .get_document("executionStages")
        .unwrap()
        .clone();
    assert_eq!(top.get_str("stage").unwrap(), "BATCHED_DELETE");
    assert_eq!(int(&top, "nWouldDelete"), 10);
    let reply = explain(
        &db,
        doc! {"delete": "c", "deletes": [{"q": {"_id": 5}, "limit": 1}]},
        "queryPlanner",
    )
    .await;
    assert_eq!(stages(&winning_plan(&reply)), ["EXPRESS_DELETE"]);
    let reply = explain(
        &db,
        doc! {"findAndModify": "c", "query": {"a": 6}, "sort": {"_id": -1}, "update": {"$inc": {"a": 1}}},
        "executionStats",
    )
    .await;
    let plan = winning_plan(&reply);
    assert_eq!(stages(&plan)[..2], ["UPDATE", "SORT"]);
    assert_eq!(int(stage(&plan, "SORT"), "limitAmount"), 1);
    assert_eq!(coll.count_documents(doc! {"z": 1}).await.unwrap(), 0);
    assert_eq!(coll.count_documents(doc! {"a": 5}).await.unwrap(), 10);
    assert_eq!(coll.count_documents(doc! {"a": 6}).await.unwrap(), 10);
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 100);

    // Aggregations: the query under `$cursor`, the other stages after it, on the shard.
    let reply = explain(
        &db,
        doc! {"aggregate": "c", "pipeline": [{"$match": {"a": 3}}, {"$group": {"_id": "$a", "n": {"$sum": 1}}}], "cursor": {}},
        "executionStats",
    )
    .await;
    let shards = reply.get_document("shards").unwrap();
    let (_, shard) = shards.iter().next().unwrap();
    let agg_stages = shard.as_document().unwrap().get_array("stages").unwrap();
    let cursor = agg_stages[0]
        .as_document()
        .unwrap()
        .get_document("$cursor")
        .unwrap();
    let plan = cursor
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap();
    assert_eq!(stages(plan), ["FETCH", "IXSCAN"]);
    let group = agg_stages[1].as_document().unwrap();
    assert!(group.contains_key("$group"));
    assert_eq!(int(group, "nReturned"), 1);
    let reply = db
        .run_command(doc! {"aggregate": "c", "pipeline": [{"$match": {"_id": 3}}], "explain": true})
        .await
        .unwrap();
    assert!(reply.get_document("shards").is_ok(), "{reply}");

    // A collection that does not exist: nothing to scan.
    let reply = explain(&db, doc! {"find": "missing"}, "executionStats").await;
    assert_eq!(stages(&winning_plan(&reply)), ["EOF"]);
}

async fn errors(client: &Client) {
    let db = setup(client).await;
    let code = |reply: mongodb::error::Result<Document>| error_code(&reply.unwrap_err());
    assert_eq!(
        code(
            db.run_command(doc! {"explain": {"insert": "c", "documents": [{}]}})
                .await
        ),
        Some(20)
    );
    assert_eq!(
        code(db.run_command(doc! {"explain": {"frobnicate": "c"}}).await),
        Some(59)
    );
    assert_eq!(
        code(
            db.run_command(doc! {"explain": {"find": "c"}, "verbosity": "all"})
                .await
        ),
        Some(2)
    );
    assert_eq!(
        code(db.run_command(doc! {"explain": "find"}).await),
        Some(9)
    );
    assert_eq!(
        code(
            db.run_command(doc! {"explain": {"delete": "c", "deletes": [{"q": {}, "limit": 0}, {"q": {}, "limit": 0}]}})
                .await
        ),
        Some(16)
    );
    assert_eq!(
        code(
            db.run_command(doc! {"explain": {"find": "c", "filter": {"a": {"$bogus": 1}}}})
                .await
        ),
        Some(2)
    );
}

both_modes!(find_plans, other_commands, errors);
