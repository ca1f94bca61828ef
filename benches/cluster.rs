//! End-to-end benchmark over real TCP through the official Rust driver against an in-process
//! `dev` cluster: bulk insert (insert_many of 1,000-document batches of ~100-byte documents)
//! and point reads by `_id`. Writes a table to stdout and JSON to bench-results/.
//!
//! Run: `cargo bench --bench cluster` (env: DOCGRID_BENCH_DOCS, DOCGRID_BENCH_READS).

use docgrid::cluster::{self, NodeOptions};
use docgrid::server::CmdLine;
use docgrid::server::logbuf::LogBuffer;
use mongodb::bson::{Document, doc};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Report {
    name: &'static str,
    ops: usize,
    unit: &'static str,
    elapsed: Duration,
    latencies: Vec<Duration>,
}

impl Report {
    fn throughput(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        sorted
            .get(((sorted.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or_default()
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "workload": self.name,
            "ops": self.ops,
            "unit": self.unit,
            "seconds": self.elapsed.as_secs_f64(),
            "throughput_per_s": self.throughput(),
            "p50_us": self.percentile(0.50).as_micros() as u64,
            "p99_us": self.percentile(0.99).as_micros() as u64,
        })
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}

async fn run() {
    let docs = env_usize("DOCGRID_BENCH_DOCS", 200_000);
    let reads = env_usize("DOCGRID_BENCH_READS", 20_000);
    let dir = tempfile::tempdir().unwrap();
    let opts = NodeOptions {
        bind: "127.0.0.1".into(),
        port: 0,
        parameters: Vec::new(),
        cmdline: CmdLine::default(),
        log: Arc::new(LogBuffer::default()),
    };
    let running = cluster::start_dev(&opts, dir.path(), 2).await.unwrap();
    let client = mongodb::Client::with_uri_str(format!("mongodb://{}", running.addr))
        .await
        .unwrap();
    let coll = client.database("bench").collection::<Document>("items");
    // ~100-byte documents.
    let make = |i: usize| doc! {"_id": i as i64, "name": format!("item-{i:08}"), "qty": (i % 1000) as i32, "price": i as f64 * 0.01, "tag": "abcdefghij"};

    let ceiling = loopback_ping_pong(reads).await;

    // The floor under every request: one round trip through the driver, TCP and the router's
    // dispatcher, touching no storage.
    let admin = client.database("admin");
    let mut latencies = Vec::with_capacity(reads);
    let start = Instant::now();
    for _ in 0..reads {
        let t = Instant::now();
        admin.run_command(doc! {"ping": 1}).await.unwrap();
        latencies.push(t.elapsed());
    }
    let ping = Report {
        name: "W0 ping (router round trip)",
        ops: reads,
        unit: "commands",
        elapsed: start.elapsed(),
        latencies,
    };

    let mut latencies = Vec::new();
    let start = Instant::now();
    for batch_start in (0..docs).step_by(1000) {
        let batch: Vec<Document> = (batch_start..(batch_start + 1000).min(docs))
            .map(make)
            .collect();
        let t = Instant::now();
        coll.insert_many(batch).await.unwrap();
        latencies.push(t.elapsed());
    }
    let insert = Report {
        name: "W1 insert_many (1000-doc batches)",
        ops: docs,
        unit: "docs",
        elapsed: start.elapsed(),
        latencies,
    };

    let mut latencies = Vec::with_capacity(reads);
    let start = Instant::now();
    for i in 0..reads {
        let id = ((i * 7919) % docs) as i64;
        let t = Instant::now();
        let found = coll.find_one(doc! {"_id": id}).await.unwrap();
        latencies.push(t.elapsed());
        assert!(found.is_some());
    }
    let point = Report {
        name: "W2 find by _id (1 client)",
        ops: reads,
        unit: "reads",
        elapsed: start.elapsed(),
        latencies,
    };

    println!(
        "{:<36} {:>10} {:>14} {:>10} {:>10}",
        "workload", "ops", "per second", "p50 µs", "p99 µs"
    );
    for r in [&ceiling, &ping, &insert, &point] {
        println!(
            "{:<36} {:>10} {:>14.0} {:>10} {:>10}",
            r.name,
            r.ops,
            r.throughput(),
            r.percentile(0.5).as_micros(),
            r.percentile(0.99).as_micros()
        );
    }
    let out = serde_json::json!({
        "date": mongodb::bson::DateTime::now().try_to_rfc3339_string().unwrap_or_default(),
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "results": [ceiling.json(), ping.json(), insert.json(), point.json()],
    });
    std::fs::create_dir_all("bench-results").unwrap();
    std::fs::write(
        "bench-results/cluster.json",
        serde_json::to_string_pretty(&out).unwrap(),
    )
    .unwrap();
    running.shutdown().await;
}

/// The ceiling for a request/reply over loopback TCP in this runtime: a bare echo of a
/// 100-byte message, no protocol, no work.
async fn loopback_ping_pong(rounds: usize) -> Report {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        socket.set_nodelay(true).unwrap();
        let mut buf = [0u8; 100];
        while socket.read_exact(&mut buf).await.is_ok() {
            if socket.write_all(&buf).await.is_err() {
                break;
            }
        }
    });
    let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
    client.set_nodelay(true).unwrap();
    let mut buf = [7u8; 100];
    let mut latencies = Vec::with_capacity(rounds);
    let start = Instant::now();
    for _ in 0..rounds {
        let t = Instant::now();
        client.write_all(&buf).await.unwrap();
        client.read_exact(&mut buf).await.unwrap();
        latencies.push(t.elapsed());
    }
    Report {
        name: "ceiling: loopback TCP ping-pong",
        ops: rounds,
        unit: "round trips",
        elapsed: start.elapsed(),
        latencies,
    }
}
