//! `bulkWrite` on the router: the operations are cut into runs of consecutive operations on one
//! database, each run goes (versioned) to that database's primary shard as a `bulkWrite` of its
//! own, and the per-operation results and counts are merged back in the client's order. An
//! ordered bulk write stops after the first run with an error. A sharded collection whose
//! chunks are not all on its database's primary is refused before anything runs (its
//! operations would need per-shard targeting, which `bulkWrite` does not do yet).

use super::super::RouterState;
use super::super::write_batch::{ROUTER_OVERHEAD, statement_ids};
use crate::command::{
    BULK_WRITE_COUNTS, BULK_WRITE_CURSOR_NS, BulkOpKind, BulkWrite, CommandRequest, cursor_reply,
};
use crate::error::{MongoError, Result};
use crate::server::RequestContext;
use crate::server::stats::Stats;
use crate::wire::MAX_MESSAGE_SIZE;
use bson::{Bson, Document, RawDocument, RawDocumentBuf, doc};

/// Command fields passed on to every shard request (the session's, so that a retryable write
/// is one on the shards too).
const PASSED_ON: [&str; 8] = [
    "lsid",
    "txnNumber",
    "ordered",
    "bypassDocumentValidation",
    "let",
    "comment",
    "writeConcern",
    "maxTimeMS",
];

#[derive(Default)]
struct Merged {
    results: Vec<Document>,
    counts: [i64; 6],
    write_concern_error: Option<Document>,
    /// The statement ids shards answered from their records.
    retried: Vec<i32>,
}

pub(super) async fn bulk_write(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let parsed = BulkWrite::parse(&req)?;
    for namespace in &parsed.namespaces {
        check_on_primary(state, &namespace.db, &namespace.ns).await?;
    }
    let stats = &state.node.stats;
    for op in &parsed.ops {
        let counter = match op.kind {
            BulkOpKind::Insert => &stats.op_insert,
            BulkOpKind::Update => &stats.op_update,
            BulkOpKind::Delete => &stats.op_delete,
        };
        Stats::add(counter, 1);
    }
    let mut merged = Merged::default();
    let mut start = 0;
    while start < parsed.ops.len() {
        let end = within_message(&parsed, start, parsed.database_run(start));
        let had_errors = run_on_primary(state, &req, &parsed, start, end, &mut merged).await?;
        if parsed.ordered && had_errors {
            break;
        }
        start = end;
    }
    let entries: Vec<RawDocumentBuf> = merged
        .results
        .iter()
        .filter(|r| !parsed.errors_only || r.get_f64("ok") == Ok(0.0))
        .map(RawDocumentBuf::from_document)
        .collect::<std::result::Result<_, _>>()?;
    let mut reply = cursor_reply(BULK_WRITE_CURSOR_NS, entries, 0, true);
    for (name, n) in BULK_WRITE_COUNTS.iter().zip(merged.counts) {
        match i32::try_from(n) {
            Ok(small) => reply.append(*name, small),
            Err(_) => reply.append(*name, n),
        }
    }
    if !merged.retried.is_empty() {
        let ids: Vec<Bson> = merged.retried.iter().map(|id| Bson::Int32(*id)).collect();
        reply.append("retriedStmtIds", bson::RawBson::try_from(Bson::Array(ids))?);
    }
    if let Some(wce) = merged.write_concern_error {
        reply.append("writeConcernError", RawDocumentBuf::from_document(&wce)?);
    }
    Ok(reply)
}

/// The end of the run of operations from `start` (up to `end`) that fits one message to a shard:
/// the client's message fits `maxMessageSizeBytes`, the shard's may not once the router's fields
/// and `nsInfo` are added, so a run that would not fit is cut, as mongos cuts its child batches.
fn within_message(parsed: &BulkWrite<'_>, start: usize, end: usize) -> usize {
    let ns_info: usize = parsed.namespaces.iter().map(|n| n.ns.len() + 32).sum();
    let budget = MAX_MESSAGE_SIZE.saturating_sub(ROUTER_OVERHEAD + ns_info);
    let mut used = 0;
    for (i, op) in parsed.ops[start..end].iter().enumerate() {
        used += op.raw.as_bytes().len();
        if used > budget && i > 0 {
            return start + i;
        }
    }
    end
}

/// Refuses a namespace whose data is not all on its database's primary shard.
async fn check_on_primary(state: &RouterState, db: &str, ns: &str) -> Result<()> {
    if super::super::forward::on_config_server(db) {
        return Ok(());
    }
    let Some(routing) = state
        .collections
        .get(&state.config, ns, &state.node.stats)
        .await?
    else {
        return Ok(());
    };
    let primary = state
        .databases
        .get(&state.config, db, false)
        .await?
        .map(|d| d.primary);
    if primary.is_some_and(|p| routing.owners() == [p]) {
        return Ok(());
    }
    Err(MongoError::new(
        crate::error::ErrorCode::NotImplemented,
        format!(
            "bulkWrite on {ns}, a sharded collection with chunks on several shards, is not supported yet; use insert, update and delete"
        ),
    ))
}

/// Sends operations `start..end` (all on one database) to that database's primary shard and
/// merges the reply; returns whether any operation failed.
async fn run_on_primary(
    state: &RouterState,
    req: &CommandRequest,
    parsed: &BulkWrite<'_>,
    start: usize,
    end: usize,
    merged: &mut Merged,
) -> Result<bool> {
    let ops = &parsed.ops;
    let db = parsed.db_of(&ops[start]);
    // The shard sees only this run's namespaces, renumbered.
    let mut used: Vec<usize> = Vec::new();
    let mut shard_ops = Vec::with_capacity(end - start);
    for op in &ops[start..end] {
        let local = match used.iter().position(|&n| n == op.ns) {
            Some(i) => i,
            None => {
                used.push(op.ns);
                used.len() - 1
            }
        };
        shard_ops.push(renumbered(op.raw, local as i32)?);
    }
    let ns_info: Vec<RawDocumentBuf> = used
        .iter()
        .map(|&n| RawDocumentBuf::from_document(&doc! {"ns": &parsed.namespaces[n].ns}))
        .collect::<std::result::Result<_, _>>()?;
    let mut body = doc! {"bulkWrite": 1, "errorsOnly": false};
    for field in PASSED_ON {
        if let Some(value) = req.body.get(field)? {
            body.insert(field, Bson::try_from(value.to_raw_bson())?);
        }
    }
    // Each operation keeps its `stmtId` whichever run carries it.
    if let Some(ids) = statement_ids(req, ops.len())? {
        body.insert("stmtIds", ids[start..end].to_vec());
    }
    let shard_req = CommandRequest::from_document("admin", &body)?
        .with_sequence("ops", shard_ops)
        .with_sequence("nsInfo", ns_info);
    let creates = ops[start..end].iter().any(|op| op.creates());
    let reply = match state.send_to_primary_of(db, shard_req, creates).await {
        Ok(Some((_, reply))) => reply.to_document()?,
        // No such database: updates and deletes there find nothing.
        Ok(None) => {
            for (i, op) in ops[start..end].iter().enumerate() {
                let mut entry = doc! {"ok": 1.0, "idx": (start + i) as i32, "n": 0};
                if op.kind == BulkOpKind::Update {
                    entry.insert("nModified", 0);
                }
                merged.results.push(entry);
            }
            return Ok(false);
        }
        Err(e) => doc! {"ok": 0.0, "errmsg": e.message(), "code": e.code().code()},
    };
    if let Some(error) = MongoError::from_reply(&reply) {
        // The whole run failed on the shard: its first operation carries the error (an ordered
        // bulk write stops there; an unordered one reports it for every operation of the run).
        let failed = if parsed.ordered { start + 1 } else { end };
        for idx in start..failed {
            let mut entry = doc! {"ok": 0.0, "idx": idx as i32};
            for (k, v) in error.to_reply() {
                if k != "ok" {
                    entry.insert(k, v);
                }
            }
            merged.results.push(entry);
            merged.counts[0] += 1;
        }
        return Ok(true);
    }
    let batch = reply
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .map_err(|_| MongoError::internal("a shard's bulkWrite reply has no cursor"))?;
    for entry in batch {
        let Bson::Document(entry) = entry else {
            continue;
        };
        let mut entry = entry.clone();
        let local = match entry.get("idx") {
            Some(Bson::Int32(i)) => *i as usize,
            Some(Bson::Int64(i)) => *i as usize,
            _ => 0,
        };
        entry.insert("idx", (start + local) as i32);
        merged.results.push(entry);
    }
    for (slot, name) in merged.counts.iter_mut().zip(BULK_WRITE_COUNTS) {
        *slot += match reply.get(name) {
            Some(Bson::Int32(n)) => *n as i64,
            Some(Bson::Int64(n)) => *n,
            _ => 0,
        };
    }
    // The shard numbers the run's operations by the `stmtIds` sent, the client's own.
    if let Ok(ids) = reply.get_array("retriedStmtIds") {
        merged.retried.extend(ids.iter().filter_map(Bson::as_i32));
    }
    if let Ok(wce) = reply.get_document("writeConcernError") {
        merged.write_concern_error = Some(wce.clone());
    }
    Ok(reply.get_i32("nErrors").unwrap_or(0) > 0)
}

/// The operation with its namespace index replaced.
fn renumbered(raw: &RawDocument, ns: i32) -> Result<RawDocumentBuf> {
    let mut out = RawDocumentBuf::new();
    for (i, element) in raw.iter().enumerate() {
        let (key, value) = element?;
        if i == 0 {
            out.append(key, ns);
        } else {
            out.append_ref(key, value);
        }
    }
    Ok(out)
}
