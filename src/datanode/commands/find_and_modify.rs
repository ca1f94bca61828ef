//! `findAndModify`: find one document (first in `sort` order), then update, replace or remove
//! it (or upsert), returning the document before or after.

use super::super::DataNode;
use super::super::exec::{
    Candidate, PlanStats, Position, QueryShape, WriteRead, WriteStage, number, update_stats,
};
use super::super::transaction_table::RetryableWrite;
use super::super::validation::DocumentValidator;
use super::update::{update_candidate, upsert};
use super::write::{
    ShardedWrite, acknowledge, array_filters, commit_recorded, finish_retryable, target,
};
use crate::catalog::OwnershipFilter;
use crate::command::requests::FindAndModifyRequest;
use crate::command::{CommandRequest, WriteConcern};
use crate::document::collation::Collation;
use crate::error::{MongoError, Result};
use crate::query::filter::Filter;
use crate::query::projection::Projection;
use crate::query::sort::SortSpec;
use crate::server::{RequestContext, stats::Stats};
use crate::update::UpdateSpec;
use bson::{Bson, Document, RawDocumentBuf, doc};
use std::sync::Arc;

pub(super) struct FindAndModifyCommand {
    pub(super) query: Document,
    /// `query` parsed, seeing the command's `let` variables.
    pub(super) filter: Filter,
    pub(super) sort: Option<SortSpec>,
    pub(super) remove: bool,
    pub(super) update: Option<UpdateSpec>,
    pub(super) return_new: bool,
    pub(super) fields: Option<Projection>,
    pub(super) upsert: bool,
    pub(super) write_concern: WriteConcern,
    pub(super) hint: Option<Bson>,
    pub(super) bypass_validation: bool,
}

impl FindAndModifyCommand {
    /// `collation`: what the collection's default makes of the requested one (`None`: the
    /// request's own applies).
    pub(super) fn parse(req: &CommandRequest, collation: Option<Arc<Collation>>) -> Result<Self> {
        let args = req.args();
        let declared = FindAndModifyRequest::parse(req)?;
        let remove = declared.remove.unwrap_or(false);
        let return_new = declared.new.unwrap_or(false);
        let upsert = declared.upsert.unwrap_or(false);
        let array_filters = array_filters(&args)?;
        let vars = args.let_variables()?.for_statement(collation);
        let query = declared.query.unwrap_or_default();
        let filter = Filter::parse_with_variables(&query, &vars)?;
        let update = match args.get("update")? {
            Some(u) => Some(UpdateSpec::parse_with_constants(
                &Bson::try_from(u.to_raw_bson())?,
                array_filters.as_deref(),
                crate::update::UpdateConstants {
                    statement: None,
                    command_let: Some(&vars),
                },
            )?),
            None => None,
        };
        match (remove, &update) {
            (true, Some(_)) => {
                return Err(MongoError::failed_to_parse(
                    "Cannot specify both an update and remove=true",
                ));
            }
            (false, None) => {
                return Err(MongoError::failed_to_parse(
                    "Either an update or remove=true must be specified",
                ));
            }
            _ => {}
        }
        if remove && return_new {
            return Err(MongoError::failed_to_parse(
                "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document",
            ));
        }
        if remove && upsert {
            return Err(MongoError::failed_to_parse(
                "Cannot specify both upsert=true and remove=true",
            ));
        }
        let fields = declared
            .fields
            .filter(|f| !f.is_empty())
            .as_ref()
            .map(|f| Projection::parse_with_variables(f, Some(&filter), &vars))
            .transpose()?;
        let sort = declared
            .sort
            .filter(|s| !s.is_empty())
            .as_ref()
            .map(|s| SortSpec::parse_for(s, &vars))
            .transpose()?;
        super::find::refuse_distance_sort(sort.as_ref(), &filter)?;
        Ok(FindAndModifyCommand {
            query,
            filter,
            sort,
            remove,
            update,
            return_new,
            fields,
            upsert,
            write_concern: WriteConcern::parse(&args)?,
            hint: super::find::parse_hint(&args)?,
            bypass_validation: declared.bypass_document_validation.unwrap_or(false),
        })
    }
}

pub(super) async fn run<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let name = req.args().collection()?;
    let collation = crate::datanode::collation::for_request(state.storage(), &req, name).await?;
    let cmd = FindAndModifyCommand::parse(&req, collation)?;
    let mut retry = RetryableWrite::begin(state, &req).await?;
    if let Some(recorded) = retry.as_mut().map(|r| r.executed(0)).transpose()?.flatten() {
        // Executed already: the same document (image) as the first time, and the statement
        // named as retried, as MongoDB's reply names it.
        let mut reply = recorded;
        if let Some(id) = retry.as_ref().and_then(|r| r.retried().first()) {
            reply.insert("retriedStmtId", *id);
        }
        if let Some(wce) = cmd.write_concern.error() {
            reply.insert("writeConcernError", wce);
        }
        finish_retryable(state, retry);
        return Ok(RawDocumentBuf::from_document(&reply)?);
    }
    let filter = &cmd.filter;
    let found = target(state, &req, cmd.upsert).await?;
    // A text score projected is the filter's on this collection's text index.
    let projecting = match &found {
        Some((_, coll)) => crate::datanode::exec::bound_text(filter, coll)?,
        None => std::borrow::Cow::Borrowed(filter),
    };
    // Computed fields that fail to evaluate fail the command, as in MongoDB.
    let project = |doc: Document| -> Result<Bson> {
        Ok(Bson::Document(match &cmd.fields {
            Some(p) if p.needs_query() => p.apply_with_filter(&doc, &projecting)?,
            Some(p) => p.try_apply(&doc)?,
            None => doc,
        }))
    };
    let Some((db, coll)) = found else {
        let last_error = if cmd.remove {
            doc! {"n": 0}
        } else {
            doc! {"n": 0, "updatedExisting": false}
        };
        return Ok(RawDocumentBuf::from_document(
            &doc! {"lastErrorObject": last_error, "value": Bson::Null},
        )?);
    };
    if cmd.remove {
        Stats::add(&state.node().stats.op_delete, 1);
    } else {
        Stats::add(&state.node().stats.op_update, 1);
    }
    let validator = DocumentValidator::for_collection(&req.db, &coll, cmd.bypass_validation)?;
    let sharded = ShardedWrite::of(state, &req);
    let rules = sharded.as_ref().map(|s| s.rules(false));
    let mut txn = db.writes().await?;
    let (found, read) = first_match(
        &mut txn,
        &coll,
        &cmd.query,
        filter,
        cmd.sort.as_ref(),
        cmd.hint.as_ref(),
        sharded.as_ref().map(|s| &s.ownership),
    )
    .await?;
    // The `_id` of the document written, if one was.
    let mut written: Option<Bson> = None;
    let matched = u64::from(found.is_some());
    let (last_error, value) = match (found, &cmd.update) {
        (Some(candidate), None) => {
            txn.delete(&coll, candidate.rid, &candidate.raw).await?;
            written = candidate.doc.get("_id").cloned();
            (doc! {"n": 1}, project(candidate.doc)?)
        }
        (None, None) => (doc! {"n": 0}, Bson::Null),
        (Some(candidate), Some(update)) => {
            let updated = update_candidate(
                &mut txn,
                &coll,
                &candidate,
                update,
                filter,
                validator.as_ref(),
                rules,
            )
            .await?;
            if updated.is_some() {
                written = candidate.doc.get("_id").cloned();
            }
            let value = if cmd.return_new {
                updated.unwrap_or_else(|| candidate.doc.clone())
            } else {
                candidate.doc.clone()
            };
            (doc! {"n": 1, "updatedExisting": true}, project(value)?)
        }
        (None, Some(update)) if cmd.upsert => {
            let inserted = upsert(
                &mut txn,
                &coll,
                &cmd.query,
                update,
                validator.as_ref(),
                rules,
                filter.collation(),
            )
            .await?;
            let id = inserted.get("_id").cloned().unwrap_or(Bson::Null);
            written = Some(id.clone());
            let value = if cmd.return_new {
                project(inserted)?
            } else {
                Bson::Null
            };
            (
                doc! {"n": 1, "updatedExisting": false, "upserted": id},
                value,
            )
        }
        (None, Some(_)) => (doc! {"n": 0, "updatedExisting": false}, Bson::Null),
    };
    if let Some(read) = read {
        // What was written: the match (updated or deleted), or the upserted document.
        let wrote = u64::from(written.is_some());
        let (stage, express, stats) = match cmd.update {
            None => (
                "DELETE",
                "EXPRESS_DELETE",
                doc! {"nWouldDelete": number(matched)},
            ),
            Some(_) => (
                "UPDATE",
                "EXPRESS_UPDATE",
                update_stats(matched, wrote * matched, wrote == 1 && matched == 0),
            ),
        };
        let single = cmd.sort.is_none();
        read.note(WriteStage {
            stage,
            express,
            single,
            stats,
        });
    }
    let mut reply = doc! {"lastErrorObject": last_error, "value": value};
    if let (Some(retry), Some(id)) = (retry.as_mut(), &written) {
        // The reply holds the image it returned: a retry answers the same.
        let ns = format!("{}.{}", req.db, coll.name);
        retry.record(0, &ns, Some(id), reply.clone())?;
    }
    let seq = commit_recorded(state, txn, &mut retry).await?;
    acknowledge(&db, &cmd.write_concern, seq).await?;
    if let Some(wce) = cmd.write_concern.error() {
        reply.insert("writeConcernError", wce);
    }
    finish_retryable(state, retry);
    Ok(RawDocumentBuf::from_document(&reply)?)
}

/// The first matching document, in `sort` order when given, and the read for the write's
/// profile entry (when the operation is profiled).
pub(super) async fn first_match(
    txn: &mut super::super::storage::Writes<'_>,
    coll: &super::super::storage::CollectionMeta,
    query: &Document,
    filter: &Filter,
    sort: Option<&SortSpec>,
    hint: Option<&Bson>,
    ownership: Option<&Arc<OwnershipFilter>>,
) -> Result<(Option<Candidate>, Option<WriteRead>)> {
    let started = std::time::Instant::now();
    let bound = crate::datanode::exec::bound_text(filter, coll)?;
    let filter = &*bound;
    let mut position = Position::plan(
        coll,
        &QueryShape {
            sort,
            hint,
            collation: filter.collation(),
            ..QueryShape::filter(query)
        },
    )?
    .owned_by(ownership.cloned());
    txn.index_usage()
        .record(coll, position.path().indexes_used(coll));
    // An index delivering the sort order makes the first match the answer.
    let in_memory = sort.filter(|_| !position.path().provides_sort());
    let mut best: Option<Candidate> = None;
    let mut matched = 0;
    while !position.done() {
        for candidate in position.next_matches(txn, coll, filter).await? {
            matched += 1;
            match in_memory {
                None => {
                    let read = PlanStats::of_write(&position, query, sort, matched, started);
                    return Ok((Some(candidate), read));
                }
                Some(sort) => {
                    let better = best.as_ref().is_none_or(|b| {
                        sort.compare(&candidate.doc, &b.doc) == std::cmp::Ordering::Less
                    });
                    if better {
                        best = Some(candidate);
                    }
                }
            }
        }
    }
    let read = PlanStats::of_write(&position, query, sort, matched, started);
    Ok((best, read))
}
