//! A `find_one` workload beside its ceiling, the same documents found another way, in the same
//! run (W14, W15): one client, uniform random `item-<8 digits>` names, each side run in two
//! halves alternated (workload, ceiling, ceiling, workload) so that neither runs on a warmer
//! cache.

use crate::dataset::Dataset;
use crate::measure::{self, Timing};
use crate::ops;
use crate::report::{Ceiling, Outcome, Part};
use crate::rss::Servers;
use mongodb::bson::Document;
use mongodb::options::Collation;

/// How one side finds the document named `name`: a filter and the collation it runs under.
pub type Find = fn(name: &str, workload: bool) -> (Document, Option<Collation>);

/// The workload `id` (`what`) against its ceiling (`ceiling`, a name its target looks up).
pub async fn run(
    main: &Dataset,
    ops: usize,
    servers: &Servers,
    (id, what, ceiling): (&'static str, &'static str, &'static str),
    find: Find,
) -> anyhow::Result<Outcome> {
    let (measured, other) = measure::alternated(ops, servers, |range, workload| {
        reads(main, range, workload, find)
    })
    .await?;
    let ceiling = Part::new(ceiling, &other, 1.0);
    Ok(Outcome::new(id, what, "dev", "reads", measured)
        .with("documents", main.n.into())
        .ceiling(Ceiling::of(vec![(1.0, ceiling)])))
}

/// Operations `first..first + count` of one side.
async fn reads(
    main: &Dataset,
    (first, count): (usize, usize),
    workload: bool,
    find: Find,
) -> anyhow::Result<Timing> {
    let (coll, n) = (main.coll.clone(), main.n);
    measure::run(count, 1, move |_, i| {
        let coll = coll.clone();
        async move {
            let name = format!("item-{:08}", ops::uniform_key(first + i, n));
            let (filter, collation) = find(&name, workload);
            let found = coll.find_one(filter).with_options(
                mongodb::options::FindOneOptions::builder()
                    .collation(collation)
                    .build(),
            );
            anyhow::ensure!(found.await?.is_some(), "no document named {name}");
            Ok(())
        }
    })
    .await
}
