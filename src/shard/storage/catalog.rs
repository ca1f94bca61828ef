//! The per-database catalog: collections (name, table ident, UUID, options) and their indexes,
//! persisted in the database file itself so that catalog and data change atomically.

use super::sql_error;
use crate::error::Result;
use bson::{Bson, Document, doc};
use sqlx::{Row, SqliteConnection};
use std::collections::BTreeMap;
use uuid::Uuid;

/// A collection as the catalog records it.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectionMeta {
    pub name: String,
    /// Suffix of the collection's table (`c<ident>`); stable across renames.
    pub ident: i64,
    pub uuid: Uuid,
    pub options: Document,
    pub indexes: Vec<IndexMeta>,
}

/// An index as the catalog records it.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexMeta {
    pub name: String,
    /// Suffix of the index's table (`x<ident>`).
    pub ident: i64,
    /// The spec `listIndexes` shows (`{v, key, name, ...}`).
    pub spec: Document,
}

impl IndexMeta {
    pub fn key_pattern(&self) -> Document {
        self.spec.get_document("key").cloned().unwrap_or_default()
    }

    pub fn is_unique(&self) -> bool {
        self.name == "_id_" || matches!(self.spec.get("unique"), Some(Bson::Boolean(true)))
    }

    pub fn table(&self) -> String {
        format!("x{}", self.ident)
    }
}

impl CollectionMeta {
    pub fn table(&self) -> String {
        format!("c{}", self.ident)
    }

    pub fn id_index(&self) -> &IndexMeta {
        self.indexes
            .iter()
            .find(|i| i.name == "_id_")
            .expect("every collection has an _id index")
    }

    pub fn uuid_bson(&self) -> Bson {
        Bson::Binary(bson::Binary {
            subtype: bson::spec::BinarySubtype::Uuid,
            bytes: self.uuid.as_bytes().to_vec(),
        })
    }
}

/// The `_id` index spec every collection gets.
pub fn id_index_spec() -> Document {
    doc! {"v": 2, "key": {"_id": 1}, "name": "_id_"}
}

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS docgrid_collections (
    name TEXT PRIMARY KEY,
    ident INTEGER NOT NULL UNIQUE,
    uuid BLOB NOT NULL,
    options BLOB NOT NULL,
    doc_count INTEGER NOT NULL DEFAULT 0,
    data_size INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS docgrid_indexes (
    collection_ident INTEGER NOT NULL,
    name TEXT NOT NULL,
    ident INTEGER NOT NULL UNIQUE,
    spec BLOB NOT NULL,
    PRIMARY KEY (collection_ident, name)
);
";

/// Document count and data size of a collection, kept exact in the same transactions as the
/// writes that change them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CollectionStats {
    pub count: i64,
    pub data_size: i64,
}

pub(super) struct LoadedCatalog {
    pub collections: BTreeMap<String, CollectionMeta>,
    pub stats: BTreeMap<i64, CollectionStats>,
    pub next_ident: i64,
}

pub(super) async fn load(conn: &mut SqliteConnection) -> Result<LoadedCatalog> {
    let rows = sqlx::query(
        "SELECT name, ident, uuid, options, doc_count, data_size FROM docgrid_collections",
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(|e| sql_error("loading the catalog", e))?;
    let mut collections = BTreeMap::new();
    let mut stats = BTreeMap::new();
    let mut next_ident = 1;
    for row in rows {
        let name: String = row.get(0);
        let ident: i64 = row.get(1);
        let uuid_bytes: Vec<u8> = row.get(2);
        let options: Vec<u8> = row.get(3);
        stats.insert(
            ident,
            CollectionStats {
                count: row.get(4),
                data_size: row.get(5),
            },
        );
        next_ident = next_ident.max(ident + 1);
        collections.insert(
            name.clone(),
            CollectionMeta {
                name,
                ident,
                uuid: Uuid::from_slice(&uuid_bytes).unwrap_or_default(),
                options: bson::from_slice(&options).unwrap_or_default(),
                indexes: Vec::new(),
            },
        );
    }
    let rows = sqlx::query(
        "SELECT collection_ident, name, ident, spec FROM docgrid_indexes ORDER BY ident",
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(|e| sql_error("loading the index catalog", e))?;
    for row in rows {
        let coll: i64 = row.get(0);
        let ident: i64 = row.get(2);
        next_ident = next_ident.max(ident + 1);
        let spec: Vec<u8> = row.get(3);
        let index = IndexMeta {
            name: row.get(1),
            ident,
            spec: bson::from_slice(&spec).unwrap_or_default(),
        };
        if let Some(meta) = collections.values_mut().find(|c| c.ident == coll) {
            meta.indexes.push(index);
        }
    }
    Ok(LoadedCatalog {
        collections,
        stats,
        next_ident,
    })
}
