//! Requests made expensive by their size — 100,000 projection fields, stages, `$in` values,
//! `$or` branches, `$set` and `$addFields` fields, documents of 100,000 fields or elements —
//! through the official driver: they answer as MongoDB does (their results, or the errors of
//! MongoDB's limits), and while one runs, other connections are still served.

use crate::harness::{ProcessCluster, TestCluster, all_by_id, client_for, error_code, first_batch};
use futures::TryStreamExt;
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

const N: usize = 100_000;

/// A million values or fields: 13 MB, within the 16 MB a command may have.
const MILLION: usize = 1_000_000;

/// How often `currentOp` looks at a process of its own (see [`served_while_running`]).
const SPARSE_POLL: Duration = Duration::from_millis(100);

/// `{<prefix>f0: value(0), <prefix>f1: value(1), ...}`.
fn fields(n: usize, prefix: &str, value: impl Fn(usize) -> Bson) -> Document {
    (0..n)
        .map(|i| (format!("{prefix}f{i}"), value(i)))
        .collect()
}

/// Sends `command` to `db` on a client of its own (so on a connection of its own).
fn start(addr: SocketAddr, db: &str, command: Document) -> JoinHandle<Document> {
    let db = db.to_string();
    tokio::spawn(async move {
        let client = client_for(addr).await;
        client.database(&db).run_command(command).await.unwrap()
    })
}

/// Proves that while `heavy` runs, other connections are served: `currentOp` on another
/// connection lists it still running (the shard's operation matching `op_filter`, so the shard
/// answered the router meanwhile), then an ordinary query and a `ping`, each on a new
/// connection, are answered before `heavy` replies. Returns the heavy command's reply.
///
/// `currentOp` is sent every `poll`. A process of its own is polled sparsely: one that is not
/// kept busy lets its runtime threads sleep, as a server between requests does, and that is
/// when a thread busy with one request left the sockets unread.
///
/// The assertions are on order, not time. When a heavy request kept a runtime thread busy, the
/// process read no connection until it was done (BENCHMARKS.md, "Expensive requests"): the
/// `currentOp` never saw the command running and the query came back after it. The heavy
/// commands here run for hundreds of milliseconds to seconds after they are first seen, which
/// the few milliseconds of the probes cannot be mistaken for.
async fn served_while_running(
    client: &Client,
    addr: SocketAddr,
    heavy: JoinHandle<Document>,
    op_filter: Document,
    poll: Duration,
) -> Document {
    let started = Instant::now();
    let mut current_op = doc! {"currentOp": 1};
    current_op.extend(op_filter);
    loop {
        assert!(
            !heavy.is_finished(),
            "the heavy command ended after {:?} without currentOp seeing it run",
            started.elapsed()
        );
        let listed = client
            .database("admin")
            .run_command(current_op.clone())
            .await
            .unwrap();
        if !listed.get_array("inprog").unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(poll).await;
    }
    let probe = client_for(addr).await;
    let found = probe
        .database("heavy")
        .collection::<Document>("items")
        .find_one(doc! {"_id": 3})
        .await
        .unwrap();
    assert_eq!(found, Some(doc! {"_id": 3, "a": 3}));
    let pinged = client_for(addr)
        .await
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap();
    assert_eq!(pinged.get_f64("ok").unwrap(), 1.0);
    assert!(
        !heavy.is_finished(),
        "the query and the ping came back after the heavy command ({:?})",
        started.elapsed()
    );
    heavy.await.unwrap()
}

async fn insert_items(client: &Client) {
    client
        .database("heavy")
        .collection::<Document>("items")
        .insert_many((0..10).map(|i| doc! {"_id": i, "a": i}))
        .await
        .unwrap();
}

// Two worker threads, as the machines this runs on have. Here the test's own client tasks share
// the runtime with the cluster and keep its threads awake; the `docgrid dev` process below is the
// case where a thread kept busy by one request left every connection unread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heavy_requests_leave_other_connections_served() {
    let cluster = TestCluster::start().await;
    insert_items(&cluster.client).await;
    let values: Vec<Bson> = (0..MILLION as i32).rev().map(Bson::Int32).collect();
    let heavy = [
        doc! {"find": "items", "filter": {"a": {"$in": values}}, "sort": {"_id": 1}},
        doc! {"find": "items", "projection": fields(MILLION, "", |_| Bson::Int32(0))},
        doc! {"aggregate": "items", "cursor": {},
        "pipeline": [{"$project": fields(MILLION, "", |_| Bson::Int32(1))}]},
    ];
    for command in heavy {
        let name = command.keys().next().unwrap().clone();
        let op = if name == "find" { "query" } else { "command" };
        let running = start(cluster.addr, "heavy", command);
        let reply = served_while_running(
            &cluster.client,
            cluster.addr,
            running,
            doc! {"ns": "heavy.items", "op": op},
            Duration::from_millis(5),
        )
        .await;
        assert_eq!(first_batch(&reply).len(), 10, "{name}: {reply}");
    }
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heavy_request_off_the_runtime_threads_can_still_be_killed() {
    let cluster = TestCluster::start().await;
    let wide = cluster.db("heavy").collection::<Document>("wide");
    wide.insert_many((0..20).map(|i| doc! {"_id": i}))
        .await
        .unwrap();
    // 100,000 fields set on each of 20 documents (a 1.2 MB request): seconds of work.
    let update = tokio::spawn({
        let addr = cluster.addr;
        async move {
            let client = client_for(addr).await;
            client
                .database("heavy")
                .run_command(doc! {"update": "wide", "updates": [
                    {"q": {}, "u": {"$set": fields(N, "", |i| Bson::Int32(i as i32))}, "multi": true}
                ]})
                .await
        }
    });
    let opid = loop {
        assert!(!update.is_finished(), "the update ended before it was seen");
        let listed = cluster
            .admin(doc! {"currentOp": 1, "ns": "heavy.wide", "op": "update"})
            .await
            .unwrap();
        if let Some(op) = listed.get_array("inprog").unwrap().first() {
            break op.as_document().unwrap().get("opid").unwrap().clone();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    cluster.admin(doc! {"killOp": 1, "op": opid}).await.unwrap();
    let err = update.await.unwrap().unwrap_err();
    assert_eq!(error_code(&err), Some(11601), "{err}");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projection_of_a_million_fields_leaves_the_shard_serving() {
    // Router and shard as separate processes: the shard parses the projection while it
    // answers its router's other requests (`currentOp`, a query).
    let cluster = ProcessCluster::start(1).await;
    let client = cluster.client().await;
    insert_items(&client).await;
    let addr = SocketAddr::from(([127, 0, 0, 1], cluster.router_port));
    let projection = fields(MILLION, "", |_| Bson::Int32(1));
    let running = start(
        addr,
        "heavy",
        doc! {"find": "items", "projection": projection, "sort": {"_id": 1}},
    );
    let op = doc! {"ns": "heavy.items", "op": "query"};
    let reply = served_while_running(&client, addr, running, op, SPARSE_POLL).await;
    let expected: Vec<Document> = (0..10).map(|i| doc! {"_id": i}).collect();
    assert_eq!(first_batch(&reply), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projection_of_a_million_fields_leaves_a_dev_process_serving() {
    // Everything in one `docgrid dev` process of its own, its runtime shared with nothing
    // else: before requests were handed off, its connections went unread while one parsed
    // (this test then fails: `currentOp` never sees the find running).
    let dir = tempfile::tempdir().unwrap();
    let port = crate::harness::free_port();
    let data = dir.path().display().to_string();
    let _dev = crate::harness::Process::spawn(
        &["dev", "--port", &port.to_string(), "--data-dir", &data],
        port,
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let client = client_for(addr).await;
    insert_items(&client).await;
    let projection = fields(MILLION, "", |_| Bson::Int32(1));
    let running = start(
        addr,
        "heavy",
        doc! {"find": "items", "projection": projection, "sort": {"_id": 1}},
    );
    let op = doc! {"ns": "heavy.items", "op": "query"};
    let reply = served_while_running(&client, addr, running, op, SPARSE_POLL).await;
    assert_eq!(first_batch(&reply).len(), 10);
}

#[tokio::test]
async fn large_specifications_answer_as_mongodb_does() {
    let cluster = TestCluster::start().await;
    let db = cluster.db("big");
    let docs = db.collection::<Document>("docs");
    docs.insert_many((0..20).map(|i| doc! {"_id": i, "a": i, "f7": i, "s": {"f1": i, "g": 1}}))
        .await
        .unwrap();
    let sharded = db.collection::<Document>("sharded");
    cluster
        .admin(doc! {"shardCollection": "big.sharded", "key": {"a": "hashed"}})
        .await
        .unwrap();
    sharded
        .insert_many((0..20).map(|i| doc! {"_id": i, "a": i, "f7": i}))
        .await
        .unwrap();
    let indexed = db.collection::<Document>("indexed");
    indexed
        .insert_many((0..20).map(|i| doc! {"_id": i, "a": i}))
        .await
        .unwrap();
    indexed
        .create_index(mongodb::IndexModel::builder().keys(doc! {"a": 1}).build())
        .await
        .unwrap();
    let find = |coll: &str, body: Document| {
        let mut command = doc! {"find": coll};
        command.extend(body);
        let db = db.clone();
        async move {
            let mut batch = first_batch(&db.run_command(command).await.unwrap());
            batch.sort_by_key(|d| d.get_i32("_id").unwrap());
            batch
        }
    };

    // 100,000 projection fields: inclusion, exclusion, dotted, and in `$project`.
    let ids = |range: std::ops::Range<i32>, extra: fn(i32) -> Document| -> Vec<Document> {
        range
            .map(|i| {
                let mut d = doc! {"_id": i};
                d.extend(extra(i));
                d
            })
            .collect()
    };
    let inclusion = fields(N, "", |_| Bson::Int32(1));
    for coll in ["docs", "sharded"] {
        assert_eq!(
            find(coll, doc! {"projection": inclusion.clone()}).await,
            ids(0..20, |i| doc! {"f7": i}),
            "{coll}"
        );
    }
    let mut exclusion = fields(N, "", |_| Bson::Int32(0));
    exclusion.insert("s", 0);
    assert_eq!(
        find("docs", doc! {"projection": exclusion}).await,
        ids(0..20, |i| doc! {"a": i})
    );
    assert_eq!(
        find(
            "docs",
            doc! {"projection": fields(N, "s.", |_| Bson::Int32(1)), "filter": {"_id": 2}}
        )
        .await,
        vec![doc! {"_id": 2, "s": {"f1": 2}}]
    );
    for coll in ["docs", "sharded"] {
        let out: Vec<Document> = db
            .collection::<Document>(coll)
            .aggregate([
                doc! {"$project": inclusion.clone()},
                doc! {"$addFields": fields(N, "x", |i| Bson::Int32(i as i32))},
                doc! {"$match": {"f7": {"$lt": 2}}},
                doc! {"$sort": {"_id": 1}},
            ])
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(out.len(), 2, "{coll}");
        assert_eq!(out[1].len(), 2 + N, "{coll}");
        assert_eq!(out[1].get_i32("xf99999").unwrap(), 99_999);
    }

    // 20 documents of 100,000 fields (32 MB): batches stop at 16 MB, as MongoDB's do.
    let reply = db
        .run_command(doc! {"aggregate": "docs", "cursor": {},
        "pipeline": [{"$addFields": fields(N, "x", |i| Bson::Int32(i as i32))}]})
        .await
        .unwrap();
    let batch = first_batch(&reply);
    assert!(
        batch.len() < 20 && !batch.is_empty(),
        "{} documents",
        batch.len()
    );
    assert_ne!(
        reply.get_document("cursor").unwrap().get_i64("id").unwrap(),
        0
    );
    let all: Vec<Document> = docs
        .aggregate([doc! {"$addFields": fields(N, "x", |i| Bson::Int32(i as i32))}])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all.len(), 20);

    // 100,000 `$in` values and `$or` branches, with and without an index, on a sharded
    // collection too.
    let odd_in = doc! {"a": {"$in": (0..N as i32).filter(|i| i % 2 == 1).map(Bson::Int32).collect::<Vec<_>>()}};
    let odd_or = doc! {"$or": (0..N as i32).filter(|i| i % 2 == 1).map(|i| Bson::Document(doc! {"a": i})).collect::<Vec<_>>()};
    let odd: Vec<Document> = (0..20)
        .filter(|i| i % 2 == 1)
        .map(|i| doc! {"_id": i, "a": i})
        .collect();
    for coll in ["indexed", "sharded"] {
        for filter in [odd_in.clone(), odd_or.clone()] {
            let got: Vec<Document> =
                find(coll, doc! {"filter": filter, "projection": {"f7": 0}}).await;
            assert_eq!(got, odd, "{coll}");
        }
    }

    // `$set` of 100,000 fields, then documents of 100,000 fields and 100,000 elements.
    let wide = db.collection::<Document>("wide");
    wide.insert_one(doc! {"_id": 1, "arr": (0..N as i32).collect::<Vec<_>>()})
        .await
        .unwrap();
    wide.update_one(
        doc! {"_id": 1},
        doc! {"$set": fields(N, "", |i| Bson::Int32(i as i32))},
    )
    .await
    .unwrap();
    let found = wide
        .find_one(doc! {"f99999": 99_999, "arr": 99_998})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.len(), 2 + N);
    wide.update_one(
        doc! {"_id": 1},
        doc! {"$push": {"arr": -1}, "$unset": {"f5": 1}},
    )
    .await
    .unwrap();
    let projected = wide
        .find_one(doc! {"arr": -1})
        .projection(doc! {"f99999": 1, "f5": 1, "arr": {"$slice": -2}})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        projected,
        doc! {"_id": 1, "arr": [99_999, -1], "f99999": 99_999}
    );
    assert_eq!(all_by_id(&wide).await.len(), 1);
    cluster.shutdown().await;
}

#[tokio::test]
async fn mongodb_limits_answer_its_errors() {
    let cluster = TestCluster::start().await;
    let db = cluster.db("limits");
    cluster
        .admin(doc! {"shardCollection": "limits.sharded", "key": {"_id": "hashed"}})
        .await
        .unwrap();
    for coll in ["plain", "sharded"] {
        db.collection::<Document>(coll)
            .insert_one(doc! {"_id": 1, "a": 1})
            .await
            .unwrap();
    }
    let failure = |command: Document| {
        let db = db.clone();
        async move {
            let err = db.run_command(command).await.unwrap_err();
            let mongodb::error::ErrorKind::Command(e) = *err.kind else {
                panic!("not a command error: {err}");
            };
            (e.code, e.code_name, e.message)
        }
    };
    let aggregate = |coll: &str, pipeline: Vec<Document>| {
        doc! {"aggregate": coll, "pipeline": pipeline, "cursor": {}}
    };
    let matches = |n: usize| vec![doc! {"$match": {"a": 1}}; n];

    // Pipeline length: 1,000 stages as written (the router checks before splitting), then
    // once `$count`s are two stages each; sub-pipelines alike.
    for coll in ["plain", "sharded"] {
        let ok = db
            .run_command(aggregate(coll, matches(1000)))
            .await
            .unwrap();
        assert_eq!(first_batch(&ok).len(), 1);
        assert_eq!(
            failure(aggregate(coll, matches(100_000))).await,
            (
                7749501,
                "Location7749501".to_string(),
                "Pipeline length must be no longer than 1000 stages.".to_string()
            ),
            "{coll}"
        );
        let (code, _, message) = failure(aggregate(coll, vec![doc! {"$count": "n"}; 501])).await;
        assert_eq!(
            (code, message.as_str()),
            (
                5054701,
                "Pipeline length must be no longer than 1000 stages"
            ),
            "{coll}"
        );
        let facet = vec![doc! {"$facet": {"f": matches(1001)}}];
        assert_eq!(failure(aggregate(coll, facet)).await.0, 7749501, "{coll}");
    }
    // `$lookup` and `$unionWith` sub-pipelines nest 20 deep.
    let nested = |n: usize| {
        let mut stage = doc! {"$match": {}};
        for _ in 0..n {
            stage = doc! {"$lookup": {"from": "plain", "as": "x", "pipeline": [stage]}};
        }
        vec![stage]
    };
    // Twenty levels parse (unit tests in `src/aggregate/limits.rs`); running them nests as many
    // sub-commands in this one task, deeper than a debug build's 2 MB test thread allows (15
    // run), which is for the stack sizing of the runtime threads.
    assert!(db.run_command(aggregate("plain", nested(3))).await.is_ok());
    assert_eq!(
        failure(aggregate("plain", nested(21))).await,
        (
            232,
            "MaxSubPipelineDepthExceeded".to_string(),
            "Maximum number of nested sub-pipelines exceeded. Limit is 20".to_string()
        )
    );
    let params = cluster
        .admin(doc! {"getParameter": 1, "internalPipelineLengthLimit": 1, "internalMaxSubPipelineViewDepth": 1})
        .await
        .unwrap();
    assert_eq!(params.get_i32("internalPipelineLengthLimit").unwrap(), 1000);
    assert_eq!(
        params.get_i32("internalMaxSubPipelineViewDepth").unwrap(),
        20
    );

    // 32 sort keys, 32 index key fields.
    let keys = |n: usize| fields(n, "", |_| Bson::Int32(1));
    let too_many = (
        13103,
        "Location13103".to_string(),
        "too many compound keys".to_string(),
    );
    for coll in ["plain", "sharded"] {
        assert!(
            db.run_command(doc! {"find": coll, "sort": keys(32)})
                .await
                .is_ok()
        );
        assert_eq!(
            failure(doc! {"find": coll, "sort": keys(33)}).await,
            too_many,
            "{coll}"
        );
        let sort = vec![doc! {"$sort": keys(33)}];
        assert_eq!(failure(aggregate(coll, sort)).await, too_many, "{coll}");
    }
    let plain = db.collection::<Document>("plain");
    let index = |key: Document| mongodb::IndexModel::builder().keys(key).build();
    plain.create_index(index(keys(32))).await.unwrap();
    let err = plain.create_index(index(keys(33))).await.unwrap_err();
    assert_eq!(error_code(&err), Some(13103), "{err}");
    let long_names: Document = (0..3)
        .map(|i| (format!("{i}{}", "x".repeat(1000)), Bson::Int32(1)))
        .collect();
    let err = plain.create_index(index(long_names)).await.unwrap_err();
    assert_eq!(error_code(&err), Some(67), "{err}");
    assert!(
        err.to_string().contains("Index key pattern too large."),
        "{err}"
    );

    // 64 indexes, `_id` and the 32-field one included.
    for i in 0..62 {
        plain
            .create_index(index(doc! {format!("i{i}"): 1}))
            .await
            .unwrap();
    }
    let err = plain
        .create_index(index(doc! {"over": 1}))
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(67), "{err}");
    assert!(
        err.to_string()
            .contains("add index fails, too many indexes for limits.plain key:{ over: 1 }"),
        "{err}"
    );
    cluster.shutdown().await;
}

/// `$lookup`s that multiply documents (each level joins every document of the collection) stop
/// at the first result document too large to return, as MongoDB does, instead of holding the
/// whole multiplied result: the process answers with BSONObjectTooLarge and keeps serving.
#[tokio::test]
async fn multiplying_lookups_stop_at_the_first_document_too_large() {
    let cluster = TestCluster::start().await;
    let coll = cluster
        .client
        .database("expensive")
        .collection::<Document>("fanout");
    let docs: Vec<Document> = (0..100)
        .map(|i| doc! {"_id": i, "pad": "x".repeat(2000)})
        .collect();
    coll.insert_many(docs).await.unwrap();
    let mut pipeline = vec![doc! {"$match": {}}];
    for _ in 0..3 {
        pipeline = vec![doc! {"$lookup": {"from": "fanout", "as": "l", "pipeline": pipeline}}];
    }
    let err = coll.aggregate(pipeline).await.unwrap_err();
    assert!(
        matches!(error_code(&err), Some(10334) | Some(4568)),
        "{err}"
    );
    let ping = cluster
        .client
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap();
    assert_eq!(ping.get_f64("ok").ok(), Some(1.0));
    cluster.shutdown().await;
}
