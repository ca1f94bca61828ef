//! The collection-level `bulkWrite` of the CRUD specification, which the Rust driver does not
//! offer (its `Client::bulk_write` sends the 8.0 `bulkWrite` command instead), carried out as the
//! spec's drivers do with the `insert`, `update` and `delete` commands sent through
//! `Database::run_command`:
//!
//! - write models are validated as drivers do (at least one request; an update document's first
//!   key is an operator, a replacement's is not) and inserted documents without `_id` get an
//!   ObjectId generated here, first in the document;
//! - ordered bulk writes run consecutive models of the same type as one command and stop after
//!   the first command with write errors; unordered ones group all inserts, then all updates,
//!   then all deletes (the deprecated bulk API specification lets drivers reorder them), and run
//!   every group; every group is split by `maxWriteBatchSize` and so that its statements stay
//!   within `maxBsonObjectSize` (the command is one BSON document here, not an OP_MSG document
//!   sequence, and the server allows commands 16 KiB over that size for their other fields);
//! - in a causally consistent session (outside transactions) each command reads after the
//!   session's operation time (`readConcern.afterClusterTime`), as drivers do;
//! - each command carries `ordered`, and as given `bypassDocumentValidation` (insert, update),
//!   `let` (update, delete), `comment`, and the collection's write concern outside transactions;
//! - retryable writes (the retryable writes specification): outside a transaction, with
//!   `retryWrites` on, a command without multi-document statements carries a `txnNumber` and is
//!   retried once after a network error or an error labelled `RetryableWriteError`. Without an
//!   explicit session the runner starts one session for the whole bulk write and numbers its
//!   transactions itself (drivers use one implicit session); in an explicit session outside a
//!   transaction no `txnNumber` is sent and nothing is retried, because the driver keeps the
//!   session's transaction number private and a number of the runner's could collide with it;
//! - the replies are merged into the spec's `BulkWriteResult` (upserted ids and write error
//!   indexes mapped back to the models' indexes), and write errors, write concern errors or a
//!   failed command make a `BulkFailure` that carries the partial result.
//!
//! Unacknowledged (w: 0) bulk writes stay skipped (`commands::UNACKNOWLEDGED`).

use super::commands::{
    UNACKNOWLEDGED, after_cluster_time, database_of, is_network_error, is_unacknowledged, run,
    write_concern_doc,
};
use super::{Ctx, OpError, OpResult, Output};
use crate::values::Args;
use mongodb::bson::oid::ObjectId;
use mongodb::bson::{Bson, Document, doc};
use mongodb::options::SessionOptions;
use mongodb::{ClientSession, Collection};
use std::collections::{BTreeMap, BTreeSet};

const RETRYABLE_WRITE_ERROR: &str = "RetryableWriteError";
const NO_WRITES_PERFORMED: &str = "NoWritesPerformed";

/// A failed collection-level bulk write, as the unified format examines it.
#[derive(Clone, Debug, Default)]
pub struct BulkFailure {
    /// The command error that stopped the bulk write (ok: 0, network error), if one did.
    pub cause: Option<mongodb::error::Error>,
    /// The error labels: the cause's, those of replies carrying write concern errors, and
    /// `RetryableWriteError` on the network error of a retryable write (drivers add it).
    pub labels: BTreeSet<String>,
    /// Write errors (`code`, `codeName`, `errmsg`, `errInfo`) by the index of their model.
    pub write_errors: BTreeMap<usize, Document>,
    pub write_concern_errors: Vec<Document>,
    /// The `BulkWriteResult` of what was done.
    pub partial: Document,
}

impl BulkFailure {
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = &self.cause {
            parts.push(format!("command error: {c}"));
        }
        for (i, w) in &self.write_errors {
            parts.push(format!("write error at model {i}: {w}"));
        }
        for w in &self.write_concern_errors {
            parts.push(format!("write concern error: {w}"));
        }
        if !self.labels.is_empty() {
            parts.push(format!("labels {:?}", self.labels));
        }
        format!(
            "bulk write failed ({}); partial result {}",
            parts.join("; "),
            self.partial
        )
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Insert,
    Update,
    Delete,
}

impl Kind {
    fn command(self) -> (&'static str, &'static str) {
        match self {
            Kind::Insert => ("insert", "documents"),
            Kind::Update => ("update", "updates"),
            Kind::Delete => ("delete", "deletes"),
        }
    }
}

/// One write model as the statement its command carries.
struct Statement {
    kind: Kind,
    /// The model's index in the request list.
    index: usize,
    body: Document,
    /// updateMany / deleteMany: the command cannot be a retryable write.
    multi: bool,
    size: usize,
    /// The `_id` of an inserted document.
    inserted_id: Option<Bson>,
}

fn bson_size(d: &Document) -> usize {
    let mut buf = Vec::new();
    d.to_writer(&mut buf).map(|()| buf.len()).unwrap_or(0)
}

/// Checks the model's fields against those its type takes.
fn known(kind: &str, model: &Document, allowed: &[&str]) -> Result<(), OpError> {
    match model.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(OpError::Runner(format!(
            "bulkWrite: {kind}: unsupported field `{k}`"
        ))),
        None => Ok(()),
    }
}

fn update_arg(kind: &str, model: &Document, key: &str) -> Result<Bson, OpError> {
    model
        .get(key)
        .cloned()
        .ok_or_else(|| OpError::Runner(format!("bulkWrite: {kind} without `{key}`")))
}

fn statement(index: usize, item: &Document) -> Result<Statement, OpError> {
    let Some((kind, Bson::Document(m))) = item.iter().next() else {
        return Err(OpError::Runner(format!(
            "bulkWrite: malformed write model {item}"
        )));
    };
    let filter = || m.get_document("filter").cloned().unwrap_or_default();
    let copy = |body: &mut Document, keys: &[&str]| {
        for key in keys {
            if let Some(v) = m.get(*key) {
                body.insert(*key, v.clone());
            }
        }
    };
    let (kind_of, body, multi, inserted_id) = match kind.as_str() {
        "insertOne" => {
            known(kind, m, &["document"])?;
            let document = m
                .get_document("document")
                .map_err(|_| OpError::Runner("bulkWrite: insertOne without document".into()))?;
            // Drivers generate missing identifiers, first in the document.
            let (id, body) = match document.get("_id") {
                Some(id) => (id.clone(), document.clone()),
                None => {
                    let id = Bson::ObjectId(ObjectId::new());
                    let mut body = doc! {"_id": id.clone()};
                    body.extend(document.clone());
                    (id, body)
                }
            };
            (Kind::Insert, body, false, Some(id))
        }
        "updateOne" | "updateMany" | "replaceOne" => {
            let many = kind == "updateMany";
            let replace = kind == "replaceOne";
            let update = if replace {
                known(
                    kind,
                    m,
                    &[
                        "filter",
                        "replacement",
                        "collation",
                        "hint",
                        "upsert",
                        "sort",
                    ],
                )?;
                let replacement = update_arg(kind, m, "replacement")?;
                let Bson::Document(r) = &replacement else {
                    return Err(OpError::Runner(format!(
                        "bulkWrite: replacement is not a document: {replacement}"
                    )));
                };
                if r.keys().next().is_some_and(|k| k.starts_with('$')) {
                    return Err(OpError::Client(
                        "replacement document must not contain update operators (its first key \
                         starts with '$')"
                            .into(),
                    ));
                }
                replacement
            } else {
                let mut allowed = vec![
                    "filter",
                    "update",
                    "arrayFilters",
                    "collation",
                    "hint",
                    "upsert",
                ];
                if !many {
                    allowed.push("sort");
                }
                known(kind, m, &allowed)?;
                let update = update_arg(kind, m, "update")?;
                match &update {
                    Bson::Document(u) if !u.keys().next().is_some_and(|k| k.starts_with('$')) => {
                        return Err(OpError::Client(
                            "update document must only contain update operators (its first key \
                             must start with '$')"
                                .into(),
                        ));
                    }
                    Bson::Document(_) | Bson::Array(_) => {}
                    other => {
                        return Err(OpError::Runner(format!(
                            "bulkWrite: update is neither a document nor a pipeline: {other}"
                        )));
                    }
                }
                update
            };
            let mut body = doc! {"q": filter(), "u": update};
            copy(&mut body, &["upsert"]);
            if many {
                body.insert("multi", true);
            }
            copy(&mut body, &["arrayFilters", "collation", "hint", "sort"]);
            (Kind::Update, body, many, None)
        }
        "deleteOne" | "deleteMany" => {
            known(kind, m, &["filter", "collation", "hint"])?;
            let many = kind == "deleteMany";
            let mut body = doc! {"q": filter(), "limit": if many { 0 } else { 1 }};
            copy(&mut body, &["collation", "hint"]);
            (Kind::Delete, body, many, None)
        }
        other => {
            return Err(OpError::Runner(format!(
                "bulkWrite: unknown write model `{other}`"
            )));
        }
    };
    Ok(Statement {
        kind: kind_of,
        index,
        size: bson_size(&body),
        body,
        multi,
        inserted_id,
    })
}

/// The commands to send, in order: runs of one type (ordered) or one group per type
/// (unordered), split by the server's batch limits.
fn batches(statements: Vec<Statement>, ordered: bool, ctx: Ctx) -> Vec<Vec<Statement>> {
    let mut groups: Vec<Vec<Statement>> = Vec::new();
    if ordered {
        for s in statements {
            match groups.last_mut() {
                Some(g) if g[0].kind == s.kind => g.push(s),
                _ => groups.push(vec![s]),
            }
        }
    } else {
        let mut by_kind: [Vec<Statement>; 3] = Default::default();
        for s in statements {
            let slot = match s.kind {
                Kind::Insert => 0,
                Kind::Update => 1,
                Kind::Delete => 2,
            };
            by_kind[slot].push(s);
        }
        groups.extend(by_kind.into_iter().filter(|g| !g.is_empty()));
    }
    let max_count = ctx.max_write_batch_size.max(1);
    let max_bytes = ctx.max_bson_object_size;
    let mut out = Vec::new();
    for group in groups {
        let mut batch: Vec<Statement> = Vec::new();
        let mut bytes = 0;
        for s in group {
            // Each array element costs its document, a type byte and its index key.
            let cost = s.size + 2 + batch.len().to_string().len();
            if !batch.is_empty() && (batch.len() >= max_count || bytes + cost > max_bytes) {
                out.push(std::mem::take(&mut batch));
                bytes = 0;
            }
            bytes += s.size + 2 + batch.len().to_string().len();
            batch.push(s);
        }
        if !batch.is_empty() {
            out.push(batch);
        }
    }
    out
}

/// The running totals of the spec's `BulkWriteResult`.
#[derive(Default)]
struct Totals {
    inserted: i64,
    matched: i64,
    modified: i64,
    deleted: i64,
    upserted: BTreeMap<usize, Bson>,
    inserted_ids: BTreeMap<usize, Bson>,
}

impl Totals {
    fn document(&self) -> Document {
        let ids = |m: &BTreeMap<usize, Bson>| {
            let mut d = Document::new();
            for (i, v) in m {
                d.insert(i.to_string(), v.clone());
            }
            d
        };
        doc! {
            "insertedCount": self.inserted,
            "matchedCount": self.matched,
            "modifiedCount": self.modified,
            "deletedCount": self.deleted,
            "upsertedCount": self.upserted.len() as i64,
            "insertedIds": ids(&self.inserted_ids),
            "upsertedIds": ids(&self.upserted),
        }
    }
}

fn int(reply: &Document, key: &str) -> i64 {
    reply.get(key).and_then(crate::values::as_i64).unwrap_or(0)
}

/// Whether the reply carries a write concern error the server labelled retryable.
fn retryable_write_concern_error(reply: &Document) -> bool {
    reply.contains_key("writeConcernError")
        && reply
            .get_array("errorLabels")
            .is_ok_and(|l| l.iter().any(|x| x.as_str() == Some(RETRYABLE_WRITE_ERROR)))
}

fn retryable_write_error(e: &mongodb::error::Error) -> bool {
    is_network_error(e) || e.contains_label(RETRYABLE_WRITE_ERROR)
}

pub async fn bulk_write(
    coll: &Collection<Document>,
    session: Option<&mut ClientSession>,
    ctx: Ctx,
    mut args: Args,
) -> OpResult {
    let requests = args
        .docs("requests")?
        .ok_or("bulkWrite: missing requests")?;
    let ordered = args.bool("ordered")?.unwrap_or(true);
    let bypass = args.bool("bypassDocumentValidation")?;
    let comment = args.raw("comment");
    let let_vars = args.doc("let")?;
    args.finish()?;
    if requests.is_empty() {
        return Err(OpError::Client(
            "bulkWrite requires at least one write model".into(),
        ));
    }
    let statements = requests
        .iter()
        .enumerate()
        .map(|(i, r)| statement(i, r))
        .collect::<Result<Vec<_>, _>>()?;
    let write_concern = if ctx.in_transaction {
        None
    } else {
        if is_unacknowledged(coll.write_concern()) {
            return Err(OpError::Unsupported(UNACKNOWLEDGED.into()));
        }
        write_concern_doc(coll.write_concern())
    };
    // One session for the whole bulk write: the test's, or one started here (drivers use an
    // implicit session), in which this bulk write numbers its retryable writes.
    let mut own: Option<ClientSession> = None;
    let started_here = session.is_none();
    let session: &mut ClientSession = match session {
        Some(s) => s,
        None => {
            let options = SessionOptions::builder().causal_consistency(false).build();
            own.insert(coll.client().start_session().with_options(options).await?)
        }
    };
    let numbered = started_here && ctx.retry_writes && !ctx.in_transaction;
    let mut txn_number: i64 = 0;

    let db = database_of(coll);
    let mut totals = Totals::default();
    let mut failure = BulkFailure::default();
    for batch in batches(statements, ordered, ctx) {
        let kind = batch[0].kind;
        let (name, field) = kind.command();
        let mut command = Document::new();
        command.insert(name, coll.name());
        command.insert(
            field,
            batch
                .iter()
                .map(|s| Bson::Document(s.body.clone()))
                .collect::<Vec<_>>(),
        );
        command.insert("ordered", ordered);
        if let (Some(b), Kind::Insert | Kind::Update) = (bypass, kind) {
            command.insert("bypassDocumentValidation", b);
        }
        if let (Some(l), Kind::Update | Kind::Delete) = (&let_vars, kind) {
            command.insert("let", l.clone());
        }
        if let Some(c) = &comment {
            command.insert("comment", c.clone());
        }
        if let Some(wc) = &write_concern {
            command.insert("writeConcern", wc.clone());
        }
        if let Some(ts) = after_cluster_time(Some(&*session), ctx) {
            command.insert("readConcern", doc! {"afterClusterTime": ts});
        }
        let retryable = numbered && !batch.iter().any(|s| s.multi);
        if retryable {
            txn_number += 1;
            command.insert("txnNumber", txn_number);
        }

        // One retry of a retryable write, with the same txnNumber.
        let mut retried = false;
        let mut original: Option<mongodb::error::Error> = None;
        let outcome = loop {
            match run(&db, command.clone(), Some(&mut *session), None).await {
                Ok(reply) if retryable && !retried && retryable_write_concern_error(&reply) => {
                    retried = true;
                }
                Ok(reply) => break Ok(reply),
                Err(e) if retryable && !retried && retryable_write_error(&e) => {
                    retried = true;
                    original = Some(e);
                }
                Err(e) => {
                    // A retry that performed no write reports the original error.
                    match original.take() {
                        Some(first) if e.contains_label(NO_WRITES_PERFORMED) => break Err(first),
                        _ => break Err(e),
                    }
                }
            }
        };
        let reply = match outcome {
            Ok(reply) => reply,
            Err(e) => {
                failure.labels.extend(e.labels().iter().cloned());
                if retryable && is_network_error(&e) {
                    failure.labels.insert(RETRYABLE_WRITE_ERROR.into());
                }
                failure.cause = Some(e);
                break;
            }
        };

        let n = int(&reply, "n");
        let mut upserted_here = 0;
        match kind {
            Kind::Insert => totals.inserted += n,
            Kind::Update => {
                for u in reply.get_array("upserted").into_iter().flatten() {
                    let Some(u) = u.as_document() else { continue };
                    let i = int(u, "index") as usize;
                    if let (Some(s), Some(id)) = (batch.get(i), u.get("_id")) {
                        totals.upserted.insert(s.index, id.clone());
                        upserted_here += 1;
                    }
                }
                totals.matched += n - upserted_here;
                totals.modified += int(&reply, "nModified");
            }
            Kind::Delete => totals.deleted += n,
        }
        let mut errored = BTreeSet::new();
        for w in reply.get_array("writeErrors").into_iter().flatten() {
            let Some(w) = w.as_document() else { continue };
            let i = int(w, "index") as usize;
            let index = batch.get(i).map_or(i, |s| s.index);
            errored.insert(i);
            let mut error = w.clone();
            error.remove("index");
            failure.write_errors.insert(index, error);
        }
        if kind == Kind::Insert {
            // An ordered command stops at its first write error.
            let stop = if ordered {
                errored.first().copied().unwrap_or(batch.len())
            } else {
                batch.len()
            };
            for (i, s) in batch.iter().enumerate().take(stop) {
                if let (false, Some(id)) = (errored.contains(&i), &s.inserted_id) {
                    totals.inserted_ids.insert(s.index, id.clone());
                }
            }
        }
        if let Ok(wce) = reply.get_document("writeConcernError") {
            failure.write_concern_errors.push(wce.clone());
            for l in reply.get_array("errorLabels").into_iter().flatten() {
                if let Some(l) = l.as_str() {
                    failure.labels.insert(l.to_string());
                }
            }
        }
        if ordered && !errored.is_empty() {
            break;
        }
    }
    drop(own);
    if failure.cause.is_none()
        && failure.write_errors.is_empty()
        && failure.write_concern_errors.is_empty()
    {
        return Ok(Output::value(totals.document()));
    }
    failure.partial = totals.document();
    Err(OpError::Bulk(Box::new(failure)))
}
