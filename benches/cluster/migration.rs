//! W13: a chunk migration between two shard processes.
//! - W13a: `moveChunk` of a collection's only chunk (`DOCGRID_BENCH_MIGRATION_DOCS` documents of
//!   ~150 bytes) from one shard process to the other, documents and MB per second, beside its
//!   ceiling measured in the same run: the same rows read from one database file through the
//!   shard key index and inserted into another, straight through docgrid's storage layer, in
//!   the same 1,000-row batches (no network, no protocol).
//! - W13b: updates of random documents of the moving range, one client, while it moves: the p99
//!   of those that ran outside the critical section beside the p99 of the same updates before
//!   the migration; and the critical section's length (the donor's
//!   `shardingStatistics.totalCriticalSectionTimeMillis`).
//! - W13c/W13d: the same chunk moved back, the recipient pacing its inserts with MongoDB's
//!   `migrateCloneInsertionBatchSize` and `migrateCloneInsertionBatchDelayMS` (the donor's
//!   orphans are cleaned up first, untimed).

use crate::config::Config;
use crate::measure::{self, Rng, Timing};
use crate::processes::{self, ProcessCluster};
use crate::report::{Ceiling, Outcome, Part};
use crate::rss::Rss;
use docgrid::datanode::index::IndexSpec;
use docgrid::datanode::storage::{DocumentReads, IndexRange, Storage};
use mongodb::bson::{Document, RawDocumentBuf, doc};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const MODE: &str = "processes";
const BATCH: usize = 1_000;

fn document(i: i64) -> Document {
    doc! {"_id": i, "k": i, "v": 0_i64, "pad": "x".repeat(100)}
}

fn failed(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// One storage file holding `items` with a `k` index, and `n` documents in it.
async fn storage_with(dir: &Path, n: usize) -> anyhow::Result<Arc<Storage>> {
    let storage = Storage::open(dir, Default::default())
        .await
        .map_err(failed)?;
    let db = storage.database_or_create("bench").await.map_err(failed)?;
    db.create_collection("items", doc! {})
        .await
        .map_err(failed)?;
    let spec = IndexSpec::parse(&doc! {"key": {"k": 1}, "name": "k_1"}).map_err(failed)?;
    db.create_index("items", spec).await.map_err(failed)?;
    let coll = db.collection("items").expect("created");
    for start in (0..n).step_by(BATCH) {
        let docs: Vec<RawDocumentBuf> = (start..(start + BATCH).min(n))
            .map(|i| RawDocumentBuf::from_document(&document(i as i64)))
            .collect::<Result<_, _>>()?;
        let refs: Vec<&mongodb::bson::RawDocument> = docs.iter().map(|d| d.as_ref()).collect();
        let mut txn = db.write().await.map_err(failed)?;
        txn.insert(&coll, &refs).await.map_err(|(_, e)| failed(e))?;
        txn.commit().await.map_err(failed)?;
    }
    Ok(storage)
}

/// The ceiling: every row of one file, read through its `k` index, inserted into another.
async fn storage_copy(dir: &Path, n: usize) -> anyhow::Result<(Timing, u64)> {
    let source = storage_with(&dir.join("w13-source"), n).await?;
    let target = storage_with(&dir.join("w13-target"), 0).await?;
    let (sdb, tdb) = (
        source.database("bench").await.expect("created"),
        target.database("bench").await.expect("created"),
    );
    let (scoll, tcoll) = (
        sdb.collection("items").expect("created"),
        tdb.collection("items").expect("created"),
    );
    let index = scoll.indexes.iter().find(|i| i.name == "k_1").expect("k_1");
    let started = Instant::now();
    let (mut after, mut bytes) = (None::<(Vec<u8>, i64)>, 0u64);
    loop {
        let range = IndexRange {
            index,
            low: &[],
            high: None,
            resume: after.as_ref().map(|(k, r)| (k.as_slice(), *r)),
            reverse: false,
            limit: BATCH as i64,
        };
        let rows = sdb
            .read()
            .await
            .map_err(failed)?
            .index_scan(&scoll, &range)
            .await
            .map_err(failed)?;
        let Some((key, rid, _)) = rows.last() else {
            break;
        };
        after = Some((key.clone(), *rid));
        let refs: Vec<&mongodb::bson::RawDocument> = rows.iter().map(|r| r.2.as_ref()).collect();
        bytes += refs.iter().map(|d| d.as_bytes().len() as u64).sum::<u64>();
        let mut txn = tdb.write().await.map_err(failed)?;
        txn.insert(&tcoll, &refs)
            .await
            .map_err(|(_, e)| failed(e))?;
        txn.commit().await.map_err(failed)?;
    }
    let timing = Timing {
        ops: n,
        elapsed: started.elapsed(),
        latencies: Vec::new(),
    };
    Ok((timing, bytes))
}

pub async fn run(config: &Config, dir: &Path) -> anyhow::Result<Vec<Outcome>> {
    let n = config.migration_docs;
    let (ceiling, ceiling_bytes) = storage_copy(dir, n).await?;
    let cluster = ProcessCluster::start(&dir.join("w13"), 2).await?;
    let client = processes::client(cluster.router_port, false).await?;
    let admin = client.database("admin");
    admin
        .run_command(doc! {"shardCollection": "bench_w13.items", "key": {"k": 1}})
        .await?;
    let coll = client.database("bench_w13").collection::<Document>("items");
    for start in (0..n).step_by(BATCH) {
        let docs: Vec<Document> = (start..(start + BATCH).min(n))
            .map(|i| document(i as i64))
            .collect();
        coll.insert_many(docs).await?;
    }
    let update = {
        let coll = coll.clone();
        move |i: usize| {
            let coll = coll.clone();
            async move {
                let k = Rng::new(i as u64 ^ 0x13).below(n) as i64;
                coll.update_one(doc! {"k": k}, doc! {"$inc": {"v": 1}})
                    .await?;
                anyhow::Ok(())
            }
        }
    };
    let baseline_ops = config.ops.min(5_000);
    let baseline = {
        let update = update.clone();
        measure::run(baseline_ops, 1, move |_, i| update(i)).await?
    };
    // Where the documents are, and where they go.
    let primary = client
        .database("config")
        .collection::<Document>("databases")
        .find_one(doc! {"_id": "bench_w13"})
        .await?
        .and_then(|d| d.get_str("primary").ok().map(str::to_string))
        .ok_or_else(|| anyhow::anyhow!("no primary for bench_w13"))?;
    let shards = admin.run_command(doc! {"listShards": 1}).await?;
    let (mut from, mut to) = (Shard::default(), Shard::default());
    for shard in shards.get_array("shards")? {
        let shard = shard.as_document().expect("a shard");
        let found = Shard {
            name: shard.get_str("_id")?.to_string(),
            port: shard
                .get_str("host")?
                .rsplit(':')
                .next()
                .unwrap_or_default()
                .parse()?,
        };
        if found.name == primary {
            from = found;
        } else {
            to = found;
        }
    }
    let first = migrate_while_updating(&admin, &update, &from, &to).await?;
    let mut outcomes = report(
        n,
        ceiling_bytes,
        &ceiling,
        &baseline,
        &first,
        "W13a",
        "W13b",
        "",
    );
    // Back again, the recipient pacing its inserts as MongoDB's parameters allow.
    let donor = processes::client(from.port, true).await?;
    donor
        .database("admin")
        .run_command(doc! {"cleanupOrphaned": "bench_w13.items"})
        .await?;
    for (name, value) in [
        ("migrateCloneInsertionBatchSize", PACED_BATCH),
        ("migrateCloneInsertionBatchDelayMS", PACED_DELAY_MS),
    ] {
        donor
            .database("admin")
            .run_command(doc! {"setParameter": 1, name: value})
            .await?;
    }
    let paced = migrate_while_updating(&admin, &update, &to, &from).await?;
    outcomes.extend(report(
        n,
        ceiling_bytes,
        &ceiling,
        &baseline,
        &paced,
        "W13c",
        "W13d",
        &format!(
            ", paced (migrateCloneInsertionBatchSize {PACED_BATCH}, migrateCloneInsertionBatchDelayMS {PACED_DELAY_MS})"
        ),
    ));
    Ok(outcomes)
}

/// The recipient's pacing of W13c/d.
const PACED_BATCH: i32 = 1_000;
const PACED_DELAY_MS: i32 = 2;

#[derive(Default)]
struct Shard {
    name: String,
    port: u16,
}

/// What one migration measured.
struct Migration {
    moved: Duration,
    section: Duration,
    clone: Duration,
    /// Updates that ran outside the critical section, and the slowest near it.
    outside: Timing,
    inside_max: Duration,
    during: usize,
}

/// Moves the collection's chunk from `from` to `to` while one client updates it.
async fn migrate_while_updating<F, Fut>(
    admin: &mongodb::Database,
    update: &F,
    from: &Shard,
    to: &Shard,
) -> anyhow::Result<Migration>
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let before = section_stats(from.port).await?;
    // Updates run until the migration ends, each noted with when it started.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        let update = update.clone();
        tokio::spawn(async move {
            let mut done = Vec::new();
            let mut i = 1_000_000;
            while !stop.load(Ordering::Relaxed) {
                let at = Instant::now();
                update(i).await?;
                done.push((at, at.elapsed()));
                i += 1;
            }
            anyhow::Ok(done)
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    admin
        .run_command(doc! {"moveChunk": "bench_w13.items", "find": {"k": 0}, "to": &to.name})
        .await?;
    let moved = started.elapsed();
    let ended = Instant::now();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::Relaxed);
    let writes = writer.await??;
    let after = section_stats(from.port).await?;
    let section = after.0.saturating_sub(before.0);
    let clone = after.1.saturating_sub(before.1);
    // The section ended shortly before the reply: writes that overlapped the last `section`
    // (and a margin) before it may have waited for it.
    let margin = Duration::from_millis(100);
    let section_from = ended.checked_sub(section + margin).unwrap_or(started);
    let during: Vec<&(Instant, Duration)> = writes
        .iter()
        .filter(|(at, _)| *at >= started && *at <= ended)
        .collect();
    let outside: Vec<Duration> = during
        .iter()
        .filter(|(at, took)| *at + *took < section_from)
        .map(|(_, took)| *took)
        .collect();
    let inside_max = during
        .iter()
        .filter(|(at, took)| *at + *took >= section_from)
        .map(|(_, took)| *took)
        .max()
        .unwrap_or_default();
    Ok(Migration {
        moved,
        section,
        clone,
        outside: Timing {
            ops: outside.len(),
            elapsed: moved,
            latencies: outside,
        },
        inside_max,
        during: during.len(),
    })
}

/// The donor's critical section and clone times so far.
async fn section_stats(port: u16) -> anyhow::Result<(Duration, Duration)> {
    let donor = processes::client(port, true).await?;
    let status = donor
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await?;
    let stats = status.get_document("shardingStatistics")?;
    let ms = |name: &str| -> anyhow::Result<Duration> {
        Ok(Duration::from_millis(stats.get_i64(name)?.max(0) as u64))
    };
    Ok((
        ms("totalCriticalSectionTimeMillis")?,
        ms("totalDonorChunkCloneTimeMillis")?,
    ))
}

/// W13's outcomes of one migration.
#[allow(clippy::too_many_arguments)]
fn report(
    n: usize,
    ceiling_bytes: u64,
    ceiling: &Timing,
    baseline: &Timing,
    m: &Migration,
    copy_id: &str,
    writes_id: &str,
    how: &str,
) -> Vec<Outcome> {
    let (moved, section, clone, outside, inside_max) =
        (m.moved, m.section, m.clone, m.outside.clone(), m.inside_max);
    let bytes_per_doc = ceiling_bytes as f64 / n.max(1) as f64;
    let migration = Timing {
        ops: n,
        elapsed: moved,
        latencies: vec![moved],
    };
    let mb = |docs_per_second: f64| docs_per_second * bytes_per_doc / 1e6;
    let copy = Outcome::new(
        "W13",
        &format!("{copy_id} moveChunk of {n} documents between shard processes{how}"),
        MODE,
        "docs",
        (migration.clone(), Rss::default()),
    )
    .ceiling(Ceiling::of(vec![(
        1.0,
        Part::new("storage copy through the k index", ceiling, 1.0),
    )]))
    .with("mb_per_second", json!(mb(migration.per_second())))
    .with("ceiling_mb_per_second", json!(mb(ceiling.per_second())))
    .with("clone_phase_ms", json!(clone.as_millis() as u64))
    .with("critical_section_ms", json!(section.as_millis() as u64));
    let latency = Outcome::new(
        "W13",
        &format!(
            "{writes_id} updates of the moving range outside the critical section, 1 client{how}"
        ),
        MODE,
        "updates",
        (outside.clone(), Rss::default()),
    )
    .with("baseline_p99_us", json!(baseline.p99().as_micros() as u64))
    .with("baseline_p50_us", json!(baseline.p50().as_micros() as u64))
    .with(
        "p99_ratio_to_baseline",
        json!(outside.p99().as_secs_f64() / baseline.p99().as_secs_f64().max(1e-9)),
    )
    .with("updates_during_migration", json!(m.during))
    .with(
        "slowest_update_near_section_us",
        json!(inside_max.as_micros() as u64),
    )
    .with("critical_section_ms", json!(section.as_millis() as u64));
    vec![copy, latency]
}
