//! Approximate sizes of values held in memory, counted against the stages' memory limits. They
//! follow the BSON encoding (what a document costs on disk is close to what it costs here) but
//! are computed without encoding anything.

use bson::{Bson, Document};

/// About the bytes `doc` occupies.
pub fn approximate_document_size(doc: &Document) -> usize {
    // Length prefix and terminator, then per field a type byte, the name and its terminator.
    5 + doc
        .iter()
        .map(|(name, value)| name.len() + 2 + approximate_value_size(value))
        .sum::<usize>()
}

/// About the bytes `value` occupies.
pub fn approximate_value_size(value: &Bson) -> usize {
    match value {
        Bson::Null | Bson::Undefined | Bson::MinKey | Bson::MaxKey => 0,
        Bson::Boolean(_) => 1,
        Bson::Int32(_) => 4,
        Bson::Int64(_) | Bson::Double(_) | Bson::DateTime(_) | Bson::Timestamp(_) => 8,
        Bson::ObjectId(_) => 12,
        Bson::Decimal128(_) => 16,
        Bson::String(s) | Bson::Symbol(s) | Bson::JavaScriptCode(s) => s.len() + 5,
        Bson::Binary(binary) => binary.bytes.len() + 5,
        Bson::RegularExpression(regex) => regex.pattern.len() + regex.options.len() + 2,
        Bson::Document(doc) => approximate_document_size(doc),
        // Array elements are named by their index: a few bytes each.
        Bson::Array(items) => {
            5 + items
                .iter()
                .map(|item| 4 + approximate_value_size(item))
                .sum::<usize>()
        }
        Bson::JavaScriptCodeWithScope(code) => {
            code.code.len() + 9 + approximate_document_size(&code.scope)
        }
        Bson::DbPointer(_) => 17,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{RawDocumentBuf, doc};

    #[test]
    fn close_to_the_encoded_size() {
        let docs = [
            doc! {},
            doc! {"_id": 1, "name": "abc", "tags": ["x", "y", "z"], "n": {"a": 1.5, "b": true}},
            doc! {"pad": "x".repeat(1000), "nested": {"deeper": {"list": [1_i64, 2_i64]}}},
        ];
        for doc in docs {
            let exact = RawDocumentBuf::from_document(&doc)
                .unwrap()
                .as_bytes()
                .len();
            let approx = approximate_document_size(&doc);
            assert!(
                approx.abs_diff(exact) <= exact / 5 + 8,
                "{doc}: {approx} vs {exact}"
            );
        }
    }
}
