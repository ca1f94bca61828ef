//! Generic command arguments, names and what is not implemented, through the Rust driver: each
//! bad input gets MongoDB's error (code, codeName, message) and changes nothing; multi-document
//! transactions are refused and nothing a refused transaction wrote remains. Checked against
//! the router in-process, and against the router, a shard and the config server as separate
//! processes.

use crate::harness::{ProcessCluster, TestCluster, error_code, refused};
use crate::wire::RawConnection;
use docgrid::wire::OpMsg;
use mongodb::Client;
use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{Binary, Bson, Document, RawDocumentBuf, doc, rawdoc};
use std::net::SocketAddr;

fn uuid() -> Binary {
    Binary {
        subtype: BinarySubtype::Uuid,
        bytes: vec![1; 16],
    }
}

/// A reply on a raw connection (no driver session is added): `(code, codeName, errmsg)`, or
/// `ok` when it succeeded.
async fn raw(addr: SocketAddr, body: RawDocumentBuf) -> Result<Document, (i32, String, String)> {
    let mut connection = RawConnection::connect(addr).await;
    let reply = connection.op_msg(&OpMsg::new(body)).await.expect("a reply");
    let reply = OpMsg::decode(&reply).unwrap().body.to_document().unwrap();
    if reply.get_f64("ok") == Ok(1.0) {
        return Ok(reply);
    }
    Err((
        reply.get_i32("code").unwrap(),
        reply.get_str("codeName").unwrap().to_string(),
        reply.get_str("errmsg").unwrap().to_string(),
    ))
}

async fn session_and_transaction_fields(client: &Client, addr: SocketAddr) {
    let db = client.database("generic_session");
    // The driver adds its session's `lsid`; a wrongly typed transaction number is refused.
    assert_eq!(
        refused(&db, rawdoc! {"insert": "c", "documents": [{"a": 1}], "txnNumber": 1}).await,
        (
            14,
            "TypeMismatch".into(),
            "BSON field 'OperationSessionInfo.txnNumber' is the wrong type 'int', expected type 'long'"
                .into()
        )
    );
    assert_eq!(
        refused(&db, rawdoc! {"find": "c", "txnNumber": 1_i64})
            .await
            .0,
        50768
    );
    // A second `lsid` beside the driver's is a duplicate field.
    assert_eq!(
        refused(
            &db,
            rawdoc! {"insert": "c", "documents": [], "lsid": {"id": uuid()}}
        )
        .await,
        (
            40413,
            "IDLDuplicateField".into(),
            "BSON field 'insert.lsid' is a duplicate field".into()
        )
    );
    let on = |body: RawDocumentBuf| {
        let mut body = body;
        body.append("$db", "generic_session");
        raw(addr, body)
    };
    assert_eq!(
        on(rawdoc! {"find": "c", "lsid": {}}).await.unwrap_err(),
        (
            40414,
            "IDLFailedToParse".into(),
            "BSON field 'OperationSessionInfo.lsid.id' is missing but a required field".into()
        )
    );
    assert_eq!(
        on(rawdoc! {"find": "c", "lsid": {"id": uuid(), "extra": 1}})
            .await
            .unwrap_err()
            .2,
        "BSON field 'OperationSessionInfo.lsid.extra' is an unknown field."
    );
    assert_eq!(
        on(rawdoc! {"insert": "c", "documents": [], "txnNumber": 1_i64})
            .await
            .unwrap_err()
            .2,
        "Transaction number requires a session ID to also be specified"
    );
    assert_eq!(
        on(rawdoc! {"insert": "c", "documents": [], "lsid": {"id": uuid()}, "autocommit": false})
            .await
            .unwrap_err()
            .2,
        "'autocommit' field requires a transaction number to also be specified"
    );
    // A retryable write keeps working.
    let written = on(
        rawdoc! {"insert": "c", "documents": [{"_id": 1}], "lsid": {"id": uuid()},
        "txnNumber": 5_i64},
    )
    .await
    .unwrap();
    assert_eq!(written.get_i32("n").unwrap(), 1);
    // A transaction's statement is invisible until its commit; its abort discards it.
    let session = uuid();
    on(rawdoc! {"insert": "c", "documents": [{"_id": 2}],
    "lsid": {"id": session.clone()}, "txnNumber": 6_i64, "autocommit": false, "startTransaction": true})
    .await
    .unwrap();
    let count = || async {
        db.collection::<Document>("c")
            .count_documents(doc! {})
            .await
            .unwrap()
    };
    assert_eq!(count().await, 1);
    raw(
        addr,
        rawdoc! {"abortTransaction": 1, "lsid": {"id": session}, "txnNumber": 6_i64,
        "autocommit": false, "$db": "admin"},
    )
    .await
    .unwrap();
    assert_eq!(count().await, 1);
    assert_eq!(
        refused(&client.database("admin"), rawdoc! {"commitTransaction": 1}).await,
        (
            72,
            "InvalidOptions".into(),
            "commitTransaction can only be run within a session".into()
        )
    );
    db.drop().await.unwrap();
}

async fn concerns(client: &Client) {
    let db = client.database("generic_concerns");
    let c = db.collection::<Document>("c");
    assert_eq!(
        refused(
            &db,
            rawdoc! {"find": "c", "readConcern": {"level": "strong"}}
        )
        .await,
        (
            2,
            "BadValue".into(),
            "Enumeration value 'strong' for field 'readConcern.level' is not a valid value.".into()
        )
    );
    assert_eq!(
        refused(
            &db,
            rawdoc! {"find": "c", "readConcern": {"level": "local", "fresh": 1}}
        )
        .await
        .0,
        40415
    );
    assert_eq!(
        refused(&db, rawdoc! {"insert": "c", "documents": [{}], "readConcern": {"level": "majority"}}).await,
        (
            72,
            "InvalidOptions".into(),
            "Command insert does not support { readConcern: { level: \"majority\", provenance: \"clientSupplied\" } } :: caused by :: read concern not supported".into()
        )
    );
    // Snapshot reads answer the time they read at.
    let reply = db
        .run_command(doc! {"find": "c", "readConcern": {"level": "snapshot"}})
        .await
        .unwrap();
    assert!(
        reply
            .get_document("cursor")
            .unwrap()
            .get_timestamp("atClusterTime")
            .is_ok()
    );
    for level in ["majority", "linearizable", "available"] {
        db.run_command(doc! {"find": "c", "readConcern": {"level": level}})
            .await
            .unwrap();
    }

    assert_eq!(
        refused(
            &db,
            rawdoc! {"insert": "c", "documents": [{}], "writeConcern": {"w": 99}}
        )
        .await,
        (
            9,
            "FailedToParse".into(),
            "w has to be a non-negative number and not greater than 50; found: 99".into()
        )
    );
    assert_eq!(
        refused(
            &db,
            rawdoc! {"insert": "c", "documents": [{}], "writeConcern": {"w": 1, "q": 1}}
        )
        .await
        .2,
        "BSON field 'WriteConcernOptions.q' is an unknown field."
    );
    assert_eq!(
        refused(&db, rawdoc! {"find": "c", "writeConcern": {"w": 1}}).await,
        (
            72,
            "InvalidOptions".into(),
            "Command does not support writeConcern".into()
        )
    );
    // More nodes than a single-node shard has: written, with the error a replica set reports.
    let reply = db
        .run_command(doc! {"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 2}})
        .await
        .unwrap();
    let wce = reply.get_document("writeConcernError").unwrap();
    assert_eq!(wce.get_i32("code").unwrap(), 100);
    assert_eq!(
        wce.get_str("codeName").unwrap(),
        "UnsatisfiableWriteConcern"
    );
    assert_eq!(
        wce.get_str("errmsg").unwrap(),
        "Not enough data-bearing nodes"
    );
    let reply = db
        .run_command(
            doc! {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 1}}}],
            "writeConcern": {"w": "dc2"}},
        )
        .await
        .unwrap();
    assert_eq!(
        reply
            .get_document("writeConcernError")
            .unwrap()
            .get_str("errmsg")
            .unwrap(),
        "No write concern mode named 'dc2' found in replica set configuration"
    );
    assert_eq!(c.count_documents(doc! {"x": 1}).await.unwrap(), 1);
    let reply = db
        .run_command(
            doc! {"createIndexes": "c", "indexes": [{"key": {"x": 1}, "name": "x_1"}],
            "writeConcern": {"w": 3}},
        )
        .await
        .unwrap();
    assert_eq!(
        reply
            .get_document("writeConcernError")
            .unwrap()
            .get_i32("code")
            .unwrap(),
        100
    );
    db.drop().await.unwrap();
}

async fn api_and_metadata(client: &Client) {
    let db = client.database("generic_api");
    assert_eq!(
        refused(&db, rawdoc! {"ping": 1, "apiVersion": "2"}).await,
        (
            322,
            "APIVersionError".into(),
            "Cannot accept API version 2".into()
        )
    );
    assert_eq!(
        refused(&db, rawdoc! {"ping": 1, "apiStrict": true}).await.0,
        4886600
    );
    let (code, name, message) = refused(
        &db,
        rawdoc! {"distinct": "c", "key": "a", "apiVersion": "1", "apiStrict": true},
    )
    .await;
    assert_eq!((code, name.as_str()), (323, "APIStrictError"));
    assert!(message.contains("command distinct is not in API Version 1"));
    db.run_command(doc! {"find": "c", "apiVersion": "1", "apiStrict": true})
        .await
        .unwrap();
    assert_eq!(
        refused(
            &db,
            rawdoc! {"find": "c", "$readPreference": {"mode": "fastest"}}
        )
        .await
        .0,
        2
    );
    assert_eq!(
        refused(&db, rawdoc! {"find": "c", "$maxTimeMs": 10})
            .await
            .2,
        "no such command option $maxTimeMs; use maxTimeMS instead"
    );
    assert_eq!(
        refused(&db, rawdoc! {"find": "c", "filter": {}, "filter": {"a": 1}}).await,
        (
            40413,
            "IDLDuplicateField".into(),
            "BSON field 'find.filter' is a duplicate field".into()
        )
    );
}

async fn names(client: &Client) {
    let message = |db: &'static str, body: RawDocumentBuf| async move {
        refused(&client.database(db), body).await
    };
    assert_eq!(
        message("a b", rawdoc! {"ping": 1}).await,
        (
            73,
            "InvalidNamespace".into(),
            "Invalid database name: 'a b'".into()
        )
    );
    assert_eq!(
        message("a b", rawdoc! {"listCollections": 1}).await.2,
        "Invalid database name: 'a b'"
    );
    assert_eq!(
        message("a b", rawdoc! {"find": "c"}).await.2,
        "Invalid namespace specified 'a b.c'"
    );
    assert_eq!(
        message("a.b", rawdoc! {"find": "c"}).await.2,
        "'.' is an invalid character in a db name: a.b"
    );
    let long: &'static str = Box::leak("d".repeat(64).into_boxed_str());
    assert_eq!(
        message(long, rawdoc! {"insert": "c", "documents": [{}]})
            .await
            .2,
        "db name must be at most 63 characters, found: 64"
    );
    assert_eq!(
        message("generic_names", rawdoc! {"count": ""}).await.2,
        "Invalid namespace specified 'generic_names.'"
    );
    assert_eq!(
        message("generic_names", rawdoc! {"find": ".x"}).await.2,
        "Collection names cannot start with '.': .x"
    );
    assert_eq!(
        message(
            "generic_names",
            rawdoc! {"insert": "a$b", "documents": [{}]}
        )
        .await
        .2,
        "Invalid collection name: a$b"
    );
    assert_eq!(
        message("generic_names", rawdoc! {"create": "system.foo"})
            .await
            .2,
        "Invalid system namespace: generic_names.system.foo"
    );
    assert_eq!(
        message(
            "generic_names",
            rawdoc! {"insert": "system.views", "documents": [{}]}
        )
        .await
        .2,
        "cannot write to generic_names.system.views"
    );
    let long_coll = "x".repeat(250);
    assert_eq!(
        message(
            "generic_names",
            rawdoc! {"insert": long_coll.clone(), "documents": [{}]}
        )
        .await
        .2,
        format!(
            "Fully qualified namespace is too long. Namespace: generic_names.{long_coll} Max: 255"
        )
    );
    assert_eq!(
        message("generic_names$", rawdoc! {"create": "c"}).await.2,
        "Invalid namespace: generic_names$.c"
    );
    // Refused writes created nothing; reading an odd but valid name finds nothing.
    let listed = client.list_database_names().await.unwrap();
    assert!(
        !listed.iter().any(|d| d.starts_with("generic_names")),
        "{listed:?}"
    );
    let found = client
        .database("generic_names")
        .collection::<Document>("a$b")
        .count_documents(doc! {})
        .await
        .unwrap();
    assert_eq!(found, 0);
}

/// Options commands used to accept and ignore: honoured, or refused with MongoDB's error.
async fn options_once_ignored(client: &Client) {
    let db = client.database("generic_options");
    let c = db.collection::<Document>("c");
    c.insert_many([doc! {"a": 1}, doc! {"a": 2}, doc! {"b": 1}])
        .await
        .unwrap();
    db.run_command(
        doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1", "sparse": true}]},
    )
    .await
    .unwrap();
    // A hinted count reads the hinted index: a sparse one counts its entries, as in MongoDB.
    let n = db
        .run_command(doc! {"count": "c", "hint": "a_1"})
        .await
        .unwrap();
    assert_eq!(n.get_i32("n").unwrap(), 2);
    for body in [
        rawdoc! {"count": "c", "hint": "nope"},
        rawdoc! {"distinct": "c", "key": "a", "hint": {"zz": 1}},
    ] {
        let (code, _, message) = refused(&db, body).await;
        assert_eq!(code, 2, "{message}");
        assert!(message.contains("hint provided does not correspond to an existing index"));
    }
    assert_eq!(
        refused(&db, rawdoc! {"createIndexes": "c", "indexes": [{"key": {"b": 1}, "name": "b_1"}], "commitQuorum": 2}).await.0,
        278
    );
    assert_eq!(
        refused(&db, rawdoc! {"createIndexes": "c", "indexes": [{"key": {"b": 1}, "name": "b_1"}], "commitQuorum": {}}).await,
        (
            9,
            "FailedToParse".into(),
            "commitQuorum has to be a number or a string".into()
        )
    );
    assert_eq!(
        refused(&db, rawdoc! {"createIndexes": "c", "indexes": [{"key": {"b": 1}, "name": "b_1"}], "commitQuorum": "dc2"}).await.2,
        "No write concern mode named 'dc2' found in replica set configuration"
    );
    db.run_command(doc! {"createIndexes": "c", "indexes": [{"key": {"b": 1}, "name": "b_1"}], "commitQuorum": "majority"})
        .await
        .unwrap();
    let reply = db
        .run_command(doc! {"insert": "c", "documents": [{}], "writeConcern": {"w": {"dc": 1}}})
        .await
        .unwrap();
    let wce = reply.get_document("writeConcernError").unwrap();
    assert_eq!(wce.get_str("codeName").unwrap(), "NoSuchKey");
    assert_eq!(
        wce.get_str("errmsg").unwrap(),
        "No replica set tag key dc in config"
    );
    db.drop().await.unwrap();
}

#[tokio::test]
async fn every_class_through_the_router() {
    let cluster = TestCluster::start().await;
    session_and_transaction_fields(&cluster.client, cluster.addr).await;
    concerns(&cluster.client).await;
    api_and_metadata(&cluster.client).await;
    names(&cluster.client).await;
    options_once_ignored(&cluster.client).await;
    // A driver sends its own `$clusterTime` once it has seen one (every reply gossips), so a
    // malformed one goes over a plain connection.
    let reply = crate::wire::raw_command(
        cluster.addr,
        doc! {"find": "c", "$clusterTime": 1, "$db": "generic_api"},
    )
    .await;
    assert_eq!(reply.get_i32("code").unwrap(), 10065);
    assert_eq!(
        reply.get_str("errmsg").unwrap(),
        "invalid parameter: expected an object ($clusterTime)"
    );
    let local = refused(&cluster.db("local"), rawdoc! {"ping": 1}).await;
    assert_eq!(
        local,
        (
            20,
            "IllegalOperation".into(),
            "Can't use 'local' database through mongos".into()
        )
    );
    cluster.shutdown().await;
}

/// The same checks on every role: the router, a shard and the config server as processes.
#[tokio::test]
async fn every_role_as_a_separate_process() {
    let cluster = ProcessCluster::start(2).await;
    let router = cluster.client().await;
    session_and_transaction_fields(
        &router,
        SocketAddr::from(([127, 0, 0, 1], cluster.router_port)),
    )
    .await;
    names(&router).await;
    for (direct, shard) in [
        (cluster.shard_client(0).await, true),
        (cluster.config_client().await, false),
    ] {
        let db = direct.database("generic_direct");
        assert_eq!(
            refused(
                &db,
                rawdoc! {"insert": "c", "documents": [{}], "txnNumber": 1}
            )
            .await
            .0,
            14
        );
        assert_eq!(
            refused(
                &db,
                rawdoc! {"find": "c", "readConcern": {"level": "strong"}}
            )
            .await
            .0,
            2
        );
        assert_eq!(
            refused(&db, rawdoc! {"ping": 1, "apiVersion": "2"}).await.0,
            322
        );
        assert_eq!(
            refused(&db, rawdoc! {"find": "c", "filter": {}, "filter": {}})
                .await
                .0,
            40413
        );
        assert_eq!(
            refused(&direct.database("a b"), rawdoc! {"ping": 1})
                .await
                .2,
            "Invalid database name: 'a b'"
        );
        // A node's own `local` is its to read.
        direct
            .database("local")
            .run_command(doc! {"ping": 1})
            .await
            .unwrap();
        // A shard runs a transaction sent to it directly; the config server refuses one.
        let mut session = direct.start_session().await.unwrap();
        session.start_transaction().await.unwrap();
        let inserted = db
            .collection::<Document>("c")
            .insert_one(doc! {"x": 1})
            .session(&mut session)
            .await;
        match shard {
            true => assert!(inserted.is_ok(), "{inserted:?}"),
            false => assert_eq!(error_code(&inserted.unwrap_err()), Some(238)),
        }
        session.abort_transaction().await.unwrap();
        assert_eq!(
            db.collection::<Document>("c")
                .count_documents(doc! {})
                .await
                .unwrap(),
            0
        );
    }
    let shard = cluster.shard_client(0).await;
    let reply = shard
        .database("generic_direct")
        .run_command(doc! {"insert": "w", "documents": [{}], "writeConcern": {"w": 5}})
        .await
        .unwrap();
    assert_eq!(
        reply.get_document("writeConcernError").unwrap().get("code"),
        Some(&Bson::Int32(100))
    );
}
