//! The refineCollectionShardKey coordinator: the config server holds the collection's DDL lock
//! and hands the work to the database's primary shard (`_shardsvrRefineCollectionShardKey`:
//! every shard holding chunks checks it has an index for the new key, then the commit, fenced
//! by this coordinator's term). The step is idempotent — once committed, the same key again
//! changes nothing — so it is sent again after any crash until it succeeds.

use super::{CoordinatorDoc, Coordinators, Operation, database_entry, run_on_shard};
use crate::configsvr::ConfigState;
use crate::error::Result;
use bson::{Document, doc};

/// `refineCollectionShardKey` of `ns` to `key`, through its coordinator.
pub(in crate::configsvr) async fn refine_shard_key(
    state: &ConfigState,
    ns: &str,
    key: Document,
) -> Result<Document> {
    Coordinators::run(
        state,
        ns,
        Operation::RefineCollectionShardKey,
        doc! {"key": key},
    )
    .await
}

pub(super) async fn run(state: &ConfigState, doc: CoordinatorDoc) -> Result<Document> {
    let ns = doc.namespace().to_string();
    let (db, coll) = crate::catalog::split_namespace(&ns)?;
    doc.checkpoint(state).await;
    let entry = database_entry(state, db, || {
        format!("refineCollectionShardKey: collection {ns} does not exist")
    })
    .await?;
    let command = doc! {
        "_shardsvrRefineCollectionShardKey": coll,
        "newShardKey": doc.fields().get_document("key").cloned().unwrap_or_default(),
        "ddlLockTerm": doc.lock_term(),
        "databaseVersion": entry.version.to_document(),
    };
    run_on_shard(state, &entry.primary, db, command, false).await
}
