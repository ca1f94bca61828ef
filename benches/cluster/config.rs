//! The suite's sizes, from a preset (`DOCGRID_BENCH_PRESET`: `full`, the sizes, the
//! default; `ci`, seconds in all) overridden one by one by environment variables.

/// How much work each workload does.
#[derive(Clone, Debug)]
pub struct Config {
    pub preset: String,
    /// Documents of the main collection, loaded by W1 (the issue: 1M).
    pub docs: usize,
    /// Documents per `insert_many` (the issue: 1,000).
    pub batch: usize,
    /// Operations of each point-read, range-read and YCSB workload.
    pub ops: usize,
    /// Concurrent clients of W3 and W8 (the issue: 16).
    pub clients: usize,
    /// Documents `update_many` changes in W5 (the issue: 100k).
    pub update_docs: usize,
    /// Repetitions of the whole-collection W6 and W7.
    pub scans: usize,
    /// Collection sizes of W10 (the issue: 10k, 1M, 10M).
    pub scale_sizes: Vec<usize>,
    /// Documents of W9's sharded collection and of the separate-process cluster's collection.
    pub sharded_docs: usize,
    /// Documents W13 moves between two shard processes.
    pub migration_docs: usize,
    /// Whether to run the separate-process half (W9 processes, router hop).
    pub processes: bool,
    /// Workload ids to run (empty: all), e.g. `W1,W2,W9`.
    pub only: Vec<String>,
    /// Where the temporary data directories go.
    pub dir: Option<String>,
    /// Seconds after W3 at which the resident set is read again: past a shard's reader idle
    /// timeout (60 s, checked every 10 s), when the readers W3 opened have closed.
    pub rss_settle_secs: u64,
}

impl Config {
    pub fn from_env() -> Config {
        let preset = std::env::var("DOCGRID_BENCH_PRESET").unwrap_or_else(|_| "full".into());
        let ci = preset == "ci";
        let pick = |full: usize, small: usize| if ci { small } else { full };
        Config {
            docs: env_usize("DOCGRID_BENCH_DOCS", pick(1_000_000, 20_000)),
            batch: env_usize("DOCGRID_BENCH_BATCH", 1_000),
            ops: env_usize("DOCGRID_BENCH_OPS", pick(20_000, 1_000)),
            clients: env_usize("DOCGRID_BENCH_CLIENTS", 16),
            update_docs: env_usize("DOCGRID_BENCH_UPDATE_DOCS", pick(100_000, 5_000)),
            scans: env_usize("DOCGRID_BENCH_SCANS", pick(3, 1)),
            scale_sizes: env_list(
                "DOCGRID_BENCH_SCALE_SIZES",
                if ci {
                    vec![1_000, 10_000]
                } else {
                    vec![10_000, 1_000_000, 10_000_000]
                },
            ),
            sharded_docs: env_usize("DOCGRID_BENCH_SHARDED_DOCS", pick(100_000, 10_000)),
            migration_docs: env_usize("DOCGRID_BENCH_MIGRATION_DOCS", pick(1_000_000, 20_000)),
            processes: env_usize("DOCGRID_BENCH_PROCESSES", 1) != 0,
            only: std::env::var("DOCGRID_BENCH_ONLY")
                .map(|v| v.split(',').map(|s| s.trim().to_uppercase()).collect())
                .unwrap_or_default(),
            dir: std::env::var("DOCGRID_BENCH_DIR").ok(),
            rss_settle_secs: env_usize("DOCGRID_BENCH_RSS_SETTLE_SECS", pick(75, 2)) as u64,
            preset,
        }
    }

    /// Whether workload `id` (e.g. "W3") is selected.
    pub fn runs(&self, id: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == id)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "preset": self.preset,
            "docs": self.docs,
            "batch": self.batch,
            "ops": self.ops,
            "clients": self.clients,
            "update_docs": self.update_docs,
            "scans": self.scans,
            "scale_sizes": self.scale_sizes,
            "sharded_docs": self.sharded_docs,
            "migration_docs": self.migration_docs,
            "processes": self.processes,
            "only": self.only,
            "rss_settle_secs": self.rss_settle_secs,
        })
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

fn env_list(name: &str, default: Vec<usize>) -> Vec<usize> {
    match std::env::var(name) {
        Ok(raw) => raw
            .split(',')
            .filter_map(|s| s.trim().replace('_', "").parse().ok())
            .filter(|&n: &usize| n > 0)
            .collect(),
        Err(_) => default,
    }
}
