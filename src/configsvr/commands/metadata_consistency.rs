//! `_configsvrCheckMetadataConsistency`: gathers the routing table and each shard's catalog for
//! the namespaces asked (the cluster, a database or a collection) and runs
//! `consistency::check`. Each database is checked under its DDL lock, so a DDL in flight never
//! looks like an inconsistency.

use super::super::ConfigState;
use super::super::consistency::{LocalCollection, RoutingView, ShardCatalog, check};
use super::super::ddl_locks::{LocalDdlLock, LockScope};
use crate::command::CommandRequest;
use crate::error::Result;
use crate::server::{CommandSpec, RequestContext};
use bson::{Bson, Document, RawDocumentBuf, doc};
use std::collections::BTreeSet;

pub(super) fn commands() -> Vec<CommandSpec<ConfigState>> {
    vec![
        CommandSpec::new(
            "_configsvrCheckMetadataConsistency",
            check_metadata_consistency,
        )
        .admin_only()
        .help("Internal: the inconsistencies between the routing table and the shards"),
    ]
}

/// Databases a check never looks at: every node's own.
fn internal(db: &str) -> bool {
    matches!(db, "admin" | "config" | "local")
}

/// `{_configsvrCheckMetadataConsistency: 1, db?, collection?, checkIndexes?}` →
/// `{inconsistencies: [...]}`.
async fn check_metadata_consistency(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let only_db = args.str("db")?.map(str::to_string);
    let only_coll = args.str("collection")?.map(str::to_string);
    let check_indexes = args.bool("checkIndexes")?.unwrap_or(false);
    let shards = state.shards().await?;
    let databases: BTreeSet<String> = match &only_db {
        Some(db) => [db.clone()].into(),
        None => {
            // What the routing table names, and what any shard holds.
            let mut names: BTreeSet<String> = state
                .store()
                .find("databases", &doc! {})
                .await?
                .iter()
                .filter_map(|d| d.get_str("_id").ok().map(str::to_string))
                .collect();
            for entry in state.store().find("collections", &doc! {}).await? {
                if let Some((db, _)) = entry.get_str("_id").ok().and_then(|ns| ns.split_once('.')) {
                    names.insert(db.to_string());
                }
            }
            for (_, host) in &shards {
                let listed = state
                    .connector
                    .client(host)
                    .run_doc("admin", doc! {"listDatabases": 1, "nameOnly": true})
                    .await?;
                for db in listed.get_array("databases").into_iter().flatten() {
                    if let Some(name) = db.as_document().and_then(|d| d.get_str("name").ok()) {
                        names.insert(name.to_string());
                    }
                }
            }
            names.retain(|db| !internal(db));
            names
        }
    };
    let mut inconsistencies = Vec::new();
    for db in databases {
        let lock = LocalDdlLock::acquire(
            &state.ddl_locks,
            &LockScope::database(&db),
            "checkMetadataConsistency",
            state.lock_timeout(),
        )
        .await?;
        let found = check_database(state, &shards, &db, only_coll.as_deref(), check_indexes).await;
        lock.release().await?;
        inconsistencies.extend(found?);
    }
    Ok(RawDocumentBuf::from_document(
        &doc! {"inconsistencies": inconsistencies},
    )?)
}

/// The inconsistencies of one database (or one collection of it), under its DDL lock.
async fn check_database(
    state: &ConfigState,
    shards: &[(String, String)],
    db: &str,
    coll: Option<&str>,
    check_indexes: bool,
) -> Result<Vec<Document>> {
    let routing = routing_view(state, db, coll).await?;
    let sharded: BTreeSet<String> = routing
        .collections
        .iter()
        .filter_map(|(entry, _)| entry.get_str("_id").ok().map(str::to_string))
        .collect();
    let mut catalogs = Vec::new();
    for (shard, host) in shards {
        let collections = shard_collections(state, host, db, coll, &sharded, check_indexes).await?;
        catalogs.push(ShardCatalog {
            shard: shard.clone(),
            collections,
        });
    }
    Ok(check(&routing, &catalogs, check_indexes))
}

/// The routing table's entries for `db` (and `coll`).
async fn routing_view(state: &ConfigState, db: &str, coll: Option<&str>) -> Result<RoutingView> {
    let store = state.store();
    let databases = store.find("databases", &doc! {"_id": db}).await?;
    let mut collections = Vec::new();
    for entry in store.find("collections", &doc! {}).await? {
        let Ok(ns) = entry.get_str("_id") else {
            continue;
        };
        let in_scope = match ns.split_once('.') {
            Some((d, c)) => d == db && coll.is_none_or(|wanted| wanted == c),
            None => false,
        };
        if in_scope {
            let uuid = entry.get("uuid").cloned().unwrap_or(Bson::Null);
            let chunks = store.find("chunks", &doc! {"uuid": uuid}).await?;
            collections.push((entry, chunks));
        }
    }
    Ok(RoutingView {
        databases,
        collections,
    })
}

/// The collections a shard holds in `db` (or just `coll`), with the indexes of the sharded
/// ones (of all, with `check_indexes`).
async fn shard_collections(
    state: &ConfigState,
    host: &str,
    db: &str,
    coll: Option<&str>,
    sharded: &BTreeSet<String>,
    check_indexes: bool,
) -> Result<Vec<LocalCollection>> {
    let client = state.connector.client(host);
    let mut filter = doc! {"type": "collection"};
    if let Some(coll) = coll {
        filter.insert("name", coll);
    }
    let listed = client
        .run_doc(db, doc! {"listCollections": 1, "filter": filter})
        .await?;
    // Orphaned ranges the shard still has to delete (MongoDB's RangeDeletionMissingShardKeyIndex
    // check reads the same tasks).
    let tasks = client
        .run_doc(
            "config",
            doc! {
                "find": "rangeDeletions",
                "filter": {"nss": {"$in": sharded.iter().collect::<Vec<_>>()}},
                "projection": {"_id": 0, "nss": 1},
                // One batch: a few dozen bytes per task.
                "batchSize": i32::MAX,
            },
        )
        .await?;
    let deleting: BTreeSet<String> = crate::command::first_batch(&tasks)
        .iter()
        .filter_map(|task| task.get_str("nss").ok().map(str::to_string))
        .collect();
    let mut collections = Vec::new();
    for info in crate::command::first_batch(&listed) {
        let Ok(name) = info.get_str("name") else {
            continue;
        };
        if name.starts_with("system.") {
            continue;
        }
        let ns = format!("{db}.{name}");
        let uuid = info
            .get_document("info")
            .ok()
            .and_then(|i| i.get("uuid"))
            .cloned();
        let indexes = if sharded.contains(&ns) || check_indexes {
            let reply = client.run_doc(db, doc! {"listIndexes": name}).await?;
            crate::command::first_batch(&reply)
        } else {
            Vec::<Document>::new()
        };
        let range_deletions = deleting.contains(&ns);
        collections.push(LocalCollection {
            ns,
            uuid,
            indexes,
            range_deletions,
        });
    }
    Ok(collections)
}
