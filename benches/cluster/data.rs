//! The documents every workload and ceiling uses, and the sizes of the messages that carry them.

use mongodb::bson::{RawDocumentBuf, rawdoc};

/// `k` of document `i` in a collection of `n`: a permutation of `0..n` unrelated to insertion
/// order, so a `k` range is ~10 random records.
pub fn key_of(i: usize, n: usize) -> i64 {
    ((i as u128 * 2_654_435_761u128 + 12_345) % n.max(1) as u128) as i64
}

/// Document `i` of a collection of `n`: ~110 bytes of BSON (`_id`, the indexed `k`, and four
/// fields for the updates, groups and filters).
pub fn make_doc(i: usize, n: usize) -> RawDocumentBuf {
    rawdoc! {
        "_id": i as i64,
        "k": key_of(i, n),
        "name": format!("item-{i:08}"),
        "qty": (i % 1000) as i32,
        "price": i as f64 * 0.01,
        "tag": "abcdefghij",
    }
}

/// Documents `start..end` of a collection of `n`.
pub fn batch(start: usize, end: usize, n: usize) -> Vec<RawDocumentBuf> {
    (start..end).map(|i| make_doc(i, n)).collect()
}

/// OP_MSG header (16) + flag bits (4) + section kind (1).
const OP_MSG_OVERHEAD: usize = 21;

/// Bytes of a `find` request for one `_id` as the driver sends it (with `$db`, `lsid`,
/// `limit`, `singleBatch`), and of its reply carrying `docs` documents: the message sizes the
/// TCP ceiling exchanges.
pub fn find_message_sizes(docs: usize) -> (usize, usize) {
    let request = rawdoc! {
        "find": "items",
        "filter": {"_id": 123_456_i64},
        "limit": 1_i64,
        "singleBatch": true,
        "lsid": {"id": mongodb::bson::Binary {
            subtype: mongodb::bson::spec::BinarySubtype::Uuid,
            bytes: vec![0; 16],
        }},
        "$db": "bench",
    };
    let mut batch = mongodb::bson::RawArrayBuf::new();
    for i in 0..docs {
        batch.push(make_doc(1_000_000 + i, 10_000_000));
    }
    let reply = rawdoc! {
        "cursor": {"firstBatch": batch, "id": 0_i64, "ns": "bench.items"},
        "ok": 1.0,
    };
    (
        request.as_bytes().len() + OP_MSG_OVERHEAD,
        reply.as_bytes().len() + OP_MSG_OVERHEAD,
    )
}

/// Bytes of an `insert` of `docs` documents (a kind-1 document sequence) and of its reply.
pub fn insert_message_sizes(docs: usize) -> (usize, usize) {
    let documents: usize = (0..docs).map(|i| make_doc(i, docs).as_bytes().len()).sum();
    let command = rawdoc! {"insert": "items", "ordered": true, "$db": "bench"};
    let reply = rawdoc! {"n": docs as i32, "ok": 1.0};
    (
        command.as_bytes().len() + OP_MSG_OVERHEAD + 5 + "documents\0".len() + documents,
        reply.as_bytes().len() + OP_MSG_OVERHEAD,
    )
}
