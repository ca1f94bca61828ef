//! Golden tests over real client messages (testdata/), and property tests that the decoder
//! round-trips what it encodes and never panics on arbitrary bytes.

use super::*;
use bson::{Bson, RawDocumentBuf, doc};
use proptest::prelude::*;

fn hex(text: &str) -> Vec<u8> {
    let text = text.trim();
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

fn frame(bytes: &[u8]) -> Frame {
    Frame::from_bytes(bytes.to_vec()).unwrap()
}

#[test]
fn mongosh_legacy_ismaster_round_trips() {
    let bytes = hex(include_str!("testdata/mongosh-ismaster-op-query.hex"));
    let Request::Query {
        request_id,
        query,
        compressor,
    } = decode_request(&frame(&bytes)).unwrap()
    else {
        panic!("mongosh's first message is OP_QUERY");
    };
    assert_eq!(compressor, None);
    assert_eq!(query.full_collection_name, "admin.$cmd");
    let body = query.query.to_document().unwrap();
    assert_eq!(body.get_i32("ismaster").unwrap(), 1);
    assert!(body.get_bool("helloOk").unwrap());
    assert_eq!(body.get_str("backpressure").unwrap(), "2");
    let mut again = Vec::new();
    query.encode(request_id, &mut again);
    assert_eq!(again, bytes);
}

#[test]
fn mongosh_end_sessions_uses_more_to_come() {
    let bytes = hex(include_str!(
        "testdata/mongosh-end-sessions-more-to-come.hex"
    ));
    let Request::Msg {
        request_id, msg, ..
    } = decode_request(&frame(&bytes)).unwrap()
    else {
        panic!("OP_MSG")
    };
    assert!(msg.flags.more_to_come());
    let body = msg.body.to_document().unwrap();
    assert!(matches!(body.get("endSessions"), Some(Bson::Array(_))));
    assert_eq!(body.get_document("writeConcern").unwrap(), &doc! {"w": 0});
    let mut again = Vec::new();
    msg.encode(request_id, 0, &mut again);
    assert_eq!(again, bytes);
}

#[test]
fn pymongo_hello_and_insert_with_a_document_sequence_round_trip() {
    let bytes = hex(include_str!("testdata/pymongo-hello-op-msg.hex"));
    let Request::Msg {
        request_id, msg, ..
    } = decode_request(&frame(&bytes)).unwrap()
    else {
        panic!("OP_MSG")
    };
    assert_eq!(
        msg.body.to_document().unwrap().get_str("$db").unwrap(),
        "admin"
    );
    let mut again = Vec::new();
    msg.encode(request_id, 0, &mut again);
    assert_eq!(again, bytes);

    let bytes = hex(include_str!(
        "testdata/pymongo-insert-document-sequence.hex"
    ));
    let Request::Msg {
        request_id, msg, ..
    } = decode_request(&frame(&bytes)).unwrap()
    else {
        panic!("OP_MSG")
    };
    assert_eq!(msg.sequences.len(), 1);
    assert_eq!(msg.sequences[0].identifier, "documents");
    assert_eq!(msg.sequences[0].documents.len(), 1);
    assert_eq!(
        msg.body.to_document().unwrap().get_str("insert").unwrap(),
        "c"
    );
    let mut again = Vec::new();
    msg.encode(request_id, 0, &mut again);
    assert_eq!(again, bytes);
}

fn small_document() -> impl Strategy<Value = RawDocumentBuf> {
    prop::collection::vec(("[a-z]{1,6}", any::<i64>(), "[ -~]{0,12}"), 0..5).prop_map(|fields| {
        let mut doc = bson::Document::new();
        for (k, n, s) in fields {
            doc.insert(k.clone(), n);
            doc.insert(format!("{k}_s"), s);
        }
        RawDocumentBuf::from_document(&doc).unwrap()
    })
}

proptest! {
    #[test]
    fn op_msg_round_trips(
        body in small_document(),
        sequences in prop::collection::vec(prop::collection::vec(small_document(), 0..4), 0..3),
        checksum in any::<bool>(),
        compressor in prop::sample::select(vec![None, Some(Compressor::Snappy), Some(Compressor::Zlib), Some(Compressor::Zstd)]),
        id in any::<i32>(),
    ) {
        let msg = OpMsg {
            flags: MsgFlags(if checksum { MsgFlags::CHECKSUM_PRESENT } else { 0 }),
            body,
            sequences: sequences
                .into_iter()
                .enumerate()
                .map(|(i, documents)| DocumentSequence { identifier: format!("seq{i}"), documents })
                .collect(),
        };
        let mut bytes = Vec::new();
        msg.encode(id, 0, &mut bytes);
        if let Some(c) = compressor {
            bytes = compression::compress_message(&bytes, c);
        }
        match decode_request(&frame(&bytes)).unwrap() {
            Request::Msg { request_id, msg: decoded, compressor: used } => {
                prop_assert_eq!(request_id, id);
                prop_assert_eq!(used, compressor);
                prop_assert_eq!(decoded, msg);
            }
            other => prop_assert!(false, "decoded as {:?}", other),
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 16..512), op in prop::sample::select(vec![1i32, 2001, 2004, 2005, 2012, 2013, 7])) {
        let mut bytes = bytes;
        let len = bytes.len() as i32;
        bytes[..4].copy_from_slice(&len.to_le_bytes());
        bytes[12..16].copy_from_slice(&op.to_le_bytes());
        let _ = decode_request(&frame(&bytes));
    }

    #[test]
    fn mutated_real_messages_never_panic(position in 0usize..400, value in any::<u8>()) {
        for text in [
            include_str!("testdata/mongosh-ismaster-op-query.hex"),
            include_str!("testdata/pymongo-insert-document-sequence.hex"),
        ] {
            let mut bytes = hex(text);
            let at = position % bytes.len();
            bytes[at] = value;
            if let Ok(Request::Msg { msg, .. }) = decode_request(&frame(&bytes)) {
                // Decoded documents must be safe to walk even if their content is corrupt.
                for element in msg.body.iter() {
                    let _ = element.map(|(_, v)| v.to_raw_bson());
                }
            }
        }
    }
}
