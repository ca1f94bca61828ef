//! DDL on the router: `create` and `renameCollection` go to the database's primary shard (which
//! hands a rename involving a sharded collection to the config server); index commands go to every shard owning chunks of a sharded
//! collection; `drop` (sharded or not), `dropDatabase` and `collMod` go to the config server,
//! whose coordinators apply them on the shards (and remove the routing metadata of drops).

use super::super::RouterState;
use super::super::forward::{ShardReply, on_config_server};
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use bson::{RawDocumentBuf, doc};

pub(super) async fn create(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let db = req.db.clone();
    let (_, reply) = state
        .send_to_database_primary(&db, req, true)
        .await?
        .expect("create creates the database");
    Ok(reply)
}

/// One reply for a command every owning shard ran successfully: the first shard's.
fn merged_reply(replies: Vec<ShardReply>) -> Result<RawDocumentBuf> {
    replies
        .into_iter()
        .next()
        .map(|r| r.reply)
        .ok_or_else(|| MongoError::internal("no shard answered"))
}

/// Index builds go where the collection lives (the primary shard for an unsharded one, every
/// owning shard for a sharded one); the collection is created when missing, so the database
/// is too.
pub(super) async fn create_indexes(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let replies = state
        .send_to_owners(req, true, true)
        .await?
        .ok_or_else(|| MongoError::internal("createIndexes creates the database"))?;
    merged_reply(replies)
}

/// `collMod` goes to the config server, whose coordinator applies it on every shard holding the
/// collection under the collection's DDL lock.
pub(super) async fn coll_mod(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    if on_config_server(&req.db) {
        return state.config.run(req).await;
    }
    let coll = req.args().collection()?;
    crate::catalog::validate_collection_name(&req.db, coll)?;
    let ns = format!("{}.{coll}", req.db);
    let command: bson::Document = req
        .body
        .to_document()?
        .into_iter()
        .filter(|(k, _)| !crate::command::is_generic_field(k))
        .collect();
    let reply = state
        .config_ddl(doc! {"_configsvrCollMod": &ns, "command": command})
        .await?;
    Ok(RawDocumentBuf::from_document(&reply)?)
}

pub(super) async fn drop_indexes(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = format!("{}.{}", req.db, req.args().collection()?);
    match state.send_to_owners(req, true, false).await? {
        Some(replies) => merged_reply(replies),
        None => Err(MongoError::namespace_not_found(format!(
            "ns not found {ns}"
        ))),
    }
}

pub(super) async fn drop(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    if req.db == "config" || req.db == "admin" {
        let coll = req.args().collection()?;
        if req.db == "config" || coll.starts_with("system.") {
            return Err(MongoError::new(
                ErrorCode::IllegalOperation,
                format!("Cannot drop collection {}.{coll}", req.db),
            ));
        }
    }
    if on_config_server(&req.db) {
        return state.config.run(req).await;
    }
    let coll = req.args().collection()?;
    crate::catalog::validate_collection_name(&req.db, coll)?;
    let ns = format!("{}.{coll}", req.db);
    let dropped = state
        .config_ddl(doc! {"_configsvrDropCollection": &ns})
        .await;
    // Whatever happened, this router's view of the collection is no longer current.
    state.collections.invalidate(&ns);
    Ok(RawDocumentBuf::from_document(&dropped?)?)
}

pub(super) async fn drop_database(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let db = req.db.clone();
    crate::catalog::validate_db_name(&db)?;
    if matches!(db.as_str(), "admin" | "config" | "local") {
        return Err(MongoError::new(
            ErrorCode::IllegalOperation,
            format!("Cannot drop '{db}' database"),
        ));
    }
    let reply = state.config_ddl(doc! {"_configsvrDropDatabase": &db}).await;
    // Whatever happened, this router's view of the database is no longer current.
    state.databases.invalidate(&db);
    state.collections.invalidate_database(&db);
    let reply = reply?;
    Ok(RawDocumentBuf::from_document(
        &match reply.get_str("dropped") {
            Ok(name) => doc! {"dropped": name},
            Err(_) => doc! {},
        },
    )?)
}

/// A rename into another database needs both on one shard (MongoDB's rule): a target database
/// that does not exist yet is created on the source's primary shard.
async fn target_database_beside(
    state: &RouterState,
    from_db: &str,
    to_db: &str,
    source: &str,
) -> Result<()> {
    if on_config_server(from_db) || on_config_server(to_db) {
        return Err(MongoError::location(
            5448802,
            "Source and destination collections must be on same shard",
        ));
    }
    let Some(from) = state.databases.get(&state.config, from_db, false).await? else {
        return Err(MongoError::namespace_not_found(format!(
            "Source collection {source} does not exist"
        )));
    };
    state
        .config
        .run_doc(
            "admin",
            doc! {"_configsvrCreateDatabase": to_db, "primaryShard": &from.primary},
        )
        .await?;
    state.databases.invalidate(to_db);
    Ok(())
}

pub(super) async fn rename_collection(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let crate::command::requests::Rename {
        source,
        target,
        drop_target,
    } = crate::command::requests::RenameCollectionRequest::rename(&req)?;
    let target = target.as_str();
    crate::catalog::check_rename(&source, target)?;
    let (from_db, from_coll) = crate::catalog::split_namespace(&source)?;
    let (to_db, _) = crate::catalog::split_namespace(target)?;
    if to_db != from_db {
        target_database_beside(state, from_db, to_db, &source).await?;
    }
    // The primary decides, under the DDL lock, whether the rename involves a sharded
    // collection (then the config server coordinates it): this router's cache may be stale.
    let mut body = doc! {"_shardsvrRenameCollection": from_coll, "to": target};
    if drop_target {
        body.insert("dropTarget", true);
    }
    let forwarded = CommandRequest::from_document(from_db, &body)?;
    let sent = state
        .send_to_database_primary(from_db, forwarded, false)
        .await;
    for ns in [source.as_str(), target] {
        state.collections.invalidate(ns);
    }
    match sent? {
        Some((_, reply)) => Ok(reply),
        None => Err(MongoError::namespace_not_found(format!(
            "Source collection {source} does not exist"
        ))),
    }
}
