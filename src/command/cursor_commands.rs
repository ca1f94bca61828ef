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
        check_collection_name(&collection)?;
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

/// MongoDB's checks of `getMore`'s `collection` (`validateGetMoreCollectionName`).
fn check_collection_name(collection: &str) -> Result<()> {
    let message = if collection.is_empty() {
        "Collection names cannot be empty".to_string()
    } else if collection.starts_with('.') {
        format!("Collection names cannot start with '.': {collection}")
    } else if collection.contains('\0') {
        "Collection names cannot have embedded null characters".to_string()
    } else {
        return Ok(());
    };
    Err(MongoError::invalid_namespace(message))
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

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn get_more_collection_names_are_checked() {
        let message = |collection: &str| {
            let req =
                CommandRequest::new("app", rawdoc! {"getMore": 1_i64, "collection": collection})
                    .unwrap();
            GetMore::parse(&req).err().map(|e| e.message().to_string())
        };
        assert_eq!(message("c"), None);
        assert_eq!(message("").unwrap(), "Collection names cannot be empty");
        assert_eq!(
            message(".c").unwrap(),
            "Collection names cannot start with '.': .c"
        );
        assert_eq!(
            message("a\0b").unwrap(),
            "Collection names cannot have embedded null characters"
        );
    }
}
