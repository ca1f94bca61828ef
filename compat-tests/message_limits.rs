//! A client batch as large as `maxMessageSizeBytes` allows goes through the router to the
//! shards: the router splits what would outgrow the limit once it adds its own fields, as
//! mongos splits its child batches.

use crate::harness::{ProcessCluster, TestCluster};
use mongodb::Client;
use mongodb::bson::{Document, RawDocumentBuf, doc, rawdoc};
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const MAX_MESSAGE_SIZE: usize = 48_000_000;

/// An OP_MSG `insert` into `db.coll` of exactly `MAX_MESSAGE_SIZE` bytes: the body, then the
/// documents as a kind-1 sequence; the last document is sized to fill the message.
fn maximum_size_insert(db: &str, coll: &str, ordered: bool) -> (Vec<u8>, usize) {
    let body = rawdoc! {"insert": coll, "ordered": ordered, "$db": db};
    maximum_size_message(&body, &[], "documents", |i, pad| {
        rawdoc! {"_id": i, "pad": pad}
    })
}

/// A `bulkWrite` of inserts into `ns` of exactly `MAX_MESSAGE_SIZE` bytes.
fn maximum_size_bulk_write(ns: &str) -> (Vec<u8>, usize) {
    let body = rawdoc! {"bulkWrite": 1, "ordered": true, "$db": "admin"};
    let ns_info = [("nsInfo", vec![rawdoc! {"ns": ns}])];
    maximum_size_message(&body, &ns_info, "ops", |i, pad| {
        rawdoc! {"insert": 0, "document": {"_id": i, "pad": pad}}
    })
}

/// An OP_MSG of exactly `MAX_MESSAGE_SIZE` bytes: `body`, the `fixed` sequences, then a
/// sequence `name` of `statement(i, padding)`s, the last padded to fill the message.
fn maximum_size_message(
    body: &RawDocumentBuf,
    fixed: &[(&str, Vec<RawDocumentBuf>)],
    name: &str,
    statement: impl Fn(i32, &str) -> RawDocumentBuf,
) -> (Vec<u8>, usize) {
    let section = |name: &str, docs: &[RawDocumentBuf]| {
        let mut out = vec![1u8];
        let size = 4 + name.len() + 1 + docs.iter().map(|d| d.as_bytes().len()).sum::<usize>();
        out.extend_from_slice(&(size as i32).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        for doc in docs {
            out.extend_from_slice(doc.as_bytes());
        }
        out
    };
    let mut head = Vec::new();
    head.extend_from_slice(&0u32.to_le_bytes());
    head.push(0);
    head.extend_from_slice(body.as_bytes());
    for (name, docs) in fixed {
        head.extend(section(name, docs));
    }
    let filler = "x".repeat(900);
    let mut used = 16 + head.len() + section(name, &[]).len();
    let mut docs = Vec::new();
    let mut i = 0;
    loop {
        let doc = statement(i, &filler);
        let len = doc.as_bytes().len();
        if used + 2 * len > MAX_MESSAGE_SIZE {
            // The last one takes exactly what is left.
            let rest = MAX_MESSAGE_SIZE - used;
            let probe = statement(i, "").as_bytes().len();
            let last = statement(i, &"y".repeat(rest - probe));
            assert_eq!(last.as_bytes().len(), rest);
            docs.push(last);
            break;
        }
        used += len;
        docs.push(doc);
        i += 1;
    }
    let payload = [head, section(name, &docs)].concat();
    let mut msg = Vec::with_capacity(MAX_MESSAGE_SIZE);
    msg.extend_from_slice(&((16 + payload.len()) as i32).to_le_bytes());
    msg.extend_from_slice(&7i32.to_le_bytes());
    msg.extend_from_slice(&0i32.to_le_bytes());
    msg.extend_from_slice(&2013i32.to_le_bytes());
    msg.extend_from_slice(&payload);
    assert_eq!(msg.len(), MAX_MESSAGE_SIZE);
    (msg, docs.len())
}

/// Sends one message and returns the reply's body.
async fn round_trip(addr: SocketAddr, msg: &[u8]) -> Document {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(msg).await.unwrap();
    let mut header = [0u8; 16];
    stream
        .read_exact(&mut header)
        .await
        .expect("the router answers instead of closing the connection");
    let len = i32::from_le_bytes(header[..4].try_into().unwrap()) as usize;
    let mut rest = vec![0u8; len - 16];
    stream.read_exact(&mut rest).await.unwrap();
    // Flag bits, then the kind-0 section.
    assert_eq!(rest[4], 0);
    Document::from_reader(&rest[5..]).unwrap()
}

async fn maximum_size_batches(client: &Client, addr: SocketAddr) {
    let admin = client.database("admin");
    admin
        .run_command(doc! {"enableSharding": "limits"})
        .await
        .unwrap();
    admin
        .run_command(doc! {"shardCollection": "limits.hashed", "key": {"_id": "hashed"}})
        .await
        .unwrap();
    for (coll, ordered) in [
        ("unsharded", true),
        ("unsharded_unordered", false),
        ("hashed", true),
    ] {
        let (msg, n) = maximum_size_insert("limits", coll, ordered);
        let reply = round_trip(addr, &msg).await;
        assert_eq!(reply.get_f64("ok").ok(), Some(1.0), "{coll}: {reply}");
        assert_eq!(reply.get_i32("n").ok(), Some(n as i32), "{coll}: {reply}");
        let count = client
            .database("limits")
            .collection::<Document>(coll)
            .count_documents(doc! {})
            .await
            .unwrap();
        assert_eq!(count, n as u64, "{coll}");
    }
    let (msg, n) = maximum_size_bulk_write("limits.bulk");
    let reply = round_trip(addr, &msg).await;
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0), "bulkWrite: {reply}");
    assert_eq!(reply.get_i32("nInserted").ok(), Some(n as i32), "{reply}");
    let count = client
        .database("limits")
        .collection::<Document>("bulk")
        .count_documents(doc! {})
        .await
        .unwrap();
    assert_eq!(count, n as u64, "bulkWrite");
}

#[tokio::test]
async fn a_maximum_size_batch_goes_through_a_router_process() {
    let cluster = ProcessCluster::start(2).await;
    let client = cluster.client().await;
    maximum_size_batches(
        &client,
        SocketAddr::from(([127, 0, 0, 1], cluster.router_port)),
    )
    .await;
}

#[tokio::test]
async fn a_maximum_size_batch_goes_through_the_in_process_router() {
    let cluster = TestCluster::start().await;
    maximum_size_batches(&cluster.client, cluster.addr).await;
    cluster.shutdown().await;
}
