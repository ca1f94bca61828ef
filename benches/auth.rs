//! Connection setup with SCRAM-SHA-256 (issue 26): what authenticating adds to opening a
//! connection, at MongoDB's default iteration count (15,000), through the official driver
//! against a `dev` cluster started with `--auth` in this process.
//!
//! - `plain`: a new driver client, its connection and a `ping`, without credentials (the
//!   ceiling: everything but authentication);
//! - `scram-sha-256`: the same with `root:example` in the URI (the driver's speculative
//!   `saslStart` in `hello`, then `saslContinue`);
//! - `scram-sha-1`: the same with `authMechanism=SCRAM-SHA-1` (10,000 iterations);
//! - `pbkdf2`: PBKDF2-HMAC-SHA-256 at 15,000 iterations alone, in this process: the salted
//!   password every new client computes (the server stores the derived keys and computes
//!   only HMACs per authentication).
//!
//! A new client per connection (the driver keeps salted passwords in a process-wide cache, so
//! after the first connection the client's PBKDF2 is not paid again).
//!
//! Then W2 and W3 of the cluster suite with and without `--auth`: `find_one({_id})` on uniform
//! keys of a 10,000-document collection, one client (W2) and 16 concurrent tasks on one pooled
//! client (W3), against a `dev` cluster with `--auth` (authenticated as root) and one without,
//! alternating rounds so both see the same machine; the cluster without auth is the ceiling.
//!
//! Writes a table to stdout and JSON to `bench-results/auth.json`.
//!
//! Run: `cargo bench --bench auth`. Environment: `DOCGRID_AUTH_CONNECTIONS` connections per
//! variant (default 200), `DOCGRID_AUTH_OPS` reads per W2/W3 round (default 5,000; 3 rounds).

use bson::doc;
use docgrid::cluster::{self, NodeOptions};
use std::time::{Duration, Instant};

async fn connect_and_ping(uri: &str) -> Duration {
    let started = Instant::now();
    let client = mongodb::Client::with_uri_str(uri).await.expect("client");
    client
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .expect("ping");
    let took = started.elapsed();
    client.shutdown().await;
    took
}

fn summary(name: &str, mut samples: Vec<Duration>) -> serde_json::Value {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mean = samples.iter().map(|d| ms(*d)).sum::<f64>() / samples.len() as f64;
    let p50 = ms(samples[samples.len() / 2]);
    let p99 = ms(samples[(samples.len() * 99 / 100).min(samples.len() - 1)]);
    println!("{name:<16} {mean:>10.3} {p50:>10.3} {p99:>10.3}");
    serde_json::json!({"variant": name, "n": samples.len(), "mean_ms": mean, "p50_ms": p50, "p99_ms": p99})
}

const DOCS: i64 = 10_000;

async fn load(client: &mongodb::Client) {
    let coll = client
        .database("bench")
        .collection::<bson::Document>("items");
    let docs: Vec<_> = (0..DOCS)
        .map(|i| doc! {"_id": i, "k": i, "name": "x"})
        .collect();
    coll.insert_many(docs).await.expect("load");
}

/// Reads per second of `ops` `find_one({_id})` on uniform keys from `tasks` concurrent tasks.
async fn reads(client: &mongodb::Client, ops: usize, tasks: usize) -> f64 {
    let started = Instant::now();
    let per_task = ops / tasks;
    let runs = (0..tasks).map(|t| {
        let coll = client
            .database("bench")
            .collection::<bson::Document>("items");
        async move {
            let mut key = (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            for _ in 0..per_task {
                key ^= key << 13;
                key ^= key >> 7;
                key ^= key << 17;
                let id = (key % DOCS as u64) as i64;
                let found = coll.find_one(doc! {"_id": id}).await.expect("read");
                assert!(found.is_some());
            }
        }
    });
    futures::future::join_all(runs).await;
    (per_task * tasks) as f64 / started.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::var("DOCGRID_AUTH_CONNECTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().expect("temp dir");
    let opts = NodeOptions {
        auth: true,
        initial_user: Some(("root".into(), "example".into())),
        ..NodeOptions::loopback()
    };
    let running = cluster::start_dev(&opts, dir.path(), 2)
        .await
        .expect("cluster");
    let addr = running.addr;
    let plain_uri = format!("mongodb://{addr}/?maxPoolSize=1");
    let sha256_uri = format!("mongodb://root:example@{addr}/?authSource=admin&maxPoolSize=1");
    let sha1_uri = format!(
        "mongodb://root:example@{addr}/?authSource=admin&authMechanism=SCRAM-SHA-1&maxPoolSize=1"
    );
    // Warm up: the first connections pay for loading the user into the router's cache.
    for uri in [&plain_uri, &sha256_uri, &sha1_uri] {
        connect_and_ping(uri).await;
    }
    println!(
        "{:<16} {:>10} {:>10} {:>10}",
        "variant", "mean ms", "p50 ms", "p99 ms"
    );
    let mut results = Vec::new();
    // Interleaved, so load changes on the machine touch every variant alike.
    let mut samples: [Vec<Duration>; 3] = Default::default();
    for _ in 0..n {
        for (i, uri) in [&plain_uri, &sha256_uri, &sha1_uri].into_iter().enumerate() {
            samples[i].push(connect_and_ping(uri).await);
        }
    }
    let [plain, sha256, sha1] = samples;
    results.push(summary("plain", plain));
    results.push(summary("scram-sha-256", sha256));
    results.push(summary("scram-sha-1", sha1));
    let mut pbkdf2 = Vec::new();
    for _ in 0..n {
        let started = Instant::now();
        let mut out = [0u8; 32];
        pbkdf2::pbkdf2_hmac::<sha2::Sha256>(
            b"example",
            b"0123456789abcdef0123456789ab",
            15_000,
            &mut out,
        );
        std::hint::black_box(out);
        pbkdf2.push(started.elapsed());
    }
    results.push(summary("pbkdf2", pbkdf2));
    let ops: usize = std::env::var("DOCGRID_AUTH_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let plain_dir = tempfile::tempdir().expect("temp dir");
    let plain = cluster::start_dev(&NodeOptions::loopback(), plain_dir.path(), 2)
        .await
        .expect("cluster");
    let pooled = |uri: String| async move {
        mongodb::Client::with_uri_str(format!("{uri}maxPoolSize=64"))
            .await
            .expect("client")
    };
    let with_auth = pooled(format!("mongodb://root:example@{addr}/?authSource=admin&")).await;
    let without = pooled(format!("mongodb://{}/?", plain.addr)).await;
    for client in [&with_auth, &without] {
        load(client).await;
    }
    println!(
        "{:<16} {:>10} {:>10} {:>10}",
        "workload", "auth op/s", "plain op/s", "ratio"
    );
    for (workload, tasks) in [("W2", 1), ("W3", 16)] {
        let (mut authed, mut ceiling) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            authed.push(reads(&with_auth, ops, tasks).await);
            ceiling.push(reads(&without, ops, tasks).await);
        }
        let best = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
        let (a, c) = (best(&authed), best(&ceiling));
        println!("{workload:<16} {a:>10.0} {c:>10.0} {:>10.3}", a / c);
        results.push(serde_json::json!({
            "variant": workload, "tasks": tasks, "ops_per_round": ops,
            "auth_ops_per_s": authed, "plain_ops_per_s": ceiling, "ratio_best": a / c,
        }));
    }
    plain.shutdown().await;
    running.shutdown().await;
    let report = serde_json::json!({
        "bench": "auth",
        "connections": n,
        "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
        "date": bson::DateTime::now().try_to_rfc3339_string().unwrap_or_default(),
        "results": results,
    });
    std::fs::create_dir_all("bench-results").expect("bench-results/");
    std::fs::write(
        "bench-results/auth.json",
        serde_json::to_string_pretty(&report).expect("a JSON report"),
    )
    .expect("write the report");
}
