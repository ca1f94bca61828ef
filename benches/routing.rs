//! Routing-table benchmark: does targeting stay O(log chunks)? For chunk maps of growing size
//! (a range key `{k: 1}`, chunk `i` covering `[10 i, 10 (i + 1))`, chunks alternating over two
//! shards), in this process and without I/O, it measures:
//!
//! - build: `ChunkMap::new` from the chunks (what a full refresh does after reading them);
//! - T1: the chunk of a shard key (`chunk_for` on an encoded key), random keys — an insert's or
//!   an equality query's targeting;
//! - T2: a range query's targeting: `target_intervals` of `{k: {$gte: x, $lt: x + 100}}` then
//!   `shards_for` (the ~10 chunks it overlaps);
//! - T3: a shard's version (`shard_version`), attached to every routed request;
//! - incr: `with_updates` with one split chunk (what an incremental refresh does).
//!
//! Writes a table to stdout and JSON to `bench-results/routing.json`.
//!
//! Run: `cargo bench --bench routing`. Environment: `DOCGRID_ROUTING_SIZES` chunk counts,
//! comma-separated (default `1000,10000,100000,1000000`); `DOCGRID_ROUTING_LOOKUPS` lookups per
//! workload and size (default 1000000).

use bson::{Document, Timestamp, doc};
use docgrid::catalog::{Chunk, ChunkMap, ChunkVersion, CollectionGeneration, ShardKeyPattern};
use std::hint::black_box;
use std::time::Instant;

fn env_list(name: &str, default: &str) -> Vec<usize> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .filter_map(|v| v.trim().parse().ok())
        .collect()
}

/// A small deterministic generator (xorshift), so runs read the same keys.
struct Keys(u64);

impl Keys {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

fn bound(pattern: &ShardKeyPattern, i: usize, n: usize) -> Document {
    match i {
        0 => pattern.global_min(),
        i if i == n => pattern.global_max(),
        i => doc! {"k": (i as i64) * 10},
    }
}

fn chunks(pattern: &ShardKeyPattern, generation: CollectionGeneration, n: usize) -> Vec<Chunk> {
    (0..n)
        .map(|i| {
            Chunk::new(
                pattern,
                bound(pattern, i, n),
                bound(pattern, i + 1, n),
                format!("shard{}", i % 2),
                ChunkVersion::new(generation, 1, i as u32),
            )
        })
        .collect()
}

/// Nanoseconds per call of `f` over `count` calls.
fn per_call(count: usize, mut f: impl FnMut(usize)) -> f64 {
    let started = Instant::now();
    for i in 0..count {
        f(i);
    }
    started.elapsed().as_nanos() as f64 / count as f64
}

fn main() {
    let sizes = env_list("DOCGRID_ROUTING_SIZES", "1000,10000,100000,1000000");
    let lookups = env_list("DOCGRID_ROUTING_LOOKUPS", "1000000")
        .first()
        .copied()
        .unwrap_or(1_000_000);
    let pattern = ShardKeyPattern::parse(&doc! {"k": 1}).expect("a valid key");
    let generation = CollectionGeneration::new(Timestamp {
        time: 1,
        increment: 1,
    });
    println!(
        "{:>9} {:>10} {:>9} {:>9} {:>9} {:>10}",
        "chunks", "build ms", "T1 ns", "T2 ns", "T3 ns", "incr ms"
    );
    let mut results = Vec::new();
    for &n in &sizes {
        let all = chunks(&pattern, generation, n);
        let started = Instant::now();
        let map = ChunkMap::new(&pattern, all).expect("chunks tile the key space");
        let build_ms = started.elapsed().as_secs_f64() * 1000.0;
        let span = (n as u64) * 10;

        let mut keys = Keys(0x9E37_79B9_7F4A_7C15);
        let encoded: Vec<Vec<u8>> = (0..lookups.min(100_000))
            .map(|_| pattern.encode(&doc! {"k": keys.next(span) as i64}))
            .collect();
        let t1 = per_call(lookups, |i| {
            black_box(map.chunk_for(&encoded[i % encoded.len()]));
        });

        let ranges: Vec<Document> = (0..1000)
            .map(|_| {
                let low = keys.next(span.saturating_sub(100).max(1)) as i64;
                doc! {"k": {"$gte": low, "$lt": low + 100}}
            })
            .collect();
        let t2 = per_call(lookups / 10, |i| {
            let intervals = pattern.target_intervals(&ranges[i % ranges.len()]);
            black_box(map.shards_for(&intervals));
        });

        let t3 = per_call(lookups, |i| {
            black_box(map.shard_version(if i % 2 == 0 { "shard0" } else { "shard1" }, generation));
        });

        // One chunk split in two at a new version, as a refresh after a split reads it.
        let middle = n / 2;
        let split_at = doc! {"k": (middle as i64) * 10 + 5};
        let top = (n as u32).saturating_add(1);
        let updates = vec![
            Chunk::new(
                &pattern,
                bound(&pattern, middle, n),
                split_at.clone(),
                format!("shard{}", middle % 2),
                ChunkVersion::new(generation, 1, top),
            ),
            Chunk::new(
                &pattern,
                split_at,
                bound(&pattern, middle + 1, n),
                format!("shard{}", middle % 2),
                ChunkVersion::new(generation, 1, top + 1),
            ),
        ];
        let started = Instant::now();
        let patched = map.with_updates(&pattern, updates).expect("a valid split");
        let incr_ms = started.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(patched.len(), n + 1);

        println!("{n:>9} {build_ms:>10.1} {t1:>9.0} {t2:>9.0} {t3:>9.0} {incr_ms:>10.1}");
        results.push(serde_json::json!({
            "chunks": n,
            "buildMillis": build_ms,
            "chunkForNanos": t1,
            "rangeTargetingNanos": t2,
            "shardVersionNanos": t3,
            "incrementalRefreshMillis": incr_ms,
        }));
    }
    let report = serde_json::json!({
        "benchmark": "routing",
        "lookups": lookups,
        "results": results,
    });
    std::fs::create_dir_all("bench-results").expect("bench-results/");
    let json = serde_json::to_string_pretty(&report).expect("a JSON report");
    std::fs::write("bench-results/routing.json", json).expect("write the report");
}
