//! Logical sessions end to end: the session cache's refresh writes `config.system.sessions`,
//! `endSessions` removes a record at the next refresh, a session expired from the collection
//! has its cursors killed, the kill commands interrupt a session's operations and close its
//! cursors, checkout serializes a session's retryable writes on a shard, and
//! `serverStatus.logicalSessionRecordCache` counts the jobs — in-process and as processes.

use crate::harness::{ProcessCluster, TestCluster, error_code, failure};
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TEST_COMMANDS: [&str; 2] = ["--setParameter", "enableTestCommands=1"];

/// Declares a scenario as a test against the in-process cluster and one against separate
/// processes, both with test commands (`refreshLogicalSessionCacheNow`, fail points).
macro_rules! with_test_commands {
    ($($scenario:ident),* $(,)?) => {
        $(
            mod $scenario {
                #[tokio::test]
                async fn in_process() {
                    let cluster = $crate::harness::TestCluster::with_test_commands().await;
                    super::$scenario(&cluster.client).await;
                    cluster.shutdown().await;
                }

                #[tokio::test]
                async fn separate_processes() {
                    let cluster =
                        $crate::harness::ProcessCluster::start_with(2, &super::TEST_COMMANDS).await;
                    super::$scenario(&cluster.client().await).await;
                }
            }
        )*
    };
}

with_test_commands!(
    refresh_writes_used_sessions_and_removes_ended_ones,
    an_expired_sessions_cursor_is_killed_at_refresh,
    kill_sessions_interrupts_operations_and_closes_cursors,
    kill_commands_validate_their_arguments,
    a_cursor_is_continued_in_its_own_session,
    an_ended_sessions_cursor_is_killed_at_refresh,
);

async fn admin(client: &Client, command: Document) -> mongodb::error::Result<Document> {
    client.database("admin").run_command(command).await
}

async fn refresh(client: &Client) {
    admin(client, doc! {"refreshLogicalSessionCacheNow": 1})
        .await
        .unwrap();
}

async fn cache_status(client: &Client) -> Document {
    admin(client, doc! {"serverStatus": 1})
        .await
        .unwrap()
        .get_document("logicalSessionRecordCache")
        .unwrap()
        .clone()
}

/// The session records of the session whose UUID is `id`.
async fn records(client: &Client, id: &Bson) -> Vec<Document> {
    crate::harness::find_all(
        &client.database("config").collection("system.sessions"),
        doc! {"_id.id": id},
    )
    .await
}

async fn refresh_writes_used_sessions_and_removes_ended_ones(client: &Client) {
    let coll = client.database("app").collection::<Document>("used");
    let mut session = client.start_session().await.unwrap();
    let lsid = session.id().clone();
    let id = lsid.get("id").unwrap().clone();
    coll.insert_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap();
    refresh(client).await;
    let found = records(client, &id).await;
    assert_eq!(found.len(), 1, "{found:?}");
    let first_use = found[0].get_datetime("lastUse").unwrap().timestamp_millis();
    // A later use moves lastUse forward at the next refresh.
    tokio::time::sleep(Duration::from_millis(20)).await;
    coll.find_one(doc! {}).session(&mut session).await.unwrap();
    refresh(client).await;
    let found = records(client, &id).await;
    assert!(found[0].get_datetime("lastUse").unwrap().timestamp_millis() > first_use);

    admin(client, doc! {"endSessions": [&lsid]}).await.unwrap();
    // Ended sessions leave the collection at the next refresh, not before.
    assert_eq!(records(client, &id).await.len(), 1);
    refresh(client).await;
    assert!(records(client, &id).await.is_empty());
    let status = cache_status(client).await;
    assert!(
        status.get_i32("sessionsCollectionJobCount").unwrap() >= 3,
        "{status}"
    );
    assert_eq!(
        status
            .get_i32("lastSessionsCollectionJobEntriesEnded")
            .unwrap(),
        1
    );
    assert!(
        status
            .get_datetime("lastSessionsCollectionJobTimestamp")
            .is_ok()
    );
    assert!(status.get_i32("sessionCatalogSize").is_ok());
    // The TTL index expires records after localLogicalSessionTimeoutMinutes (30).
    let indexes = client
        .database("config")
        .run_command(doc! {"listIndexes": "system.sessions"})
        .await
        .unwrap();
    let ttl = crate::harness::first_batch(&indexes)
        .into_iter()
        .find(|i| i.get_str("name") == Ok("lsidTTLIndex"))
        .expect("lsidTTLIndex");
    assert_eq!(ttl.get_i32("expireAfterSeconds"), Ok(1800), "{ttl}");
}

/// Reads a session cursor to its end: the error that stopped it, if any.
async fn drain(
    cursor: &mut mongodb::SessionCursor<Document>,
    session: &mut mongodb::ClientSession,
) -> Option<mongodb::error::Error> {
    loop {
        match cursor.next(session).await {
            Some(Ok(_)) => {}
            Some(Err(e)) => return Some(e),
            None => return None,
        }
    }
}

/// `app.<name>` holding six documents, a new session, and a cursor of two-document batches
/// opened in it.
async fn cursor_in_a_session(
    client: &Client,
    name: &str,
) -> (
    mongodb::Collection<Document>,
    mongodb::ClientSession,
    mongodb::SessionCursor<Document>,
) {
    let coll = client.database("app").collection::<Document>(name);
    coll.insert_many((0..6).map(|i| doc! {"_id": i}))
        .await
        .unwrap();
    let mut session = client.start_session().await.unwrap();
    let cursor = coll
        .find(doc! {})
        .batch_size(2)
        .session(&mut session)
        .await
        .unwrap();
    (coll, session, cursor)
}

async fn an_expired_sessions_cursor_is_killed_at_refresh(client: &Client) {
    let (_, mut session, mut cursor) = cursor_in_a_session(client, "expiring").await;
    let id = session.id().get("id").unwrap().clone();
    refresh(client).await;
    assert_eq!(records(client, &id).await.len(), 1);
    // The TTL index would remove the record after 30 minutes unused; a test removes it by
    // hand, as MongoDB's own tests do.
    client
        .database("config")
        .collection::<Document>("system.sessions")
        .delete_many(doc! {"_id.id": &id})
        .await
        .unwrap();
    refresh(client).await;
    let status = cache_status(client).await;
    assert!(
        status
            .get_i32("lastSessionsCollectionJobCursorsClosed")
            .unwrap()
            >= 1,
        "{status}"
    );
    let err = drain(&mut cursor, &mut session).await.expect("killed");
    assert_eq!(error_code(&err), Some(43), "{err:?}");
}

async fn kill_sessions_interrupts_operations_and_closes_cursors(client: &Client) {
    let (coll, mut session, mut cursor) = cursor_in_a_session(client, "killed").await;
    let lsid = session.id().clone();
    admin(
        client,
        doc! {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": ["find"], "blockConnection": true, "blockTimeMS": 20_000},
        },
    )
    .await
    .unwrap();
    let blocked = {
        let coll = coll.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let outcome = coll.find_one(doc! {}).session(&mut session).await;
            (outcome, started.elapsed(), session)
        })
    };
    // Wait until the find runs (blocked on the router).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ops = admin(
            client,
            doc! {"aggregate": 1, "pipeline": [
                {"$currentOp": {"localOps": true}},
                {"$match": {"command.find": "killed"}},
            ], "cursor": {}},
        )
        .await
        .unwrap();
        if !crate::harness::first_batch(&ops).is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "the find never ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let reply = admin(client, doc! {"killSessions": [&lsid]}).await.unwrap();
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
    let (outcome, elapsed, mut session) = blocked.await.unwrap();
    let err = outcome.expect_err("the find was killed");
    assert_eq!(error_code(&err), Some(11601), "{err:?}");
    assert!(elapsed < Duration::from_secs(15), "{elapsed:?}");
    let err = drain(&mut cursor, &mut session).await.expect("closed");
    assert_eq!(error_code(&err), Some(43), "{err:?}");
    // A killed session may be used again.
    assert_eq!(
        coll.count_documents(doc! {})
            .session(&mut session)
            .await
            .unwrap(),
        6
    );
}

async fn kill_commands_validate_their_arguments(client: &Client) {
    let admin_db = client.database("admin");
    let code = |err: mongodb::error::Error| failure(&err).0;
    let refused = |command: Document| {
        let admin_db = admin_db.clone();
        async move { code(admin_db.run_command(command).await.unwrap_err()) }
    };
    assert_eq!(refused(doc! {"killSessions": 1}).await, 14);
    assert_eq!(refused(doc! {"killSessions": [{}]}).await, 40414);
    assert_eq!(refused(doc! {"killSessions": [{"id": "x"}]}).await, 14);
    assert_eq!(
        refused(doc! {"killAllSessions": [{"user": "nobody"}]}).await,
        40414
    );
    assert_eq!(
        refused(doc! {"killAllSessionsByPattern": [{"bogus": 1}]}).await,
        40415
    );
    assert_eq!(
        refused(doc! {"killAllSessionsByPattern": [{"users": [{"user": "u"}]}]}).await,
        40414
    );
    // Not strict IDL commands: unknown fields pass.
    for command in [
        doc! {"killSessions": [], "extra": 1},
        doc! {"killAllSessions": [{"user": "nobody", "db": "admin"}]},
        doc! {"killAllSessions": []},
        doc! {"killAllSessionsByPattern": [{"users": [{"user": "u", "db": "admin"}]}]},
    ] {
        admin_db.run_command(command).await.unwrap();
    }
}

/// One command sent as an OP_MSG on its own connection (the driver attaches its own `lsid`,
/// so two commands of one session at once need raw messages).
async fn raw_command(port: u16, db: &str, mut body: Document) -> Document {
    body.insert("$db", db);
    let mut doc = Vec::new();
    body.to_writer(&mut doc).unwrap();
    let length = 16 + 4 + 1 + doc.len();
    let mut message = Vec::with_capacity(length);
    message.extend((length as i32).to_le_bytes());
    message.extend(1i32.to_le_bytes());
    message.extend(0i32.to_le_bytes());
    message.extend(2013i32.to_le_bytes());
    message.extend(0u32.to_le_bytes());
    message.push(0);
    message.extend(doc);
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    stream.write_all(&message).await.unwrap();
    let mut header = [0u8; 4];
    stream.read_exact(&mut header).await.unwrap();
    let mut rest = vec![0u8; i32::from_le_bytes(header) as usize - 4];
    stream.read_exact(&mut rest).await.unwrap();
    Document::from_reader(&rest[12 + 4 + 1..]).unwrap()
}

#[tokio::test]
async fn checkout_serializes_a_sessions_retryable_writes_on_a_shard() {
    let cluster = ProcessCluster::start_with(2, &TEST_COMMANDS).await;
    let port = cluster.shard_port(0);
    let shard = cluster.shard_client(0).await;
    let (_, insert) = retryable_inserts("serial");
    admin(
        &shard,
        doc! {"configureFailPoint": "hangAfterSessionCheckOut", "mode": {"times": 1}},
    )
    .await
    .unwrap();
    let first = tokio::spawn(raw_command(port, "app", insert(1, 1)));
    admin(
        &shard,
        doc! {"waitForFailPoint": "hangAfterSessionCheckOut", "timesEntered": 1, "maxTimeMS": 30_000},
    )
    .await
    .unwrap();
    let second = tokio::spawn(raw_command(port, "app", insert(2, 2)));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !second.is_finished(),
        "the second write waits for the session"
    );
    // Another session is not held up.
    let mut other = insert(3, 1);
    other.insert(
        "lsid",
        doc! {"id": Bson::Binary(mongodb::bson::Binary {
            subtype: mongodb::bson::spec::BinarySubtype::Uuid,
            bytes: uuid_bytes(),
        })},
    );
    let reply = raw_command(port, "app", other).await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");
    // The wait for a session is bounded by maxTimeMS.
    let mut bounded = insert(4, 3);
    bounded.insert("maxTimeMS", 100);
    let reply = raw_command(port, "app", bounded).await;
    assert_eq!(reply.get_i32("code").unwrap(), 50, "{reply}");
    let status = cache_status(&shard).await;
    assert!(
        status.get_i32("sessionCatalogSize").unwrap() >= 2,
        "{status}"
    );
    assert!(!first.is_finished() && !second.is_finished());
    admin(
        &shard,
        doc! {"configureFailPoint": "hangAfterSessionCheckOut", "mode": "off"},
    )
    .await
    .unwrap();
    for (name, task) in [("first", first), ("second", second)] {
        let reply = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .unwrap_or_else(|_| panic!("the {name} write never ended"))
            .unwrap();
        assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{name}: {reply}");
    }
}

#[tokio::test]
async fn killing_a_session_interrupts_its_holder_and_waiters_then_frees_it() {
    let cluster = ProcessCluster::start_with(1, &TEST_COMMANDS).await;
    let port = cluster.shard_port(0);
    let shard = cluster.shard_client(0).await;
    let (lsid, insert) = retryable_inserts("killed");
    admin(
        &shard,
        doc! {"configureFailPoint": "hangAfterSessionCheckOut", "mode": "alwaysOn"},
    )
    .await
    .unwrap();
    let holder = tokio::spawn(raw_command(port, "app", insert(1, 1)));
    admin(
        &shard,
        doc! {"waitForFailPoint": "hangAfterSessionCheckOut", "timesEntered": 1, "maxTimeMS": 30_000},
    )
    .await
    .unwrap();
    let waiter = tokio::spawn(raw_command(port, "app", insert(2, 2)));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let reply = admin(&shard, doc! {"killSessions": [&lsid]}).await.unwrap();
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
    for (name, task) in [("holder", holder), ("waiter", waiter)] {
        let reply = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .unwrap_or_else(|_| panic!("the {name} never ended"))
            .unwrap();
        assert_eq!(reply.get_i32("code"), Ok(11601), "{name}: {reply}");
    }
    admin(
        &shard,
        doc! {"configureFailPoint": "hangAfterSessionCheckOut", "mode": "off"},
    )
    .await
    .unwrap();
    // The kill does not forbid later use of the session.
    let reply = raw_command(port, "app", insert(3, 3)).await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");
}

/// A new session's `lsid` and its retryable inserts of `{_id}` into `collection`:
/// `insert(id, txn)`.
fn retryable_inserts(collection: &'static str) -> (Document, impl Fn(i32, i64) -> Document) {
    let lsid = doc! {"id": Bson::Binary(mongodb::bson::Binary {
        subtype: mongodb::bson::spec::BinarySubtype::Uuid,
        bytes: uuid_bytes(),
    })};
    let session = lsid.clone();
    let insert = move |id, txn| {
        doc! {"insert": collection, "documents": [{"_id": id}], "lsid": session.clone(), "txnNumber": txn}
    };
    (lsid, insert)
}

fn uuid_bytes() -> Vec<u8> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let mut bytes = nanos.to_le_bytes().to_vec();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    bytes
}

#[tokio::test]
async fn every_role_reports_its_session_cache() {
    let cluster = ProcessCluster::start_with(
        1,
        &[
            "--setParameter",
            "enableTestCommands=1",
            "--setParameter",
            "logicalSessionRefreshMillis=200",
        ],
    )
    .await;
    let client = cluster.client().await;
    let mut session = client.start_session().await.unwrap();
    let id = session.id().get("id").unwrap().clone();
    client
        .database("app")
        .collection::<Document>("periodic")
        .insert_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap();
    // The periodic refresh writes the session without being asked.
    let deadline = Instant::now() + Duration::from_secs(10);
    while records(&client, &id).await.is_empty() {
        assert!(Instant::now() < deadline, "no refresh wrote the session");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for (role, node) in [
        ("router", client.clone()),
        ("shard", cluster.shard_client(0).await),
        ("config server", cluster.config_client().await),
    ] {
        // Each role runs its jobs every 200 ms.
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            let status = cache_status(&node).await;
            if status.get_i32("transactionReaperJobCount").unwrap_or(0) >= 1 {
                break status;
            }
            assert!(Instant::now() < deadline, "{role} runs no jobs: {status}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        for field in [
            "activeSessionsCount",
            "sessionsCollectionJobCount",
            "lastSessionsCollectionJobDurationMillis",
            "lastSessionsCollectionJobEntriesRefreshed",
            "lastSessionsCollectionJobEntriesEnded",
            "lastSessionsCollectionJobCursorsClosed",
            "transactionReaperJobCount",
            "lastTransactionReaperJobDurationMillis",
            "lastTransactionReaperJobEntriesCleanedUp",
            "sessionCatalogSize",
        ] {
            assert!(status.get_i32(field).is_ok(), "{role}: {field} in {status}");
        }
        assert!(
            status.get_i32("sessionsCollectionJobCount").unwrap() >= 1,
            "{role}: {status}"
        );
        let reply = admin(&node, doc! {"refreshLogicalSessionCacheNow": 1}).await;
        assert!(reply.is_ok(), "{role}: {reply:?}");
    }
}

#[tokio::test]
async fn refresh_now_is_a_test_command() {
    let cluster = TestCluster::start().await;
    let err = admin(&cluster.client, doc! {"refreshLogicalSessionCacheNow": 1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(59));
    cluster.shutdown().await;
}

#[tokio::test]
async fn disabled_refresh_runs_only_when_asked() {
    let cluster = TestCluster::with_parameters(&[
        ("enableTestCommands", "1"),
        ("logicalSessionRefreshMillis", "50"),
        ("disableLogicalSessionCacheRefresh", "true"),
        ("localLogicalSessionTimeoutMinutes", "7"),
    ])
    .await;
    let client = &cluster.client;
    let mut session = client.start_session().await.unwrap();
    let id = session.id().get("id").unwrap().clone();
    client
        .database("app")
        .collection::<Document>("quiet")
        .insert_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let status = cache_status(client).await;
    assert_eq!(status.get_i32("sessionsCollectionJobCount").unwrap(), 0);
    assert_eq!(status.get_i32("transactionReaperJobCount").unwrap(), 0);
    assert!(records(client, &id).await.is_empty());
    // Asked, the cache refreshes all the same.
    refresh(client).await;
    assert_eq!(records(client, &id).await.len(), 1);
    // The session timeout is the TTL index's and what hello and startSession report.
    let hello = admin(client, doc! {"hello": 1}).await.unwrap();
    assert_eq!(hello.get_i32("logicalSessionTimeoutMinutes").unwrap(), 7);
    let started = admin(client, doc! {"startSession": 1}).await.unwrap();
    assert_eq!(started.get_i32("timeoutMinutes").unwrap(), 7);
    let indexes = client
        .database("config")
        .run_command(doc! {"listIndexes": "system.sessions"})
        .await
        .unwrap();
    let ttl = crate::harness::first_batch(&indexes)
        .into_iter()
        .find(|i| i.get_str("name") == Ok("lsidTTLIndex"))
        .expect("lsidTTLIndex");
    assert_eq!(ttl.get_i32("expireAfterSeconds"), Ok(420), "{ttl}");
    cluster.shutdown().await;
}

async fn a_cursor_is_continued_in_its_own_session(client: &Client) {
    let db = client.database("app");
    db.collection::<Document>("owned")
        .insert_many((0..4).map(|i| doc! {"_id": i}))
        .await
        .unwrap();
    let mut mine = client.start_session().await.unwrap();
    let mut other = client.start_session().await.unwrap();
    let reply = db
        .run_command(doc! {"find": "owned", "batchSize": 1})
        .session(&mut mine)
        .await
        .unwrap();
    let id = reply.get_document("cursor").unwrap().get_i64("id").unwrap();
    let more = doc! {"getMore": id, "collection": "owned", "batchSize": 1};
    let err = db
        .run_command(more.clone())
        .session(&mut other)
        .await
        .unwrap_err();
    let (code, _, message) = failure(&err);
    assert_eq!(code, 50738, "{message}");
    assert!(
        message.starts_with(&format!(
            "Cannot run getMore on cursor {id}, which was created in session {{ id: UUID(\""
        )),
        "{message}"
    );
    // Refused, the cursor lives on for its own session.
    let reply = db.run_command(more).session(&mut mine).await.unwrap();
    assert_eq!(
        reply
            .get_document("cursor")
            .unwrap()
            .get_array("nextBatch")
            .unwrap()
            .len(),
        1
    );
}

async fn an_ended_sessions_cursor_is_killed_at_refresh(client: &Client) {
    let (_, mut session, mut cursor) = cursor_in_a_session(client, "ending").await;
    let lsid = session.id().clone();
    admin(client, doc! {"endSessions": [&lsid]}).await.unwrap();
    refresh(client).await;
    let status = cache_status(client).await;
    assert!(
        status
            .get_i32("lastSessionsCollectionJobCursorsClosed")
            .unwrap()
            >= 1,
        "{status}"
    );
    let err = drain(&mut cursor, &mut session).await.expect("killed");
    assert_eq!(error_code(&err), Some(43), "{err:?}");
}

#[tokio::test]
async fn a_kill_a_shard_cannot_hear_fails_as_mongos_does() {
    let mut cluster = ProcessCluster::start_with(2, &TEST_COMMANDS).await;
    let client = cluster.client().await;
    // The router knows both shards.
    client
        .database("app")
        .collection::<Document>("c")
        .insert_one(doc! {"_id": 1})
        .await
        .unwrap();
    cluster.stop_shard(1);
    let err = admin(&client, doc! {"killAllSessions": []})
        .await
        .unwrap_err();
    let (code, name, message) = failure(&err);
    assert_eq!(
        (code, name.as_str(), message.as_str()),
        (
            6,
            "HostUnreachable",
            "Failed to kill sessions on some hosts"
        )
    );
}
