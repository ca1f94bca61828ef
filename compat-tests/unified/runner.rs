//! Executing a test file as the format prescribes: requirements, `initialData` (drop, create,
//! insert with majority write concern), entities, operations with their `expectResult` /
//! `expectError` / `saveResultAsEntity`, fail points turned off afterwards, `expectEvents`,
//! `outcome`, and cleanup (`killAllSessions`, ending sessions, closing clients).

use crate::Global;
use crate::entities::{CreateError, Entities, Entity, create_entities};
use crate::events::check_expected;
use crate::matching::{Lookup, exactly_equal, matches};
use crate::operations::bulk::BulkFailure;
use crate::operations::client::partial_result;
use crate::operations::{self, Lent, OpError, Output, test_runner};
use crate::requirements::{SCHEMA_MAJOR, SCHEMA_MINOR, parse_version};
use crate::summary::{FileReport, TestOutcome, TestReport};
use crate::values::{load_file, short};
use futures::TryStreamExt;
use futures::future::BoxFuture;
use mongodb::Client;
use mongodb::ClusterTime;
use mongodb::bson::{Bson, Document, doc};
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::options::{ReadConcern, ReadPreference, SelectionCriteria, WriteConcern};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// A test that has not finished after this long fails (and the run goes on).
const TEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a test stopped early.
pub enum Step {
    Fail(String),
    Skip(String),
}

/// The state of one test.
pub struct TestState {
    pub internal: Client,
    pub router: SocketAddr,
    pub entities: Entities,
    /// Fail point names to turn off after the test.
    pub fail_points: Vec<String>,
    pub started_transaction: bool,
    pub max_bson_object_size: usize,
    pub max_write_batch_size: usize,
}

pub async fn run_file(global: &'static Global, name: &str, path: &Path) -> FileReport {
    let area = name.split('/').next().unwrap_or_default().to_string();
    let mut report = FileReport {
        name: name.to_string(),
        area,
        tests: Vec::new(),
        file_error: None,
    };
    let file = match load_file(path) {
        Ok(f) => f,
        Err(e) => {
            report.file_error = Some(e);
            return report;
        }
    };
    let descriptions: Vec<(String, Document)> = match file.get_array("tests") {
        Ok(tests) => tests
            .iter()
            .filter_map(|t| t.as_document())
            .map(|t| {
                (
                    t.get_str("description").unwrap_or("?").to_string(),
                    t.clone(),
                )
            })
            .collect(),
        Err(_) => {
            report.file_error = Some("the file has no tests array".into());
            return report;
        }
    };
    if let Err(e) = check_schema(&file) {
        report.file_error = Some(e);
        return report;
    }
    let file_skip = match global
        .server
        .check(&global.internal, file.get("runOnRequirements"))
        .await
    {
        Ok(s) => s,
        Err(e) => {
            report.file_error = Some(e);
            return report;
        }
    };
    for (description, test) in descriptions {
        let outcome = match &file_skip {
            Some(reason) => TestOutcome::SkippedRequirement(reason.clone()),
            None => run_test(global, &file, &test).await,
        };
        report.tests.push(TestReport {
            description,
            outcome,
        });
    }
    report
}

fn check_schema(file: &Document) -> Result<(), String> {
    let version = file
        .get_str("schemaVersion")
        .map_err(|_| "the file has no schemaVersion".to_string())?;
    let [major, minor, _] = parse_version(version)?;
    if major != SCHEMA_MAJOR || minor > SCHEMA_MINOR {
        return Err(format!(
            "schemaVersion {version} is not supported (this runner implements \
             {SCHEMA_MAJOR}.{SCHEMA_MINOR})"
        ));
    }
    Ok(())
}

/// Entity ids and their types, from every `createEntities` of the file and test, so that
/// unsupported operations are known before anything runs.
fn entity_kinds(file: &Document, test: &Document) -> HashMap<String, String> {
    let mut kinds = HashMap::new();
    let mut add = |list: &[Bson]| {
        for e in list {
            if let Some((kind, Bson::Document(spec))) =
                e.as_document().and_then(|d| d.iter().next())
            {
                if let Ok(id) = spec.get_str("id") {
                    kinds.insert(id.to_string(), kind.clone());
                }
            }
        }
    };
    if let Ok(list) = file.get_array("createEntities") {
        add(list);
    }
    fn nested(ops: &[Bson], out: &mut Vec<Bson>) {
        for op in ops.iter().filter_map(Bson::as_document) {
            if op.get_str("name") == Ok("createEntities") {
                if let Ok(args) = op.get_document("arguments") {
                    if let Ok(list) = args.get_array("entities") {
                        out.extend(list.iter().cloned());
                    }
                }
            }
            if let Ok(cb) = op
                .get_document("arguments")
                .and_then(|a| a.get_array("callback"))
            {
                nested(cb, out);
            }
        }
    }
    let mut extra = Vec::new();
    if let Ok(ops) = test.get_array("operations") {
        nested(ops, &mut extra);
    }
    add(&extra);
    kinds
}

/// The reason a test cannot be expressed with this driver, found before running it.
fn unsupported_reason(file: &Document, test: &Document) -> Option<String> {
    let kinds = entity_kinds(file, test);
    fn scan(ops: &[Bson], kinds: &HashMap<String, String>) -> Option<String> {
        for op in ops.iter().filter_map(Bson::as_document) {
            let name = op.get_str("name").unwrap_or_default();
            let object = op.get_str("object").unwrap_or_default();
            let reason = if object == "testRunner" {
                test_runner::unsupported(name).map(String::from)
            } else {
                match kinds.get(object).map(String::as_str) {
                    Some("bucket") => {
                        Some("GridFS bucket operations are outside this runner".into())
                    }
                    _ => None,
                }
            };
            if reason.is_some() {
                return reason;
            }
            if let Ok(cb) = op
                .get_document("arguments")
                .and_then(|a| a.get_array("callback"))
            {
                if let Some(r) = scan(cb, kinds) {
                    return Some(r);
                }
            }
        }
        None
    }
    scan(test.get_array("operations").ok()?, &kinds)
}

async fn run_test(global: &'static Global, file: &Document, test: &Document) -> TestOutcome {
    if let Ok(reason) = test.get_str("skipReason") {
        return TestOutcome::SkippedRequirement(format!("skipReason: {reason}"));
    }
    match global
        .server
        .check(&global.internal, test.get("runOnRequirements"))
        .await
    {
        Ok(Some(reason)) => return TestOutcome::SkippedRequirement(reason),
        Ok(None) => {}
        Err(e) => return TestOutcome::Failed(e),
    }
    if let Some(reason) = unsupported_reason(file, test) {
        return TestOutcome::SkippedUnsupported(reason);
    }
    let mut state = TestState {
        internal: global.internal.clone(),
        router: global.cluster.addr,
        entities: Entities::default(),
        fail_points: Vec::new(),
        started_transaction: false,
        max_bson_object_size: global.server.max_bson_object_size,
        max_write_batch_size: global.server.max_write_batch_size,
    };
    if let Err(e) = bounded(
        "killAllSessions before the test",
        kill_all_sessions(&state.internal),
    )
    .await
    {
        return TestOutcome::Failed(e);
    }
    let result = match tokio::time::timeout(TEST_TIMEOUT, test_body(&mut state, file, test)).await {
        Ok(r) => r,
        Err(_) => Err(Step::Fail(format!(
            "the test did not finish within {}s",
            TEST_TIMEOUT.as_secs()
        ))),
    };
    // The cleanup is bounded too: a step that hangs fails the test, naming the step.
    let cleanup = match bounded(
        "disabling fail points",
        test_runner::disable_fail_points(&mut state),
    )
    .await
    {
        Ok(disabled) => disabled,
        Err(e) => Err(e),
    };
    let entities = std::mem::take(&mut state.entities);
    let closed = bounded("closing the entities", entities.close()).await;
    let cleanup = cleanup.and(closed);
    let cleanup = match state.started_transaction {
        true => cleanup.and(
            bounded(
                "killAllSessions after the test",
                kill_all_sessions(&state.internal),
            )
            .await,
        ),
        false => cleanup,
    };
    match (result, cleanup) {
        (Err(Step::Skip(reason)), _) => TestOutcome::SkippedUnsupported(reason),
        (Err(Step::Fail(m)), _) => TestOutcome::Failed(m),
        (Ok(()), Err(e)) => TestOutcome::Failed(format!("cleanup: {e}")),
        (Ok(()), Ok(())) => TestOutcome::Passed,
    }
}

/// `step`'s result unless it takes longer than [`TEST_TIMEOUT`].
async fn bounded<T>(step: &str, f: impl std::future::Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(TEST_TIMEOUT, f)
        .await
        .map_err(|_| format!("{step} did not finish within {}s", TEST_TIMEOUT.as_secs()))
}

/// `killAllSessions` ends open transactions; docgrid does not implement the sessions commands
/// yet, so CommandNotFound (and the errors the spec lists as ignorable) are ignored.
async fn kill_all_sessions(client: &Client) {
    let _ = client
        .database("admin")
        .run_command(doc! {"killAllSessions": []})
        .await;
}

async fn test_body(state: &mut TestState, file: &Document, test: &Document) -> Result<(), Step> {
    if let Ok(data) = file.get_array("initialData") {
        initial_data(&state.internal, data)
            .await
            .map_err(|e| Step::Fail(format!("initialData: {e}")))?;
    }
    if let Ok(list) = file.get_array("createEntities") {
        create_entities(&mut state.entities, list, state.router)
            .await
            .map_err(|e| match e {
                CreateError::Unsupported(m) => Step::Skip(m),
                CreateError::Failed(m) => Step::Fail(format!("createEntities: {m}")),
            })?;
    }
    advance_session_cluster_times(state).await;
    let operations = test
        .get_array("operations")
        .map_err(|_| Step::Fail("the test has no operations array".into()))?;
    // The Rust driver gives an implicit session back to its pool from a task it spawns when
    // the operation ends; a test asserting that consecutive operations reuse one session lets
    // that task run first, or a loaded machine makes the next operation start another.
    let compares_lsids = operations.iter().any(|op| {
        op.as_document()
            .and_then(|op| op.get_str("name").ok())
            .is_some_and(|name| name.ends_with("LsidOnLastTwoCommands"))
    });
    for (i, op) in operations.iter().enumerate() {
        let op = op
            .as_document()
            .ok_or_else(|| Step::Fail(format!("operation {i} is not a document")))?;
        if compares_lsids && i > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let mut lent: Lent = None;
        run_operation(state, &mut lent, op)
            .await
            .map_err(|step| match step {
                Step::Fail(m) => Step::Fail(format!(
                    "operation {i} ({}): {m}",
                    op.get_str("name").unwrap_or("?")
                )),
                skip => skip,
            })?;
    }
    // Fail points go off before the assertions that read the server (outcome).
    test_runner::disable_fail_points(state)
        .await
        .map_err(Step::Fail)?;
    if let Ok(expected) = test.get_array("expectEvents") {
        for spec in expected {
            let spec = spec
                .as_document()
                .ok_or_else(|| Step::Fail("expectEvents entry is not a document".into()))?;
            let client = spec.get_str("client").unwrap_or_default();
            let observer = state
                .entities
                .client(client)
                .map_err(Step::Fail)?
                .observer
                .clone();
            check_expected(spec, &observer, &state.entities)
                .map_err(|e| Step::Fail(format!("expectEvents: {e}")))?;
        }
    }
    if let Ok(outcome) = test.get_array("outcome") {
        check_outcome(&state.internal, outcome)
            .await
            .map_err(|e| Step::Fail(format!("outcome: {e}")))?;
    }
    Ok(())
}

/// The spec's workaround for MigrationConflict on sharded clusters: sessions start from the
/// cluster time the internal client last saw (a `ping` after initialData). docgrid does not gossip
/// `$clusterTime` yet, in which case there is nothing to advance.
async fn advance_session_cluster_times(state: &mut TestState) {
    let Ok(reply) = state
        .internal
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
    else {
        return;
    };
    let Some(cluster_time) = reply
        .get_document("$clusterTime")
        .ok()
        .and_then(|d| mongodb::bson::from_document::<ClusterTime>(d.clone()).ok())
    else {
        return;
    };
    for name in state.entities.names() {
        if let Ok(session) = state.entities.session(&name) {
            session.advance_cluster_time(&cluster_time);
        }
    }
}

fn majority() -> WriteConcern {
    WriteConcern::majority()
}

async fn initial_data(client: &Client, data: &[Bson]) -> Result<(), String> {
    for item in data {
        let item = item
            .as_document()
            .ok_or_else(|| format!("collectionData is not a document: {item}"))?;
        let db_name = item
            .get_str("databaseName")
            .map_err(|_| "collectionData without databaseName".to_string())?;
        let coll_name = item
            .get_str("collectionName")
            .map_err(|_| "collectionData without collectionName".to_string())?;
        let documents: Vec<Document> = item
            .get_array("documents")
            .map_err(|_| "collectionData without documents".to_string())?
            .iter()
            .map(|d| {
                d.as_document()
                    .cloned()
                    .ok_or_else(|| format!("document {d} is not a document"))
            })
            .collect::<Result<_, _>>()?;
        let db = client.database(db_name);
        let coll = db.collection::<Document>(coll_name);
        coll.drop()
            .write_concern(majority())
            .await
            .map_err(|e| format!("drop {db_name}.{coll_name}: {e}"))?;
        let create_options = item.get_document("createOptions").ok();
        if create_options.is_some() || documents.is_empty() {
            let mut create = doc! {"create": coll_name};
            if let Some(options) = create_options {
                create.extend(options.clone());
            }
            create.insert("writeConcern", doc! {"w": "majority"});
            db.run_command(create)
                .await
                .map_err(|e| format!("create {db_name}.{coll_name}: {e}"))?;
        }
        if !documents.is_empty() {
            coll.insert_many(documents)
                .write_concern(majority())
                .await
                .map_err(|e| format!("insert into {db_name}.{coll_name}: {e}"))?;
        }
    }
    Ok(())
}

async fn check_outcome(client: &Client, outcome: &[Bson]) -> Result<(), String> {
    for item in outcome {
        let item = item
            .as_document()
            .ok_or_else(|| format!("collectionData is not a document: {item}"))?;
        let db = item.get_str("databaseName").unwrap_or_default();
        let coll = item.get_str("collectionName").unwrap_or_default();
        let expected = item
            .get_array("documents")
            .map_err(|_| "collectionData without documents".to_string())?;
        let actual: Vec<Document> = client
            .database(db)
            .collection::<Document>(coll)
            .find(doc! {})
            .sort(doc! {"_id": 1})
            .read_concern(ReadConcern::local())
            .selection_criteria(SelectionCriteria::ReadPreference(ReadPreference::Primary))
            .await
            .map_err(|e| format!("find on {db}.{coll}: {e}"))?
            .try_collect()
            .await
            .map_err(|e| format!("find on {db}.{coll}: {e}"))?;
        let actual: Vec<Bson> = actual.into_iter().map(Bson::Document).collect();
        let same = expected.len() == actual.len()
            && expected
                .iter()
                .zip(&actual)
                .all(|(e, a)| exactly_equal(e, a));
        if !same {
            return Err(format!(
                "{db}.{coll} holds {}, expected {}",
                short(&Bson::Array(actual)),
                short(&Bson::Array(expected.clone()))
            ));
        }
    }
    Ok(())
}

/// Runs one operation and applies its expectations. `Ok(Some(error))` hands a driver error the
/// test expected (or ignored) to a `withTransaction` callback, which must propagate it.
pub fn run_operation<'a, 's: 'a>(
    state: &'a mut TestState,
    lent: &'a mut Lent<'s>,
    op: &'a Document,
) -> BoxFuture<'a, Result<Option<mongodb::error::Error>, Step>> {
    Box::pin(async move {
        let name = op
            .get_str("name")
            .map_err(|_| Step::Fail(format!("operation without a name: {op}")))?;
        let object = op
            .get_str("object")
            .map_err(|_| Step::Fail(format!("operation without an object: {op}")))?;
        let arguments = op.get_document("arguments").cloned().unwrap_or_default();
        if object == "testRunner" {
            test_runner::run(state, name, arguments).await?;
            return Ok(None);
        }
        let result = operations::dispatch(state, lent, name, object, arguments).await;
        let ignore = op.get_bool("ignoreResultAndError").unwrap_or(false);
        match result {
            Err(OpError::Runner(m)) => Err(Step::Fail(m)),
            Err(OpError::Unsupported(m)) => Err(Step::Skip(m)),
            Err(OpError::Driver(e)) if driver_limitation(&e).is_some() => Err(Step::Skip(
                driver_limitation(&e).unwrap_or_default().to_string(),
            )),
            Err(OpError::Driver(e)) => expected_error(state, op, Observed::Driver(e)),
            Err(OpError::Client(m)) => expected_error(state, op, Observed::Client(m)),
            Err(OpError::Bulk(b)) => expected_error(state, op, Observed::Bulk(b)),
            Ok(output) => {
                if ignore {
                    return Ok(None);
                }
                if op.contains_key("expectError") {
                    return Err(Step::Fail(format!(
                        "{name} succeeded ({}) but an error was expected: {}",
                        output.value.as_ref().map(short).unwrap_or_default(),
                        op.get("expectError").map(short).unwrap_or_default()
                    )));
                }
                if let Some(expected) = op.get("expectResult") {
                    check_result(expected, &output, &state.entities)
                        .map_err(|m| Step::Fail(format!("{name}: expectResult: {m}")))?;
                }
                if let Ok(save) = op.get_str("saveResultAsEntity") {
                    let entity = match output {
                        Output {
                            entity: Some(e), ..
                        } => e,
                        Output { value: Some(v), .. } => Entity::Bson(v),
                        _ => {
                            return Err(Step::Fail(format!(
                                "{name} returned nothing to save as {save}"
                            )));
                        }
                    };
                    state.entities.insert(save, entity).map_err(Step::Fail)?;
                }
                Ok(None)
            }
        }
    })
}

/// An operation failed: the error is checked against `expectError` (or ignored), and handed on
/// as a driver error for a `withTransaction` callback.
fn expected_error(
    state: &TestState,
    op: &Document,
    e: Observed,
) -> Result<Option<mongodb::error::Error>, Step> {
    let name = op.get_str("name").unwrap_or("?");
    let object = op.get_str("object").unwrap_or("?");
    if op.get_bool("ignoreResultAndError").unwrap_or(false) {
        return Ok(Some(e.into_driver_error()));
    }
    match op.get_document("expectError") {
        Ok(expect) => {
            check_error(expect, &e, &state.entities).map_err(|step| match step {
                Step::Fail(m) => Step::Fail(format!("{name}: the error {} {m}", e.describe())),
                skip => skip,
            })?;
            Ok(Some(e.into_driver_error()))
        }
        Err(_) => Err(Step::Fail(format!(
            "{name} on {object} failed: {}",
            e.describe()
        ))),
    }
}

fn check_result(expected: &Bson, output: &Output, lookup: &dyn Lookup) -> Result<(), String> {
    match (expected, &output.value) {
        // Cursor results: equal length, each document a root-level document.
        (Bson::Array(exp), Some(Bson::Array(act))) if output.iterable => {
            if exp.len() != act.len() {
                return Err(format!(
                    "expected {} documents {}, got {} {}",
                    exp.len(),
                    short(expected),
                    act.len(),
                    short(&Bson::Array(act.clone()))
                ));
            }
            for (i, (e, a)) in exp.iter().zip(act).enumerate() {
                matches(e, Some(a), true, lookup).map_err(|m| format!("document {i}: {m}"))?;
            }
            Ok(())
        }
        (_, actual) => matches(expected, actual.as_ref(), true, lookup),
    }
}

/// A failed operation as `expectError` examines it: a driver error, a client-side error of an
/// operation the runner builds itself, or a failed collection-level bulk write of the runner.
pub enum Observed {
    Driver(mongodb::error::Error),
    Client(String),
    Bulk(Box<BulkFailure>),
}

impl Observed {
    /// The driver errors involved: the error and those it wraps, or the command error that
    /// stopped a bulk write.
    fn driver_errors(&self) -> Vec<&mongodb::error::Error> {
        match self {
            Observed::Driver(e) => chain(e),
            Observed::Bulk(b) => b.cause.as_ref().map(chain).unwrap_or_default(),
            Observed::Client(_) => Vec::new(),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Observed::Driver(e) => describe_error(e),
            Observed::Client(m) => format!("client-side error: {m}"),
            Observed::Bulk(b) => b.describe(),
        }
    }

    /// The error a `withTransaction` callback hands back to the driver.
    pub fn into_driver_error(self) -> mongodb::error::Error {
        match self {
            Observed::Driver(e) => e,
            Observed::Bulk(b) => match b.cause.clone() {
                Some(cause) => cause,
                None => mongodb::error::Error::custom(b.describe()),
            },
            Observed::Client(m) => mongodb::error::Error::custom(m),
        }
    }

    fn has_label(&self, label: &str) -> bool {
        match self {
            Observed::Driver(e) => e.contains_label(label),
            Observed::Bulk(b) => b.labels.contains(label),
            Observed::Client(_) => false,
        }
    }

    fn labels(&self) -> Vec<String> {
        match self {
            Observed::Driver(e) => e.labels().iter().cloned().collect(),
            Observed::Bulk(b) => b.labels.iter().cloned().collect(),
            Observed::Client(_) => Vec::new(),
        }
    }

    /// Every (code, codeName) the error carries: command errors, write errors, write concern
    /// errors (bulk errors aggregate several).
    fn codes(&self) -> Vec<(i32, String)> {
        let mut out = Vec::new();
        for e in self.driver_errors() {
            match e.kind.as_ref() {
                ErrorKind::Command(c) => out.push((c.code, c.code_name.clone())),
                ErrorKind::Write(WriteFailure::WriteError(w)) => {
                    out.push((w.code, w.code_name.clone().unwrap_or_default()))
                }
                ErrorKind::Write(WriteFailure::WriteConcernError(w)) => {
                    out.push((w.code, w.code_name.clone()))
                }
                ErrorKind::InsertMany(i) => {
                    for w in i.write_errors.iter().flatten() {
                        out.push((w.code, w.code_name.clone().unwrap_or_default()));
                    }
                    if let Some(w) = &i.write_concern_error {
                        out.push((w.code, w.code_name.clone()));
                    }
                }
                ErrorKind::BulkWrite(b) => {
                    for w in b.write_errors.values() {
                        out.push((w.code, w.code_name.clone().unwrap_or_default()));
                    }
                    for w in &b.write_concern_errors {
                        out.push((w.code, w.code_name.clone()));
                    }
                }
                _ => {}
            }
        }
        if let Observed::Bulk(b) = self {
            for w in b.write_errors.values().chain(&b.write_concern_errors) {
                if let Some(code) = w.get("code").and_then(crate::values::as_i64) {
                    out.push((
                        code as i32,
                        w.get_str("codeName").unwrap_or_default().to_string(),
                    ));
                }
            }
        }
        out
    }

    /// Every message the error carries (its display and those of aggregated errors).
    fn messages(&self) -> Vec<String> {
        let mut out = Vec::new();
        for e in self.driver_errors() {
            out.push(e.to_string());
            match e.kind.as_ref() {
                ErrorKind::InsertMany(i) => {
                    out.extend(i.write_errors.iter().flatten().map(|w| w.message.clone()));
                    out.extend(i.write_concern_error.iter().map(|w| w.message.clone()));
                }
                ErrorKind::BulkWrite(b) => {
                    out.extend(b.write_errors.values().map(|w| w.message.clone()));
                    out.extend(b.write_concern_errors.iter().map(|w| w.message.clone()));
                }
                _ => {}
            }
        }
        match self {
            Observed::Client(m) => out.push(m.clone()),
            Observed::Bulk(b) => {
                for w in b.write_errors.values().chain(&b.write_concern_errors) {
                    out.push(w.get_str("errmsg").unwrap_or_default().to_string());
                }
            }
            Observed::Driver(_) => {}
        }
        out
    }

    /// Whether the error comes from a server response (as opposed to the driver or the runner:
    /// argument validation, network errors, ...).
    fn is_server_error(&self) -> bool {
        let from_driver = self.driver_errors().iter().any(|e| {
            matches!(
                e.kind.as_ref(),
                ErrorKind::Command(_)
                    | ErrorKind::Write(_)
                    | ErrorKind::InsertMany(_)
                    | ErrorKind::BulkWrite(_)
            )
        });
        from_driver
            || matches!(self, Observed::Bulk(b)
                if !b.write_errors.is_empty() || !b.write_concern_errors.is_empty())
    }

    fn is_timeout(&self) -> bool {
        self.driver_errors().iter().any(|e| match e.kind.as_ref() {
            ErrorKind::Io(io) => io.kind() == std::io::ErrorKind::TimedOut,
            _ => false,
        })
    }

    fn server_response(&self) -> Option<Document> {
        let raw = self
            .driver_errors()
            .into_iter()
            .find_map(|e| e.server_response())?;
        Document::try_from(raw.clone()).ok()
    }

    /// Write errors by model index and write concern errors, as documents (`code`, `codeName`,
    /// `errmsg`, `errInfo`), when the error is a bulk write error.
    fn bulk_errors(&self) -> Option<(BTreeMap<usize, Document>, Vec<Document>)> {
        if let Observed::Bulk(b) = self {
            return Some((b.write_errors.clone(), b.write_concern_errors.clone()));
        }
        self.driver_errors()
            .into_iter()
            .find_map(|e| match e.kind.as_ref() {
                ErrorKind::BulkWrite(b) => Some(b.clone()),
                _ => None,
            })
            .map(|b| {
                let write_errors = b
                    .write_errors
                    .iter()
                    .map(|(i, w)| {
                        let d = write_error_doc(
                            w.code,
                            w.code_name.as_deref(),
                            &w.message,
                            w.details.as_ref(),
                        );
                        (*i, d)
                    })
                    .collect();
                let wces = b
                    .write_concern_errors
                    .iter()
                    .map(|w| {
                        write_error_doc(w.code, Some(&w.code_name), &w.message, w.details.as_ref())
                    })
                    .collect();
                (write_errors, wces)
            })
    }

    /// The partial result a bulk write error carries.
    fn partial_result(&self) -> Option<Bson> {
        if let Observed::Bulk(b) = self {
            return Some(Bson::Document(b.partial.clone()));
        }
        self.driver_errors()
            .into_iter()
            .find_map(|e| match e.kind.as_ref() {
                ErrorKind::BulkWrite(b) => b.partial_result.as_ref().map(partial_result),
                _ => None,
            })
    }
}

/// A driver error with the server's code, as the messages show it.
pub fn describe_error(e: &mongodb::error::Error) -> String {
    let codes = Observed::Driver(e.clone()).codes();
    if codes.is_empty() {
        e.to_string()
    } else {
        format!(
            "{} [codes {}]",
            e,
            codes
                .iter()
                .map(|(c, n)| format!("{c} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// The error and the errors it wraps.
fn chain(e: &mongodb::error::Error) -> Vec<&mongodb::error::Error> {
    let mut out = vec![e];
    let mut current: &dyn std::error::Error = e;
    while let Some(source) = current.source() {
        if let Some(inner) = source.downcast_ref::<mongodb::error::Error>() {
            out.push(inner);
        }
        current = source;
    }
    out
}

fn write_error_doc(
    code: i32,
    code_name: Option<&str>,
    message: &str,
    details: Option<&Document>,
) -> Document {
    let mut d = doc! {"code": code};
    if let Some(n) = code_name {
        d.insert("codeName", n);
    }
    // Server replies name the text `errmsg`; the client bulk write specification's error
    // documents name it `message`.
    d.insert("errmsg", message);
    d.insert("message", message);
    if let Some(info) = details {
        d.insert("errInfo", info.clone());
    }
    d
}

/// Errors the Rust driver raises by design before anything reaches the server: the test needs
/// something this driver does not offer.
fn driver_limitation(e: &mongodb::error::Error) -> Option<&'static str> {
    match e.kind.as_ref() {
        ErrorKind::InvalidArgument { message, .. }
            if message.contains("Unacknowledged write concerns are not supported") =>
        {
            Some(crate::operations::commands::UNACKNOWLEDGED)
        }
        _ => None,
    }
}

fn check_error(expect: &Document, e: &Observed, lookup: &dyn Lookup) -> Result<(), Step> {
    check_error_fields(expect, e, lookup).map_err(Step::Fail)?;
    if let Some(expected) = expect.get("expectResult") {
        let partial = e.partial_result();
        if partial.is_none()
            && e.driver_errors()
                .iter()
                .any(|e| matches!(e.kind.as_ref(), ErrorKind::InsertMany(_)))
            && matches(expected, None, true, lookup).is_err()
        {
            return Err(Step::Skip(
                "the Rust driver's InsertManyError carries no write result to match \
                 expectError.expectResult against (its inserted ids are private to the driver)"
                    .into(),
            ));
        }
        matches(expected, partial.as_ref(), true, lookup)
            .map_err(|m| Step::Fail(format!("expectResult: {m}")))?;
    }
    Ok(())
}

fn check_error_fields(expect: &Document, e: &Observed, lookup: &dyn Lookup) -> Result<(), String> {
    for (key, value) in expect {
        match key.as_str() {
            "isError" => {}
            "isClientError" => {
                let want = value.as_bool().unwrap_or(true);
                if e.is_server_error() == want {
                    return Err(format!(
                        "is {}a client error",
                        if want { "not " } else { "" }
                    ));
                }
            }
            "isTimeoutError" => {
                let want = value.as_bool().unwrap_or(true);
                if e.is_timeout() != want {
                    return Err(format!("is {}a timeout", if want { "not " } else { "" }));
                }
            }
            "errorContains" => {
                let needle = value.as_str().unwrap_or_default().to_lowercase();
                if !e
                    .messages()
                    .iter()
                    .any(|m| m.to_lowercase().contains(&needle))
                {
                    return Err(format!("does not contain {value}"));
                }
            }
            "errorCode" => {
                let want = crate::values::as_i64(value).unwrap_or(i64::MIN);
                if !e.codes().iter().any(|(c, _)| i64::from(*c) == want) {
                    return Err(format!("does not have code {want}"));
                }
            }
            "errorCodeName" => {
                let want = value.as_str().unwrap_or_default();
                if !e.codes().iter().any(|(_, n)| n.eq_ignore_ascii_case(want)) {
                    return Err(format!("does not have codeName {want}"));
                }
            }
            "errorLabelsContain" => {
                for label in value.as_array().into_iter().flatten() {
                    let label = label.as_str().unwrap_or_default();
                    if !e.has_label(label) {
                        return Err(format!("lacks label {label} (labels {:?})", e.labels()));
                    }
                }
            }
            "errorLabelsOmit" => {
                for label in value.as_array().into_iter().flatten() {
                    let label = label.as_str().unwrap_or_default();
                    if e.has_label(label) {
                        return Err(format!("has label {label}"));
                    }
                }
            }
            "errorResponse" => {
                let response = e.server_response().ok_or("has no server response")?;
                matches(value, Some(&Bson::Document(response)), true, lookup)
                    .map_err(|m| format!("errorResponse: {m}"))?;
            }
            // Checked by check_error, which may have to skip it.
            "expectResult" => {}
            "writeErrors" => {
                let Some((write_errors, _)) = e.bulk_errors() else {
                    return Err("is not a bulk write error (writeErrors)".into());
                };
                let Bson::Document(expected) = value else {
                    return Err(format!("writeErrors is not a document: {value}"));
                };
                if expected.len() != write_errors.len() {
                    return Err(format!(
                        "has {} write errors, expected {}",
                        write_errors.len(),
                        expected.len()
                    ));
                }
                for (index, exp) in expected {
                    let i: usize = index
                        .parse()
                        .map_err(|_| format!("writeErrors key {index} is not an index"))?;
                    let actual = write_errors
                        .get(&i)
                        .ok_or_else(|| format!("has no write error at index {i}"))?;
                    matches(exp, Some(&Bson::Document(actual.clone())), true, lookup)
                        .map_err(|m| format!("writeErrors[{i}]: {m}"))?;
                }
            }
            "writeConcernErrors" => {
                let Some((_, wces)) = e.bulk_errors() else {
                    return Err("is not a bulk write error (writeConcernErrors)".into());
                };
                let expected = value.as_array().cloned().unwrap_or_default();
                if expected.len() != wces.len() {
                    return Err(format!(
                        "has {} write concern errors, expected {}",
                        wces.len(),
                        expected.len()
                    ));
                }
                for (i, (exp, actual)) in expected.iter().zip(&wces).enumerate() {
                    matches(exp, Some(&Bson::Document(actual.clone())), true, lookup)
                        .map_err(|m| format!("writeConcernErrors[{i}]: {m}"))?;
                }
            }
            other => return Err(format!("unsupported expectError field `{other}`")),
        }
    }
    Ok(())
}
