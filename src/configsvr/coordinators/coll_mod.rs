//! The collMod coordinator: the config server holds the collection's DDL lock and sends the
//! `collMod` to every shard holding the collection — the database's primary and, for a sharded
//! collection, every shard owning chunks — one after another, the primary first (its reply is
//! the command's). `collMod` is idempotent, so after a crash the coordinator sends it again to
//! all of them.

use super::{CoordinatorDoc, Coordinators, Operation, database_entry, run_on_shard};
use crate::configsvr::ConfigState;
use crate::error::Result;
use bson::{Bson, Document, doc};

/// `collMod` of `ns` (`command` is the command as the client sent it), through its coordinator.
pub(in crate::configsvr) async fn coll_mod(
    state: &ConfigState,
    ns: &str,
    command: Document,
) -> Result<Document> {
    Coordinators::run(state, ns, Operation::CollMod, doc! {"command": command}).await
}

pub(super) async fn run(state: &ConfigState, doc: CoordinatorDoc) -> Result<Document> {
    let ns = doc.namespace().to_string();
    let (db, _) = crate::catalog::split_namespace(&ns)?;
    doc.checkpoint(state).await;
    let command = doc
        .fields()
        .get_document("command")
        .cloned()
        .unwrap_or_default();
    let database = database_entry(state, db, || format!("ns does not exist: {ns}")).await?;
    let store = state.store();
    let mut shards = vec![database.primary];
    if let Some(entry) = store.find_one("collections", &doc! {"_id": &ns}).await? {
        let uuid = entry.get("uuid").cloned().unwrap_or(Bson::Null);
        for chunk in store.find("chunks", &doc! {"uuid": uuid}).await? {
            if let Ok(shard) = chunk.get_str("shard") {
                if !shards.iter().any(|s| s == shard) {
                    shards.push(shard.to_string());
                }
            }
        }
    }
    let mut reply = None;
    for shard in shards {
        let answered = run_on_shard(state, &shard, db, command.clone(), false).await?;
        reply.get_or_insert(answered);
    }
    Ok(reply.unwrap_or_default())
}
