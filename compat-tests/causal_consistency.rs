//! The logical clock through real drivers: every reply gossips `$clusterTime` and
//! `operationTime`, a causally consistent session reading through a second router after
//! `advanceClusterTime` sees its write, `afterClusterTime` is validated as MongoDB does, and a
//! read after a future time moves the shards' clocks past it — in-process and with separate
//! processes.

use crate::harness::{ProcessCluster, TestCluster, error_code};
use bson::{Bson, Document, Timestamp, doc};
use mongodb::Client;
use mongodb::options::ReadConcern;

fn gossiped(reply: &Document) -> (Timestamp, Timestamp) {
    let cluster = reply
        .get_document("$clusterTime")
        .unwrap_or_else(|_| panic!("no $clusterTime in {reply}"));
    let signature = cluster.get_document("signature").unwrap();
    match signature.get("hash") {
        Some(Bson::Binary(hash)) => assert_eq!(hash.bytes.len(), 20),
        other => panic!("signature hash {other:?}"),
    }
    assert_eq!(signature.get_i64("keyId").unwrap(), 0);
    (
        cluster.get_timestamp("clusterTime").unwrap(),
        reply.get_timestamp("operationTime").unwrap(),
    )
}

/// A command as given (the driver's `run_command` applies its own read concern).
async fn raw(db: &mongodb::Database, command: Document) -> mongodb::error::Result<Document> {
    db.run_raw_command(bson::RawDocumentBuf::from_document(&command).unwrap())
        .await
}

fn later(a: Timestamp, b: Timestamp) -> bool {
    (a.time, a.increment) > (b.time, b.increment)
}

/// Writes through `writer`, reads through `reader` in a session that learned the writer's
/// times: the read sees the write.
async fn read_your_writes_across_routers(writer: &Client, reader: &Client, db: &str) {
    let coll = writer.database(db).collection::<Document>("c");
    let mut session = writer
        .start_session()
        .causal_consistency(true)
        .await
        .unwrap();
    coll.insert_one(doc! {"_id": 1, "v": "first"})
        .session(&mut session)
        .await
        .unwrap();
    let cluster_time = session.cluster_time().cloned().expect("a cluster time");
    let operation_time = session.operation_time().expect("an operation time");

    let mut other = reader
        .start_session()
        .causal_consistency(true)
        .await
        .unwrap();
    other.advance_cluster_time(&cluster_time);
    other.advance_operation_time(operation_time);
    let found = reader
        .database(db)
        .collection::<Document>("c")
        .find_one(doc! {"_id": 1})
        .session(&mut other)
        .await
        .unwrap();
    assert_eq!(found, Some(doc! {"_id": 1, "v": "first"}));
    assert!(!later(operation_time, other.operation_time().unwrap()));
}

/// Every reply, successful or not, gossips; times only move forward, and a write's operation
/// time is later than the time the client had before it.
async fn replies_gossip(client: &Client, db: &str) {
    let admin = client.database("admin");
    let (cluster, operation) = gossiped(&admin.run_command(doc! {"ping": 1}).await.unwrap());
    assert!(!later(operation, cluster));
    let database = client.database(db);
    let reply = database
        .run_command(doc! {"insert": "g", "documents": [{"x": 1}]})
        .await
        .unwrap();
    let (_, written) = gossiped(&reply);
    assert!(later(written, cluster), "{written:?} after {cluster:?}");
    // An error reply gossips too (the driver's error keeps the raw reply out of reach, so ask
    // for it with a command that fails inside a successful bulk reply).
    let reply = database
        .run_command(doc! {"insert": "g", "documents": [{"_id": 1}, {"_id": 1}]})
        .await
        .unwrap();
    assert!(reply.get_array("writeErrors").is_ok());
    let (_, after) = gossiped(&reply);
    assert!(!later(written, after));
}

/// `afterClusterTime` checked as MongoDB checks it (a driver always sends its own
/// `$clusterTime`: the bounds on a gossiped one are unit-tested in `command::generic`).
async fn cluster_time_arguments(client: &Client, db: &str) {
    let database = client.database(db);
    let code = |r: mongodb::error::Result<Document>| error_code(&r.unwrap_err());
    assert_eq!(
        code(
            raw(
                &database,
                doc! {"find": "c", "readConcern": {"level": "bogus"}}
            )
            .await
        ),
        Some(2)
    );
    assert_eq!(
        code(
            raw(
                &database,
                doc! {"find": "c", "readConcern": {"afterClusterTime": 5}}
            )
            .await
        ),
        Some(14)
    );
    assert_eq!(
        code(
            raw(&database, doc! {"find": "c", "readConcern": {"level": "linearizable", "afterClusterTime": Timestamp {time: 1, increment: 1}}})
                .await
        ),
        Some(72)
    );
    assert_eq!(
        code(
            raw(&database, doc! {"find": "c", "readConcern": {"afterClusterTime": Timestamp {time: 0, increment: 0}}})
                .await
        ),
        Some(72)
    );
    let reply = raw(&database, doc! {"insert": "c", "documents": [{"x": 1}]})
        .await
        .unwrap();
    let written = gossiped(&reply).1;
    // A time no node has reached: MongoDB's error. The time the client has seen: answered.
    let ahead = Timestamp {
        time: (bson::DateTime::now().timestamp_millis() / 1000) as u32 + 60,
        increment: 5,
    };
    assert_eq!(
        code(
            raw(&database, doc! {"find": "c", "filter": {}, "readConcern": {"level": "majority", "afterClusterTime": ahead}})
                .await
        ),
        Some(72)
    );
    let reply = raw(
        &database,
        doc! {"find": "c", "filter": {}, "readConcern": {"afterClusterTime": written}},
    )
    .await
    .unwrap();
    assert_eq!(
        reply
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()
            .len(),
        1
    );
    assert!(!later(written, gossiped(&reply).1));

    // The driver sends `afterClusterTime` with its own `readConcern` level too.
    let mut session = client
        .start_session()
        .causal_consistency(true)
        .await
        .unwrap();
    let coll = database.collection::<Document>("c");
    coll.insert_one(doc! {"_id": "s"})
        .session(&mut session)
        .await
        .unwrap();
    let found = coll
        .find_one(doc! {"_id": "s"})
        .read_concern(ReadConcern::majority())
        .session(&mut session)
        .await
        .unwrap();
    assert!(found.is_some());
}

#[tokio::test]
async fn causal_consistency_in_process() {
    let cluster = TestCluster::start_with(2, 2).await;
    let second = cluster.router_client(1).await;
    replies_gossip(&cluster.client, "cc_gossip").await;
    read_your_writes_across_routers(&cluster.client, &second, "cc_routers").await;
    cluster_time_arguments(&cluster.client, "cc_args").await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn causal_consistency_across_processes() {
    let mut cluster = ProcessCluster::start(2).await;
    let first = cluster.client().await;
    let second = cluster.add_router().await;
    replies_gossip(&first, "cc_gossip").await;
    read_your_writes_across_routers(&first, &second, "cc_routers").await;
    cluster_time_arguments(&second, "cc_args").await;
    // Shards and the config server gossip too (a driver connected to them directly).
    for client in [cluster.shard_client(0).await, cluster.config_client().await] {
        gossiped(
            &client
                .database("admin")
                .run_command(doc! {"ping": 1})
                .await
                .unwrap(),
        );
    }
}
