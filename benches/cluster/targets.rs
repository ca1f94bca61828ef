//! The targets of the performance issue, judged against a run's report.

use crate::report::{Outcome, Report, Target};
use serde_json::Value;

const MIB: f64 = 1024.0;

pub fn judge(report: &Report) -> Vec<Target> {
    let mut targets = Vec::new();
    let outcome = |id: &str, mode: &str, name: &str| -> Option<&Outcome> {
        report
            .outcomes
            .iter()
            .find(|o| o.id == id && o.mode == mode && o.name.contains(name))
    };
    let mut throughput = |what: &str, o: Option<&Outcome>, goal: f64| {
        targets.push(Target {
            what: what.into(),
            goal: format!("≥ {goal:.0}/s"),
            measured: o
                .map(|o| format!("{:.0} {}/s", o.per_second(), o.unit))
                .unwrap_or_default(),
            met: o.map(|o| o.per_second() >= goal),
        })
    };
    throughput("W1 insert_many (dev)", outcome("W1", "dev", ""), 400_000.0);
    throughput(
        "W2 find by _id, 1 client (dev)",
        outcome("W2", "dev", ""),
        15_000.0,
    );
    throughput(
        "W2 find by _id via a router process",
        outcome("W2", "processes", "via router"),
        8_000.0,
    );
    throughput(
        "W3 find by _id, 16 clients (dev)",
        outcome("W3", "dev", ""),
        30_000.0,
    );

    let w1 = outcome("W1", "dev", "");
    let sqlx = w1.and_then(|o| Some((o, o.ceiling.as_ref()?.part("sqlx")?.per_second)));
    targets.push(Target {
        what: "W1 vs the raw-sqlx multi-row insert ceiling".into(),
        goal: "≥ 50 %".into(),
        measured: sqlx
            .map(|(o, c)| {
                format!(
                    "{:.1} % ({:.0} of {c:.0} docs/s)",
                    100.0 * o.per_second() / c,
                    o.per_second()
                )
            })
            .unwrap_or_default(),
        met: sqlx.map(|(o, c)| o.per_second() / c >= 0.5),
    });

    // Retryable writes against the same writes without them, in the same run.
    for name in ["insert_many", "YCSB A"] {
        let o = outcome("W11", "dev", name);
        let pair =
            o.and_then(|o| Some((o, o.ceiling.as_ref()?.part("the same without")?.per_second)));
        targets.push(Target {
            what: format!("W11 {name}: cost of retryable writes"),
            goal: "≤ 10 %".into(),
            measured: pair
                .map(|(o, plain)| {
                    format!(
                        "{:.1} % ({:.0} vs {plain:.0} {}/s)",
                        100.0 * (1.0 - o.per_second() / plain),
                        o.per_second(),
                        o.unit
                    )
                })
                .unwrap_or_default(),
            met: pair.map(|(o, plain)| o.per_second() >= 0.9 * plain),
        });
    }

    // A dev workload's p50 against the part of its ceiling named `part`: at most `limit`×.
    for (id, part, what, goal, limit) in [
        (
            "W14",
            "the same find",
            "W14 case-insensitive find through a collation index",
            "p50 ≤ 1.5× the simple-collation find",
            1.5,
        ),
        (
            "W15",
            "the same document",
            "W15 $text search through a text index",
            "p50 ≤ 1.5× the equality find",
            1.5,
        ),
        (
            "W16",
            "the equality find",
            "W16 $near, 10 nearest of 1M points",
            "p50 ≤ 3× the equality find",
            3.0,
        ),
    ] {
        let o = outcome(id, "dev", "");
        let ceiling = o.and_then(|o| o.ceiling.as_ref()?.part(part));
        let ratio = o
            .zip(ceiling)
            .map(|(o, s)| o.timing.p50().as_secs_f64() / s.p50.as_secs_f64().max(1e-9));
        targets.push(Target {
            what: what.into(),
            goal: goal.into(),
            measured: ratio.map(|x| format!("{x:.2}×")).unwrap_or_default(),
            met: ratio.map(|x| x <= limit),
        });
    }

    let mut hop = |what: &str, router: Option<&Outcome>, direct: Option<&Outcome>| {
        let pair = router.zip(direct);
        let ratio = pair
            .map(|(r, d)| r.timing.p50().as_secs_f64() / d.timing.p50().as_secs_f64().max(1e-9));
        targets.push(Target {
            what: what.into(),
            goal: "p50 ≤ 1.5× direct".into(),
            measured: pair
                .zip(ratio)
                .map(|((r, d), x)| {
                    format!(
                        "{x:.2}× ({} vs {} µs)",
                        r.timing.p50().as_micros(),
                        d.timing.p50().as_micros()
                    )
                })
                .unwrap_or_default(),
            met: ratio.map(|x| x <= 1.5),
        });
    };
    hop(
        "router hop, unsharded find by _id (processes)",
        outcome("W2", "processes", "via router"),
        outcome("W2", "processes", "straight"),
    );
    hop(
        "router hop, sharded find by _id (processes)",
        outcome("W9hop", "processes", "router"),
        outcome("W9hop", "processes", "straight"),
    );

    let scale: Vec<&Outcome> = report
        .outcomes
        .iter()
        .filter(|o| o.id.starts_with("W10/"))
        .collect();
    for (workload, prefix) in [("W2", "W2 at"), ("W4", "W4 at")] {
        let runs: Vec<&&Outcome> = scale
            .iter()
            .filter(|o| o.name.starts_with(prefix))
            .collect();
        let ends = runs.first().zip(runs.last()).filter(|_| runs.len() > 1);
        let ratio = ends
            .map(|(a, b)| b.timing.p50().as_secs_f64() / a.timing.p50().as_secs_f64().max(1e-9));
        targets.push(Target {
            what: format!(
                "W10 {workload} p50, {} vs {} documents",
                ends.map(|(_, b)| size_of(&b.name, prefix)).unwrap_or("10M"),
                ends.map(|(a, _)| size_of(&a.name, prefix)).unwrap_or("10k"),
            ),
            goal: "≤ 1.3× (at 10M vs 10k)".into(),
            measured: ends
                .zip(ratio)
                .map(|((a, b), x)| {
                    format!(
                        "{x:.2}× ({} vs {} µs)",
                        b.timing.p50().as_micros(),
                        a.timing.p50().as_micros()
                    )
                })
                .unwrap_or_default(),
            met: ratio.map(|x| x <= 1.3),
        });
    }

    for (what, key) in [
        (
            "idle RSS, separate processes (sum)",
            "idle_rss_processes_kib",
        ),
        ("idle RSS, dev (the bench process)", "idle_rss_dev_kib"),
    ] {
        let kib = report.facts.get(key).and_then(|v| v["kib"].as_u64());
        targets.push(Target {
            what: what.into(),
            goal: "≤ 150 MB".into(),
            measured: kib
                .map(|k| format!("{:.0} MiB", k as f64 / MIB))
                .unwrap_or_default(),
            met: kib.map(|k| k as f64 * 1024.0 <= 150e6),
        });
    }
    for (what, key) in [
        (
            "RSS under W3 returned after the load (processes)",
            "w3_rss_processes_kib",
        ),
        (
            "RSS under W3 returned after the load (dev)",
            "w3_rss_dev_kib",
        ),
    ] {
        let fact: Option<&Value> = report.facts.get(key);
        let figures = fact.and_then(|f| {
            Some((
                f["before"].as_u64()?,
                f["peak"].as_u64()?,
                f["settled"].as_u64()?,
                f["settle_secs"].as_u64()?,
            ))
        });
        let settle = figures.map(|f| f.3).unwrap_or(0);
        targets.push(Target {
            what: what.into(),
            goal: format!("{settle} s after ≤ before + 10%"),
            measured: figures
                .map(|(b, p, a, _)| {
                    format!(
                        "{:.0} → peak {:.0} → {:.0} MiB",
                        b as f64 / MIB,
                        p as f64 / MIB,
                        a as f64 / MIB
                    )
                })
                .unwrap_or_default(),
            met: figures.map(|(b, _, a, _)| a as f64 <= b as f64 * 1.1),
        });
    }
    // W13: a migration between shard processes, unpaced (a, b) and paced (c, d).
    let extra = |o: &Outcome, key: &str| o.extra.get(key).and_then(Value::as_f64);
    for (copy_id, writes_id, how) in [("W13a", "W13b", ""), ("W13c", "W13d", " (paced)")] {
        let copy = outcome("W13", "processes", copy_id);
        targets.push(Target {
            what: format!("{copy_id} migration throughput vs the storage-layer copy{how}"),
            goal: "≥ 50 %".into(),
            measured: copy
                .and_then(|o| o.ratio().map(|r| (o, r)))
                .map(|(o, r)| format!("{:.1} % ({:.0} docs/s)", 100.0 * r, o.per_second()))
                .unwrap_or_default(),
            met: copy.and_then(Outcome::ratio).map(|r| r >= 0.5),
        });
        let writes = outcome("W13", "processes", writes_id);
        let ratio = writes.and_then(|o| extra(o, "p99_ratio_to_baseline"));
        targets.push(Target {
            what: format!(
                "{writes_id} write p99 on the moving range outside the critical section{how}"
            ),
            goal: "≤ 2× without a migration".into(),
            measured: ratio.map(|r| format!("{r:.2}×")).unwrap_or_default(),
            met: ratio.map(|r| r <= 2.0),
        });
        let section = copy.and_then(|o| extra(o, "critical_section_ms"));
        targets.push(Target {
            what: format!("{copy_id} critical section{how}"),
            goal: "≤ 500 ms at 1M documents".into(),
            measured: section.map(|ms| format!("{ms:.0} ms")).unwrap_or_default(),
            met: section.map(|ms| ms <= 500.0),
        });
    }
    targets
}

/// "W2 at 10k docs" → "10k".
fn size_of<'a>(name: &'a str, prefix: &str) -> &'a str {
    name.trim_start_matches(prefix)
        .trim()
        .trim_end_matches(" docs")
}
