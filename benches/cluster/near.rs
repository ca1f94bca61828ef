//! W16 (issue 25): `$near` on a `2dsphere` index of `n` GeoJSON points spread uniformly over
//! the sphere, returning the ten nearest to a random point, beside an indexed equality find
//! (`find_one({_id})`) on the same collection in the same run: the equality find is the
//! `$near`'s ceiling (the target: p50 ≤ 3× of it). The points live in their own
//! collection, dropped at the end, so that the workloads after this one do not see it.

use crate::measure::{self, Rng, Timing};
use crate::ops::{self, Coll};
use crate::report::{Ceiling, Outcome, Part};
use crate::rss::Servers;
use futures::TryStreamExt;
use mongodb::bson::{Document, doc};
use std::time::Instant;

/// How many documents each `$near` returns.
const NEAREST: usize = 10;

/// A point uniform over the sphere, the same for the same `seed`: `[longitude, latitude]`.
fn point(seed: u64) -> [f64; 2] {
    let mut rng = Rng::new(seed);
    let lng = -180.0 + 360.0 * rng.unit();
    let lat = (2.0 * rng.unit() - 1.0).asin().to_degrees();
    [lng, lat]
}

fn geojson([lng, lat]: [f64; 2]) -> Document {
    doc! {"type": "Point", "coordinates": [lng, lat]}
}

/// Loads `n` points into `points` (a collection beside `main`'s), builds the `2dsphere` index,
/// then times the `$near` queries beside the equality finds.
pub async fn run(points: Coll, n: usize, ops: usize, servers: &Servers) -> anyhow::Result<Outcome> {
    let _ = points.drop().await;
    let batch = 10_000;
    let started = Instant::now();
    let loading = points.clone();
    measure::run(n.div_ceil(batch), 1, move |_, b| {
        let points = loading.clone();
        async move {
            let docs = (b * batch..((b + 1) * batch).min(n)).map(|i| {
                let doc = doc! {"_id": i as i64, "loc": geojson(point(i as u64))};
                mongodb::bson::RawDocumentBuf::from_document(&doc).expect("a point encodes")
            });
            points.insert_many(docs).ordered(false).await?;
            Ok(())
        }
    })
    .await?;
    let load = started.elapsed();
    let db = points.client().database(&points.namespace().db);
    let started = Instant::now();
    db.run_command(doc! {"createIndexes": points.name(), "indexes": [
        {"key": {"loc": "2dsphere"}, "name": "loc_2dsphere"},
    ]})
    .await?;
    let build = started.elapsed();
    let (measured, other) = measure::alternated(ops, servers, |range, workload| {
        reads(&points, n, range, workload)
    })
    .await?;
    points.drop().await?;
    let ceiling = Part::new("the equality find", &other, 1.0);
    Ok(Outcome::new(
        "W16",
        "$near, the 10 nearest of uniform points, through a 2dsphere index",
        "dev",
        "queries",
        measured,
    )
    .with("documents", n.into())
    .with("load_seconds", load.as_secs_f64().into())
    .with("index_build_seconds", build.as_secs_f64().into())
    .ceiling(Ceiling::of(vec![(1.0, ceiling)])))
}

/// Operations `first..first + count` of one side: the `$near` queries (`workload`) or the
/// equality finds.
async fn reads(
    points: &Coll,
    n: usize,
    (first, count): (usize, usize),
    workload: bool,
) -> anyhow::Result<Timing> {
    let points = points.clone();
    measure::run(count, 1, move |_, i| {
        let points = points.clone();
        async move {
            if workload {
                // Centers differ from the loaded points' seeds, so none sits on a document.
                let center = geojson(point((first + i) as u64 ^ 0xCE47_0000_0000));
                let filter = doc! {"loc": {"$near": {"$geometry": center}}};
                let found: Vec<_> = points
                    .find(filter)
                    .limit(NEAREST as i64)
                    .await?
                    .try_collect()
                    .await?;
                anyhow::ensure!(found.len() == NEAREST, "$near found {}", found.len());
            } else {
                let id = ops::uniform_key(first + i, n);
                anyhow::ensure!(points.find_one(doc! {"_id": id}).await?.is_some());
            }
            Ok(())
        }
    })
    .await
}
