//! The index keys a document produces for each index of its collection.

use super::catalog::{CollectionMeta, IndexMeta};
use crate::datanode::index::{self, IndexKeys};
use crate::document::keystring;
use crate::document::type_bits::TypeBits;
use crate::error::{MongoError, Result};
use bson::{Bson, Document, RawDocument};

/// The keys one document produces in the indexes of its collection. The document is parsed at
/// most once, and only for secondary indexes: the `_id` key is read straight from the raw bytes
/// (inserts are the hot path).
pub struct DocumentKeys<'a> {
    raw: &'a RawDocument,
    parsed: Option<Document>,
}

impl<'a> DocumentKeys<'a> {
    pub fn new(raw: &'a RawDocument) -> Self {
        DocumentKeys { raw, parsed: None }
    }

    pub fn keys(&mut self, index: &IndexMeta) -> Result<IndexKeys> {
        let Some(spec) = &index.parsed else {
            let id = self
                .raw
                .get("_id")?
                .ok_or_else(|| MongoError::internal("document without _id reached storage"))?;
            let id = id_key_value(index, Bson::try_from(id.to_raw_bson())?);
            return Ok(IndexKeys {
                keys: vec![keystring::encode_one(&id)],
                types: vec![TypeBits::of_component(&id, false).into_bytes()],
                multikey: false,
                multikey_paths: Vec::new(),
            });
        };
        if self.parsed.is_none() {
            self.parsed = Some(self.raw.to_owned().to_document()?);
        }
        index::index_keys(spec, self.parsed.as_ref().expect("parsed above"))
    }
}

/// The key of an `_id` value in the `_id` index of `coll` (in the index's collation).
pub fn id_key(coll: &CollectionMeta, id: &Bson) -> Vec<u8> {
    keystring::encode_one(&id_key_value(coll.id_index(), id.clone()))
}

/// An `_id` value as the `_id` index keys it: in the index's collation.
fn id_key_value(id_index: &IndexMeta, id: Bson) -> Bson {
    match &id_index.id_collation {
        Some(collation) => collation.comparison_key(&id),
        None => id,
    }
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
