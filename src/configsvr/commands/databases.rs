//! `_configsvrCreateDatabase` and `_configsvrDropDatabase`: the database entries of the routing
//! table (primary shard and database version).

use super::super::ConfigState;
use super::super::ddl_locks::{LocalDdlLock, LockScope};
use crate::catalog::{DatabaseEntry, DatabaseVersion, validate_db_name};
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::{CommandSpec, RequestContext};
use bson::{Bson, Document, RawDocumentBuf, doc};

pub(super) fn commands() -> Vec<CommandSpec<ConfigState>> {
    vec![
        CommandSpec::new("_configsvrCreateDatabase", create_database)
            .admin_only()
            .help("Internal: creates a database entry, choosing its primary shard"),
        CommandSpec::new("_configsvrDropDatabase", drop_database)
            .admin_only()
            .help("Internal: drops a database on every shard and removes its entry"),
        CommandSpec::new("_configsvrMovePrimary", move_primary)
            .admin_only()
            .help("Internal: moves a database's primary shard through its coordinator"),
        CommandSpec::new("_configsvrCommitMovePrimary", commit_move_primary)
            .admin_only()
            .help(
                "Internal: records a database's new primary shard, bumping its version's lastMod",
            ),
    ]
}

fn target_db(req: &CommandRequest) -> Result<String> {
    match req.args().target()? {
        bson::RawBsonRef::String(db) => {
            validate_db_name(db)?;
            Ok(db.to_string())
        }
        _ => Err(MongoError::type_mismatch(format!(
            "{} requires a database name",
            req.name()
        ))),
    }
}

fn reply_for(entry: &Document) -> Result<RawDocumentBuf> {
    Ok(RawDocumentBuf::from_document(&doc! {
        "databaseVersion": entry.get_document("version").cloned().unwrap_or_default(),
        "primary": entry.get_str("primary").unwrap_or_default(),
    })?)
}

async fn create_database(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let db = target_db(&req)?;
    if matches!(db.as_str(), "admin" | "config" | "local") {
        return Err(MongoError::new(
            ErrorCode::InvalidOptions,
            format!("Cannot create database {db}: it is an internal database"),
        ));
    }
    let requested_primary = req.args().str("primaryShard")?.map(str::to_string);
    let store = state.store();
    if let Some(entry) = store.find_one("databases", &doc! {"_id": &db}).await? {
        return reply_for(&entry);
    }
    // Creating waits for a dropDatabase of the same name to finish.
    let ddl = LocalDdlLock::acquire(
        &state.ddl_locks,
        &LockScope::database(&db),
        "createDatabase",
        state.lock_timeout(),
    )
    .await?;
    let created = create_locked(state, &db, requested_primary).await;
    ddl.release().await?;
    created
}

/// Creates the database entry, under the database's DDL lock.
async fn create_locked(
    state: &ConfigState,
    db: &str,
    requested_primary: Option<String>,
) -> Result<RawDocumentBuf> {
    let store = state.store();
    let _entries = state.database_op_lock.lock().await;
    if let Some(entry) = store.find_one("databases", &doc! {"_id": &db}).await? {
        return reply_for(&entry);
    }
    for entry in store.find("databases", &doc! {}).await? {
        if let Ok(other) = entry.get_str("_id") {
            if other.eq_ignore_ascii_case(db) {
                return Err(MongoError::new(
                    ErrorCode::DatabaseDifferCase,
                    format!(
                        "can't have 2 databases that just differ on case  have: {other} want to add: {db}"
                    ),
                ));
            }
        }
    }
    let shards = state.shards().await?;
    if shards.is_empty() {
        return Err(MongoError::new(
            ErrorCode::ShardNotFound,
            format!("Database {db} could not be created :: caused by :: No shards found"),
        ));
    }
    let primary = match requested_primary {
        Some(name) => {
            if !shards.iter().any(|(n, _)| *n == name) {
                return Err(MongoError::new(
                    ErrorCode::ShardNotFound,
                    format!("Shard {name} not found"),
                ));
            }
            name
        }
        None => least_loaded_shard(state, &shards).await?,
    };
    let entry = DatabaseEntry {
        name: db.to_string(),
        primary: primary.clone(),
        version: DatabaseVersion::new(state.node.clock.tick()),
    }
    .to_document();
    store.insert("databases", &entry).await?;
    tracing::info!(db = %db, primary = %primary, "created database");
    reply_for(&entry)
}

/// The shard holding the least data (ties broken by name), as MongoDB picks a new primary.
async fn least_loaded_shard(state: &ConfigState, shards: &[(String, String)]) -> Result<String> {
    let mut best: Option<(i64, String)> = None;
    for (name, host) in shards {
        let reply = state
            .connector
            .client(host)
            .run_doc("admin", doc! {"listDatabases": 1})
            .await?;
        let size = match reply.get("totalSize") {
            Some(Bson::Int64(v)) => *v,
            Some(Bson::Int32(v)) => i64::from(*v),
            Some(Bson::Double(v)) => *v as i64,
            _ => 0,
        };
        if best.as_ref().is_none_or(|(s, n)| (size, name) < (*s, n)) {
            best = Some((size, name.clone()));
        }
    }
    Ok(best.expect("at least one shard").1)
}

/// `{_configsvrMovePrimary: db, to}`: through its coordinator (`coordinators::move_primary`).
async fn move_primary(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let db = target_db(&req)?;
    let to = req
        .args()
        .str("to")?
        .ok_or_else(|| crate::command::missing(req.name(), "to"))?
        .to_string();
    let reply = super::super::coordinators::move_primary(state, &db, &to).await?;
    Ok(RawDocumentBuf::from_document(&reply)?)
}

/// `{_configsvrCommitMovePrimary: db, to, expectedDatabaseVersion}`: the old primary copied
/// the database's unsharded collections to `to` under the version it names; a database changed
/// since (dropped, re-created, moved by someone else) is refused with
/// ConflictingOperationInProgress. The new version keeps uuid and timestamp, lastMod + 1.
async fn commit_move_primary(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let db = target_db(&req)?;
    let args = req.args();
    let to = args
        .str("to")?
        .ok_or_else(|| crate::command::missing(req.name(), "to"))?
        .to_string();
    let expected = args
        .document("expectedDatabaseVersion")?
        .ok_or_else(|| crate::command::missing(req.name(), "expectedDatabaseVersion"))?;
    let expected = DatabaseVersion::from_document(&expected)?;
    let _entries = state.database_op_lock.lock().await;
    let _fence = state.fence_commit(&req, &db).await?;
    if !state.shards().await?.iter().any(|(name, _)| *name == to) {
        return Err(MongoError::new(
            ErrorCode::ShardNotFound,
            format!("Shard {to} not found"),
        ));
    }
    let store = state.store();
    let Some(current) = store.find_one("databases", &doc! {"_id": &db}).await? else {
        return Err(MongoError::new(
            ErrorCode::NamespaceNotFound,
            format!("database {db} not found"),
        ));
    };
    let current = DatabaseEntry::from_document(&current)?;
    if current.version != expected {
        return Err(MongoError::new(
            ErrorCode::ConflictingOperationInProgress,
            format!("database {db} changed while its primary shard was being moved"),
        ));
    }
    let moved = DatabaseEntry {
        primary: to.clone(),
        version: DatabaseVersion {
            last_mod: current.version.last_mod + 1,
            ..current.version
        },
        ..current
    }
    .to_document();
    store.upsert("databases", &moved).await?;
    tracing::info!(db = %db, to = %to, "moved the primary shard of a database");
    reply_for(&moved)
}

/// `{_configsvrDropDatabase: db}`: through its coordinator (`coordinators::drop_database`).
async fn drop_database(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let db = target_db(&req)?;
    if matches!(db.as_str(), "admin" | "config" | "local") {
        return Err(MongoError::new(
            ErrorCode::IllegalOperation,
            format!("Cannot drop '{db}' database"),
        ));
    }
    let reply = super::super::coordinators::drop_database(state, &db).await?;
    Ok(RawDocumentBuf::from_document(&reply)?)
}
