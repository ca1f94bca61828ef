//! The typed `getMore` and `killCursors` commands, shared by the router and the shards.

use super::{CommandRequest, bson_type_name};
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, RawBsonRef};

/// `{getMore: <cursor id>, collection, batchSize?}`.
pub struct GetMore {
    pub cursor_id: i64,
    pub collection: String,
    /// `None`: as many documents as fit in 16 MiB.
    pub batch_size: Option<usize>,
    /// How long an awaitData cursor waits for new documents (only those take one).
    pub max_time: Option<std::time::Duration>,
}

impl GetMore {
    pub fn parse(req: &CommandRequest) -> Result<Self> {
        let args = req.args();
        let cursor_id = match args.target()? {
            RawBsonRef::Int64(id) => id,
            other => {
                return Err(MongoError::type_mismatch(format!(
                    "BSON field 'getMore.getMore' is the wrong type '{}', expected type 'long'",
                    bson_type_name(other.element_type())
                )));
            }
        };
        let collection = args
            .str("collection")?
            .ok_or_else(|| missing("getMore", "collection"))?
            .to_string();
        let batch_size = args
            .non_negative("batchSize")?
            .filter(|b| *b > 0)
            .map(|b| b as usize);
        Ok(GetMore {
            cursor_id,
            collection,
            batch_size,
            max_time: super::max_time(&args)?,
        })
    }

    pub fn namespace(&self, db: &str) -> String {
        format!("{db}.{}", self.collection)
    }
}

/// `{killCursors: <collection>, cursors: [<cursor id>, ...]}`.
pub struct KillCursors {
    pub collection: String,
    pub cursor_ids: Vec<i64>,
}

impl KillCursors {
    pub fn parse(req: &CommandRequest) -> Result<Self> {
        let args = req.args();
        let collection = args.collection()?.to_string();
        let cursor_ids = args
            .array("cursors")?
            .ok_or_else(|| missing("killCursors", "cursors"))?
            .into_iter()
            .map(|id| match id {
                Bson::Int64(id) => Ok(id),
                other => Err(MongoError::type_mismatch(format!(
                    "BSON field 'killCursors.cursors' is the wrong type '{}', expected type 'long'",
                    crate::document::types::type_name(&other)
                ))),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(KillCursors {
            collection,
            cursor_ids,
        })
    }

    pub fn namespace(&self, db: &str) -> String {
        format!("{db}.{}", self.collection)
    }

    /// The reply: which ids were killed and which were not found.
    pub fn reply(killed: Vec<i64>, not_found: Vec<i64>) -> Result<bson::RawDocumentBuf> {
        Ok(bson::RawDocumentBuf::from_document(&bson::doc! {
            "cursorsKilled": killed,
            "cursorsNotFound": not_found,
            "cursorsAlive": Bson::Array(vec![]),
            "cursorsUnknown": Bson::Array(vec![]),
        })?)
    }
}

/// The IDL error for a missing required field.
pub fn missing(command: &str, field: &str) -> MongoError {
    MongoError::new(
        ErrorCode::IDLFailedToParse,
        format!("BSON field '{command}.{field}' is missing but a required field"),
    )
}
