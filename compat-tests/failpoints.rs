//! MongoDB's test commands: `configureFailPoint` with `failCommand`, honoured by the router as
//! mongos honours it, and absent unless test commands are enabled.

use crate::harness::{TestCluster, error_code};
use mongodb::bson::{Document, doc};
use std::time::{Duration, Instant};

#[tokio::test]
async fn test_commands_do_not_exist_unless_enabled() {
    let cluster = TestCluster::start().await;
    let err = cluster
        .admin(doc! {"configureFailPoint": "failCommand", "mode": "off"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(59));
    let commands = cluster.admin(doc! {"listCommands": 1}).await.unwrap();
    assert!(
        !commands
            .get_document("commands")
            .unwrap()
            .contains_key("configureFailPoint")
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn fail_command_errors_times_and_labels() {
    let cluster = TestCluster::with_test_commands().await;
    let params = cluster
        .admin(doc! {"getParameter": 1, "enableTestCommands": 1})
        .await
        .unwrap();
    assert!(params.get_bool("enableTestCommands").unwrap());
    let coll = cluster.db("app").collection::<Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.unwrap();
    let set = cluster
        .admin(
            doc! {"configureFailPoint": "failCommand", "mode": {"times": 2}, "data": {
            "failCommands": ["find"], "errorCode": 91, "errorLabels": ["Custom"]}},
        )
        .await
        .unwrap();
    assert_eq!(set.get_i64("count").unwrap(), 0);
    // A direct command (not retried by the driver) shows the injected error and labels.
    let err = cluster
        .db("app")
        .run_command(doc! {"find": "c"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(91));
    assert!(err.contains_label("Custom"));
    let err = cluster
        .db("app")
        .run_command(doc! {"find": "c"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(91));
    assert!(
        coll.find_one(doc! {}).await.unwrap().is_some(),
        "two times, then off"
    );
    let off = cluster
        .admin(doc! {"configureFailPoint": "failCommand", "mode": "off"})
        .await
        .unwrap();
    assert_eq!(off.get_i64("count").unwrap(), 2);
    cluster.shutdown().await;
}

#[tokio::test]
async fn fail_command_closes_connections_and_blocks() {
    let cluster = TestCluster::with_test_commands().await;
    cluster
        .admin(
            doc! {"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": {
            "failCommands": ["ping"], "closeConnection": true}},
        )
        .await
        .unwrap();
    let err = cluster
        .db("app")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind.as_ref(), mongodb::error::ErrorKind::Io(_)),
        "closed connection: {err}"
    );
    assert_eq!(
        cluster
            .db("app")
            .run_command(doc! {"ping": 1})
            .await
            .unwrap()
            .get_f64("ok")
            .unwrap(),
        1.0
    );
    cluster
        .admin(
            doc! {"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": {
            "failCommands": ["ping"], "blockConnection": true, "blockTimeMS": 300}},
        )
        .await
        .unwrap();
    let start = Instant::now();
    cluster
        .db("app")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap();
    assert!(start.elapsed() >= Duration::from_millis(300));
    cluster.shutdown().await;
}

#[tokio::test]
async fn fail_command_write_concern_errors_and_app_name() {
    let cluster = TestCluster::with_test_commands().await;
    cluster
        .admin(doc! {"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": {
            "failCommands": ["insert", "ping"], "writeConcernError": {"code": 12345, "errmsg": "hello"}}})
        .await
        .unwrap();
    cluster
        .db("app")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap();
    let reply = cluster
        .db("app")
        .run_command(doc! {"insert": "c", "documents": [{"a": 1}]})
        .await
        .unwrap();
    assert_eq!(reply.get_i32("n").unwrap(), 1, "the insert ran");
    assert_eq!(
        reply.get_document("writeConcernError").unwrap(),
        &doc! {"code": 12345, "errmsg": "hello"}
    );
    let reply = cluster
        .db("app")
        .run_command(doc! {"insert": "c", "documents": [{"a": 2}]})
        .await
        .unwrap();
    assert!(reply.get("writeConcernError").is_none());

    cluster
        .admin(
            doc! {"configureFailPoint": "failCommand", "mode": "alwaysOn", "data": {
            "failCommands": ["count"], "errorCode": 2, "appName": "the-app"}},
        )
        .await
        .unwrap();
    cluster
        .db("app")
        .run_command(doc! {"count": "c"})
        .await
        .unwrap();
    let named =
        mongodb::Client::with_uri_str(format!("mongodb://{}/?appName=the-app", cluster.addr))
            .await
            .unwrap();
    let err = named
        .database("app")
        .run_command(doc! {"count": "c"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(2));
    cluster
        .admin(doc! {"configureFailPoint": "failCommand", "mode": "off"})
        .await
        .unwrap();
    let err = cluster
        .admin(doc! {"configureFailPoint": "noSuchFailPoint", "mode": "off"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(266));
    let bad = cluster
        .admin(doc! {"configureFailPoint": "failCommand", "mode": "sometimes"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&bad), Some(2));
    assert!(matches!(
        bad.kind.as_ref(),
        mongodb::error::ErrorKind::Command(_)
    ));
    cluster.shutdown().await;
}

#[tokio::test]
async fn max_time_ms_limits_commands() {
    let cluster = TestCluster::with_test_commands().await;
    let db = cluster.db("app");
    let coll = db.collection::<Document>("timed");
    let docs: Vec<Document> = (0..20_000)
        .map(|i| doc! {"_id": i, "k": (i * 7919) % 20_000, "pad": "x".repeat(100)})
        .collect();
    coll.insert_many(docs).await.unwrap();
    // A limit the command meets, one it cannot meet (a blocking sort over every document in
    // 1 ms), and the values MongoDB refuses.
    let ok = db
        .run_command(doc! {"find": "timed", "filter": {"_id": 3}, "maxTimeMS": 60_000})
        .await
        .unwrap();
    assert_eq!(ok.get_f64("ok").unwrap(), 1.0);
    let err = db
        .run_command(doc! {"find": "timed", "sort": {"k": 1, "pad": -1}, "maxTimeMS": 1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(50));
    for (value, code) in [
        (mongodb::bson::Bson::Int32(-1), 2),
        (mongodb::bson::Bson::Double(1.5), 2),
        (mongodb::bson::Bson::String("1".into()), 2),
    ] {
        let err = db
            .run_command(doc! {"find": "timed", "maxTimeMS": value})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(code));
    }
    // getMore takes no time limit on a non-tailable cursor.
    let reply = db
        .run_command(doc! {"find": "timed", "batchSize": 2})
        .await
        .unwrap();
    let id = reply.get_document("cursor").unwrap().get_i64("id").unwrap();
    let err = db
        .run_command(doc! {"getMore": id, "collection": "timed", "maxTimeMS": 100})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(2));

    // maxTimeAlwaysTimeOut: every command with a limit expires; commands without one run.
    cluster
        .admin(doc! {"configureFailPoint": "maxTimeAlwaysTimeOut", "mode": {"times": 1}})
        .await
        .unwrap();
    let err = db
        .run_command(doc! {"find": "timed", "filter": {"_id": 1}, "maxTimeMS": 60_000})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(50));
    db.run_command(doc! {"find": "timed", "filter": {"_id": 1}, "maxTimeMS": 60_000})
        .await
        .unwrap();
    cluster
        .admin(doc! {"configureFailPoint": "maxTimeAlwaysTimeOut", "mode": "alwaysOn"})
        .await
        .unwrap();
    let err = coll
        .count_documents(doc! {})
        .max_time(Duration::from_secs(5))
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(50));
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 20_000);
    cluster
        .admin(doc! {"configureFailPoint": "maxTimeAlwaysTimeOut", "mode": "off"})
        .await
        .unwrap();
    cluster.shutdown().await;
}
