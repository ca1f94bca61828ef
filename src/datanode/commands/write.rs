//! What insert, update, delete and findAndModify share: target lookup, write-concern handling
//! and the shape of write replies.

use super::super::DataNode;
use super::super::storage::{CollectionMeta, DatabaseStore, Writes};
use super::super::transaction_table::RetryableWrite;
use crate::catalog::{OwnershipFilter, validate_collection_name};
use crate::command::{Args, CommandRequest, WriteConcern};
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, RawDocument, RawDocumentBuf};
use std::sync::Arc;

/// The collection a write goes to, created on first write as MongoDB does.
pub(super) async fn target<S: DataNode>(
    state: &S,
    req: &CommandRequest,
    create: bool,
) -> Result<Option<(Arc<DatabaseStore>, Arc<CollectionMeta>)>> {
    let coll = req.args().collection()?;
    // What clients may write is checked before any command runs (`command::generic`); other
    // nodes also write what only the server writes (`system.views` moving with its database).
    validate_collection_name(&req.db, coll)?;
    crate::datanode::views::reject(state.storage(), &req.db, coll).await?;
    if !create {
        return Ok(state.storage().collection(&req.db, coll).await);
    }
    let db = state.storage().database_or_create(&req.db).await?;
    let meta = db.ensure_collection_in_scope(coll).await?;
    Ok(Some((db, meta)))
}

/// Runs a write outside a transaction until it does not meet a document a transaction holds:
/// such a write fails with WriteConflict having applied nothing (storage refuses to wait for a
/// transaction while it holds the database's writer, which the transaction needs to commit),
/// and runs again after a backoff, as MongoDB's `writeConflictRetry` does, within the command's
/// `maxTimeMS`. Inside a transaction the conflict is the transaction's error.
pub(super) async fn retry_write_conflicts<F, Fut>(
    req: CommandRequest,
    run: F,
) -> Result<RawDocumentBuf>
where
    F: Fn(CommandRequest) -> Fut,
    Fut: std::future::Future<Output = Result<RawDocumentBuf>>,
{
    if crate::datanode::storage::StorageTransaction::current().is_some() {
        return run(req).await;
    }
    let mut backoff = std::time::Duration::from_millis(1);
    loop {
        match run(req.clone()).await {
            Err(e) if e.code() == ErrorCode::WriteConflict => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(std::time::Duration::from_millis(100));
            }
            outcome => return outcome,
        }
    }
}

/// After a commit: waits for durability when the write concern asks for it.
pub(super) async fn acknowledge(db: &DatabaseStore, wc: &WriteConcern, seq: u64) -> Result<()> {
    if wc.durable {
        db.wait_durable(seq).await?;
    }
    Ok(())
}

/// Commits a write's transaction with the records of the retryable write's statements it
/// executed (written in it, so both commit or neither does).
pub(super) async fn commit_recorded<S: DataNode>(
    state: &S,
    txn: Writes<'_>,
    retry: &mut Option<RetryableWrite>,
) -> Result<u64> {
    // A multi-document transaction's writes commit with the transaction.
    let Some(mut txn) = txn.into_direct() else {
        return Ok(0);
    };
    if let Some(retry) = retry.as_mut() {
        retry.write(state, &mut txn).await?;
    }
    let seq = txn.commit().await?;
    if let Some(retry) = retry.as_mut() {
        retry.committed();
    }
    Ok(seq)
}

/// Counts a finished retryable write in `serverStatus.transactions` and releases its session.
pub(super) fn finish_retryable<S: DataNode>(state: &S, retry: Option<RetryableWrite>) {
    if let Some(retry) = retry {
        retry.finish(&state.node().stats);
    }
}

/// `retriedStmtIds`: the statements a retryable write answered from their records, as
/// MongoDB's write replies list them.
pub(super) fn append_retried(reply: &mut RawDocumentBuf, retried: &[i32]) -> Result<()> {
    if !retried.is_empty() {
        let ids: Vec<Bson> = retried.iter().map(|id| Bson::Int32(*id)).collect();
        reply.append("retriedStmtIds", bson::RawBson::try_from(Bson::Array(ids))?);
    }
    Ok(())
}

/// A raw `_id` as a value.
pub(super) fn id_of(doc: &RawDocument) -> Option<Bson> {
    doc.get("_id")
        .ok()
        .flatten()
        .and_then(|id| Bson::try_from(id.to_raw_bson()).ok())
}

/// A multi-document statement (`multi: true`, `limit: 0`) in a retryable write: refused as
/// MongoDB 8.0 refuses it (InvalidOptions), unless its `stmtId` is uninitialized (-1).
pub(super) fn refuse_multi_retryable(
    retry: Option<&RetryableWrite>,
    index: usize,
    message: &str,
) -> Result<()> {
    match retry {
        Some(retry)
            if retry.stmt_id(index)? != super::super::transaction_table::UNINITIALIZED_STMT_ID =>
        {
            Err(MongoError::new(ErrorCode::InvalidOptions, message))
        }
        _ => Ok(()),
    }
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
/// The write errors of statements sent to a collection that does not exist: each still
/// parses, as MongoDB's do whether or not there is data, up to the first error when `ordered`.
pub(super) fn unparsed_statements(
    statements: &[&RawDocument],
    ordered: bool,
    parse: impl Fn(&RawDocument) -> Result<()>,
) -> Vec<(usize, MongoError)> {
    let mut errors = Vec::new();
    for (i, raw) in statements.iter().enumerate() {
        if let Err(e) = parse(raw) {
            errors.push((i, e));
            if ordered {
                break;
            }
        }
    }
    errors
}

pub(super) fn statements<'a>(req: &'a CommandRequest, field: &str) -> Result<Vec<&'a RawDocument>> {
    crate::command::requests::check_batch_size(req, field)?;
    req.document_array(field)
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

/// A write a router versioned for a sharded collection: which documents this shard owns, and
/// whether the write may change a document's shard key (only a retryable write or a
/// transaction may, as in MongoDB 7.0+).
pub(super) struct ShardedWrite {
    pub ownership: Arc<OwnershipFilter>,
    retryable: bool,
}

impl ShardedWrite {
    pub(super) fn of<S: DataNode>(state: &S, req: &CommandRequest) -> Option<ShardedWrite> {
        Some(ShardedWrite {
            ownership: state.ownership(req)?,
            retryable: matches!(req.args().get("txnNumber"), Ok(Some(_))),
        })
    }

    /// The shard key rules for one update statement (`multi`: it may update several documents).
    pub(super) fn rules(&self, multi: bool) -> ShardKeyRules<'_> {
        ShardKeyRules { write: self, multi }
    }
}

/// What an update may do to a document's shard key on this shard.
#[derive(Clone, Copy)]
pub(super) struct ShardKeyRules<'a> {
    write: &'a ShardedWrite,
    multi: bool,
}

impl ShardKeyRules<'_> {
    /// An update turning `old` into `new`: a changed shard key is refused in a multi-update
    /// (InvalidOptions) and outside a retryable write (IllegalOperation); a new key another
    /// shard owns answers WouldChangeOwningShard with both images, for the router to move the
    /// document. Nothing is written before these checks pass.
    pub(super) fn check_update(&self, old: &Document, new: &Document) -> Result<()> {
        let key = self.write.ownership.key_pattern();
        let after = key.encode(&key.extract(new)?);
        if key
            .extract(old)
            .is_ok_and(|before| key.encode(&before) == after)
        {
            return Ok(());
        }
        if self.multi {
            return Err(MongoError::new(
                ErrorCode::InvalidOptions,
                "Multi-update operations are not allowed when updating the shard key field.",
            ));
        }
        self.require_retryable()?;
        if self.write.ownership.owns_key(&after) {
            return Ok(());
        }
        Err(would_change_owning_shard(old.clone(), new.clone(), false))
    }

    /// An upsert inserting `new`: a document another shard owns goes there through the router.
    pub(super) fn check_upsert(&self, new: &Document) -> Result<()> {
        if self.write.ownership.owns(new) {
            return Ok(());
        }
        self.require_retryable()?;
        Err(would_change_owning_shard(
            Document::new(),
            new.clone(),
            true,
        ))
    }

    fn require_retryable(&self) -> Result<()> {
        if self.write.retryable {
            return Ok(());
        }
        Err(MongoError::new(
            ErrorCode::IllegalOperation,
            "Must run update to shard key field in a multi-statement transaction or with retryWrites: true.",
        ))
    }
}

fn would_change_owning_shard(pre: Document, post: Document, upsert: bool) -> MongoError {
    MongoError::new(
        ErrorCode::WouldChangeOwningShard,
        "This update would cause the doc to change owning shards",
    )
    .with_extra(bson::doc! {"preImage": pre, "postImage": post, "shouldUpsert": upsert})
}
