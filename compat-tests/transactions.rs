//! Multi-document transactions through the router, on an unsharded collection (one shard) and
//! on a collection sharded across both shards (two-phase commit): commits apply every write,
//! aborts none; a transaction reads its own writes and a snapshot of everyone else's; two
//! transactions writing one document conflict (WriteConflict, TransientTransactionError, first
//! writer wins); a plain write waits for the transaction holding its document; concurrent
//! bank transfers with random aborts conserve money.

use crate::harness::{TestCluster, admin};
use futures::FutureExt;
use mongodb::bson::{Document, doc};
use mongodb::error::{Error, TRANSIENT_TRANSACTION_ERROR};
use mongodb::{Client, ClientSession, Collection};
use std::time::Duration;

const ACCOUNTS: i32 = 10;
const BALANCE: i64 = 100;

/// `db.accounts` holding `{_id: i, k: i, balance: 100}` for `i` in 0..10, sharded on hashed
/// `k` (chunks on both shards) when `sharded`.
async fn accounts(client: &Client, db: &str, sharded: bool) -> Collection<Document> {
    if sharded {
        admin(
            client,
            doc! {"shardCollection": format!("{db}.accounts"), "key": {"k": "hashed"}},
        )
        .await
        .unwrap();
    }
    let coll = client.database(db).collection::<Document>("accounts");
    coll.insert_many((0..ACCOUNTS).map(|i| doc! {"_id": i, "k": i, "balance": BALANCE}))
        .await
        .unwrap();
    coll
}

async fn balance(coll: &Collection<Document>, id: i32) -> i64 {
    coll.find_one(doc! {"_id": id})
        .await
        .unwrap()
        .map(|d| d.get_i64("balance").unwrap())
        .unwrap_or(-1)
}

async fn total(coll: &Collection<Document>) -> i64 {
    let mut sum = 0;
    for id in 0..ACCOUNTS {
        sum += balance(coll, id).await;
    }
    sum
}

/// Moves `amount` from `from` to `to` in the session's transaction.
async fn transfer(
    coll: &Collection<Document>,
    session: &mut ClientSession,
    from: i32,
    to: i32,
    amount: i64,
) -> mongodb::error::Result<()> {
    coll.update_one(doc! {"_id": from}, doc! {"$inc": {"balance": -amount}})
        .session(&mut *session)
        .await?;
    coll.update_one(doc! {"_id": to}, doc! {"$inc": {"balance": amount}})
        .session(&mut *session)
        .await?;
    Ok(())
}

/// One transfer of a bank run: moves 1 from `from` to `to`, records it in `ledger` (with its
/// id) when given, and fails on purpose when `abort` (the driver then aborts it).
async fn bank_transfer(
    coll: &Collection<Document>,
    ledger: Option<(&Collection<Document>, &str)>,
    session: &mut ClientSession,
    (from, to): (i32, i32),
    abort: bool,
) -> mongodb::error::Result<()> {
    transfer(coll, session, from, to, 1).await?;
    if let Some((ledger, id)) = ledger {
        ledger
            .insert_one(doc! {"_id": id, "from": from, "to": to})
            .session(&mut *session)
            .await?;
    }
    if abort {
        return Err(Error::custom("abort on purpose"));
    }
    Ok(())
}

/// A random transfer between two accounts, aborted on purpose one time in `abort_one_in`.
fn random_transfer(rng: &mut crate::harness::Rng, abort_one_in: u64) -> ((i32, i32), bool) {
    let from = (rng.next() % ACCOUNTS as u64) as i32;
    let to = (from + 1 + (rng.next() % (ACCOUNTS as u64 - 1)) as i32) % ACCOUNTS;
    ((from, to), rng.next() % abort_one_in == 0)
}

/// (a) A commit applies every write of the transaction; an abort none.
async fn commit_and_abort(client: &Client, db: &str, sharded: bool) {
    let coll = accounts(client, db, sharded).await;
    let mut session = client.start_session().await.unwrap();

    session.start_transaction().await.unwrap();
    transfer(&coll, &mut session, 0, 1, 10).await.unwrap();
    transfer(&coll, &mut session, 2, 3, 20).await.unwrap();
    assert_eq!(
        balance(&coll, 0).await,
        BALANCE,
        "uncommitted writes are invisible"
    );
    session.abort_transaction().await.unwrap();
    for id in 0..4 {
        assert_eq!(balance(&coll, id).await, BALANCE, "an abort keeps nothing");
    }

    session.start_transaction().await.unwrap();
    transfer(&coll, &mut session, 0, 1, 10).await.unwrap();
    transfer(&coll, &mut session, 2, 3, 20).await.unwrap();
    coll.insert_one(doc! {"_id": 100, "k": 100, "balance": 0_i64})
        .session(&mut session)
        .await
        .unwrap();
    session.commit_transaction().await.unwrap();
    assert_eq!(
        [
            balance(&coll, 0).await,
            balance(&coll, 1).await,
            balance(&coll, 2).await,
            balance(&coll, 3).await,
            balance(&coll, 100).await,
        ],
        [90, 110, 80, 120, 0]
    );
    // A commit sent again answers ok and applies nothing more.
    session.commit_transaction().await.unwrap();
    assert_eq!(balance(&coll, 0).await, 90);
}

/// (b) The transaction sees its own writes through find, count and aggregate, and not the
/// commits made after its snapshot.
async fn isolation(client: &Client, db: &str, sharded: bool) {
    let coll = accounts(client, db, sharded).await;
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    // The first read takes the snapshot.
    assert_eq!(
        coll.count_documents(doc! {})
            .session(&mut session)
            .await
            .unwrap(),
        ACCOUNTS as u64
    );
    coll.insert_one(doc! {"_id": 50, "k": 50, "balance": 5_i64})
        .session(&mut session)
        .await
        .unwrap();
    coll.update_one(doc! {"_id": 50}, doc! {"$inc": {"balance": 1}})
        .session(&mut session)
        .await
        .unwrap();
    // Another client's commit after the snapshot.
    coll.update_one(doc! {"_id": 9}, doc! {"$set": {"balance": 0_i64}})
        .await
        .unwrap();
    coll.insert_one(doc! {"_id": 60, "k": 60, "balance": 6_i64})
        .await
        .unwrap();

    let own = coll
        .find_one(doc! {"_id": 50})
        .session(&mut session)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        own.get_i64("balance").unwrap(),
        6,
        "reads its own update of its insert"
    );
    let nine = coll
        .find_one(doc! {"_id": 9})
        .session(&mut session)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        nine.get_i64("balance").unwrap(),
        BALANCE,
        "a later commit is not in the snapshot"
    );
    assert_eq!(
        coll.count_documents(doc! {})
            .session(&mut session)
            .await
            .unwrap(),
        ACCOUNTS as u64 + 1,
        "its own insert, not the later one"
    );
    let mut cursor = coll
        .aggregate([doc! {"$group": {"_id": null, "sum": {"$sum": "$balance"}}}])
        .session(&mut session)
        .await
        .unwrap();
    let sum = cursor.next(&mut session).await.unwrap().unwrap();
    assert_eq!(sum.get_i64("sum").unwrap(), ACCOUNTS as i64 * BALANCE + 6);
    drop(cursor);
    session.commit_transaction().await.unwrap();
    assert_eq!(balance(&coll, 50).await, 6);
    assert_eq!(balance(&coll, 9).await, 0);
}

fn is_transient_write_conflict(e: &Error) -> bool {
    e.contains_label(TRANSIENT_TRANSACTION_ERROR) && crate::harness::error_code(e) == Some(112)
}

/// (c) Two transactions writing one document: the second writer gets WriteConflict labelled
/// TransientTransactionError, and its transaction is aborted; the first commits.
async fn first_writer_wins(client: &Client, db: &str, sharded: bool) {
    let coll = accounts(client, db, sharded).await;
    let mut first = client.start_session().await.unwrap();
    let mut second = client.start_session().await.unwrap();
    first.start_transaction().await.unwrap();
    second.start_transaction().await.unwrap();
    coll.update_one(doc! {"_id": 1}, doc! {"$inc": {"balance": 1}})
        .session(&mut first)
        .await
        .unwrap();
    let err = coll
        .update_one(doc! {"_id": 1}, doc! {"$inc": {"balance": 10}})
        .session(&mut second)
        .await
        .unwrap_err();
    assert!(is_transient_write_conflict(&err), "{err:?}");
    let _ = second.abort_transaction().await;
    first.commit_transaction().await.unwrap();
    assert_eq!(balance(&coll, 1).await, BALANCE + 1);

    // A document another transaction changed after this one's snapshot conflicts too.
    first.start_transaction().await.unwrap();
    assert_eq!(
        coll.count_documents(doc! {})
            .session(&mut first)
            .await
            .unwrap(),
        ACCOUNTS as u64
    );
    coll.update_one(doc! {"_id": 2}, doc! {"$inc": {"balance": 1}})
        .await
        .unwrap();
    let err = coll
        .update_one(doc! {"_id": 2}, doc! {"$inc": {"balance": 1}})
        .session(&mut first)
        .await
        .unwrap_err();
    assert!(is_transient_write_conflict(&err), "{err:?}");
    let _ = first.abort_transaction().await;
    assert_eq!(balance(&coll, 2).await, BALANCE + 1);
}

/// (d) A plain write to a document a transaction holds waits for the transaction to end, then
/// applies on top of its commit.
async fn plain_write_waits(client: &Client, db: &str, sharded: bool) {
    let coll = accounts(client, db, sharded).await;
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    coll.update_one(doc! {"_id": 3}, doc! {"$inc": {"balance": 1}})
        .session(&mut session)
        .await
        .unwrap();
    let plain = {
        let coll = coll.clone();
        tokio::spawn(async move {
            coll.update_one(doc! {"_id": 3}, doc! {"$inc": {"balance": 10}})
                .await
                .unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !plain.is_finished(),
        "the plain write waits for the transaction"
    );
    session.commit_transaction().await.unwrap();
    let updated = plain.await.unwrap();
    assert_eq!(updated.modified_count, 1);
    assert_eq!(balance(&coll, 3).await, BALANCE + 11);
}

/// (e) Clients running transfers with `with_transaction` side by side, some aborted on
/// purpose: every transfer applies wholly or not at all, and the money adds up.
async fn bank_transfers(client: &Client, db: &str, sharded: bool) {
    let coll = accounts(client, db, sharded).await;
    let mut clients = Vec::new();
    for worker in 0..4u64 {
        let coll = coll.clone();
        let client = client.clone();
        clients.push(tokio::spawn(async move {
            let mut rng = crate::harness::Rng(0x9E37_79B9_7F4A_7C15 ^ (worker + 1));
            let mut committed = 0;
            for _ in 0..15 {
                let (pair, abort) = random_transfer(&mut rng, 4);
                let mut session = client.start_session().await.unwrap();
                let outcome = session
                    .start_transaction()
                    .and_run((&coll, pair, abort), |session, (coll, pair, abort)| {
                        bank_transfer(coll, None, session, *pair, *abort).boxed()
                    })
                    .await;
                match outcome {
                    Ok(()) => committed += 1,
                    Err(e) if e.get_custom::<&str>().is_some() => {}
                    Err(e) => panic!("transfer failed: {e:?}"),
                }
            }
            committed
        }));
    }
    let mut committed = 0;
    for client in clients {
        committed += client.await.unwrap();
    }
    assert!(committed > 0);
    assert_eq!(
        total(&coll).await,
        ACCOUNTS as i64 * BALANCE,
        "money is conserved"
    );
}

macro_rules! both {
    ($name:ident, $unsharded:ident, $sharded:ident) => {
        #[tokio::test]
        async fn $unsharded() {
            let cluster = TestCluster::start().await;
            $name(&cluster.client, stringify!($unsharded), false).await;
            cluster.shutdown().await;
        }

        #[tokio::test]
        async fn $sharded() {
            let cluster = TestCluster::start().await;
            $name(&cluster.client, stringify!($sharded), true).await;
            cluster.shutdown().await;
        }
    };
}

both!(
    commit_and_abort,
    commit_and_abort_unsharded,
    commit_and_abort_sharded
);
both!(isolation, isolation_unsharded, isolation_sharded);
both!(
    first_writer_wins,
    first_writer_wins_unsharded,
    first_writer_wins_sharded
);
both!(
    plain_write_waits,
    plain_write_waits_unsharded,
    plain_write_waits_sharded
);
both!(
    bank_transfers,
    bank_transfers_unsharded,
    bank_transfers_sharded
);

/// Transfers, each recording itself in a ledger in the same transaction, from four clients
/// while shard 0, shard 1 (each the coordinator of the two-shard commits it was first to
/// join) and the router are killed with `kill -9` and restarted: in the end each account's
/// balance is its initial balance plus its ledger entries — every transfer applied wholly or
/// not at all — and the money adds up.
#[tokio::test]
async fn bank_transfers_survive_kill_9_separate_processes() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let mut cluster = crate::harness::ProcessCluster::start(2).await;
    let client = cluster.client().await;
    let coll = accounts(&client, "bank_kill", true).await;
    let ledger = client
        .database("bank_kill")
        .collection::<Document>("ledger");
    ledger.insert_one(doc! {"_id": "start"}).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let committed = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for worker in 0..4u64 {
        let (coll, ledger, client) = (coll.clone(), ledger.clone(), client.clone());
        let (stop, committed) = (stop.clone(), committed.clone());
        workers.push(tokio::spawn(async move {
            let mut rng = crate::harness::Rng(0x5151_0000 ^ (worker + 1));
            let mut i = 0u64;
            while !stop.load(Ordering::SeqCst) {
                i += 1;
                let (pair, abort) = random_transfer(&mut rng, 5);
                let id = format!("{worker}-{i}");
                let Ok(mut session) = client.start_session().await else {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                let outcome = session
                    .start_transaction()
                    .and_run(
                        (&coll, &ledger, pair, abort, &id),
                        |session, (coll, ledger, pair, abort, id)| {
                            bank_transfer(coll, Some((ledger, id.as_str())), session, *pair, *abort)
                                .boxed()
                        },
                    )
                    .await;
                match outcome {
                    Ok(()) => {
                        committed.fetch_add(1, Ordering::SeqCst);
                    }
                    // A kill may end a transfer with an error the driver does not retry: it
                    // applied wholly or not at all, which the ledger tells.
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        }));
    }
    let pause = || tokio::time::sleep(Duration::from_millis(1500));
    pause().await;
    cluster.stop_shard(0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    cluster.start_shard_again(0);
    pause().await;
    cluster.stop_shard(1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    cluster.start_shard_again(1);
    pause().await;
    cluster.stop_router();
    tokio::time::sleep(Duration::from_millis(300)).await;
    cluster.start_router_again();
    pause().await;
    stop.store(true, Ordering::SeqCst);
    for worker in workers {
        worker.await.unwrap();
    }
    assert!(
        committed.load(Ordering::SeqCst) > 0,
        "no transfer committed"
    );

    let client = cluster.client().await;
    let coll = client
        .database("bank_kill")
        .collection::<Document>("accounts");
    let ledger = client
        .database("bank_kill")
        .collection::<Document>("ledger");
    let mut expected = vec![BALANCE; ACCOUNTS as usize];
    let entries = crate::harness::find_all(&ledger, doc! {"from": {"$exists": true}}).await;
    for entry in &entries {
        expected[entry.get_i32("from").unwrap() as usize] -= 1;
        expected[entry.get_i32("to").unwrap() as usize] += 1;
    }
    for (id, want) in expected.iter().enumerate() {
        assert_eq!(
            balance(&coll, id as i32).await,
            *want,
            "account {id}: its balance and the ledger's {} entries disagree",
            entries.len()
        );
    }
    assert_eq!(
        total(&coll).await,
        ACCOUNTS as i64 * BALANCE,
        "money is conserved"
    );
}

/// A transaction committed on a shard stays committed for its session after a `kill -9` of
/// the shard: the commit sent again answers ok (MongoDB's committed transaction record), and
/// the next transaction of the session starts.
#[tokio::test]
async fn a_commit_survives_kill_9_of_its_shard() {
    let mut cluster = crate::harness::ProcessCluster::start(1).await;
    let client = cluster.client().await;
    let coll = accounts(&client, "commit_kill", false).await;
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    transfer(&coll, &mut session, 0, 1, 7).await.unwrap();
    session.commit_transaction().await.unwrap();
    cluster.stop_shard(0);
    cluster.start_shard_again(0);
    // The driver sends the commit again (as after a lost reply).
    session.commit_transaction().await.unwrap();
    assert_eq!(balance(&coll, 0).await, BALANCE - 7);
    assert_eq!(balance(&coll, 1).await, BALANCE + 7);
    session.start_transaction().await.unwrap();
    transfer(&coll, &mut session, 1, 0, 7).await.unwrap();
    session.commit_transaction().await.unwrap();
    assert_eq!(total(&coll).await, ACCOUNTS as i64 * BALANCE);
}

/// A transaction writing two databases of one shard commits both (its writes recorded durably
/// with the decision first, so a restart between the two files' commits finishes it) or
/// neither.
#[tokio::test]
async fn a_transaction_across_two_databases() {
    let cluster = TestCluster::start().await;
    let client = &cluster.client;
    let a = client.database("txn_db_a").collection::<Document>("c");
    let b = client.database("txn_db_b").collection::<Document>("c");
    a.insert_one(doc! {"_id": 0}).await.unwrap();
    b.insert_one(doc! {"_id": 0}).await.unwrap();
    // Both databases on one shard (movePrimary to where it is already answers an error).
    let shard = crate::harness::shard_names(client).await[0].clone();
    for db in ["txn_db_a", "txn_db_b"] {
        let _ = admin(client, doc! {"movePrimary": db, "to": shard.clone()}).await;
        assert_eq!(
            crate::harness::database_entry(client, db)
                .await
                .get_str("primary")
                .unwrap(),
            shard
        );
    }
    let mut session = client.start_session().await.unwrap();
    for commit in [false, true] {
        session.start_transaction().await.unwrap();
        a.insert_one(doc! {"_id": 1})
            .session(&mut session)
            .await
            .unwrap();
        b.insert_one(doc! {"_id": 1})
            .session(&mut session)
            .await
            .unwrap();
        match commit {
            true => session.commit_transaction().await.unwrap(),
            false => session.abort_transaction().await.unwrap(),
        }
        let want = if commit { 2 } else { 1 };
        assert_eq!(a.count_documents(doc! {}).await.unwrap(), want);
        assert_eq!(b.count_documents(doc! {}).await.unwrap(), want);
    }
    // A collection created in one of the databases commits with the other's writes.
    let fresh = client.database("txn_db_a").collection::<Document>("fresh");
    session.start_transaction().await.unwrap();
    fresh
        .insert_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap();
    b.insert_one(doc! {"_id": 2})
        .session(&mut session)
        .await
        .unwrap();
    session.commit_transaction().await.unwrap();
    assert_eq!(fresh.count_documents(doc! {}).await.unwrap(), 1);
    assert_eq!(b.count_documents(doc! {}).await.unwrap(), 3);
    cluster.shutdown().await;
}

/// A transaction open longer than `transactionLifetimeLimitSeconds` is aborted on its shard,
/// and `killSessions` aborts a session's open transaction: in both cases nothing it wrote
/// stays and its commit answers NoSuchTransaction; `$currentOp` lists an open transaction's
/// session while it waits between statements.
#[tokio::test]
async fn expired_and_killed_transactions_abort() {
    let cluster = TestCluster::with_parameters(&[("transactionLifetimeLimitSeconds", "1")]).await;
    let client = &cluster.client;
    let coll = accounts(client, "txn_expire", false).await;
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    transfer(&coll, &mut session, 0, 1, 5).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let err = session.commit_transaction().await.unwrap_err();
    assert_eq!(crate::harness::error_code(&err), Some(251), "{err:?}");
    assert_eq!(balance(&coll, 0).await, BALANCE);

    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    transfer(&coll, &mut session, 0, 1, 5).await.unwrap();
    let idle = admin(
        client,
        doc! {"aggregate": 1, "pipeline": [{"$currentOp": {"idleSessions": true}},
        {"$match": {"type": "idleSession"}}], "cursor": {}},
    )
    .await
    .unwrap();
    let listed = crate::harness::first_batch(&idle);
    assert!(
        listed.iter().any(|op| op
            .get_document("transaction")
            .is_ok_and(|t| t.get_document("parameters").is_ok())),
        "{listed:?}"
    );
    let lsid = session.id().clone();
    admin(client, doc! {"killSessions": [lsid]}).await.unwrap();
    let err = session.commit_transaction().await.unwrap_err();
    assert_eq!(crate::harness::error_code(&err), Some(251), "{err:?}");
    assert_eq!(balance(&coll, 0).await, BALANCE);
    cluster.shutdown().await;
}

/// `failCommand` on a shard fails its `commitTransaction` before the commit runs, labelled
/// for the driver's retry: the transaction stays open and the commit sent again commits it
/// (a driver connected to a shard directly sees a standalone, so the test sends it again).
#[tokio::test]
async fn a_failed_commit_on_a_shard_leaves_the_transaction_to_its_retry() {
    let cluster = crate::harness::ProcessCluster::start_with(1, &["--enable-test-commands"]).await;
    let shard = cluster.shard_client(0).await;
    let coll = shard
        .database("txn_fail_commit")
        .collection::<Document>("c");
    coll.insert_one(doc! {"_id": 0}).await.unwrap();
    admin(
        &shard,
        doc! {"configureFailPoint": "failCommand", "mode": {"times": 1},
        "data": {"failCommands": ["commitTransaction"], "errorCode": 91}},
    )
    .await
    .unwrap();
    let mut session = shard.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    coll.insert_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap();
    let err = session.commit_transaction().await.unwrap_err();
    assert!(err.contains_label("RetryableWriteError"), "{err:?}");
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
    session.commit_transaction().await.unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 2);
}

async fn collection_names(client: &Client, db: &str) -> Vec<String> {
    client.database(db).list_collection_names().await.unwrap()
}

/// Collections and indexes created inside a transaction (explicitly, by `createIndexes`, or by
/// an insert) exist for the transaction at once and for everyone else once it commits; an
/// abort leaves nothing. MongoDB's limits hold: no new index on an existing collection (263),
/// only read concern `local` for explicit creation (InvalidOptions), a unique index over the
/// transaction's own duplicates fails (DuplicateKey), a plain insert into the name waits for
/// the transaction, and a transaction that also writes on another shard cannot commit a new
/// collection (263 at prepare, which aborts it).
#[tokio::test]
async fn collections_created_in_a_transaction() {
    let cluster = TestCluster::start().await;
    let client = &cluster.client;
    let db = client.database("txn_ddl");
    db.collection::<Document>("existing")
        .insert_one(doc! {"_id": 0})
        .await
        .unwrap();
    let mut session = client.start_session().await.unwrap();
    for commit in [false, true] {
        session.start_transaction().await.unwrap();
        db.create_collection("explicit")
            .session(&mut session)
            .await
            .unwrap();
        let explicit = db.collection::<Document>("explicit");
        explicit
            .create_index(mongodb::IndexModel::builder().keys(doc! {"x": 1}).build())
            .session(&mut session)
            .await
            .unwrap();
        explicit
            .insert_one(doc! {"_id": 1, "x": [1, 2]})
            .session(&mut session)
            .await
            .unwrap();
        let implicit = db.collection::<Document>("implicit");
        implicit
            .insert_one(doc! {"_id": 1})
            .session(&mut session)
            .await
            .unwrap();
        // The transaction reads its collections, through their indexes too.
        let found = explicit
            .find_one(doc! {"x": 2})
            .session(&mut session)
            .await
            .unwrap();
        assert_eq!(found, Some(doc! {"_id": 1, "x": [1, 2]}));
        assert_eq!(
            implicit
                .count_documents(doc! {})
                .session(&mut session)
                .await
                .unwrap(),
            1
        );
        // Nobody else sees them yet.
        let names = collection_names(client, "txn_ddl").await;
        assert_eq!(names, vec!["existing".to_string()], "before the end");
        match commit {
            true => session.commit_transaction().await.unwrap(),
            false => session.abort_transaction().await.unwrap(),
        }
        let mut names = collection_names(client, "txn_ddl").await;
        names.sort();
        if commit {
            assert_eq!(names, vec!["existing", "explicit", "implicit"]);
            let indexes = explicit.list_index_names().await.unwrap();
            assert_eq!(indexes, vec!["_id_", "x_1"]);
            let found = explicit.find_one(doc! {"x": 1}).await.unwrap();
            assert_eq!(found, Some(doc! {"_id": 1, "x": [1, 2]}));
            assert_eq!(implicit.count_documents(doc! {}).await.unwrap(), 1);
        } else {
            assert_eq!(names, vec!["existing"], "an abort creates nothing");
        }
    }

    // No new index on an existing collection; the transaction is aborted.
    session.start_transaction().await.unwrap();
    let err = db
        .collection::<Document>("existing")
        .create_index(mongodb::IndexModel::builder().keys(doc! {"y": 1}).build())
        .session(&mut session)
        .await
        .unwrap_err();
    assert_eq!(crate::harness::error_code(&err), Some(263), "{err:?}");
    let err = session.commit_transaction().await.unwrap_err();
    assert_eq!(crate::harness::error_code(&err), Some(251), "{err:?}");

    // Explicit creation needs read concern `local`.
    session
        .start_transaction()
        .read_concern(mongodb::options::ReadConcern::snapshot())
        .await
        .unwrap();
    let err = db
        .create_collection("snapshot")
        .session(&mut session)
        .await
        .unwrap_err();
    assert_eq!(crate::harness::error_code(&err), Some(72), "{err:?}");
    let _ = session.abort_transaction().await;

    // A unique index over the transaction's own duplicates.
    session.start_transaction().await.unwrap();
    let dups = db.collection::<Document>("dups");
    dups.insert_many([doc! {"_id": 1, "u": 1}, doc! {"_id": 2, "u": 1}])
        .session(&mut session)
        .await
        .unwrap();
    let err = dups
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! {"u": 1})
                .options(
                    mongodb::options::IndexOptions::builder()
                        .unique(true)
                        .build(),
                )
                .build(),
        )
        .session(&mut session)
        .await
        .unwrap_err();
    assert_eq!(crate::harness::error_code(&err), Some(11000), "{err:?}");
    let _ = session.abort_transaction().await;
    assert!(
        !collection_names(client, "txn_ddl")
            .await
            .contains(&"dups".to_string())
    );

    // A plain insert into a collection a transaction creates waits for it.
    session.start_transaction().await.unwrap();
    let waited = db.collection::<Document>("waited");
    waited
        .insert_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap();
    let plain = {
        let waited = waited.clone();
        tokio::spawn(async move { waited.insert_one(doc! {"_id": 2}).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!plain.is_finished(), "the plain insert waits");
    session.commit_transaction().await.unwrap();
    plain.await.unwrap().unwrap();
    assert_eq!(waited.count_documents(doc! {}).await.unwrap(), 2);

    // A transaction writing on two shards cannot create a collection (MongoDB refuses it at
    // prepare): nothing it did stays.
    let shards = crate::harness::shard_names(client).await;
    let other = client.database("txn_ddl_other");
    other
        .collection::<Document>("c")
        .insert_one(doc! {"_id": 0})
        .await
        .unwrap();
    for (name, shard) in [("txn_ddl", &shards[0]), ("txn_ddl_other", &shards[1])] {
        let _ = admin(client, doc! {"movePrimary": name, "to": shard.clone()}).await;
    }
    session.start_transaction().await.unwrap();
    db.collection::<Document>("distributed")
        .insert_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap();
    other
        .collection::<Document>("c")
        .insert_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap();
    // The coordinator answers the failed prepare as MongoDB's does: NoSuchTransaction, the
    // participant's reason as its cause.
    let err = session.commit_transaction().await.unwrap_err();
    assert_eq!(crate::harness::error_code(&err), Some(251), "{err:?}");
    assert!(
        err.to_string()
            .contains("Cannot create new collections inside distributed transactions"),
        "{err}"
    );
    assert!(
        !collection_names(client, "txn_ddl")
            .await
            .contains(&"distributed".to_string())
    );
    assert_eq!(
        other
            .collection::<Document>("c")
            .count_documents(doc! {})
            .await
            .unwrap(),
        1
    );
    cluster.shutdown().await;
}
