//! `find`, `getMore` and `killCursors`: queries answered in batches through cursors.

use super::super::DataNode;
use super::super::cursors::{Cursor, CursorBody};
use super::super::exec::{MAX_BATCH_BYTES, Position, QueryShape, ScanState};
pub use crate::command::cursor_reply;
use crate::command::{CommandRequest, GetMore, KillCursors};
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::filter::Filter;
use crate::query::projection::Projection;
use crate::query::sort::SortSpec;
use crate::server::RequestContext;
use bson::{Bson, Document, RawDocumentBuf};
use std::collections::VecDeque;

/// Documents in a first batch when the client sets no `batchSize`.
pub const DEFAULT_FIRST_BATCH: usize = 101;

pub(super) struct FindCommand {
    pub(super) collection: String,
    pub(super) filter: Document,
    pub(super) projection: Option<Document>,
    pub(super) sort: Option<Document>,
    pub(super) skip: u64,
    pub(super) limit: Option<u64>,
    pub(super) batch_size: Option<u64>,
    pub(super) single_batch: bool,
    pub(super) no_cursor_timeout: bool,
    pub(super) hint: Option<Bson>,
}

impl FindCommand {
    pub(super) fn parse(req: &CommandRequest) -> Result<Self> {
        let args = req.args();
        let limit = match args.i64("limit")? {
            Some(l) if l < 0 => {
                return Err(MongoError::bad_value(format!(
                    "LimitValue must be non-negative, but received: {l}"
                )));
            }
            Some(0) | None => None,
            Some(l) => Some(l as u64),
        };
        if args.bool("tailable")? == Some(true) {
            return Err(MongoError::bad_value(
                "tailable cursor requested on non capped collection",
            ));
        }
        if let Some(collation) = args.document("collation")? {
            if collation
                .get_str("locale")
                .map(|l| l != "simple")
                .unwrap_or(false)
            {
                return Err(MongoError::new(
                    ErrorCode::NotImplemented,
                    "only the simple collation is supported",
                ));
            }
        }
        Ok(FindCommand {
            collection: args.collection()?.to_string(),
            filter: args.document("filter")?.unwrap_or_default(),
            projection: args.document("projection")?.filter(|p| !p.is_empty()),
            sort: args.document("sort")?.filter(|s| !s.is_empty()),
            skip: args.non_negative("skip")?.unwrap_or(0) as u64,
            limit,
            batch_size: args.non_negative("batchSize")?.map(|b| b as u64),
            single_batch: args.bool("singleBatch")?.unwrap_or(false),
            no_cursor_timeout: args.bool("noCursorTimeout")?.unwrap_or(false),
            hint: parse_hint(&args)?,
        })
    }
}

pub(super) async fn find<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let cmd = FindCommand::parse(&req)?;
    let ns = format!("{}.{}", req.db, cmd.collection);
    crate::catalog::validate_collection_name(&req.db, &cmd.collection)?;
    let filter = Filter::parse(&cmd.filter)?;
    let projection = cmd.projection.as_ref().map(Projection::parse).transpose()?;
    let sort = cmd.sort.as_ref().map(SortSpec::parse).transpose()?;
    let Some((db, coll)) = state.storage().collection(&req.db, &cmd.collection).await else {
        return Ok(cursor_reply(&ns, vec![], 0, true));
    };
    let first_batch = cmd
        .batch_size
        .map(|b| b as usize)
        .unwrap_or(DEFAULT_FIRST_BATCH);
    let shape = QueryShape {
        filter: &cmd.filter,
        sort: sort.as_ref(),
        hint: cmd.hint.as_ref(),
    };
    let position = Position::plan(&coll, &shape)?;
    let mut body = match sort {
        // A sort the access path does not deliver is done in memory over every match.
        Some(sort) if !position.path().provides_sort() => {
            let docs =
                sorted_matches(&db, &coll, &filter, position, &sort, cmd.skip, cmd.limit).await?;
            let mut out = VecDeque::with_capacity(docs.len());
            for doc in docs {
                let doc = match &projection {
                    Some(p) => p.apply(&doc),
                    None => doc,
                };
                out.push_back(RawDocumentBuf::from_document(&doc)?);
            }
            CursorBody::Buffered(out)
        }
        _ => CursorBody::Scan(Box::new(ScanState {
            db: db.clone(),
            coll: coll.clone(),
            position,
            filter,
            projection,
            skip: cmd.skip,
            remaining: cmd.limit,
            pending: VecDeque::new(),
        })),
    };
    let (batch, exhausted) = next_batch(&mut body, first_batch).await?;
    let id = if exhausted || cmd.single_batch {
        0
    } else {
        state
            .cursors()
            .register(Cursor::new(ns.clone(), body, cmd.no_cursor_timeout))
    };
    Ok(cursor_reply(&ns, batch, id, true))
}

/// The `hint` argument: an index name, a key pattern or `{$natural: 1}`.
pub(super) fn parse_hint(args: &crate::command::Args<'_>) -> Result<Option<Bson>> {
    match args.get("hint")? {
        None => Ok(None),
        Some(bson::RawBsonRef::String(name)) => Ok(Some(Bson::String(name.to_string()))),
        Some(bson::RawBsonRef::Document(d)) if d.as_bytes().len() > 5 => {
            Ok(Some(Bson::Document(d.to_owned().to_document()?)))
        }
        Some(bson::RawBsonRef::Document(_)) => Ok(None),
        Some(_) => Err(MongoError::failed_to_parse(
            "hint must be a string or an object",
        )),
    }
}

/// Every match, sorted, with skip and limit applied: the blocking sort. With a limit only the
/// best `skip + limit` documents are kept while reading (top-k).
async fn sorted_matches(
    db: &crate::shard::storage::DatabaseStore,
    coll: &crate::shard::storage::CollectionMeta,
    filter: &Filter,
    mut position: Position,
    sort: &SortSpec,
    skip: u64,
    limit: Option<u64>,
) -> Result<Vec<Document>> {
    let keep = limit.map(|l| (skip + l) as usize);
    let mut read = db.read().await?;
    let mut docs: Vec<Document> = Vec::new();
    while !position.done() {
        docs.extend(
            position
                .next_matches(&mut read, coll, filter)
                .await?
                .into_iter()
                .map(|c| c.doc),
        );
        if let Some(keep) = keep {
            // Bounded memory for sort + limit: trim back to the best `keep` once it doubles.
            if docs.len() > keep.max(1000) * 2 {
                docs.sort_by(|a, b| sort.compare(a, b));
                docs.truncate(keep);
            }
        }
    }
    docs.sort_by(|a, b| sort.compare(a, b));
    if let Some(keep) = keep {
        docs.truncate(keep);
    }
    Ok(docs.into_iter().skip(skip as usize).collect())
}

/// The next batch of a cursor and whether the cursor has nothing more.
async fn next_batch(body: &mut CursorBody, max_docs: usize) -> Result<(Vec<RawDocumentBuf>, bool)> {
    match body {
        CursorBody::Buffered(docs) => {
            let mut batch = Vec::new();
            let mut bytes = 0;
            while let Some(doc) = docs.front() {
                if batch.len() >= max_docs
                    || (bytes + doc.as_bytes().len() > MAX_BATCH_BYTES && !batch.is_empty())
                {
                    break;
                }
                bytes += doc.as_bytes().len();
                batch.push(docs.pop_front().expect("checked non-empty"));
            }
            Ok((batch, docs.is_empty()))
        }
        CursorBody::Scan(scan) => {
            let batch = scan.next_batch(max_docs).await?;
            Ok((batch, scan.exhausted()))
        }
    }
}

pub(super) async fn get_more<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let cmd = GetMore::parse(&req)?;
    let ns = cmd.namespace(&req.db);
    let Some(mut cursor) = state.cursors().take(cmd.cursor_id) else {
        return Err(MongoError::new(
            ErrorCode::CursorNotFound,
            format!("cursor id {} not found", cmd.cursor_id),
        ));
    };
    if cursor.ns != ns {
        let owner = cursor.ns.clone();
        state.cursors().put_back(cmd.cursor_id, cursor);
        return Err(MongoError::new(
            ErrorCode::Unauthorized,
            format!(
                "Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {owner}"
            ),
        ));
    }
    let (batch, exhausted) =
        next_batch(&mut cursor.body, cmd.batch_size.unwrap_or(usize::MAX)).await?;
    let reply_id = if exhausted {
        0
    } else {
        state.cursors().put_back(cmd.cursor_id, cursor);
        cmd.cursor_id
    };
    Ok(cursor_reply(&ns, batch, reply_id, false))
}

pub(super) async fn kill_cursors<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let cmd = KillCursors::parse(&req)?;
    let ns = cmd.namespace(&req.db);
    let (killed, not_found): (Vec<i64>, Vec<i64>) = cmd
        .cursor_ids
        .iter()
        .partition(|id| state.cursors().namespace(**id).as_deref() == Some(ns.as_str()));
    for id in &killed {
        state.cursors().kill(*id);
    }
    KillCursors::reply(killed, not_found)
}
