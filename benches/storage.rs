//! Storage-engine benchmark: does the work of a query depend on the size of the collection?
//!
//! For each collection size it starts a fresh `dev` cluster (router, config server, 2 shards)
//! in this process with its data in a temporary directory, connects the official Rust driver
//! over TCP on loopback, and measures, single client:
//!
//! - load: `insert_many` of large batches, then `createIndexes {k: 1}` (the secondary index is
//!   built after loading, so its build time is measured on its own);
//! - L1/L2: point lookups `find({_id: v})` and `find({k: v})` on random existing values (`k` is
//!   a permutation of `0..n`, so its values are unique and its order is not the insertion order),
//!   in turns with L0, the same lookup on a collection that does not exist (the floor: driver,
//!   router and shard without storage), so that L1 - L0 and L2 - L0 are the storage's share;
//! - R1: the first batch (101 documents, the default) of `find({k: {$gte: x}})` with `x` in the
//!   lowest tenth of the key space, so the range covers 90-100% of the collection;
//! - R2: the same with `limit(10)`, and `explain` (`executionStats`) of it (explain reads one
//!   entry per storage statement under a limit, so its counts are what the plan needs; the find
//!   itself reads a chunk of up to 1,000 entries per statement, which R4 puts a price on);
//! - R4: `find({k: {$gte: x, $lt: x + 10}})`, a range of exactly 10 keys: the same 10 documents
//!   as R2 at the least the index can do, so R2 - R4 is what reading a whole chunk costs
//!   (R1, R2 and R4 run in turns, one query of each per round);
//! - R3: reading that whole range through the cursor (getMores as the driver issues them);
//! - U1/U2: `update_many` with `$inc` on a non-indexed field of the documents in a range of `k`
//!   (secondary index, documents in random record order) and of `_id` (record order);
//! - U3: U2 again while another connection polls the first document the statement updates, to
//!   see when its change becomes visible: at the end if the statement commits once, early if it
//!   commits as it goes.
//!
//! The bytes this process read from and wrote to the disk (`/proc/self/io`) are reported per
//! workload (per group for the interleaved ones): a read workload that reads from the disk is
//! measuring the OS page cache, not the storage engine.
//!
//! Writes a table to stdout and JSON to `bench-results/storage.json`.
//!
//! Run: `cargo bench --bench storage`. Environment:
//! - `DOCGRID_STORAGE_SIZES` collection sizes, comma-separated (default `10000,100000`; the
//!   full measurement is `10000,1000000,10000000` with a scan budget, see BENCHMARKS.md);
//! - `DOCGRID_STORAGE_LOOKUPS` point lookups per workload and size (default 5000);
//! - `DOCGRID_STORAGE_FIRST_BATCHES` first batches / limit-10 queries per size (default 200);
//! - `DOCGRID_STORAGE_FULL_SCANS` whole-range reads per size (default 1; 0 skips them);
//! - `DOCGRID_STORAGE_UPDATE_DOCS` documents per `update_many` (default 100000, capped at the
//!   collection size);
//! - `DOCGRID_STORAGE_SCAN_BUDGET_SECS` stop a whole-range read after this many seconds and
//!   report what it read (default 0: no limit);
//! - `DOCGRID_STORAGE_BATCH` documents per `insert_many` while loading (default 10000);
//! - `DOCGRID_BENCH_DIR` where the temporary data directories go (default: the system's);
//! - `DOCGRID_BENCH_JSON` where the JSON goes (default `bench-results/storage.json`).

use docgrid::cluster::{self, NodeOptions};
use mongodb::bson::{Bson, Document, RawDocumentBuf, doc};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

fn env_sizes() -> Vec<usize> {
    let raw = std::env::var("DOCGRID_STORAGE_SIZES").unwrap_or_else(|_| "10000,100000".into());
    raw.split(',')
        .filter_map(|s| s.trim().replace('_', "").parse().ok())
        .filter(|&n: &usize| n > 0)
        .collect()
}

struct Config {
    lookups: usize,
    first_batches: usize,
    full_scans: usize,
    update_docs: usize,
    batch: usize,
    /// Stop a whole-range read after this long (it then reports what it read).
    scan_budget: Option<Duration>,
}

/// One workload at one size: throughput and latency per operation.
struct Report {
    name: &'static str,
    ops: usize,
    unit: &'static str,
    elapsed: Duration,
    latencies: Vec<Duration>,
    /// Documents the workload read or wrote, when that differs from `ops`.
    docs: Option<u64>,
    /// Bytes this process caused to be written to storage during the workload
    /// (`write_bytes` of `/proc/self/io`), for the writing workloads.
    disk_writes: Option<u64>,
    /// Bytes this process caused to be read from storage (`read_bytes`), for the reading
    /// workloads: what the OS page cache did not hold.
    disk_reads: Option<u64>,
    /// Workload-specific fields for the JSON.
    extra: serde_json::Map<String, Value>,
}

impl Report {
    fn new(name: &'static str, unit: &'static str) -> Self {
        Report {
            name,
            ops: 0,
            unit,
            elapsed: Duration::ZERO,
            latencies: Vec::new(),
            docs: None,
            disk_writes: None,
            disk_reads: None,
            extra: serde_json::Map::new(),
        }
    }

    /// For a workload timed in turns with others: its time is the sum of its own operations.
    fn close_interleaved(&mut self) {
        self.ops = self.latencies.len();
        self.elapsed = self.latencies.iter().sum();
    }

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

    fn json(&self) -> Value {
        let mut v = json!({
            "workload": self.name,
            "ops": self.ops,
            "unit": self.unit,
            "seconds": self.elapsed.as_secs_f64(),
            "throughput_per_s": self.throughput(),
            "p50_us": self.percentile(0.50).as_micros() as u64,
            "p99_us": self.percentile(0.99).as_micros() as u64,
            "max_us": self.percentile(1.0).as_micros() as u64,
        });
        if let Some(docs) = self.docs {
            v["docs"] = json!(docs);
            v["docs_per_s"] = json!(docs as f64 / self.elapsed.as_secs_f64());
        }
        if let Some(bytes) = self.disk_writes {
            v["disk_write_bytes"] = json!(bytes);
        }
        if let Some(bytes) = self.disk_reads {
            v["disk_read_bytes"] = json!(bytes);
        }
        for (key, value) in &self.extra {
            v[key] = value.clone();
        }
        v
    }

    fn print(&self, size: usize) {
        let mib = |bytes: u64| bytes as f64 / (1 << 20) as f64;
        let mut extra = Vec::new();
        if let Some(d) = self.docs {
            extra.push(format!(
                "{:.0} docs/s",
                d as f64 / self.elapsed.as_secs_f64()
            ));
        }
        if let Some(bytes) = self.disk_writes {
            extra.push(format!("{:.0} MiB written", mib(bytes)));
        }
        if let Some(bytes) = self.disk_reads {
            extra.push(format!("{:.1} MiB read from disk", mib(bytes)));
        }
        println!(
            "{:>10} {:<44} {:>8} {:>12.0} {:>10} {:>10} {:>10.2}s {}",
            size,
            self.name,
            self.ops,
            self.throughput(),
            self.percentile(0.5).as_micros(),
            self.percentile(0.99).as_micros(),
            self.elapsed.as_secs_f64(),
            extra.join(", ")
        );
    }
}

/// A small deterministic generator (splitmix64): the same run reads the same values.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The indexed field of document `i` of `n`: a bijection of `0..n` (the multiplier is a prime
/// above any size used here), so values are unique and neighbouring keys belong to documents
/// far apart in insertion (record id) order.
fn key_of(i: usize, n: usize) -> i64 {
    ((i as u128 * 2_654_435_761u128 + 12_345) % n as u128) as i64
}

/// ~110-byte documents: the fields of `benches/cluster.rs` plus the indexed `k`.
fn make_doc(i: usize, n: usize) -> Document {
    doc! {
        "_id": i as i64,
        "k": key_of(i, n),
        "name": format!("item-{i:08}"),
        "qty": (i % 1000) as i32,
        "price": i as f64 * 0.01,
        "tag": "abcdefghij",
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
    let sizes = env_sizes();
    let config = Config {
        lookups: env_usize("DOCGRID_STORAGE_LOOKUPS", 5000),
        first_batches: env_usize("DOCGRID_STORAGE_FIRST_BATCHES", 200),
        full_scans: env_usize("DOCGRID_STORAGE_FULL_SCANS", 1),
        update_docs: env_usize("DOCGRID_STORAGE_UPDATE_DOCS", 100_000),
        batch: env_usize("DOCGRID_STORAGE_BATCH", 10_000).max(1),
        scan_budget: match env_usize("DOCGRID_STORAGE_SCAN_BUDGET_SECS", 0) {
            0 => None,
            secs => Some(Duration::from_secs(secs as u64)),
        },
    };
    let started = Instant::now();
    println!(
        "{:>10} {:<44} {:>8} {:>12} {:>10} {:>10} {:>11} extra",
        "docs", "workload", "ops", "per second", "p50 µs", "p99 µs", "total"
    );
    let mut results = Vec::new();
    for &n in &sizes {
        results.push(run_size(n, &config).await);
    }
    let out = json!({
        "date": mongodb::bson::DateTime::now().try_to_rfc3339_string().unwrap_or_default(),
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
        "config": {
            "sizes": sizes,
            "lookups": config.lookups,
            "first_batches": config.first_batches,
            "full_scans": config.full_scans,
            "update_docs": config.update_docs,
            "insert_batch": config.batch,
            "scan_budget_secs": config.scan_budget.map(|b| b.as_secs()),
        },
        "total_seconds": started.elapsed().as_secs_f64(),
        "sizes": results,
    });
    let path =
        std::env::var("DOCGRID_BENCH_JSON").unwrap_or_else(|_| "bench-results/storage.json".into());
    if let Some(parent) = Path::new(&path).parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, serde_json::to_string_pretty(&out).unwrap()).unwrap();
    println!(
        "total {:.1}s; JSON in {path}",
        started.elapsed().as_secs_f64()
    );
}

async fn run_size(n: usize, config: &Config) -> Value {
    let dir = match std::env::var("DOCGRID_BENCH_DIR") {
        Ok(base) => {
            std::fs::create_dir_all(&base).unwrap();
            tempfile::tempdir_in(base).unwrap()
        }
        Err(_) => tempfile::tempdir().unwrap(),
    };
    let opts = NodeOptions::loopback();
    let loadavg_before = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let loadavg_before = loadavg_before.trim();
    let running = cluster::start_dev(&opts, dir.path(), 2).await.unwrap();
    let client = mongodb::Client::with_uri_str(format!("mongodb://{}", running.addr))
        .await
        .unwrap();
    let db = client.database("bench");
    let coll = db.collection::<Document>("items");
    let raw_coll = db.collection::<RawDocumentBuf>("items");
    let mut rng = Rng(0x5EED ^ n as u64);
    let mut reports = Vec::new();
    let mut scans = Vec::new();

    // Load.
    let mut load = Report::new("load: insert_many", "batches");
    let written = proc_io("write_bytes");
    let start = Instant::now();
    for batch_start in (0..n).step_by(config.batch) {
        let batch: Vec<Document> = (batch_start..(batch_start + config.batch).min(n))
            .map(|i| make_doc(i, n))
            .collect();
        let t = Instant::now();
        coll.insert_many(batch).await.unwrap();
        load.latencies.push(t.elapsed());
        load.ops += 1;
    }
    load.elapsed = start.elapsed();
    load.docs = Some(n as u64);
    load.disk_writes = Some(proc_io("write_bytes") - written);
    load.print(n);

    let mut build = Report::new("load: createIndexes {k: 1} after loading", "indexes");
    let written = proc_io("write_bytes");
    let t = Instant::now();
    db.run_command(doc! {
        "createIndexes": "items",
        "indexes": [{"key": {"k": 1}, "name": "k_1"}],
    })
    .await
    .unwrap();
    build.elapsed = t.elapsed();
    build.latencies.push(build.elapsed);
    build.ops = 1;
    build.docs = Some(n as u64);
    build.disk_writes = Some(proc_io("write_bytes") - written);
    build.print(n);
    reports.extend([load, build]);
    let disk = dir_bytes(dir.path());

    // Warm-up: the first statements prepare SQLite statements and open pooled readers.
    for _ in 0..config.lookups.min(500) {
        let i = rng.below(n);
        coll.find_one(doc! {"_id": i as i64}).await.unwrap();
        coll.find_one(doc! {"k": key_of(i, n)}).await.unwrap();
    }

    // L0/L1/L2 interleaved, so that all three see the same state of the machine: on this VM
    // the round trip drifts between runs by 2x, more than any size effect could be. L0 is the
    // same `find_one` on a collection that does not exist: driver, router and shard dispatch
    // without reading a table, the floor under L1 and L2.
    let missing = db.collection::<Document>("missing");
    let mut l0 = Report::new("L0 find({_id: v}) on a missing collection", "reads");
    let mut l1 = Report::new("L1 find({_id: v})", "reads");
    let mut l2 = Report::new("L2 find({k: v}) (secondary index)", "reads");
    let read = proc_io("read_bytes");
    for _ in 0..config.lookups {
        let i = rng.below(n);
        let t = Instant::now();
        let found = missing.find_one(doc! {"_id": i as i64}).await.unwrap();
        l0.latencies.push(t.elapsed());
        assert!(found.is_none());

        let t = Instant::now();
        let found = coll.find_one(doc! {"_id": i as i64}).await.unwrap();
        l1.latencies.push(t.elapsed());
        assert_eq!(found.and_then(|d| d.get_i64("k").ok()), Some(key_of(i, n)));

        let i = rng.below(n);
        let t = Instant::now();
        let found = coll.find_one(doc! {"k": key_of(i, n)}).await.unwrap();
        l2.latencies.push(t.elapsed());
        assert_eq!(found.and_then(|d| d.get_i64("_id").ok()), Some(i as i64));
    }
    let lookups_read = proc_io("read_bytes") - read;
    for report in [&mut l0, &mut l1, &mut l2] {
        report.close_interleaved();
        report.print(n);
    }
    println!(
        "{n:>10} L0-L2 read {:.1} MiB from disk",
        lookups_read as f64 / (1 << 20) as f64
    );
    reports.extend([l0, l1, l2]);

    // R1/R2/R4 interleaved likewise. R1: the first batch of a range covering most of the
    // collection; R2: the same range under limit(10); R4: a range of exactly 10 keys, the same
    // 10 documents at the least the index can do, so that the shard's first storage statement
    // ends after 10 entries instead of a full chunk. The find commands are sent as they are so
    // that only they are timed; R1's cursor is killed after its clock stops.
    let low = |rng: &mut Rng| rng.below(n.div_ceil(10)) as i64;
    let mut r1 = Report::new("R1 find({k: {$gte: x}}) first batch (101)", "batches");
    let mut r2 = Report::new("R2 find({k: {$gte: x}}).limit(10)", "queries");
    let mut r4 = Report::new("R4 find({k: {$gte: x, $lt: x+10}})", "queries");
    let read = proc_io("read_bytes");
    for _ in 0..config.first_batches {
        let x = low(&mut rng);
        let t = Instant::now();
        let reply = db
            .run_command(doc! {"find": "items", "filter": {"k": {"$gte": x}}})
            .await
            .unwrap();
        r1.latencies.push(t.elapsed());
        let cursor = reply.get_document("cursor").unwrap();
        let batch = cursor.get_array("firstBatch").unwrap();
        assert_eq!(batch.len(), 101.min(n - x as usize));
        let id = cursor.get_i64("id").unwrap();
        if id != 0 {
            db.run_command(doc! {"killCursors": "items", "cursors": [id]})
                .await
                .unwrap();
        }

        let x = low(&mut rng);
        let t = Instant::now();
        let reply = db
            .run_command(doc! {"find": "items", "filter": {"k": {"$gte": x}}, "limit": 10})
            .await
            .unwrap();
        r2.latencies.push(t.elapsed());
        let cursor = reply.get_document("cursor").unwrap();
        assert_eq!(cursor.get_array("firstBatch").unwrap().len(), 10.min(n));
        assert_eq!(cursor.get_i64("id").unwrap(), 0);

        let x = low(&mut rng);
        let t = Instant::now();
        let reply = db
            .run_command(doc! {"find": "items", "filter": {"k": {"$gte": x, "$lt": x + 10}}})
            .await
            .unwrap();
        r4.latencies.push(t.elapsed());
        let cursor = reply.get_document("cursor").unwrap();
        assert_eq!(cursor.get_array("firstBatch").unwrap().len(), 10.min(n));
        assert_eq!(cursor.get_i64("id").unwrap(), 0);
    }
    let ranges_read = proc_io("read_bytes") - read;
    for report in [&mut r1, &mut r2, &mut r4] {
        report.close_interleaved();
        report.print(n);
    }
    println!(
        "{n:>10} R1, R2, R4 read {:.1} MiB from disk",
        ranges_read as f64 / (1 << 20) as f64
    );
    reports.extend([r1, r2, r4]);

    let mut explains = Vec::new();
    for _ in 0..5 {
        let x = low(&mut rng);
        explains.push(explain_limit_10(&db, x).await);
    }
    let explain = &explains[0];
    let mut millis: Vec<i64> = explains
        .iter()
        .map(|e| e["executionTimeMillis"].as_i64().unwrap_or(-1))
        .collect();
    millis.sort();
    println!(
        "{n:>10} explain executionStats of R2: totalKeysExamined {}, totalDocsExamined {}, nReturned {}, executionTimeMillis {:?} (5 runs); stages {}",
        explain["totalKeysExamined"],
        explain["totalDocsExamined"],
        explain["nReturned"],
        millis,
        explain["stages"]
    );

    // R3: the whole range through the cursor, as the driver reads it (a first batch of 101,
    // then getMores of up to 16 MiB). An `advance` that takes over 200 µs fetched a batch: those
    // are kept with the number of documents read before them, to see whether a getMore costs
    // more the further into the range it starts.
    let mut r3 = Report::new("R3 read whole range {k: {$gte: x}}", "scans");
    let mut first_batch = Report::new("R3 ... time to the first document", "scans");
    let mut read = 0u64;
    let mut fetches = Vec::new();
    let mut partial = false;
    let read_before = proc_io("read_bytes");
    let start = Instant::now();
    for scan in 0..config.full_scans {
        let x = low(&mut rng);
        let t = Instant::now();
        let mut cursor = raw_coll.find(doc! {"k": {"$gte": x}}).await.unwrap();
        let mut count = 0u64;
        loop {
            let a = Instant::now();
            if !cursor.advance().await.unwrap() {
                break;
            }
            let took = a.elapsed();
            if count == 0 {
                first_batch.latencies.push(t.elapsed());
            } else if scan == 0 && took > Duration::from_micros(200) {
                fetches.push(json!({"docs_before": count, "ms": took.as_secs_f64() * 1e3}));
            }
            count += 1;
            if config.scan_budget.is_some_and(|b| t.elapsed() > b) {
                partial = true;
                break;
            }
        }
        r3.latencies.push(t.elapsed());
        if !partial {
            assert_eq!(count, (n - x as usize) as u64);
        }
        read += count;
        if partial {
            break;
        }
    }
    r3.elapsed = start.elapsed();
    r3.disk_reads = Some(proc_io("read_bytes") - read_before);
    r3.ops = r3.latencies.len();
    r3.docs = Some(read);
    first_batch.ops = first_batch.latencies.len();
    first_batch.elapsed = first_batch.latencies.iter().sum();
    if config.full_scans > 0 {
        r3.print(n);
        first_batch.print(n);
        if partial {
            println!(
                "{n:>10} R3 stopped after its budget: {read} documents in {:.1}s",
                r3.elapsed.as_secs_f64()
            );
        }
        let slowest = fetches
            .iter()
            .map(|f| {
                format!(
                    "{}:{:.0}ms",
                    f["docs_before"],
                    f["ms"].as_f64().unwrap_or(0.0)
                )
            })
            .collect::<Vec<_>>();
        println!(
            "{n:>10} R3 batch fetches (documents read before: ms): {}",
            slowest.join(" ")
        );
        let mut r3_json = r3.json();
        r3_json["partial"] = json!(partial);
        r3_json["batch_fetches"] = json!(fetches);
        scans.push(r3_json);
        reports.push(first_batch);
    }

    // U1/U2: update_many over 100k documents: one update command with one statement. U3
    // repeats U2 with another connection reading the first document the statement changes
    // every 20 ms: the shard scans the range in `_id` order, so if the statement committed per
    // chunk the change would show within the first chunk's time, not only when it returns.
    // U3 is kept apart from U1/U2 so that its reads cannot affect their timing.
    let count = config.update_docs.min(n);
    let from = rng.below(n - count + 1) as i64;
    let to = from + count as i64;
    for (name, field, probe) in [
        ("U1 update_many {k: [a, a+m)} $inc qty", "k", false),
        ("U2 update_many {_id: [a, a+m)} $inc qty", "_id", false),
        ("U3 = U2, another reader polling every 20ms", "_id", true),
    ] {
        let mut report = Report::new(name, "statements");
        let written = proc_io("write_bytes");
        let read = proc_io("read_bytes");
        let first = doc! {field: from};
        let qty = |d: Option<Document>| d.and_then(|d| d.get_i32("qty").ok());
        let old = qty(coll.find_one(first.clone()).await.unwrap());
        let returned = Arc::new(AtomicBool::new(false));
        let t = Instant::now();
        let watcher = probe.then(|| {
            let (coll, returned) = (coll.clone(), returned.clone());
            tokio::spawn(async move {
                let mut polls = 0u32;
                while !returned.load(Ordering::Relaxed) {
                    polls += 1;
                    if qty(coll.find_one(first.clone()).await.unwrap()) != old {
                        return (Some(t.elapsed()), polls);
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                (None, polls)
            })
        });
        let result = coll
            .update_many(
                doc! {field: {"$gte": from, "$lt": to}},
                doc! {"$inc": {"qty": 1}},
            )
            .await
            .unwrap();
        report.elapsed = t.elapsed();
        returned.store(true, Ordering::Relaxed);
        report.latencies.push(report.elapsed);
        report.ops = 1;
        report.docs = Some(result.modified_count);
        report.disk_writes = Some(proc_io("write_bytes") - written);
        report.disk_reads = Some(proc_io("read_bytes") - read);
        assert_eq!(result.matched_count, count as u64);
        assert_eq!(result.modified_count, count as u64);
        report.print(n);
        if let Some(watcher) = watcher {
            let (visible, polls) = watcher.await.unwrap();
            // `None`: no poll saw the change before the reply arrived.
            let visible_ms = visible.map(|v| v.as_secs_f64() * 1e3);
            report
                .extra
                .insert("first_doc_visible_ms".into(), json!(visible_ms));
            report.extra.insert("probe_polls".into(), json!(polls));
            println!(
                "{n:>10} U3: first updated document visible to the other reader {} (statement took {:.0} ms; {polls} polls)",
                visible_ms.map_or("only after the reply".into(), |ms| format!("at {ms:.0} ms")),
                report.elapsed.as_secs_f64() * 1e3
            );
        }
        reports.push(report);
    }

    let rss_kib = proc_status_kib("VmRSS");
    println!(
        "{n:>10} data directory {:.1} MiB after load and index build; RSS {:.0} MiB",
        disk as f64 / (1 << 20) as f64,
        rss_kib as f64 / 1024.0
    );
    running.shutdown().await;
    drop(client);
    json!({
        "docs": n,
        "data_dir_bytes_after_load": disk,
        "rss_kib_before_shutdown": rss_kib,
        "results": reports.iter().map(Report::json).chain(scans).collect::<Vec<_>>(),
        "explain_limit_10": explains,
        "lookups_disk_read_bytes": lookups_read,
        "ranges_disk_read_bytes": ranges_read,
        "loadavg_before": loadavg_before,
        "loadavg_after": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    })
}

/// `explain` (`executionStats`) of `find({k: {$gte: x}}).limit(10)`: the counts and stages.
async fn explain_limit_10(db: &mongodb::Database, x: i64) -> Value {
    let reply = db
        .run_command(doc! {
            "explain": {"find": "items", "filter": {"k": {"$gte": x}}, "limit": 10},
            "verbosity": "executionStats",
        })
        .await
        .unwrap();
    let stats = reply.get_document("executionStats").unwrap();
    let number = |d: &Document, k: &str| match d.get(k) {
        Some(Bson::Int32(v)) => *v as i64,
        Some(Bson::Int64(v)) => *v,
        Some(Bson::Double(v)) => *v as i64,
        _ => -1,
    };
    // The shard's stage tree, outermost first.
    let mut stages = Vec::new();
    let shard = stats
        .get_document("executionStages")
        .ok()
        .and_then(|s| s.get_array("shards").ok())
        .and_then(|s| s.first())
        .and_then(|s| s.as_document());
    let mut stage = shard.and_then(|s| s.get_document("executionStages").ok());
    while let Some(s) = stage {
        stages.push(json!({
            "stage": s.get_str("stage").unwrap_or("?"),
            "nReturned": number(s, "nReturned"),
            "keysExamined": number(s, "keysExamined"),
            "docsExamined": number(s, "docsExamined"),
        }));
        stage = s.get_document("inputStage").ok();
    }
    json!({
        "x": x,
        "nReturned": number(stats, "nReturned"),
        "totalKeysExamined": number(stats, "totalKeysExamined"),
        "totalDocsExamined": number(stats, "totalDocsExamined"),
        "executionTimeMillis": number(stats, "executionTimeMillis"),
        "stages": stages,
    })
}

/// Bytes of the files under `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                total += dir_bytes(&path);
            } else if let Ok(meta) = entry.metadata() {
                total += meta.len();
            }
        }
    }
    total
}

/// A counter of `/proc/self/io` (0 where there is none).
fn proc_io(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// A `kB` line of `/proc/self/status` (0 where there is none).
fn proc_status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}
