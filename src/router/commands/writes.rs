//! Writes on the router: `insert`, `update`, `delete` (a [`WriteBatch`] when the collection is
//! sharded; the whole command to the primary shard otherwise) and `findAndModify` (to the one
//! shard its query's shard key selects, or in two phases: find the first match's `_id`, then
//! modify it on its shard). A shard key update that moves the document to another shard is
//! finished here (`shard_key_move`).

use super::super::RouterState;
use super::super::forward::{check_routable, on_config_server, refuse_stale, reply_error};
use super::super::shard_key_move::{MoveOutcome, MoveRecord, ShardKeyMove};
use super::super::targeting::{By, Filter, Target};
use super::super::write_batch::{
    ROUTER_OVERHEAD, WriteBatch, WriteKind, executed_on, first_match, matches_nothing, with_filter,
};
use crate::command::CommandRequest;
use crate::command::requests::FindAndModifyRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::projection::Projection;
use crate::server::RequestContext;
use crate::server::stats::Stats;
use crate::wire::MAX_MESSAGE_SIZE;
use bson::{Bson, RawDocumentBuf, doc};
use std::sync::atomic::AtomicI64;

pub(super) async fn insert(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    write(state, req, WriteKind::Insert, |s| &s.op_insert).await
}

pub(super) async fn update(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    write(state, req, WriteKind::Update, |s| &s.op_update).await
}

pub(super) async fn delete(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    write(state, req, WriteKind::Delete, |s| &s.op_delete).await
}

/// A batched write, counted per statement in `opcounters` as mongos counts them. Writes create
/// the database when it does not exist yet.
async fn write(
    state: &RouterState,
    req: CommandRequest,
    kind: WriteKind,
    counter: fn(&Stats) -> &AtomicI64,
) -> Result<RawDocumentBuf> {
    // An empty or oversized batch is refused before it is counted or routed, sharded
    // collection or not, with the check the shards apply.
    let statements = crate::command::requests::check_batch_size(&req, kind.field())?;
    Stats::add(counter(&state.node.stats), statements as i64);
    check_routable(&req.db)?;
    if on_config_server(&req.db) {
        return state.config.call(req).await;
    }
    let ns = format!("{}.{}", req.db, req.args().collection()?);
    // The batch, once parsed, keeps what ran across attempts: an attempt resends only what a
    // shard refused as stale. (A lock, not a `&mut`, as each attempt is its own future.)
    let batch: tokio::sync::Mutex<Option<WriteBatch>> = tokio::sync::Mutex::new(None);
    let (batch_ref, req_ref) = (&batch, &req);
    let routed = state.route(&req.db, Some(&ns), true, |placement| async move {
        let mut batch = batch_ref.lock().await;
        if batch.is_none() && fits_as_sent(req_ref) {
            if let Target::Primary(primary) = placement.target(By::AllOwners)? {
                // Unsharded, nothing sent yet: the command goes to the primary as it is.
                let (_, reply) = state.call_shard(&placement, &primary, req_ref).await?;
                return refuse_stale(reply).map(Some);
            }
        }
        if batch.is_none() {
            *batch = Some(WriteBatch::parse(req_ref, kind)?);
        }
        if let Some(batch) = batch.as_mut() {
            batch.run_pass(state, &placement).await?;
        }
        Ok(None)
    });
    if let Some(Some(reply)) = routed.await? {
        return Ok(reply);
    }
    match batch.into_inner() {
        Some(batch) => batch.reply(),
        None => Err(MongoError::internal(
            "a write found no database to write to",
        )),
    }
}

/// Whether the command can go to a shard as the client sent it: with what the router adds, its
/// message stays within `maxMessageSizeBytes`. A batch that would not is split (`WriteBatch`).
fn fits_as_sent(req: &CommandRequest) -> bool {
    let statements: usize = req
        .sequences
        .iter()
        .flat_map(|s| &s.documents)
        .map(|d| d.as_bytes().len())
        .sum();
    req.body.as_bytes().len() + statements + ROUTER_OVERHEAD <= MAX_MESSAGE_SIZE
}

pub(super) async fn find_and_modify(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    check_routable(&req.db)?;
    if on_config_server(&req.db) {
        return state.config.call(req).await;
    }
    let args = req.args();
    let collection = args.collection()?.to_string();
    let ns = format!("{}.{collection}", req.db);
    let declared = FindAndModifyRequest::parse(&req)?;
    let query = &declared.query.clone().unwrap_or_default();
    let upsert = declared.upsert.unwrap_or(false);
    let remove = declared.remove.unwrap_or(false);
    let sort = &declared.sort;
    let retryable = matches!(req.body.get("txnNumber")?, Some(bson::RawBsonRef::Int64(_)));
    let collation = &super::reads::request_collation(&req)?;
    let (req, collection, declared) = (&req, &collection, &declared);
    let routed = state.route(&req.db, Some(&ns), true, |placement| async move {
        let by = By::Key(Filter::Document(query));
        let collation = placement.collation_for(collation.clone())?;
        let (shard, outgoing) = match placement.target_under(by, collation.as_deref())? {
            Target::Primary(shard) | Target::One(shard) => (shard, req.clone()),
            Target::Some(_) if upsert => {
                let pattern = placement.routing.as_ref().map(|r| r.entry.key.pattern());
                return Err(MongoError::new(
                    ErrorCode::ShardKeyNotFound,
                    format!(
                        "Query for sharded findAndModify with upsert must contain the shard key {}",
                        pattern
                            .map(crate::document::display::render_doc)
                            .unwrap_or_default()
                    ),
                ));
            }
            Target::Some(shards) if shards.len() == 1 => (shards[0].clone(), req.clone()),
            Target::Some(shards) => {
                if retryable {
                    // The query stays (in an `$and` matching nothing) for what its projection
                    // reads from it, a `$text`'s score.
                    let nothing = doc! {"$and": [query.clone(), matches_nothing()]};
                    let probe = with_query(req, nothing)?;
                    if let Some((_, reply)) =
                        executed_on(state, &placement, &shards, &probe).await?
                    {
                        return Ok(reply);
                    }
                }
                let found = first_match(
                    state,
                    &placement,
                    &shards,
                    &req.db,
                    collection,
                    query,
                    sort.clone(),
                    &req.body,
                )
                .await?;
                match found {
                    None => return no_match(remove),
                    Some((shard, id)) => {
                        let narrowed = doc! {"$and": [query.clone(), {"_id": id}]};
                        (shard, with_query(req, narrowed)?)
                    }
                }
            }
        };
        let (_, reply) = state.call_shard(&placement, &shard, &outgoing).await?;
        let reply = refuse_stale(reply)?;
        let Some(moving) = refused_shard_key_move(&reply, &shard)? else {
            return Ok(reply);
        };
        let write_concern = req.args().document("writeConcern")?;
        let reply = moved_reply(declared, &moving)?;
        // findAndModify is statement 0 of its retryable write (or the `stmtId` a caller gave).
        let stmt_id = match req.body.get("stmtId")? {
            Some(bson::RawBsonRef::Int32(id)) => id,
            _ => 0,
        };
        let record = MoveRecord::of(&req.body, stmt_id, reply.to_document()?)?;
        match moving
            .run(
                state,
                &placement,
                &req.db,
                collection,
                write_concern,
                record,
            )
            .await?
        {
            MoveOutcome::Failed(failure) => Err(failure),
            MoveOutcome::Moved => Ok(reply),
        }
    });
    routed
        .await?
        .ok_or_else(|| MongoError::internal("findAndModify found no database"))
}

/// The document move a shard asked for by refusing a shard key update (WouldChangeOwningShard).
fn refused_shard_key_move(reply: &RawDocumentBuf, shard: &str) -> Result<Option<ShardKeyMove>> {
    match reply_error(reply)? {
        Some(e) if ShardKeyMove::is_refusal(e.code().code()) => {
            Ok(ShardKeyMove::from_error(shard, &reply.to_document()?))
        }
        _ => Ok(None),
    }
}

/// findAndModify's reply for a document that moved shards: the document before or after
/// (`new`), shaped by `fields`, as the shard would have answered.
fn moved_reply(declared: &FindAndModifyRequest, moving: &ShardKeyMove) -> Result<RawDocumentBuf> {
    let image = match (declared.new.unwrap_or(false), moving.upsert) {
        (true, _) => Some(&moving.post_image),
        (false, true) => None,
        (false, false) => Some(&moving.pre_image),
    };
    let value = match (image, &declared.fields) {
        (None, _) => bson::Bson::Null,
        (Some(doc), Some(fields)) if !fields.is_empty() => {
            bson::Bson::Document(Projection::parse(fields)?.try_apply(doc)?)
        }
        (Some(doc), _) => bson::Bson::Document(doc.clone()),
    };
    let last_error = if moving.upsert {
        let id = moving
            .post_image
            .get("_id")
            .cloned()
            .unwrap_or(bson::Bson::Null);
        doc! {"n": 1, "updatedExisting": false, "upserted": id}
    } else {
        doc! {"n": 1, "updatedExisting": true}
    };
    Ok(RawDocumentBuf::from_document(
        &doc! {"lastErrorObject": last_error, "value": value},
    )?)
}

/// `req` with its `query` replaced.
fn with_query(req: &CommandRequest, query: bson::Document) -> Result<CommandRequest> {
    CommandRequest::new(req.db.clone(), with_filter(&req.body, "query", query)?)
}

/// findAndModify's reply when no document matched.
fn no_match(remove: bool) -> Result<RawDocumentBuf> {
    let last_error = if remove {
        doc! {"n": 0}
    } else {
        doc! {"n": 0, "updatedExisting": false}
    };
    Ok(RawDocumentBuf::from_document(
        &doc! {"lastErrorObject": last_error, "value": Bson::Null},
    )?)
}
