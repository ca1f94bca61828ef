//! The dropDatabase coordinator: `removeMetadata` deletes the database entry and the routing
//! metadata of its sharded collections in one transaction (the database lock keeps it from
//! being created again meanwhile), `dropOnShards` drops the database on every shard, which
//! also forgets its cached database version, so a router still holding the old version meets
//! StaleDbVersion.

use super::{CoordinatorDoc, Coordinators, Operation, metadata_removal, run_on_shard};
use crate::configsvr::ConfigState;
use crate::error::Result;
use bson::{Bson, Document, doc};

/// `dropDatabase` of `db`, through its coordinator.
pub(in crate::configsvr) async fn drop_database(state: &ConfigState, db: &str) -> Result<Document> {
    Coordinators::run(state, db, Operation::DropDatabase, doc! {}).await
}

pub(super) async fn run(state: &ConfigState, mut doc: CoordinatorDoc) -> Result<Document> {
    let db = doc.namespace().to_string();
    if doc.phase() == "removeMetadata" {
        doc.checkpoint(state).await;
        let store = state.store();
        if store
            .find_one("databases", &doc! {"_id": &db})
            .await?
            .is_none()
        {
            return Ok(doc! {});
        }
        let _entries = state.database_op_lock.lock().await;
        let _chunks = state.chunk_op_lock.lock().await;
        let mut writes = Vec::new();
        for entry in store.find("collections", &doc! {}).await? {
            let Ok(ns) = entry.get_str("_id") else {
                continue;
            };
            if crate::catalog::split_namespace(ns).is_ok_and(|(d, _)| d == db) {
                writes.extend(metadata_removal(state, ns).await?);
            }
        }
        writes.push(super::ConfigWrite::Delete(
            "databases",
            Bson::String(db.clone()),
        ));
        doc.enter_phase(state, "dropOnShards", doc! {}, writes)
            .await?;
        tracing::info!(db = %db, "removed the routing metadata of a dropped database");
    }
    doc.checkpoint(state).await;
    for shard in state.shards_primary_first(&db).await? {
        let command = doc! {"_shardsvrDropDatabaseParticipant": 1};
        run_on_shard(state, &shard, &db, command, true).await?;
    }
    Ok(doc! {"dropped": db})
}
