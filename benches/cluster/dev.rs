//! The suite against a `dev` cluster (router, config server and 2 shards in this process,
//! reached by the driver over loopback TCP): W0-W8 and W10 beside their ceilings, then W9.

use crate::ceiling_tcp::NetCeilings;
use crate::config::Config;
use crate::dataset::Dataset;
use crate::measure::{self, Timing, Zipfian};
use crate::ops::{self, Coll, Mix};
use crate::report::{Ceiling, Outcome, Part, Report};
use crate::rss::Servers;
use crate::{processes, sharded};
use docgrid::cluster::{self, NodeOptions};
use futures::TryStreamExt;
use mongodb::bson::{RawDocumentBuf, doc};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub async fn run(
    config: &Config,
    report: &mut Report,
    net: &NetCeilings,
    dir: &Path,
) -> anyhow::Result<()> {
    let options = NodeOptions::loopback();
    let running = cluster::start_dev(&options, &dir.join("dev"), 2).await?;
    let client = processes::client(running.addr.port(), false).await?;
    let servers = Servers::this_process();
    let db = client.database("bench");
    db.run_command(doc! {"ping": 1}).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    report.facts.insert(
        "idle_rss_dev_kib".into(),
        json!({"kib": servers.current_kib(), "scope": servers.scope}),
    );

    if config.runs("W0") {
        let admin = client.database("admin");
        let run = servers
            .observe(measure::run(config.ops, 1, move |_, _| {
                let admin = admin.clone();
                async move {
                    admin.run_command(doc! {"ping": 1}).await?;
                    Ok(())
                }
            }))
            .await?;
        report.push(
            Outcome::new("W0", "ping through the router", "dev", "commands", run).ceiling(
                Ceiling::of(vec![(1.0, Part::new("tcp ping-pong", &net.find, 1.0))]),
            ),
        );
    }

    let (main, loaded) = Dataset::load(
        db.collection("items"),
        config.docs,
        config.batch,
        dir,
        &servers,
    )
    .await?;
    report
        .facts
        .insert("k_index_build".into(), loaded.index_build_fact(config.docs));
    if config.runs("W1") {
        report.push(
            Outcome::new(
                "W1",
                "insert_many, 1,000-doc batches",
                "dev",
                "docs",
                loaded.cluster,
            )
            .items(config.batch)
            .ceiling(Ceiling::of(vec![
                (
                    1.0,
                    Part::new("tcp ping-pong of a batch", &net.insert, config.batch as f64),
                ),
                (
                    1.0,
                    Part::new(
                        "sqlx multi-row insert",
                        &loaded.ceiling,
                        config.batch as f64,
                    ),
                ),
            ]))
            .with("documents", config.docs.into()),
        );
    }
    if config.runs("W2") {
        let o = main
            .point_reads(("W2", "find by _id, 1 client"), config.ops, 1, &servers)
            .await?;
        let ceiling = main.point_ceiling(config.ops, 1, net).await?;
        report.push(o.ceiling(ceiling));
        let floor = crate::driver_floor::find_one(config.ops, 1, true).await?;
        report
            .facts
            .insert("w2_driver_floor".into(), floor_fact(&floor));
        let floor = crate::driver_floor::find_one(config.ops, 1, false).await?;
        report.facts.insert(
            "w2_driver_floor_without_cluster_time".into(),
            floor_fact(&floor),
        );
    }
    if config.runs("W3") {
        let before = servers.current_kib();
        let name = format!("find by _id, {} clients", config.clients);
        let o = main
            .point_reads(("W3", &name), config.ops, config.clients, &servers)
            .await?;
        let settled = servers
            .settle(before, o.rss.peak_kib, config.rss_settle_secs)
            .await;
        report.facts.insert("w3_rss_dev_kib".into(), settled);
        let ceiling = main.point_ceiling(config.ops, config.clients, net).await?;
        report.push(o.ceiling(ceiling));
        let floor = crate::driver_floor::find_one(config.ops, config.clients, true).await?;
        report
            .facts
            .insert("w3_driver_floor".into(), floor_fact(&floor));
    }
    if config.runs("W4") {
        let o = main
            .range_reads(
                ("W4", "range of 10 on a secondary index"),
                config.ops,
                net,
                &servers,
            )
            .await?;
        report.push(o);
    }
    if config.runs("W5") {
        report.push(update_many(&main, config.update_docs.min(main.n), &servers).await?);
    }
    if config.runs("W6") {
        report.push(group(&main, config.scans, &servers).await?);
    }
    if config.runs("W7") {
        report.push(count(&main, config.scans, &servers).await?);
    }
    if config.runs("W8") {
        let zipf = Arc::new(Zipfian::new(main.n));
        for (id, name, read_fraction) in [
            ("W8a", "YCSB A, 50% reads / 50% updates", 0.5),
            ("W8b", "YCSB B, 95% reads / 5% updates", 0.95),
            ("W8c", "YCSB C, reads only", 1.0),
        ] {
            let mix = Mix {
                read_fraction,
                zipf: zipf.clone(),
            };
            let o = ycsb(&main, id, name, mix, config, net, &servers).await?;
            report.push(o);
        }
    }
    if config.runs("W14") {
        report.push(crate::collation::run(&main, config.ops, &servers).await?);
    }
    if config.runs("W15") {
        report.push(crate::text::run(&main, config.ops, &servers).await?);
    }
    if config.runs("W16") {
        let points = db.collection("points");
        report.push(crate::near::run(points, config.docs, config.ops, &servers).await?);
    }
    if config.runs("W11") {
        for o in crate::retryable::run(running.addr.port(), &main, config, &servers).await? {
            report.push(o);
        }
    }
    if config.runs("W12") {
        for o in crate::transactions::run(&client, config, &servers).await? {
            report.push(o);
        }
    }
    if config.runs("W10") {
        scale(config, report, net, dir, &main, &db, &servers).await?;
    }
    if config.runs("W9") {
        let w1 = report.find("W1", "dev").and_then(|o| o.ceiling.clone());
        let w2 = report.find("W2", "dev").and_then(|o| o.ceiling.clone());
        let outcomes = sharded::run(&client, "dev", config, &servers, &[], (w1, w2)).await?;
        outcomes.into_iter().for_each(|o| report.push(o));
    }
    drop(main);
    running.shutdown().await;
    Ok(())
}

/// W5: one `update_many` of `$inc` over the documents with `_id < docs`.
async fn update_many(main: &Dataset, docs: usize, servers: &Servers) -> anyhow::Result<Outcome> {
    let coll = main.coll.clone();
    let run = servers
        .observe(async move {
            let start = Instant::now();
            let result = coll
                .update_many(
                    doc! {"_id": {"$lt": docs as i64}},
                    doc! {"$inc": {"qty": 1}},
                )
                .await?;
            anyhow::ensure!(result.modified_count == docs as u64);
            Ok(Timing::single(start.elapsed()))
        })
        .await?;
    let ceiling = main.scratch.update_inc(docs).await?;
    Ok(Outcome::new("W5", "update_many $inc", "dev", "docs", run)
        .items(docs)
        .ceiling(Ceiling::of(vec![(
            1.0,
            Part::new(
                "sqlx read-modify-write in one transaction",
                &ceiling,
                docs as f64,
            ),
        )])))
}

/// W6: `$group` by `qty` (1,000 groups) counting and summing `price` over the collection.
async fn group(main: &Dataset, scans: usize, servers: &Servers) -> anyhow::Result<Outcome> {
    let coll = main.coll.clone();
    let run = servers
        .observe(measure::run(scans, 1, move |_, _| {
            let coll = coll.clone();
            async move {
                let pipeline = [doc! {"$group": {
                    "_id": "$qty", "n": {"$sum": 1}, "total": {"$sum": "$price"},
                }}];
                let groups: Vec<_> = coll.aggregate(pipeline).await?.try_collect().await?;
                anyhow::ensure!(!groups.is_empty());
                Ok(())
            }
        }))
        .await?;
    let mut ceiling = Timing::default();
    for _ in 0..scans {
        ceiling.add(main.scratch.group_scan().await?);
    }
    Ok(
        Outcome::new("W6", "$group over the collection", "dev", "docs", run)
            .items(main.n)
            .ceiling(Ceiling::of(vec![(
                1.0,
                Part::new("sqlx scan decoding qty and price", &ceiling, main.n as f64),
            )])),
    )
}

/// W7: the `count` command with a filter matching 10% of the collection (`qty < 100`, no index).
async fn count(main: &Dataset, scans: usize, servers: &Servers) -> anyhow::Result<Outcome> {
    let db = main.coll.namespace().db;
    let client_db = main.coll.client().database(&db);
    let name = main.coll.name().to_string();
    let run = servers
        .observe(measure::run(scans, 1, move |_, _| {
            let db = client_db.clone();
            let name = name.clone();
            async move {
                let reply = db
                    .run_command(doc! {"count": name, "query": {"qty": {"$lt": 100}}})
                    .await?;
                anyhow::ensure!(
                    reply.get_i32("n").map(|n| n > 0).unwrap_or(false),
                    "{reply}"
                );
                Ok(())
            }
        }))
        .await?;
    let mut ceiling = Timing::default();
    for _ in 0..scans {
        ceiling.add(main.scratch.count_scan(100).await?);
    }
    Ok(
        Outcome::new("W7", "count {qty: {$lt: 100}}", "dev", "docs", run)
            .items(main.n)
            .ceiling(Ceiling::of(vec![(
                1.0,
                Part::new("sqlx scan testing qty", &ceiling, main.n as f64),
            )])),
    )
}

/// W8: a YCSB mix from the concurrent clients; its ceiling weighs a round trip, a point select
/// per read and a single-document read-modify-write transaction per update.
async fn ycsb(
    main: &Dataset,
    id: &str,
    name: &str,
    mix: Mix,
    config: &Config,
    net: &NetCeilings,
    servers: &Servers,
) -> anyhow::Result<Outcome> {
    let (ops, clients) = (config.ops, config.clients);
    let run = servers
        .observe(ops::ycsb(&main.coll, ops, clients, mix.clone()))
        .await?;
    let reads = mix.clone();
    let select = main
        .scratch
        .point_selects(ops, clients, move |i| reads.op(i).1)
        .await?;
    let mut parts = vec![
        (
            1.0,
            Part::new(
                format!("tcp ping-pong, {clients} clients"),
                &net.find_concurrent,
                1.0,
            ),
        ),
        (
            mix.read_fraction,
            Part::new("sqlx point select", &select, 1.0),
        ),
    ];
    if mix.read_fraction < 1.0 {
        let writes = mix.clone();
        let updates = ((ops as f64 * (1.0 - mix.read_fraction)) as usize).max(100);
        let update = main
            .scratch
            .point_updates(updates, clients, move |i| writes.op(i).1)
            .await?;
        parts.push((
            1.0 - mix.read_fraction,
            Part::new("sqlx point read-modify-write", &update, 1.0),
        ));
    }
    Ok(Outcome::new(id, name, "dev", "ops", run).ceiling(Ceiling::of(parts)))
}

/// Turns W10 takes over its sizes: each size's reads are spread over the run, so that a drift
/// of the machine's speed (2× on this VM within minutes) does not land on one size.
const SCALE_ROUNDS: usize = 4;

/// W10: W2 and W4 on collections of each configured size (the main collection where the size
/// matches), all loaded first and then read in turns, each beside its ceiling at the same size;
/// then how p50 grows with the size.
async fn scale(
    config: &Config,
    report: &mut Report,
    net: &NetCeilings,
    dir: &Path,
    main: &Dataset,
    db: &mongodb::Database,
    servers: &Servers,
) -> anyhow::Result<()> {
    let mut own = Vec::new();
    let mut builds = Vec::new();
    for &n in &config.scale_sizes {
        if n == main.n {
            builds.push(None);
            continue;
        }
        let coll: Coll = db.collection::<RawDocumentBuf>(&format!("scale_{n}"));
        let (dataset, loaded) = Dataset::load(coll, n, config.batch, dir, servers).await?;
        builds.push(Some(loaded.index_build_fact(n)));
        own.push(dataset);
    }
    let datasets: Vec<&Dataset> = config
        .scale_sizes
        .iter()
        .map(|&n| {
            if n == main.n {
                main
            } else {
                own.iter().find(|d| d.n == n).expect("loaded above")
            }
        })
        .collect();
    let per_round = (config.ops / SCALE_ROUNDS).max(1);
    let mut w2 = vec![Timing::default(); datasets.len()];
    let mut w4 = vec![Timing::default(); datasets.len()];
    servers.reset_peak();
    for round in 0..SCALE_ROUNDS {
        let ops = (round * per_round, per_round);
        for (slot, dataset) in datasets.iter().enumerate() {
            w2[slot].add(dataset.point_timing(ops, 1).await?);
            w4[slot].add(dataset.range_timing(ops).await?);
        }
    }
    let rss = servers.rss();
    let mut p50s = Vec::new();
    for (((dataset, w2), w4), build) in datasets.iter().zip(w2).zip(w4).zip(builds) {
        let n = dataset.n;
        let label = human(n);
        let id = format!("W10/{label}");
        let w2 = Outcome::new(
            &id,
            &format!("W2 at {label} docs"),
            "dev",
            "reads",
            (w2, rss),
        )
        .ceiling(dataset.point_ceiling(config.ops, 1, net).await?)
        .with("documents", n.into());
        let w4 = Outcome::new(
            &id,
            &format!("W4 at {label} docs"),
            "dev",
            "queries",
            (w4, rss),
        )
        .ceiling(dataset.range_ceiling(config.ops, net).await?)
        .with("documents", n.into());
        p50s.push(json!({
            "documents": n,
            "w2_p50_us": w2.timing.p50().as_micros() as u64,
            "w2_ceiling_p50_us": w2.ceiling.as_ref().map(|c| c.p50().as_micros() as u64),
            "w4_p50_us": w4.timing.p50().as_micros() as u64,
            "w4_ceiling_p50_us": w4.ceiling.as_ref().map(|c| c.p50().as_micros() as u64),
            "k_index_build": build,
        }));
        report.push(w2);
        report.push(w4);
    }
    for dataset in own {
        let _ = dataset.coll.drop().await;
    }
    report.facts.insert("w10_p50_by_size".into(), json!(p50s));
    Ok(())
}

/// 10000 → "10k", 1000000 → "1M".
pub fn human(n: usize) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

/// The driver's `find_one` against a stub that does no work (`driver_floor`).
fn floor_fact(timing: &Timing) -> serde_json::Value {
    json!({"per_second": timing.per_second().round(), "p50_us": timing.p50().as_micros(),
           "what": "the driver's find_one against a stub server answering at once, gossiping $clusterTime unless the fact's name says without"})
}
