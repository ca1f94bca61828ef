//! Profiling aid for the router hop (BENCHMARKS.md, "Router hop profile"): the official driver
//! reading `bench.items` by `_id` from one client, sequentially, against a running node given
//! by `URI` (a router, or a shard directly), for attaching `perf` to the separate processes.
//! `LOAD=n` first (re)creates the collection with `n` documents in `insert_many` batches of
//! 1,000 (W1's; printing documents per second); `OPS` reads follow, keys uniform over `0..n`;
//! prints reads per second and p50/p99 latency:
//!
//! ```text
//! cargo build --release --example point_read_client
//! URI=mongodb://127.0.0.1:27017 LOAD=100000 OPS=0 target/release/examples/point_read_client
//! URI=mongodb://127.0.0.1:27017 OPS=200000 target/release/examples/point_read_client
//! ```

use bson::{Document, doc};
use std::time::{Duration, Instant};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let uri = std::env::var("URI").unwrap_or_else(|_| "mongodb://127.0.0.1:27017".into());
    let mut options = mongodb::options::ClientOptions::parse(&uri).await?;
    options.direct_connection = Some(true);
    let client = mongodb::Client::with_options(options)?;
    let coll = client.database("bench").collection::<Document>("items");
    let load = env("LOAD", 0);
    if load > 0 {
        let _ = coll.drop().await;
        let started = Instant::now();
        for start in (0..load).step_by(1000) {
            let docs: Vec<Document> = (start..(start + 1000).min(load))
                .map(|i| {
                    // The cluster suite's documents (~110 bytes; `benches/cluster/data.rs`).
                    doc! {"_id": i as i64, "k": ((i * 7919) % load) as i64,
                    "name": format!("item-{i:08}"), "qty": (i % 1000) as i32,
                    "price": i as f64 * 0.01, "tag": "abcdefghij"}
                })
                .collect();
            coll.insert_many(docs).await?;
        }
        let secs = started.elapsed().as_secs_f64();
        println!("loaded {load} documents: {:.0} /s", load as f64 / secs);
    }
    let n = coll.estimated_document_count().await?.max(1);
    let ops = env("OPS", 100_000);
    let mut latencies = Vec::with_capacity(ops as usize);
    let started = Instant::now();
    for i in 0..ops {
        let key = (i.wrapping_mul(2_654_435_761) % n) as i64;
        let t = Instant::now();
        let found = coll.find_one(doc! {"_id": key}).await?;
        latencies.push(t.elapsed());
        anyhow::ensure!(found.is_some(), "no document {key}");
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    let at = |p: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * p) as usize)
            .copied()
            .unwrap_or(Duration::ZERO)
    };
    println!(
        "{ops} reads of {n} documents: {:.0} /s, p50 {} µs, p99 {} µs",
        ops as f64 / elapsed.as_secs_f64().max(1e-9),
        at(0.5).as_micros(),
        at(0.99).as_micros()
    );
    Ok(())
}
