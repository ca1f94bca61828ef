//! Retryable writes through the router, unsharded and sharded, in-process and as separate
//! processes: a write the driver retries after a `writeConcernError` labelled
//! RetryableWriteError (failCommand) applies once; the same command sent twice by hand with
//! the same `lsid`/`txnNumber` answers the first result and changes nothing; so does a retry
//! after `kill -9` of the shards or of the router; an older `txnNumber` answers
//! TransactionTooOld (225).

use crate::harness::{ProcessCluster, TestCluster, admin, hashed_owners};
use crate::wire::RawConnection;
use mongodb::Client;
use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{Binary, Document, doc};
use mongodb::options::{ReturnDocument, WriteModel};
use std::net::SocketAddr;

const TEST_COMMANDS: &[&str] = &["--enable-test-commands"];

/// A collection `db.c` holding `{_id: i, k: i, x: 0}` for `i` in 0..10, sharded on hashed `k`
/// (chunks on both shards) when `sharded`.
async fn populate(client: &Client, db: &str, sharded: bool) -> mongodb::Collection<Document> {
    if sharded {
        admin(
            client,
            doc! {"shardCollection": format!("{db}.c"), "key": {"k": "hashed"}},
        )
        .await
        .unwrap();
    }
    let coll = client.database(db).collection::<Document>("c");
    coll.insert_many((0..10).map(|i| doc! {"_id": i, "k": i, "x": 0}))
        .await
        .unwrap();
    coll
}

/// The next command named `command` runs, then answers a retryable write concern error.
async fn fail_once_after_running(client: &Client, command: &str) {
    admin(
        client,
        doc! {"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": {
            "failCommands": [command],
            "writeConcernError": {"code": 91, "codeName": "ShutdownInProgress",
                "errmsg": "Replication is being shut down"},
            "errorLabels": ["RetryableWriteError"],
        }},
    )
    .await
    .unwrap();
}

async fn x_of(coll: &mongodb::Collection<Document>, id: i32) -> Option<i32> {
    coll.find_one(doc! {"_id": id})
        .await
        .unwrap()
        .map(|d| d.get_i32("x").unwrap())
}

/// (a) Every write command, retried by the driver after a retryable write concern error,
/// applies once.
async fn driver_retries_apply_once(client: &Client, db: &str, sharded: bool) {
    let coll = populate(client, db, sharded).await;

    fail_once_after_running(client, "insert").await;
    coll.insert_one(doc! {"_id": 100, "k": 100, "x": 0})
        .await
        .expect("the retried insert meets no duplicate key");
    assert_eq!(coll.count_documents(doc! {"_id": 100}).await.unwrap(), 1);

    fail_once_after_running(client, "update").await;
    let updated = coll
        .update_one(doc! {"k": 1}, doc! {"$inc": {"x": 1}})
        .await
        .unwrap();
    assert_eq!((updated.matched_count, updated.modified_count), (1, 1));
    assert_eq!(x_of(&coll, 1).await, Some(1), "$inc applied once");

    // Without the shard key: the two-phase write of a sharded collection.
    fail_once_after_running(client, "update").await;
    coll.update_one(doc! {"_id": 2}, doc! {"$inc": {"x": 1}})
        .await
        .unwrap();
    assert_eq!(x_of(&coll, 2).await, Some(1), "$inc applied once");

    fail_once_after_running(client, "update").await;
    let upserted = coll
        .update_one(doc! {"k": 200}, doc! {"$inc": {"x": 1}})
        .upsert(true)
        .await
        .unwrap();
    assert!(upserted.upserted_id.is_some());
    assert_eq!(coll.count_documents(doc! {"k": 200}).await.unwrap(), 1);

    // Many documents match: one goes, not two.
    let many = doc! {"x": 0, "k": {"$gte": 4}};
    let before = coll.count_documents(many.clone()).await.unwrap();
    fail_once_after_running(client, "delete").await;
    let deleted = coll.delete_one(many.clone()).await.unwrap();
    assert_eq!(deleted.deleted_count, 1);
    assert_eq!(coll.count_documents(many).await.unwrap(), before - 1);

    fail_once_after_running(client, "findAndModify").await;
    let found = coll
        .find_one_and_update(doc! {"k": 3}, doc! {"$inc": {"x": 10}})
        .return_document(ReturnDocument::After)
        .await
        .unwrap();
    assert_eq!(
        found.unwrap().get_i32("x"),
        Ok(10),
        "the image of the first run"
    );
    assert_eq!(x_of(&coll, 3).await, Some(10));

    let before = coll.count_documents(doc! {"x": 0}).await.unwrap();
    fail_once_after_running(client, "findAndModify").await;
    let removed = coll
        .find_one_and_delete(doc! {"x": 0})
        .await
        .unwrap()
        .expect("a document");
    assert_eq!(
        coll.count_documents(doc! {"x": 0}).await.unwrap(),
        before - 1
    );
    assert_eq!(
        coll.count_documents(doc! {"_id": removed.get("_id").unwrap()})
            .await
            .unwrap(),
        0
    );

    if !sharded {
        // bulkWrite goes to the primary shard of an unsharded collection only.
        fail_once_after_running(client, "bulkWrite").await;
        let ns = coll.namespace();
        let result = client
            .bulk_write(vec![
                WriteModel::InsertOne(
                    mongodb::options::InsertOneModel::builder()
                        .namespace(ns.clone())
                        .document(doc! {"_id": 300, "k": 300, "x": 0})
                        .build(),
                ),
                WriteModel::UpdateOne(
                    mongodb::options::UpdateOneModel::builder()
                        .namespace(ns.clone())
                        .filter(doc! {"_id": 300})
                        .update(doc! {"$inc": {"x": 1}})
                        .build(),
                ),
            ])
            .await
            .unwrap();
        assert_eq!((result.inserted_count, result.modified_count), (1, 1));
        assert_eq!(x_of(&coll, 300).await, Some(1));
    }
}

fn lsid(n: u8) -> Document {
    doc! {"id": Binary {subtype: BinarySubtype::Uuid, bytes: vec![n; 16]}}
}

/// `command` on database `db` with a session and transaction number, over a raw connection
/// (no driver session is added).
async fn send(addr: SocketAddr, db: &str, command: &Document, session: u8, txn: i64) -> Document {
    let mut body = command.clone();
    body.insert("lsid", lsid(session));
    body.insert("txnNumber", txn);
    body.insert("$db", db);
    RawConnection::connect(addr).await.command(body).await
}

/// One write of each kind, each in a session of its own (`first_session` + its index) under
/// `txnNumber` 1.
fn writes() -> Vec<Document> {
    vec![
        doc! {"insert": "c", "documents": [{"_id": 50, "k": 50, "x": 0}, {"_id": 51, "k": 51, "x": 0}]},
        doc! {"update": "c", "updates": [
            {"q": {"k": 4}, "u": {"$inc": {"x": 1}}},
            {"q": {"_id": 5}, "u": {"$inc": {"x": 1}}},
            {"q": {"k": 60}, "u": {"$inc": {"x": 1}}, "upsert": true},
        ]},
        doc! {"delete": "c", "deletes": [{"q": {"x": 0}, "limit": 1}]},
        doc! {"findAndModify": "c", "query": {"k": 6}, "update": {"$inc": {"x": 1}}, "new": true},
    ]
}

/// Sends every write of [`writes`] once; returns the replies.
async fn send_writes(addr: SocketAddr, db: &str, first_session: u8) -> Vec<Document> {
    let mut replies = Vec::new();
    for (i, command) in writes().iter().enumerate() {
        let reply = send(addr, db, command, first_session + i as u8, 1).await;
        assert_eq!(reply.get_f64("ok"), Ok(1.0), "{reply}");
        assert!(reply.get("writeErrors").is_none(), "{reply}");
        replies.push(reply);
    }
    replies
}

/// What a reply says, without the fields a retry may add or change.
fn outcome(reply: &Document) -> Document {
    let mut out = reply.clone();
    for field in [
        "retriedStmtIds",
        "retriedStmtId",
        "$clusterTime",
        "operationTime",
    ] {
        out.remove(field);
    }
    out
}

/// (b) The same commands sent again with the same `lsid` and `txnNumber`: the first replies,
/// nothing changed. (d) An older `txnNumber` is refused.
async fn resent_commands_change_nothing(
    client: &Client,
    addr: SocketAddr,
    db: &str,
    sharded: bool,
) {
    let coll = populate(client, db, sharded).await;
    let session = if sharded { 40 } else { 10 };
    let first = send_writes(addr, db, session).await;
    let documents = crate::harness::all_by_id(&coll).await;
    for (i, command) in writes().iter().enumerate() {
        let again = send(addr, db, command, session + i as u8, 1).await;
        assert_eq!(outcome(&again), outcome(&first[i]), "{command}");
        // Every statement is named as answered from its record.
        if command.contains_key("findAndModify") {
            assert_eq!(again.get_i32("retriedStmtId"), Ok(0), "{again}");
        } else {
            let statements = ["documents", "updates", "deletes"]
                .iter()
                .find_map(|field| command.get_array(field).ok())
                .unwrap();
            let expected: Vec<mongodb::bson::Bson> = (0..statements.len() as i32)
                .map(mongodb::bson::Bson::Int32)
                .collect();
            assert_eq!(again.get_array("retriedStmtIds"), Ok(&expected), "{again}");
        }
    }
    assert_eq!(crate::harness::all_by_id(&coll).await, documents);
    if !sharded {
        // bulkWrite (on `admin`, to the primary shard of an unsharded collection).
        let bulk = doc! {"bulkWrite": 1, "nsInfo": [{"ns": format!("{db}.c")}], "ops": [
            {"insert": 0, "document": {"_id": 90, "k": 90, "x": 0}},
            {"update": 0, "filter": {"_id": 90}, "updateMods": {"$inc": {"x": 1}}},
            {"delete": 0, "filter": {"x": 0}},
        ]};
        let first = send(addr, "admin", &bulk, session + 9, 1).await;
        assert_eq!(first.get_i32("nErrors"), Ok(0), "{first}");
        let documents = crate::harness::all_by_id(&coll).await;
        let again = send(addr, "admin", &bulk, session + 9, 1).await;
        for count in ["nInserted", "nMatched", "nModified", "nDeleted", "nErrors"] {
            assert_eq!(again.get(count), first.get(count), "{count}: {again}");
        }
        assert_eq!(
            again.get_array("retriedStmtIds").map(Vec::len),
            Ok(3),
            "{again}"
        );
        assert_eq!(crate::harness::all_by_id(&coll).await, documents);
    }
    // A newer transaction number runs; an older one is then too old.
    let next = doc! {"insert": "c", "documents": [{"_id": 80, "k": 80}]};
    let reply = send(addr, db, &next, session, 2).await;
    assert_eq!(reply.get_i32("n"), Ok(1), "{reply}");
    let documents = crate::harness::all_by_id(&coll).await;
    let refused = send(addr, db, &writes()[0], session, 1).await;
    assert_eq!(refused.get_i32("code"), Ok(225), "{refused}");
    assert_eq!(refused.get_str("codeName"), Ok("TransactionTooOld"));
    assert!(
        refused
            .get_str("errmsg")
            .unwrap()
            .starts_with("Cannot start transaction 1 on session "),
        "{refused}"
    );
    assert_eq!(crate::harness::all_by_id(&coll).await, documents);
}

async fn in_process(
    test: fn(Client, SocketAddr, String, bool) -> futures::future::BoxFuture<'static, ()>,
) {
    let cluster = TestCluster::with_test_commands().await;
    for sharded in [false, true] {
        let db = format!("retry_{sharded}");
        test(cluster.client.clone(), cluster.addr, db, sharded).await;
    }
    cluster.shutdown().await;
}

async fn separate_processes(
    test: fn(Client, SocketAddr, String, bool) -> futures::future::BoxFuture<'static, ()>,
) {
    let cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let addr: SocketAddr = format!("127.0.0.1:{}", cluster.router_port)
        .parse()
        .unwrap();
    for sharded in [false, true] {
        let db = format!("retry_{sharded}");
        test(cluster.client().await, addr, db, sharded).await;
    }
}

fn driver_retries(
    client: Client,
    _addr: SocketAddr,
    db: String,
    sharded: bool,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(async move { driver_retries_apply_once(&client, &db, sharded).await })
}

fn resent(
    client: Client,
    addr: SocketAddr,
    db: String,
    sharded: bool,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(async move { resent_commands_change_nothing(&client, addr, &db, sharded).await })
}

#[tokio::test]
async fn driver_retries_apply_once_in_process() {
    in_process(driver_retries).await;
}

#[tokio::test]
async fn driver_retries_apply_once_separate_processes() {
    separate_processes(driver_retries).await;
}

#[tokio::test]
async fn resent_commands_change_nothing_in_process() {
    in_process(resent).await;
}

#[tokio::test]
async fn resent_commands_change_nothing_separate_processes() {
    separate_processes(resent).await;
}

/// Single-document writes without the shard key whose filter matches one document on each of
/// two shards: the retry of the first run must not find and write the other one.
async fn two_phase_retries_write_one_document(client: &Client, addr: SocketAddr) {
    let coll = populate(client, "retry_two_phase", true).await;
    let placed = hashed_owners(client, "retry_two_phase.c", 0..10).await;
    // Pairs of shard key values on different shards.
    let mut pairs = Vec::new();
    for (k, shard) in &placed {
        if let Some((other, _)) = placed
            .iter()
            .find(|(o, s)| s != shard && !pairs.iter().any(|(a, b)| a == o || b == o))
        {
            if !pairs.iter().any(|(a, b)| a == k || b == k) {
                pairs.push((*k, *other));
            }
        }
    }
    assert!(pairs.len() >= 3, "documents on both shards: {placed:?}");
    let commands = [
        doc! {"delete": "c", "deletes": [{"q": {"k": {"$in": [pairs[0].0, pairs[0].1]}}, "limit": 1}]},
        doc! {"update": "c", "updates": [{"q": {"k": {"$in": [pairs[1].0, pairs[1].1]}, "x": 0},
        "u": {"$set": {"x": 1}}}]},
        doc! {"findAndModify": "c", "query": {"k": {"$in": [pairs[2].0, pairs[2].1]}, "x": 0},
        "update": {"$set": {"x": 2}}},
    ];
    for (i, command) in commands.iter().enumerate() {
        let first = send(addr, "retry_two_phase", command, 60 + i as u8, 1).await;
        let documents = crate::harness::all_by_id(&coll).await;
        let again = send(addr, "retry_two_phase", command, 60 + i as u8, 1).await;
        assert_eq!(outcome(&again), outcome(&first), "{command}");
        assert_eq!(
            crate::harness::all_by_id(&coll).await,
            documents,
            "the retry of {command} wrote a second document"
        );
    }
}

#[tokio::test]
async fn two_phase_retries_write_one_document_in_process() {
    let cluster = TestCluster::start().await;
    two_phase_retries_write_one_document(&cluster.client, cluster.addr).await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn two_phase_retries_write_one_document_separate_processes() {
    let cluster = ProcessCluster::start(2).await;
    let addr: SocketAddr = format!("127.0.0.1:{}", cluster.router_port)
        .parse()
        .unwrap();
    two_phase_retries_write_one_document(&cluster.client().await, addr).await;
}

/// Shard key updates moving a document to another shard (update, upsert, findAndModify): the
/// retry answers the first result and moves nothing again.
async fn moved_documents_are_not_moved_again(client: &Client, addr: SocketAddr) {
    let coll = populate(client, "retry_moves", true).await;
    let placed = hashed_owners(client, "retry_moves.c", 0..200).await;
    let owner = |k: i32| placed.iter().find(|(v, _)| *v == k).unwrap().1.clone();
    let elsewhere = |k: i32, from: i32| {
        placed
            .iter()
            .find(|(v, s)| *v >= from && *s != owner(k))
            .unwrap()
            .0
    };
    let upsert_from = elsewhere(0, 150);
    let commands = [
        doc! {"update": "c", "updates": [{"q": {"k": 1}, "u": {"$set": {"k": elsewhere(1, 100)}}}]},
        doc! {"findAndModify": "c", "query": {"k": 2}, "update": {"$set": {"k": elsewhere(2, 120)}},
        "new": true},
        // An upsert whose new document another shard owns than the one its query targets.
        doc! {"update": "c", "updates": [{"q": {"k": upsert_from}, "u": {"$set": {"k": elsewhere(upsert_from, 170)}},
        "upsert": true}]},
    ];
    for (i, command) in commands.iter().enumerate() {
        let first = send(addr, "retry_moves", command, 70 + i as u8, 1).await;
        assert!(first.get("writeErrors").is_none(), "{first}");
        assert_eq!(first.get_f64("ok"), Ok(1.0), "{first}");
        let documents = crate::harness::all_by_id(&coll).await;
        let again = send(addr, "retry_moves", command, 70 + i as u8, 1).await;
        assert_eq!(outcome(&again), outcome(&first), "{command}");
        assert_eq!(
            crate::harness::all_by_id(&coll).await,
            documents,
            "the retry of {command} wrote again"
        );
    }
}

#[tokio::test]
async fn moved_documents_are_not_moved_again_in_process() {
    let cluster = TestCluster::start().await;
    moved_documents_are_not_moved_again(&cluster.client, cluster.addr).await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn moved_documents_are_not_moved_again_separate_processes() {
    let cluster = ProcessCluster::start(2).await;
    let addr: SocketAddr = format!("127.0.0.1:{}", cluster.router_port)
        .parse()
        .unwrap();
    moved_documents_are_not_moved_again(&cluster.client().await, addr).await;
}

/// (c) `kill -9` of every shard, then of the router, between a write and its retry: the retry
/// answers the first result and applies nothing again (the records are on disk, committed with
/// the writes).
#[tokio::test]
async fn retries_after_kill_9_are_deduplicated() {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let addr: SocketAddr = format!("127.0.0.1:{}", cluster.router_port)
        .parse()
        .unwrap();
    let client = cluster.client().await;
    let mut colls = Vec::new();
    for sharded in [false, true] {
        let db = format!("killed_{sharded}");
        colls.push((db.clone(), populate(&client, &db, sharded).await));
    }
    let mut first = Vec::new();
    for (i, (db, _)) in colls.iter().enumerate() {
        first.push(send_writes(addr, db, 20 + 10 * i as u8).await);
    }
    let mut before = Vec::new();
    for (_, coll) in &colls {
        before.push(crate::harness::all_by_id(coll).await);
    }
    for kill in ["shards", "router"] {
        if kill == "shards" {
            for shard in 0..2 {
                cluster.stop_shard(shard);
            }
            for shard in 0..2 {
                cluster.start_shard_again(shard);
            }
        } else {
            cluster.stop_router();
            cluster.start_router_again();
        }
        crate::harness::wait_for_port(cluster.router_port);
        for (i, (db, _)) in colls.iter().enumerate() {
            for (j, command) in writes().iter().enumerate() {
                let session = 20 + 10 * i as u8 + j as u8;
                let again = retry_until_up(addr, db, command, session).await;
                assert_eq!(
                    outcome(&again),
                    outcome(&first[i][j]),
                    "{command} after killing the {kill}"
                );
            }
        }
        let client = cluster.client().await;
        for (i, (db, _)) in colls.iter().enumerate() {
            let coll = client.database(db).collection::<Document>("c");
            assert_eq!(
                crate::harness::all_by_id(&coll).await,
                before[i],
                "after killing the {kill}"
            );
        }
    }
}

/// Sends until the cluster answers something other than a connection failure (the processes
/// restart).
async fn retry_until_up(addr: SocketAddr, db: &str, command: &Document, session: u8) -> Document {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let reply = send(addr, db, command, session, 1).await;
        let unreachable = matches!(reply.get_i32("code"), Ok(6 | 7 | 89 | 9001 | 91 | 11600));
        if !unreachable || std::time::Instant::now() > deadline {
            return reply;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// serverStatus on a shard counts retried commands and statements.
#[tokio::test]
async fn shards_count_retried_statements() {
    let cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let addr: SocketAddr = format!("127.0.0.1:{}", cluster.router_port)
        .parse()
        .unwrap();
    let client = cluster.client().await;
    populate(&client, "counted", false).await;
    let command = doc! {"insert": "c", "documents": [{"_id": 70}, {"_id": 71}]};
    send(addr, "counted", &command, 4, 1).await;
    send(addr, "counted", &command, 4, 1).await;
    let mut retried = (0, 0);
    for shard in 0..2 {
        let status = admin(&cluster.shard_client(shard).await, doc! {"serverStatus": 1})
            .await
            .unwrap();
        let transactions = status.get_document("transactions").unwrap();
        retried.0 += transactions.get_i64("retriedCommandsCount").unwrap();
        retried.1 += transactions.get_i64("retriedStatementsCount").unwrap();
        assert!(
            transactions
                .get_i64("transactionsCollectionWriteCount")
                .is_ok()
        );
    }
    assert_eq!(retried, (1, 2));
}

/// The logical session cache's reap removes the transaction-table records of sessions gone from
/// `config.system.sessions` (here: never refreshed into it) once they are older than
/// `TransactionRecordMinimumLifetimeMinutes`; a session the collection still has keeps them.
#[tokio::test]
async fn dead_sessions_records_are_reaped() {
    let cluster = ProcessCluster::start_with(
        2,
        &[
            "--enable-test-commands",
            "--setParameter",
            "TransactionRecordMinimumLifetimeMinutes=0",
        ],
    )
    .await;
    let addr: SocketAddr = format!("127.0.0.1:{}", cluster.router_port)
        .parse()
        .unwrap();
    let client = cluster.client().await;
    populate(&client, "reaped", false).await;
    let dead = doc! {"insert": "c", "documents": [{"_id": 80}]};
    let alive = doc! {"insert": "c", "documents": [{"_id": 81}]};
    assert_eq!(
        send(addr, "reaped", &dead, 20, 1)
            .await
            .get_i32("n")
            .unwrap(),
        1
    );
    assert_eq!(
        send(addr, "reaped", &alive, 21, 1)
            .await
            .get_i32("n")
            .unwrap(),
        1
    );
    // Session 21 goes to the sessions collection: it is written by the refresh of the nodes
    // that saw it; session 20 is then removed from it, as its TTL index would.
    for node in [
        cluster.client().await,
        cluster.shard_client(0).await,
        cluster.shard_client(1).await,
    ] {
        admin(&node, doc! {"refreshLogicalSessionCacheNow": 1})
            .await
            .unwrap();
    }
    let sessions = cluster
        .config_client()
        .await
        .database("config")
        .collection::<Document>("system.sessions");
    sessions
        .delete_many(doc! {"_id.id": Binary {subtype: BinarySubtype::Uuid, bytes: vec![20; 16]}})
        .await
        .unwrap();
    assert_eq!(
        sessions
            .count_documents(
                doc! {"_id.id": Binary {subtype: BinarySubtype::Uuid, bytes: vec![21; 16]}}
            )
            .await
            .unwrap(),
        1
    );
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let mut cleaned = 0;
    for shard in 0..2 {
        let node = cluster.shard_client(shard).await;
        admin(&node, doc! {"reapLogicalSessionCacheNow": 1})
            .await
            .unwrap();
        let status = admin(&node, doc! {"serverStatus": 1}).await.unwrap();
        cleaned += status
            .get_document("logicalSessionRecordCache")
            .unwrap()
            .get_i32("lastTransactionReaperJobEntriesCleanedUp")
            .unwrap();
    }
    assert_eq!(cleaned, 1);
    // The reaped session's statement runs again (and meets its own document); the live one's
    // still answers its first result.
    let again = send(addr, "reaped", &dead, 20, 1).await;
    assert_eq!(
        again.get_array("writeErrors").unwrap()[0]
            .as_document()
            .unwrap()
            .get_i32("code")
            .unwrap(),
        11000,
        "{again}"
    );
    let kept = send(addr, "reaped", &alive, 21, 1).await;
    assert_eq!(kept.get_i32("n").unwrap(), 1, "{kept}");
    assert!(kept.get("writeErrors").is_none(), "{kept}");
}
