//! Retryable writes on one data node: dedup per statement, TransactionTooOld, records that
//! survive reopening the data directory, and the reap.

use super::*;
use crate::aggregate::foreign::CommandRunner;
use crate::datanode::cursors::CursorRegistry;
use crate::server::logbuf::LogBuffer;
use crate::server::{
    CmdLine, CommandTable, LocalCommands, Node, NodeState, Parameters, RequestContext, Role,
};
use bson::{Binary, Bson, Document, doc};
use std::path::Path;
use std::sync::Arc;

struct TestNode {
    node: Node,
    storage: Arc<Storage>,
    cursors: CursorRegistry,
    table: TransactionTable,
    commands: CommandTable<TestNode>,
}

impl NodeState for TestNode {
    fn node(&self) -> &Node {
        &self.node
    }
    fn commands(&self) -> &CommandTable<Self> {
        &self.commands
    }
}

impl DataNode for TestNode {
    fn storage(&self) -> &Storage {
        &self.storage
    }
    fn cursors(&self) -> &CursorRegistry {
        &self.cursors
    }
    fn transaction_table(&self) -> &TransactionTable {
        &self.table
    }
    fn shard_name(&self) -> String {
        "test".into()
    }
}

async fn open(dir: &Path) -> TestNode {
    let node = Node::new(
        Role::Shard,
        CmdLine::default(),
        Parameters::new(),
        Arc::new(LogBuffer::default()),
    );
    let storage = Storage::open(dir, node.clock.clone()).await.unwrap();
    TestNode {
        node,
        storage,
        cursors: CursorRegistry::default(),
        table: TransactionTable::default(),
        commands: CommandTable::new(crate::datanode::commands::data_commands()),
    }
}

fn lsid(n: u8) -> Document {
    doc! {"id": Binary {subtype: BinarySubtype::Uuid, bytes: vec![n; 16]}}
}

async fn run(node: &TestNode, mut command: Document, session: u8, txn: i64) -> Result<Document> {
    command.insert("lsid", lsid(session));
    command.insert("txnNumber", txn);
    let ctx = RequestContext::internal();
    LocalCommands::new(node, &ctx)
        .run_command("app", command)
        .await
}

async fn find(node: &TestNode) -> Vec<Document> {
    let ctx = RequestContext::internal();
    let reply = LocalCommands::new(node, &ctx)
        .run_command("app", doc! {"find": "c", "sort": {"_id": 1}})
        .await
        .unwrap();
    crate::command::first_batch(&reply)
}

#[tokio::test]
async fn a_retried_statement_answers_its_record_without_running_again() {
    let dir = tempfile::tempdir().unwrap();
    let node = open(dir.path()).await;
    let insert = doc! {"insert": "c", "documents": [{"_id": 1, "x": 0}, {"_id": 2, "x": 0}]};
    let first = run(&node, insert.clone(), 1, 1).await.unwrap();
    assert_eq!(first.get_i32("n"), Ok(2));
    // The same statements again: no duplicate key, the same count, both listed as retried.
    let again = run(&node, insert, 1, 1).await.unwrap();
    assert_eq!(again.get_i32("n"), Ok(2));
    assert!(again.get("writeErrors").is_none(), "{again}");
    assert_eq!(
        again.get_array("retriedStmtIds").unwrap(),
        &vec![Bson::Int32(0), Bson::Int32(1)]
    );

    let inc = doc! {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"x": 1}}}]};
    run(&node, inc.clone(), 1, 2).await.unwrap();
    let again = run(&node, inc, 1, 2).await.unwrap();
    assert_eq!(
        (again.get_i32("n"), again.get_i32("nModified")),
        (Ok(1), Ok(1))
    );
    let upsert = doc! {"update": "c", "updates": [{"q": {"_id": 9}, "u": {"$inc": {"x": 1}}, "upsert": true}]};
    let first = run(&node, upsert.clone(), 1, 3).await.unwrap();
    let again = run(&node, upsert, 1, 3).await.unwrap();
    assert_eq!(first.get_array("upserted"), again.get_array("upserted"));

    let delete = doc! {"delete": "c", "deletes": [{"q": {"x": 0}, "limit": 1}]};
    run(&node, delete.clone(), 1, 4).await.unwrap();
    let again = run(&node, delete, 1, 4).await.unwrap();
    assert_eq!(again.get_i32("n"), Ok(1));

    let fam = doc! {"findAndModify": "c", "query": {"_id": 1}, "update": {"$inc": {"x": 10}}, "new": true};
    let first = run(&node, fam.clone(), 1, 5).await.unwrap();
    let again = run(&node, fam, 1, 5).await.unwrap();
    assert_eq!(first.get("value"), again.get("value"));
    assert_eq!(
        find(&node).await,
        vec![doc! {"_id": 1, "x": 11}, doc! {"_id": 9, "x": 1}],
        "each write applied once"
    );
    let stats = node.node.stats.transactions();
    assert_eq!(stats.get_i64("retriedCommandsCount"), Ok(5));
    assert_eq!(stats.get_i64("retriedStatementsCount"), Ok(6));
}

#[tokio::test]
async fn an_older_txn_number_is_too_old_and_a_newer_one_starts_over() {
    let dir = tempfile::tempdir().unwrap();
    let node = open(dir.path()).await;
    run(&node, doc! {"insert": "c", "documents": [{"_id": 1}]}, 2, 5)
        .await
        .unwrap();
    let err = run(&node, doc! {"insert": "c", "documents": [{"_id": 2}]}, 2, 4)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::TransactionTooOld);
    assert!(
        err.message().starts_with("Cannot start transaction 4 on session 02020202-0202-0202-0202-020202020202 - 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU= because a newer transaction with txnNumber 5 has already started on this session."),
        "{}",
        err.message()
    );
    // Statement 0 of txnNumber 6 is a new statement: it runs.
    let err = run(&node, doc! {"insert": "c", "documents": [{"_id": 1}]}, 2, 6).await;
    let reply = err.unwrap();
    assert_eq!(reply.get_array("writeErrors").unwrap().len(), 1);
    // Another session's numbers are its own.
    run(&node, doc! {"insert": "c", "documents": [{"_id": 3}]}, 3, 1)
        .await
        .unwrap();
}

#[tokio::test]
async fn records_survive_a_restart_and_failed_statements_are_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    {
        let node = open(dir.path()).await;
        let batch = doc! {"insert": "c", "ordered": false,
        "documents": [{"_id": 1}, {"_id": 1}, {"_id": 2}]};
        let reply = run(&node, batch, 7, 3).await.unwrap();
        assert_eq!(reply.get_i32("n"), Ok(2));
    }
    let node = open(dir.path()).await;
    assert_eq!(
        node.table
            .txn_number(&node.storage, &lsid(7))
            .await
            .unwrap(),
        Some(3)
    );
    // Statement 1 failed: it runs again (and fails again); 0 and 2 answer their records.
    let batch = doc! {"insert": "c", "ordered": false,
    "documents": [{"_id": 1}, {"_id": 1}, {"_id": 2}]};
    let reply = run(&node, batch, 7, 3).await.unwrap();
    assert_eq!(reply.get_i32("n"), Ok(2));
    assert_eq!(reply.get_array("writeErrors").unwrap().len(), 1);
    let err = run(&node, doc! {"insert": "c", "documents": [{"_id": 5}]}, 7, 2)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::TransactionTooOld);
}

#[tokio::test]
async fn multi_writes_are_refused_unless_their_statement_id_is_uninitialized() {
    let dir = tempfile::tempdir().unwrap();
    let node = open(dir.path()).await;
    run(
        &node,
        doc! {"insert": "c", "documents": [{"_id": 1, "x": 0}, {"_id": 2, "x": 0}]},
        4,
        1,
    )
    .await
    .unwrap();
    let refused = |reply: Document| {
        let error = reply.get_array("writeErrors").unwrap()[0]
            .as_document()
            .unwrap()
            .clone();
        (
            error.get_i32("code").unwrap(),
            error.get_str("errmsg").unwrap().to_string(),
        )
    };
    let many = doc! {"update": "c", "updates": [{"q": {}, "u": {"$inc": {"x": 1}}, "multi": true}]};
    assert_eq!(
        refused(run(&node, many, 4, 2).await.unwrap()),
        (
            72,
            "Cannot use (or request) retryable writes with multi=true".into()
        )
    );
    let all = doc! {"delete": "c", "deletes": [{"q": {}, "limit": 0}]};
    assert_eq!(
        refused(run(&node, all, 4, 3).await.unwrap()),
        (
            72,
            "Cannot use (or request) retryable writes with limit=0".into()
        )
    );
    // Statement id -1: not retryable, so it runs, and runs again.
    let many = doc! {"update": "c", "stmtIds": [-1],
    "updates": [{"q": {}, "u": {"$inc": {"x": 1}}, "multi": true}]};
    run(&node, many.clone(), 4, 4).await.unwrap();
    run(&node, many, 4, 4).await.unwrap();
    assert_eq!(
        find(&node).await,
        vec![doc! {"_id": 1, "x": 2}, doc! {"_id": 2, "x": 2}]
    );
}

#[tokio::test]
async fn explicit_statement_ids_identify_statements() {
    let dir = tempfile::tempdir().unwrap();
    let node = open(dir.path()).await;
    run(
        &node,
        doc! {"insert": "c", "documents": [{"_id": 1}], "stmtIds": [7]},
        5,
        1,
    )
    .await
    .unwrap();
    // The same document under statement 7 again, with another statement (8) beside it.
    let reply = run(
        &node,
        doc! {"insert": "c", "documents": [{"_id": 2}, {"_id": 1}], "stmtIds": [8, 7]},
        5,
        1,
    )
    .await
    .unwrap();
    assert_eq!(reply.get_i32("n"), Ok(2));
    assert_eq!(
        reply.get_array("retriedStmtIds").unwrap(),
        &vec![Bson::Int32(7)]
    );
}

#[tokio::test]
async fn reaping_removes_old_records_of_dead_sessions_only() {
    let dir = tempfile::tempdir().unwrap();
    let node = open(dir.path()).await;
    for session in [1, 2] {
        run(
            &node,
            doc! {"insert": "c", "documents": [{"_id": session as i32}]},
            session,
            1,
        )
        .await
        .unwrap();
    }
    // Not old enough: nothing goes.
    let hour = std::time::Duration::from_secs(3600);
    let reaped = node
        .table
        .reap(&node.storage, ago(hour), |_| false)
        .await
        .unwrap();
    assert_eq!(reaped, 0);
    let alive = normalized_lsid(&lsid(1)).unwrap();
    let reaped = node
        .table
        .reap(&node.storage, ago(std::time::Duration::ZERO), |id| {
            *id == alive
        })
        .await
        .unwrap();
    assert_eq!(reaped, 1);
    assert_eq!(
        node.table
            .txn_number(&node.storage, &lsid(2))
            .await
            .unwrap(),
        None
    );
    // Gone from storage too: a reopened node does not know the session either.
    let reopened = open(dir.path()).await;
    assert_eq!(
        reopened
            .table
            .txn_number(&reopened.storage, &lsid(2))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        reopened
            .table
            .txn_number(&reopened.storage, &lsid(1))
            .await
            .unwrap(),
        Some(1)
    );
}

#[tokio::test]
async fn bulk_write_operations_are_deduplicated_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let node = open(dir.path()).await;
    let bulk = doc! {
        "bulkWrite": 1,
        "ops": [
            {"insert": 0, "document": {"_id": 1, "x": 0}},
            {"update": 0, "filter": {"_id": 1}, "updateMods": {"$inc": {"x": 1}}},
            {"insert": 0, "document": {"_id": 2, "x": 0}},
            {"delete": 0, "filter": {"_id": 2}},
        ],
        "nsInfo": [{"ns": "app.c"}],
        "lsid": lsid(6),
        "txnNumber": 1_i64,
    };
    let ctx = RequestContext::internal();
    let runner = LocalCommands::new(&node, &ctx);
    let first = runner.run_command("admin", bulk.clone()).await.unwrap();
    let again = runner.run_command("admin", bulk).await.unwrap();
    for name in ["nInserted", "nModified", "nDeleted", "nErrors"] {
        assert_eq!(first.get(name), again.get(name), "{name}: {again}");
    }
    assert_eq!(again.get_array("retriedStmtIds").unwrap().len(), 4);
    assert_eq!(find(&node).await, vec![doc! {"_id": 1, "x": 1}]);
}

#[tokio::test]
async fn a_moved_statement_answers_the_result_its_router_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let node = open(dir.path()).await;
    run(
        &node,
        doc! {"insert": "c", "documents": [{"_id": 1, "k": 1}]},
        8,
        1,
    )
    .await
    .unwrap();
    // The router deletes the old version of a document update statement 3 moved away.
    let delete = doc! {"delete": "c", "deletes": [{"q": {"_id": 1}, "limit": 1}],
    "stmtIds": [3], "recordResult": {"n": 1_i64, "nModified": 1_i64}};
    run(&node, delete, 8, 2).await.unwrap();
    // The update's retry answers as the update it was, without running.
    let update = doc! {"update": "c", "stmtIds": [3], "updates": [
    {"q": {"k": 1}, "u": {"$set": {"k": 2}}, "upsert": true}]};
    let reply = run(&node, update, 8, 2).await.unwrap();
    assert_eq!(
        (reply.get_i32("n"), reply.get_i32("nModified")),
        (Ok(1), Ok(1))
    );
    assert!(find(&node).await.is_empty(), "the upsert did not run");
}

#[tokio::test]
async fn statements_of_an_older_txn_number_never_answer_a_newer_one() {
    let dir = tempfile::tempdir().unwrap();
    {
        let node = open(dir.path()).await;
        let three = doc! {"insert": "c", "documents": [{"_id": 1}, {"_id": 2}, {"_id": 3}]};
        run(&node, three, 9, 1).await.unwrap();
        run(&node, doc! {"insert": "c", "documents": [{"_id": 4}]}, 9, 2)
            .await
            .unwrap();
    }
    let node = open(dir.path()).await;
    // Statement 1 of txnNumber 2 never ran (statement 1 of txnNumber 1 did): it runs now.
    let reply = run(
        &node,
        doc! {"insert": "c", "documents": [{"_id": 4}, {"_id": 5}]},
        9,
        2,
    )
    .await
    .unwrap();
    assert_eq!(reply.get_i32("n"), Ok(2));
    assert_eq!(
        reply.get_array("retriedStmtIds").unwrap(),
        &vec![Bson::Int32(0)]
    );
    assert_eq!(find(&node).await.len(), 5);
}

/// The time `age` ago.
fn ago(age: std::time::Duration) -> bson::DateTime {
    bson::DateTime::from_millis(bson::DateTime::now().timestamp_millis() - age.as_millis() as i64)
}

#[test]
fn a_running_statement_shows_its_transaction_until_it_ends() {
    let table = TransactionTable::default();
    let session = LogicalSessionId::of_document(&doc! {
        "id": Binary {subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![7; 16]},
    })
    .unwrap();
    assert!(table.running_transaction(&session).is_none());
    let transaction = doc! {
        "parameters": {"txnNumber": 3_i64, "autocommit": false},
        "timeOpenMicros": 1000_i64,
        "timeActiveMicros": 10_i64,
        "timeInactiveMicros": 990_i64,
    };
    let running = table.running(session.clone(), transaction);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let shown = table.running_transaction(&session).unwrap();
    assert_eq!(
        shown
            .get_document("parameters")
            .unwrap()
            .get_i64("txnNumber"),
        Ok(3)
    );
    // The statement's time so far counts as open and active.
    assert!(shown.get_i64("timeOpenMicros").unwrap() >= 21_000);
    assert!(shown.get_i64("timeActiveMicros").unwrap() >= 20_010);
    assert_eq!(shown.get_i64("timeInactiveMicros"), Ok(990));
    drop(running);
    assert!(table.running_transaction(&session).is_none());
}
