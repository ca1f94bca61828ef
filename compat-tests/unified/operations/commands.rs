//! Operations the Rust driver has no helper for, carried out with its generic command API
//! (`Database::run_command`, in the test's session when it names one): the deprecated `count`,
//! `rename`, `modifyCollection` (`collMod`) and `mapReduce`. Each sends the command the spec's
//! drivers send (CRUD and collection-management specifications) and maps the reply as they do;
//! the driver's command monitor reports these commands like any other.
//!
//! What the driver does for its own helpers and not for `run_command` is done here: the
//! collection's read and write concerns are attached (never inside a transaction, where the
//! driver adds the transaction fields itself), and `count`, a retryable read, is retried once on
//! a retryable error unless the client turned `retryReads` off.

use super::{Ctx, OpResult, Output};
use crate::values::Args;
use mongodb::bson::{Bson, Document, Timestamp, doc};
use mongodb::error::{ErrorKind, Result as DriverResult};
use mongodb::options::{Acknowledgment, ReadConcern, SelectionCriteria, WriteConcern};
use mongodb::{ClientSession, Collection, Database};

/// The server error codes the retryable reads specification retries on.
const RETRYABLE_READ_CODES: [i32; 13] = [
    11600, 11602, 10107, 13435, 13436, 189, 91, 7, 6, 89, 9001, 134, 262,
];

/// Sends `command` to `db`, in `session` when there is one.
pub async fn run(
    db: &Database,
    command: Document,
    session: Option<&mut ClientSession>,
    criteria: Option<SelectionCriteria>,
) -> DriverResult<Document> {
    let mut action = db.run_command(command);
    if let Some(c) = criteria {
        action = action.selection_criteria(c);
    }
    match session {
        Some(s) => action.session(s).await,
        None => action.await,
    }
}

/// The database a collection lives in (for its commands).
pub fn database_of(coll: &Collection<Document>) -> Database {
    coll.client().database(&coll.namespace().db)
}

/// A network error: the connection failed or was closed (what drivers retry on).
pub fn is_network_error(e: &mongodb::error::Error) -> bool {
    matches!(
        e.kind.as_ref(),
        ErrorKind::Io(_) | ErrorKind::ConnectionPoolCleared { .. }
    )
}

fn is_retryable_read_error(e: &mongodb::error::Error) -> bool {
    is_network_error(e)
        || matches!(e.kind.as_ref(), ErrorKind::Command(c) if RETRYABLE_READ_CODES.contains(&c.code))
}

/// A write concern as drivers send it (`w`, `j`, `wtimeout`); `None` when it is the server
/// default (empty), which drivers do not send.
pub fn write_concern_doc(wc: Option<&WriteConcern>) -> Option<Document> {
    let wc = wc?;
    let mut d = Document::new();
    match &wc.w {
        Some(Acknowledgment::Nodes(n)) => {
            d.insert("w", i64::from(*n));
        }
        Some(Acknowledgment::Majority) => {
            d.insert("w", "majority");
        }
        Some(Acknowledgment::Custom(tag)) => {
            d.insert("w", tag.clone());
        }
        _ => {}
    }
    if let Some(j) = wc.journal {
        d.insert("j", j);
    }
    if let Some(t) = wc.w_timeout {
        d.insert("wtimeout", t.as_millis() as i64);
    }
    (!d.is_empty()).then_some(d)
}

/// Whether a write concern asks for no acknowledgement (`w: 0` without `j: true`).
pub fn is_unacknowledged(wc: Option<&WriteConcern>) -> bool {
    wc.is_some_and(|wc| matches!(wc.w, Some(Acknowledgment::Nodes(0))) && wc.journal != Some(true))
}

/// Why unacknowledged writes stay skipped (the driver's helpers refuse them; see `bulk`).
pub const UNACKNOWLEDGED: &str = "unacknowledged (w: 0) writes: the Rust driver's write helpers \
     refuse them, and its run_command cannot send them either: an unacknowledged write is an \
     OP_MSG with the moreToCome flag (no reply; drivers report {ok: 1}), while run_command always \
     waits for and returns the server's reply, so the exchange the test asserts cannot be produced";

/// The `afterClusterTime` drivers add to the commands of a causally consistent session outside
/// transactions (reads and writes alike), once the session has seen an operation time.
pub fn after_cluster_time(session: Option<&ClientSession>, ctx: Ctx) -> Option<Timestamp> {
    if !ctx.causal_session || ctx.in_transaction {
        return None;
    }
    session?.operation_time()
}

fn read_concern_doc(rc: Option<&ReadConcern>) -> Option<Document> {
    rc.and_then(|rc| mongodb::bson::to_document(rc).ok())
        .filter(|d| !d.is_empty())
}

/// The collection's write concern for a command outside a transaction.
fn add_write_concern(command: &mut Document, wc: Option<&WriteConcern>, ctx: Ctx) {
    if ctx.in_transaction {
        return;
    }
    if let Some(wc) = write_concern_doc(wc) {
        command.insert("writeConcern", wc);
    }
}

fn add_read_concern(command: &mut Document, rc: Option<&ReadConcern>, ctx: Ctx) {
    if ctx.in_transaction {
        return;
    }
    if let Some(rc) = read_concern_doc(rc) {
        command.insert("readConcern", rc);
    }
}

/// Moves the named optional arguments into the command, as given.
fn copy_args(command: &mut Document, args: &mut Args, keys: &[&str]) {
    for key in keys {
        if let Some(v) = args.raw(key) {
            command.insert(*key, v);
        }
    }
}

/// The deprecated `count` helper: `{count, query, skip, limit, collation, hint, maxTimeMS,
/// comment}` with the collection's read concern, answered by `n`. A retryable read: one retry
/// after a network error or a retryable server error.
pub async fn count(
    coll: &Collection<Document>,
    mut session: Option<&mut ClientSession>,
    ctx: Ctx,
    mut args: Args,
) -> OpResult {
    let mut command = doc! {"count": coll.name()};
    if let Some(filter) = args.doc("filter")? {
        command.insert("query", filter);
    }
    copy_args(
        &mut command,
        &mut args,
        &["skip", "limit", "collation", "hint", "maxTimeMS", "comment"],
    );
    args.finish()?;
    add_read_concern(&mut command, coll.read_concern(), ctx);
    if let Some(ts) = after_cluster_time(session.as_deref(), ctx) {
        let mut rc = command
            .get_document("readConcern")
            .cloned()
            .unwrap_or_default();
        rc.insert("afterClusterTime", ts);
        command.insert("readConcern", rc);
    }
    let db = database_of(coll);
    let criteria = coll.selection_criteria().cloned();
    let retry = ctx.retry_reads && !ctx.in_transaction;
    let mut attempt = 0;
    let reply = loop {
        attempt += 1;
        match run(
            &db,
            command.clone(),
            session.as_deref_mut(),
            criteria.clone(),
        )
        .await
        {
            Ok(reply) => break reply,
            Err(e) if retry && attempt == 1 && is_retryable_read_error(&e) => continue,
            Err(e) => return Err(e.into()),
        }
    };
    let n = reply
        .get("n")
        .and_then(crate::values::as_i64)
        .ok_or_else(|| format!("count: the reply has no numeric n: {reply}"))?;
    Ok(Output::value(n))
}

/// `rename`: `renameCollection` on the admin database with the full namespaces.
pub async fn rename(
    coll: &Collection<Document>,
    session: Option<&mut ClientSession>,
    ctx: Ctx,
    mut args: Args,
) -> OpResult {
    let to = args.req_str("to")?;
    let ns = coll.namespace();
    let mut command = doc! {
        "renameCollection": format!("{}.{}", ns.db, ns.coll),
        "to": format!("{}.{to}", ns.db),
    };
    copy_args(&mut command, &mut args, &["dropTarget", "comment"]);
    args.finish()?;
    add_write_concern(&mut command, coll.write_concern(), ctx);
    let admin = coll.client().database("admin");
    run(&admin, command, session, None).await?;
    Ok(Output::none())
}

/// `modifyCollection` on a database: `{collMod: collection, <options>}`.
pub async fn modify_collection(
    db: &Database,
    session: Option<&mut ClientSession>,
    ctx: Ctx,
    mut args: Args,
) -> OpResult {
    let collection = args.req_str("collection")?;
    let mut command = doc! {"collMod": collection};
    copy_args(
        &mut command,
        &mut args,
        &[
            "validator",
            "validationLevel",
            "validationAction",
            "index",
            "expireAfterSeconds",
            "changeStreamPreAndPostImages",
            "timeseries",
            "viewOn",
            "pipeline",
            "comment",
        ],
    );
    args.finish()?;
    add_write_concern(&mut command, db.write_concern(), ctx);
    run(db, command, session, None).await?;
    Ok(Output::none())
}

/// `mapReduce`: the command with its options; inline output is returned as the documents of
/// `results`. Not a retryable read (the retryable reads specification excludes it). Inline
/// output takes the collection's read concern, other outputs its write concern.
pub async fn map_reduce(
    coll: &Collection<Document>,
    session: Option<&mut ClientSession>,
    ctx: Ctx,
    mut args: Args,
) -> OpResult {
    let map = args.req("map")?;
    let reduce = args.req("reduce")?;
    let out = args.req("out")?;
    let mut command = doc! {"mapReduce": coll.name(), "map": map, "reduce": reduce};
    let inline = matches!(&out, Bson::Document(d) if d.contains_key("inline"));
    command.insert("out", out);
    copy_args(
        &mut command,
        &mut args,
        &[
            "query",
            "sort",
            "limit",
            "finalize",
            "scope",
            "jsMode",
            "verbose",
            "bypassDocumentValidation",
            "collation",
            "maxTimeMS",
            "comment",
        ],
    );
    args.finish()?;
    if inline {
        add_read_concern(&mut command, coll.read_concern(), ctx);
    } else {
        add_write_concern(&mut command, coll.write_concern(), ctx);
    }
    let criteria = if inline {
        coll.selection_criteria().cloned()
    } else {
        None
    };
    let reply = run(&database_of(coll), command, session, criteria).await?;
    match reply.get("results") {
        Some(Bson::Array(results)) => Ok(Output::documents(
            results
                .iter()
                .map(|r| {
                    r.as_document()
                        .cloned()
                        .ok_or_else(|| format!("mapReduce result {r} is not a document"))
                })
                .collect::<Result<_, _>>()?,
        )),
        _ => Ok(Output::none()),
    }
}
