//! Entity operations: dispatch by the target entity's type to the driver call that implements
//! the operation, and the shapes results take (CRUD result models turned into documents,
//! iterables fully iterated).

pub mod bulk;
pub mod change_streams;
pub mod client;
pub mod collection;
pub mod commands;
pub mod crud;
pub mod database;
pub mod session;
pub mod test_runner;

use crate::entities::{Entities, Entity};
use crate::runner::TestState;
use crate::values::Args;
use bulk::BulkFailure;
use mongodb::ClientSession;
use mongodb::bson::{Bson, Document};

/// A session lent to a `withTransaction` callback: operations naming it use this borrow.
pub type Lent<'s> = Option<(String, &'s mut ClientSession)>;

/// How an entity operation ended, before expectations are applied.
pub enum OpError {
    /// The driver (or the server through it) reported an error: what `expectError` examines.
    Driver(mongodb::error::Error),
    /// An operation the runner carries out with generic commands (`commands`, `bulk`) refused
    /// its arguments before sending anything, as the spec's drivers do (a client-side error).
    Client(String),
    /// A collection-level bulk write carried out by the runner failed: its write errors, write
    /// concern errors, partial result and the command error that stopped it, if any.
    Bulk(Box<BulkFailure>),
    /// The runner could not carry the operation out (malformed test, missing entity, ...).
    Runner(String),
    /// The Rust driver has no API for this; the test is skipped with this reason.
    Unsupported(String),
}

impl From<String> for OpError {
    fn from(s: String) -> Self {
        OpError::Runner(s)
    }
}

impl From<&str> for OpError {
    fn from(s: &str) -> Self {
        OpError::Runner(s.to_string())
    }
}

impl From<mongodb::error::Error> for OpError {
    fn from(e: mongodb::error::Error) -> Self {
        OpError::Driver(e)
    }
}

/// The result of a successful operation.
#[derive(Default)]
pub struct Output {
    pub value: Option<Bson>,
    /// The value is an iterated cursor: array elements are root-level documents when matched.
    pub iterable: bool,
    /// A cursor or change stream, for `saveResultAsEntity`.
    pub entity: Option<Entity>,
}

impl Output {
    pub fn none() -> Output {
        Output::default()
    }

    pub fn value(v: impl Into<Bson>) -> Output {
        Output {
            value: Some(v.into()),
            ..Output::default()
        }
    }

    pub fn documents(docs: Vec<Document>) -> Output {
        Output {
            value: Some(Bson::Array(docs.into_iter().map(Bson::Document).collect())),
            iterable: true,
            entity: None,
        }
    }
}

pub type OpResult = Result<Output, OpError>;

/// What an operation carried out with generic commands must know about its context to build the
/// command the spec's drivers send.
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    /// The operation runs in a session whose transaction is in progress: no read or write
    /// concern, no retry (the driver adds the transaction fields itself).
    pub in_transaction: bool,
    /// The client's `retryReads` and `retryWrites` (both default to true).
    pub retry_reads: bool,
    pub retry_writes: bool,
    /// The test's session is causally consistent.
    pub causal_session: bool,
    /// The server's `maxBsonObjectSize` and `maxWriteBatchSize` (from `hello`).
    pub max_bson_object_size: usize,
    pub max_write_batch_size: usize,
}

/// The session named by the `session` argument, if any: the lent one or the entity's.
pub fn session_arg<'x>(
    entities: &'x mut Entities,
    lent: &'x mut Lent<'_>,
    args: &mut Args,
) -> Result<Option<&'x mut ClientSession>, String> {
    let Some(name) = args.str("session")? else {
        return Ok(None);
    };
    if let Some((lent_name, session)) = lent {
        if *lent_name == name {
            return Ok(Some(&mut **session));
        }
    }
    entities.session(&name).map(Some)
}

/// Runs `name` on the entity `object`.
pub async fn dispatch(
    state: &mut TestState,
    lent: &mut Lent<'_>,
    name: &str,
    object: &str,
    arguments: Document,
) -> OpResult {
    let args = Args::new(name, arguments);
    let kind = match (state.entities.get(object), lent.as_ref()) {
        (_, Some((lent_name, _))) if lent_name == object => "session",
        (Ok(entity), _) => entity.kind(),
        (Err(e), _) => return Err(OpError::Runner(e)),
    };
    let ctx = context(state, lent, object, &args);
    match kind {
        "collection" => {
            let coll = state.entities.collection(object)?;
            collection::run(state, lent, ctx, &coll, name, args).await
        }
        "database" => {
            let db = state.entities.database(object)?;
            database::run(state, lent, ctx, &db, name, args).await
        }
        "client" => client::run(state, lent, object, name, args).await,
        "session" => session::run(state, lent, object, name, args).await,
        "change stream" | "cursor" => change_streams::run(state, lent, object, name, args).await,
        "bucket" => Err(OpError::Unsupported(
            "GridFS bucket operations are outside this runner".into(),
        )),
        other => Err(OpError::Runner(format!(
            "operation `{name}` on a {other} entity"
        ))),
    }
}

/// The context of an operation on `object` (a database or collection entity) with `args`.
fn context(state: &mut TestState, lent: &Lent<'_>, object: &str, args: &Args) -> Ctx {
    let session = args
        .peek_str("session")
        .and_then(|name| Some((name, state.entities.session_entity(name).ok()?)));
    let (in_transaction, causal_session) = match session {
        None => (false, false),
        // withTransaction lends its session to the callback, inside the transaction.
        Some((name, s)) if lent.as_ref().is_some_and(|(n, _)| n == name) => (true, s.causal),
        Some((_, s)) => (s.in_transaction, s.causal),
    };
    let (retry_reads, retry_writes) = state
        .entities
        .client_of(object)
        .map_or((true, true), |c| (c.retry_reads, c.retry_writes));
    Ctx {
        in_transaction,
        retry_reads,
        retry_writes,
        causal_session,
        max_bson_object_size: state.max_bson_object_size,
        max_write_batch_size: state.max_write_batch_size,
    }
}
