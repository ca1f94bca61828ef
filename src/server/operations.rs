//! The operations in progress on this process (what `$currentOp` reports and `killOp` ends):
//! each command gets an op id for as long as the dispatcher runs it, and each client
//! connection is known while it is open (for `idleConnections`).

use super::context::RequestContext;
use crate::command::CommandRequest;
use bson::{Bson, Document, RawBsonRef, RawDocumentBuf, doc};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;
use tokio::sync::Notify;

/// The registry of one process.
#[derive(Debug, Default)]
pub struct Operations {
    next_opid: AtomicI32,
    ops: Mutex<BTreeMap<i32, Arc<Operation>>>,
    connections: Mutex<BTreeMap<i64, Weak<RequestContext>>>,
}

/// One running command.
#[derive(Debug)]
pub struct Operation {
    pub opid: i32,
    started: Instant,
    /// MongoDB's logical op: `query`, `getmore`, `insert`, `update`, `remove` or `command`.
    op: &'static str,
    ns: String,
    command: RawDocumentBuf,
    connection_id: i64,
    /// Formatted (with the application name) only when `$currentOp` reports the operation.
    peer: Option<std::net::SocketAddr>,
    client_metadata: Option<Arc<Document>>,
    internal: bool,
    /// The logical session it runs in (none for commands detached from theirs).
    session: Option<super::sessions::LogicalSessionId>,
    killed: AtomicBool,
    kill: Notify,
    /// Index keys and documents the executor examined for it (the profiler's
    /// `keysExamined`/`docsExamined`).
    keys_examined: AtomicU64,
    docs_examined: AtomicU64,
    /// The plan of its first read.
    plan: std::sync::OnceLock<PlanFacts>,
    /// That plan's stages with what they did (the profiler's `execStats`).
    exec_stats: std::sync::OnceLock<Document>,
    /// Its database profiles: its reads keep what `execStats` needs, which costs nothing
    /// otherwise.
    profiled: AtomicBool,
    /// The user it runs for (`server::impersonation`).
    runs_as: Option<Arc<super::impersonation::RunsAs>>,
}

/// What a profile entry says of an operation's plan (its first read's).
#[derive(Clone, Debug, Default)]
pub struct PlanFacts {
    /// The access path: `COLLSCAN`, `IXSCAN { a: 1 }`...
    pub summary: String,
    /// The query shape's `queryHash` and `planCacheKey`, when a query planned it.
    pub hashes: Option<(String, String)>,
}

tokio::task_local! {
    /// The operation the task runs (set by the dispatcher around a command's handler).
    static CURRENT: Arc<Operation>;
}

/// Runs `f` as `op`: what it examines counts for `op`.
pub async fn run_as<F: std::future::Future>(op: Arc<Operation>, f: F) -> F::Output {
    CURRENT.scope(op, f).await
}

/// Counts index keys and documents examined for the operation the task runs (none outside
/// a command).
pub fn add_examined(keys: u64, docs: u64) {
    let _ = CURRENT.try_with(|op| {
        op.keys_examined.fetch_add(keys, Ordering::Relaxed);
        op.docs_examined.fetch_add(docs, Ordering::Relaxed);
    });
}

/// The user the operation the task runs is for (none outside a command, or for nobody).
pub fn current_runs_as() -> Option<Arc<super::impersonation::RunsAs>> {
    CURRENT.try_with(|op| op.runs_as.clone()).ok().flatten()
}

/// Names the plan of the operation the task runs, unless a read of it already did.
pub fn set_plan(plan: impl FnOnce() -> PlanFacts) {
    let _ = CURRENT.try_with(|op| {
        op.plan.get_or_init(plan);
    });
}

/// Whether the operation the task runs is profiled, so that its reads keep what its
/// `execStats` needs (false outside a command).
pub fn wants_exec_stats() -> bool {
    CURRENT
        .try_with(|op| op.profiled.load(Ordering::Relaxed))
        .unwrap_or(false)
}

/// Gives the operation the task runs its plan's stages with what they did (MongoDB's
/// executed plan statistics) when it is profiled, unless a read of it already did; `stats`
/// is called only then (`None`: the read had no plan).
pub fn set_exec_stats(stats: impl FnOnce() -> Option<Document>) {
    let _ = CURRENT.try_with(|op| {
        if op.profiled.load(Ordering::Relaxed) && op.exec_stats.get().is_none() {
            if let Some(stats) = stats() {
                let _ = op.exec_stats.set(stats);
            }
        }
    });
}

/// Keeps an operation registered until dropped (the command finished or was cancelled).
pub struct OpGuard<'a> {
    registry: &'a Operations,
    pub op: Arc<Operation>,
}

impl Drop for OpGuard<'_> {
    fn drop(&mut self) {
        self.registry
            .ops
            .lock()
            .expect("poisoned")
            .remove(&self.op.opid);
    }
}

/// Keeps a client connection listed until dropped.
pub struct ConnectionGuard<'a> {
    registry: &'a Operations,
    id: i64,
}

impl Drop for ConnectionGuard<'_> {
    fn drop(&mut self) {
        self.registry
            .connections
            .lock()
            .expect("poisoned")
            .remove(&self.id);
    }
}

/// What `$currentOp` is asked to include.
#[derive(Clone, Copy, Debug, Default)]
pub struct Report<'a> {
    pub idle_connections: bool,
    /// Cut each `command` to about 1000 bytes (the `currentOp` command does).
    pub truncate: bool,
    /// Only this user's operations and connections (`allUsers: false` with authorization);
    /// `None` for everyone's.
    pub user: Option<&'a super::auth::UserName>,
}

impl Operations {
    /// Registers `request` (running on `ctx`, in `session`) under a new op id.
    pub fn begin(
        &self,
        ctx: &RequestContext,
        request: &CommandRequest,
        session: Option<super::sessions::LogicalSessionId>,
        runs_as: Option<Arc<super::impersonation::RunsAs>>,
    ) -> OpGuard<'_> {
        // Op ids are 32-bit in MongoDB (killOp refuses wider ones).
        let opid = self
            .next_opid
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1);
        let op = Arc::new(Operation {
            opid,
            started: Instant::now(),
            op: logical_op(request.name()),
            ns: namespace(request),
            command: request.body.clone(),
            connection_id: ctx.connection_id,
            peer: ctx.peer,
            client_metadata: ctx.client_metadata(),
            internal: ctx.is_internal(),
            session,
            killed: AtomicBool::new(false),
            kill: Notify::new(),
            keys_examined: AtomicU64::new(0),
            docs_examined: AtomicU64::new(0),
            plan: std::sync::OnceLock::new(),
            exec_stats: std::sync::OnceLock::new(),
            profiled: AtomicBool::new(false),
            runs_as,
        });
        self.ops
            .lock()
            .expect("poisoned")
            .insert(opid, Arc::clone(&op));
        OpGuard { registry: self, op }
    }

    /// Lists a client connection while the guard lives.
    pub fn connection_opened(&self, ctx: &Arc<RequestContext>) -> ConnectionGuard<'_> {
        self.connections
            .lock()
            .expect("poisoned")
            .insert(ctx.connection_id, Arc::downgrade(ctx));
        ConnectionGuard {
            registry: self,
            id: ctx.connection_id,
        }
    }

    /// Asks operation `opid` to stop; false when no such operation runs.
    pub fn kill(&self, opid: i32) -> bool {
        let op = self.ops.lock().expect("poisoned").get(&opid).cloned();
        match op {
            Some(op) => {
                op.killed.store(true, Ordering::SeqCst);
                op.kill.notify_one();
                true
            }
            None => false,
        }
    }

    /// The sessions of the operations running now (a refresh keeps them alive).
    pub fn sessions(&self) -> Vec<super::sessions::LogicalSessionId> {
        let ops = self.ops.lock().expect("poisoned");
        ops.values().filter_map(|op| op.session.clone()).collect()
    }

    /// Asks every operation running in a session `matches` accepts to stop (killing a
    /// session kills its operations); returns how many.
    pub fn kill_sessions(
        &self,
        matches: &dyn Fn(&super::sessions::LogicalSessionId) -> bool,
    ) -> usize {
        let ops: Vec<i32> = self
            .ops
            .lock()
            .expect("poisoned")
            .values()
            .filter(|op| op.session.as_ref().is_some_and(matches))
            .map(|op| op.opid)
            .collect();
        for opid in &ops {
            tracing::info!(opid, "Killing op as part of killing session");
            self.kill(*opid);
        }
        ops.len()
    }

    /// The `$currentOp` documents of this process, `host` being its `host:port`.
    pub fn report(&self, host: &str, what: Report) -> Vec<Document> {
        let now = current_op_time();
        let ops: Vec<Arc<Operation>> = self
            .ops
            .lock()
            .expect("poisoned")
            .values()
            .filter(|op| {
                let user = op.runs_as.as_ref().map(|r| &r.user);
                what.user.is_none_or(|wanted| user == Some(wanted))
            })
            .cloned()
            .collect();
        let mut out: Vec<Document> = ops.iter().map(|op| op.report(host, &now, what)).collect();
        if what.idle_connections {
            let busy: std::collections::BTreeSet<i64> =
                ops.iter().map(|op| op.connection_id).collect();
            let connections: Vec<Arc<RequestContext>> = self
                .connections
                .lock()
                .expect("poisoned")
                .values()
                .filter_map(Weak::upgrade)
                .collect();
            for ctx in connections {
                let owned = what
                    .user
                    .is_none_or(|wanted| ctx.auth().user.as_ref().map(|u| &u.name) == Some(wanted));
                if owned && !busy.contains(&ctx.connection_id) {
                    out.push(idle_connection(host, &now, &ctx));
                }
            }
        }
        out
    }
}

impl Operation {
    /// Resolves once `killOp` named this operation.
    pub async fn killed(&self) {
        loop {
            let notified = self.kill.notified();
            if self.killed.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }

    /// The database the operation ran on.
    pub fn database(&self) -> &str {
        self.ns.split_once('.').map_or(&self.ns, |(db, _)| db)
    }

    /// What a profile entry says of the operation before its outcome (MongoDB's field
    /// order): `op`, `ns`, `command`, `keysExamined`, `docsExamined`.
    pub fn profile_fields(&self) -> Document {
        let mut command = self.command.to_document().unwrap_or_default();
        command.insert("$db", self.database());
        doc! {
            "op": self.op,
            "ns": &self.ns,
            "command": command,
            "keysExamined": self.keys_examined.load(Ordering::Relaxed) as i64,
            "docsExamined": self.docs_examined.load(Ordering::Relaxed) as i64,
        }
    }

    /// The command's name (its first field).
    pub fn command_name(&self) -> &str {
        self.command
            .iter()
            .next()
            .and_then(|e| e.ok())
            .map_or("", |(name, _)| name)
    }

    /// The plan of its first read, if it read.
    pub fn plan(&self) -> Option<&PlanFacts> {
        self.plan.get()
    }

    /// Its plan's stages with what they did, if it read through a plan.
    pub fn exec_stats(&self) -> Option<&Document> {
        self.exec_stats.get()
    }

    /// Its database profiles it (set by the dispatcher before it runs).
    pub fn mark_profiled(&self) {
        self.profiled.store(true, Ordering::Relaxed);
    }

    /// The user it runs for.
    pub fn runs_as(&self) -> Option<&super::impersonation::RunsAs> {
        self.runs_as.as_deref()
    }

    /// How long the operation has run, in whole milliseconds.
    pub fn millis(&self) -> i64 {
        self.started.elapsed().as_millis() as i64
    }

    /// The client's address and application, as a profile entry names them.
    pub fn client_fields(&self) -> Document {
        let mut out = Document::new();
        out.insert(
            "client",
            self.peer
                .map_or_else(|| "127.0.0.1".to_string(), |p| p.ip().to_string()),
        );
        if let Some(name) = super::context::app_name_of(self.client_metadata.as_deref()) {
            out.insert("appName", name);
        }
        out
    }

    fn report(&self, host: &str, now: &str, what: Report) -> Document {
        let client = self.peer.map(|p| p.to_string());
        let metadata = self.client_metadata.as_deref();
        let mut out = client_fields(
            host,
            self.connection_id,
            client.as_deref(),
            super::context::app_name_of(metadata),
            metadata,
        );
        out.insert("active", true);
        out.insert("currentOpTime", now);
        out.insert("isFromUserConnection", !self.internal);
        out.insert("threaded", true);
        out.insert("opid", self.opid);
        if let Some(session) = &self.session {
            out.insert("lsid", session.to_document());
        }
        // Whose privileges the operation runs with, and the member that named them.
        if let Some(runs_as) = &self.runs_as {
            out.insert("effectiveUsers", vec![runs_as.user.to_document()]);
            if let Some(by) = &runs_as.run_by {
                out.insert("runBy", vec![by.to_document()]);
            }
        }
        if self.killed.load(Ordering::SeqCst) {
            out.insert("killPending", true);
        }
        let elapsed = self.started.elapsed();
        out.insert("secs_running", elapsed.as_secs() as i64);
        out.insert("microsecs_running", elapsed.as_micros() as i64);
        out.insert("op", self.op);
        out.insert("ns", &self.ns);
        out.insert("redacted", false);
        out.insert("command", self.command_document(what.truncate));
        out.insert("numYields", 0);
        out.insert("locks", Document::new());
        out.insert("waitingForLock", false);
        out
    }

    /// The command as received; past 1000 bytes when truncating, MongoDB's `$truncated` form
    /// (the command printed as text, cut) with the `comment` kept.
    fn command_document(&self, truncate: bool) -> Document {
        if !truncate || self.command.as_bytes().len() <= TRUNCATED_COMMAND_BYTES {
            return self.command.to_document().unwrap_or_default();
        }
        // Only the text that is kept is rendered: a command may be 16 MB, and every
        // `currentOp` renders every operation's.
        let mut text = String::new();
        write_json(RawBsonRef::Document(&self.command), &mut text);
        let cut: String = text.chars().take(TRUNCATED_COMMAND_BYTES).collect();
        let mut out = doc! {"$truncated": cut};
        if let Ok(Some(comment)) = self.command.get("comment") {
            if let Ok(comment) = Bson::try_from(comment) {
                out.insert("comment", comment);
            }
        }
        out
    }
}

/// Appends `value` as compact relaxed extended JSON, stopping once `out` holds more than
/// [`TRUNCATED_COMMAND_BYTES`]; false when it stopped.
fn write_json(value: RawBsonRef<'_>, out: &mut String) -> bool {
    let (open, close, items): (char, char, Box<dyn Iterator<Item = _>>) = match value {
        RawBsonRef::Document(doc) => (
            '{',
            '}',
            Box::new(doc.iter().map(|e| e.map(|(k, v)| (Some(k), v)))),
        ),
        RawBsonRef::Array(array) => (
            '[',
            ']',
            Box::new(array.into_iter().map(|e| e.map(|v| (None, v)))),
        ),
        scalar => {
            if let Ok(scalar) = Bson::try_from(scalar) {
                out.push_str(&scalar.into_relaxed_extjson().to_string());
            }
            return true;
        }
    };
    out.push(open);
    for (i, item) in items.enumerate() {
        let Ok((key, value)) = item else {
            return false;
        };
        if out.len() > TRUNCATED_COMMAND_BYTES {
            return false;
        }
        if i > 0 {
            out.push(',');
        }
        if let Some(key) = key {
            out.push_str(&serde_json::Value::from(key).to_string());
            out.push(':');
        }
        if !write_json(value, out) {
            return false;
        }
    }
    out.push(close);
    true
}

/// How much of a command `truncateOps` keeps.
const TRUNCATED_COMMAND_BYTES: usize = 1000;

/// The fields describing the client side of an operation or idle connection.
fn client_fields(
    host: &str,
    connection_id: i64,
    client: Option<&str>,
    app_name: Option<&str>,
    metadata: Option<&Document>,
) -> Document {
    let mut out = doc! {"type": "op", "host": host};
    if connection_id > 0 {
        out.insert("desc", format!("conn{connection_id}"));
        out.insert("connectionId", connection_id);
    }
    if let Some(client) = client {
        out.insert("client", client);
    }
    if let Some(name) = app_name {
        out.insert("appName", name);
    }
    if let Some(metadata) = metadata {
        out.insert("clientMetadata", metadata.clone());
    }
    out
}

fn idle_connection(host: &str, now: &str, ctx: &RequestContext) -> Document {
    let peer = ctx.peer.map(|p| p.to_string());
    let metadata = ctx.client_metadata();
    let mut out = client_fields(
        host,
        ctx.connection_id,
        peer.as_deref(),
        super::context::app_name_of(metadata.as_deref()),
        metadata.as_deref(),
    );
    out.insert("active", false);
    out.insert("currentOpTime", now);
    out.insert("isFromUserConnection", !ctx.is_internal());
    out.insert("threaded", true);
    out
}

/// The time now as MongoDB prints `currentOpTime` (ISO 8601 with a numeric offset).
fn current_op_time() -> String {
    let now = bson::DateTime::now();
    match now.try_to_rfc3339_string() {
        Ok(text) => match text.strip_suffix('Z') {
            Some(base) => format!("{base}+00:00"),
            None => text,
        },
        Err(_) => String::new(),
    }
}

/// MongoDB's logical operation of a command.
fn logical_op(command: &str) -> &'static str {
    match command {
        "find" => "query",
        "getMore" => "getmore",
        "insert" => "insert",
        "update" => "update",
        "delete" => "remove",
        "killCursors" => "killcursors",
        _ => "command",
    }
}

/// The namespace `$currentOp` shows: the collection a command names, `getMore`'s collection,
/// or the database's command namespace.
fn namespace(request: &CommandRequest) -> String {
    let args = request.args();
    match args.target() {
        Ok(bson::RawBsonRef::String(coll)) => format!("{}.{coll}", request.db),
        _ if request.name() == "getMore" => match request.body.get_str("collection") {
            Ok(coll) => format!("{}.{coll}", request.db),
            Err(_) => format!("{}.$cmd", request.db),
        },
        _ if request.name() == "aggregate" => format!("{}.$cmd.aggregate", request.db),
        _ => format!("{}.$cmd", request.db),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn request(db: &str, body: RawDocumentBuf) -> CommandRequest {
        CommandRequest::new(db, body).unwrap()
    }

    #[test]
    fn a_command_is_listed_while_it_runs() {
        let ops = Operations::default();
        let ctx = RequestContext::connection(7, "127.0.0.1:5000".parse().unwrap(), None);
        let guard = ops.begin(
            &ctx,
            &request("app", rawdoc! {"find": "c", "filter": {}}),
            None,
            None,
        );
        let report = ops.report("h:1", Report::default());
        assert_eq!(report.len(), 1);
        let op = &report[0];
        assert_eq!(op.get_str("type").unwrap(), "op");
        assert_eq!(op.get_str("host").unwrap(), "h:1");
        assert_eq!(op.get_str("desc").unwrap(), "conn7");
        assert_eq!(op.get_i64("connectionId").unwrap(), 7);
        assert_eq!(op.get_str("client").unwrap(), "127.0.0.1:5000");
        assert!(op.get_bool("active").unwrap());
        assert_eq!(op.get_i32("opid").unwrap(), guard.op.opid);
        assert_eq!(op.get_str("op").unwrap(), "query");
        assert_eq!(op.get_str("ns").unwrap(), "app.c");
        assert_eq!(
            op.get_document("command").unwrap(),
            &doc! {"find": "c", "filter": {}}
        );
        assert!(op.get_str("currentOpTime").unwrap().ends_with("+00:00"));
        drop(guard);
        assert!(ops.report("h:1", Report::default()).is_empty());
    }

    #[test]
    fn logical_ops_and_namespaces() {
        let ops = Operations::default();
        let ctx = RequestContext::internal();
        let cases = [
            (rawdoc! {"insert": "c"}, "insert", "app.c"),
            (rawdoc! {"delete": "c"}, "remove", "app.c"),
            (
                rawdoc! {"getMore": 5_i64, "collection": "d"},
                "getmore",
                "app.d",
            ),
            (rawdoc! {"aggregate": 1}, "command", "app.$cmd.aggregate"),
            (rawdoc! {"ping": 1}, "command", "app.$cmd"),
        ];
        for (body, op, ns) in cases {
            let _guard = ops.begin(&ctx, &request("app", body), None, None);
            let report = ops.report("", Report::default());
            assert_eq!(report[0].get_str("op").unwrap(), op);
            assert_eq!(report[0].get_str("ns").unwrap(), ns);
            assert!(!report[0].get_bool("isFromUserConnection").unwrap());
        }
    }

    #[test]
    fn idle_connections_are_listed_when_asked() {
        let ops = Operations::default();
        let idle = Arc::new(RequestContext::connection(
            3,
            "10.0.0.1:1".parse().unwrap(),
            None,
        ));
        let busy = Arc::new(RequestContext::connection(
            4,
            "10.0.0.2:1".parse().unwrap(),
            None,
        ));
        let _c1 = ops.connection_opened(&idle);
        let _c2 = ops.connection_opened(&busy);
        let _op = ops.begin(&busy, &request("app", rawdoc! {"ping": 1}), None, None);
        assert_eq!(ops.report("", Report::default()).len(), 1);
        let all = ops.report(
            "",
            Report {
                idle_connections: true,
                ..Report::default()
            },
        );
        assert_eq!(all.len(), 2);
        let idle_doc = all.iter().find(|d| !d.get_bool("active").unwrap()).unwrap();
        assert_eq!(idle_doc.get_i64("connectionId").unwrap(), 3);
        assert!(!idle_doc.contains_key("opid"));
    }

    #[tokio::test]
    async fn kill_wakes_the_operation() {
        let ops = Operations::default();
        let ctx = RequestContext::internal();
        let guard = ops.begin(&ctx, &request("app", rawdoc! {"find": "c"}), None, None);
        let op = Arc::clone(&guard.op);
        assert!(!ops.kill(op.opid + 1000));
        let waiter = tokio::spawn(async move { op.killed().await });
        assert!(ops.kill(guard.op.opid));
        waiter.await.unwrap();
        let report = ops.report("", Report::default());
        assert!(report[0].get_bool("killPending").unwrap());
    }

    #[test]
    fn operations_in_a_session_are_killed_with_it() {
        let ops = Operations::default();
        let ctx = RequestContext::internal();
        let lsid = rawdoc! {"id": bson::RawBson::Binary(bson::Binary {subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![5; 16]})};
        let body = || rawdoc! {"find": "c", "lsid": lsid.clone()};
        let session = crate::server::sessions::LogicalSessionId::from_lsid(&lsid);
        let in_session = ops.begin(&ctx, &request("app", body()), session, None);
        // A command detached from its session (a kill command) is not part of it.
        let detached = ops.begin(&ctx, &request("app", body()), None, None);
        assert_eq!(ops.sessions().len(), 1);
        let report = ops.report("", Report::default());
        let lsids: Vec<_> = report
            .iter()
            .filter_map(|op| op.get_document("lsid").ok())
            .collect();
        assert_eq!(lsids.len(), 1);
        assert!(lsids[0].get_binary_generic("uid").is_ok(), "{:?}", lsids[0]);
        assert_eq!(ops.kill_sessions(&|s| s.id == [5; 16]), 1);
        assert!(in_session.op.killed.load(Ordering::SeqCst));
        assert!(!detached.op.killed.load(Ordering::SeqCst));
    }

    #[test]
    fn truncated_commands_keep_their_comment() {
        let ops = Operations::default();
        let ctx = RequestContext::internal();
        let long = "x".repeat(3000);
        let _guard = ops.begin(
            &ctx,
            &request(
                "app",
                rawdoc! {"find": "c", "filter": {"a": long}, "comment": "mine"},
            ),
            None,
            None,
        );
        let report = ops.report(
            "",
            Report {
                truncate: true,
                ..Report::default()
            },
        );
        let command = report[0].get_document("command").unwrap();
        assert!(command.get_str("$truncated").unwrap().len() <= 1000);
        assert_eq!(command.get_str("comment").unwrap(), "mine");
    }

    #[test]
    fn truncated_text_is_the_start_of_the_whole_command_as_json() {
        let values: Vec<Bson> = (0..1_000_000).map(Bson::Int32).collect();
        let command = rawdoc! {
            "find": "c",
            "filter": {"d": 1.5, "s": "q\"uote", "n": null, "t": true, "o": bson::oid::ObjectId::from_bytes([1; 12]),
                "$or": [{"a": {"$in": bson::RawArrayBuf::from_iter(values.iter().map(|v| bson::RawBson::try_from(v.clone()).unwrap()))}}]},
        };
        let mut cut = String::new();
        write_json(RawBsonRef::Document(&command), &mut cut);
        let whole = Bson::Document(command.to_document().unwrap())
            .into_relaxed_extjson()
            .to_string();
        assert!(cut.len() > TRUNCATED_COMMAND_BYTES && cut.len() < 2 * TRUNCATED_COMMAND_BYTES);
        assert!(whole.starts_with(&cut), "{cut}");
    }
}
