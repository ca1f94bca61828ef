//! W11: what retryable writes cost. W1's batched inserts and W8a's YCSB-A mix, each run through
//! a client with `retryWrites=true` (the drivers' default: every write carries `lsid`,
//! `txnNumber` and is recorded in the shard's transaction table) and through one with
//! `retryWrites=false`, alternately on, off, off, on in the same run so that the machine's drift
//! falls on both; the figure is the retryable runs' throughput beside the plain runs' as its
//! ceiling.

use crate::config::Config;
use crate::dataset::Dataset;
use crate::measure::{Timing, Zipfian};
use crate::ops::{self, Coll, Mix};
use crate::report::{Ceiling, Outcome, Part};
use crate::rss::{Rss, Servers};
use mongodb::bson::RawDocumentBuf;
use std::sync::Arc;
use std::time::Duration;

/// Documents each W11 insert run loads (a fresh collection per run).
const MAX_INSERT_DOCS: usize = 200_000;

/// A client of the same router with retryable writes off.
async fn plain_client(port: u16) -> anyhow::Result<mongodb::Client> {
    Ok(mongodb::Client::with_uri_str(format!(
        "mongodb://127.0.0.1:{port}/?maxPoolSize=64&serverSelectionTimeoutMS=30000&retryWrites=false"
    ))
    .await?)
}

/// Two timings merged as one run of both's operations.
fn merged(a: Timing, b: Timing) -> Timing {
    let mut latencies = a.latencies;
    latencies.extend(b.latencies);
    Timing {
        ops: a.ops + b.ops,
        elapsed: a.elapsed + b.elapsed,
        latencies,
    }
}

/// Runs `work` with the retryable collection and the plain one, on/off/off/on; the
/// retryable runs with the resident set of the last.
async fn alternate<F, Fut>(
    retryable: &Coll,
    plain: &Coll,
    servers: &Servers,
    work: F,
) -> anyhow::Result<((Timing, Rss), Timing)>
where
    F: Fn(Coll) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Timing>>,
{
    let (on1, _) = servers.observe(work(retryable.clone())).await?;
    let (off1, _) = servers.observe(work(plain.clone())).await?;
    let (off2, _) = servers.observe(work(plain.clone())).await?;
    let (on2, rss) = servers.observe(work(retryable.clone())).await?;
    Ok(((merged(on1, on2), rss), merged(off1, off2)))
}

pub async fn run(
    port: u16,
    main: &Dataset,
    config: &Config,
    servers: &Servers,
) -> anyhow::Result<Vec<Outcome>> {
    let plain = plain_client(port).await?;
    let db = main.coll.namespace().db;
    let retryable_db = main.coll.client().database(&db);
    let plain_db = plain.database(&db);
    let docs = config.docs.min(MAX_INSERT_DOCS);
    let batch = config.batch;

    // Inserts: a fresh collection per run, so every run inserts into an empty one.
    let (on, off) = alternate(
        &retryable_db.collection::<RawDocumentBuf>("w11"),
        &plain_db.collection::<RawDocumentBuf>("w11"),
        servers,
        |coll| async move {
            let _ = coll.drop().await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            ops::load(&coll, docs, batch, true).await
        },
    )
    .await?;
    let inserts = Outcome::new(
        "W11",
        "insert_many with retryable writes (W1)",
        "dev",
        "docs",
        on,
    )
    .items(batch)
    .ceiling(Ceiling::of(vec![(
        1.0,
        Part::new("the same without retryable writes", &off, batch as f64),
    )]))
    .with("documents", docs.into());

    // YCSB A on the main collection, through each client.
    let zipf = Arc::new(Zipfian::new(main.n));
    let mix = Mix {
        read_fraction: 0.5,
        zipf,
    };
    let (ops_n, clients) = (config.ops, config.clients);
    let main_plain = plain_db.collection::<RawDocumentBuf>(main.coll.name());
    let (on, off) = alternate(&main.coll, &main_plain, servers, |coll| {
        let mix = mix.clone();
        async move { ops::ycsb(&coll, ops_n, clients, mix).await }
    })
    .await?;
    let ycsb = Outcome::new(
        "W11",
        "YCSB A with retryable writes (W8a)",
        "dev",
        "ops",
        on,
    )
    .ceiling(Ceiling::of(vec![(
        1.0,
        Part::new("the same without retryable writes", &off, 1.0),
    )]));
    Ok(vec![inserts, ycsb])
}
