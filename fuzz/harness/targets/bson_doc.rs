//! Target `bson`: one received document put through what the server does with it — the
//! check that it is well formed, the walk over its elements, conversion to `bson::Document`
//! and back, MongoDB's comparison order, the index key encoding and its decoding, hashing
//! and the rendering of values in messages.

use bson::{Bson, RawBsonRef, RawDocument, RawDocumentBuf};
use docgrid::document::{display, hashed, keystring, order};
use std::cmp::Ordering;

/// How the server validates a document it received before anything else reads it. Today the
/// bson crate's checks as the elements are read; point this at the wire layer's validator
/// for incoming messages when it lands, and the whole target fuzzes it.
fn validate(doc: &RawDocument) -> Result<(), String> {
    walk(doc)
}

/// Reads every element at every depth, without recursion (as a validator must).
fn walk(doc: &RawDocument) -> Result<(), String> {
    let mut pending = vec![RawBsonRef::Document(doc)];
    while let Some(container) = pending.pop() {
        let values: Box<dyn Iterator<Item = bson::raw::Result<RawBsonRef<'_>>>> = match container {
            RawBsonRef::Document(d) => Box::new(d.iter().map(|e| e.map(|(_, v)| v))),
            RawBsonRef::Array(a) => Box::new(a.into_iter()),
            RawBsonRef::JavaScriptCodeWithScope(c) => {
                Box::new(c.scope.iter().map(|e| e.map(|(_, v)| v)))
            }
            _ => continue,
        };
        for value in values {
            let value = value.map_err(|e| e.to_string())?;
            if matches!(
                value,
                RawBsonRef::Document(_)
                    | RawBsonRef::Array(_)
                    | RawBsonRef::JavaScriptCodeWithScope(_)
            ) {
                pending.push(value);
            }
        }
    }
    Ok(())
}

pub fn run(data: &[u8]) {
    let Ok(raw) = RawDocument::from_bytes(data) else {
        return;
    };
    if validate(raw).is_err() {
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
