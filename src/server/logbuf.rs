//! Recent log lines kept in memory for `getLog`, in MongoDB's structured (JSON) log format.

use serde_json::{Map, Value, json};
use std::collections::VecDeque;
use std::fmt::Debug;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::Context;

/// MongoDB keeps the last 1024 lines of the `global` log.
const CAPACITY: usize = 1024;

/// The `global` and `startupWarnings` logs.
#[derive(Debug, Default)]
pub struct LogBuffer {
    lines: Mutex<VecDeque<String>>,
    total: AtomicI64,
    startup_warnings: Mutex<Vec<String>>,
}

impl LogBuffer {
    pub fn push(&self, line: String) {
        let mut lines = self.lines.lock().expect("poisoned");
        if lines.len() == CAPACITY {
            lines.pop_front();
        }
        lines.push_back(line);
        self.total.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a startup warning (also written to the global log).
    pub fn startup_warning(&self, component: &str, id: i64, msg: &str) {
        let line = format_line("W", component, id, "initandlisten", msg, Map::new());
        self.startup_warnings
            .lock()
            .expect("poisoned")
            .push(line.clone());
        self.push(line);
    }

    /// `(totalLinesWritten, lines)` of a named log, or `None` for an unknown name.
    pub fn get(&self, name: &str) -> Option<(i64, Vec<String>)> {
        match name {
            "global" => {
                let lines = self.lines.lock().expect("poisoned");
                Some((
                    self.total.load(Ordering::Relaxed),
                    lines.iter().cloned().collect(),
                ))
            }
            "startupWarnings" => {
                let lines = self.startup_warnings.lock().expect("poisoned");
                Some((lines.len() as i64, lines.clone()))
            }
            _ => None,
        }
    }

    pub fn names() -> [&'static str; 2] {
        ["global", "startupWarnings"]
    }
}

fn format_line(
    severity: &str,
    component: &str,
    id: i64,
    ctx: &str,
    msg: &str,
    attr: Map<String, Value>,
) -> String {
    let now = bson::DateTime::now()
        .try_to_rfc3339_string()
        .unwrap_or_default();
    let mut line = json!({
        "t": {"$date": now},
        "s": severity,
        "c": component,
        "id": id,
        "ctx": ctx,
        "msg": msg,
    });
    if !attr.is_empty() {
        line["attr"] = Value::Object(attr);
    }
    line.to_string()
}

/// A `tracing` layer that copies events into a [`LogBuffer`].
pub struct LogLayer(pub std::sync::Arc<LogBuffer>);

#[derive(Default)]
struct Fields {
    message: String,
    attr: Map<String, Value>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_string();
        } else {
            self.attr
                .insert(field.name().to_string(), Value::String(value.to_string()));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.attr.insert(field.name().to_string(), json!(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.attr.insert(field.name().to_string(), json!(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.attr.insert(field.name().to_string(), json!(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.attr.insert(
                field.name().to_string(),
                Value::String(format!("{value:?}")),
            );
        }
    }
}

impl<S: Subscriber> tracing_subscriber::Layer<S> for LogLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let meta = event.metadata();
        let severity = match *meta.level() {
            Level::ERROR => "E",
            Level::WARN => "W",
            Level::INFO => "I",
            Level::DEBUG | Level::TRACE => "D1",
        };
        let mut fields = Fields::default();
        event.record(&mut fields);
        let component = meta
            .target()
            .rsplit("::")
            .next()
            .unwrap_or("-")
            .to_uppercase();
        self.0.push(format_line(
            severity,
            &component,
            0,
            "-",
            &fields.message,
            fields.attr,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines_and_counts_all() {
        let log = LogBuffer::default();
        for i in 0..(CAPACITY + 5) {
            log.push(format!("{i}"));
        }
        let (total, lines) = log.get("global").unwrap();
        assert_eq!(total, (CAPACITY + 5) as i64);
        assert_eq!(lines.len(), CAPACITY);
        assert_eq!(lines[0], "5");
        log.startup_warning("CONTROL", 22120, "Access control is not enabled");
        let (n, warnings) = log.get("startupWarnings").unwrap();
        assert_eq!(n, 1);
        let parsed: Value = serde_json::from_str(&warnings[0]).unwrap();
        assert_eq!(parsed["s"], "W");
        assert!(log.get("nope").is_none());
    }
}
