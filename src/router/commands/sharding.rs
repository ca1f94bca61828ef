//! Sharding administration on the router: `addShard` and `listShards` (config server),
//! `enableSharding` (database creation with an optional primary), `shardCollection`,
//! `refineCollectionShardKey` and `movePrimary` (sent to the database's primary shard, which
//! coordinates them), `balancerStatus`.

use super::super::RouterState;
use crate::command::{CommandRequest, missing, requests};
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::config::find_all;
use crate::server::RequestContext;
use bson::{RawBsonRef, RawDocumentBuf, doc};

/// The namespace an admin command names in its first field.
pub(super) fn target_namespace(req: &CommandRequest) -> Result<(String, String)> {
    let (db, coll) = req.args().namespace()?;
    Ok((db.to_string(), coll.to_string()))
}

/// The string a command names in its first field (a host, a database), or TypeMismatch
/// saying what it should have been.
fn target_string(req: &CommandRequest, what: &str) -> Result<String> {
    match req.args().target()? {
        RawBsonRef::String(s) => Ok(s.to_string()),
        _ => Err(MongoError::type_mismatch(format!(
            "{} requires {what}",
            req.name()
        ))),
    }
}

pub(super) async fn add_shard(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let host = target_string(&req, "the shard's \"host:port\" as a string")?;
    let mut cmd = doc! {"_configsvrAddShard": host};
    if let Some(name) = args.str("name")? {
        cmd.insert("name", name);
    }
    let reply = state.config.run_doc("admin", cmd).await?;
    state.shards.reload(&state.config).await?;
    Ok(RawDocumentBuf::from_document(&doc! {
        "shardAdded": reply.get_str("shardAdded").unwrap_or_default(),
    })?)
}

/// The balancer's state: docgrid has no balancer yet, so it is off and never in a round.
pub(super) async fn balancer_status(
    _state: &RouterState,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    Ok(RawDocumentBuf::from_document(&doc! {
        "mode": "off",
        "inBalancerRound": false,
        "numBalancerRounds": 0_i64,
    })?)
}

pub(super) async fn list_shards(
    state: &RouterState,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let shards = find_all(&state.config, "shards", doc! {}, doc! {"_id": 1}).await?;
    Ok(RawDocumentBuf::from_document(&doc! {"shards": shards})?)
}

/// `enableSharding` (no longer needed since 6.0, kept as MongoDB keeps it): creates the
/// database, on `primaryShard` when given.
pub(super) async fn enable_sharding(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let declared = requests::EnableShardingRequest::parse(&req)?;
    let db = target_string(&req, "a database name")?;
    crate::catalog::validate_db_name(&db)?;
    let mut cmd = doc! {"_configsvrCreateDatabase": &db};
    if let Some(primary) = &declared.primary_shard {
        cmd.insert("primaryShard", primary);
    }
    let reply = state.config.run_doc("admin", cmd).await?;
    if let Some(primary) = &declared.primary_shard {
        if reply.get_str("primary") != Ok(primary.as_str()) {
            return Err(MongoError::new(
                ErrorCode::NamespaceExists,
                format!(
                    "database {db} already exists with primary shard {}",
                    reply.get_str("primary").unwrap_or_default()
                ),
            ));
        }
    }
    state.databases.invalidate(&db);
    Ok(RawDocumentBuf::new())
}

/// `{shardCollection: "db.coll", key, unique}`: the database is created if needed, then the
/// config server's coordinator takes the collection's DDL lock and has the database's primary
/// shard do it (`_configsvrShardCollection` → `_shardsvrCreateCollection`).
pub(super) async fn shard_collection(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let (db, coll) = target_namespace(&req)?;
    crate::catalog::check_shardable(&db, &coll)?;
    let args = req.args();
    let declared = requests::ShardCollectionRequest::parse(&req)?;
    let key = declared
        .key
        .ok_or_else(|| missing("shardCollection", "key"))?;
    // Shard keys compare by the simple collation: another is refused as MongoDB refuses it.
    let collation = args.value("collation")?;
    if let Some(parsed) = crate::command::parse_collation(collation.as_ref())? {
        if !parsed.is_simple() {
            let given = match &collation {
                Some(bson::Bson::Document(spec)) => crate::document::display::render_doc(spec),
                _ => String::new(),
            };
            return Err(MongoError::bad_value(format!(
                "The collation for shardCollection must be {{locale: 'simple'}}, but found: {given}"
            )));
        }
    }
    if args.get("timeseries")?.is_some() {
        return Err(MongoError::new(
            ErrorCode::NotImplemented,
            "sharded time-series collections are not supported yet",
        ));
    }
    let ns = format!("{db}.{coll}");
    let mut cmd = doc! {"_configsvrShardCollection": &ns, "key": key};
    if let Some(unique) = declared.unique {
        cmd.insert("unique", unique);
    }
    if collation.is_some() {
        // Said explicitly: what a collection with a non-simple default needs.
        cmd.insert("collation", doc! {"locale": "simple"});
    }
    state.databases.get(&state.config, &db, true).await?;
    let reply = state.config_ddl(cmd).await;
    state.collections.invalidate(&ns);
    Ok(RawDocumentBuf::from_document(&reply?)?)
}

/// `{refineCollectionShardKey: "db.coll", key}`: the config server's coordinator takes the
/// collection's DDL lock and has the database's primary shard do it
/// (`_configsvrRefineCollectionShardKey` → `_shardsvrRefineCollectionShardKey`); this router's
/// cached routing of the collection is dropped (its epoch changed).
pub(super) async fn refine_collection_shard_key(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let (db, coll) = target_namespace(&req)?;
    let key = req.args().shard_key("key")?.pattern().clone();
    let ns = format!("{db}.{coll}");
    let reply = state
        .config_ddl(doc! {"_configsvrRefineCollectionShardKey": &ns, "key": key})
        .await;
    state.collections.invalidate(&ns);
    Ok(RawDocumentBuf::from_document(&reply?)?)
}

/// `{movePrimary: db, to: shard}`: the config server's coordinator has the current primary move
/// the database's unsharded collections and commit the new primary (`_configsvrMovePrimary`);
/// this router's cached database entry is dropped.
pub(super) async fn move_primary(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let declared = requests::MovePrimaryRequest::parse(&req)?;
    let db = target_string(&req, "a database name")?;
    if matches!(db.as_str(), "admin" | "config" | "local") {
        return Err(MongoError::new(
            ErrorCode::InvalidOptions,
            format!("Can't move primary for {db} database"),
        ));
    }
    crate::catalog::validate_db_name(&db)?;
    let to = declared.to.ok_or_else(|| missing("movePrimary", "to"))?;
    if to.is_empty() {
        return Err(MongoError::new(
            ErrorCode::InvalidOptions,
            "you have to specify where you want to move it",
        ));
    }
    let reply = state
        .config_ddl(doc! {"_configsvrMovePrimary": &db, "to": to})
        .await;
    state.databases.invalidate(&db);
    Ok(RawDocumentBuf::from_document(&reply?)?)
}
