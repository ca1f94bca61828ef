//! Collection and index metadata for the planner's and the covering's unit tests.

use crate::datanode::index::IndexSpec;
use crate::datanode::storage::{CollectionMeta, IndexMeta};
use bson::{Document, doc};
use std::sync::Arc;

/// A ready index on `key` stored under table `ident`.
pub fn index(key: Document, ident: i64, multikey: bool) -> IndexMeta {
    index_of(doc! {"key": key}, ident, multikey)
}

/// The index of the specification `spec` (with its options).
pub fn index_of(spec: Document, ident: i64, multikey: bool) -> IndexMeta {
    let spec = IndexSpec::parse(&spec).expect("a valid index");
    IndexMeta {
        name: spec.name.clone(),
        ident,
        spec: spec.document.clone(),
        parsed: Some(Arc::new(spec)),
        multikey,
        multikey_paths: Default::default(),
        ready: true,
        id_collation: None,
    }
}

/// Collection `c` with its `_id` index and `indexes`.
pub fn collection(indexes: Vec<IndexMeta>) -> CollectionMeta {
    let id = IndexMeta {
        name: "_id_".into(),
        ident: 1,
        spec: doc! {"v": 2, "key": {"_id": 1}, "name": "_id_"},
        parsed: None,
        multikey: false,
        multikey_paths: Default::default(),
        ready: true,
        id_collation: None,
    };
    CollectionMeta {
        name: "c".into(),
        ident: 0,
        uuid: uuid::Uuid::nil(),
        options: Document::new(),
        indexes: std::iter::once(id).chain(indexes).collect(),
    }
}
