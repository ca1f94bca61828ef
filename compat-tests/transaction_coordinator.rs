//! Transactions' routing and two-phase commit through the router and the official driver: what
//! the router decides alone (the commands and databases it refuses in a transaction, a commit
//! that reached no shard, an abort before any shard took part, `serverStatus.transactions`),
//! a two-shard commit and abort, and a coordinator killed with `kill -9` at each step of its
//! two-phase commit, which resumes after its restart.

use crate::harness::{ProcessCluster, TestCluster, admin, error_code, hashed_owners};
use mongodb::Client;
use mongodb::bson::{Document, doc};

/// `serverStatus.transactions` of the router.
async fn transactions_status(client: &Client) -> Document {
    admin(client, doc! {"serverStatus": 1})
        .await
        .unwrap()
        .get_document("transactions")
        .unwrap()
        .clone()
}

fn commit_type(status: &Document, name: &str, field: &str) -> i64 {
    status
        .get_document("commitTypes")
        .unwrap()
        .get_document(name)
        .unwrap()
        .get_i64(field)
        .unwrap()
}

async fn router_alone(client: &Client) {
    let mut session = client.start_session().await.unwrap();

    // Commands MongoDB refuses in a transaction, and the databases that cannot take part.
    session.start_transaction().await.unwrap();
    let err = client
        .database("txn_router")
        .run_command(doc! {"count": "c"})
        .session(&mut session)
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(263), "{err:?}");
    session.abort_transaction().await.unwrap();
    session.start_transaction().await.unwrap();
    let err = client
        .database("config")
        .collection::<Document>("shards")
        .find_one(doc! {})
        .session(&mut session)
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(263), "{err:?}");
    session.abort_transaction().await.unwrap();

    // A transaction that read a database that does not exist reached no shard: its commit
    // has nothing to do.
    session.start_transaction().await.unwrap();
    let found = client
        .database("txn_router_missing")
        .collection::<Document>("c")
        .find_one(doc! {})
        .session(&mut session)
        .await
        .unwrap();
    assert!(found.is_none());
    session.commit_transaction().await.unwrap();

    // An abort before any shard took part is NoSuchTransaction (the driver hides it).
    session.start_transaction().await.unwrap();
    client
        .database("txn_router_missing")
        .collection::<Document>("c")
        .find_one(doc! {})
        .session(&mut session)
        .await
        .unwrap();
    let reply = client
        .database("admin")
        .run_command(doc! {"abortTransaction": 1})
        .session(&mut session)
        .await;
    assert_eq!(error_code(&reply.unwrap_err()), Some(251));

    let status = transactions_status(client).await;
    for field in [
        "currentOpen",
        "currentActive",
        "currentInactive",
        "totalStarted",
        "totalCommitted",
        "totalAborted",
        "totalContactedParticipants",
        "totalParticipantsAtCommit",
        "totalRequestsTargeted",
    ] {
        assert!(status.get_i64(field).is_ok(), "{field} in {status}");
    }
    assert!(status.get_i64("totalStarted").unwrap() >= 2);
    assert_eq!(commit_type(&status, "noShards", "initiated"), 1);
    assert_eq!(commit_type(&status, "noShards", "successful"), 1);
    assert_eq!(commit_type(&status, "twoPhaseCommit", "initiated"), 0);
}

#[tokio::test]
async fn what_the_router_decides_alone() {
    let cluster = TestCluster::start().await;
    router_alone(&cluster.client).await;
    cluster.shutdown().await;
}

/// A collection `db.c` sharded on hashed `k` with `{_id: i, k: i}` for `i` in 0..20, and two
/// ids owned by different shards, each with its owner.
async fn two_shard_collection(
    client: &Client,
    db: &str,
) -> (mongodb::Collection<Document>, [(i32, String); 2]) {
    admin(
        client,
        doc! {"shardCollection": format!("{db}.c"), "key": {"k": "hashed"}},
    )
    .await
    .unwrap();
    let coll = client.database(db).collection::<Document>("c");
    coll.insert_many((0..20).map(|i| doc! {"_id": i, "k": i}))
        .await
        .unwrap();
    let owners = hashed_owners(client, &format!("{db}.c"), 0..20).await;
    let first = owners[0].clone();
    let other = owners
        .iter()
        .find(|(_, shard)| *shard != first.1)
        .expect("chunks on both shards")
        .clone();
    (coll, [first, other])
}

#[tokio::test]
async fn a_two_shard_transaction_commits_everywhere_or_nowhere() {
    let cluster = TestCluster::start().await;
    let client = &cluster.client;
    let (coll, [(a, _), (b, _)]) = two_shard_collection(client, "txn_two_shards").await;
    let mut session = client.start_session().await.unwrap();

    // Committed: both shards' writes appear together, through the coordinator.
    session.start_transaction().await.unwrap();
    for id in [a, b] {
        coll.update_one(doc! {"k": id}, doc! {"$set": {"x": 1}})
            .session(&mut session)
            .await
            .unwrap();
    }
    assert_eq!(
        coll.count_documents(doc! {"x": 1}).await.unwrap(),
        0,
        "not visible outside before the commit"
    );
    session.commit_transaction().await.unwrap();
    assert_eq!(coll.count_documents(doc! {"x": 1}).await.unwrap(), 2);
    let status = transactions_status(client).await;
    assert_eq!(commit_type(&status, "twoPhaseCommit", "successful"), 1);

    // Aborted: neither shard keeps its write.
    session.start_transaction().await.unwrap();
    for id in [a, b] {
        coll.update_one(doc! {"k": id}, doc! {"$set": {"x": 2}})
            .session(&mut session)
            .await
            .unwrap();
    }
    session.abort_transaction().await.unwrap();
    assert_eq!(coll.count_documents(doc! {"x": 2}).await.unwrap(), 0);

    // Read-only on two shards, then a single write shard.
    session.start_transaction().await.unwrap();
    let all = coll
        .count_documents(doc! {})
        .session(&mut session)
        .await
        .unwrap();
    assert_eq!(all, 20);
    coll.update_one(doc! {"k": a}, doc! {"$set": {"y": 1}})
        .session(&mut session)
        .await
        .unwrap();
    session.commit_transaction().await.unwrap();
    assert_eq!(coll.count_documents(doc! {"y": 1}).await.unwrap(), 1);

    // The convenient API retries a transaction whose statement met a write conflict.
    let mut other = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    coll.update_one(doc! {"k": a}, doc! {"$inc": {"z": 1}})
        .session(&mut session)
        .await
        .unwrap();
    other.start_transaction().await.unwrap();
    let err = coll
        .update_one(doc! {"k": a}, doc! {"$inc": {"z": 1}})
        .session(&mut other)
        .await
        .unwrap_err();
    assert!(err.contains_label("TransientTransactionError"), "{err:?}");
    session.commit_transaction().await.unwrap();

    // What ended the aborted transactions, and how many participants the commits had.
    let status = transactions_status(client).await;
    let causes = status.get_document("abortCause").unwrap();
    assert_eq!(causes.get_i64("abort").unwrap(), 1, "{status}");
    assert_eq!(causes.get_i64("WriteConflict").unwrap(), 1, "{status}");
    // Two, then two (read-only on one), then one.
    assert_eq!(status.get_i64("totalParticipantsAtCommit").unwrap(), 5);
    assert!(
        status.get_i64("totalRequestsTargeted").unwrap() >= 8,
        "{status}"
    );
    cluster.shutdown().await;
}

/// Kills the coordinator shard (SIGKILL) while it waits at `point`, starts it again, and
/// requires the transaction to end committed on both shards (`commits`) or on neither — the
/// coordinator's own part of a transaction not prepared yet dies with it, so the resumed
/// coordination aborts, as MongoDB's does — with no coordinator document left.
async fn coordinator_killed_at(point: &str, commits: bool) {
    let mut cluster = ProcessCluster::start_with(2, &["--enable-test-commands"]).await;
    let client = cluster.client().await;
    let (coll, [(a, coordinator), (b, _)]) = two_shard_collection(&client, "txn_faults").await;
    let index: usize = coordinator.trim_start_matches("shard").parse().unwrap();
    let port = cluster.shard_port(index);
    let shard = cluster.shard_client(index).await;
    admin(
        &shard,
        doc! {"configureFailPoint": point, "mode": "alwaysOn"},
    )
    .await
    .unwrap();
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    // The first write makes the shard owning `a` the coordinator.
    for id in [a, b] {
        coll.update_one(doc! {"k": id}, doc! {"$set": {"done": true}})
            .session(&mut session)
            .await
            .unwrap();
    }
    let commit = tokio::spawn(async move {
        loop {
            match session.commit_transaction().await {
                Ok(()) => return true,
                Err(e) if e.contains_label("UnknownTransactionCommitResult") => {
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                Err(e) if error_code(&e) == Some(251) => {
                    assert!(e.contains_label("TransientTransactionError"), "{e:?}");
                    return false;
                }
                Err(e) => panic!("the commit failed: {e:?}"),
            }
        }
    });
    admin(
        &shard,
        doc! {"waitForFailPoint": point, "timesEntered": 1, "maxTimeMS": 30000},
    )
    .await
    .unwrap();
    let (_, dir) = cluster.kill_shard(index);
    cluster.restart_shard(&dir, port).await;
    let committed = tokio::time::timeout(std::time::Duration::from_secs(60), commit)
        .await
        .expect("the commit ends")
        .unwrap();
    assert_eq!(committed, commits, "the transaction's outcome");
    let done = if commits { 2 } else { 0 };
    assert_eq!(
        coll.count_documents(doc! {"done": true}).await.unwrap(),
        done
    );
    let restarted = crate::harness::direct_client(port).await;
    let left = restarted
        .database("config")
        .collection::<Document>("transaction_coordinators")
        .count_documents(doc! {})
        .await
        .unwrap();
    assert_eq!(left, 0, "the coordinator document is gone");
}

#[tokio::test]
async fn a_coordinator_killed_before_sending_prepare_resumes() {
    coordinator_killed_at("hangBeforeSendingPrepare", false).await;
}

#[tokio::test]
async fn a_coordinator_killed_before_writing_its_decision_resumes() {
    coordinator_killed_at("hangBeforeWritingDecision", true).await;
}

#[tokio::test]
async fn a_coordinator_killed_before_sending_commit_resumes() {
    coordinator_killed_at("hangBeforeSendingCommit", true).await;
}

#[tokio::test]
async fn a_coordinator_killed_before_deleting_its_document_resumes() {
    coordinator_killed_at("hangBeforeDeletingCoordinatorDoc", true).await;
}

/// A shard key change in a transaction moves the document inside the transaction: an abort
/// leaves it where it was, a commit moves it, and it is never on both shards or neither.
#[tokio::test]
async fn a_shard_key_change_moves_the_document_inside_the_transaction() {
    let cluster = TestCluster::start().await;
    let client = &cluster.client;
    let (coll, [(a, _), (b, _)]) = two_shard_collection(client, "txn_key_move").await;
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    coll.update_one(doc! {"_id": a}, doc! {"$set": {"k": b + 1000}})
        .session(&mut session)
        .await
        .unwrap();
    session.abort_transaction().await.unwrap();
    let docs = crate::harness::find_all(&coll, doc! {"_id": a}).await;
    assert_eq!(
        docs,
        vec![doc! {"_id": a, "k": a}],
        "the abort kept it where it was"
    );

    // A key the other shard owns: `b`'s.
    let owners = crate::harness::hashed_owners(client, "txn_key_move.c", 1000..1100).await;
    let target =
        &crate::harness::hashed_owners(client, "txn_key_move.c", [b].into_iter()).await[0].1;
    let moved = owners
        .iter()
        .find(|(_, shard)| shard == target)
        .map(|(k, _)| *k)
        .unwrap();
    session.start_transaction().await.unwrap();
    coll.update_one(doc! {"_id": a}, doc! {"$set": {"k": moved}})
        .session(&mut session)
        .await
        .unwrap();
    session.commit_transaction().await.unwrap();
    let docs = crate::harness::find_all(&coll, doc! {"_id": a}).await;
    assert_eq!(docs, vec![doc! {"_id": a, "k": moved}]);
    cluster.shutdown().await;
}

/// A commit recovered through another router with the client's `recoveryToken` answers the
/// outcome: the token names the first shard that wrote, whose participant knows its commit
/// even when no coordinator ran (a read on one shard, writes on another: committed shard by
/// shard); a transaction that never committed answers NoSuchTransaction, and is aborted there.
#[tokio::test]
async fn a_commit_is_recovered_through_another_router() {
    let cluster = TestCluster::start_with(2, 2).await;
    let client = &cluster.client;
    let (coll, [(a, _), (b, _)]) = two_shard_collection(client, "txn_recovery").await;
    for commit in [true, false] {
        // A client of its own: its session's first transaction is number 1.
        let txn_client = cluster.router_client(0).await;
        let coll = txn_client
            .database("txn_recovery")
            .collection::<Document>(coll.name());
        let mut session = txn_client.start_session().await.unwrap();
        session.start_transaction().await.unwrap();
        // The first participant only reads; the second writes.
        coll.find_one(doc! {"k": a})
            .session(&mut session)
            .await
            .unwrap();
        coll.update_one(doc! {"k": b}, doc! {"$set": {"recovered": commit}})
            .session(&mut session)
            .await
            .unwrap();
        let token = {
            let reply = txn_client
                .database("txn_recovery")
                .run_command(doc! {"find": "c", "filter": {"k": b}})
                .session(&mut session)
                .await
                .unwrap();
            reply.get_document("recoveryToken").unwrap().clone()
        };
        let shard_of_b = hashed_owners(client, "txn_recovery.c", b..b + 1).await[0]
            .1
            .clone();
        assert_eq!(token, doc! {"recoveryShardId": &shard_of_b});
        if commit {
            session.commit_transaction().await.unwrap();
        }
        // The driver sends its own session with `run_command`: the retry goes on the wire.
        let recovered = crate::wire::raw_command(
            cluster.routers[1],
            doc! {
                "commitTransaction": 1,
                "lsid": session.id().clone(),
                "txnNumber": 1_i64,
                "autocommit": false,
                "recoveryToken": token,
                "$db": "admin",
            },
        )
        .await;
        match commit {
            true => assert_eq!(recovered.get_f64("ok"), Ok(1.0), "{recovered}"),
            false => {
                assert_eq!(recovered.get_i32("code"), Ok(251), "{recovered}");
                let labels = recovered.get_array("errorLabels").unwrap();
                assert!(
                    labels.contains(&"TransientTransactionError".into())
                        && !labels.contains(&"UnknownTransactionCommitResult".into()),
                    "{recovered}"
                );
                // The open transaction was aborted on its write shard: its write never lands.
                let _ = session.commit_transaction().await;
            }
        }
        let want = u64::from(commit);
        assert_eq!(
            coll.count_documents(doc! {"recovered": commit})
                .await
                .unwrap(),
            want
        );
    }
    cluster.shutdown().await;
}
