//! The write commands' requests (insert, update, delete, findAndModify, bulkWrite), their
//! fields as MongoDB 8.0's `write_ops.idl`, `find_and_modify.idl` and `bulk_write.idl` declare
//! them, and the batch-size check (`checkOpCountForCommand`) both router and shards apply.

use super::command_request;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::wire::MAX_WRITE_BATCH_SIZE;
use bson::{Bson, Document};

command_request! {
    /// `insert`.
    pub struct InsertRequest("insert") {
        ordered: Option<bool> = "ordered" via bool,
        bypass_document_validation: Option<bool> = "bypassDocumentValidation" via bool,
    }
    known: [
        "documents", "stmtIds", "collectionUUID", "encryptionInformation",
        "isTimeseriesNamespace", "bypassEmptyTsReplacement", "rawData"
    ]
}

command_request! {
    /// `update`.
    pub struct UpdateRequest("update") {
        ordered: Option<bool> = "ordered" via bool,
        bypass_document_validation: Option<bool> = "bypassDocumentValidation" via bool,
    }
    known: [
        "updates", "let", "stmtIds", "collectionUUID", "encryptionInformation",
        "isTimeseriesNamespace", "bypassEmptyTsReplacement", "rawData", "sampleId"
    ]
}

command_request! {
    /// `delete`.
    pub struct DeleteRequest("delete") {
        ordered: Option<bool> = "ordered" via bool,
    }
    known: [
        "deletes", "let", "stmtIds", "collectionUUID", "encryptionInformation",
        "isTimeseriesNamespace", "bypassDocumentValidation", "rawData", "sampleId",
        // docgrid's router: the result a shard key move records for the moved statement.
        "recordResult"
    ]
}

command_request! {
    /// `findAndModify`.
    pub struct FindAndModifyRequest("findAndModify") {
        query: Option<Document> = "query" via document,
        fields: Option<Document> = "fields" via document,
        sort: Option<Document> = "sort" via document,
        remove: Option<bool> = "remove" via bool,
        new: Option<bool> = "new" via bool,
        upsert: Option<bool> = "upsert" via bool,
        bypass_document_validation: Option<bool> = "bypassDocumentValidation" via bool,
        array_filters: Option<Vec<Bson>> = "arrayFilters" via array,
    }
    known: [
        "update", "hint", "collation", "let", "collectionUUID", "encryptionInformation",
        "sampleId", "isTimeseriesNamespace", "bypassEmptyTsReplacement", "rawData"
    ]
}

command_request! {
    /// `bulkWrite` (`bulk_write.idl`, `strict: true`); `BulkWrite` holds the operations.
    pub struct BulkWriteRequest("bulkWrite") {
        ordered: Option<bool> = "ordered" via bool,
        bypass_document_validation: Option<bool> = "bypassDocumentValidation" via bool,
        errors_only: Option<bool> = "errorsOnly" via bool,
    }
    known: [
        "ops", "nsInfo", "cursor", "stmtIds", "let", "bypassEmptyTsReplacement",
        "$_originalQuery", "$_originalCollation"
    ]
}

/// The statements of a write batch (`documents`, `updates`, `deletes`, body or sequence),
/// between 1 and `maxWriteBatchSize`: MongoDB's `checkOpCountForCommand` (InvalidLength),
/// applied alike by router and shards, sharded collection or not.
pub fn check_batch_size(request: &CommandRequest, field: &str) -> Result<usize> {
    let statements = request.document_array(field)?.len();
    if statements == 0 || statements > MAX_WRITE_BATCH_SIZE {
        return Err(MongoError::new(
            ErrorCode::InvalidLength,
            format!(
                "Write batch sizes must be between 1 and {MAX_WRITE_BATCH_SIZE}. Got {statements} operations."
            ),
        ));
    }
    Ok(statements)
}
