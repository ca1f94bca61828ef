//! The driver's floor: the official driver's `find_one({_id})` against a stub server on
//! loopback that answers every command at once with a fixed reply and does no work. What a
//! point read costs this machine on the client's side and on the wire — the least W2 and W3
//! can cost whatever the server does — measured in the same run as they are. The stub gossips
//! `$clusterTime` and `operationTime` as MongoDB's sharded clusters (and docgrid) do, or not, as
//! a standalone mongod: the driver hands every gossiped time to its topology worker and waits
//! for it, a cost on its side of every operation.

use crate::measure::Timing;
use crate::ops::{self, Coll};
use docgrid::wire::{Request, decode_request, encode_reply, read_frame};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// `ops` `find_one`s from `clients` concurrent clients against the stub, whose replies carry
/// `$clusterTime` when `gossip`.
pub async fn find_one(ops: usize, clients: usize, gossip: bool) -> anyhow::Result<Timing> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let server = tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(serve(socket, gossip));
        }
    });
    let client = crate::processes::client(port, true).await?;
    let coll: Coll = client.database("bench").collection("items");
    let timing = ops::point_reads(&coll, ops, clients, |i| {
        mongodb::bson::doc! {"_id": ops::uniform_key(i, 1_000_000)}
    })
    .await;
    client.shutdown().await;
    server.abort();
    timing
}

async fn serve(mut socket: TcpStream, gossip: bool) -> anyhow::Result<()> {
    socket.set_nodelay(true)?;
    let found = found_reply()?;
    let ok = bson::rawdoc! {"ok": 1.0};
    let mut reply_id = 0;
    while let Some(frame) = read_frame(&mut socket).await? {
        let request = decode_request(&frame)?;
        let body = match &request {
            Request::Msg { msg, .. } => &msg.body,
            Request::Query { query, .. } => &query.query,
        };
        let name = body.iter().next().transpose()?.map(|(k, _)| k.to_string());
        let mut reply = match name.as_deref() {
            Some("hello" | "isMaster" | "ismaster") => hello(),
            Some("find") => found.clone(),
            _ => ok.clone(),
        };
        if gossip {
            let time = bson::Timestamp {
                time: 1_700_000_000,
                increment: 1,
            };
            reply.append("operationTime", time);
            reply.append(
                "$clusterTime",
                bson::rawdoc! {
                    "clusterTime": time,
                    "signature": {
                        "hash": bson::Binary {subtype: bson::spec::BinarySubtype::Generic, bytes: vec![0; 20]},
                        "keyId": 0_i64,
                    },
                },
            );
        }
        reply_id += 1;
        let bytes = encode_reply(&request.reply_to(), &reply, reply_id, false);
        socket.write_all(&bytes).await?;
    }
    Ok(())
}

/// A standalone server's handshake reply, without `topologyVersion` so that the driver polls
/// instead of holding an awaitable `hello` open.
fn hello() -> bson::RawDocumentBuf {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    bson::rawdoc! {
        "isWritablePrimary": true,
        "maxBsonObjectSize": 16 * 1024 * 1024,
        "maxMessageSizeBytes": 48_000_000,
        "maxWriteBatchSize": 100_000,
        "localTime": bson::DateTime::from_millis(now),
        "logicalSessionTimeoutMinutes": 30,
        "connectionId": 1,
        "minWireVersion": 0,
        "maxWireVersion": 21,
        "readOnly": false,
        "ok": 1.0,
    }
}

/// The reply of a one-document `find`, with a document of the workloads' shape.
fn found_reply() -> anyhow::Result<bson::RawDocumentBuf> {
    let doc = bson::RawDocumentBuf::from_bytes(crate::data::make_doc(1, 1).into_bytes())?;
    let mut batch = bson::RawArrayBuf::new();
    batch.push(doc);
    Ok(bson::rawdoc! {
        "cursor": {"firstBatch": batch, "id": 0_i64, "ns": "bench.items"},
        "ok": 1.0,
    })
}
