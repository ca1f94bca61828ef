//! The suite against separate processes (config server, 2 shards, router: the router hop over
//! TCP): idle memory, W1-W3 through the router and W2 straight to the shard holding the
//! collection, then W9 with the router hop measured on the sharded collection too.

use crate::config::Config;
use crate::ops::{self, Coll};
use crate::processes::{self, ProcessCluster};
use crate::report::{Outcome, Report};
use crate::sharded;
use mongodb::bson::doc;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

const MODE: &str = "processes";

pub async fn run(config: &Config, report: &mut Report, dir: &Path) -> anyhow::Result<()> {
    let cluster = ProcessCluster::start(&dir.join("processes"), 2).await?;
    let servers = cluster.servers();
    let client = processes::client(cluster.router_port, false).await?;
    client
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    report.facts.insert(
        "idle_rss_processes_kib".into(),
        json!({"kib": servers.current_kib(), "each (config, shards, router)": servers.each_kib(),
               "scope": servers.scope}),
    );
    let insert_ceiling = report.find("W1", "dev").and_then(|o| o.ceiling.clone());
    let read_ceiling = report.find("W2", "dev").and_then(|o| o.ceiling.clone());
    let concurrent_ceiling = report.find("W3", "dev").and_then(|o| o.ceiling.clone());

    let n = config.sharded_docs;
    let coll: Coll = client.database("bench").collection("items");
    let _ = coll.drop().await;
    let run = servers
        .observe(ops::load(&coll, n, config.batch, true))
        .await?;
    report.push(
        Outcome::new("W1", "insert_many, 1,000-doc batches", MODE, "docs", run)
            .items(config.batch)
            .ceiling_if(&insert_ceiling),
    );
    let run = servers
        .observe(ops::point_reads(&coll, config.ops, 1, move |i| {
            doc! {"_id": ops::uniform_key(i, n)}
        }))
        .await?;
    report.push(
        Outcome::new(
            "W2",
            "find by _id, 1 client, via router",
            MODE,
            "reads",
            run,
        )
        .ceiling_if(&read_ceiling),
    );
    let mut primary = None;
    for &port in &cluster.shard_ports {
        let direct: Coll = processes::client(port, true)
            .await?
            .database("bench")
            .collection("items");
        if direct.estimated_document_count().await? > 0 {
            primary = Some(direct);
        }
    }
    let direct = primary.ok_or_else(|| anyhow::anyhow!("no shard holds bench.items"))?;
    let run = servers
        .observe(ops::point_reads(&direct, config.ops, 1, move |i| {
            doc! {"_id": ops::uniform_key(i, n)}
        }))
        .await?;
    report.push(
        Outcome::new(
            "W2",
            "find by _id, 1 client, straight to shard",
            MODE,
            "reads",
            run,
        )
        .ceiling_if(&read_ceiling),
    );
    let before = servers.current_kib();
    let name = format!("find by _id, {} clients, via router", config.clients);
    let run = servers
        .observe(ops::point_reads(
            &coll,
            config.ops,
            config.clients,
            move |i| {
                doc! {"_id": ops::uniform_key(i, n)}
            },
        ))
        .await?;
    let peak = run.1.peak_kib;
    report.push(Outcome::new("W3", &name, MODE, "reads", run).ceiling_if(&concurrent_ceiling));
    let settled = servers.settle(before, peak, config.rss_settle_secs).await;
    report.facts.insert("w3_rss_processes_kib".into(), settled);

    if config.runs("W9") {
        let outcomes = sharded::run(
            &client,
            MODE,
            config,
            &servers,
            &cluster.shard_ports,
            (insert_ceiling, read_ceiling),
        )
        .await?;
        outcomes.into_iter().for_each(|o| report.push(o));
    }
    Ok(())
}
