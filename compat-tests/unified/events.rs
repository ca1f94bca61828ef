//! Command monitoring and connection-pool events of client entities: what each client observes
//! (its `observeEvents`, minus `ignoreCommandMonitoringEvents`, `configureFailPoint` and
//! sensitive commands), the checked-out connection count, and `expectEvents` assertions.

use crate::matching::{Lookup, matches};
use crate::values::short;
use mongodb::bson::{Bson, Document};
use mongodb::event::cmap::CmapEvent;
use mongodb::event::command::CommandEvent;
use mongodb::options::ClientOptions;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

/// One observed command monitoring event, reduced to what tests can assert.
#[derive(Clone, Debug)]
pub struct CommandRecord {
    pub kind: &'static str,
    pub command_name: String,
    pub database_name: String,
    /// The command (started) or reply (succeeded); empty for failed events.
    pub body: Document,
    pub has_service_id: bool,
    pub server_connection_id: Option<i64>,
}

/// One observed pool event: its name in the format (`connectionCheckedOutEvent`) and fields.
#[derive(Clone, Debug)]
pub struct CmapRecord {
    pub kind: &'static str,
    pub fields: Document,
}

#[derive(Default)]
struct Log {
    commands: Vec<CommandRecord>,
    /// Every started command, observed or not (for the `*LsidOnLastTwoCommands` assertions).
    all_started: Vec<Document>,
    cmap: Vec<CmapRecord>,
    /// request id → database, since succeeded/failed events do not carry the database.
    databases: HashMap<i32, String>,
}

/// The event sink of one client entity.
pub struct Observer {
    observe: HashSet<String>,
    ignore: HashSet<String>,
    sensitive: bool,
    log: Mutex<Log>,
    checked_out: AtomicI64,
}

/// Commands whose events are hidden unless `observeSensitiveCommands` (command logging and
/// monitoring spec, security section).
const SENSITIVE: &[&str] = &[
    "authenticate",
    "saslstart",
    "saslcontinue",
    "getnonce",
    "createuser",
    "updateuser",
    "copydbgetnonce",
    "copydbsaslstart",
    "copydb",
];

fn is_sensitive(name: &str, command: Option<&Document>) -> bool {
    let lower = name.to_ascii_lowercase();
    if SENSITIVE.contains(&lower.as_str()) {
        return true;
    }
    // hello/isMaster are sensitive only when they carry speculative authentication; the driver
    // redacts those to an empty document.
    (lower == "hello" || lower == "ismaster")
        && command.is_none_or(|c| c.contains_key("speculativeAuthenticate") || c.is_empty())
}

impl Observer {
    pub fn new(observe: Vec<String>, ignore: Vec<String>, sensitive: bool) -> Arc<Observer> {
        Arc::new(Observer {
            observe: observe.into_iter().collect(),
            ignore: ignore.into_iter().collect(),
            sensitive,
            log: Mutex::default(),
            checked_out: AtomicI64::new(0),
        })
    }

    /// Installs the command and pool handlers on client options.
    pub fn install(self: &Arc<Self>, options: &mut ClientOptions) {
        let me = self.clone();
        options.command_event_handler = Some(mongodb::event::EventHandler::callback(
            move |event: CommandEvent| me.on_command(event),
        ));
        let me = self.clone();
        options.cmap_event_handler = Some(mongodb::event::EventHandler::callback(
            move |event: CmapEvent| me.on_cmap(event),
        ));
    }

    fn hidden(&self, name: &str, command: Option<&Document>) -> bool {
        self.ignore.contains(name)
            || name == "configureFailPoint"
            || (!self.sensitive && is_sensitive(name, command))
    }

    fn on_command(&self, event: CommandEvent) {
        let Ok(mut log) = self.log.lock() else {
            return;
        };
        match event {
            CommandEvent::Started(e) => {
                log.databases.insert(e.request_id, e.db.clone());
                if self.hidden(&e.command_name, Some(&e.command)) {
                    return;
                }
                log.all_started.push(e.command.clone());
                if self.observe.contains("commandStartedEvent") {
                    log.commands.push(CommandRecord {
                        kind: "commandStartedEvent",
                        command_name: e.command_name,
                        database_name: e.db,
                        body: e.command,
                        has_service_id: e.service_id.is_some(),
                        server_connection_id: e.connection.server_id,
                    });
                }
            }
            CommandEvent::Succeeded(e) => {
                let db = log.databases.remove(&e.request_id).unwrap_or_default();
                if self.hidden(&e.command_name, None)
                    || !self.observe.contains("commandSucceededEvent")
                {
                    return;
                }
                log.commands.push(CommandRecord {
                    kind: "commandSucceededEvent",
                    command_name: e.command_name,
                    database_name: db,
                    body: e.reply,
                    has_service_id: e.service_id.is_some(),
                    server_connection_id: e.connection.server_id,
                });
            }
            CommandEvent::Failed(e) => {
                let db = log.databases.remove(&e.request_id).unwrap_or_default();
                if self.hidden(&e.command_name, None)
                    || !self.observe.contains("commandFailedEvent")
                {
                    return;
                }
                log.commands.push(CommandRecord {
                    kind: "commandFailedEvent",
                    command_name: e.command_name,
                    database_name: db,
                    body: Document::new(),
                    has_service_id: e.service_id.is_some(),
                    server_connection_id: e.connection.server_id,
                });
            }
            _ => {}
        }
    }

    fn on_cmap(&self, event: CmapEvent) {
        let mut fields = Document::new();
        let kind = match &event {
            CmapEvent::PoolCreated(_) => "poolCreatedEvent",
            CmapEvent::PoolReady(_) => "poolReadyEvent",
            CmapEvent::PoolCleared(e) => {
                fields.insert("hasServiceId", e.service_id.is_some());
                fields.insert("interruptInUseConnections", e.interrupt_in_use_connections);
                "poolClearedEvent"
            }
            CmapEvent::PoolClosed(_) => "poolClosedEvent",
            CmapEvent::ConnectionCreated(_) => "connectionCreatedEvent",
            CmapEvent::ConnectionReady(_) => "connectionReadyEvent",
            CmapEvent::ConnectionClosed(e) => {
                fields.insert("reason", format!("{:?}", e.reason).to_ascii_lowercase());
                "connectionClosedEvent"
            }
            CmapEvent::ConnectionCheckoutStarted(_) => "connectionCheckOutStartedEvent",
            CmapEvent::ConnectionCheckoutFailed(e) => {
                fields.insert("reason", format!("{:?}", e.reason).to_ascii_lowercase());
                "connectionCheckOutFailedEvent"
            }
            CmapEvent::ConnectionCheckedOut(_) => {
                self.checked_out.fetch_add(1, Ordering::SeqCst);
                "connectionCheckedOutEvent"
            }
            CmapEvent::ConnectionCheckedIn(_) => {
                self.checked_out.fetch_sub(1, Ordering::SeqCst);
                "connectionCheckedInEvent"
            }
            _ => return,
        };
        if !self.observe.contains(kind) {
            return;
        }
        if let Ok(mut log) = self.log.lock() {
            log.cmap.push(CmapRecord { kind, fields });
        }
    }

    pub fn checked_out(&self) -> i64 {
        self.checked_out.load(Ordering::SeqCst)
    }

    pub fn commands(&self) -> Vec<CommandRecord> {
        self.log
            .lock()
            .map(|l| l.commands.clone())
            .unwrap_or_default()
    }

    pub fn cmap(&self) -> Vec<CmapRecord> {
        self.log.lock().map(|l| l.cmap.clone()).unwrap_or_default()
    }

    pub fn last_two_started(&self) -> Option<(Document, Document)> {
        let log = self.log.lock().ok()?;
        let n = log.all_started.len();
        (n >= 2).then(|| {
            (
                log.all_started[n - 2].clone(),
                log.all_started[n - 1].clone(),
            )
        })
    }
}

/// Asserts one `expectedEventsForClient` against what the client observed.
pub fn check_expected(
    spec: &Document,
    observer: &Observer,
    lookup: &dyn Lookup,
) -> Result<(), String> {
    let event_type = spec.get_str("eventType").unwrap_or("command");
    let ignore_extra = spec.get_bool("ignoreExtraEvents").unwrap_or(false);
    let expected = spec
        .get_array("events")
        .map_err(|_| "expectEvents entry without an events array".to_string())?;
    let client = spec.get_str("client").unwrap_or("?");
    match event_type {
        "command" => {
            let actual = observer.commands();
            check_count(client, expected.len(), actual.len(), ignore_extra, || {
                actual
                    .iter()
                    .map(|a| format!("{}:{}", a.kind, a.command_name))
                    .collect()
            })?;
            for (i, (exp, act)) in expected.iter().zip(&actual).enumerate() {
                let exp = exp
                    .as_document()
                    .ok_or_else(|| format!("expected event {i} is not a document"))?;
                command_event_matches(exp, act, lookup)
                    .map_err(|e| format!("client {client}, event {i}: {e}"))?;
            }
            Ok(())
        }
        "cmap" => {
            let actual = observer.cmap();
            check_count(client, expected.len(), actual.len(), ignore_extra, || {
                actual.iter().map(|a| a.kind.to_string()).collect()
            })?;
            for (i, (exp, act)) in expected.iter().zip(&actual).enumerate() {
                let exp = exp
                    .as_document()
                    .ok_or_else(|| format!("expected event {i} is not a document"))?;
                let (kind, fields) = exp
                    .iter()
                    .next()
                    .ok_or_else(|| format!("expected event {i} is empty"))?;
                if kind != act.kind {
                    return Err(format!(
                        "client {client}, cmap event {i}: expected {kind}, got {}",
                        act.kind
                    ));
                }
                if let Bson::Document(fields) = fields {
                    for (k, v) in fields {
                        if act
                            .fields
                            .get(k)
                            .is_none_or(|a| !a.to_string().eq_ignore_ascii_case(&v.to_string()))
                        {
                            return Err(format!(
                                "client {client}, cmap event {i} ({kind}): {k} expected {v}, got {:?}",
                                act.fields.get(k)
                            ));
                        }
                    }
                }
            }
            Ok(())
        }
        other => Err(format!("unsupported eventType `{other}`")),
    }
}

fn check_count(
    client: &str,
    expected: usize,
    actual: usize,
    ignore_extra: bool,
    describe: impl Fn() -> Vec<String>,
) -> Result<(), String> {
    let ok = if ignore_extra {
        actual >= expected
    } else {
        actual == expected
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "client {client}: expected {expected} events, observed {actual}: {:?}",
            describe()
        ))
    }
}

fn command_event_matches(
    expected: &Document,
    actual: &CommandRecord,
    lookup: &dyn Lookup,
) -> Result<(), String> {
    let (kind, assertions) = expected
        .iter()
        .next()
        .ok_or_else(|| "empty expected event".to_string())?;
    if kind != actual.kind {
        return Err(format!(
            "expected {kind}, got {} ({})",
            actual.kind, actual.command_name
        ));
    }
    let assertions = assertions
        .as_document()
        .ok_or_else(|| format!("{kind} assertions are not a document"))?;
    for (key, value) in assertions {
        match key.as_str() {
            "commandName" => {
                if value.as_str() != Some(actual.command_name.as_str()) {
                    return Err(format!(
                        "{kind}: commandName expected {value}, got {}",
                        actual.command_name
                    ));
                }
            }
            "databaseName" => {
                if value.as_str() != Some(actual.database_name.as_str()) {
                    return Err(format!(
                        "{kind} {}: databaseName expected {value}, got {}",
                        actual.command_name, actual.database_name
                    ));
                }
            }
            "command" | "reply" => {
                matches(
                    value,
                    Some(&Bson::Document(actual.body.clone())),
                    true,
                    lookup,
                )
                .map_err(|e| {
                    format!(
                        "{kind} {}: {key}: {e}; actual {}",
                        actual.command_name,
                        short(&Bson::Document(actual.body.clone()))
                    )
                })?;
            }
            "hasServiceId" => {
                if value.as_bool() != Some(actual.has_service_id) {
                    return Err(format!(
                        "{kind}: hasServiceId expected {value}, got {}",
                        actual.has_service_id
                    ));
                }
            }
            "hasServerConnectionId" => {
                let has = actual.server_connection_id.is_some_and(|id| id > 0);
                if value.as_bool() != Some(has) {
                    return Err(format!(
                        "{kind}: hasServerConnectionId expected {value}, got {has}"
                    ));
                }
            }
            other => return Err(format!("{kind}: unsupported assertion `{other}`")),
        }
    }
    Ok(())
}
