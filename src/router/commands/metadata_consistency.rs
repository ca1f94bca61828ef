//! `checkMetadataConsistency` on the router: on `admin` the whole cluster, on another database
//! that database, with a collection name that collection; the config server compares the
//! routing table with every shard (`_configsvrCheckMetadataConsistency`) and the router answers
//! the inconsistencies as a cursor, as mongos does.

use super::super::RouterState;
use crate::command::CommandRequest;
use crate::command::cursor_reply;
use crate::error::{MongoError, Result};
use crate::server::RequestContext;
use bson::{RawBsonRef, RawDocumentBuf, doc};

pub(super) async fn check_metadata_consistency(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let mut command = doc! {"_configsvrCheckMetadataConsistency": 1};
    if req.db != "admin" {
        crate::catalog::validate_db_name(&req.db)?;
        command.insert("db", &req.db);
        match args.target()? {
            RawBsonRef::String(coll) => {
                crate::catalog::validate_collection_name(&req.db, coll)?;
                command.insert("collection", coll);
            }
            RawBsonRef::Int32(1) | RawBsonRef::Int64(1) | RawBsonRef::Double(1.0) => {}
            _ => {
                return Err(MongoError::type_mismatch(
                    "checkMetadataConsistency takes 1 or a collection name",
                ));
            }
        }
    }
    if let Some(check_indexes) = args.bool("checkIndexes")? {
        command.insert("checkIndexes", check_indexes);
    }
    let reply = state.config.run_doc("admin", command).await?;
    let batch = reply
        .get_array("inconsistencies")
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.as_document())
                .map(RawDocumentBuf::from_document)
                .collect::<std::result::Result<Vec<_>, _>>()
        })
        .unwrap_or_else(|_| Ok(Vec::new()))?;
    Ok(cursor_reply(
        &format!("{}.$cmd.aggregate", req.db),
        batch,
        0,
        true,
    ))
}
