//! `renameCollection` on shards. A router sends it to the database's primary
//! (`_shardsvrRenameCollection`), which renames an unsharded collection itself under the
//! cluster's DDL lock and hands a rename involving a sharded collection to the config server's
//! coordinator. That coordinator's steps run on every shard: block CRUD on both names and
//! rename the local data (`_shardsvrRenameCollectionParticipant`), then, once the routing table
//! names the new collection, unblock (`_shardsvrRenameCollectionUnblockParticipant`).

use super::super::ShardState;
use crate::command::CommandRequest;
use crate::error::{MongoError, Result};
use crate::server::{CommandSpec, RequestContext};
use bson::{Bson, Document, RawDocumentBuf, doc};

pub(super) fn commands() -> Vec<CommandSpec<ShardState>> {
    vec![
        CommandSpec::new("_shardsvrRenameCollection", rename_collection)
            .help("Internal: renames a collection of a database this shard is the primary of"),
        CommandSpec::new("_shardsvrRenameCollectionParticipant", participant)
            .help("Internal: blocks CRUD on both names of a rename and renames this shard's data"),
        CommandSpec::new(
            "_shardsvrRenameCollectionUnblockParticipant",
            unblock_participant,
        )
        .help("Internal: unblocks CRUD on both names of a finished rename"),
    ]
}

async fn rename_collection(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let (from, to) = names(&req)?;
    let drop_target = req.args().bool("dropTarget")?.unwrap_or(false);
    let ddl = state
        .routed_ddl_lock(&req, &[&from, &to], "renameCollection")
        .await?;
    // Only under the lock does the answer stay true.
    let sharded = match involves_sharded(state, &from, &to).await {
        Ok(sharded) => sharded,
        Err(e) => {
            ddl.release().await;
            return Err(e);
        }
    };
    if sharded {
        // The coordinator takes the lock itself.
        ddl.release().await;
        let config = state
            .connector
            .client(&state.require_identity()?.config_host);
        let command =
            doc! {"_configsvrRenameCollection": &from, "to": &to, "dropTarget": drop_target};
        config.run_doc("admin", command).await?;
        return Ok(RawDocumentBuf::new());
    }
    let renamed = rename_unsharded(state, &req, &from, &to, drop_target).await;
    ddl.release().await;
    renamed
}

/// The source (`db.<command value>`) and target (`to`) of a rename step, in one database.
fn names(req: &CommandRequest) -> Result<(String, String)> {
    let args = req.args();
    let from = format!("{}.{}", req.db, args.collection()?);
    let to = args
        .str("to")?
        .ok_or_else(|| crate::command::missing(req.name(), "to"))?
        .to_string();
    crate::catalog::check_rename(&from, &to)?;
    Ok((from, to))
}

async fn involves_sharded(state: &ShardState, from: &str, to: &str) -> Result<bool> {
    let config = state
        .connector
        .client(&state.require_identity()?.config_host);
    for ns in [from, to] {
        if crate::rpc::config::collection_entry(&config, ns)
            .await?
            .is_some()
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The rename of an unsharded collection, under the cluster's DDL lock on both names. Into
/// another database only when this shard is that database's primary too, as MongoDB requires.
async fn rename_unsharded(
    state: &ShardState,
    req: &CommandRequest,
    from: &str,
    to: &str,
    drop_target: bool,
) -> Result<RawDocumentBuf> {
    let (to_db, _) = crate::catalog::split_namespace(to)?;
    if to_db != req.db {
        let identity = state.require_identity()?;
        let config = state.connector.client(&identity.config_host);
        let primary = crate::rpc::config::database_entry(&config, to_db)
            .await?
            .map(|entry| entry.primary);
        if primary.as_deref() != Some(identity.shard_name.as_str()) {
            return Err(MongoError::location(
                5448802,
                "Source and destination collections must be on same shard",
            ));
        }
    }
    // Requests running on either name finish first (a dropped target's table goes away); in
    // name order, so two renames between the same databases cannot wait for each other.
    let reason = format!("rename of {from} to {to}");
    let mut dbs = [req.db.as_str(), to_db];
    dbs.sort_unstable();
    let _first = state.enter_critical_section(dbs[0], &reason).await?;
    let _second = match dbs[1] != dbs[0] {
        true => Some(state.enter_critical_section(dbs[1], &reason).await?),
        false => None,
    };
    pause_before(state, "renameCollection", "rename").await;
    crate::datanode::commands::collections::rename_namespace(state, from, to, drop_target).await
}

async fn pause_before(state: &ShardState, operation: &str, phase: &str) {
    state
        .node
        .fail_points
        .pause_if(
            "hangBeforeDdlPhase",
            &doc! {"operation": operation, "phase": phase},
        )
        .await;
}

/// Why both names are in a critical section: the same for every step of one rename, so each
/// step is idempotent.
fn section_reason(from: &str, to: &str) -> Document {
    doc! {"command": "rename", "from": from, "to": to}
}

/// `{_shardsvrRenameCollectionParticipant: <coll>, to, sourceUUID}`: enters the recoverable
/// critical section on both names, then renames this shard's data, dropping its part of the
/// target. The renamed collection keeps the source's UUID, so a repeated step recognises its
/// own work: a target with another UUID is the old target, still to be dropped.
async fn participant(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let (from, to) = names(&req)?;
    let source_uuid = match req.args().get("sourceUUID")? {
        Some(uuid @ bson::RawBsonRef::Binary(_)) => Bson::try_from(uuid.to_raw_bson())?,
        _ => return Err(crate::command::missing(req.name(), "sourceUUID")),
    };
    state
        .critical_sections
        .enter_recoverable(
            &state.storage,
            &req.db,
            &[&from, &to],
            &section_reason(&from, &to),
        )
        .await?;
    pause_before(state, "renameCollectionParticipant", "rename").await;
    let Some(db) = state.storage.database(&req.db).await else {
        return Ok(RawDocumentBuf::new());
    };
    let (_, from_coll) = crate::catalog::split_namespace(&from)?;
    let (_, to_coll) = crate::catalog::split_namespace(&to)?;
    if db.collection(from_coll).is_some() {
        crate::datanode::commands::collections::rename_namespace(state, &from, &to, true).await?;
    } else if let Some(target) = db.collection(to_coll) {
        if target.uuid_bson() != source_uuid {
            db.drop_collection(to_coll).await?;
            state.cursors.kill_namespace(&to);
        }
    }
    Ok(RawDocumentBuf::new())
}

/// `{_shardsvrRenameCollectionUnblockParticipant: <coll>, to}`: forgets both names' filtering
/// metadata (the routing table changed under them) and leaves the critical section; the
/// requests that waited then refresh and meet the new placement.
async fn unblock_participant(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let (from, to) = names(&req)?;
    for ns in [&from, &to] {
        state.forget_collection(ns).await?;
    }
    state
        .critical_sections
        .release_recoverable(&state.storage, &[&from, &to], &section_reason(&from, &to))
        .await?;
    Ok(RawDocumentBuf::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_name_both_collections_in_the_database() {
        let req = CommandRequest::from_document(
            "db",
            &doc! {"_shardsvrRenameCollectionParticipant": "a", "to": "db.b"},
        )
        .unwrap();
        assert_eq!(names(&req).unwrap(), ("db.a".into(), "db.b".into()));
        let req =
            CommandRequest::from_document("db", &doc! {"_shardsvrRenameCollection": "a"}).unwrap();
        assert_eq!(
            names(&req).unwrap_err().code(),
            crate::error::ErrorCode::IDLFailedToParse
        );
        let req = CommandRequest::from_document(
            "db",
            &doc! {"_shardsvrRenameCollection": "a", "to": "db.a"},
        )
        .unwrap();
        assert_eq!(
            names(&req).unwrap_err().code(),
            crate::error::ErrorCode::IllegalOperation
        );
    }
}
