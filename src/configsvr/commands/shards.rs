//! `_configsvrAddShard`: registering a shard (checking it is a reachable docgrid shard, naming
//! it, giving it its identity).

use super::super::ConfigState;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::{CommandSpec, RequestContext};
use bson::{Bson, RawDocumentBuf, doc};

pub(super) fn commands() -> Vec<CommandSpec<ConfigState>> {
    vec![
        CommandSpec::new("_configsvrAddShard", add_shard)
            .admin_only()
            .help("Internal: adds a shard to the cluster"),
    ]
}

async fn add_shard(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let host = match args.target()? {
        bson::RawBsonRef::String(h) if !h.is_empty() => h.to_string(),
        _ => {
            return Err(MongoError::bad_value(
                "_configsvrAddShard requires the shard's host as a non-empty string",
            ));
        }
    };
    let requested_name = args.str("name")?.map(str::to_string);
    let _guard = state.shard_membership_lock.lock().await;
    // A restarted shard: the DDL locks its previous run held die with it, at once rather than
    // when their lease lapses.
    if let (Some(name), Some(process)) = (&requested_name, args.str("process")?) {
        if process.starts_with(&format!("{name}:")) {
            state.ddl_locks.release_previous(name, process).await?;
        }
    }
    let store = state.store();
    if let Some(existing) = store.find_one("shards", &doc! {"host": &host}).await? {
        let name = existing.get_str("_id").unwrap_or_default().to_string();
        if requested_name.as_ref().is_some_and(|n| *n != name) {
            return Err(MongoError::new(
                ErrorCode::IllegalOperation,
                format!("A shard with host {host} already exists under the name '{name}'"),
            ));
        }
        return Ok(RawDocumentBuf::from_document(&doc! {"shardAdded": name})?);
    }
    let client = state.connector.client(&host);
    let hello = client.run_doc("admin", doc! {"hello": 1}).await.map_err(|e| {
        MongoError::new(ErrorCode::OperationFailed, format!("failed to run command hello when attempting to add shard {host} :: caused by :: {e}"))
    })?;
    if hello.get_str("msg") == Ok("isdbgrid") || hello.get("configsvr").is_some() {
        return Err(MongoError::new(
            ErrorCode::OperationFailed,
            format!("{host} is a router or a config server, not a shard server"),
        ));
    }
    let build = client.run_doc("admin", doc! {"buildInfo": 1}).await?;
    if build.get("docgrid").is_none() {
        return Err(MongoError::new(
            ErrorCode::OperationFailed,
            format!("{host} is not a docgrid shard server"),
        ));
    }
    let existing = state.shards().await?;
    if let Some(name) = requested_name
        .as_ref()
        .filter(|n| existing.iter().any(|(e, _)| e == *n))
    {
        return rejoin(state, &client, name, &host).await;
    }
    let name = match requested_name {
        Some(name) => name,
        None => (0..)
            .map(|i| format!("shard{i}"))
            .find(|n| !existing.iter().any(|(e, _)| e == n))
            .expect("unbounded"),
    };
    let identity = doc! {"shardName": &name, "clusterId": state.cluster_id, "configsvrConnectionString": state.node.host()};
    client
        .run_doc("admin", doc! {"_addShard": 1, "shardIdentity": identity})
        .await
        .map_err(|e| {
            MongoError::new(
                ErrorCode::OperationFailed,
                format!("failed to set the shard identity of {host} :: caused by :: {e}"),
            )
        })?;
    store
        .insert("shards", &doc! {"_id": &name, "host": &host, "state": 1, "topologyTime": Bson::Timestamp(state.node.clock.tick())})
        .await?;
    tracing::info!(shard = %name, %host, "added shard");
    Ok(RawDocumentBuf::from_document(&doc! {"shardAdded": name})?)
}

/// A known shard that comes back at another address (restarted on another port or host): it
/// must prove it is that shard with its stored identity; then its entry follows it.
async fn rejoin(
    state: &ConfigState,
    client: &crate::rpc::NodeClient,
    name: &str,
    host: &str,
) -> Result<RawDocumentBuf> {
    let reply = client
        .run_doc("admin", doc! {"find": "system.version", "filter": {"_id": "shardIdentity"}, "limit": 1, "singleBatch": true})
        .await?;
    let identity = crate::command::first_batch(&reply).into_iter().next();
    let proven = identity.as_ref().is_some_and(|i| {
        i.get_str("shardName") == Ok(name)
            && i.get_object_id("clusterId").ok() == Some(state.cluster_id)
    });
    if !proven {
        return Err(MongoError::new(
            ErrorCode::IllegalOperation,
            format!("A shard named '{name}' already exists"),
        ));
    }
    let store = state.store();
    let mut entry = store
        .find_one("shards", &doc! {"_id": name})
        .await?
        .ok_or_else(|| {
            MongoError::new(ErrorCode::ShardNotFound, format!("Shard {name} not found"))
        })?;
    entry.insert("host", host);
    store.upsert("shards", &entry).await?;
    tracing::info!(shard = %name, %host, "shard rejoined at a new address");
    Ok(RawDocumentBuf::from_document(&doc! {"shardAdded": name})?)
}
