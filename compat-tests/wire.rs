//! The wire protocol seen from raw TCP: legacy OP_QUERY handshake, checksums, flag bits,
//! moreToCome, malformed input, and compression through the driver.

use crate::harness::{TestCluster, client_for};
use docgrid::wire::{MsgFlags, OpMsg, OpQuery, read_frame};
use mongodb::bson::{Document, RawDocumentBuf, doc};
use std::net::SocketAddr;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// A bare TCP connection speaking the wire protocol.
pub struct RawConnection {
    stream: TcpStream,
    next_id: i32,
}

impl RawConnection {
    pub async fn connect(addr: SocketAddr) -> RawConnection {
        RawConnection {
            stream: TcpStream::connect(addr).await.unwrap(),
            next_id: 1,
        }
    }

    pub async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    /// Sends an OP_MSG; returns the raw reply bytes, or `None` if the server closed the socket.
    pub async fn op_msg(&mut self, msg: &OpMsg) -> Option<Vec<u8>> {
        let mut bytes = Vec::new();
        msg.encode(self.next_id, 0, &mut bytes);
        self.next_id += 1;
        self.send(&bytes).await;
        self.read().await
    }

    pub async fn read(&mut self) -> Option<Vec<u8>> {
        match tokio::time::timeout(
            std::time::Duration::from_secs(10),
            read_frame(&mut self.stream),
        )
        .await
        {
            Ok(Ok(Some(frame))) => Some(frame.bytes),
            Ok(_) => None,
            Err(_) => panic!("no reply within 10s"),
        }
    }

    pub async fn command(&mut self, body: Document) -> Document {
        let reply = self
            .op_msg(&OpMsg::new(RawDocumentBuf::from_document(&body).unwrap()))
            .await
            .expect("a reply");
        OpMsg::decode(&reply).unwrap().body.to_document().unwrap()
    }
}

fn op_query(query: Document, collection: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    OpQuery {
        flags: 0,
        full_collection_name: collection.into(),
        number_to_skip: 0,
        number_to_return: -1,
        query: RawDocumentBuf::from_document(&query).unwrap(),
        return_fields_selector: None,
    }
    .encode(9, &mut bytes);
    bytes
}

/// The document of an OP_REPLY.
fn op_reply_document(bytes: &[u8]) -> Document {
    assert_eq!(
        i32::from_le_bytes(bytes[12..16].try_into().unwrap()),
        1,
        "OP_REPLY opcode"
    );
    RawDocumentBuf::from_bytes(bytes[36..].to_vec())
        .unwrap()
        .to_document()
        .unwrap()
}

#[tokio::test]
async fn legacy_handshake_over_op_query() {
    let cluster = TestCluster::start().await;
    let mut conn = RawConnection::connect(cluster.addr).await;
    conn.send(&op_query(doc! {"isMaster": 1, "helloOk": true, "client": {"driver": {"name": "raw", "version": "0"}, "os": {"type": "Linux"}}}, "admin.$cmd")).await;
    let reply = op_reply_document(&conn.read().await.unwrap());
    assert!(reply.get_bool("ismaster").unwrap());
    assert_eq!(reply.get_str("msg").unwrap(), "isdbgrid");
    assert!(reply.get_bool("helloOk").unwrap());
    conn.send(&op_query(doc! {"find": "c"}, "app.$cmd")).await;
    let reply = op_reply_document(&conn.read().await.unwrap());
    assert_eq!(reply.get_i32("code").unwrap(), 352);
    assert_eq!(
        reply.get_str("codeName").unwrap(),
        "UnsupportedOpQueryCommand"
    );
    // The connection goes on with OP_MSG.
    let ping = conn.command(doc! {"ping": 1, "$db": "admin"}).await;
    assert_eq!(ping.get_f64("ok").unwrap(), 1.0);
    cluster.shutdown().await;
}

#[tokio::test]
async fn checksums_are_verified_and_echoed() {
    let cluster = TestCluster::start().await;
    let mut conn = RawConnection::connect(cluster.addr).await;
    let mut msg =
        OpMsg::new(RawDocumentBuf::from_document(&doc! {"ping": 1, "$db": "admin"}).unwrap());
    msg.flags = MsgFlags(MsgFlags::CHECKSUM_PRESENT);
    let reply = conn.op_msg(&msg).await.unwrap();
    let decoded = OpMsg::decode(&reply).expect("the reply's checksum verifies");
    assert!(decoded.flags.checksum_present());
    let mut bytes = Vec::new();
    msg.encode(77, 0, &mut bytes);
    let last = bytes.len() - 1;
    bytes[last] ^= 0x5a;
    conn.send(&bytes).await;
    // ChecksumMismatch is a ConnectionFatalMessageParseError: MongoDB closes without a reply.
    assert!(
        conn.read().await.is_none(),
        "a checksum mismatch closes the connection"
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn unknown_required_flags_are_rejected() {
    let cluster = TestCluster::start().await;
    let mut conn = RawConnection::connect(cluster.addr).await;
    let mut msg =
        OpMsg::new(RawDocumentBuf::from_document(&doc! {"ping": 1, "$db": "admin"}).unwrap());
    msg.flags = MsgFlags(1 << 4);
    // IllegalOpMsgFlag closes the connection without a reply, as in MongoDB.
    assert!(conn.op_msg(&msg).await.is_none());
    let mut conn = RawConnection::connect(cluster.addr).await;
    msg.flags = MsgFlags(MsgFlags::EXHAUST_ALLOWED | (1 << 20));
    let reply = OpMsg::decode(&conn.op_msg(&msg).await.unwrap())
        .unwrap()
        .body
        .to_document()
        .unwrap();
    assert_eq!(
        reply.get_f64("ok").unwrap(),
        1.0,
        "optional bits are ignored"
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn more_to_come_executes_without_a_reply() {
    let cluster = TestCluster::start().await;
    let mut conn = RawConnection::connect(cluster.addr).await;
    let mut msg = OpMsg::new(
        RawDocumentBuf::from_document(
            &doc! {"insert": "w0", "$db": "app", "writeConcern": {"w": 0}},
        )
        .unwrap(),
    );
    msg.sequences.push(docgrid::wire::DocumentSequence {
        identifier: "documents".into(),
        documents: vec![RawDocumentBuf::from_document(&doc! {"_id": 1}).unwrap()],
    });
    msg.flags = MsgFlags(MsgFlags::MORE_TO_COME);
    let mut bytes = Vec::new();
    msg.encode(5, 0, &mut bytes);
    conn.send(&bytes).await;
    // The next reply on this connection is the count's, so the insert sent none.
    let count = conn.command(doc! {"count": "w0", "$db": "app"}).await;
    assert_eq!(count.get_i32("n").unwrap(), 1);
    cluster.shutdown().await;
}

#[tokio::test]
async fn malformed_messages_close_only_their_connection() {
    let cluster = TestCluster::start().await;
    let mut healthy = RawConnection::connect(cluster.addr).await;
    for garbage in [
        vec![3, 0, 0, 0],
        vec![
            40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xdd, 7, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0,
        ],
        {
            let mut truncated_body = Vec::new();
            OpMsg::new(RawDocumentBuf::from_document(&doc! {"ping": 1, "$db": "admin"}).unwrap())
                .encode(1, 0, &mut truncated_body);
            truncated_body[21] = 0x7f; // document length now points past the message
            truncated_body
        },
    ] {
        let mut bad = RawConnection::connect(cluster.addr).await;
        bad.send(&garbage).await;
        // End of input: a message cut short can never complete.
        let _ = bad.stream.shutdown().await;
        // The server either answers with an error (a well-framed but invalid OP_MSG) or closes
        // the connection; it never answers ok and never stops serving others.
        if let Some(reply) = bad.read().await {
            let reply = OpMsg::decode(&reply).unwrap().body.to_document().unwrap();
            assert_eq!(reply.get_f64("ok").unwrap(), 0.0);
        }
        let ping = healthy.command(doc! {"ping": 1, "$db": "admin"}).await;
        assert_eq!(ping.get_f64("ok").unwrap(), 1.0);
    }
    cluster.shutdown().await;
}

#[tokio::test]
async fn compressed_traffic_with_every_compressor() {
    let cluster = TestCluster::start().await;
    for compressor in ["snappy", "zlib", "zstd"] {
        let uri = format!("mongodb://{}/?compressors={compressor}", cluster.addr);
        let client = mongodb::Client::with_uri_str(uri).await.unwrap();
        let coll = client.database("app").collection::<Document>(compressor);
        coll.insert_many((0..300).map(|i| doc! {"_id": i, "text": "compressible ".repeat(20)}))
            .await
            .unwrap();
        assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 300);
        let mut conn = RawConnection::connect(cluster.addr).await;
        let hello = conn
            .command(doc! {"hello": 1, "$db": "admin", "compression": [compressor, "unknown"]})
            .await;
        assert_eq!(
            hello.get_array("compression").unwrap(),
            &vec![mongodb::bson::Bson::String(compressor.into())]
        );
    }
    let _ = client_for(cluster.addr).await;
    cluster.shutdown().await;
}

/// Sends a command on a fresh connection and returns the reply document, errors included.
pub async fn raw_command(addr: SocketAddr, body: Document) -> Document {
    RawConnection::connect(addr).await.command(body).await
}
