//! `bulkWrite` (MongoDB 8.0): inserts, updates and deletes across namespaces in one command,
//! ordered or not, answered with one result per operation in a cursor plus summary counts.
//! Consecutive operations on one database share a write transaction; consecutive inserts into
//! one collection go to storage as one batch.

use super::super::DataNode;
use super::super::exec::number;
use super::super::storage::{CollectionMeta, DatabaseStore, Writes};
use super::super::transaction_table::RetryableWrite;
use super::super::validation::DocumentValidator;
use super::delete::{self, DeleteStatement};
use super::insert::{prepare_document, validated};
use super::update::{self, UpdateStatement};
use super::write::{acknowledge, commit_recorded, count_value, finish_retryable, id_of};
use crate::catalog::validate_user_write;
use crate::command::{
    BULK_WRITE_CURSOR_NS, BulkOpKind, BulkWrite, CommandRequest, WriteConcern, cursor_reply,
};
use crate::error::{MongoError, Result};
use crate::expression::LetVariables;
use crate::server::{RequestContext, stats::Stats};
use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf, doc};
use std::borrow::Cow;
use std::sync::Arc;

/// The command with its write concern.
pub(super) struct BulkWriteCommand<'a> {
    parsed: BulkWrite<'a>,
    write_concern: WriteConcern,
    bypass_validation: bool,
    /// The command's `let`, evaluated.
    vars: Arc<LetVariables>,
}

impl<'a> BulkWriteCommand<'a> {
    pub(super) fn parse(req: &'a CommandRequest) -> Result<Self> {
        let parsed = BulkWrite::parse(req)?;
        Ok(BulkWriteCommand {
            bypass_validation: parsed.bypass_document_validation,
            parsed,
            write_concern: WriteConcern::parse(&req.args())?,
            vars: req.args().let_variables()?,
        })
    }
}

/// The summary counts and per-operation results.
#[derive(Default)]
struct Outcome {
    results: Vec<Document>,
    errors: u64,
    inserted: u64,
    matched: u64,
    modified: u64,
    upserted: u64,
    deleted: u64,
    stopped: bool,
}

impl Outcome {
    fn success(&mut self, idx: usize, mut fields: Document) {
        let mut entry = doc! {"ok": 1.0, "idx": number(idx as u64)};
        entry.extend(std::mem::take(&mut fields));
        self.results.push(entry);
    }

    /// The result of an operation, counted.
    fn succeeded(&mut self, idx: usize, kind: BulkOpKind, fields: Document) {
        match kind {
            BulkOpKind::Insert => self.inserted += 1,
            BulkOpKind::Update => {
                self.matched += count_of(&fields, "n") - fields.contains_key("upserted") as u64;
                self.modified += count_of(&fields, "nModified");
                self.upserted += fields.contains_key("upserted") as u64;
            }
            BulkOpKind::Delete => self.deleted += count_of(&fields, "n"),
        }
        self.success(idx, fields);
    }

    fn failure(&mut self, idx: usize, kind: BulkOpKind, error: MongoError, ordered: bool) {
        self.errors += 1;
        let mut entry = doc! {"ok": 0.0, "idx": number(idx as u64)};
        let reply = error.to_reply();
        for (k, v) in reply {
            if k != "ok" {
                entry.insert(k, v);
            }
        }
        entry.insert("n", 0);
        if kind == BulkOpKind::Update {
            entry.insert("nModified", 0);
        }
        self.results.push(entry);
        if ordered {
            self.stopped = true;
        }
    }
}

pub(super) async fn run<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let cmd = BulkWriteCommand::parse(&req)?;
    let mut retry = RetryableWrite::begin(state, &req).await?;
    let mut out = Outcome::default();
    let mut committed: Vec<(Arc<DatabaseStore>, u64)> = Vec::new();
    let mut start = 0;
    while start < cmd.parsed.ops.len() && !out.stopped {
        let db_name = cmd.parsed.db_of(&cmd.parsed.ops[start]).to_string();
        let end = cmd.parsed.database_run(start);
        let group = Group {
            db_name: &db_name,
            start,
            end,
        };
        run_group(state, &cmd, group, &mut out, &mut committed, &mut retry).await?;
        start = end;
    }
    for (db, seq) in &committed {
        acknowledge(db, &cmd.write_concern, *seq).await?;
    }
    let stats = &state.node().stats;
    for op in &cmd.parsed.ops[..out.results.len().min(cmd.parsed.ops.len())] {
        let counter = match op.kind {
            BulkOpKind::Insert => &stats.op_insert,
            BulkOpKind::Update => &stats.op_update,
            BulkOpKind::Delete => &stats.op_delete,
        };
        Stats::add(counter, 1);
    }
    let entries: Vec<RawDocumentBuf> = out
        .results
        .iter()
        .filter(|r| !cmd.parsed.errors_only || r.get_f64("ok") == Ok(0.0))
        .map(RawDocumentBuf::from_document)
        .collect::<std::result::Result<_, _>>()?;
    let mut reply = cursor_reply(BULK_WRITE_CURSOR_NS, entries, 0, true);
    reply.append("nErrors", count_value(out.errors));
    reply.append("nInserted", count_value(out.inserted));
    reply.append("nMatched", count_value(out.matched));
    reply.append("nModified", count_value(out.modified));
    reply.append("nUpserted", count_value(out.upserted));
    reply.append("nDeleted", count_value(out.deleted));
    if let Some(wce) = cmd.write_concern.error() {
        reply.append("writeConcernError", RawDocumentBuf::from_document(&wce)?);
    }
    if let Some(retry) = &retry {
        super::write::append_retried(&mut reply, retry.retried())?;
    }
    finish_retryable(state, retry);
    Ok(reply)
}

/// Operations `start..end` of a bulk write, all on database `db_name`.
struct Group<'a> {
    db_name: &'a str,
    start: usize,
    end: usize,
}

/// Runs `cmd.parsed.ops[start..end]`, which all write to database `db_name`, in one transaction (cut
/// only to create a collection, which is DDL with its own transaction).
async fn run_group<S: DataNode>(
    state: &S,
    cmd: &BulkWriteCommand<'_>,
    group: Group<'_>,
    out: &mut Outcome,
    committed: &mut Vec<(Arc<DatabaseStore>, u64)>,
    retry: &mut Option<RetryableWrite>,
) -> Result<()> {
    let Group {
        db_name,
        start,
        end,
    } = group;
    let creates = cmd.parsed.ops[start..end].iter().any(|op| op.creates());
    let db = if creates && crate::catalog::validate_db_name(db_name).is_ok() {
        Some(state.storage().database_or_create(db_name).await?)
    } else {
        state.storage().database(db_name).await
    };
    let Some(db) = db else {
        // No database: updates and deletes find nothing (bad names still answer errors).
        for idx in start..end {
            let op = &cmd.parsed.ops[idx];
            match validate_user_write(db_name, &cmd.parsed.namespaces[op.ns].coll) {
                Err(e) => out.failure(idx, op.kind, e, cmd.parsed.ordered),
                Ok(()) => out.success(idx, nothing_done(op.kind)),
            }
            if out.stopped {
                break;
            }
        }
        return Ok(());
    };
    let mut txn = Some(db.writes().await?);
    let mut idx = start;
    while idx < end && !out.stopped {
        let op = &cmd.parsed.ops[idx];
        let coll_name = &cmd.parsed.namespaces[op.ns].coll;
        if op.kind != BulkOpKind::Insert {
            // An operation this retryable write executed already answers its record.
            if let Some(recorded) = retry
                .as_mut()
                .map(|r| r.executed(idx))
                .transpose()?
                .flatten()
            {
                out.succeeded(idx, op.kind, recorded);
                idx += 1;
                continue;
            }
        }
        let ns = format!("{db_name}.{coll_name}");
        let checked = match validate_user_write(db_name, coll_name) {
            Ok(()) => {
                match crate::datanode::views::definition(state.storage(), db_name, coll_name).await
                {
                    Ok(Some(_)) => {
                        Err(crate::datanode::views::not_a_collection(db_name, coll_name))
                    }
                    Ok(None) => Ok(()),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        };
        if let Err(e) = checked {
            out.failure(idx, op.kind, e, cmd.parsed.ordered);
            idx += 1;
            continue;
        }
        let coll = match db.collection(coll_name) {
            Some(coll) => coll,
            None if op.creates() => {
                let open = txn.take().expect("a transaction is open");
                let seq = commit_recorded(state, open, retry).await?;
                committed.push((db.clone(), seq));
                let coll = db.ensure_collection_in_scope(coll_name).await?;
                txn = Some(db.writes().await?);
                coll
            }
            None => {
                out.success(idx, nothing_done(op.kind));
                idx += 1;
                continue;
            }
        };
        let validator =
            match DocumentValidator::for_collection(db_name, &coll, cmd.bypass_validation) {
                Ok(v) => v,
                Err(e) => {
                    out.failure(idx, op.kind, e, cmd.parsed.ordered);
                    idx += 1;
                    continue;
                }
            };
        let open = txn.as_mut().expect("a transaction is open");
        if op.kind == BulkOpKind::Insert {
            // The run of inserts into this collection goes to storage as one batch.
            let run_end = (idx..end)
                .find(|&j| {
                    cmd.parsed.ops[j].kind != BulkOpKind::Insert || cmd.parsed.ops[j].ns != op.ns
                })
                .unwrap_or(end);
            let run = Group {
                db_name: &ns,
                start: idx,
                end: run_end,
            };
            insert_run(open, &coll, validator.as_ref(), cmd, run, out, retry).await?;
            idx = run_end;
            continue;
        }
        let outcome = match op.kind {
            BulkOpKind::Update => {
                update_op(
                    open,
                    &coll,
                    validator.as_ref(),
                    op.raw,
                    &cmd.vars,
                    retry.is_some(),
                )
                .await
            }
            BulkOpKind::Delete => delete_op(open, &coll, op.raw, &cmd.vars, retry.is_some())
                .await
                .map(|(n, id)| (doc! {"n": number(n)}, id)),
            BulkOpKind::Insert => unreachable!("inserts are handled above"),
        };
        match outcome {
            Ok((fields, written)) => {
                if let (Some(retry), Some(id)) = (retry.as_mut(), &written) {
                    retry.record(idx, &ns, Some(id), fields.clone())?;
                }
                out.succeeded(idx, op.kind, fields);
            }
            Err(e) => out.failure(idx, op.kind, e, cmd.parsed.ordered),
        }
        idx += 1;
    }
    let open = txn.take().expect("a transaction is open");
    let seq = commit_recorded(state, open, retry).await?;
    committed.push((db.clone(), seq));
    Ok(())
}

fn nothing_done(kind: BulkOpKind) -> Document {
    match kind {
        BulkOpKind::Update => doc! {"n": 0, "nModified": 0},
        _ => doc! {"n": 0},
    }
}

fn count_of(fields: &Document, name: &str) -> u64 {
    match fields.get(name) {
        Some(Bson::Int32(n)) => *n as u64,
        Some(Bson::Int64(n)) => *n as u64,
        _ => 0,
    }
}

/// Inserts the operations of `run` (all into `coll`, whose namespace `run.db_name` is) as one
/// batch.
async fn insert_run(
    txn: &mut Writes<'_>,
    coll: &CollectionMeta,
    validator: Option<&DocumentValidator>,
    cmd: &BulkWriteCommand<'_>,
    run: Group<'_>,
    out: &mut Outcome,
    retry: &mut Option<RetryableWrite>,
) -> Result<()> {
    let (ns, start, end) = (run.db_name, run.start, run.end);
    let mut prepared: Vec<(usize, Cow<RawDocument>)> = Vec::with_capacity(end - start);
    let mut first_error: Option<usize> = None;
    let mut errors: Vec<(usize, MongoError)> = Vec::new();
    let mut inserted: Vec<usize> = Vec::new();
    for idx in start..end {
        // Inserted already by this retryable write: answered as inserted.
        if let Some(retry) = retry.as_mut() {
            if retry.executed(idx)?.is_some() {
                inserted.push(idx);
                continue;
            }
        }
        let document = match cmd.parsed.ops[idx].raw.get("document") {
            Ok(Some(RawBsonRef::Document(d))) => d,
            _ => unreachable!("checked when parsing"),
        };
        match prepare_document(document).and_then(|doc| validated(doc, validator)) {
            Ok(doc) => prepared.push((idx, doc)),
            Err(e) => {
                errors.push((idx, e));
                if cmd.parsed.ordered {
                    first_error = Some(idx);
                    break;
                }
            }
        }
    }
    // Documents after an ordered failure are never attempted.
    if let Some(limit) = first_error {
        prepared.retain(|(i, _)| *i < limit);
    }
    let mut next = 0;
    while next < prepared.len() {
        let batch: Vec<&RawDocument> = prepared[next..].iter().map(|(_, d)| d.as_ref()).collect();
        let (done, failure) = match txn.insert(coll, &batch).await {
            Ok(()) => (batch.len(), None),
            Err((done, e)) => (done, Some(e)),
        };
        for (i, doc) in &prepared[next..next + done] {
            inserted.push(*i);
            if let Some(retry) = retry.as_mut() {
                retry.record(*i, ns, id_of(doc).as_ref(), Document::new())?;
            }
        }
        match failure {
            None => break,
            Some(e) => {
                let failed = prepared[next + done].0;
                errors.push((failed, e));
                if cmd.parsed.ordered {
                    errors.retain(|(i, _)| *i <= failed);
                    break;
                }
                next += done + 1;
            }
        }
    }
    // Results in operation order: successes and failures interleaved.
    let mut events: Vec<(usize, Option<MongoError>)> =
        inserted.into_iter().map(|i| (i, None)).collect();
    events.extend(errors.into_iter().map(|(i, e)| (i, Some(e))));
    events.sort_by_key(|(i, _)| *i);
    for (idx, error) in events {
        if out.stopped {
            break;
        }
        match error {
            None => out.succeeded(idx, BulkOpKind::Insert, doc! {"n": 1}),
            Some(e) => out.failure(idx, BulkOpKind::Insert, e, cmd.parsed.ordered),
        }
    }
    Ok(())
}

/// An update operation, run as the `update` command runs a statement; with the `_id` of the
/// document it wrote when a retryable write records it (as `update` does: not a multi-update,
/// not one that wrote nothing).
async fn update_op(
    txn: &mut Writes<'_>,
    coll: &CollectionMeta,
    validator: Option<&DocumentValidator>,
    raw: &RawDocument,
    vars: &Arc<LetVariables>,
    retryable: bool,
) -> Result<(Document, Option<Bson>)> {
    let mut statement = RawDocumentBuf::new();
    for element in raw.iter() {
        let (key, value) = element?;
        match key {
            "update" => {}
            "filter" => statement.append_ref("q", value),
            "updateMods" => statement.append_ref("u", value),
            "constants" => statement.append_ref("c", value),
            other => statement.append_ref(other, value),
        }
    }
    let vars = &vars.for_statement(crate::datanode::collation::collection_default(coll)?);
    let stmt = UpdateStatement::parse(&statement, vars)?;
    if stmt.multi && retryable {
        return Err(multi_retryable());
    }
    let outcome = update::run_statement(txn, coll, &stmt, validator, None).await?;
    let mut fields = doc! {
        "n": number(outcome.matched + outcome.upserted_id.is_some() as u64),
        "nModified": number(outcome.modified),
    };
    let wrote = outcome.modified > 0 || outcome.upserted_id.is_some();
    let written = match (&outcome.upserted_id, wrote && !stmt.multi) {
        (_, false) => None,
        (Some(id), true) => Some(id.clone()),
        (None, true) => outcome.matched_id.clone(),
    };
    if let Some(id) = outcome.upserted_id {
        fields.insert("upserted", doc! {"_id": id});
    }
    Ok((fields, written))
}

/// A delete operation (`multi: false` deletes one document); with the `_id` of the document it
/// deleted when a retryable write records it (not a multi-delete).
async fn delete_op(
    txn: &mut Writes<'_>,
    coll: &CollectionMeta,
    raw: &RawDocument,
    vars: &Arc<LetVariables>,
    retryable: bool,
) -> Result<(u64, Option<Bson>)> {
    let mut statement = RawDocumentBuf::new();
    let mut multi = false;
    for element in raw.iter() {
        let (key, value) = element?;
        match (key, value) {
            ("delete", _) => {}
            ("filter", v) => statement.append_ref("q", v),
            ("multi", RawBsonRef::Boolean(b)) => multi = b,
            ("multi", _) => {
                return Err(MongoError::type_mismatch(
                    "BSON field 'bulkWrite.ops.multi' is the wrong type, expected type 'bool'",
                ));
            }
            (other, v) => statement.append_ref(other, v),
        }
    }
    statement.append("limit", if multi { 0 } else { 1 });
    let vars = &vars.for_statement(crate::datanode::collation::collection_default(coll)?);
    let stmt = DeleteStatement::parse(&statement, vars)?;
    if multi && retryable {
        return Err(multi_retryable());
    }
    let (n, id) = delete::run_statement(txn, coll, &stmt, None).await?;
    Ok((n, id.filter(|_| !multi)))
}

/// A multi-document operation in a retryable bulk write, refused as MongoDB 8.0 refuses it.
fn multi_retryable() -> MongoError {
    MongoError::new(
        crate::error::ErrorCode::InvalidOptions,
        "Cannot use retryable writes with multi=true",
    )
}
