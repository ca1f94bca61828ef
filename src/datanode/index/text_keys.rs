//! The keys a document produces in a text index, as MongoDB's `FTSIndexFormat` makes them:
//! one per term, `(prefix values..., term, score, suffix values...)`; a term longer than 32
//! bytes is stored as its first 32 bytes and the hex MD5 of the whole term. The other key
//! fields may not be arrays; a document without terms has no keys (text indexes are sparse).

use super::keys::{IndexKeys, field_values};
use super::spec::IndexSpec;
use crate::document::keystring;
use crate::document::type_bits::TypeBits;
use crate::error::{MongoError, Result};
use crate::query::text::TextIndex;
use bson::{Bson, Document};
use md5::Digest;

/// Terms up to this many bytes are stored whole.
const TERM_PREFIX_BYTES: usize = 32;

/// The term as the index stores it.
pub fn stored_term(term: &str) -> String {
    if term.len() <= TERM_PREFIX_BYTES {
        return term.to_string();
    }
    let mut cut = TERM_PREFIX_BYTES;
    while !term.is_char_boundary(cut) {
        cut -= 1;
    }
    let digest = md5::Md5::digest(term.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}{hex}", &term[..cut])
}

/// The keys of `doc` in the text index `index` (whose text specification is `text`).
pub fn text_keys(index: &IndexSpec, text: &TextIndex, doc: &Document) -> Result<IndexKeys> {
    let scores = text.scores(doc)?;
    if scores.is_empty() {
        return Ok(IndexKeys::default());
    }
    let extra = |path: &str| -> Result<Bson> {
        let values = field_values(doc, path);
        if !values.arrays.is_empty() {
            return Err(MongoError::location(
                16675,
                "cannot have a multi-key as a prefix to a text index",
            ));
        }
        Ok(values.values.into_iter().next().unwrap_or(Bson::Null))
    };
    let mut keys = Vec::with_capacity(scores.len());
    for (term, score) in &scores {
        let mut key = Vec::new();
        let mut bits = TypeBits::new();
        for field in &index.fields {
            let value = match field.path.as_str() {
                "_fts" => Bson::String(stored_term(term)),
                "_ftsx" => Bson::Double(*score),
                path => extra(path)?,
            };
            let descending = field.kind == super::FieldKind::Descending;
            keystring::encode_value(&value, descending, &mut key);
            bits.push_component(&value, false);
        }
        keys.push((key, bits));
    }
    let multikey = keys.len() > 1;
    Ok(IndexKeys::from_unsorted(keys, multikey))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn one_key_per_term_between_the_other_fields() {
        let spec = IndexSpec::parse(&doc! {"key": {"a": 1, "t": "text"}}).unwrap();
        let text = spec.text.clone().unwrap();
        let keys = text_keys(&spec, &text, &doc! {"a": 7, "t": "red apples, red"}).unwrap();
        assert_eq!(keys.keys.len(), 2);
        let mut expected = Vec::new();
        for value in [
            Bson::Int32(7),
            Bson::String("appl".into()),
            Bson::Double(0.5 * 1.0 / 3.0 + 0.5),
        ] {
            keystring::encode_value(&value, false, &mut expected);
        }
        assert_eq!(keys.keys[0], expected);
        assert!(
            text_keys(&spec, &text, &doc! {"a": 7})
                .unwrap()
                .keys
                .is_empty()
        );
        assert!(
            text_keys(&spec, &text, &doc! {"a": 7, "t": "the"})
                .unwrap()
                .keys
                .is_empty()
        );
        let err = text_keys(&spec, &text, &doc! {"a": [1, 2], "t": "x"}).unwrap_err();
        assert_eq!(err.code().code(), 16675);
        assert_eq!(stored_term("short"), "short");
        let long = "x".repeat(40);
        assert_eq!(stored_term(&long).len(), 64);
        assert!(stored_term(&long).starts_with(&"x".repeat(32)));
    }
}
