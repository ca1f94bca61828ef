//! A collection of `n` documents in a cluster beside the same rows in a scratch SQLite file,
//! and the reads timed on both: a workload and its storage ceiling always see the same data.

use crate::ceiling_sqlx::Scratch;
use crate::ceiling_tcp::NetCeilings;
use crate::measure::Timing;
use crate::ops::{self, Coll};
use crate::report::{Ceiling, Outcome, Part};
use crate::rss::{Rss, Servers};
use mongodb::bson::doc;
use std::path::Path;
use std::time::{Duration, Instant};

pub struct Dataset {
    pub n: usize,
    pub coll: Coll,
    pub scratch: Scratch,
}

/// The timings of loading a dataset.
pub struct Loaded {
    pub cluster: (Timing, Rss),
    pub ceiling: Timing,
    /// `createIndexes {k: 1}` after the load, and the same keys inserted in key order through
    /// sqlx into the scratch file's `k` index.
    pub index_build: (Duration, Duration),
}

impl Loaded {
    /// The index build as a report fact.
    pub fn index_build_fact(&self, n: usize) -> serde_json::Value {
        let (cluster, ceiling) = self.index_build;
        serde_json::json!({
            "documents": n,
            "seconds": cluster.as_secs_f64(),
            "docs_per_s": (n as f64 / cluster.as_secs_f64()).round(),
            "ceiling_seconds": ceiling.as_secs_f64(),
            "ceiling": "the same keys, sorted, inserted through sqlx into the scratch file's k index",
        })
    }
}

impl Dataset {
    /// Loads `n` documents into `coll` and into a scratch file in `dir` (the `_id` index
    /// only, as W1 is timed), then indexes `k` in both.
    pub async fn load(
        coll: Coll,
        n: usize,
        batch: usize,
        dir: &Path,
        servers: &Servers,
    ) -> anyhow::Result<(Dataset, Loaded)> {
        let _ = coll.drop().await;
        let cluster = servers.observe(ops::load(&coll, n, batch, true)).await?;
        let index = mongodb::IndexModel::builder().keys(doc! {"k": 1}).build();
        let started = Instant::now();
        coll.create_index(index).await?;
        let build = started.elapsed();
        let scratch = Scratch::create(dir, n).await?;
        let ceiling = scratch.load(batch).await?;
        let started = Instant::now();
        scratch.build_k_index().await?;
        let index_build = (build, started.elapsed());
        Ok((
            Dataset { n, coll, scratch },
            Loaded {
                cluster,
                ceiling,
                index_build,
            },
        ))
    }

    /// Point reads by `_id` from `clients` clients (without their ceiling, so that the memory
    /// after them can be read before the ceiling's connections come and go).
    pub async fn point_reads(
        &self,
        (id, name): (&str, &str),
        ops: usize,
        clients: usize,
        servers: &Servers,
    ) -> anyhow::Result<Outcome> {
        let run = servers
            .observe(self.point_timing((0, ops), clients))
            .await?;
        Ok(Outcome::new(id, name, "dev", "reads", run).with("documents", self.n.into()))
    }

    /// The point reads of operations `first..first + ops`, timed.
    pub async fn point_timing(
        &self,
        (first, ops): (usize, usize),
        clients: usize,
    ) -> anyhow::Result<Timing> {
        let n = self.n;
        ops::point_reads(&self.coll, ops, clients, move |i| {
            doc! {"_id": ops::uniform_key(first + i, n)}
        })
        .await
    }

    /// The ceiling of [`point_reads`](Self::point_reads): the round trip of a one-document
    /// `find` plus a prepared point select of the same keys.
    pub async fn point_ceiling(
        &self,
        ops: usize,
        clients: usize,
        net: &NetCeilings,
    ) -> anyhow::Result<Ceiling> {
        let n = self.n;
        let select = self
            .scratch
            .point_selects(ops, clients, move |i| ops::uniform_key(i, n))
            .await?;
        let tcp = if clients > 1 {
            &net.find_concurrent
        } else {
            &net.find
        };
        Ok(Ceiling::of(vec![
            (
                1.0,
                Part::new(format!("tcp ping-pong, {clients} client(s)"), tcp, 1.0),
            ),
            (
                1.0,
                Part::new(
                    format!("sqlx point select, {clients} reader(s)"),
                    &select,
                    1.0,
                ),
            ),
        ]))
    }

    /// Range reads of 10 documents on `k` beside their ceiling.
    pub async fn range_reads(
        &self,
        (id, name): (&str, &str),
        ops: usize,
        net: &NetCeilings,
        servers: &Servers,
    ) -> anyhow::Result<Outcome> {
        let run = servers
            .observe(ops::range_reads(&self.coll, (0, ops), self.n))
            .await?;
        Ok(Outcome::new(id, name, "dev", "queries", run)
            .ceiling(self.range_ceiling(ops, net).await?)
            .with("documents", self.n.into()))
    }

    /// The range reads of operations `first..first + ops`, timed.
    pub async fn range_timing(&self, range: (usize, usize)) -> anyhow::Result<Timing> {
        ops::range_reads(&self.coll, range, self.n).await
    }

    /// The ceiling of [`range_reads`](Self::range_reads): a round trip carrying ten documents
    /// plus a prepared range select.
    pub async fn range_ceiling(&self, ops: usize, net: &NetCeilings) -> anyhow::Result<Ceiling> {
        let n = self.n;
        let select = self
            .scratch
            .range_selects(ops, ops::RANGE_WIDTH, move |i| ops::range_start(i, n))
            .await?;
        Ok(Ceiling::of(vec![
            (
                1.0,
                Part::new("tcp ping-pong, 10-document reply", &net.range, 1.0),
            ),
            (1.0, Part::new("sqlx range select of 10", &select, 1.0)),
        ]))
    }
}
