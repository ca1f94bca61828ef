//! Moving a document whose shard key an update changed to the shard owning its new key: the
//! shard holding it refused the update with WouldChangeOwningShard, sending the document as it
//! was (`preImage`) and as the update makes it (`postImage`). Inside a transaction the insert
//! and the delete are statements of the transaction, committed or aborted with it. Outside one
//! (MongoDB runs one internally) the new version is inserted on its owner first and the old one
//! deleted after: a failure between the two leaves the document on both shards, never on
//! neither. In a retryable write the delete carries the write's session and
//! statement id and the result the client gets (`recordResult`): the old owner records it in
//! the delete's transaction, so a retry of the statement, which goes to the old owner again,
//! answers it instead of running the write once more.

use super::RouterState;
use super::forward::{Placement, refuse_stale, reply_error};
use crate::catalog::ChunkVersion;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, RawBsonRef, RawDocumentBuf, doc};

/// A retryable write's statement being moved: its session, `txnNumber`, `stmtId`, and the
/// result to record for it on the old owner.
pub(super) struct MoveRecord {
    pub lsid: Document,
    pub txn_number: i64,
    pub stmt_id: i32,
    pub result: Document,
}

impl MoveRecord {
    /// The record for statement `stmt_id` of `req`, if `req` is a retryable write.
    pub fn of(req: &RawDocumentBuf, stmt_id: i32, result: Document) -> Result<Option<MoveRecord>> {
        let (Some(RawBsonRef::Document(lsid)), Some(RawBsonRef::Int64(txn_number))) =
            (req.get("lsid")?, req.get("txnNumber")?)
        else {
            return Ok(None);
        };
        // In a transaction the move is part of the transaction: nothing to record.
        if req.get("autocommit")?.is_some() {
            return Ok(None);
        }
        Ok(Some(MoveRecord {
            lsid: Document::try_from(lsid)?,
            txn_number,
            stmt_id,
            result,
        }))
    }
}

/// How a move of a document to its new owner ended, when the command itself did not fail.
pub(super) enum MoveOutcome {
    Moved,
    /// The write failed (e.g. a duplicate key on the new owner): the statement's error.
    Failed(MongoError),
}

/// A WouldChangeOwningShard refusal: where the document is and what it becomes.
#[derive(Clone, Debug)]
pub(super) struct ShardKeyMove {
    /// The shard holding the document.
    pub from: String,
    pub pre_image: Document,
    pub post_image: Document,
    /// The refused write was an upsert inserting `post_image` (there is no old document).
    pub upsert: bool,
}

impl ShardKeyMove {
    /// Reads the refusal's details (a write error or a command error document).
    pub fn from_error(from: &str, error: &Document) -> Option<ShardKeyMove> {
        Some(ShardKeyMove {
            from: from.to_string(),
            pre_image: error.get_document("preImage").ok()?.clone(),
            post_image: error.get_document("postImage").ok()?.clone(),
            upsert: error.get_bool("shouldUpsert").unwrap_or(false),
        })
    }

    pub fn is_refusal(code: i32) -> bool {
        code == ErrorCode::WouldChangeOwningShard.code()
    }

    /// Inserts the new version on its owner, then deletes the old one where it was. The stale
    /// refusal when the owner refused the insert as stale (nothing was done; the whole write
    /// can run again); [`MoveOutcome::Failed`] when the insert failed (e.g. a duplicate key).
    pub async fn run(
        &self,
        state: &RouterState,
        placement: &Placement,
        db: &str,
        collection: &str,
        write_concern: Option<Document>,
        record: Option<MoveRecord>,
    ) -> Result<MoveOutcome> {
        let routing = placement
            .routing
            .as_ref()
            .ok_or_else(|| MongoError::internal("a shard key update on an unsharded collection"))?;
        let to = routing.shard_for_document(&self.post_image)?;
        let mut insert =
            doc! {"insert": collection, "documents": [self.post_image.clone()], "ordered": true};
        if let Some(wc) = &write_concern {
            insert.insert("writeConcern", wc.clone());
        }
        let (_, reply) = state
            .call_shard(placement, &to, &CommandRequest::from_document(db, &insert)?)
            .await?;
        let reply = refuse_stale(reply)?;
        if let Some(failure) = write_failure(&reply)? {
            return Ok(MoveOutcome::Failed(failure));
        }
        if self.upsert && record.is_none() {
            return Ok(MoveOutcome::Moved);
        }
        // The shard told us the document is there: delete it by `_id` without a version check
        // (a concurrent split elsewhere must not leave the copy behind); its ownership filter
        // still applies. An upsert has nothing there to delete: the delete of nothing only
        // records the statement.
        let filter = match self.upsert {
            true => super::write_batch::matches_nothing(),
            false => doc! {"_id": self.pre_image.get("_id").cloned().unwrap_or(Bson::Null)},
        };
        let mut delete = doc! {
            "delete": collection,
            "deletes": [{"q": filter, "limit": 1}],
            "shardVersion": ChunkVersion::ignored().to_document(),
        };
        if let Some(wc) = write_concern {
            delete.insert("writeConcern", wc);
        }
        if let Some(record) = record {
            delete.insert("lsid", record.lsid);
            delete.insert("txnNumber", record.txn_number);
            delete.insert("stmtIds", vec![record.stmt_id]);
            delete.insert("recordResult", record.result);
        }
        let client = state.shards.client(&state.config, &self.from).await?;
        // In a transaction the delete is one of its statements on the old owner.
        let delete = super::transactions::attach(
            Some(&self.from),
            client.host(),
            CommandRequest::from_document(db, &delete)?,
        )?;
        let reply = client.call(delete).await?;
        super::transactions::observe(&self.from, &reply);
        if let Some(failure) = write_failure(&reply)? {
            return Err(MongoError::new(
                ErrorCode::ManualInterventionRequired,
                format!(
                    "the document moved to shard {to} but its old version on shard {} could not be deleted ({failure}); delete it there by _id",
                    self.from
                ),
            ));
        }
        Ok(MoveOutcome::Moved)
    }
}

/// The failure a single-statement write reply reports: a command error or its write error.
fn write_failure(reply: &RawDocumentBuf) -> Result<Option<MongoError>> {
    if let Some(e) = reply_error(reply)? {
        return Ok(Some(e));
    }
    let Some(RawBsonRef::Array(errors)) = reply.get("writeErrors")? else {
        return Ok(None);
    };
    let Some(first) = errors.into_iter().next() else {
        return Ok(None);
    };
    let RawBsonRef::Document(error) = first? else {
        return Ok(None);
    };
    let mut error = Document::try_from(error)?;
    error.insert("ok", 0.0);
    Ok(MongoError::from_reply(&error))
}
