//! Commands declared once: unknown fields refused (`IDLUnknownField`) on the router and on a
//! shard while generic arguments and drivers' fields pass, and the checks router and shards
//! share agreeing with MongoDB 8.0 (a negative `limit`, an empty write batch) on sharded and
//! unsharded collections.

use crate::harness::{ProcessCluster, TestCluster, refused};
use mongodb::Client;
use mongodb::bson::{Document, doc, rawdoc};

fn unknown(command: &str, field: &str) -> (i32, String, String) {
    (
        40415,
        "IDLUnknownField".into(),
        format!("BSON field '{command}.{field}' is an unknown field."),
    )
}

/// Unknown fields of several commands refused, known and generic ones accepted.
async fn unknown_fields(client: &Client) {
    let db = client.database("unknown_fields");
    db.run_command(doc! {"insert": "c", "documents": [{"_id": 1}]})
        .await
        .unwrap();
    let cases = [
        (rawdoc! {"find": "c", "filterr": {}}, "find", "filterr"),
        (
            rawdoc! {"aggregate": "c", "pipeline": [], "cursor": {}, "x": 1},
            "aggregate",
            "x",
        ),
        (rawdoc! {"count": "c", "quer": {}}, "count", "quer"),
        (
            rawdoc! {"distinct": "c", "key": "a", "bogus": 1},
            "distinct",
            "bogus",
        ),
        (
            rawdoc! {"insert": "c", "documents": [{}], "ordred": true},
            "insert",
            "ordred",
        ),
        (
            rawdoc! {"update": "c", "updates": [{"q": {}, "u": {"$set": {"a": 1}}}], "x": 1},
            "update",
            "x",
        ),
        (
            rawdoc! {"delete": "c", "deletes": [{"q": {}, "limit": 0}], "x": 1},
            "delete",
            "x",
        ),
        (
            rawdoc! {"findAndModify": "c", "query": {}, "remove": true, "x": 1},
            "findAndModify",
            "x",
        ),
        (rawdoc! {"listIndexes": "c", "x": 1}, "listIndexes", "x"),
        (
            rawdoc! {"listCollections": 1, "x": 1},
            "listCollections",
            "x",
        ),
        (rawdoc! {"create": "d", "x": 1}, "create", "x"),
        (rawdoc! {"drop": "d", "x": 1}, "drop", "x"),
        (
            rawdoc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}], "x": 1},
            "createIndexes",
            "x",
        ),
        (
            rawdoc! {"dropIndexes": "c", "index": "a_1", "x": 1},
            "dropIndexes",
            "x",
        ),
    ];
    for (body, command, field) in cases {
        assert_eq!(
            refused(&db, body).await,
            unknown(command, field),
            "{command}"
        );
    }
    // Nothing ran: the document is still alone, `d` was not created.
    let found = db.run_command(doc! {"count": "c"}).await.unwrap();
    assert_eq!(found.get_i32("n").unwrap(), 1);
    // Declared and generic fields pass, as drivers send them.
    db.run_command(doc! {
        "find": "c", "filter": {}, "sort": {"_id": 1}, "projection": {"_id": 1}, "hint": {"_id": 1},
        "skip": 0, "limit": 5, "batchSize": 2, "singleBatch": false, "comment": "c",
        "maxTimeMS": 1000, "readConcern": {"level": "local"}, "let": {"x": 1},
        "allowDiskUse": true, "noCursorTimeout": false, "returnKey": false,
        "showRecordId": false, "collation": {"locale": "simple"},
        "$readPreference": {"mode": "primary"},
    })
    .await
    .unwrap();
    db.run_command(doc! {
        "aggregate": "c", "pipeline": [{"$match": {}}], "cursor": {"batchSize": 1},
        "allowDiskUse": true, "let": {}, "comment": "c", "bypassDocumentValidation": false,
    })
    .await
    .unwrap();
    db.run_command(doc! {
        "insert": "c", "documents": [{"_id": 2}], "ordered": true,
        "bypassDocumentValidation": false, "writeConcern": {"w": 1}, "comment": "c",
    })
    .await
    .unwrap();
}

/// A negative `limit` and an empty batch get MongoDB's errors, sharded collection or not.
async fn agreed_checks(client: &Client) {
    let db_name = "agreed_checks";
    let admin = client.database("admin");
    admin
        .run_command(doc! {"enableSharding": db_name})
        .await
        .unwrap();
    admin
        .run_command(
            doc! {"shardCollection": format!("{db_name}.sharded"), "key": {"_id": "hashed"}},
        )
        .await
        .unwrap();
    let db = client.database(db_name);
    for coll in ["sharded", "unsharded"] {
        db.run_command(doc! {"insert": coll, "documents": [{"_id": 1}]})
            .await
            .unwrap();
        assert_eq!(
            refused(&db, rawdoc! {"find": coll, "limit": -1}).await,
            (
                51024,
                "Location51024".into(),
                "BSON field 'limit' value must be >= 0, actual value '-1'".into()
            ),
            "{coll}"
        );
        for (body, what) in [
            (rawdoc! {"insert": coll, "documents": []}, "insert"),
            (rawdoc! {"update": coll, "updates": []}, "update"),
            (rawdoc! {"delete": coll, "deletes": []}, "delete"),
        ] {
            assert_eq!(
                refused(&db, body).await,
                (
                    16,
                    "InvalidLength".into(),
                    "Write batch sizes must be between 1 and 100000. Got 0 operations.".into()
                ),
                "{what} on {coll}"
            );
        }
    }
}

#[tokio::test]
async fn through_the_router() {
    let cluster = TestCluster::start().await;
    unknown_fields(&cluster.client).await;
    agreed_checks(&cluster.client).await;
    cluster.shutdown().await;
}

/// A shard, connected to directly, refuses unknown fields too.
#[tokio::test]
async fn on_a_shard() {
    let cluster = ProcessCluster::start(1).await;
    let shard = cluster.shard_client(0).await;
    let db = shard.database("unknown_fields_shard");
    assert_eq!(
        refused(&db, rawdoc! {"find": "c", "filterr": {}}).await,
        unknown("find", "filterr")
    );
    assert_eq!(
        refused(&db, rawdoc! {"insert": "c", "documents": [{}], "x": 1}).await,
        unknown("insert", "x")
    );
    let reply: Document = db
        .run_command(doc! {"find": "c", "filter": {}, "limit": 1})
        .await
        .unwrap();
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
}

/// The server, session, transaction, `dbStats` and `bulkWrite` commands MongoDB 8.0 declares
/// strict refuse an unknown field through the router; their declared fields, and the fields
/// the driver adds, pass; commands MongoDB leaves lenient still ignore one.
#[tokio::test]
async fn strict_server_commands_through_the_router() {
    let cluster = TestCluster::start().await;
    let client = &cluster.client;
    let db = client.database("strict_server_commands");
    let admin = client.database("admin");
    db.run_command(doc! {"insert": "c", "documents": [{"_id": 1}]})
        .await
        .unwrap();
    let on_db = [
        (rawdoc! {"dbStats": 1, "bogus": 1}, "dbStats"),
        (rawdoc! {"dbstats": 1, "bogus": 1}, "dbStats"),
        (rawdoc! {"ping": 1, "bogus": 1}, "ping"),
        (rawdoc! {"buildInfo": 1, "bogus": 1}, "buildInfo"),
        (rawdoc! {"hostInfo": 1, "bogus": 1}, "hostInfo"),
        (
            rawdoc! {"connectionStatus": 1, "bogus": 1},
            "connectionStatus",
        ),
        (rawdoc! {"endSessions": [], "bogus": 1}, "endSessions"),
        (
            rawdoc! {"refreshSessions": [], "bogus": 1},
            "refreshSessions",
        ),
    ];
    for (body, command) in on_db {
        assert_eq!(
            refused(&db, body).await,
            unknown(command, "bogus"),
            "{command}"
        );
    }
    let on_admin = [
        (rawdoc! {"getLog": "global", "bogus": 1}, "getLog"),
        (rawdoc! {"getCmdLineOpts": 1, "bogus": 1}, "getCmdLineOpts"),
        (
            rawdoc! {"abortTransaction": 1, "bogus": 1},
            "abortTransaction",
        ),
        (
            rawdoc! {
                "bulkWrite": 1, "ops": [{"insert": 0, "document": {"_id": 2}}],
                "nsInfo": [{"ns": "strict_server_commands.c"}], "bogus": 1,
            },
            "bulkWrite",
        ),
    ];
    for (body, command) in on_admin {
        assert_eq!(
            refused(&admin, body).await,
            unknown(command, "bogus"),
            "{command}"
        );
    }
    // The refused bulkWrite inserted nothing.
    let found = db.run_command(doc! {"count": "c"}).await.unwrap();
    assert_eq!(found.get_i32("n").unwrap(), 1);

    // Declared and generic fields pass.
    let stats = db
        .run_command(doc! {"dbStats": 1, "scale": 1024, "freeStorage": 0, "comment": "c"})
        .await
        .unwrap();
    assert_eq!(stats.get_i64("scaleFactor").unwrap(), 1024);
    for body in [
        doc! {"ping": 1, "comment": "c", "$readPreference": {"mode": "primaryPreferred"}},
        doc! {"buildInfo": 1, "maxTimeMS": 1000},
        doc! {"hostInfo": 1},
        doc! {"connectionStatus": 1, "showPrivileges": true},
        doc! {"endSessions": []},
        doc! {"refreshSessions": []},
    ] {
        db.run_command(body.clone())
            .await
            .unwrap_or_else(|e| panic!("{body}: {e}"));
    }
    admin
        .run_command(doc! {"getLog": "startupWarnings", "comment": "c"})
        .await
        .unwrap();
    admin.run_command(doc! {"getCmdLineOpts": 1}).await.unwrap();
    let reply = admin
        .run_command(doc! {
            "bulkWrite": 1, "ops": [{"insert": 0, "document": {"_id": 3}}],
            "nsInfo": [{"ns": "strict_server_commands.c"}], "ordered": true,
            "errorsOnly": false, "bypassDocumentValidation": false, "let": {},
        })
        .await
        .unwrap();
    assert_eq!(reply.get_i32("nInserted").unwrap(), 1);

    // Lenient in MongoDB 8.0 too: an unknown field is ignored.
    db.run_command(doc! {"hello": 1, "bogus": 1}).await.unwrap();
    db.run_command(doc! {"listCommands": 1, "bogus": 1})
        .await
        .unwrap();
    cluster.shutdown().await;
}
