//! Target `bson`: one received document put through what the server does with it — the
//! wire layer's validation (well formed, `maxBSONDepth`), conversion to `bson::Document`
//! and back, MongoDB's comparison order, the index key encoding and its decoding, hashing
//! and the rendering of values in messages.

use bson::{Bson, RawDocument, RawDocumentBuf};
use docgrid::document::{display, hashed, keystring, order};
use std::cmp::Ordering;

/// How the server validates a document it received, before anything else reads it: the wire
/// layer's iterative validator, with the process's `maxBSONDepth`.
fn validate(doc: &RawDocument) -> bool {
    docgrid::wire::validate_document(doc.as_bytes(), docgrid::depth::max_bson_depth()).is_ok()
}

pub fn run(data: &[u8]) {
    let Ok(raw) = RawDocument::from_bytes(data) else {
        return;
    };
    if !validate(raw) {
        return;
    }
    let Ok(doc) = bson::Document::try_from(raw) else {
        return;
    };
    if let Ok(again) = RawDocumentBuf::from_document(&doc) {
        let _ = again.to_document();
    }
    assert_eq!(
        order::compare_documents(&doc, &doc),
        Ordering::Equal,
        "a document compares equal to itself"
    );
    let _ = display::render_doc(&doc);
    let values: Vec<&Bson> = doc.values().collect();
    for value in &values {
        assert!(order::values_equal(value, value), "a value equals itself");
        let key = keystring::encode_one(value);
        let _ = keystring::successor(&key);
        let _ = hashed::hash_value(value);
    }
    for pair in values.windows(2) {
        // The key encoding keeps MongoDB's order: byte order of keys is the values' order.
        let by_value = order::compare_values(pair[0], pair[1]);
        let by_key = keystring::encode_one(pair[0]).cmp(&keystring::encode_one(pair[1]));
        assert_eq!(
            by_value, by_key,
            "key order of {:?} and {:?}",
            pair[0], pair[1]
        );
    }
}
