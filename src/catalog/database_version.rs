//! The database version: which instance of a database (uuid, timestamp) and how often its
//! primary shard changed (lastMod). Routers attach it to requests; shards check it.

use crate::error::{MongoError, Result};
use bson::{Bson, Document, Timestamp, doc, spec::BinarySubtype};
use uuid::Uuid;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DatabaseVersion {
    pub uuid: Uuid,
    pub timestamp: Timestamp,
    pub last_mod: i32,
}

impl DatabaseVersion {
    /// A new database: fresh uuid, lastMod 1.
    pub fn new(timestamp: Timestamp) -> Self {
        DatabaseVersion {
            uuid: Uuid::new_v4(),
            timestamp,
            last_mod: 1,
        }
    }

    pub fn to_document(&self) -> Document {
        doc! {
            "uuid": Bson::Binary(bson::Binary { subtype: BinarySubtype::Uuid, bytes: self.uuid.as_bytes().to_vec() }),
            "timestamp": self.timestamp,
            "lastMod": self.last_mod,
        }
    }

    pub fn from_document(doc: &Document) -> Result<Self> {
        let bad = || MongoError::failed_to_parse(format!("invalid databaseVersion: {doc}"));
        let uuid = match doc.get("uuid") {
            Some(Bson::Binary(b)) => Uuid::from_slice(&b.bytes).map_err(|_| bad())?,
            _ => return Err(bad()),
        };
        let timestamp = doc.get_timestamp("timestamp").map_err(|_| bad())?;
        let last_mod = match doc.get("lastMod") {
            Some(Bson::Int32(v)) => *v,
            Some(Bson::Int64(v)) => *v as i32,
            _ => return Err(bad()),
        };
        Ok(DatabaseVersion {
            uuid,
            timestamp,
            last_mod,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let v = DatabaseVersion::new(Timestamp {
            time: 5,
            increment: 1,
        });
        assert_eq!(DatabaseVersion::from_document(&v.to_document()).unwrap(), v);
        assert_eq!(v.last_mod, 1);
    }
}
