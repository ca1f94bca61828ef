//! Router administration: `isdbgrid`, `flushRouterConfig`, and what the routing table cache
//! and the shard registry hold (`getShardVersion`, `getShardMap`).

use super::super::RouterState;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use bson::{Bson, Document, RawBsonRef, RawDocumentBuf, doc, rawdoc};

pub(super) async fn isdbgrid(
    state: &RouterState,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    Ok(rawdoc! {"isdbgrid": 1, "hostname": state.node.host()})
}

/// Drops the cached routing table; the next requests reload it from the config server.
pub(super) async fn flush_router_config(
    state: &RouterState,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    state.databases.clear();
    state.collections.clear();
    state.shards.reload(&state.config).await?;
    Ok(rawdoc! {"flushed": true})
}

/// `{getShardVersion: "db"}`: the database's primary shard and version as this router caches
/// them; `{getShardVersion: "db.coll", fullMetadata}`: the sharded collection's version (and,
/// with `fullMetadata`, its chunks' bounds), loading them when not cached.
pub(super) async fn get_shard_version(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let RawBsonRef::String(target) = args.target()? else {
        return Err(MongoError::type_mismatch(
            "getShardVersion needs a namespace string",
        ));
    };
    let Some((db, coll)) = target.split_once('.') else {
        crate::catalog::validate_db_name(target)?;
        let entry = state
            .databases
            .get(&state.config, target, false)
            .await?
            .ok_or_else(|| {
                MongoError::new(
                    ErrorCode::NamespaceNotFound,
                    format!("database {target} not found"),
                )
            })?;
        return Ok(RawDocumentBuf::from_document(&doc! {
            "primaryShard": entry.primary,
            "version": entry.version.to_document(),
        })?);
    };
    crate::catalog::validate_collection_name(db, coll)?;
    let routing = state
        .collections
        .get(&state.config, target, &state.node.stats)
        .await?
        .ok_or_else(|| {
            MongoError::new(
                ErrorCode::NamespaceNotSharded,
                format!("Collection {target} is not sharded."),
            )
        })?;
    let version = routing
        .chunks
        .collection_version()
        .ok_or_else(|| MongoError::internal("a sharded collection without chunks"))?;
    let mut reply = doc! {
        "version": version.lastmod(),
        "versionEpoch": version.generation.epoch,
        "versionTimestamp": version.generation.timestamp,
    };
    if args.bool("fullMetadata")?.unwrap_or(false) {
        let chunks: Vec<Bson> = routing
            .chunks
            .chunks()
            .map(|c| {
                Bson::Array(vec![
                    Bson::Document(c.min.clone()),
                    Bson::Document(c.max.clone()),
                ])
            })
            .collect();
        reply.insert("chunks", chunks);
    }
    Ok(RawDocumentBuf::from_document(&reply)?)
}

/// `getShardMap`: every shard's host and the config server's, by name (`map`) and by host
/// (`hosts`, `connStrings`).
pub(super) async fn get_shard_map(
    state: &RouterState,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let mut nodes = state.shards.hosts(&state.config).await?;
    nodes.push(("config".to_string(), state.config.host().to_string()));
    let map: Document = nodes
        .iter()
        .map(|(name, host)| (name.clone(), Bson::String(host.clone())))
        .collect();
    let hosts: Document = nodes
        .iter()
        .map(|(name, host)| (host.clone(), Bson::String(name.clone())))
        .collect();
    Ok(RawDocumentBuf::from_document(&doc! {
        "map": map,
        "hosts": hosts.clone(),
        "connStrings": hosts,
    })?)
}
