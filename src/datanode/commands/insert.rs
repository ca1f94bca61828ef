//! `insert`: documents get an `_id` (first) when missing, then go to storage in multi-row
//! batches; ordered inserts stop at the first error, unordered ones report every error.

use super::super::DataNode;
use super::super::transaction_table::RetryableWrite;
use super::super::validation::DocumentValidator;
use super::write::{
    acknowledge, append_retried, commit_recorded, count_value, finish_reply, finish_retryable,
    id_of, statements, target,
};
use crate::command::{CommandRequest, WriteConcern};
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::{RequestContext, stats::Stats};
use crate::wire::MAX_BSON_OBJECT_SIZE;
use bson::{RawBsonRef, RawDocument, RawDocumentBuf, oid::ObjectId, rawdoc};
use std::borrow::Cow;

struct InsertCommand<'a> {
    documents: Vec<&'a RawDocument>,
    ordered: bool,
    write_concern: WriteConcern,
    bypass_validation: bool,
}

impl<'a> InsertCommand<'a> {
    fn parse(req: &'a CommandRequest) -> Result<Self> {
        let args = req.args();
        let documents = statements(req, "documents")?;
        let request = crate::command::requests::InsertRequest::parse(req)?;
        Ok(InsertCommand {
            documents,
            ordered: request.ordered.unwrap_or(true),
            write_concern: WriteConcern::parse(&args)?,
            bypass_validation: request.bypass_document_validation.unwrap_or(false),
        })
    }
}

/// The document as stored: `_id` first (generated when missing), within the size limit.
pub(super) fn prepare_document(doc: &RawDocument) -> Result<Cow<'_, RawDocument>> {
    if doc.as_bytes().len() > MAX_BSON_OBJECT_SIZE {
        return Err(MongoError::new(
            ErrorCode::BSONObjectTooLarge,
            format!(
                "object to insert too large. size in bytes: {}, max size: {MAX_BSON_OBJECT_SIZE}",
                doc.as_bytes().len()
            ),
        ));
    }
    crate::depth::check_insert(doc)?;
    let mut first = true;
    let mut id_first = false;
    let mut id = None;
    for element in doc.iter() {
        let (key, value) = element?;
        if key == "_id" {
            id_first = first;
            id = Some(value);
        }
        first = false;
    }
    if let Some(id) = id {
        check_id(id)?;
        if id_first {
            return Ok(Cow::Borrowed(doc));
        }
    }
    let mut out = match id {
        Some(id) => {
            let mut out = RawDocumentBuf::new();
            out.append_ref("_id", id);
            out
        }
        None => rawdoc! {"_id": ObjectId::new()},
    };
    for element in doc.iter() {
        let (key, value) = element?;
        if key != "_id" {
            out.append_ref(key, value);
        }
    }
    Ok(Cow::Owned(out))
}

/// The document, after the collection's validator accepted it.
pub(super) fn validated<'a>(
    doc: Cow<'a, RawDocument>,
    validator: Option<&DocumentValidator>,
) -> Result<Cow<'a, RawDocument>> {
    if let Some(validator) = validator {
        validator.check(&doc.as_ref().to_owned().to_document()?, None)?;
    }
    Ok(doc)
}

/// `_id` values MongoDB refuses.
pub(super) fn check_id(id: RawBsonRef<'_>) -> Result<()> {
    match id {
        RawBsonRef::Array(_) => Err(MongoError::new(
            ErrorCode::InvalidIdField,
            "The '_id' value cannot be of type array",
        )),
        RawBsonRef::RegularExpression(_) => Err(MongoError::bad_value("can't use a regex for _id")),
        RawBsonRef::Undefined => Err(MongoError::bad_value("can't use a undefined for _id")),
        RawBsonRef::Document(d) => match dollar_prefixed(d)? {
            Some(name) => Err(MongoError::new(
                ErrorCode::DollarPrefixedFieldName,
                format!(
                    "_id fields may not contain '$'-prefixed fields: {name} is not valid for storage."
                ),
            )),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// The first `$`-prefixed field name inside `doc`, at any depth.
fn dollar_prefixed(doc: &RawDocument) -> Result<Option<String>> {
    for element in doc.iter() {
        let (key, value) = element?;
        if key.starts_with('$') {
            return Ok(Some(key.to_string()));
        }
        let nested = match value {
            RawBsonRef::Document(d) => dollar_prefixed(d)?,
            RawBsonRef::Array(items) => {
                let mut found = None;
                for item in items {
                    if let RawBsonRef::Document(d) = item? {
                        found = dollar_prefixed(d)?;
                        if found.is_some() {
                            break;
                        }
                    }
                }
                found
            }
            _ => None,
        };
        if nested.is_some() {
            return Ok(nested);
        }
    }
    Ok(None)
}

pub(super) async fn run<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let cmd = InsertCommand::parse(&req)?;
    let mut retry = RetryableWrite::begin(state, &req).await?;
    let (db, coll) = target(state, &req, true).await?.expect("created on demand");
    let ns = format!("{}.{}", req.db, coll.name);
    let mut errors: Vec<(usize, MongoError)> = Vec::new();
    let mut inserted = 0u64;
    let mut prepared: Vec<(usize, Cow<RawDocument>)> = Vec::with_capacity(cmd.documents.len());
    let validator = DocumentValidator::for_collection(&req.db, &coll, cmd.bypass_validation)?;
    for (i, doc) in cmd.documents.iter().enumerate() {
        // A statement this retryable write already executed answers as inserted.
        if let Some(retry) = retry.as_mut() {
            if retry.executed(i)?.is_some() {
                inserted += 1;
                continue;
            }
        }
        match prepare_document(doc).and_then(|d| validated(d, validator.as_ref())) {
            Ok(doc) => prepared.push((i, doc)),
            Err(e) => {
                errors.push((i, e));
                if cmd.ordered {
                    break;
                }
            }
        }
    }
    let mut txn = db.writes().await?;
    let mut start = 0;
    while start < prepared.len() {
        let batch: Vec<&RawDocument> = prepared[start..].iter().map(|(_, d)| d.as_ref()).collect();
        let (done, failure) = match txn.insert(&coll, &batch).await {
            Ok(()) => (batch.len(), None),
            Err((done, e)) => (done, Some(e)),
        };
        inserted += done as u64;
        if let Some(retry) = retry.as_mut() {
            for (i, doc) in &prepared[start..start + done] {
                retry.record(*i, &ns, id_of(doc).as_ref(), bson::Document::new())?;
            }
        }
        let Some(e) = failure else {
            break;
        };
        let failed = start + done;
        errors.push((prepared[failed].0, e));
        if cmd.ordered {
            // A validation failure later in the batch was never reached.
            errors.retain(|(i, _)| *i <= prepared[failed].0);
            break;
        }
        start = failed + 1;
    }
    let seq = commit_recorded(state, txn, &mut retry).await?;
    errors.sort_by_key(|(i, _)| *i);
    if cmd.ordered {
        errors.truncate(1);
    }
    Stats::add(&state.node().stats.op_insert, cmd.documents.len() as i64);
    acknowledge(&db, &cmd.write_concern, seq).await?;
    tracing::trace!(ns = %ns, inserted, "insert");
    let mut reply = rawdoc! {"n": count_value(inserted)};
    if let Some(retry) = &retry {
        append_retried(&mut reply, retry.retried())?;
    }
    finish_retryable(state, retry);
    finish_reply(reply, errors, &cmd.write_concern)
}
