//! `refineCollectionShardKey` on the database's primary shard (`_shardsvrRefineCollectionShardKey`):
//! checks that the new key extends the current one, that every shard holding the collection's
//! chunks has an index serving it (`_shardsvrValidateShardKeyCandidate`), commits the refined
//! key on the config server, then has the shards reload the collection's filtering metadata.
//!
//! No critical section is needed: a refined chunk holds exactly the documents it held, so a
//! request still versioned with the old key targets the same shards and sees the same data.

use super::super::ShardState;
use crate::catalog::{CollectionEntry, ShardKeyPattern};
use crate::command::CommandRequest;
use crate::datanode::DataNode;
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::config::{collection_routing, shard_hosts};
use crate::server::RequestContext;
use crate::shard::ddl_lock::coordinator_term;
use crate::shard::shard_key_index::{KeyFit, ShardKeyIndex};
use bson::{RawDocumentBuf, doc};
use std::collections::BTreeSet;

pub(super) async fn refine(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let name = args.collection()?.to_string();
    let ns = format!("{}.{name}", req.db);
    let refined = args.shard_key("newShardKey")?;
    let identity = state.require_identity()?;
    let config = state.connector.client(&identity.config_host);
    let ddl_lock_term = coordinator_term(&req)?;
    let Some((entry, chunks)) = collection_routing(&config, &ns).await? else {
        let exists = state.storage().collection(&req.db, &name).await.is_some();
        return Err(if exists {
            MongoError::new(
                ErrorCode::NamespaceNotSharded,
                format!("Can't execute refineCollectionShardKey on unsharded collection {ns}"),
            )
        } else {
            MongoError::new(
                ErrorCode::NamespaceNotFound,
                format!("refineCollectionShardKey: collection {ns} does not exist"),
            )
        });
    };
    if entry.key == refined {
        // Already refined (or asked for the current key): nothing to do, as in MongoDB.
        return Ok(RawDocumentBuf::new());
    }
    entry.key.check_refinement(&refined)?;
    let mut holders: BTreeSet<String> = chunks.chunks().map(|c| c.shard.clone()).collect();
    holders.insert(identity.shard_name.clone());
    let hosts = shard_hosts(&config).await?;
    let validate = doc! {
        "_shardsvrValidateShardKeyCandidate": &name,
        "key": refined.pattern().clone(),
        "unique": entry.unique,
    };
    for (shard, host) in hosts.iter().filter(|(s, _)| holders.contains(s)) {
        if *shard == identity.shard_name {
            check_candidate(state, &req.db, &name, &refined, entry.unique).await?;
        } else {
            state
                .connector
                .client(host)
                .run_doc(&req.db, validate.clone())
                .await?;
        }
    }
    state
        .node
        .fail_points
        .pause_if(
            "hangBeforeDdlPhase",
            &doc! {"operation": "refineCollectionShardKey", "phase": "commit"},
        )
        .await;
    commit(state, &entry, &refined, ddl_lock_term).await?;
    // Shards refresh on their next versioned request anyway; telling them now warms their
    // metadata. A shard that cannot be told is not an error: the commit is done.
    for (shard, host) in hosts.iter().filter(|(s, _)| holders.contains(s)) {
        let flushed = if *shard == identity.shard_name {
            state.refresh_collection(&ns).await.map(|_| ())
        } else {
            state
                .connector
                .client(host)
                .run_doc("admin", doc! {"_flushRoutingTableCacheUpdates": &ns})
                .await
                .map(|_| ())
        };
        if let Err(err) = flushed {
            tracing::warn!(ns = %ns, shard = %shard, error = %err, "could not refresh a shard after refining its shard key");
        }
    }
    Ok(RawDocumentBuf::new())
}

async fn commit(
    state: &ShardState,
    entry: &CollectionEntry,
    refined: &ShardKeyPattern,
    ddl_lock_term: i64,
) -> Result<()> {
    let identity = state.require_identity()?;
    state
        .connector
        .client(&identity.config_host)
        .run_doc(
            "admin",
            doc! {
                "_configsvrCommitRefineCollectionShardKey": &entry.ns,
                "key": refined.pattern().clone(),
                "expectedEpoch": entry.generation.epoch,
                "ddlLockTerm": ddl_lock_term,
            },
        )
        .await?;
    tracing::info!(ns = %entry.ns, key = %render_doc(refined.pattern()), "refined the shard key");
    Ok(())
}

/// `{_shardsvrValidateShardKeyCandidate: coll, key, unique}`: whether this shard's part of
/// the collection has an index that can serve `key`.
pub(super) async fn validate_candidate(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let name = args.collection()?.to_string();
    let pattern = args.shard_key("key")?;
    let unique = args.bool("unique")?.unwrap_or(false);
    check_candidate(state, &req.db, &name, &pattern, unique).await?;
    Ok(RawDocumentBuf::new())
}

/// A refined key needs an index on this shard: one starting with it, or for a unique shard
/// key one on exactly it.
async fn check_candidate(
    state: &ShardState,
    db: &str,
    name: &str,
    pattern: &ShardKeyPattern,
    unique: bool,
) -> Result<()> {
    let fit = if unique {
        KeyFit::Exact
    } else {
        KeyFit::Prefix
    };
    let index = match state.storage().collection(db, name).await {
        Some((_, coll)) => ShardKeyIndex::of(&coll, pattern, fit),
        None => ShardKeyIndex::Missing,
    };
    index.require(pattern)
}
