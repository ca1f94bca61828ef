//! The dropCollection coordinator: `removeMetadata` deletes a sharded collection's routing
//! metadata (entry and chunks) — from then on every router and shard learns the collection is
//! gone at its next versioned request —, `dropOnShards` drops the data on every shard (the
//! primary first: unsharded collections and views live there), each inside its critical
//! section so requests already admitted finish first.

use super::{CoordinatorDoc, Coordinators, Operation, metadata_removal, run_on_shard};
use crate::configsvr::ConfigState;
use crate::error::Result;
use bson::{Document, doc};

/// `drop` of `ns`, through its coordinator.
pub(in crate::configsvr) async fn drop_collection(
    state: &ConfigState,
    ns: &str,
) -> Result<Document> {
    Coordinators::run(state, ns, Operation::DropCollection, doc! {}).await
}

pub(super) async fn run(state: &ConfigState, mut doc: CoordinatorDoc) -> Result<Document> {
    let ns = doc.namespace().to_string();
    let (db, coll) = crate::catalog::split_namespace(&ns)?;
    if doc.phase() == "removeMetadata" {
        doc.checkpoint(state).await;
        let _chunks = state.chunk_op_lock.lock().await;
        let writes = metadata_removal(state, &ns).await?;
        let sharded = !writes.is_empty();
        doc.enter_phase(state, "dropOnShards", doc! {"sharded": sharded}, writes)
            .await?;
        if sharded {
            tracing::info!(ns = %ns, "removed the routing metadata of a dropped collection");
        }
    }
    doc.checkpoint(state).await;
    let mut reply = doc! {};
    for shard in state.shards_primary_first(db).await? {
        let command = doc! {"_shardsvrDropCollectionParticipant": coll};
        let dropped = run_on_shard(state, &shard, db, command, true).await?;
        if let (false, Ok(n)) = (reply.contains_key("ns"), dropped.get_i32("nIndexesWas")) {
            reply.insert("nIndexesWas", n);
            reply.insert("ns", &ns);
        }
    }
    Ok(reply)
}
