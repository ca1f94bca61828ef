//! Reply shapes several commands and roles share.

use crate::error::{ErrorCode, MongoError, Result};
use bson::{RawArrayBuf, RawDocumentBuf, rawdoc};

/// MongoDB's `BSONObjMaxInternalSize`: the largest document a command may return (16 MB and
/// room for the reply around it).
pub const MAX_INTERNAL_OBJECT_SIZE: usize = 16 * 1024 * 1024 + 16 * 1024;

/// A computed document as a command returns it: refused, with MongoDB's BSONObjectTooLarge,
/// when it is larger than a document may be.
pub fn result_document(doc: &bson::Document) -> Result<RawDocumentBuf> {
    let raw = RawDocumentBuf::from_document(doc)?;
    let size = raw.as_bytes().len();
    if size > MAX_INTERNAL_OBJECT_SIZE {
        let first = doc.iter().next().map_or_else(
            || "EOO".to_string(),
            |(name, value)| crate::document::display::render_element(name, value),
        );
        return Err(MongoError::new(
            ErrorCode::BSONObjectTooLarge,
            format!(
                "BSONObj size: {size} ({size:#X}) is invalid. Size must be between 0 and {MAX_INTERNAL_OBJECT_SIZE}(16MB) First element: {first}"
            ),
        ));
    }
    Ok(raw)
}

/// `{cursor: {firstBatch|nextBatch: [...], id, ns}}`.
pub fn cursor_reply(ns: &str, docs: Vec<RawDocumentBuf>, id: i64, first: bool) -> RawDocumentBuf {
    let mut batch = RawArrayBuf::new();
    for doc in docs {
        batch.push(doc);
    }
    let mut cursor = RawDocumentBuf::new();
    cursor.append(if first { "firstBatch" } else { "nextBatch" }, batch);
    cursor.append("id", id);
    cursor.append("ns", ns);
    rawdoc! {"cursor": cursor}
}

/// Most bytes of documents in one reply batch.
pub const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024;

/// Moves documents from the front of `from` into `batch` while it stays within `max_docs` and
/// [`MAX_BATCH_BYTES`] (`bytes` counts what the batch holds; a first document always goes in,
/// so that a batch is never empty while documents remain). Returns whether the batch is full.
pub fn fill_batch(
    from: &mut std::collections::VecDeque<RawDocumentBuf>,
    batch: &mut Vec<RawDocumentBuf>,
    bytes: &mut usize,
    max_docs: usize,
) -> bool {
    while let Some(doc) = from.front() {
        let size = doc.as_bytes().len();
        if batch.len() >= max_docs || (*bytes + size > MAX_BATCH_BYTES && !batch.is_empty()) {
            return true;
        }
        *bytes += size;
        batch.push(from.pop_front().expect("checked non-empty"));
    }
    batch.len() >= max_docs
}

/// The documents of a cursor reply's first batch (empty when the reply has none).
pub fn first_batch(reply: &bson::Document) -> Vec<bson::Document> {
    reply
        .get_document("cursor")
        .ok()
        .and_then(|c| c.get_array("firstBatch").ok())
        .map(|batch| {
            batch
                .iter()
                .filter_map(|d| d.as_document().cloned())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod size_tests {
    #[test]
    fn documents_past_the_internal_limit_are_refused_with_mongodbs_message() {
        let small = bson::doc! {"_id": 1};
        assert!(super::result_document(&small).is_ok());
        let big = bson::doc! {"_id": "ana", "pad": "x".repeat(17 * 1024 * 1024)};
        let err = super::result_document(&big).unwrap_err();
        assert_eq!(err.code().code(), 10334);
        assert!(
            err.message().starts_with("BSONObj size: 17825820 (0x110001C) is invalid. Size must be between 0 and 16793600(16MB) First element: _id: \"ana\""),
            "{}",
            err.message()
        );
    }
}

/// A snapshot read's reply naming the cluster time it read at, as MongoDB's: inside `cursor`
/// for find and aggregate, at the top for `distinct` (replacing a time a shard put there).
pub fn with_at_cluster_time(
    reply: RawDocumentBuf,
    command: &str,
    time: bson::Timestamp,
) -> Result<RawDocumentBuf> {
    let at = bson::RawBson::Timestamp(time);
    let mut out = RawDocumentBuf::new();
    for element in reply.iter() {
        let (key, value) = element?;
        match value {
            bson::RawBsonRef::Document(cursor) if key == "cursor" && command != "distinct" => {
                let mut cursor_out = RawDocumentBuf::new();
                for element in cursor.iter() {
                    let (k, v) = element?;
                    if k != "atClusterTime" {
                        cursor_out.append_ref(k, v);
                    }
                }
                cursor_out.append("atClusterTime", at.clone());
                out.append(key, cursor_out);
            }
            _ if key == "atClusterTime" => {}
            value => out.append_ref(key, value),
        }
    }
    if command == "distinct" {
        out.append("atClusterTime", at);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_reads_time_goes_into_the_cursor_or_the_top() {
        let time = bson::Timestamp {
            time: 5,
            increment: 1,
        };
        let shard_time = bson::Timestamp {
            time: 1,
            increment: 1,
        };
        let reply =
            rawdoc! {"cursor": {"id": 0_i64, "firstBatch": [], "atClusterTime": shard_time}};
        let out = with_at_cluster_time(reply, "find", time).unwrap();
        let cursor = out.get_document("cursor").unwrap();
        assert_eq!(cursor.get_timestamp("atClusterTime").unwrap(), time);
        assert_eq!(cursor.iter().count(), 3, "one time, the router's");
        let out = with_at_cluster_time(rawdoc! {"values": []}, "distinct", time).unwrap();
        assert_eq!(out.get_timestamp("atClusterTime").unwrap(), time);
    }
}
