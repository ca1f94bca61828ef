//! Handshake and server commands every role answers: hello as mongos, buildInfo, parameters,
//! logs, status and the errors for what does not exist.

use crate::harness::{TestCluster, error_code};
use mongodb::bson::{Bson, doc};

#[tokio::test]
async fn hello_answers_as_mongos() {
    let cluster = TestCluster::start().await;
    for name in ["hello", "isMaster", "ismaster"] {
        let reply = cluster
            .admin(doc! {name: 1, "helloOk": true})
            .await
            .unwrap();
        assert_eq!(reply.get_str("msg").unwrap(), "isdbgrid");
        let primary_field = if name == "hello" {
            "isWritablePrimary"
        } else {
            "ismaster"
        };
        assert!(reply.get_bool(primary_field).unwrap());
        assert_eq!(reply.get_i32("maxWireVersion").unwrap(), 25);
        assert_eq!(reply.get_i32("minWireVersion").unwrap(), 0);
        assert_eq!(
            reply.get_i32("maxBsonObjectSize").unwrap(),
            16 * 1024 * 1024
        );
        assert_eq!(reply.get_i32("maxMessageSizeBytes").unwrap(), 48_000_000);
        assert_eq!(reply.get_i32("maxWriteBatchSize").unwrap(), 100_000);
        assert_eq!(reply.get_i32("logicalSessionTimeoutMinutes").unwrap(), 30);
        assert!(reply.get_datetime("localTime").is_ok());
        assert!(reply.get_i32("connectionId").unwrap() > 0);
        assert!(reply.get_bool("helloOk").unwrap());
        assert!(reply.get("topologyVersion").is_none());
    }
    cluster.shutdown().await;
}

#[tokio::test]
async fn build_info_ping_and_identity_commands() {
    let cluster = TestCluster::start().await;
    let info = cluster.admin(doc! {"buildInfo": 1}).await.unwrap();
    assert!(info.get_str("version").unwrap().starts_with("8.0"));
    let version: Vec<i32> = info
        .get_array("versionArray")
        .unwrap()
        .iter()
        .map(|v| v.as_i32().unwrap())
        .collect();
    assert_eq!(&version[..2], &[8, 0]);
    assert_eq!(info.get_i32("bits").unwrap(), 64);
    assert_eq!(
        cluster
            .admin(doc! {"buildinfo": 1})
            .await
            .unwrap()
            .get_str("version")
            .unwrap(),
        info.get_str("version").unwrap()
    );
    assert_eq!(
        cluster
            .admin(doc! {"ping": 1})
            .await
            .unwrap()
            .get_f64("ok")
            .unwrap(),
        1.0
    );
    let me = cluster.admin(doc! {"whatsmyuri": 1}).await.unwrap();
    assert!(me.get_str("you").unwrap().starts_with("127.0.0.1:"));
    let status = cluster
        .admin(doc! {"connectionStatus": 1, "showPrivileges": true})
        .await
        .unwrap();
    let auth = status.get_document("authInfo").unwrap();
    assert!(auth.get_array("authenticatedUsers").unwrap().is_empty());
    assert!(auth.get_array("authenticatedUserPrivileges").is_ok());
    let host = cluster.admin(doc! {"hostInfo": 1}).await.unwrap();
    assert!(
        host.get_document("system")
            .unwrap()
            .get_i32("numCores")
            .unwrap()
            >= 1
    );
    assert!(host.get_document("os").unwrap().get_str("type").is_ok());
    assert_eq!(
        cluster
            .admin(doc! {"logout": 1})
            .await
            .unwrap()
            .get_f64("ok")
            .unwrap(),
        1.0
    );
    let cmdline = cluster.admin(doc! {"getCmdLineOpts": 1}).await.unwrap();
    assert!(cmdline.get_array("argv").is_ok() && cmdline.get_document("parsed").is_ok());
    cluster.shutdown().await;
}

#[tokio::test]
async fn parameters() {
    let cluster = TestCluster::start().await;
    let fcv = cluster
        .admin(doc! {"getParameter": 1, "featureCompatibilityVersion": 1})
        .await
        .unwrap();
    assert_eq!(
        fcv.get_document("featureCompatibilityVersion")
            .unwrap()
            .get_str("version")
            .unwrap(),
        "8.0"
    );
    let all = cluster.admin(doc! {"getParameter": "*"}).await.unwrap();
    assert!(all.get("cursorTimeoutMillis").is_some());
    assert!(!all.get_bool("enableTestCommands").unwrap());
    let err = cluster
        .admin(doc! {"getParameter": "foo"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(72));
    let set = cluster
        .admin(doc! {"setParameter": 1, "cursorTimeoutMillis": 1000})
        .await
        .unwrap();
    assert_eq!(set.get_i64("was").unwrap(), 600_000);
    let now = cluster
        .admin(doc! {"getParameter": 1, "cursorTimeoutMillis": 1})
        .await
        .unwrap();
    assert_eq!(now.get_i64("cursorTimeoutMillis").unwrap(), 1000);
    let err = cluster
        .db("app")
        .run_command(doc! {"getParameter": 1, "cursorTimeoutMillis": 1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(13), "getParameter is admin-only");
    cluster.shutdown().await;
}

#[tokio::test]
async fn logs_and_server_status() {
    let cluster = TestCluster::start().await;
    let names = cluster.admin(doc! {"getLog": "*"}).await.unwrap();
    let names: Vec<&str> = names
        .get_array("names")
        .unwrap()
        .iter()
        .filter_map(Bson::as_str)
        .collect();
    assert!(names.contains(&"global") && names.contains(&"startupWarnings"));
    let warnings = cluster
        .admin(doc! {"getLog": "startupWarnings"})
        .await
        .unwrap();
    assert!(warnings.get_array("log").is_ok());
    assert!(warnings.get("totalLinesWritten").is_some());
    let coll = cluster.db("app").collection::<mongodb::bson::Document>("c");
    let before = cluster.admin(doc! {"serverStatus": 1}).await.unwrap();
    coll.insert_one(doc! {"a": 1}).await.unwrap();
    coll.find_one(doc! {}).await.unwrap();
    let after = cluster.admin(doc! {"serverStatus": 1}).await.unwrap();
    assert_eq!(after.get_str("process").unwrap(), "mongos");
    let ops = |s: &mongodb::bson::Document, k: &str| {
        s.get_document("opcounters").unwrap().get_i64(k).unwrap()
    };
    assert_eq!(ops(&after, "insert") - ops(&before, "insert"), 1);
    assert_eq!(ops(&after, "query") - ops(&before, "query"), 1);
    assert!(
        after
            .get_document("connections")
            .unwrap()
            .get_i32("current")
            .unwrap()
            >= 1
    );
    assert!(
        after
            .get_document("network")
            .unwrap()
            .get_i64("bytesIn")
            .unwrap()
            > 0
    );
    assert!(after.get_f64("uptime").is_ok());
    cluster.shutdown().await;
}

#[tokio::test]
async fn unknown_commands_are_command_not_found() {
    let cluster = TestCluster::start().await;
    for name in ["atlasVersion", "noSuchCommand"] {
        let err = cluster.admin(doc! {name: 1}).await.unwrap_err();
        assert_eq!(error_code(&err), Some(59));
        match err.kind.as_ref() {
            mongodb::error::ErrorKind::Command(c) => {
                assert_eq!(c.code_name, "CommandNotFound");
                assert_eq!(c.message, format!("no such command: '{name}'"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let commands = cluster.admin(doc! {"listCommands": 1}).await.unwrap();
    let commands = commands.get_document("commands").unwrap();
    for name in ["hello", "find", "insert", "listDatabases", "isMaster"] {
        assert!(commands.contains_key(name), "listCommands lacks {name}");
    }
    cluster.shutdown().await;
}

#[tokio::test]
async fn generic_fields_do_not_break_commands() {
    let cluster = TestCluster::start().await;
    let reply = cluster
        .db("app")
        .run_command(doc! {
            "ping": 1,
            "comment": "hi",
            "maxTimeMS": 1000,
            "backpressure": "2",
            "apiVersion": "1",
            "readConcern": {"level": "local"},
            "$readPreference": {"mode": "primary"},
        })
        .await
        .unwrap();
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
    let ends = cluster.admin(doc! {"endSessions": [{"id": mongodb::bson::Binary {subtype: mongodb::bson::spec::BinarySubtype::Uuid, bytes: vec![0; 16]}}]}).await.unwrap();
    assert_eq!(ends.get_f64("ok").unwrap(), 1.0);
    cluster.shutdown().await;
}
