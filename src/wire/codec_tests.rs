//! Tests of the codec: framing, message limits, OP_MSG, OP_QUERY and OP_COMPRESSED decoding.

use super::*;
use crate::wire::budget::MessageBudget;
use bson::rawdoc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

fn header(length: i32, op_code: i32) -> Vec<u8> {
    let mut out = Vec::new();
    MsgHeader {
        message_length: length,
        request_id: 7,
        response_to: 0,
        op_code,
    }
    .write(&mut out);
    out
}

fn ping() -> Vec<u8> {
    let mut bytes = Vec::new();
    OpMsg::new(rawdoc! {"ping": 1, "$db": "admin"}).encode(1, 0, &mut bytes);
    bytes
}

fn limits(budget: usize, stall: Duration) -> IngressLimits {
    IngressLimits {
        budget: MessageBudget::new(budget),
        stall_timeout: stall,
    }
}

#[tokio::test]
async fn reads_frames_and_detects_clean_eof() {
    let bytes = ping();
    let mut stream = bytes.as_slice();
    let frame = read_frame(&mut stream).await.unwrap().unwrap();
    assert!(matches!(
        decode_request(&frame).unwrap(),
        Request::Msg { request_id: 1, .. }
    ));
    assert!(read_frame(&mut stream).await.unwrap().is_none());
}

#[tokio::test]
async fn rejects_lengths_outside_the_limits_and_http() {
    for length in [0, 15, -1, i32::MIN, 48_000_001, i32::MAX] {
        let bytes = header(length, 2013);
        let mut stream = bytes.as_slice();
        match read_frame(&mut stream).await {
            Err(WireError::InvalidLength(n)) => assert_eq!(n, i64::from(length)),
            other => panic!("{length}: {other:?}"),
        }
    }
    let mut stream: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    assert!(matches!(
        read_frame(&mut stream).await,
        Err(WireError::HttpRequest)
    ));
    // Cut short inside the header or the body: an error, not a clean end.
    let bytes = ping();
    for cut in [3, 20] {
        let mut stream = &bytes[..cut];
        assert!(matches!(
            read_frame(&mut stream).await,
            Err(WireError::Io(_))
        ));
    }
}

#[tokio::test]
async fn the_buffer_grows_with_the_bytes_that_arrived() {
    let budget = limits(1 << 30, Duration::from_secs(60));
    let (mut client, mut server) = tokio::io::duplex(64 * 1024);
    let reading = {
        let budget = budget.clone();
        tokio::spawn(async move { read_frame_limited(&mut server, &budget).await })
    };
    // A header claiming 40 MB, and 100 bytes of it.
    client.write_all(&header(40_000_000, 2013)).await.unwrap();
    client.write_all(&[0u8; 100]).await.unwrap();
    while budget.budget.in_use() == 0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(budget.budget.in_use(), FIRST_CHUNK);
    drop(client);
    assert!(matches!(reading.await.unwrap(), Err(WireError::Io(_))));
    assert_eq!(budget.budget.in_use(), 0);
}

#[tokio::test]
async fn a_whole_message_holds_exactly_its_length_until_processed() {
    let budget = limits(1 << 30, Duration::from_secs(60));
    let mut msg = OpMsg::new(rawdoc! {"insert": "c", "$db": "t"});
    msg.sequences.push(crate::wire::DocumentSequence {
        identifier: "documents".into(),
        documents: (0..2000)
            .map(|i| rawdoc! {"_id": i, "pad": "x".repeat(100)})
            .collect(),
    });
    let mut bytes = Vec::new();
    msg.encode(1, 0, &mut bytes);
    let mut stream = bytes.as_slice();
    let frame = read_frame_limited(&mut stream, &budget)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(frame.bytes.capacity(), bytes.len());
    assert_eq!(budget.budget.in_use(), bytes.len());
    let held = frame.into_reservation();
    assert_eq!(budget.budget.in_use(), bytes.len());
    drop(held);
    assert_eq!(budget.budget.in_use(), 0);
}

#[tokio::test]
async fn a_stalled_message_fails_but_an_idle_connection_waits() {
    let stall = limits(1 << 30, Duration::from_millis(50));
    let (mut client, mut server) = tokio::io::duplex(1024);
    client.write_all(&ping()[..10]).await.unwrap();
    assert!(matches!(
        read_frame_limited(&mut server, &stall).await,
        Err(WireError::Stalled)
    ));
    // Silence before a message starts is not a stall.
    let (mut client, mut server) = tokio::io::duplex(1024);
    let reading = {
        let stall = stall.clone();
        tokio::spawn(async move { read_frame_limited(&mut server, &stall).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    client.write_all(&ping()).await.unwrap();
    assert!(reading.await.unwrap().unwrap().is_some());
}

#[tokio::test]
async fn no_room_in_the_budget_closes() {
    let small = limits(100_000, Duration::from_millis(50));
    let (mut client, mut server) = tokio::io::duplex(1024 * 1024);
    client.write_all(&header(1_000_000, 2013)).await.unwrap();
    client.write_all(&vec![0u8; 200_000]).await.unwrap();
    assert!(matches!(
        read_frame_limited(&mut server, &small).await,
        Err(WireError::OverBudget)
    ));
    assert_eq!(small.budget.in_use(), 0);
}

fn frame_of(bytes: Vec<u8>) -> Frame {
    Frame::from_bytes(bytes).unwrap()
}

fn with_body(op_code: i32, body: &[u8]) -> Frame {
    let mut bytes = header((HEADER_LEN + body.len()) as i32, op_code);
    bytes.extend_from_slice(body);
    frame_of(bytes)
}

fn closed_code(result: Result<Request, WireError>) -> i32 {
    match result {
        Err(WireError::Closed(e)) => e.code().code(),
        other => panic!("expected the connection closed, got {other:?}"),
    }
}

#[test]
fn removed_and_unknown_opcodes_are_refused_as_mongos_refuses_them() {
    let ns = b"\0\0\0\0db.c\0";
    assert_eq!(closed_code(decode_request(&with_body(2002, ns))), 5745706);
    assert_eq!(closed_code(decode_request(&with_body(2001, ns))), 5745705);
    assert_eq!(closed_code(decode_request(&with_body(2006, ns))), 5745704);
    assert_eq!(closed_code(decode_request(&with_body(2007, ns))), 5745707);
    assert_eq!(closed_code(decode_request(&with_body(1, ns))), 20);
    assert_eq!(closed_code(decode_request(&with_body(4242, ns))), 20);
    match decode_request(&with_body(2005, ns)) {
        Err(WireError::Legacy {
            message,
            request_id,
        }) => {
            assert_eq!(message, "OP_GET_MORE is no longer supported");
            assert_eq!(request_id, 7);
        }
        other => panic!("{other:?}"),
    }
    // OP_QUERY on a collection, and without a namespace at all.
    let mut query = b"\0\0\0\0db.c\0\0\0\0\0\x01\0\0\0".to_vec();
    query.extend_from_slice(rawdoc! {"find": "c"}.as_bytes());
    assert!(matches!(
        decode_request(&with_body(2004, &query)),
        Err(WireError::Legacy { .. })
    ));
    assert_eq!(
        closed_code(decode_request(&with_body(2004, b"\0\0\0\0db"))),
        18633
    );
    assert_eq!(
        closed_code(decode_request(&with_body(2013, b"\0\0"))),
        18634
    );
    // The removed-opcode reply carries $err with the error flag.
    let reply = encode_legacy_error("OP_GET_MORE is no longer supported", 7, 1);
    assert_eq!(i32::from_le_bytes(reply[16..20].try_into().unwrap()), 2);
    let doc = bson::RawDocument::from_bytes(&reply[36..]).unwrap();
    assert_eq!(doc.get_i32("code").unwrap(), 5739101);
}

#[test]
fn parse_errors_are_answered_unless_fatal_or_more_to_come() {
    let mut bytes = ping();
    let last = bytes.len() - 2;
    bytes[last] = 0x42; // the body's last element gets an unknown type
    match decode_request(&frame_of(bytes.clone())) {
        Err(WireError::Rejected {
            error,
            reply_to,
            more_to_come,
        }) => {
            assert_eq!(error.code(), ErrorCode::InvalidBSON);
            assert_eq!(reply_to.request_id, 1);
            assert!(!more_to_come);
        }
        other => panic!("{other:?}"),
    }
    bytes[16] = MsgFlags::MORE_TO_COME as u8;
    assert!(matches!(
        decode_request(&frame_of(bytes.clone())),
        Err(WireError::Rejected {
            more_to_come: true,
            ..
        })
    ));
    bytes[16] = 1 << 4;
    assert_eq!(closed_code(decode_request(&frame_of(bytes))), 223);
}

#[test]
fn compressed_garbage_closes_and_depth_is_the_callers() {
    let mut garbage = header(16 + 9 + 3, 2012);
    garbage.extend_from_slice(&2013i32.to_le_bytes());
    garbage.extend_from_slice(&100i32.to_le_bytes());
    garbage.extend_from_slice(&[2, 1, 2, 3]);
    assert_eq!(closed_code(decode_request(&frame_of(garbage))), 2);
    let mut deep = rawdoc! {"x": 1};
    for _ in 0..10 {
        deep = rawdoc! {"x": deep};
    }
    let mut bytes = Vec::new();
    OpMsg::new(rawdoc! {"ping": 1, "$db": "admin", "d": deep}).encode(1, 0, &mut bytes);
    let frame = frame_of(bytes);
    assert!(decode_request(&frame).is_ok());
    let shallow = DecodeLimits { max_bson_depth: 5 };
    match decode_request_with(&frame, &shallow) {
        Err(WireError::Rejected { error, .. }) => assert_eq!(error.code(), ErrorCode::Overflow),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_http_hint_is_mongodbs() {
    let text = String::from_utf8(http_response()).unwrap();
    assert!(text.starts_with("HTTP/1.0 200 OK\r\n"));
    assert!(text.ends_with(
        "\r\n\r\nIt looks like you are trying to access MongoDB over HTTP on the native driver port.\r\n"
    ));
}
