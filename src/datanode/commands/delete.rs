//! `delete`: per statement, remove the first matching document (`limit: 1`) or all (`limit: 0`).

use super::super::DataNode;
use super::super::exec::{PlanStats, Position, QueryShape, WriteStage, number};
use super::super::storage::{CollectionMeta, Writes};
use super::super::transaction_table::RetryableWrite;
use super::write::{
    acknowledge, append_retried, commit_recorded, count_value, finish_reply, finish_retryable,
    statements, target,
};
use crate::catalog::OwnershipFilter;
use crate::command::{Args, CommandRequest, WriteConcern};
use crate::error::{MongoError, Result};
use crate::expression::LetVariables;
use crate::query::filter::Filter;
use crate::server::{RequestContext, stats::Stats};
use bson::{RawDocument, RawDocumentBuf, doc, rawdoc};
use std::sync::Arc;

pub(super) struct DeleteStatement {
    pub(super) query: bson::Document,
    pub(super) filter: Filter,
    pub(super) limit_one: bool,
    pub(super) hint: Option<bson::Bson>,
}

impl DeleteStatement {
    /// One statement; its `$expr` reads the command's `let` variables `vars`.
    pub(super) fn parse(raw: &RawDocument, vars: &Arc<LetVariables>) -> Result<Self> {
        let args = Args::new("delete.deletes", raw);
        let collation = crate::command::parse_collation(args.value("collation")?.as_ref())?;
        let vars = vars.for_statement(collation);
        let query = args
            .document("q")?
            .ok_or_else(|| crate::command::missing("delete.deletes", "q"))?;
        let limit = args
            .i64("limit")?
            .ok_or_else(|| crate::command::missing("delete.deletes", "limit"))?;
        if limit != 0 && limit != 1 {
            return Err(MongoError::failed_to_parse(format!(
                "The limit field in delete objects must be 0 or 1. Got {limit}"
            )));
        }
        Ok(DeleteStatement {
            filter: Filter::parse_with_variables(&query, &vars)?,
            query,
            limit_one: limit == 1,
            hint: super::find::parse_hint(&args)?,
        })
    }
}

/// Deletes what one statement selects (of the documents `ownership` lets through); returns
/// how many documents went, and the `_id` of the last one.
pub(super) async fn run_statement(
    txn: &mut Writes<'_>,
    coll: &CollectionMeta,
    stmt: &DeleteStatement,
    ownership: Option<&Arc<OwnershipFilter>>,
) -> Result<(u64, Option<bson::Bson>)> {
    let started = std::time::Instant::now();
    let filter = crate::datanode::exec::bound_text(&stmt.filter, coll)?;
    let mut position = Position::plan(
        coll,
        &QueryShape {
            hint: stmt.hint.as_ref(),
            collation: stmt.filter.collation(),
            ..QueryShape::filter(&stmt.query)
        },
    )?
    .owned_by(ownership.cloned());
    txn.index_usage()
        .record(coll, position.path().indexes_used(coll));
    let (mut deleted, mut last_id) = (0, None);
    'scan: while !position.done() {
        for candidate in position.next_matches(txn, coll, &filter).await? {
            txn.delete(coll, candidate.rid, &candidate.raw).await?;
            deleted += 1;
            last_id = candidate.doc.get("_id").cloned();
            if stmt.limit_one {
                break 'scan;
            }
        }
    }
    if let Some(read) = PlanStats::of_write(&position, &stmt.query, None, deleted, started) {
        // Multi-document deletes are batched, as in MongoDB 6.1 and later.
        let stage = if stmt.limit_one {
            "DELETE"
        } else {
            "BATCHED_DELETE"
        };
        read.note(WriteStage {
            stage,
            express: "EXPRESS_DELETE",
            single: stmt.limit_one,
            stats: doc! {"nWouldDelete": number(deleted)},
        });
    }
    Ok((deleted, last_id))
}

pub(super) async fn run<S: DataNode>(
    state: &S,
    ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let ordered = crate::command::requests::DeleteRequest::parse(&req)?
        .ordered
        .unwrap_or(true);
    let wc = WriteConcern::parse(&args)?;
    let raw_statements = statements(&req, "deletes")?;
    let mut retry = RetryableWrite::begin(state, &req).await?;
    let vars = args.let_variables()?;
    // Deleting from a collection that does not exist deletes nothing and creates nothing.
    let Some((db, coll)) = target(state, &req, false).await? else {
        let parse = |raw: &bson::RawDocument| DeleteStatement::parse(raw, &vars).map(drop);
        let errors = super::write::unparsed_statements(&raw_statements, ordered, parse);
        return finish_reply(rawdoc! {"n": 0}, errors, &wc);
    };
    // Statements without a collation of their own compare by the collection's default.
    let vars = vars.for_statement(crate::datanode::collation::collection_default(&coll)?);
    let ns = format!("{}.{}", req.db, coll.name);
    // A router deleting the old version of a document a retryable update moved to another
    // shard: the update's result, recorded under its statement id whatever the delete did.
    let moved_result = match req.body.get("recordResult")? {
        Some(bson::RawBsonRef::Document(result)) if ctx.is_internal() => {
            Some(bson::Document::try_from(result)?)
        }
        _ => None,
    };
    let ownership = state.ownership(&req);
    let mut txn = db.writes().await?;
    let mut n = 0u64;
    let mut errors = Vec::new();
    for (i, raw) in raw_statements.iter().enumerate() {
        Stats::add(&state.node().stats.op_delete, 1);
        let recorded = match retry.as_mut() {
            Some(retry) => retry.executed(i)?,
            None => None,
        };
        if let Some(record) = recorded {
            n += record.get_i64("n").unwrap_or(0) as u64;
            continue;
        }
        let parsed = DeleteStatement::parse(raw, &vars).and_then(|stmt| {
            if !stmt.limit_one {
                super::write::refuse_multi_retryable(
                    retry.as_ref(),
                    i,
                    "Cannot use (or request) retryable writes with limit=0",
                )?;
            }
            Ok(stmt)
        });
        let outcome = match parsed {
            Ok(stmt) => {
                let outcome = run_statement(&mut txn, &coll, &stmt, ownership.as_ref()).await;
                // As MongoDB, a statement is recorded with its delete: one that deleted
                // nothing runs again on a retry, and so does `limit: 0` (one only runs with
                // an uninitialized `stmtId`, never recorded).
                match (retry.as_mut(), &outcome, &moved_result) {
                    (Some(retry), Ok((_, id)), Some(result)) => {
                        retry.record(i, &ns, id.as_ref(), result.clone())?;
                    }
                    (Some(retry), Ok((deleted @ 1.., id)), None) if stmt.limit_one => {
                        retry.record(i, &ns, id.as_ref(), bson::doc! {"n": *deleted as i64})?;
                    }
                    _ => {}
                }
                outcome
            }
            Err(e) => Err(e),
        };
        match outcome {
            Ok((deleted, _)) => n += deleted,
            Err(e) => {
                errors.push((i, e));
                if ordered {
                    break;
                }
            }
        }
    }
    let seq = commit_recorded(state, txn, &mut retry).await?;
    acknowledge(&db, &wc, seq).await?;
    let mut reply = rawdoc! {"n": count_value(n)};
    if let Some(retry) = &retry {
        append_retried(&mut reply, retry.retried())?;
    }
    finish_retryable(state, retry);
    finish_reply(reply, errors, &wc)
}
