//! What insert, update, delete and findAndModify share: target lookup, write-concern handling
//! and the shape of write replies.

use super::super::DataNode;
use super::super::storage::{CollectionMeta, DatabaseStore};
use crate::catalog::validate_user_write;
use crate::command::{Args, CommandRequest, WriteConcern};
use crate::error::{ErrorCode, MongoError, Result};
use crate::wire::MAX_WRITE_BATCH_SIZE;
use bson::{Bson, Document, RawDocument, RawDocumentBuf};
use std::sync::Arc;

/// The collection a write goes to, created on first write as MongoDB does.
pub(super) async fn target<S: DataNode>(
    state: &S,
    req: &CommandRequest,
    create: bool,
) -> Result<Option<(Arc<DatabaseStore>, Arc<CollectionMeta>)>> {
    let coll = req.args().collection()?;
    validate_user_write(&req.db, coll)?;
    crate::shard::views::reject(state.storage(), &req.db, coll).await?;
    if !create {
        return Ok(state.storage().collection(&req.db, coll).await);
    }
    let db = state.storage().database_or_create(&req.db).await?;
    let meta = db.ensure_collection(coll).await?;
    Ok(Some((db, meta)))
}

/// After a commit: waits for durability when the write concern asks for it.
pub(super) async fn acknowledge(db: &DatabaseStore, wc: &WriteConcern, seq: u64) -> Result<()> {
    if wc.durable {
        db.wait_durable(seq).await?;
    }
    Ok(())
}

/// Appends `writeErrors` and `writeConcernError` to a write reply.
pub(super) fn finish_reply(
    mut reply: RawDocumentBuf,
    write_errors: Vec<(usize, MongoError)>,
    wc: &WriteConcern,
) -> Result<RawDocumentBuf> {
    if !write_errors.is_empty() {
        let errors: Vec<Bson> = write_errors
            .iter()
            .map(|(i, e)| Bson::Document(e.to_write_error(*i)))
            .collect();
        reply.append("writeErrors", bson::RawBson::try_from(Bson::Array(errors))?);
    }
    if let Some(wce) = wc.error() {
        reply.append("writeConcernError", RawDocumentBuf::from_document(&wce)?);
    }
    Ok(reply)
}

/// An int32 count when it fits, as MongoDB replies `n`.
pub(super) fn count_value(n: u64) -> bson::RawBson {
    i32::try_from(n)
        .map(bson::RawBson::Int32)
        .unwrap_or(bson::RawBson::Int64(n as i64))
}

/// The statements of a write batch (`documents`, `updates`, `deletes`), within MongoDB's
/// batch-size limits.
pub(super) fn statements<'a>(req: &'a CommandRequest, field: &str) -> Result<Vec<&'a RawDocument>> {
    let statements = req.document_array(field)?;
    if statements.is_empty() || statements.len() > MAX_WRITE_BATCH_SIZE {
        return Err(MongoError::new(
            ErrorCode::InvalidLength,
            format!(
                "Write batch sizes must be between 1 and {MAX_WRITE_BATCH_SIZE}. Got {} operations.",
                statements.len()
            ),
        ));
    }
    Ok(statements)
}

/// The `arrayFilters` argument of an update.
pub(super) fn array_filters(args: &Args<'_>) -> Result<Option<Vec<Document>>> {
    args.array("arrayFilters")?
        .map(|items| {
            items
                .into_iter()
                .map(|f| match f {
                    Bson::Document(d) => Ok(d),
                    other => Err(MongoError::type_mismatch(format!(
                        "BSON field 'arrayFilters' is the wrong type '{}', expected type 'object'",
                        crate::document::types::type_name(&other)
                    ))),
                })
                .collect()
        })
        .transpose()
}
