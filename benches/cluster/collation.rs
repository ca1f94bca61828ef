//! W14 (issue 25): a case-insensitive equality find (`{locale: "en", strength: 2}`) through
//! an index in that collation, beside the same find in the simple collation through a
//! simple-collation index on the same field of the same collection, in the same run: both
//! indexes exist on `{name: 1}`, each query is planned onto its own. The simple find is the
//! collated one's ceiling (the target: p50 ≤ 1.5× of it).

use crate::dataset::Dataset;
use crate::measure::{self, Timing};
use crate::ops;
use crate::report::{Ceiling, Outcome, Part};
use crate::rss::Servers;
use mongodb::bson::doc;
use mongodb::options::{Collation, CollationStrength};

/// Both indexes on `name`, then the collated and the simple reads, alternated (collated,
/// simple, simple, collated) so that neither runs on a warmer cache.
pub async fn run(main: &Dataset, ops: usize, servers: &Servers) -> anyhow::Result<Outcome> {
    let db = main.coll.client().database(&main.coll.namespace().db);
    db.run_command(doc! {"createIndexes": main.coll.name(), "indexes": [
        {"key": {"name": 1}, "name": "name_1"},
        {"key": {"name": 1}, "name": "name_ci", "collation": {"locale": "en", "strength": 2}},
    ]})
    .await?;
    let half = ops / 2;
    let (first, rss) = servers.observe(reads(main, (0, half), true)).await?;
    let mut simple = reads(main, (0, half), false).await?;
    simple.add(reads(main, (half, ops - half), false).await?);
    let mut collated = first;
    collated.add(reads(main, (half, ops - half), true).await?);
    let ceiling = Part::new("the same find, simple collation and index", &simple, 1.0);
    Ok(Outcome::new(
        "W14",
        "case-insensitive find through a collation index",
        "dev",
        "reads",
        (collated, rss),
    )
    .with("documents", main.n.into())
    .ceiling(Ceiling::of(vec![(1.0, ceiling)])))
}

/// `find_one({name})` of operations `first..first + count`, one client; the collated reads
/// ask for the name in upper case, which only the collation finds.
async fn reads(
    main: &Dataset,
    (first, count): (usize, usize),
    collated: bool,
) -> anyhow::Result<Timing> {
    let (coll, n) = (main.coll.clone(), main.n);
    measure::run(count, 1, move |_, i| {
        let coll = coll.clone();
        async move {
            let name = format!("item-{:08}", ops::uniform_key(first + i, n));
            let find = match collated {
                true => coll.find_one(doc! {"name": name.to_uppercase()}).collation(
                    Collation::builder()
                        .locale("en")
                        .strength(CollationStrength::Secondary)
                        .build(),
                ),
                false => coll.find_one(doc! {"name": name}),
            };
            anyhow::ensure!(find.await?.is_some(), "no document named {first} + {i}");
            Ok(())
        }
    })
    .await
}
