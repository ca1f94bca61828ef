//! The driver-side operations the workloads time, the same whichever cluster or mode they run
//! against: loading in batches, point and range reads, the YCSB mix, and the key choices.

use crate::data;
use crate::measure::{self, Rng, Timing, Zipfian};
use futures::TryStreamExt;
use mongodb::Collection;
use mongodb::bson::{Document, RawDocumentBuf, doc};
use std::sync::Arc;

pub type Coll = Collection<RawDocumentBuf>;

/// The `_id` the `i`-th operation reads: uniform over `0..n`, the same in every run.
pub fn uniform_key(i: usize, n: usize) -> i64 {
    Rng::new(i as u64 ^ 0x5EED_0000).below(n) as i64
}

/// `insert_many` of documents `0..n` in batches of `batch`, one client: one operation per batch.
/// `ordered` is the driver's default; unordered lets a router send each shard its part of a
/// batch at once instead of one run of same-shard documents after another.
pub async fn load(coll: &Coll, n: usize, batch: usize, ordered: bool) -> anyhow::Result<Timing> {
    let coll = coll.clone();
    measure::run(n.div_ceil(batch), 1, move |_, b| {
        let coll = coll.clone();
        async move {
            let docs = data::batch(b * batch, ((b + 1) * batch).min(n), n);
            let expected = docs.len();
            let result = coll.insert_many(docs).ordered(ordered).await?;
            anyhow::ensure!(result.inserted_ids.len() == expected);
            Ok(())
        }
    })
    .await
}

/// `find_one` by `filter(i)` from `clients` concurrent clients; each must find a document.
pub async fn point_reads(
    coll: &Coll,
    ops: usize,
    clients: usize,
    filter: impl Fn(usize) -> Document + Send + Sync + 'static,
) -> anyhow::Result<Timing> {
    let coll = coll.clone();
    let filter = Arc::new(filter);
    measure::run(ops, clients, move |_, i| {
        let coll = coll.clone();
        let filter = filter(i);
        async move {
            let found = coll.find_one(filter.clone()).await?;
            anyhow::ensure!(found.is_some(), "no document for {filter}");
            Ok(())
        }
    })
    .await
}

/// `find({k: {$gte: x, $lt: x + 10}})` read to the end: 10 documents through the `k` index;
/// the ranges of operations `first..first + ops`.
pub async fn range_reads(
    coll: &Coll,
    (first, ops): (usize, usize),
    n: usize,
) -> anyhow::Result<Timing> {
    let coll = coll.clone();
    measure::run(ops, 1, move |_, i| {
        let coll = coll.clone();
        let x = range_start(first + i, n);
        async move {
            let docs: Vec<RawDocumentBuf> = coll
                .find(doc! {"k": {"$gte": x, "$lt": x + RANGE_WIDTH}})
                .await?
                .try_collect()
                .await?;
            anyhow::ensure!(docs.len() as i64 == RANGE_WIDTH.min(n as i64));
            Ok(())
        }
    })
    .await
}

pub const RANGE_WIDTH: i64 = 10;

/// The low end of the `i`-th range read in a collection of `n`.
pub fn range_start(i: usize, n: usize) -> i64 {
    uniform_key(i, n.saturating_sub(RANGE_WIDTH as usize).max(1))
}

/// A YCSB operation mix: `read_fraction` of `find_one({_id})`, the rest
/// `update_one({_id}, {$inc: {qty: 1}})`, on zipfian keys.
#[derive(Clone)]
pub struct Mix {
    pub read_fraction: f64,
    pub zipf: Arc<Zipfian>,
}

impl Mix {
    /// The `i`-th operation: whether it reads, and its key.
    pub fn op(&self, i: usize) -> (bool, i64) {
        let mut rng = Rng::new(i as u64 ^ 0xC0FF_EE00);
        let read = rng.unit() < self.read_fraction;
        (read, self.zipf.next(&mut rng) as i64)
    }
}

pub async fn ycsb(coll: &Coll, ops: usize, clients: usize, mix: Mix) -> anyhow::Result<Timing> {
    let coll = coll.clone();
    measure::run(ops, clients, move |_, i| {
        let coll = coll.clone();
        let (read, id) = mix.op(i);
        async move {
            if read {
                anyhow::ensure!(coll.find_one(doc! {"_id": id}).await?.is_some());
            } else {
                let result = coll
                    .update_one(doc! {"_id": id}, doc! {"$inc": {"qty": 1}})
                    .await?;
                anyhow::ensure!(result.matched_count == 1);
            }
            Ok(())
        }
    })
    .await
}
