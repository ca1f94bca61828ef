//! The renameCollection coordinator, for renames that involve a sharded collection (the
//! database's primary renames unsharded ones itself). It holds the DDL lock of both names and
//! goes through four phases, as MongoDB's rename coordinator does:
//! `checkPreconditions` (the source exists, the target does not unless `dropTarget`),
//! `blockCrud` (every shard enters a recoverable critical section on both names and renames
//! its local data, dropping its part of the target), `renameMetadata` (one transaction: the
//! target's routing metadata goes, the source's entry moves to the new name under a new
//! generation, so every cached version of either name is stale) and `unblockCrud` (every
//! shard forgets both names' filtering metadata and leaves the section). From `blockCrud` on
//! every step is idempotent and retried until it succeeds: the sections must not stay behind.

use super::{CoordinatorDoc, Coordinators, Operation, database_entry, run_on_shard};
use crate::catalog::{CollectionEntry, CollectionGeneration};
use crate::configsvr::ConfigState;
use crate::configsvr::commands::StoredRouting;
use crate::configsvr::store::ConfigWrite;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, DateTime, Document, doc};

/// `renameCollection` of `from` to `to` (same database), through its coordinator.
pub(in crate::configsvr) async fn rename_collection(
    state: &ConfigState,
    from: &str,
    to: &str,
    drop_target: bool,
) -> Result<Document> {
    Coordinators::run(
        state,
        from,
        Operation::RenameCollection,
        doc! {"to": to, "dropTarget": drop_target},
    )
    .await
}

/// The name the coordinator renames to (its lock scope needs it too).
pub(super) fn target(doc: &Document) -> Result<&str> {
    doc.get_str("to")
        .map_err(|_| MongoError::internal("a renameCollection coordinator without `to`"))
}

pub(super) async fn run(state: &ConfigState, mut doc: CoordinatorDoc) -> Result<Document> {
    let from = doc.namespace().to_string();
    let to = target(doc.fields())?.to_string();
    let (db, from_coll) = crate::catalog::split_namespace(&from)?;
    if doc.phase() == "checkPreconditions" {
        doc.checkpoint(state).await;
        let checked = check_preconditions(state, &doc, &from, &to).await?;
        doc.enter_phase(state, "blockCrud", checked, Vec::new())
            .await?;
    }
    let participants: Vec<String> = doc
        .fields()
        .get_array("participants")
        .map(|shards| {
            shards
                .iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if doc.phase() == "blockCrud" {
        doc.checkpoint(state).await;
        let source_uuid = doc
            .fields()
            .get("sourceUUID")
            .cloned()
            .unwrap_or(Bson::Null);
        for shard in &participants {
            let command = doc! {
                "_shardsvrRenameCollectionParticipant": from_coll,
                "to": &to,
                "sourceUUID": source_uuid.clone(),
            };
            run_on_shard(state, shard, db, command, true).await?;
        }
        doc.enter_phase(state, "renameMetadata", doc! {}, Vec::new())
            .await?;
    }
    if doc.phase() == "renameMetadata" {
        doc.checkpoint(state).await;
        let _chunks = state.chunk_op_lock.lock().await;
        let writes = rename_metadata(state, &from, &to).await?;
        doc.enter_phase(state, "unblockCrud", doc! {}, writes)
            .await?;
        tracing::info!(from = %from, to = %to, "renamed the routing metadata");
    }
    doc.checkpoint(state).await;
    for shard in &participants {
        let command = doc! {"_shardsvrRenameCollectionUnblockParticipant": from_coll, "to": &to};
        run_on_shard(state, shard, db, command, true).await?;
    }
    Ok(doc! {})
}

/// What must hold before anything changes (under the lock of both names, so it stays true):
/// returns the fields `blockCrud` needs — the source's UUID (the renamed collection keeps it,
/// which makes each shard's step idempotent) and the shards taking part.
async fn check_preconditions(
    state: &ConfigState,
    doc: &CoordinatorDoc,
    from: &str,
    to: &str,
) -> Result<Document> {
    crate::catalog::check_rename(from, to)?;
    let (db, from_coll) = crate::catalog::split_namespace(from)?;
    let (to_db, to_coll) = crate::catalog::split_namespace(to)?;
    if db != to_db {
        return Err(MongoError::new(
            ErrorCode::CommandFailed,
            "Source and destination collections must be on the same database.",
        ));
    }
    let missing = || format!("Source collection {from} does not exist");
    let database = database_entry(state, db, missing).await?;
    let local = primary_collections(state, &database.primary, db, &[from_coll, to_coll]).await?;
    let source = StoredRouting::entry(state, from).await?;
    let source_uuid = match (&source, local.get(from_coll)) {
        (Some(entry), _) => Bson::Binary(entry.uuid.clone()),
        (None, Some(info)) if info.get_str("type") == Ok("view") => {
            return Err(MongoError::new(
                ErrorCode::CommandNotSupportedOnView,
                format!("cannot rename view {from}"),
            ));
        }
        // The shards' steps tell the renamed collection from an old target by this UUID: it
        // must be known.
        (None, Some(info)) => info
            .get_document("info")
            .ok()
            .and_then(|i| i.get("uuid"))
            .filter(|uuid| matches!(uuid, Bson::Binary(_)))
            .cloned()
            .ok_or_else(|| {
                MongoError::internal(format!("the primary shard reported no UUID for {from}"))
            })?,
        (None, None) => return Err(MongoError::namespace_not_found(missing())),
    };
    let target_exists =
        StoredRouting::entry(state, to).await?.is_some() || local.contains_key(to_coll);
    if target_exists && !doc.fields().get_bool("dropTarget").unwrap_or(false) {
        return Err(MongoError::new(
            ErrorCode::NamespaceExists,
            "target namespace exists",
        ));
    }
    let participants: Vec<String> = state.shards_primary_first(db).await?;
    Ok(doc! {
        "sourceUUID": source_uuid,
        "sharded": source.is_some(),
        "participants": participants,
    })
}

/// The `listCollections` entries of `names` on the primary shard, by name.
async fn primary_collections(
    state: &ConfigState,
    primary: &str,
    db: &str,
    names: &[&str],
) -> Result<std::collections::HashMap<String, Document>> {
    let command = doc! {"listCollections": 1, "filter": {"name": {"$in": names}}};
    let reply = run_on_shard(state, primary, db, command, false).await?;
    let batch = reply
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .map_err(|_| MongoError::internal("a listCollections reply without a first batch"))?;
    Ok(batch
        .iter()
        .filter_map(Bson::as_document)
        .filter_map(|info| Some((info.get_str("name").ok()?.to_string(), info.clone())))
        .collect())
}

/// The routing metadata change: the target's entry and chunks go; a sharded source's entry
/// moves to `to` under a new generation (its chunks refer to its UUID, which stays).
async fn rename_metadata(state: &ConfigState, from: &str, to: &str) -> Result<Vec<ConfigWrite>> {
    let mut writes = super::metadata_removal(state, to).await?;
    if let Some(source) = StoredRouting::entry(state, from).await? {
        let renamed = CollectionEntry {
            ns: to.to_string(),
            generation: CollectionGeneration::new(state.node.clock.tick()),
            last_modified: DateTime::now(),
            ..source
        };
        writes.push(ConfigWrite::Delete(
            "collections",
            Bson::String(from.into()),
        ));
        writes.push(ConfigWrite::Upsert("collections", renamed.to_document()));
    }
    Ok(writes)
}
