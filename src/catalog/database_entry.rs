//! A `config.databases` entry: a database's primary shard and version.

use super::DatabaseVersion;
use crate::error::{MongoError, Result};
use bson::{Document, doc};

#[derive(Clone, Debug, PartialEq)]
pub struct DatabaseEntry {
    pub name: String,
    pub primary: String,
    pub version: DatabaseVersion,
}

impl DatabaseEntry {
    pub fn from_document(doc: &Document) -> Result<Self> {
        let bad = || MongoError::failed_to_parse(format!("invalid config.databases entry: {doc}"));
        Ok(DatabaseEntry {
            name: doc.get_str("_id").map_err(|_| bad())?.to_string(),
            primary: doc.get_str("primary").map_err(|_| bad())?.to_string(),
            version: DatabaseVersion::from_document(
                doc.get_document("version").map_err(|_| bad())?,
            )?,
        })
    }

    pub fn to_document(&self) -> Document {
        doc! {"_id": &self.name, "primary": &self.primary, "version": self.version.to_document()}
    }

    /// The query that reads this database's entry from `config.databases`.
    pub fn find_command(db: &str) -> Document {
        doc! {"find": "databases", "filter": {"_id": db}, "limit": 1, "singleBatch": true}
    }
}
