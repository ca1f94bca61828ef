//! The shardCollection coordinator: the config server holds the collection's DDL lock and hands
//! the work to the database's primary shard (`_shardsvrCreateCollection`: checks, the shard key
//! index, the other shards' copies for a hashed key, then the commit it sends back fenced by this
//! coordinator's lock term). Every step of the shard is idempotent, so after a crash of the
//! config server, of the primary or of another shard the coordinator sends it again until it
//! succeeds; a late commit from an attempt before a config server restart carries a term that
//! no longer holds the lock and is refused.

use super::{CoordinatorDoc, Coordinators, Operation, database_entry, run_on_shard};
use crate::configsvr::ConfigState;
use crate::error::Result;
use bson::{Document, doc};

/// `shardCollection` of `ns` with `options` (`key`, `unique`), through its coordinator.
pub(in crate::configsvr) async fn shard_collection(
    state: &ConfigState,
    ns: &str,
    options: Document,
) -> Result<Document> {
    Coordinators::run(state, ns, Operation::ShardCollection, options).await
}

pub(super) async fn run(state: &ConfigState, doc: CoordinatorDoc) -> Result<Document> {
    let ns = doc.namespace().to_string();
    let (db, coll) = crate::catalog::split_namespace(&ns)?;
    doc.checkpoint(state).await;
    let entry = database_entry(state, db, || format!("database {db} not found")).await?;
    let fields = doc.fields();
    let mut command = doc! {
        "_shardsvrCreateCollection": coll,
        "shardKey": fields.get_document("key").cloned().unwrap_or_default(),
        "ddlLockTerm": doc.lock_term(),
        "databaseVersion": entry.version.to_document(),
    };
    if let Ok(unique) = fields.get_bool("unique") {
        command.insert("unique", unique);
    }
    if let Ok(collation) = fields.get_document("collation") {
        command.insert("collation", collation.clone());
    }
    run_on_shard(state, &entry.primary, db, command, false).await
}
