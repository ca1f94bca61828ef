//! What a run found: each workload's outcome beside its ceiling, the targets judged
//! against them, printed as tables and written as one JSON file per run with the machine's facts.

use crate::measure::Timing;
use crate::rss::Rss;
use serde_json::{Value, json};
use std::time::Duration;

/// A ceiling component measured in this run: a TCP ping-pong or a raw sqlx operation.
#[derive(Clone, Debug)]
pub struct Part {
    pub name: String,
    /// Items (the workload's unit) per second.
    pub per_second: f64,
    pub p50: Duration,
}

impl Part {
    /// `timing` whose every operation did `items` of the workload's units.
    pub fn new(name: impl Into<String>, timing: &Timing, items: f64) -> Part {
        Part {
            name: name.into(),
            per_second: timing.per_second() * items,
            p50: timing.p50(),
        }
    }
}

/// The ceiling of a workload: its parts done one after the other, `weight` times each per
/// item (the network round trip and the storage work of one read, for instance), so an item
/// costs the sum of the parts' costs per item.
#[derive(Clone, Debug)]
pub struct Ceiling {
    pub parts: Vec<(f64, Part)>,
}

impl Ceiling {
    pub fn of(parts: Vec<(f64, Part)>) -> Ceiling {
        Ceiling { parts }
    }

    pub fn per_second(&self) -> f64 {
        1.0 / self
            .parts
            .iter()
            .map(|(w, p)| w / p.per_second.max(1e-9))
            .sum::<f64>()
    }

    pub fn p50(&self) -> Duration {
        self.parts.iter().map(|(w, p)| p.p50.mul_f64(*w)).sum()
    }

    /// The throughput of the part whose name starts with `prefix`.
    pub fn part(&self, prefix: &str) -> Option<&Part> {
        self.parts
            .iter()
            .map(|(_, p)| p)
            .find(|p| p.name.starts_with(prefix))
    }

    fn json(&self) -> Value {
        json!({
            "per_second": self.per_second(),
            "p50_us": self.p50().as_micros() as u64,
            "parts": self.parts.iter().map(|(w, p)| json!({
                "name": p.name, "weight": w, "per_second": p.per_second,
                "p50_us": p.p50.as_micros() as u64,
            })).collect::<Vec<_>>(),
        })
    }
}

/// One workload in one mode.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub id: String,
    pub name: String,
    /// `dev` (one process) or `processes`.
    pub mode: &'static str,
    pub unit: &'static str,
    /// Units per timed operation (documents per batch for W1).
    pub items: f64,
    pub timing: Timing,
    pub rss: Rss,
    pub ceiling: Option<Ceiling>,
    pub extra: serde_json::Map<String, Value>,
}

impl Outcome {
    pub fn per_second(&self) -> f64 {
        self.timing.per_second() * self.items
    }

    /// Our throughput as a fraction of the ceiling's.
    pub fn ratio(&self) -> Option<f64> {
        self.ceiling
            .as_ref()
            .map(|c| self.per_second() / c.per_second())
    }

    fn json(&self) -> Value {
        let mut v = json!({
            "id": self.id,
            "workload": self.name,
            "mode": self.mode,
            "unit": self.unit,
            "ops": self.timing.ops,
            "items_per_op": self.items,
            "seconds": self.timing.elapsed.as_secs_f64(),
            "per_second": self.per_second(),
            "p50_us": self.timing.p50().as_micros() as u64,
            "p99_us": self.timing.p99().as_micros() as u64,
            "peak_rss_kib": self.rss.peak_kib,
            "rss_after_kib": self.rss.after_kib,
            "ceiling": self.ceiling.as_ref().map(Ceiling::json),
            "ratio_to_ceiling": self.ratio(),
        });
        v.as_object_mut()
            .expect("an object")
            .extend(self.extra.clone());
        v
    }
}

/// A target of the issue and whether this run met it.
pub struct Target {
    pub what: String,
    pub goal: String,
    pub measured: String,
    /// `None`: not measured in this run.
    pub met: Option<bool>,
}

/// Everything a run produced.
#[derive(Default)]
pub struct Report {
    pub outcomes: Vec<Outcome>,
    pub targets: Vec<Target>,
    /// Free-form facts (idle RSS, router hop, scale ratios, RSS scopes).
    pub facts: serde_json::Map<String, Value>,
}

impl Report {
    /// Records an outcome, telling the console (a full run takes long).
    pub fn push(&mut self, o: Outcome) {
        eprintln!(
            "{} {} ({}): {:.0} {}/s, p50 {} µs, ratio to ceiling {}",
            o.id,
            o.name,
            o.mode,
            o.per_second(),
            o.unit,
            o.timing.p50().as_micros(),
            o.ratio()
                .map(|r| format!("{r:.2}"))
                .unwrap_or_else(|| "-".into()),
        );
        self.outcomes.push(o);
    }

    pub fn find(&self, id: &str, mode: &str) -> Option<&Outcome> {
        self.outcomes.iter().find(|o| o.id == id && o.mode == mode)
    }

    pub fn print(&self) {
        println!();
        println!(
            "{:<7} {:<46} {:<9} {:>14} {:>10} {:>10} {:>9} {:>14} {:>7}",
            "id",
            "workload",
            "mode",
            "per second",
            "p50 µs",
            "p99 µs",
            "peak MiB",
            "ceiling /s",
            "ratio"
        );
        for o in &self.outcomes {
            println!(
                "{:<7} {:<46} {:<9} {:>14} {:>10} {:>10} {:>9.0} {:>14} {:>7}",
                o.id,
                o.name,
                o.mode,
                format!("{:.0} {}", o.per_second(), o.unit),
                o.timing.p50().as_micros(),
                o.timing.p99().as_micros(),
                o.rss.peak_kib as f64 / 1024.0,
                o.ceiling
                    .as_ref()
                    .map(|c| format!("{:.0}", c.per_second()))
                    .unwrap_or_default(),
                o.ratio().map(|r| format!("{r:.2}")).unwrap_or_default(),
            );
        }
        println!();
        println!("{:<58} {:<22} {:<34} result", "target", "goal", "measured");
        for t in &self.targets {
            let result = match t.met {
                Some(true) => "met",
                Some(false) => "NOT met",
                None => "not measured",
            };
            println!("{:<58} {:<22} {:<34} {result}", t.what, t.goal, t.measured);
        }
        println!();
        for (k, v) in &self.facts {
            println!("{k}: {v}");
        }
    }

    pub fn json(&self, config: Value) -> Value {
        json!({
            "machine": machine(),
            "config": config,
            "results": self.outcomes.iter().map(Outcome::json).collect::<Vec<_>>(),
            "targets": self.targets.iter().map(|t| json!({
                "target": t.what, "goal": t.goal, "measured": t.measured, "met": t.met,
            })).collect::<Vec<_>>(),
            "facts": self.facts,
        })
    }

    /// Writes the JSON to `bench-results/cluster-<date>.json`; returns the path.
    pub fn write(&self, config: Value) -> anyhow::Result<String> {
        std::fs::create_dir_all("bench-results")?;
        let stamp = now_rfc3339().replace(':', "-");
        let path = format!("bench-results/cluster-{stamp}.json");
        std::fs::write(&path, serde_json::to_string_pretty(&self.json(config))?)?;
        Ok(path)
    }
}

fn now_rfc3339() -> String {
    mongodb::bson::DateTime::now()
        .try_to_rfc3339_string()
        .unwrap_or_default()
}

/// The machine and the moment: CPU, cores, memory, kernel, load, build profile, date.
pub fn machine() -> Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let meminfo = read("/proc/meminfo");
    let field = |text: &str, name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split(':').nth(1))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    json!({
        "date": now_rfc3339(),
        "cpu": field(&cpuinfo, "model name"),
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "memory": field(&meminfo, "MemTotal"),
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        "loadavg": read("/proc/loadavg").trim(),
        "build": if cfg!(debug_assertions) { "dev profile (debug assertions)" } else { "optimized (bench/release profile)" },
    })
}

impl Outcome {
    pub fn new(
        id: &str,
        name: &str,
        mode: &'static str,
        unit: &'static str,
        run: (Timing, Rss),
    ) -> Outcome {
        Outcome {
            id: id.into(),
            name: name.into(),
            mode,
            unit,
            items: 1.0,
            timing: run.0,
            rss: run.1,
            ceiling: None,
            extra: serde_json::Map::new(),
        }
    }

    /// Each timed operation did `items` units (a batch, a whole collection).
    pub fn items(mut self, items: usize) -> Outcome {
        self.items = items as f64;
        self
    }

    pub fn ceiling(mut self, ceiling: Ceiling) -> Outcome {
        self.ceiling = Some(ceiling);
        self
    }

    /// [`ceiling`](Self::ceiling) when this run measured it.
    pub fn ceiling_if(self, ceiling: &Option<Ceiling>) -> Outcome {
        match ceiling {
            Some(c) => self.ceiling(c.clone()),
            None => self,
        }
    }

    pub fn with(mut self, key: &str, value: Value) -> Outcome {
        self.extra.insert(key.into(), value);
        self
    }
}
