//! The movePrimary coordinator: `start` checks the target and records the current primary as
//! the donor, `moveOnDonor` has the donor copy the database's collections to the new primary
//! and commit the move (`_shardsvrMovePrimary`, fenced by this coordinator's term; skipped when
//! the routing table already names the new primary, i.e. the commit happened before a crash),
//! `cleanupDonor` has the donor drop its now unread copies (`_shardsvrMovePrimaryCleanup`). The
//! donor's step is idempotent before its commit (the recipient's copies are replaced), so it is
//! sent again after any crash; the cleanup is idempotent.

use super::{CoordinatorDoc, Coordinators, Operation, database_entry, run_on_shard};
use crate::configsvr::ConfigState;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Document, doc};

/// `movePrimary` of `db` to the shard `to`, through its coordinator.
pub(in crate::configsvr) async fn move_primary(
    state: &ConfigState,
    db: &str,
    to: &str,
) -> Result<Document> {
    Coordinators::run(state, db, Operation::MovePrimary, doc! {"to": to}).await
}

pub(super) async fn run(state: &ConfigState, mut doc: CoordinatorDoc) -> Result<Document> {
    let db = doc.namespace().to_string();
    let to = doc.fields().get_str("to").unwrap_or_default().to_string();
    if doc.phase() == "start" {
        doc.checkpoint(state).await;
        let entry = database_entry(state, &db, || format!("Database {db} not found")).await?;
        if !state.shards().await?.iter().any(|(name, _)| *name == to) {
            return Err(MongoError::new(
                ErrorCode::ShardNotFound,
                format!("Shard {to} not found"),
            ));
        }
        if entry.primary == to {
            return Ok(doc! {});
        }
        doc.enter_phase(
            state,
            "moveOnDonor",
            doc! {"donor": &entry.primary},
            Vec::new(),
        )
        .await?;
    }
    let donor = doc
        .fields()
        .get_str("donor")
        .unwrap_or_default()
        .to_string();
    if doc.phase() == "moveOnDonor" {
        doc.checkpoint(state).await;
        let entry = database_entry(state, &db, || format!("Database {db} not found")).await?;
        if entry.primary == donor {
            let command = doc! {
                "_shardsvrMovePrimary": 1,
                "to": &to,
                "ddlLockTerm": doc.lock_term(),
                "databaseVersion": entry.version.to_document(),
            };
            run_on_shard(state, &donor, &db, command, false).await?;
        } else if entry.primary != to {
            return Err(MongoError::new(
                ErrorCode::ConflictingOperationInProgress,
                format!("the primary shard of {db} changed while it was being moved"),
            ));
        }
        doc.enter_phase(state, "cleanupDonor", doc! {}, Vec::new())
            .await?;
    }
    doc.checkpoint(state).await;
    let cleanup = doc! {"_shardsvrMovePrimaryCleanup": 1};
    run_on_shard(state, &donor, &db, cleanup, true).await?;
    // The new primary learns its version now rather than at its next request.
    let flush = doc! {"_flushDatabaseCacheUpdates": &db};
    if let Err(e) = run_on_shard(state, &to, "admin", flush, false).await {
        tracing::warn!(db = %db, error = %e, "could not tell the new primary to refresh");
    }
    tracing::info!(db = %db, from = %donor, to = %to, "moved the primary shard");
    Ok(doc! {})
}
