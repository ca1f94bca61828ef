//! W14 (issue 25): a case-insensitive equality find (`{locale: "en", strength: 2}`) through
//! an index in that collation, beside the same find in the simple collation through a
//! simple-collation index on the same field of the same collection, in the same run: both
//! indexes exist on `{name: 1}`, each query is planned onto its own. The simple find is the
//! collated one's ceiling (the target: p50 ≤ 1.5× of it).

use crate::dataset::Dataset;
use crate::report::Outcome;
use crate::rss::Servers;
use mongodb::bson::doc;
use mongodb::options::{Collation, CollationStrength};

/// Both indexes on `name`, then the collated reads (the name in upper case, which only the
/// collation finds) beside the simple ones.
pub async fn run(main: &Dataset, ops: usize, servers: &Servers) -> anyhow::Result<Outcome> {
    let db = main.coll.client().database(&main.coll.namespace().db);
    db.run_command(doc! {"createIndexes": main.coll.name(), "indexes": [
        {"key": {"name": 1}, "name": "name_1"},
        {"key": {"name": 1}, "name": "name_ci", "collation": {"locale": "en", "strength": 2}},
    ]})
    .await?;
    let what = (
        "W14",
        "case-insensitive find through a collation index",
        "the same find, simple collation and index",
    );
    crate::find_pair::run(main, ops, servers, what, |name, collated| match collated {
        true => (
            doc! {"name": name.to_uppercase()},
            Some(
                Collation::builder()
                    .locale("en")
                    .strength(CollationStrength::Secondary)
                    .build(),
            ),
        ),
        false => (doc! {"name": name}, None),
    })
    .await
}
