//! Hostile bytes on the wire, sent raw over TCP to the in-process cluster and to a router, a
//! shard and the config server running as separate processes: malformed framing, opcodes,
//! OP_MSG sections, BSON and OP_COMPRESSED. Each gets MongoDB's answer — the connection closed,
//! or an error reply on a connection that goes on — and afterwards the process still answers
//! `ping` on a new connection and the data written before is intact. Also the connection limit
//! (`--maxConns`) and the bounds on messages that arrive slowly or not at all.

use crate::harness::{Process, ProcessCluster, TestCluster, free_port, node_options};
use docgrid::wire::{MsgFlags, OpMsg, read_frame};
use futures::TryStreamExt;
use mongodb::bson::{Document, RawDocumentBuf, doc, rawdoc};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What the server did with an attack.
#[derive(Debug)]
enum Outcome {
    /// Closed the connection without answering.
    Closed,
    /// Answered with this document (OP_MSG or OP_REPLY) and kept the connection.
    Replied(Document),
    /// Answered an HTTP request with text, then closed.
    Http(String),
}

/// What an attack must get.
#[derive(Clone, Copy, Debug)]
enum Expect {
    Closed,
    /// An error reply with this code; the connection still serves `ping`.
    Error(i32),
    Http,
}

struct Attack {
    name: &'static str,
    bytes: Vec<u8>,
    /// Whether the client ends its side after sending (a message cut short never completes).
    end_input: bool,
    expect: Expect,
}

fn header(length: usize, op_code: i32) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(length as i32).to_le_bytes());
    out.extend_from_slice(&7i32.to_le_bytes());
    out.extend_from_slice(&0i32.to_le_bytes());
    out.extend_from_slice(&op_code.to_le_bytes());
    out
}

/// A message with this opcode around `body`, its length right.
fn message(op_code: i32, body: &[u8]) -> Vec<u8> {
    let mut out = header(16 + body.len(), op_code);
    out.extend_from_slice(body);
    out
}

/// An OP_MSG of the flags and raw section bytes.
fn op_msg(flags: u32, sections: &[u8]) -> Vec<u8> {
    message(2013, &[&flags.to_le_bytes()[..], sections].concat())
}

fn body(doc: &[u8]) -> Vec<u8> {
    [&[0u8][..], doc].concat()
}

fn command(doc: RawDocumentBuf) -> Vec<u8> {
    op_msg(0, &body(doc.as_bytes()))
}

/// `{a: {a: ... {a: 1}}}` with `levels` nested objects, built without recursion.
fn nested(levels: usize) -> RawDocumentBuf {
    let mut out = vec![0u8; 4];
    let mut starts = vec![0];
    for _ in 0..levels {
        out.extend_from_slice(&[0x03, b'a', 0]);
        starts.push(out.len());
        out.extend_from_slice(&[0; 4]);
    }
    out.extend_from_slice(&[0x10, b'a', 0, 1, 0, 0, 0]);
    for start in starts.into_iter().rev() {
        out.push(0);
        let len = (out.len() - start) as i32;
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    }
    RawDocumentBuf::from_bytes(out).unwrap()
}

/// An OP_QUERY for `admin.$cmd` carrying `query`.
fn op_query(query: &RawDocumentBuf) -> Vec<u8> {
    let mut body = 0u32.to_le_bytes().to_vec();
    body.extend_from_slice(b"admin.$cmd\0");
    body.extend_from_slice(&0i32.to_le_bytes());
    body.extend_from_slice(&(-1i32).to_le_bytes());
    body.extend_from_slice(query.as_bytes());
    message(2004, &body)
}

/// An OP_COMPRESSED of an OP_MSG, claiming `size` bytes once decompressed.
fn compressed(compressor: u8, size: i32, payload: &[u8]) -> Vec<u8> {
    let mut body = 2013i32.to_le_bytes().to_vec();
    body.extend_from_slice(&size.to_le_bytes());
    body.push(compressor);
    body.extend_from_slice(payload);
    message(2012, &body)
}

fn zlib(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

fn attacks() -> Vec<Attack> {
    let ping = rawdoc! {"ping": 1, "$db": "admin"};
    let ping_section = body(ping.as_bytes());
    let closed = |name, bytes| Attack {
        name,
        bytes,
        end_input: false,
        expect: Expect::Closed,
    };
    let error = |name, bytes, code| Attack {
        name,
        bytes,
        end_input: false,
        expect: Expect::Error(code),
    };
    let mut checksummed = Vec::new();
    let mut msg = OpMsg::new(ping.clone());
    msg.flags = MsgFlags(MsgFlags::CHECKSUM_PRESENT);
    msg.encode(7, 0, &mut checksummed);
    let last = checksummed.len() - 1;
    checksummed[last] ^= 0x5a;
    let mut bad_length = ping.as_bytes().to_vec();
    bad_length[0] = 0x7f;
    let mut unterminated = rawdoc! {"ping": 1, "$db": "admin", "s": "abc"}.into_bytes();
    let at = unterminated.len() - 2;
    unterminated[at] = b'x';
    let mut bad_key = rawdoc! {"ping": 1, "$db": "admin", "k": 1}.into_bytes();
    let at = bad_key.iter().rposition(|&b| b == b'k').unwrap();
    bad_key[at] = 0xff;
    let deep_hello = rawdoc! {"hello": 1, "$db": "admin", "client": nested(10_000)};
    let deep_find = rawdoc! {"find": "users", "$db": "app", "filter": nested(10_000)};
    let just_over = rawdoc! {"find": "users", "$db": "app", "filter": nested(200)};
    let ping_msg = command(ping.clone());
    let mut sequence_lies = vec![1];
    sequence_lies.extend_from_slice(&1000i32.to_le_bytes());
    sequence_lies.extend_from_slice(b"documents\0");
    sequence_lies.extend_from_slice(&ping_section);
    vec![
        Attack {
            name: "a header cut short",
            bytes: ping_msg[..10].to_vec(),
            end_input: true,
            expect: Expect::Closed,
        },
        closed("length 0", header(0, 2013)),
        closed("length 15", header(15, 2013)),
        closed("a negative length", header(-1i32 as u32 as usize, 2013)),
        closed(
            "length beyond maxMessageSizeBytes",
            header(48_000_001, 2013),
        ),
        Attack {
            name: "a length that lies",
            bytes: [&header(1000, 2013)[..], &[0u8; 100]].concat(),
            end_input: true,
            expect: Expect::Closed,
        },
        closed("an unknown opcode", message(4242, &[0; 16])),
        closed("legacy OP_INSERT", message(2002, b"\0\0\0\0db.c\0")),
        error(
            "legacy OP_GET_MORE",
            message(2005, b"\0\0\0\0db.c\0"),
            5739101,
        ),
        closed("an OP_MSG too short for its flags", message(2013, &[0, 0])),
        closed(
            "an unknown required flag bit",
            op_msg(1 << 5, &ping_section),
        ),
        closed("a wrong checksum", checksummed),
        error(
            "a section kind that does not exist",
            op_msg(0, &[&ping_section[..], &[9]].concat()),
            40432,
        ),
        error(
            "a security token section",
            op_msg(0, &[&ping_section[..], &[2, b'x', 0]].concat()),
            13,
        ),
        error(
            "two bodies",
            op_msg(0, &[&ping_section[..], &ping_section[..]].concat()),
            40430,
        ),
        error("no sections", op_msg(0, &[]), 40587),
        error(
            "a document sequence whose size lies",
            op_msg(0, &sequence_lies),
            15,
        ),
        error("a BSON length that lies", op_msg(0, &body(&bad_length)), 22),
        error(
            "an unterminated string",
            op_msg(0, &body(&unterminated)),
            22,
        ),
        error("invalid UTF-8 in a key", op_msg(0, &body(&bad_key)), 378),
        error(
            "10,000 levels in hello's client",
            command(deep_hello.clone()),
            15,
        ),
        error(
            "client metadata of 2 KB",
            command(rawdoc! {"hello": 1, "$db": "admin", "client": {
                "driver": {"name": "raw", "version": "0"}, "os": {"type": "Linux"}, "pad": "x".repeat(2000),
            }}),
            185,
        ),
        error(
            "client metadata 150 levels deep",
            command(rawdoc! {"hello": 1, "$db": "admin", "client": nested(150)}),
            185,
        ),
        error("10,000 levels in a find filter", command(deep_find), 15),
        error("201 levels in a find filter", command(just_over), 15),
        error(
            "10,000 levels in a legacy OP_QUERY hello",
            op_query(&rawdoc! {"isMaster": 1, "client": nested(10_000)}),
            22,
        ),
        closed(
            "OP_COMPRESSED garbage",
            compressed(2, 100, b"not zlib at all"),
        ),
        closed(
            "OP_COMPRESSED claiming more than it holds",
            compressed(2, 1000, &zlib(&ping_msg[16..])),
        ),
        closed(
            "OP_COMPRESSED claiming less than it holds",
            compressed(3, 10, &zstd::bulk::compress(&ping_msg[16..], 0).unwrap()),
        ),
        closed(
            "OP_COMPRESSED with a negative size",
            compressed(1, -5, b"x"),
        ),
        closed(
            "OP_COMPRESSED beyond maxMessageSizeBytes",
            compressed(2, 48_000_000, b"x"),
        ),
        closed("an unknown compressor", compressed(9, 4, b"abcd")),
        closed(
            "OP_COMPRESSED wrapping OP_COMPRESSED",
            message(2012, &{
                let mut b = 2012i32.to_le_bytes().to_vec();
                b.extend_from_slice(&(ping_msg.len() as i32 - 16).to_le_bytes());
                b.push(0);
                b.extend_from_slice(&ping_msg[16..]);
                b
            }),
        ),
        error(
            "a decompression bomb of zeros",
            compressed(
                3,
                8_000_000,
                &zstd::bulk::compress(&vec![0u8; 8_000_000], 0).unwrap(),
            ),
            22,
        ),
        Attack {
            name: "an HTTP request",
            bytes: b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".to_vec(),
            end_input: false,
            expect: Expect::Http,
        },
    ]
}

/// Sends `bytes` on a new connection; returns what the server did, and the connection when it
/// answered.
async fn send(addr: SocketAddr, bytes: &[u8], end_input: bool) -> (Outcome, Option<TcpStream>) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    // The server may close before taking everything: a failed write is part of the outcome.
    let _ = stream.write_all(bytes).await;
    if end_input {
        let _ = stream.shutdown().await;
    }
    if bytes.starts_with(b"GET ") {
        let mut text = Vec::new();
        let _ = within(stream.read_to_end(&mut text)).await;
        return (Outcome::Http(String::from_utf8_lossy(&text).into()), None);
    }
    match within(read_frame(&mut stream)).await {
        Ok(Some(frame)) => (Outcome::Replied(reply_document(&frame.bytes)), Some(stream)),
        Ok(None) | Err(_) => (Outcome::Closed, None),
    }
}

/// Waits for the server, failing the test if it hangs.
async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("the server answered or closed in time")
}

/// The document of an OP_MSG or OP_REPLY.
fn reply_document(bytes: &[u8]) -> Document {
    let op = i32::from_le_bytes(bytes[12..16].try_into().unwrap());
    let raw = match op {
        2013 => OpMsg::decode(bytes).unwrap().body,
        1 => RawDocumentBuf::from_bytes(bytes[36..].to_vec()).unwrap(),
        other => panic!("unexpected reply opcode {other}"),
    };
    raw.to_document().unwrap()
}

async fn ping_on(stream: &mut TcpStream) -> Document {
    stream
        .write_all(&command(rawdoc! {"ping": 1, "$db": "admin"}))
        .await
        .unwrap();
    let frame = within(read_frame(stream)).await.unwrap().expect("a reply");
    reply_document(&frame.bytes)
}

/// Every attack against `addr`, each followed by a `ping` on a new connection.
async fn assault(addr: SocketAddr) {
    for attack in attacks() {
        let (outcome, stream) = send(addr, &attack.bytes, attack.end_input).await;
        match (attack.expect, outcome) {
            (Expect::Closed, Outcome::Closed) => {}
            (Expect::Error(code), Outcome::Replied(reply)) => {
                let got = reply.get_i32("code").unwrap_or_default();
                assert_eq!(got, code, "{}: {reply:?}", attack.name);
                assert_eq!(reply.get_f64("ok").ok(), Some(0.0), "{}", attack.name);
                let pong = ping_on(&mut stream.expect("the connection stays open")).await;
                assert_eq!(pong.get_f64("ok").ok(), Some(1.0), "{}", attack.name);
            }
            (Expect::Http, Outcome::Http(text)) => {
                assert!(
                    text.starts_with("HTTP/1.0 200 OK")
                        && text.contains("trying to access MongoDB over HTTP"),
                    "{text}"
                );
            }
            (expected, got) => panic!("{}: expected {expected:?}, got {got:?}", attack.name),
        }
        let mut fresh = TcpStream::connect(addr).await.unwrap();
        let pong = ping_on(&mut fresh).await;
        assert_eq!(pong.get_f64("ok").ok(), Some(1.0), "after {}", attack.name);
    }
}

async fn write_data(client: &mongodb::Client) -> Vec<Document> {
    let docs: Vec<Document> = (0..50)
        .map(|i| doc! {"_id": i, "name": format!("u{i}"), "tags": ["a", "b"]})
        .collect();
    client
        .database("app")
        .collection::<Document>("users")
        .insert_many(docs.clone())
        .await
        .unwrap();
    docs
}

async fn assert_data(client: &mongodb::Client, expected: &[Document]) {
    let mut found: Vec<Document> = client
        .database("app")
        .collection::<Document>("users")
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    found.sort_by_key(|d| d.get_i32("_id").unwrap());
    assert_eq!(found, expected);
}

#[tokio::test]
async fn hostile_messages_against_the_in_process_cluster() {
    let cluster = TestCluster::start().await;
    let written = write_data(&cluster.client).await;
    assault(cluster.addr).await;
    assert_data(&cluster.client, &written).await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn hostile_messages_against_router_shard_and_config_server_processes() {
    let cluster = ProcessCluster::start(1).await;
    let client = cluster.client().await;
    let written = write_data(&client).await;
    let shard = crate::harness::shard_documents(&client).await[0]
        .get_str("host")
        .unwrap()
        .parse()
        .unwrap();
    for addr in [
        SocketAddr::from(([127, 0, 0, 1], cluster.router_port)),
        shard,
        SocketAddr::from(([127, 0, 0, 1], cluster.config_port)),
    ] {
        assault(addr).await;
    }
    assert_data(&client, &written).await;
}

async fn server_status(addr: SocketAddr) -> Document {
    try_server_status(addr)
        .await
        .expect("serverStatus on a new connection")
}

/// `serverStatus` on a new connection, or `None` when the server closed it at once (its
/// connection limit reached).
async fn try_server_status(addr: SocketAddr) -> Option<Document> {
    let mut stream = TcpStream::connect(addr).await.ok()?;
    stream
        .write_all(&command(rawdoc! {"serverStatus": 1, "$db": "admin"}))
        .await
        .ok()?;
    let frame = within(read_frame(&mut stream)).await.ok()??;
    Some(reply_document(&frame.bytes))
}

/// Opens raw connections until the server closes one at once; returns those it kept.
async fn fill_up(addr: SocketAddr) -> Vec<TcpStream> {
    let mut open = Vec::new();
    loop {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(&command(rawdoc! {"ping": 1, "$db": "admin"}))
            .await
            .unwrap();
        match within(read_frame(&mut stream)).await {
            Ok(Some(_)) => open.push(stream),
            _ => return open,
        }
        assert!(open.len() < 100, "the connection limit was never reached");
    }
}

/// With `maxConns` reached a new connection is closed at once and counted as rejected;
/// `available` is the limit less the open connections; one closing makes room again.
async fn connection_limit_holds(addr: SocketAddr, max: i32) {
    let held = fill_up(addr).await;
    assert!(!held.is_empty());
    // Every slot is taken: even serverStatus needs a held connection.
    let mut first = held.into_iter();
    let mut probe = first.next().unwrap();
    let rest: Vec<TcpStream> = first.collect();
    probe
        .write_all(&command(rawdoc! {"serverStatus": 1, "$db": "admin"}))
        .await
        .unwrap();
    let status = reply_document(&within(read_frame(&mut probe)).await.unwrap().unwrap().bytes);
    let connections = status.get_document("connections").unwrap();
    assert_eq!(
        connections.get_i32("available").unwrap(),
        0,
        "{connections:?}"
    );
    assert!(
        connections.get_i32("rejected").unwrap() >= 1,
        "{connections:?}"
    );
    assert!(
        connections.get_i32("current").unwrap() <= max,
        "{connections:?}"
    );
    assert_eq!(
        status
            .get_document("docgrid")
            .unwrap()
            .get_i64("maxIncomingConnections")
            .unwrap(),
        i64::from(max)
    );
    drop(rest);
    drop(probe);
    // The server notices the closed connections and admits new ones.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // Until the server has noticed the closes, a new connection may still be refused.
        let available = try_server_status(addr).await.map(|status| {
            status
                .get_document("connections")
                .unwrap()
                .get_i32("available")
                .unwrap()
        });
        if available.is_some_and(|n| n > 0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "closed connections were never released"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn max_conns_refuses_connections_beyond_the_limit_in_process() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = node_options();
    options.max_incoming_connections = Some(6);
    let running = docgrid::cluster::start_dev(&options, dir.path(), 1)
        .await
        .unwrap();
    connection_limit_holds(running.addr, 6).await;
    running.shutdown().await;
}

#[tokio::test]
async fn max_conns_flag_and_config_file_limit_processes() {
    let mut cluster = ProcessCluster::start(1).await;
    let router = cluster.add_router_with(&["--maxConns", "7"]).await;
    let opts = router
        .database("admin")
        .run_command(doc! {"getCmdLineOpts": 1})
        .await
        .unwrap();
    let net = opts
        .get_document("parsed")
        .unwrap()
        .get_document("net")
        .unwrap();
    assert_eq!(net.get_i32("maxIncomingConnections").unwrap(), 7);
    let port = net.get_i32("port").unwrap() as u16;
    connection_limit_holds(SocketAddr::from(([127, 0, 0, 1], port)), 7).await;
    // A dev process configured by mongod's nested TOML key.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("docgrid.toml");
    std::fs::write(&config, "[net]\nmaxIncomingConnections = 8\n").unwrap();
    let port = free_port();
    let data = dir.path().join("data");
    let _dev = Process::spawn(
        &[
            "dev",
            "--port",
            &port.to_string(),
            "--data-dir",
            data.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
        port,
    );
    connection_limit_holds(SocketAddr::from(([127, 0, 0, 1], port)), 8).await;
}

#[tokio::test]
async fn a_stalled_message_is_closed_and_a_half_sent_one_holds_only_what_arrived() {
    let cluster =
        TestCluster::with_parameters(&[("ingressMessageStallTimeoutMillis", "2000")]).await;
    // A header claiming 40 MB and 1 MB of it, then nothing.
    let mut stalled = TcpStream::connect(cluster.addr).await.unwrap();
    stalled.write_all(&header(40_000_000, 2013)).await.unwrap();
    stalled.write_all(&vec![0u8; 1_000_000]).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let held = loop {
        let status = server_status(cluster.addr).await;
        let bytes = status
            .get_document("docgrid")
            .unwrap()
            .get_i64("ingressMessageBytes")
            .unwrap();
        if bytes >= 1_000_000 {
            break bytes;
        }
        assert!(
            Instant::now() < deadline,
            "the bytes sent were never taken in"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(held < 3_000_000, "a half-sent message holds {held} bytes");
    let mut rest = Vec::new();
    let closed = within(stalled.read_to_end(&mut rest)).await;
    assert!(closed.is_err() || rest.is_empty(), "closed without a reply");
    let status = server_status(cluster.addr).await;
    let left = status
        .get_document("docgrid")
        .unwrap()
        .get_i64("ingressMessageBytes")
        .unwrap();
    assert!(left < 16 * 1024, "the room was given back: {left}");
    cluster.shutdown().await;
}
