//! MongoDB's test fail points for the drivers' specification tests: `failCommand` (make chosen
//! commands fail with an error code, a write concern error, a closed connection or a delay) and
//! `maxTimeAlwaysTimeOut` (every command with a `maxTimeMS` expires) — and the pause points
//! the fault tests stop a process at (`hangBeforeDdlPhase`: a DDL coordinator waits before a
//! phase until the point is turned off, so a test can kill the process there;
//! `hangAfterSessionCheckOut`: a command holds its checked-out session; a transaction
//! coordinator's `hangBeforeWritingParticipantList`, `hangBeforeSendingPrepare`,
//! `hangBeforeWritingDecision`, `hangBeforeSendingCommit` (commit or abort) and
//! `hangBeforeDeletingCoordinatorDoc`). Only reachable
//! with test commands enabled.

use crate::command::Args;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// When an armed fail point triggers.
#[derive(Clone, Debug, PartialEq)]
enum Mode {
    Off,
    AlwaysOn,
    /// Trigger this many more times, then turn off.
    Times(u64),
    /// Let this many matching commands through, then trigger every time.
    Skip(u64),
}

/// The `data` of `failCommand`.
#[derive(Clone, Debug, Default, PartialEq)]
struct FailCommandData {
    commands: Vec<String>,
    close_connection: bool,
    error_code: Option<i32>,
    error_labels: Option<Vec<String>>,
    error_extra_info: Option<Document>,
    write_concern_error: Option<Document>,
    block_for: Option<Duration>,
    app_name: Option<String>,
    namespace: Option<String>,
    fail_internal_commands: bool,
}

/// What a triggered `failCommand` does to one command.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// Wait this long before going on (`blockConnection`).
    pub block_for: Option<Duration>,
    pub effect: Effect,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Close the connection without replying.
    CloseConnection,
    /// Answer this error instead of running the command.
    Error(MongoError),
    /// Run the command, then attach this `writeConcernError` (and error labels).
    WriteConcernError {
        error: Document,
        labels: Option<Vec<String>>,
    },
    /// Only the delay.
    None,
}

/// What the command being dispatched looks like to `failCommand`.
pub struct CommandFacts<'a> {
    pub name: &'a str,
    pub namespace: Option<String>,
    pub app_name: Option<String>,
    pub internal: bool,
    pub supports_write_concern: bool,
}

/// The fail points of one process role.
#[derive(Debug, Default)]
pub struct FailPoints {
    /// Fast path: no command pays for the lock while nothing is armed.
    armed: AtomicBool,
    fail_command: Mutex<FailCommandState>,
    /// `maxTimeAlwaysTimeOut`: commands with a `maxTimeMS` fail as if it had expired.
    max_time_always_times_out: Mutex<Option<Mode>>,
    /// Pause points by name: their mode, the facts they match (`data`), and how often they
    /// were entered.
    pauses: Mutex<std::collections::HashMap<String, PauseState>>,
}

#[derive(Debug, Default)]
struct PauseState {
    mode: Option<Mode>,
    data: Document,
    entered: i64,
    /// Bumped by every configuration: a paused task goes on when it changes.
    generation: u64,
}

/// The pause points a process has.
const PAUSE_POINTS: [&str; 10] = [
    "hangBeforeDdlPhase",
    // A migration's donor (`shard::migration::donor`): caught up, before its critical section;
    // inside it, before the config server's commit; after the commit, before its decision is
    // persisted.
    "moveChunkHangAtStep4",
    "moveChunkHangAtStep5",
    "moveChunkHangAtStep6",
    "hangAfterSessionCheckOut",
    // A shard's transaction coordinator, before each step (`shard::txn_coordinator`).
    "hangBeforeWritingParticipantList",
    "hangBeforeSendingPrepare",
    "hangBeforeWritingDecision",
    "hangBeforeSendingCommit",
    "hangBeforeDeletingCoordinatorDoc",
];

#[derive(Debug, Default)]
struct FailCommandState {
    mode: Option<Mode>,
    data: FailCommandData,
    /// How many times the fail point has triggered since the process started.
    entered: i64,
}

/// Commands `failCommand` never fails, so that a test can always turn it off again.
const NEVER_FAILED: [&str; 1] = ["configureFailPoint"];

impl FailPoints {
    /// `configureFailPoint`: arms or disarms a fail point; returns how often it has triggered.
    pub fn configure(&self, args: &Args<'_>) -> Result<i64> {
        let name = match args.target()? {
            bson::RawBsonRef::String(name) => name,
            _ => {
                return Err(MongoError::type_mismatch(
                    "configureFailPoint requires the fail point name as a string",
                ));
            }
        };
        let mode = parse_mode(args.get("mode")?.map(|m| m.to_raw_bson()))?;
        match name {
            "failCommand" => {}
            "maxTimeAlwaysTimeOut" => {
                let mut state = self.max_time_always_times_out.lock().expect("poisoned");
                *state = (mode != Mode::Off).then_some(mode);
                return Ok(0);
            }
            name if PAUSE_POINTS.contains(&name) => {
                let mut pauses = self.pauses.lock().expect("poisoned");
                let pause = pauses.entry(name.to_string()).or_default();
                pause.mode = (mode != Mode::Off).then_some(mode);
                pause.data = args.document("data")?.unwrap_or_default();
                pause.generation += 1;
                return Ok(pause.entered);
            }
            _ => {
                return Err(MongoError::new(
                    ErrorCode::FailPointSetFailed,
                    format!("Cannot find failpoint: {name}"),
                ));
            }
        }
        let data = match args.document("data")? {
            Some(data) => parse_data(&data)?,
            None => FailCommandData::default(),
        };
        let mut state = self.fail_command.lock().expect("poisoned");
        state.mode = (mode != Mode::Off).then_some(mode);
        state.data = data;
        self.armed.store(state.mode.is_some(), Ordering::SeqCst);
        Ok(state.entered)
    }

    /// Whether `maxTimeAlwaysTimeOut` makes this command's time limit expire at once (counting
    /// the trigger).
    pub fn max_time_expires(&self) -> bool {
        let mut state = self.max_time_always_times_out.lock().expect("poisoned");
        match state.clone() {
            None => false,
            Some(Mode::Skip(n)) if n > 0 => {
                *state = Some(Mode::Skip(n - 1));
                false
            }
            Some(Mode::Times(n)) => {
                *state = (n > 1).then_some(Mode::Times(n - 1));
                true
            }
            Some(_) => true,
        }
    }

    /// Pauses while the pause point `name` is on and every field of its `data` equals the
    /// same field of `facts` (a test then kills the process, or turns the point off).
    pub async fn pause_if(&self, name: &str, facts: &Document) {
        let paused_in = {
            let mut pauses = self.pauses.lock().expect("poisoned");
            match pauses.get_mut(name) {
                Some(pause)
                    if pause.mode.is_some()
                        && pause.data.iter().all(|(k, v)| facts.get(k) == Some(v)) =>
                {
                    if let Some(Mode::Times(n)) = pause.mode {
                        pause.mode = (n > 1).then_some(Mode::Times(n - 1));
                    }
                    pause.entered += 1;
                    pause.generation
                }
                _ => return,
            }
        };
        tracing::warn!(fail_point = name, facts = %facts, "paused at a fail point");
        // Test-only: polling keeps the fail point table free of wakers.
        while self.pause_generation(name) == paused_in {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn pause_generation(&self, name: &str) -> u64 {
        let pauses = self.pauses.lock().expect("poisoned");
        pauses.get(name).map_or(0, |p| p.generation)
    }

    /// How often the fail point `name` has been entered (`waitForFailPoint`).
    pub fn times_entered(&self, name: &str) -> Result<i64> {
        if name == "failCommand" {
            return Ok(self.fail_command.lock().expect("poisoned").entered);
        }
        if !PAUSE_POINTS.contains(&name) {
            return Err(MongoError::new(
                ErrorCode::FailPointSetFailed,
                format!("Cannot find failpoint: {name}"),
            ));
        }
        let pauses = self.pauses.lock().expect("poisoned");
        Ok(pauses.get(name).map_or(0, |p| p.entered))
    }

    /// Whether any fail point is armed.
    pub fn armed(&self) -> bool {
        self.armed.load(Ordering::Relaxed)
    }

    /// Decides whether the command is failed, counting the trigger.
    pub fn evaluate(&self, facts: &CommandFacts<'_>) -> Option<Failure> {
        let mut state = self.fail_command.lock().expect("poisoned");
        let mode = state.mode.clone()?;
        let data = &state.data;
        let applies = !NEVER_FAILED.contains(&facts.name)
            && data.commands.iter().any(|c| c == facts.name)
            && (!facts.internal || data.fail_internal_commands)
            && data
                .app_name
                .as_ref()
                .is_none_or(|a| facts.app_name.as_deref() == Some(a.as_str()))
            && data
                .namespace
                .as_ref()
                .is_none_or(|ns| facts.namespace.as_deref() == Some(ns.as_str()));
        // A fail point that only adds a write concern error ignores commands without one.
        let only_write_concern_error = data.write_concern_error.is_some()
            && data.error_code.is_none()
            && !data.close_connection;
        if !applies || (only_write_concern_error && !facts.supports_write_concern) {
            return None;
        }
        match mode {
            Mode::Skip(n) if n > 0 => {
                state.mode = Some(Mode::Skip(n - 1));
                return None;
            }
            Mode::Times(n) => {
                state.mode = (n > 1).then_some(Mode::Times(n - 1));
                self.armed.store(state.mode.is_some(), Ordering::SeqCst);
            }
            _ => {}
        }
        state.entered += 1;
        let data = &state.data;
        let effect = if data.close_connection {
            Effect::CloseConnection
        } else if let Some(code) = data.error_code {
            let mut error = MongoError::new(
                ErrorCode::from_code(code),
                "Failing command via 'failCommand' failpoint",
            );
            if let Some(extra) = &data.error_extra_info {
                error = error.with_extra(extra.clone());
            }
            for label in data.error_labels.iter().flatten() {
                error = error.with_label(label.clone());
            }
            Effect::Error(error)
        } else if let Some(wce) = &data.write_concern_error {
            Effect::WriteConcernError {
                error: wce.clone(),
                labels: data.error_labels.clone(),
            }
        } else {
            Effect::None
        };
        Some(Failure {
            block_for: data.block_for,
            effect,
        })
    }
}

fn parse_mode(mode: Option<bson::RawBson>) -> Result<Mode> {
    let bad =
        || MongoError::bad_value("'mode' must be one of 'off', 'alwaysOn', 'times', and 'skip'");
    let mode = mode.map(Bson::try_from).transpose()?.ok_or_else(bad)?;
    let count = |v: &Bson| match v {
        Bson::Int32(n) if *n >= 0 => Ok(*n as u64),
        Bson::Int64(n) if *n >= 0 => Ok(*n as u64),
        Bson::Double(n) if *n >= 0.0 && n.fract() == 0.0 => Ok(*n as u64),
        _ => Err(MongoError::bad_value(
            "'times' and 'skip' must be non-negative integers",
        )),
    };
    match &mode {
        Bson::String(s) if s == "off" => Ok(Mode::Off),
        Bson::String(s) if s == "alwaysOn" => Ok(Mode::AlwaysOn),
        Bson::Document(d) => match (d.get("times"), d.get("skip")) {
            (Some(t), None) => Ok(match count(t)? {
                0 => Mode::Off,
                n => Mode::Times(n),
            }),
            (None, Some(s)) => Ok(Mode::Skip(count(s)?)),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}

fn parse_data(data: &Document) -> Result<FailCommandData> {
    let strings = |key: &str| -> Result<Option<Vec<String>>> {
        match data.get(key) {
            None => Ok(None),
            Some(Bson::Array(items)) => items
                .iter()
                .map(|i| {
                    i.as_str().map(String::from).ok_or_else(|| {
                        MongoError::bad_value(format!("'{key}' must be an array of strings"))
                    })
                })
                .collect::<Result<Vec<_>>>()
                .map(Some),
            Some(_) => Err(MongoError::bad_value(format!(
                "'{key}' must be an array of strings"
            ))),
        }
    };
    let int = |key: &str| match data.get(key) {
        Some(Bson::Int32(n)) => Some(i64::from(*n)),
        Some(Bson::Int64(n)) => Some(*n),
        Some(Bson::Double(n)) => Some(*n as i64),
        _ => None,
    };
    let flag = |key: &str| matches!(data.get(key), Some(Bson::Boolean(true)));
    let commands = strings("failCommands")?
        .ok_or_else(|| MongoError::bad_value("'failCommands' must be an array of command names"))?;
    Ok(FailCommandData {
        commands,
        close_connection: flag("closeConnection"),
        error_code: int("errorCode").map(|c| c as i32),
        error_labels: strings("errorLabels")?,
        error_extra_info: data.get_document("errorExtraInfo").ok().cloned(),
        write_concern_error: data.get_document("writeConcernError").ok().cloned(),
        block_for: flag("blockConnection")
            .then(|| Duration::from_millis(int("blockTimeMS").unwrap_or(0).max(0) as u64)),
        app_name: data.get_str("appName").ok().map(String::from),
        namespace: data.get_str("namespace").ok().map(String::from),
        fail_internal_commands: flag("failInternalCommands"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn configure(fp: &FailPoints, body: bson::RawDocumentBuf) -> Result<i64> {
        fp.configure(&Args::new("configureFailPoint", &body))
    }

    fn facts(name: &str) -> CommandFacts<'_> {
        CommandFacts {
            name,
            namespace: Some("db.c".into()),
            app_name: None,
            internal: false,
            supports_write_concern: name == "insert",
        }
    }

    #[test]
    fn times_and_skip_count_only_matching_commands() {
        let fp = FailPoints::default();
        configure(&fp, rawdoc! {"configureFailPoint": "failCommand", "mode": {"times": 2}, "data": {"failCommands": ["ping"], "errorCode": 2}}).unwrap();
        assert!(fp.evaluate(&facts("find")).is_none());
        assert!(matches!(
            fp.evaluate(&facts("ping")).unwrap().effect,
            Effect::Error(_)
        ));
        assert!(fp.evaluate(&facts("ping")).is_some());
        assert!(fp.evaluate(&facts("ping")).is_none());
        configure(&fp, rawdoc! {"configureFailPoint": "failCommand", "mode": {"skip": 1}, "data": {"failCommands": ["ping"], "closeConnection": true}}).unwrap();
        assert!(fp.evaluate(&facts("ping")).is_none());
        assert_eq!(
            fp.evaluate(&facts("ping")).unwrap().effect,
            Effect::CloseConnection
        );
        let count = configure(
            &fp,
            rawdoc! {"configureFailPoint": "failCommand", "mode": "off"},
        )
        .unwrap();
        assert_eq!(count, 3);
        assert!(fp.evaluate(&facts("ping")).is_none());
    }

    #[test]
    fn errors_carry_labels_and_extra_info_and_filters_apply() {
        let fp = FailPoints::default();
        configure(&fp, rawdoc! {"configureFailPoint": "failCommand", "mode": "alwaysOn", "data": {
            "failCommands": ["create", "configureFailPoint"], "errorCode": 227, "errorLabels": ["Foo"],
            "errorExtraInfo": {"ns": "namespace"}, "appName": "app", "namespace": "db.c"}}).unwrap();
        assert!(
            fp.evaluate(&facts("create")).is_none(),
            "appName does not match"
        );
        let mut f = facts("create");
        f.app_name = Some("app".into());
        let Effect::Error(e) = fp.evaluate(&f).unwrap().effect else {
            panic!("an error")
        };
        let reply = e.to_reply();
        assert_eq!(reply.get_i32("code").unwrap(), 227);
        assert_eq!(reply.get_str("ns").unwrap(), "namespace");
        assert_eq!(
            reply.get_array("errorLabels").unwrap(),
            &vec![Bson::String("Foo".into())]
        );
        let mut f = facts("configureFailPoint");
        f.app_name = Some("app".into());
        assert!(
            fp.evaluate(&f).is_none(),
            "configureFailPoint is never failed"
        );
    }

    #[test]
    fn write_concern_errors_skip_commands_without_write_concern() {
        let fp = FailPoints::default();
        configure(&fp, rawdoc! {"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": {
            "failCommands": ["insert", "ping"], "writeConcernError": {"code": 12345, "errmsg": "hello"}}}).unwrap();
        assert!(fp.evaluate(&facts("ping")).is_none());
        assert!(matches!(
            fp.evaluate(&facts("insert")).unwrap().effect,
            Effect::WriteConcernError { .. }
        ));
        assert!(fp.evaluate(&facts("insert")).is_none());
        assert!(
            configure(
                &fp,
                rawdoc! {"configureFailPoint": "noSuchFailPoint", "mode": "off"}
            )
            .is_err()
        );
    }
}
