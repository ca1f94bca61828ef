//! Nesting as deep as MongoDB allows works on every path that walks it — storing, reading,
//! indexing, sorting, grouping, filters, expressions, projections, updates, pipelines, explain
//! and error messages — and deeper nesting, given or computed, answers MongoDB's errors while
//! the cluster keeps serving.

use crate::harness::error_code;
use futures::TryStreamExt;
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

/// `{a: {a: ... {a: leaf}}}` with `levels` documents, the outer one included.
fn nested(levels: usize, leaf: Bson) -> Document {
    let mut value = leaf;
    for _ in 1..levels {
        value = Bson::Document(doc! {"a": value});
    }
    doc! {"a": value}
}

/// The dotted path `a.a. ... .a` with `components` components.
fn path(components: usize) -> String {
    vec!["a"; components].join(".")
}

/// `{$and: [{$and: [... {x: 1} ...]}]}`: `levels` nested `$and`s.
fn nested_and(levels: usize) -> Document {
    let mut filter = doc! {"x": 1};
    for _ in 0..levels {
        filter = doc! {"$and": [filter]};
    }
    filter
}

/// `{$add: [{$add: [... 1 ...]}, 1]}`: `levels` nested additions, worth `levels`.
fn nested_add(levels: usize) -> Bson {
    let mut expr = Bson::Int32(0);
    for _ in 0..levels {
        expr = Bson::Document(doc! {"$add": [expr, 1]});
    }
    expr
}

async fn assert_serving(client: &Client) {
    let reply = client
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .expect("the cluster still answers");
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
}

async fn stored_documents_as_deep_as_mongodb_allows(client: &Client) {
    let coll = client.database("deep").collection::<Document>("docs");
    let mut deepest = nested(179, Bson::Int32(1));
    deepest.insert("_id", 1);
    coll.insert_one(deepest.clone()).await.unwrap();
    let mut other = nested(179, Bson::Int32(2));
    other.insert("_id", 2);
    coll.insert_one(other).await.unwrap();

    // Read back, compared, sorted, grouped, distinct, indexed on the deep value.
    let back = coll.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    assert_eq!(back, deepest);
    let sorted: Vec<Document> = coll
        .find(doc! {})
        .sort(doc! {"a": -1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(sorted[0].get_i32("_id").unwrap(), 2);
    let groups: Vec<Document> = coll
        .aggregate(vec![doc! {"$group": {"_id": "$a", "n": {"$sum": 1}}}])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(groups.len(), 2);
    let distinct = coll.distinct("a", doc! {}).await.unwrap();
    assert_eq!(distinct.len(), 2);
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"a": 1}).build())
        .await
        .unwrap();
    coll.create_index(
        mongodb::IndexModel::builder()
            .keys(doc! {"a.a": "hashed"})
            .build(),
    )
    .await
    .unwrap();
    let by_value = coll
        .find_one(doc! {"a": deepest.get("a").unwrap().clone()})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_value.get_i32("_id").unwrap(), 1);
    let by_path = coll
        .find_one(doc! {format!("{}.b", path(98)): {"$exists": false}, "_id": 2})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_path.get_i32("_id").unwrap(), 2);
    let explained = client
        .database("deep")
        .run_command(
            doc! {"explain": {"find": "docs", "filter": {"a": deepest.get("a").unwrap().clone()}}},
        )
        .await
        .unwrap();
    assert_eq!(explained.get_f64("ok").ok(), Some(1.0));
}

async fn documents_deeper_than_storage_are_refused(client: &Client) {
    let coll = client.database("deep").collection::<Document>("refused");
    let err = coll
        .insert_one(nested(181, Bson::Int32(1)))
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(15));
    assert!(
        err.to_string()
            .contains("cannot insert document because it exceeds 180 levels of nesting"),
        "{err}"
    );
    // An update that would nest a document too deep changes nothing.
    coll.insert_one(doc! {"_id": 1, "a": 1}).await.unwrap();
    let err = coll
        .update_one(
            doc! {"_id": 1},
            doc! {"$set": {"b": nested(180, Bson::Int32(1))}},
        )
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(15), "{err}");
    assert!(
        err.to_string()
            .contains("Document exceeds maximum nesting depth of 180"),
        "{err}"
    );
    let err = coll
        .update_one(
            doc! {"_id": 1},
            doc! {"$set": {format!("b.{}", path(190)): 1}},
        )
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(15), "{err}");
    let doc = coll.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    assert_eq!(doc, doc! {"_id": 1, "a": 1});
    assert_serving(client).await;
}

async fn deep_filters_projections_and_expressions(client: &Client) {
    let db = client.database("deep");
    let coll = db.collection::<Document>("queries");
    coll.insert_one(doc! {"_id": 1, "x": 1, "a": nested(100, Bson::Int32(7))})
        .await
        .unwrap();
    // MongoDB parses match expressions up to 100 levels deep.
    let found = coll.find_one(nested_and(99)).await.unwrap();
    assert!(found.is_some());
    // Deeper than the message may nest: refused as the message is read.
    let err = coll.find_one(nested_and(101)).await.unwrap_err();
    assert_eq!(error_code(&err), Some(15), "{err}");
    // $elemMatch nests a level per expression: past 100 the parser refuses it.
    let elem_match = |levels: usize| {
        let mut elem = doc! {"$eq": 1};
        for _ in 0..levels {
            elem = doc! {"$elemMatch": elem};
        }
        doc! {"x": elem}
    };
    coll.find_one(elem_match(45)).await.unwrap();
    let err = coll.find_one(elem_match(150)).await.unwrap_err();
    assert_eq!(error_code(&err), Some(2), "{err}");
    assert!(
        err.to_string().contains("exceeded depth limit of 100"),
        "{err}"
    );
    // $not nests too.
    let mut not = doc! {"$eq": 1};
    for _ in 0..40 {
        not = doc! {"$not": not};
    }
    coll.find_one(doc! {"x": not}).await.unwrap();
    // A projection and an expression nested as deep as the message allows.
    let projection = nested(95, Bson::Int32(1));
    let projected = coll
        .find_one(doc! {"_id": 1})
        .projection(projection)
        .await
        .unwrap()
        .unwrap();
    assert!(projected.contains_key("a"));
    let sum: Vec<Document> = coll
        .aggregate(vec![doc! {"$project": {"s": nested_add(95)}}])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(sum[0].get_i32("s").unwrap(), 95);
    let matched = coll
        .find_one(doc! {"$expr": {"$eq": [nested_add(95), 95]}})
        .await
        .unwrap();
    assert!(matched.is_some());
    // $jsonSchema with nested properties.
    let mut schema = doc! {"bsonType": "int"};
    for _ in 0..45 {
        schema = doc! {"bsonType": "object", "properties": {"a": schema}};
    }
    coll.find_one(doc! {"$jsonSchema": schema}).await.unwrap();
    // An error whose message prints a deep value.
    let err = coll
        .update_one(
            doc! {"_id": 1},
            doc! {"$inc": {"x": nested(150, Bson::Int32(1))}},
        )
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(14), "{err}");
    assert_serving(client).await;
}

async fn deep_pipelines(client: &Client) {
    let db = client.database("deep");
    let coll = db.collection::<Document>("pipelines");
    coll.insert_one(doc! {"_id": 1, "x": 1}).await.unwrap();
    // Nested sub-pipelines, as many as MongoDB runs (internalMaxSubPipelineViewDepth, 20).
    let union_with = |levels: usize| {
        let mut pipeline = vec![doc! {"$match": {}}];
        for _ in 0..levels {
            pipeline = vec![doc! {"$unionWith": {"coll": "pipelines", "pipeline": pipeline}}];
        }
        pipeline
    };
    let out: Vec<Document> = coll
        .aggregate(union_with(20))
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(out.len(), 21);
    let err = coll.aggregate(union_with(21)).await.unwrap_err();
    assert_eq!(error_code(&err), Some(232), "{err}");
    let lookup = |levels: usize| {
        let mut inner = vec![doc! {"$match": {}}];
        for _ in 0..levels {
            inner = vec![doc! {"$lookup": {"from": "pipelines", "as": "l", "pipeline": inner}}];
        }
        inner
    };
    let out: Vec<Document> = coll
        .aggregate(lookup(20))
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(out.len(), 1);
    let err = coll.aggregate(lookup(21)).await.unwrap_err();
    assert_eq!(error_code(&err), Some(232), "{err}");
    assert_serving(client).await;
}

/// Every field a command reads, nested as deep as a message may be (201 levels, the command
/// itself included): answered, never a crash, in one process and across processes.
async fn as_deep_as_a_message_may_be(client: &Client) {
    let db = client.database("deep");
    let coll = db.collection::<Document>("edge");
    coll.insert_one(doc! {"_id": 1, "x": 1}).await.unwrap();
    let value = |levels: usize| Bson::Document(nested(levels, Bson::Int32(1)));
    // find: body (1), filter (2), the value's 198 levels.
    coll.find_one(doc! {"a": value(198)}).await.unwrap();
    // A projection's levels are a path's components (at most 200).
    coll.find_one(doc! {"_id": 1})
        .projection(nested(198, Bson::Int32(1)))
        .await
        .unwrap();
    let err = coll
        .find_one(doc! {"_id": 1})
        .projection(doc! {path(201): 1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(15), "{err}");
    // A filter's path may be as deep as a stored document (180 components).
    coll.find_one(doc! {path(180): 1}).await.unwrap();
    let err = coll.find_one(doc! {path(181): 1}).await.unwrap_err();
    assert_eq!(error_code(&err), Some(5729100), "{err}");
    db.run_command(doc! {"explain": {"find": "edge", "filter": {"a": value(196)}}})
        .await
        .unwrap();
    // aggregate: body, pipeline, stage, $project, then the expression's levels.
    let mut object = Bson::String("$x".into());
    for _ in 0..194 {
        object = Bson::Document(doc! {"a": object});
    }
    let out: Vec<Document> = coll
        .aggregate(vec![doc! {"$project": {"o": object.clone()}}])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(out.len(), 1);
    coll.aggregate(vec![doc! {"$group": {"_id": object}}])
        .await
        .unwrap()
        .try_collect::<Vec<Document>>()
        .await
        .unwrap();
    let mut schema = doc! {"bsonType": "int"};
    for _ in 0..97 {
        schema = doc! {"properties": {"a": schema}};
    }
    coll.find_one(doc! {"$jsonSchema": schema}).await.unwrap();
    // update: body, updates, statement, u, $set, then the value: refused for storage.
    let err = coll
        .update_one(doc! {"_id": 1}, doc! {"$set": {"b": value(194)}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(15), "{err}");
    let err = coll
        .update_one(doc! {"_id": 1}, doc! {"$inc": {"b": value(194)}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(14), "{err}");
    let err = db
        .run_command(doc! {"insert": "edge", "documents": [nested(198, Bson::Int32(1))]})
        .await
        .unwrap();
    assert_eq!(
        err.get_array("writeErrors").unwrap()[0]
            .as_document()
            .unwrap()
            .get_i32("code")
            .unwrap(),
        15
    );
    assert_serving(client).await;
}

/// Values computed deeper than a message may be are refused when they would become BSON, as
/// MongoDB refuses them, however deep they grew.
async fn computed_depth_is_refused(client: &Client) {
    let coll = client.database("deep").collection::<Document>("computed");
    coll.insert_one(doc! {"_id": 1, "x": 1}).await.unwrap();
    let wrap = doc! {"$reduce": {
        "input": {"$range": [0, 20_000]},
        "initialValue": [],
        "in": ["$$value"],
    }};
    let err = coll
        .aggregate(vec![doc! {"$project": {"deep": wrap}}])
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(15), "{err}");
    let stages: Vec<Document> = (0..250)
        .map(|_| doc! {"$project": {"w": {"a": "$$ROOT"}}})
        .collect();
    let err = coll.aggregate(stages).await.unwrap_err();
    assert_eq!(error_code(&err), Some(15), "{err}");
    assert!(err.to_string().contains("levels of nesting"), "{err}");
    assert_serving(client).await;
}

/// Runs a scenario with the client on a large stack: the driver's own (recursive, unoptimized)
/// decoding of a deep reply needs more than a test thread's 2 MiB. The servers' tasks run on
/// the runtime's worker threads, at tokio's default stack size, as an embedder's would.
fn with_client_stack<F, Fut>(scenario: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let joined = std::thread::Builder::new()
        .stack_size(64 * 1024 * 1024)
        .spawn(move || {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap()
                .block_on(scenario())
        })
        .unwrap()
        .join();
    if let Err(panic) = joined {
        std::panic::resume_unwind(panic);
    }
}

macro_rules! deep_modes {
    ($($scenario:ident),* $(,)?) => {
        $(
            mod $scenario {
                #[test]
                fn in_process() {
                    super::with_client_stack(|| async {
                        let cluster = crate::harness::TestCluster::start().await;
                        super::$scenario(&cluster.client).await;
                        cluster.shutdown().await;
                    });
                }

                #[test]
                fn separate_processes() {
                    super::with_client_stack(|| async {
                        let cluster = crate::harness::ProcessCluster::start(2).await;
                        super::$scenario(&cluster.client().await).await;
                    });
                }
            }
        )*
    };
}

deep_modes!(
    as_deep_as_a_message_may_be,
    stored_documents_as_deep_as_mongodb_allows,
    documents_deeper_than_storage_are_refused,
    deep_filters_projections_and_expressions,
    deep_pipelines,
    computed_depth_is_refused,
);
