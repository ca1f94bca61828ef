//! Connection setup with SCRAM-SHA-256 and TLS (issue 26): what authenticating and TLS add to
//! opening a connection, at MongoDB's default iteration count (15,000), through the official
//! driver against a `dev` cluster started with `--auth` and `--tlsMode allowTLS` (TLS and plain
//! connections on one port; a certificate for localhost made with `rcgen`) in this process.
//!
//! - `plain`: a new driver client, its connection and a `ping`, without credentials (the
//!   ceiling: everything but authentication);
//! - `scram-sha-256`: the same with `root:example` in the URI (the driver's speculative
//!   `saslStart` in `hello`, then `saslContinue`);
//! - `scram-sha-1`: the same with `authMechanism=SCRAM-SHA-1` (10,000 iterations);
//! - `tls`, `tls+scram-sha-256`: `plain` and `scram-sha-256` over TLS (rustls on both sides);
//! - `pbkdf2`: PBKDF2-HMAC-SHA-256 at 15,000 iterations alone, in this process: the salted
//!   password every new client computes (the server stores the derived keys and computes
//!   only HMACs per authentication).
//!
//! A new client per connection (the driver keeps salted passwords in a process-wide cache, so
//! after the first connection the client's PBKDF2 is not paid again).
//!
//! Then W2 and W3 of the cluster suite with and without `--auth` and TLS: `find_one({_id})` on
//! uniform keys of a 10,000-document collection, one client (W2) and 16 concurrent tasks on one
//! pooled client (W3): authenticated as root against the `--auth` cluster (plain and over TLS),
//! and without credentials against a second `dev` cluster without `--auth` (plain: the ceiling;
//! and over TLS), alternating rounds so every variant sees the same machine.
//!
//! Writes a table to stdout and JSON to `bench-results/auth.json`.
//!
//! Run: `cargo bench --bench auth`. Environment: `DOCGRID_AUTH_CONNECTIONS` connections per
//! variant (default 200), `DOCGRID_AUTH_OPS` reads per W2/W3 round (default 5,000),
//! `DOCGRID_AUTH_ROUNDS` rounds per variant, the best kept (default 3).

use bson::doc;
use docgrid::cluster::{self, NodeOptions};
use docgrid::server::tls::{Tls, TlsMode, TlsOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A CA and a server certificate for `localhost` in `dir`: TLS accepted beside plain
/// connections (`allowTLS`, as `preferTLS` on incoming connections), and the URI options a
/// client trusting the CA uses.
fn tls(dir: &Path) -> (Option<Arc<Tls>>, String) {
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca.self_signed(&ca_key).expect("CA");
    let key = rcgen::KeyPair::generate().expect("key");
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let server = rcgen::CertificateParams::new(names)
        .expect("server")
        .signed_by(&key, &ca, &ca_key)
        .expect("server certificate");
    let (server_file, ca_file): (PathBuf, PathBuf) = (dir.join("server.pem"), dir.join("ca.pem"));
    std::fs::write(
        &server_file,
        format!("{}{}", server.pem(), key.serialize_pem()),
    )
    .expect("server.pem");
    std::fs::write(&ca_file, ca.pem()).expect("ca.pem");
    let tls = Tls::new(&TlsOptions {
        mode: TlsMode::AllowTls,
        certificate_key_file: Some(server_file),
        ..TlsOptions::default()
    })
    .expect("TLS");
    let ca_option = ca_file.display().to_string().replace('/', "%2F");
    (tls, format!("tls=true&tlsCAFile={ca_option}&"))
}

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
    let (tls, tls_uri) = tls(dir.path());
    let opts = NodeOptions {
        auth: true,
        initial_user: Some(("root".into(), "example".into())),
        tls: tls.clone(),
        ..NodeOptions::loopback()
    };
    let running = cluster::start_dev(&opts, &dir.path().join("auth"), 2)
        .await
        .expect("cluster");
    // `localhost`, the name the certificate is for (the cluster listens on 127.0.0.1).
    let addr = format!("localhost:{}", running.addr.port());
    let root = "root:example@";
    let uri = |credentials: &str, options: &str| {
        format!("mongodb://{credentials}{addr}/?{options}authSource=admin&maxPoolSize=1")
    };
    let variants = [
        ("plain", uri("", "")),
        ("scram-sha-256", uri(root, "")),
        ("scram-sha-1", uri(root, "authMechanism=SCRAM-SHA-1&")),
        ("tls", uri("", &tls_uri)),
        ("tls+scram-sha-256", uri(root, &tls_uri)),
    ];
    // Warm up: the first connections pay for loading the user into the router's cache.
    for (_, uri) in &variants {
        connect_and_ping(uri).await;
    }
    println!(
        "{:<16} {:>10} {:>10} {:>10}",
        "variant", "mean ms", "p50 ms", "p99 ms"
    );
    let mut results = Vec::new();
    // Interleaved, so load changes on the machine touch every variant alike.
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    for _ in 0..n {
        for (i, (_, uri)) in variants.iter().enumerate() {
            samples[i].push(connect_and_ping(uri).await);
        }
    }
    for ((name, _), taken) in variants.iter().zip(samples) {
        results.push(summary(name, taken));
    }
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
    let rounds_per_workload: usize = std::env::var("DOCGRID_AUTH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let plain_options = NodeOptions {
        tls,
        ..NodeOptions::loopback()
    };
    let plain = cluster::start_dev(&plain_options, &dir.path().join("plain"), 2)
        .await
        .expect("cluster");
    let plain_addr = format!("localhost:{}", plain.addr.port());
    let pooled = |uri: String| async move {
        mongodb::Client::with_uri_str(format!("{uri}maxPoolSize=64"))
            .await
            .expect("client")
    };
    let authed = |options: &str| format!("mongodb://{root}{addr}/?{options}authSource=admin&");
    let clients = [
        ("auth", pooled(authed("")).await),
        (
            "tls",
            pooled(format!("mongodb://{plain_addr}/?{tls_uri}")).await,
        ),
        ("auth+tls", pooled(authed(&tls_uri)).await),
        ("ceiling", pooled(format!("mongodb://{plain_addr}/?")).await),
    ];
    load(&clients[0].1).await;
    load(&clients[3].1).await;
    println!(
        "{:<16} {:>10} {:>10} {:>10} {:>10}",
        "workload", "variant", "op/s", "ceiling", "ratio"
    );
    for (workload, tasks) in [("W2", 1), ("W3", 16)] {
        let mut rounds: Vec<Vec<f64>> = vec![Vec::new(); clients.len()];
        for _ in 0..rounds_per_workload {
            for (i, (_, client)) in clients.iter().enumerate() {
                rounds[i].push(reads(client, ops, tasks).await);
            }
        }
        let best = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
        let ceiling = best(&rounds[3]);
        for ((variant, _), measured) in clients.iter().zip(&rounds) {
            let b = best(measured);
            println!(
                "{workload:<16} {variant:>10} {b:>10.0} {ceiling:>10.0} {:>10.3}",
                b / ceiling
            );
            results.push(serde_json::json!({
                "variant": format!("{workload} {variant}"), "tasks": tasks,
                "ops_per_round": ops, "ops_per_s": measured, "ratio_best": b / ceiling,
            }));
        }
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
