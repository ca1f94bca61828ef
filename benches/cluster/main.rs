//! The cluster benchmark suite of the performance issue: W0-W10 through the official Rust
//! driver over loopback TCP, against a `dev` cluster in this process and against separate
//! processes, each workload beside its physical ceiling measured in the same run (loopback TCP
//! ping-pong of the workload's message sizes; the same rows through sqlx on a scratch SQLite
//! file), with the serving processes' peak RSS, the router hop, and the targets judged.
//! A table goes to stdout and JSON to `bench-results/cluster-<date>.json`.
//!
//! Run: `cargo bench --bench cluster`. Environment (BENCHMARKS.md explains each workload):
//! - `DOCGRID_BENCH_PRESET` `full` (default: the sizes) or `ci` (small sizes);
//! - `DOCGRID_BENCH_DOCS` documents of the main collection (W1 loads it; full: 1,000,000);
//! - `DOCGRID_BENCH_BATCH` documents per `insert_many` (1,000);
//! - `DOCGRID_BENCH_OPS` operations per read, range and YCSB workload (full: 20,000);
//! - `DOCGRID_BENCH_CLIENTS` concurrent clients of W3 and W8 (16);
//! - `DOCGRID_BENCH_UPDATE_DOCS` documents W5's `update_many` changes (full: 100,000);
//! - `DOCGRID_BENCH_SCANS` repetitions of W6 and W7 (full: 3);
//! - `DOCGRID_BENCH_SCALE_SIZES` W10's collection sizes (full: `10000,1000000,10000000`);
//! - `DOCGRID_BENCH_SHARDED_DOCS` documents of W9's sharded collection and of the
//!   separate-process cluster's collection (full: 100,000);
//! - `DOCGRID_BENCH_MIGRATION_DOCS` documents W13 moves between shard processes (full:
//!   1,000,000);
//! - `DOCGRID_BENCH_PROCESSES` `0` skips the separate-process half;
//! - `DOCGRID_BENCH_ONLY` workload ids to run, e.g. `W1,W2,W9` (default: all);
//! - `DOCGRID_BENCH_DIR` where the temporary data directories go;
//! - `DOCGRID_BENCH_RSS_SETTLE_SECS` when the resident set is read again after W3 (full: 75).

mod ceiling_sqlx;
mod ceiling_tcp;
mod collation;
mod config;
mod data;
mod dataset;
mod dev;
mod driver_floor;
mod find_pair;
mod measure;
mod migration;
mod near;
mod ops;
mod process_suite;
mod processes;
mod report;
mod retryable;
mod rss;
mod sharded;
mod targets;
mod text;
mod transactions;

use ceiling_tcp::NetCeilings;
use config::Config;
use report::Report;

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let config = Config::from_env();
    eprintln!("docgrid cluster bench: {}", config.json());
    let dir = match &config.dir {
        Some(base) => {
            std::fs::create_dir_all(base)?;
            tempfile::tempdir_in(base)?
        }
        None => tempfile::tempdir()?,
    };
    let mut report = Report::default();
    let net = NetCeilings::measure(config.ops, config.clients, config.batch).await?;
    dev::run(&config, &mut report, &net, dir.path()).await?;
    if config.processes {
        if ["W1", "W2", "W3", "W9"].iter().any(|w| config.runs(w)) {
            process_suite::run(&config, &mut report, dir.path()).await?;
        }
        if config.runs("W13") {
            for outcome in migration::run(&config, dir.path()).await? {
                report.push(outcome);
            }
        }
    }
    report.targets = targets::judge(&report);
    report.print();
    let path = report.write(config.json())?;
    println!("\nJSON: {path}");
    Ok(())
}
