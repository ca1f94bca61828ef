//! Command dispatch: each role has one table (name → handler); the dispatcher looks a command
//! up, checks where it may run, runs it with a panic guard and turns errors into replies.

use super::auth::{Requires, UserName};
use super::context::RequestContext;
use super::failpoint::{CommandFacts, Effect};
use super::node::{Node, Role};
use super::stats::OpCounter;
use crate::command::generic::TransactionArgs;
use crate::command::{CommandRequest, generic};
use crate::error::{ErrorCode, MongoError, Result};
use bson::RawDocumentBuf;
use futures::FutureExt;
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// A command handler: the reply's fields without `ok`, or the error to answer. Tables never
/// build one by hand: [`CommandSpec::new`] takes the handler's `async fn` and boxes it here.
pub type Handler<S> = Arc<
    dyn for<'a> Fn(
            &'a S,
            &'a RequestContext,
            CommandRequest,
        ) -> BoxFuture<'a, Result<RawDocumentBuf>>
        + Send
        + Sync,
>;

/// What a command table takes as a handler: an `async fn(&S, &RequestContext, CommandRequest)
/// -> Result<RawDocumentBuf>` (any function returning a `Send` future borrowing its arguments).
pub trait HandlerFn<'a, S: 'a>: Send + Sync + 'static {
    type Future: Future<Output = Result<RawDocumentBuf>> + Send + 'a;
    fn call(&self, state: &'a S, ctx: &'a RequestContext, request: CommandRequest) -> Self::Future;
}

impl<'a, S: 'a, F, Fut> HandlerFn<'a, S> for F
where
    F: Fn(&'a S, &'a RequestContext, CommandRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<RawDocumentBuf>> + Send + 'a,
{
    type Future = Fut;
    fn call(&self, state: &'a S, ctx: &'a RequestContext, request: CommandRequest) -> Fut {
        self(state, ctx, request)
    }
}

tokio::task_local! {
    /// The failure `failCommand` chose for the command the task runs: its innermost handler
    /// answers it instead of running, so that what wraps the handler (a router's transaction
    /// statement, a shard's transaction participant) meets it as the command's outcome — in
    /// MongoDB the fail point is evaluated inside the command's execution.
    static FAIL_COMMAND: std::cell::RefCell<Option<MongoError>>;
}

/// The failure `failCommand` chose for this command, once: its innermost handler's, or what
/// runs in its stead (a data node's transaction participant ending a transaction).
pub fn take_fail_command() -> Option<MongoError> {
    FAIL_COMMAND
        .try_with(|failure| failure.borrow_mut().take())
        .ok()
        .flatten()
}

/// The one place a handler's future is boxed.
fn boxed<S, F>(handler: F) -> Handler<S>
where
    F: for<'a> Fn(
            &'a S,
            &'a RequestContext,
            CommandRequest,
        ) -> BoxFuture<'a, Result<RawDocumentBuf>>
        + Send
        + Sync
        + 'static,
{
    Arc::new(handler)
}

/// One entry of a role's command table.
pub struct CommandSpec<S> {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub help: &'static str,
    pub admin_only: bool,
    pub counter: OpCounter,
    /// Exists only with test commands enabled (`enableTestCommands`).
    pub test_only: bool,
    /// Takes a `writeConcern` (and so can report a write concern error).
    pub takes_write_concern: bool,
    /// The fields the command declares (generic arguments aside): a client request carrying
    /// another is refused before the handler runs (`IDLUnknownField`). `None`: not checked.
    pub fields: Option<&'static [&'static str]>,
    /// Runs in the request's logical session (`lsid`): false for the commands MongoDB detaches
    /// from it (`attachLogicalSessionsToOpCtx`), the kill commands, so they do not kill
    /// themselves.
    pub attaches_session: bool,
    /// What the command needs to run when authorization is on; `None`: not declared, and
    /// then only an internal caller may run it.
    pub requires: Option<Requires>,
    pub handler: Handler<S>,
}

impl<S> CommandSpec<S> {
    pub fn new<F>(name: &'static str, handler: F) -> Self
    where
        S: 'static,
        F: for<'a> HandlerFn<'a, S>,
    {
        let handler = boxed(move |state, ctx, request| match take_fail_command() {
            Some(failure) => Box::pin(async move { Err(failure) }),
            None => Box::pin(handler.call(state, ctx, request)),
        });
        CommandSpec {
            name,
            aliases: &[],
            help: "",
            admin_only: false,
            counter: OpCounter::Command,
            test_only: false,
            takes_write_concern: false,
            fields: None,
            attaches_session: true,
            requires: None,
            handler,
        }
    }

    /// Declares what the command needs when authorization is on (see `server::auth`).
    pub fn requires(mut self, requires: Requires) -> Self {
        self.requires = Some(requires);
        self
    }

    /// Runs outside the request's logical session (see `attaches_session`).
    pub fn detached_from_session(mut self) -> Self {
        self.attaches_session = false;
        self
    }

    pub fn test_only(mut self) -> Self {
        self.test_only = true;
        self
    }

    pub fn takes_write_concern(mut self) -> Self {
        self.takes_write_concern = true;
        self
    }

    /// Declares the command's fields (a request type's `FIELDS`): any other non-generic field
    /// in a client's request is refused as MongoDB's IDL refuses it.
    pub fn fields(mut self, fields: &'static [&'static str]) -> Self {
        self.fields = Some(fields);
        self
    }

    /// Declares a command that takes no field beyond its name and the generic arguments.
    pub fn no_fields(self) -> Self {
        self.fields(&[])
    }

    pub fn help(mut self, help: &'static str) -> Self {
        self.help = help;
        self
    }

    pub fn aliases(mut self, aliases: &'static [&'static str]) -> Self {
        self.aliases = aliases;
        self
    }

    pub fn admin_only(mut self) -> Self {
        self.admin_only = true;
        self
    }

    pub fn counter(mut self, counter: OpCounter) -> Self {
        self.counter = counter;
        self
    }
}

/// A role's commands, sorted by name, with aliases resolved.
pub struct CommandTable<S> {
    specs: Vec<CommandSpec<S>>,
    by_name: HashMap<&'static str, usize>,
}

impl<S> CommandTable<S> {
    pub fn new(mut specs: Vec<CommandSpec<S>>) -> Self {
        specs.sort_by_key(|s| s.name);
        let mut by_name = HashMap::new();
        for (i, spec) in specs.iter().enumerate() {
            for name in std::iter::once(&spec.name).chain(spec.aliases) {
                let previous = by_name.insert(*name, i);
                assert!(previous.is_none(), "command {name} registered twice");
            }
        }
        CommandTable { specs, by_name }
    }

    pub fn get(&self, name: &str) -> Option<&CommandSpec<S>> {
        self.by_name.get(name).map(|&i| &self.specs[i])
    }

    /// Every command, aliases included, in name order (for `listCommands`).
    pub fn entries(&self) -> Vec<(&'static str, &CommandSpec<S>)> {
        let mut out: Vec<_> = self
            .by_name
            .iter()
            .map(|(name, &i)| (*name, &self.specs[i]))
            .collect();
        out.sort_by_key(|(name, _)| *name);
        out
    }
}

/// The state of one role, which owns its command table.
pub trait NodeState: Send + Sync + Sized + 'static {
    fn node(&self) -> &Node;
    fn commands(&self) -> &CommandTable<Self>;

    /// Runs before every command (after lookup): the shard checks the routing versions a
    /// router attached here. What it returns is held until the command has finished (a
    /// shard's critical section waits for the commands that hold it). It runs under the
    /// request's `maxTimeMS` and `killOp`: dropped when they end the request, it must keep
    /// nothing it waited for.
    fn before_command<'a>(
        &'a self,
        _request: &'a CommandRequest,
    ) -> BoxFuture<'a, Result<CommandGuard>> {
        Box::pin(async { Ok(None) })
    }

    /// Runs after every command with its outcome, before the reply goes out: a data node's
    /// profiler records it in `system.profile`. `None` when there is nothing to do.
    fn after_command<'a>(
        &'a self,
        _op: &'a super::operations::Operation,
        _outcome: &'a Result<RawDocumentBuf>,
    ) -> Option<BoxFuture<'a, ()>> {
        None
    }

    /// Runs a command of a multi-document transaction (`run` calls its handler): a data
    /// node's transaction participant runs it in the session's transaction. A node without
    /// one refuses it.
    fn run_in_transaction<'a>(
        &'a self,
        _transaction: TransactionArgs,
        request: CommandRequest,
        _run: TransactionStatement<'a>,
    ) -> BoxFuture<'a, Result<RawDocumentBuf>> {
        not_on_this_node(&request, "in a multi-document transaction")
    }

    /// Runs a read at a snapshot outside a transaction (`readConcern` level `snapshot`, at
    /// `at` or the node's latest time): a data node reads at that time. A node without storage
    /// refuses it.
    fn run_at_snapshot<'a>(
        &'a self,
        _at: Option<bson::Timestamp>,
        request: CommandRequest,
        _run: TransactionStatement<'a>,
    ) -> BoxFuture<'a, Result<RawDocumentBuf>> {
        not_on_this_node(&request, "with read concern 'snapshot'")
    }

    /// Runs `command` on database `db` of the config server (`config.system.sessions` for the
    /// logical session jobs, `admin.system.keys` for the cluster time keys). The config server
    /// runs it itself (this default); routers and shards send it to the config server.
    fn on_config_server(
        &self,
        db: &'static str,
        command: bson::Document,
    ) -> BoxFuture<'_, Result<bson::Document>> {
        Box::pin(super::session_jobs::run_locally(self, db, command))
    }

    /// The stored document of user `name` (`admin.system.users`): routers and shards ask the
    /// config server (`auth::config_users`), the config server reads its own. A node without
    /// users has none.
    fn load_user<'a>(
        &'a self,
        _name: &'a UserName,
    ) -> BoxFuture<'a, Result<Option<bson::Document>>> {
        Box::pin(async { Ok(None) })
    }

    /// Whether any user exists (the localhost exception applies until one does).
    fn has_users(&self) -> BoxFuture<'_, Result<bool>> {
        Box::pin(async { Ok(false) })
    }

    /// `serverStatus.transactions` when the role keeps its own (a router's transactions);
    /// `None`: the node's statistics answer it.
    fn transactions_status(&self) -> Option<bson::Document> {
        None
    }

    /// The sessions this node's open cursors were opened in.
    fn cursor_sessions(&self) -> Vec<super::sessions::LogicalSessionId> {
        Vec::new()
    }

    /// Kills this node's cursors opened in a session `matches` accepts; returns how many.
    fn kill_session_cursors<'a>(
        &'a self,
        _matches: &'a (dyn Fn(&super::sessions::LogicalSessionId) -> bool + Sync),
    ) -> BoxFuture<'a, usize> {
        Box::pin(async { 0 })
    }

    /// Passes a kill of sessions (`killAllSessionsByPattern`'s patterns) on to the nodes
    /// behind this one: a router's shards and config server. A mongod has none.
    fn kill_sessions_remote<'a>(
        &'a self,
        _patterns: &'a [bson::Document],
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async { Ok(()) })
    }
}

/// NotImplemented for a command this node cannot run as asked (`how`).
fn not_on_this_node(
    request: &CommandRequest,
    how: &str,
) -> BoxFuture<'static, Result<RawDocumentBuf>> {
    let message = format!("'{}' {how} is not supported by this node", request.name());
    Box::pin(async move { Err(MongoError::new(ErrorCode::NotImplemented, message)) })
}

/// A transaction statement's handler, given its request.
pub type TransactionStatement<'a> =
    Box<dyn FnOnce(CommandRequest) -> BoxFuture<'a, Result<RawDocumentBuf>> + Send + 'a>;

/// What a data node does before a command's handler: wait for `afterClusterTime`, and where
/// the command reads and writes.
#[derive(Clone, Copy, Debug)]
struct Before {
    after_cluster_time: Option<bson::Timestamp>,
    storage: StorageContext,
}

/// Where a command reads and writes.
#[derive(Clone, Copy, Debug)]
enum StorageContext {
    /// The latest data (every command outside the two below).
    Latest,
    /// A multi-document transaction's snapshot and writes (data nodes; a router keeps its
    /// transactions' state in its own handlers).
    Transaction(TransactionArgs),
    /// A snapshot read outside a transaction, at this time or the latest (data nodes).
    Snapshot(Option<bson::Timestamp>),
}

impl Before {
    /// `outside`: the command runs outside any transaction or snapshot of its session (on a
    /// router, whose transactions are its handlers'; a command detached from its session, as
    /// a coordinator's `coordinateCommitTransaction`).
    fn of(after: Option<bson::Timestamp>, generic: &generic::GenericArgs, outside: bool) -> Before {
        let storage = match generic.transaction {
            _ if outside => StorageContext::Latest,
            Some(transaction) => StorageContext::Transaction(transaction),
            None if generic.read_concern_level == Some("snapshot") => {
                StorageContext::Snapshot(generic.at_cluster_time)
            }
            None => StorageContext::Latest,
        };
        Before {
            after_cluster_time: after,
            storage,
        }
    }
}

/// Whatever a role keeps alive while a command runs.
pub type CommandGuard = Option<Box<dyn std::any::Any + Send + Sync>>;

/// Something that executes commands: a role behind the dispatcher. Both the TCP server and the
/// in-process transport call it.
pub trait Service: Send + Sync + 'static {
    fn node(&self) -> &Node;
    /// Runs one command; failures come back as `{ok: 0, ...}` replies.
    fn execute<'a>(
        &'a self,
        ctx: &'a RequestContext,
        request: CommandRequest,
    ) -> BoxFuture<'a, RawDocumentBuf>;
}

/// Dispatches commands to a role's table.
pub struct Dispatcher<S: NodeState> {
    state: Arc<S>,
}

impl<S: NodeState> Dispatcher<S> {
    pub fn new(state: Arc<S>) -> Self {
        Dispatcher { state }
    }

    /// Runs a command; a `failCommand` write concern error to attach comes back beside the
    /// outcome.
    async fn run(
        &self,
        ctx: &RequestContext,
        request: CommandRequest,
    ) -> (Result<RawDocumentBuf>, Option<Effect>) {
        let state = &*self.state;
        let node = state.node();
        if let Err(e) = generic::check_request_database(&request.db) {
            return (Err(e), None);
        }
        let spec = match state.commands().get(request.name()) {
            Some(spec) if !spec.test_only || node.params.get_bool("enableTestCommands") => spec,
            _ => {
                let err = MongoError::new(
                    ErrorCode::CommandNotFound,
                    format!("no such command: '{}'", request.name()),
                );
                return (Err(err), None);
            }
        };
        let command = generic::CommandInfo {
            name: spec.name,
            requested: request.name(),
            takes_write_concern: spec.takes_write_concern,
            internal: ctx.is_internal(),
            router: node.role == Role::Router,
        };
        let generic = match generic::check(&request, &command) {
            Ok(generic) => generic,
            Err(e) => return (Err(e), None),
        };
        if let Some(gossiped) = &generic.cluster_time {
            if let Err(e) = super::cluster_keys::check(state, ctx, gossiped).await {
                return (Err(e), None);
            }
            node.clock.advance(gossiped.time);
        }
        // A data node answers `afterClusterTime` once every write up to it is visible; a
        // router passes the concern on to the nodes it reads from.
        let after = generic
            .after_cluster_time
            .filter(|_| node.role != Role::Router);
        // Unknown fields, refused once here for every command that declares its fields. The
        // requests other nodes send carry docgrid's internal fields and are not checked.
        if let Some(known) = spec.fields.filter(|_| !ctx.is_internal()) {
            if let Err(e) = crate::command::check_known_fields(&request, spec.name, known) {
                return (Err(e), None);
            }
        }
        // The one privilege check: what the command declares, against the connection's user.
        // An undeclared command needs what no user is granted (the `internal` action).
        const UNDECLARED: Requires = Requires::Cluster(&["internal"]);
        let requires = spec.requires.as_ref().unwrap_or(&UNDECLARED);
        if let Err(e) = super::auth::authorize(state, ctx, spec.name, requires, &request).await {
            return (Err(e), None);
        }
        let runs_as =
            match super::impersonation::runs_as(state, ctx, generic.impersonation.as_ref()).await {
                Ok(runs_as) => runs_as,
                Err(e) => return (Err(e), None),
            };
        // The logical session the command runs in, recorded in the session cache; the
        // cursors its handler opens remember it.
        let session = spec
            .attaches_session
            .then(|| super::sessions::LogicalSessionId::of_request(&request))
            .flatten();
        if let Some(session) = session.clone() {
            if let Err(e) = node.touch_session(session) {
                return (Err(e), None);
            }
        }
        // Listed in `$currentOp` while it runs; `killOp` drops the command's future, which
        // rolls back its open transaction as a maxTimeMS deadline does.
        let registered = node
            .operations
            .begin(ctx, &request, session.clone(), runs_as);
        // A profiled command's reads keep what its entry's `execStats` needs.
        if node.profiling.level(&request.db) != 0 {
            registered.op.mark_profiled();
        }
        // A large request runs off the runtime threads, so its parsing and work do not keep
        // other connections waiting (`cpu`); `killOp` still ends it at its next await.
        let heavy = super::cpu::is_heavy(&request);
        let outside = node.role == Role::Router || !spec.attaches_session;
        let before = Before::of(after, &generic, outside);
        let op = Arc::clone(&registered.op);
        let run = async {
            let spec_run = self.run_spec(spec, ctx, request, before, registered.op.opid);
            tokio::select! {
                outcome = super::operations::run_as(op, spec_run) => outcome,
                _ = registered.op.killed() => (
                    Err(MongoError::new(ErrorCode::Interrupted, "operation was interrupted")),
                    None,
                ),
            }
        };
        let run = super::sessions::in_session(session, run);
        let (outcome, attach) = super::cpu::run(heavy, run).await;
        let outcome = outcome.and_then(|reply| generic.complete_reply(reply));
        if let Some(after) = state.after_command(&registered.op, &outcome) {
            after.await;
        }
        // A data node labels a retryable write's retriable failures for its clients, and those
        // of the commands that end a transaction (drivers retry them too); a router, as mongos,
        // passes its shards' errors on unlabelled.
        let ends_transaction = generic.transaction.is_some()
            && matches!(spec.name, "commitTransaction" | "abortTransaction");
        let retryable = (generic.retryable_write || ends_transaction) && node.role != Role::Router;
        (
            super::error_labels::label_retryable(ctx, retryable, outcome),
            attach,
        )
    }

    /// Runs a command found in the table: the `failCommand` fail point first, then its handler.
    async fn run_spec(
        &self,
        spec: &CommandSpec<S>,
        ctx: &RequestContext,
        request: CommandRequest,
        before: Before,
        opid: i32,
    ) -> (Result<RawDocumentBuf>, Option<Effect>) {
        let node = self.state.node();
        let mut attach = None;
        let mut fail_command = None;
        if node.fail_points.armed() {
            let facts = CommandFacts {
                name: spec.name,
                namespace: namespace_of(&request),
                app_name: ctx.app_name(),
                internal: ctx.is_internal(),
                supports_write_concern: spec.takes_write_concern,
            };
            if let Some(failure) = node.fail_points.evaluate(&facts) {
                if let Some(delay) = failure.block_for {
                    tokio::time::sleep(delay).await;
                }
                match failure.effect {
                    Effect::CloseConnection => {
                        ctx.request_close();
                        fail_command = Some(MongoError::new(
                            ErrorCode::SocketException,
                            "connection closed by failCommand",
                        ));
                    }
                    Effect::Error(e) => fail_command = Some(e),
                    effect @ Effect::WriteConcernError { .. } => attach = Some(effect),
                    Effect::None => {}
                }
            }
        }
        let run = self.run_handler(spec, ctx, request, before, opid);
        let outcome = FAIL_COMMAND
            .scope(std::cell::RefCell::new(fail_command), run)
            .await;
        (outcome, attach)
    }

    async fn run_handler(
        &self,
        spec: &CommandSpec<S>,
        ctx: &RequestContext,
        request: CommandRequest,
        before: Before,
        opid: i32,
    ) -> Result<RawDocumentBuf> {
        let state = &*self.state;
        let name = spec.name;
        if spec.admin_only && request.db != "admin" {
            return Err(MongoError::new(
                ErrorCode::Unauthorized,
                format!("{name} may only be run against the admin database."),
            ));
        }
        state.node().stats.count(spec.counter);
        // getMore's maxTimeMS is how long an awaitData cursor waits, not a deadline.
        let limit = match name {
            "getMore" => None,
            _ => crate::command::max_time(&request.args())?,
        };
        if limit.is_some() && state.node().fail_points.max_time_expires() {
            return Err(crate::command::time_limit_exceeded());
        }
        let handled = async {
            // The deadline covers the wait before the command too (a shard's admission through
            // a critical section, its version refreshes): what `before_command` held or queued
            // for is given up with it.
            let run = async {
                // Operations on one session run one at a time (the session catalog).
                let _session = check_out_session(state.node(), &request, opid).await;
                if let Some(time) = before.after_cluster_time {
                    state.node().clock.wait_until_visible(time).await?;
                }
                let _guard = state.before_command(&request).await?;
                // A router keeps its transactions' state in its own handlers
                // (`router::transactions`); a data node runs the statement in the session's
                // transaction.
                let run: TransactionStatement<'_> =
                    Box::new(move |request| (spec.handler)(state, ctx, request));
                match before.storage {
                    StorageContext::Latest => run(request).await,
                    StorageContext::Transaction(transaction) => {
                        state.run_in_transaction(transaction, request, run).await
                    }
                    StorageContext::Snapshot(at) => state.run_at_snapshot(at, request, run).await,
                }
            };
            crate::command::within(limit, run).await
        };
        // Handlers walk nested input: each poll gets the stack that needs, whatever thread runs it.
        let handled = crate::depth::WithStack::new(Box::pin(handled));
        match AssertUnwindSafe(handled).catch_unwind().await {
            Ok(result) => result,
            Err(panic) => {
                let what = super::asserts::count_panic(name, &*panic);
                Err(MongoError::internal(format!(
                    "command {name} failed unexpectedly: {what}"
                )))
            }
        }
    }
}

impl<S: NodeState> Service for Dispatcher<S> {
    fn node(&self) -> &Node {
        self.state.node()
    }

    fn execute<'a>(
        &'a self,
        ctx: &'a RequestContext,
        request: CommandRequest,
    ) -> BoxFuture<'a, RawDocumentBuf> {
        Box::pin(async move {
            let (outcome, attach) = self.run(ctx, request).await;
            let reply = match outcome {
                Ok(reply) => ok_reply(reply),
                Err(e) => {
                    if e.code() != ErrorCode::InternalError {
                        super::asserts::count_user();
                    }
                    RawDocumentBuf::from_document(&e.to_reply()).unwrap_or_default()
                }
            };
            let mut reply = match attach {
                Some(Effect::WriteConcernError { error, labels }) => {
                    attach_write_concern_error(reply, error, labels)
                }
                _ => reply,
            };
            // Every reply gossips this node's cluster time. No finer operation time is kept:
            // the clock's current time is never earlier than a write the command made (its
            // timestamp was a tick of this clock, or of a shard's clock whose reply advanced
            // this one) nor than any data the command read.
            super::clock::append_gossip(&mut reply, self.state.node().clock.as_ref());
            reply
        })
    }
}

/// Checks the request's session out of the session catalog when it needs one (a retryable
/// write or a transaction statement; see `session_catalog::checks_out`), waiting for the
/// operation that holds it. The wait is under the request's deadline and killOp.
async fn check_out_session(
    node: &Node,
    request: &CommandRequest,
    opid: i32,
) -> Option<super::session_catalog::CheckedOutSession> {
    let session = super::sessions::request_session()?;
    if !super::session_catalog::checks_out(request, node.role) {
        return None;
    }
    let checked_out = node.session_catalog.check_out(session, opid).await;
    node.fail_points
        .pause_if("hangAfterSessionCheckOut", &bson::doc! {})
        .await;
    Some(checked_out)
}

/// The namespace a command acts on (`db.collection`), when its argument names a collection.
fn namespace_of(request: &CommandRequest) -> Option<String> {
    match request.args().target() {
        Ok(bson::RawBsonRef::String(coll)) => Some(format!("{}.{coll}", request.db)),
        _ => None,
    }
}

/// A reply with `failCommand`'s write concern error (and its error labels, which replace any
/// the command produced).
fn attach_write_concern_error(
    reply: RawDocumentBuf,
    error: bson::Document,
    labels: Option<Vec<String>>,
) -> RawDocumentBuf {
    let Ok(mut doc) = reply.to_document() else {
        return reply;
    };
    doc.insert("writeConcernError", error);
    doc.remove("errorLabels");
    if let Some(labels) = labels.filter(|l| !l.is_empty()) {
        doc.insert("errorLabels", labels);
    }
    RawDocumentBuf::from_document(&doc).unwrap_or(reply)
}

/// Adds `ok: 1` unless the reply (e.g. one passed through from another node) has `ok` already.
pub fn ok_reply(mut reply: RawDocumentBuf) -> RawDocumentBuf {
    if !matches!(reply.get("ok"), Ok(Some(_))) {
        reply.append("ok", 1.0);
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::logbuf::LogBuffer;
    use crate::server::{CmdLine, Parameters, Role};
    use bson::rawdoc;

    struct TestState {
        node: Node,
        table: CommandTable<TestState>,
    }

    impl NodeState for TestState {
        fn node(&self) -> &Node {
            &self.node
        }
        fn commands(&self) -> &CommandTable<Self> {
            &self.table
        }
    }

    async fn panics(
        _: &TestState,
        _: &RequestContext,
        _: CommandRequest,
    ) -> Result<RawDocumentBuf> {
        panic!("boom")
    }

    async fn admin_thing(
        _: &TestState,
        _: &RequestContext,
        _: CommandRequest,
    ) -> Result<RawDocumentBuf> {
        Ok(RawDocumentBuf::new())
    }

    fn dispatcher() -> Dispatcher<TestState> {
        let table = CommandTable::new(vec![
            CommandSpec::new("explode", panics),
            CommandSpec::new("adminThing", admin_thing).admin_only(),
        ]);
        let node = Node::new(
            Role::Shard,
            CmdLine::default(),
            Parameters::new(),
            Arc::new(LogBuffer::default()),
        );
        Dispatcher::new(Arc::new(TestState { node, table }))
    }

    async fn run(d: &Dispatcher<TestState>, db: &str, body: RawDocumentBuf) -> bson::Document {
        let reply = d
            .execute(
                &RequestContext::internal(),
                CommandRequest::new(db, body).unwrap(),
            )
            .await;
        reply.to_document().unwrap()
    }

    #[tokio::test]
    async fn a_panicking_handler_becomes_internal_error_and_the_dispatcher_lives_on() {
        let d = dispatcher();
        let reply = run(&d, "admin", rawdoc! {"explode": 1}).await;
        assert_eq!(reply.get_i32("code").unwrap(), 1);
        assert_eq!(reply.get_str("codeName").unwrap(), "InternalError");
        assert!(reply.get_str("errmsg").unwrap().contains("boom"));
        let reply = run(&d, "admin", rawdoc! {"adminThing": 1}).await;
        assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
    }

    #[tokio::test]
    async fn unknown_and_misplaced_commands() {
        let d = dispatcher();
        let reply = run(&d, "admin", rawdoc! {"nope": 1}).await;
        assert_eq!(reply.get_i32("code").unwrap(), 59);
        assert_eq!(reply.get_str("errmsg").unwrap(), "no such command: 'nope'");
        let reply = run(&d, "app", rawdoc! {"adminThing": 1}).await;
        assert_eq!(reply.get_i32("code").unwrap(), 13);
        assert_eq!(
            reply.get_str("errmsg").unwrap(),
            "adminThing may only be run against the admin database."
        );
    }
}
