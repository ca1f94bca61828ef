//! The index keys a document produces for each index of its collection.

use super::catalog::IndexMeta;
use crate::document::keystring;
use crate::error::{MongoError, Result};
use bson::{Bson, Document, RawDocument};

/// The keys of `doc` in `index`. The `_id` index has exactly one key per document; it is read
/// straight from the raw bytes (inserts are the hot path, and need no parsed document).
pub fn index_keys(index: &IndexMeta, doc: &RawDocument) -> Result<Vec<Vec<u8>>> {
    if index.name == "_id_" {
        let id = doc
            .get("_id")?
            .ok_or_else(|| MongoError::internal("document without _id reached storage"))?;
        return Ok(vec![keystring::encode_one(&Bson::try_from(
            id.to_raw_bson(),
        )?)]);
    }
    Err(MongoError::internal(format!(
        "secondary index {} has no key generator",
        index.name
    )))
}

/// The key of an `_id` value in the `_id` index.
pub fn id_key(id: &Bson) -> Vec<u8> {
    keystring::encode_one(id)
}

/// The `keyValue` a DuplicateKey error reports: each key-pattern field with the document's value.
pub fn key_value(index: &IndexMeta, doc: &Document) -> Document {
    index
        .key_pattern()
        .keys()
        .map(|field| {
            (
                field.clone(),
                crate::document::path::get_path(doc, field)
                    .cloned()
                    .unwrap_or(Bson::Null),
            )
        })
        .collect()
}

/// MongoDB's DuplicateKey error for `doc` colliding in `index` of `db.coll`.
pub fn duplicate_key_error(ns: &str, index: &IndexMeta, doc: &RawDocument) -> MongoError {
    let doc = match doc.to_owned().to_document() {
        Ok(doc) => doc,
        Err(e) => return e.into(),
    };
    let key_value = key_value(index, &doc);
    MongoError::new(
        crate::error::ErrorCode::DuplicateKey,
        format!(
            "E11000 duplicate key error collection: {ns} index: {} dup key: {}",
            index.name,
            crate::document::display::render_doc(&key_value)
        ),
    )
    .with_extra(bson::doc! {"keyPattern": index.key_pattern(), "keyValue": key_value})
}
