//! `count` and `distinct`.

use super::super::DataNode;
use super::super::exec::Position;
use crate::command::CommandRequest;
use crate::document::keystring;
use crate::document::path::values_at_path;
use crate::error::{MongoError, Result};
use crate::query::filter::Filter;
use crate::server::RequestContext;
use bson::{Bson, Document, RawDocumentBuf, doc};
use std::collections::HashSet;

pub(super) async fn count<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    crate::command::check_collation(args.value("collation")?.as_ref())?;
    let collection = args.collection()?;
    crate::catalog::validate_collection_name(&req.db, collection)?;
    let query = args.document("query")?.unwrap_or_default();
    let skip = args.non_negative("skip")?.unwrap_or(0) as u64;
    // A negative limit counts like its absolute value, as in MongoDB.
    let limit = args
        .i64("limit")?
        .map(|l| l.unsigned_abs())
        .filter(|l| *l > 0);
    let filter = Filter::parse(&query)?;
    let n = match state.storage().collection(&req.db, collection).await {
        None => 0,
        Some((db, coll)) if filter.is_empty() => db.stats(&coll).count.max(0) as u64,
        Some((db, coll)) => {
            let mut read = db.read().await?;
            let mut position = Position::for_filter(&coll, &query)?;
            let mut n = 0u64;
            while !position.done() {
                n += position
                    .next_matches(&mut read, &coll, &filter)
                    .await?
                    .len() as u64;
            }
            n
        }
    };
    let n = n.saturating_sub(skip);
    let n = limit.map_or(n, |l| n.min(l));
    Ok(RawDocumentBuf::from_document(
        &doc! {"n": i32::try_from(n).map(Bson::Int32).unwrap_or(Bson::Int64(n as i64))},
    )?)
}

pub(super) async fn distinct<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    crate::command::check_collation(args.value("collation")?.as_ref())?;
    let collection = args.collection()?;
    crate::catalog::validate_collection_name(&req.db, collection)?;
    let key = args
        .str("key")?
        .ok_or_else(|| crate::command::missing("distinct", "key"))?;
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(MongoError::bad_value(format!(
            "FieldPath field names may not be empty strings. key: {key}"
        )));
    }
    let query = args.document("query")?.unwrap_or_default();
    let filter = Filter::parse(&query)?;
    let path: Vec<&str> = key.split('.').collect();
    let mut seen = HashSet::new();
    let mut values = Vec::new();
    if let Some((db, coll)) = state.storage().collection(&req.db, collection).await {
        let mut read = db.read().await?;
        let mut position = Position::for_filter(&coll, &query)?;
        let mut found = Vec::new();
        while !position.done() {
            for candidate in position.next_matches(&mut read, &coll, &filter).await? {
                found.clear();
                values_at_path(&Bson::Document(candidate.doc), &path, &mut found);
                for value in found.drain(..) {
                    if seen.insert(keystring::encode_one(&value)) {
                        values.push(value);
                    }
                }
            }
        }
    }
    let reply: Document = doc! {"values": values};
    Ok(RawDocumentBuf::from_document(&reply)?)
}
