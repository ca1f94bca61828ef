//! W15 (issue 25): a `$text` search for one document's number (`name` is `item-<8 digits>`,
//! tokenized into "item" and the digits) through a text index on `name`, beside the equality
//! find of the same document through `{name: 1}` in the same run. The equality find is the
//! text search's ceiling (the target: p50 ≤ 1.5× of it). The text index is dropped at
//! the end so that the workloads after this one do not maintain it.

use crate::dataset::Dataset;
use crate::report::Outcome;
use crate::rss::Servers;
use mongodb::bson::doc;

/// Both indexes on `name`, then the text searches beside the equality finds.
pub async fn run(main: &Dataset, ops: usize, servers: &Servers) -> anyhow::Result<Outcome> {
    let db = main.coll.client().database(&main.coll.namespace().db);
    db.run_command(doc! {"createIndexes": main.coll.name(), "indexes": [
        {"key": {"name": 1}, "name": "name_1"},
        {"key": {"name": "text"}, "name": "name_text"},
    ]})
    .await?;
    let what = (
        "W15",
        "$text search through a text index",
        "the same document by equality",
    );
    let outcome = crate::find_pair::run(main, ops, servers, what, |name, text| match text {
        true => {
            let number = name.trim_start_matches("item-");
            (doc! {"$text": {"$search": number}}, None)
        }
        false => (doc! {"name": name}, None),
    })
    .await;
    db.run_command(doc! {"dropIndexes": main.coll.name(), "index": "name_text"})
        .await?;
    outcome
}
