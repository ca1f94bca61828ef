//! Signed `$clusterTime` with authentication on: replies carry a real signature (a key of the
//! config server's `admin.system.keys`), a driver's causally consistent session works across
//! routers (each checks the time the other signed), and a client without `advanceClusterTime`
//! cannot move a router's clock with a tampered time (TimeProofMismatch 204) or an unknown key
//! (KeyNotFound 211).

use crate::auth::{client, run};
use crate::harness::{TestCluster, node_options};
use crate::wire::{RawConnection, raw_command};
use bson::{Binary, Document, Timestamp, doc, spec::BinarySubtype};
use mongodb::Client;
use std::time::Duration;

/// The `$clusterTime` of a ping, once the router has read its signing keys.
async fn signed_time(client: &Client) -> Document {
    for _ in 0..100 {
        // Until the router has read its keys it gossips no time at all, as MongoDB.
        let reply = run(client, "admin", doc! {"ping": 1}).await.unwrap();
        if let Ok(gossip) = reply.get_document("$clusterTime") {
            let signature = gossip.get_document("signature").unwrap();
            assert_ne!(signature.get_i64("keyId").unwrap(), 0);
            return gossip.clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the router never signed its cluster time");
}

fn with_time(gossip: &Document, time: Timestamp) -> Document {
    let mut changed = gossip.clone();
    changed.insert("clusterTime", time);
    changed
}

#[tokio::test]
async fn signed_cluster_time_is_checked_across_routers() {
    let mut options = node_options();
    options.auth = true;
    options.initial_user = Some(("root".into(), "example".into()));
    let cluster = TestCluster::start_with_options(options, 2, 2).await;
    let (first, second) = (cluster.routers[0], cluster.routers[1]);
    let writer = client(first, "root:example", "&authSource=admin").await;
    let reader = client(second, "root:example", "&authSource=admin").await;
    let gossip = signed_time(&writer).await;
    signed_time(&reader).await;
    let hash = gossip
        .get_document("signature")
        .unwrap()
        .get_binary_generic("hash")
        .unwrap();
    assert_eq!(hash.len(), 20);
    assert_ne!(hash, &vec![0u8; 20]);

    // A causally consistent session: the second router checks the time the first signed.
    let coll = writer.database("signed").collection::<Document>("c");
    let mut session = writer
        .start_session()
        .causal_consistency(true)
        .await
        .unwrap();
    coll.insert_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap();
    let mut other = reader
        .start_session()
        .causal_consistency(true)
        .await
        .unwrap();
    other.advance_cluster_time(session.cluster_time().unwrap());
    other.advance_operation_time(session.operation_time().unwrap());
    let found = reader
        .database("signed")
        .collection::<Document>("c")
        .find_one(doc! {"_id": 1})
        .session(&mut other)
        .await
        .unwrap();
    assert_eq!(found, Some(doc! {"_id": 1}));

    // A genuine time is accepted as it is, from any client.
    let genuine = session.cluster_time().unwrap();
    let genuine = bson::to_document(genuine).unwrap();
    let reply = raw_command(
        second,
        doc! {"ping": 1, "$db": "admin", "$clusterTime": genuine.clone()},
    )
    .await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");
    // A later time under the same signature, or a key the cluster does not have, is not.
    let time = genuine.get_timestamp("clusterTime").unwrap();
    let ahead = Timestamp {
        time: time.time + 5,
        increment: time.increment,
    };
    let reply = raw_command(
        second,
        doc! {"ping": 1, "$db": "admin", "$clusterTime": with_time(&genuine, ahead)},
    )
    .await;
    assert_eq!(reply.get_i32("code").unwrap(), 204, "{reply}");
    assert_eq!(reply.get_str("codeName").unwrap(), "TimeProofMismatch");
    assert_eq!(
        reply.get_str("errmsg").unwrap(),
        "Proof does not match the cluster time"
    );
    let unknown = doc! {
        "clusterTime": ahead,
        "signature": {
            "hash": Binary {subtype: BinarySubtype::Generic, bytes: vec![0; 20]},
            "keyId": 0_i64,
        },
    };
    let reply = raw_command(
        first,
        doc! {"ping": 1, "$db": "admin", "$clusterTime": unknown},
    )
    .await;
    assert_eq!(reply.get_i32("code").unwrap(), 211, "{reply}");
    assert_eq!(reply.get_str("codeName").unwrap(), "KeyNotFound");
    // Claiming to be a cluster member changes nothing.
    let mut claimed = RawConnection::connect(second).await;
    let internal = doc! {"minWireVersion": 0, "maxWireVersion": 25};
    claimed
        .command(doc! {"hello": 1, "internalClient": internal, "$db": "admin"})
        .await;
    let reply = claimed
        .command(doc! {"ping": 1, "$db": "admin", "$clusterTime": with_time(&genuine, ahead)})
        .await;
    assert_eq!(reply.get_i32("code").unwrap(), 204, "{reply}");
    // The refused times did not move the clock.
    let now = run(&reader, "admin", doc! {"ping": 1}).await.unwrap();
    let now = now.get_timestamp("operationTime").unwrap();
    assert!((now.time, now.increment) < (ahead.time, ahead.increment));
    cluster.shutdown().await;
}

#[tokio::test]
async fn signed_cluster_time_keys_rotate() {
    let mut options = node_options();
    options.auth = true;
    options.initial_user = Some(("root".into(), "example".into()));
    options
        .parameters
        .push(("KeysRotationIntervalSec".into(), "2".into()));
    let cluster = TestCluster::start_with_options(options, 1, 1).await;
    let root = client(cluster.addr, "root:example", "&authSource=admin").await;
    let key_id = |gossip: &Document| {
        gossip
            .get_document("signature")
            .unwrap()
            .get_i64("keyId")
            .unwrap()
    };
    let first = key_id(&signed_time(&root).await);
    // The current key expires 2 s of cluster time after it was made (writes move the cluster
    // time on): the next one signs, and a later one is made for it.
    let mut rotated = None;
    for i in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        run(
            &root,
            "app",
            doc! {"insert": "c", "documents": [{"_id": i}]},
        )
        .await
        .unwrap();
        let now = key_id(&signed_time(&root).await);
        if now != first {
            rotated = Some(now);
            break;
        }
    }
    let rotated = rotated.expect("the signing key rotates");
    assert!(rotated > first);
    let keys = run(
        &root,
        "admin",
        doc! {"find": "system.keys", "sort": {"expiresAt": 1}},
    )
    .await;
    // The keys are the cluster's own: not even root reads them.
    assert_eq!(crate::harness::error_code(&keys.unwrap_err()), Some(13));
    cluster.shutdown().await;
}
