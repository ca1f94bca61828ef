//! Reply shapes several commands and roles share.

use bson::{RawArrayBuf, RawDocumentBuf, rawdoc};

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
