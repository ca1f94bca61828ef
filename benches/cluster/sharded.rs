//! W9: a collection sharded over 2 shards (`{_id: "hashed"}`, one chunk per shard): inserts,
//! point reads targeted by the shard key and broadcast on `k`, and, where the shards listen on
//! their own ports (separate processes), the router hop: the same reads through the router and
//! straight to the shard that owns them.

use crate::config::Config;
use crate::data;
use crate::measure::Timing;
use crate::ops::{self, Coll};
use crate::processes;
use crate::report::{Ceiling, Outcome};
use crate::rss::{Rss, Servers};
use futures::TryStreamExt;
use mongodb::Client;
use mongodb::bson::{Document, RawDocumentBuf, doc};
use std::sync::Arc;

/// The ceilings of W1 (insert) and W2 (point read) of this run, when they were measured.
pub type Ceilings = (Option<Ceiling>, Option<Ceiling>);

pub async fn run(
    client: &Client,
    mode: &'static str,
    config: &Config,
    servers: &Servers,
    shard_ports: &[u16],
    (insert_ceiling, read_ceiling): Ceilings,
) -> anyhow::Result<Vec<Outcome>> {
    let n = config.sharded_docs;
    let db = client.database("bench");
    let coll: Coll = db.collection("sharded");
    let _ = coll.drop().await;
    client
        .database("admin")
        .run_command(doc! {"shardCollection": "bench.sharded", "key": {"_id": "hashed"}})
        .await?;
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"k": 1}).build())
        .await?;
    let mut out = Vec::new();
    for (ordered, name) in [
        (false, "sharded insert_many unordered, 1,000-doc batches"),
        (true, "sharded insert_many ordered, 1,000-doc batches"),
    ] {
        let _ = coll.delete_many(doc! {}).await?;
        let run = servers
            .observe(ops::load(&coll, n, config.batch, ordered))
            .await?;
        out.push(
            Outcome::new("W9", name, mode, "docs", run)
                .items(config.batch)
                .ceiling_if(&insert_ceiling),
        );
    }
    let run = servers
        .observe(ops::point_reads(&coll, config.ops, 1, move |i| {
            doc! {"_id": ops::uniform_key(i, n)}
        }))
        .await?;
    out.push(
        Outcome::new("W9", "sharded find by _id (targeted)", mode, "reads", run)
            .ceiling_if(&read_ceiling),
    );
    let run = servers
        .observe(ops::point_reads(&coll, config.ops, 1, move |i| {
            doc! {"k": data::key_of(ops::uniform_key(i, n) as usize, n)}
        }))
        .await?;
    out.push(
        Outcome::new("W9", "sharded find by k (broadcast)", mode, "reads", run)
            .ceiling_if(&read_ceiling),
    );
    if let Some(&port) = shard_ports.first() {
        let (router, direct) = hop(&coll, port, config.ops, servers).await?;
        out.push(Outcome::new(
            "W9hop",
            "shard0's _ids through the router",
            mode,
            "reads",
            router,
        ));
        out.push(Outcome::new(
            "W9hop",
            "shard0's _ids straight to shard0",
            mode,
            "reads",
            direct,
        ));
    }
    let _ = coll.drop().await;
    Ok(out)
}

/// Point reads of `_id`s that the shard at `port` owns, first through the router of `coll`,
/// then with a direct connection to that shard.
async fn hop(
    coll: &Coll,
    port: u16,
    ops: usize,
    servers: &Servers,
) -> anyhow::Result<((Timing, Rss), (Timing, Rss))> {
    let shard = processes::client(port, true).await?;
    let direct: Coll = shard.database(&coll.namespace().db).collection(coll.name());
    let ids = owned_ids(&direct, ops).await?;
    let via_router = reads_of(coll, ids.clone(), ops, servers).await?;
    let straight = reads_of(&direct, ids, ops, servers).await?;
    Ok((via_router, straight))
}

/// Up to `limit` `_id`s of the documents in `coll` (as the node it is read from sees them).
pub async fn owned_ids(coll: &Coll, limit: usize) -> anyhow::Result<Arc<Vec<i64>>> {
    let docs: Vec<RawDocumentBuf> = coll
        .find(doc! {})
        .projection(doc! {"_id": 1})
        .limit(limit as i64)
        .await?
        .try_collect()
        .await?;
    let ids: Vec<i64> = docs.iter().filter_map(|d| d.get_i64("_id").ok()).collect();
    anyhow::ensure!(
        !ids.is_empty(),
        "the shard holds no documents of {}",
        coll.name()
    );
    Ok(Arc::new(ids))
}

/// `ops` point reads cycling over `ids`.
pub async fn reads_of(
    coll: &Coll,
    ids: Arc<Vec<i64>>,
    ops: usize,
    servers: &Servers,
) -> anyhow::Result<(Timing, Rss)> {
    servers
        .observe(ops::point_reads(coll, ops, 1, move |i| -> Document {
            doc! {"_id": ids[i % ids.len()]}
        }))
        .await
}
