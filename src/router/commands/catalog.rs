//! Catalog reads on the router: listDatabases gathers every shard's databases (and the config
//! server's `admin` and `config`); the others go to the database's primary shard.

use super::super::RouterState;
use super::super::forward::{ShardReply, on_config_server};
use crate::command::{CommandRequest, cursor_reply};
use crate::error::{MongoError, Result};
use crate::query::filter::Filter;
use crate::server::RequestContext;
use crate::server::auth::privileges::{Privilege, Resource, allows, authorized_collections};
use crate::server::auth::privileges_of;
use bson::{Bson, Document, RawDocumentBuf, doc};
use std::collections::BTreeMap;

/// One database across shards.
#[derive(Default)]
struct DatabaseSummary {
    size_on_disk: i64,
    empty: bool,
}

fn as_i64(v: Option<&Bson>) -> i64 {
    match v {
        Some(Bson::Int64(n)) => *n,
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Double(n)) => *n as i64,
        _ => 0,
    }
}

pub(super) async fn list_databases(
    state: &RouterState,
    ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let declared = crate::command::requests::ListDatabasesRequest::parse(&req)?;
    // With authorization on, a user without listDatabases (or asking with
    // `authorizedDatabases: true`) sees the databases it has privileges on.
    let authorized = crate::server::auth::privileges_of(state, ctx)
        .await?
        .filter(|granted| {
            declared.authorized_databases == Some(true)
                || !crate::server::auth::privileges::allows(
                    granted,
                    &[crate::server::auth::privileges::Privilege::new(
                        crate::server::auth::privileges::Resource::Cluster,
                        &["listDatabases"],
                    )],
                )
        });
    let name_only = declared.name_only.unwrap_or(false);
    // The filter applies to the cluster-wide entries (sizes summed over shards), so it runs here.
    let filter = Filter::parse(&declared.filter.unwrap_or_default())?;
    let forwarded = doc! {"listDatabases": 1};
    let mut databases: BTreeMap<String, DatabaseSummary> = BTreeMap::new();
    let mut sources = vec![(true, state.config.clone())];
    sources.extend(
        state
            .shards
            .all(&state.config)
            .await?
            .into_iter()
            .map(|(_, c)| (false, c)),
    );
    for (is_config, client) in sources {
        let reply = client.run_doc("admin", forwarded.clone()).await?;
        let entries = reply.get_array("databases").cloned().unwrap_or_default();
        for entry in entries.iter().filter_map(Bson::as_document) {
            let Ok(name) = entry.get_str("name") else {
                continue;
            };
            // admin and config live on the config server; shards' own copies are internal.
            if matches!(name, "admin" | "config" | "local") != is_config {
                continue;
            }
            let summary = databases
                .entry(name.to_string())
                .or_insert(DatabaseSummary {
                    size_on_disk: 0,
                    empty: true,
                });
            summary.size_on_disk += as_i64(entry.get("sizeOnDisk"));
            summary.empty &= entry.get_bool("empty").unwrap_or(false);
        }
    }
    let mut total: i64 = 0;
    let mut list = Vec::new();
    for (name, d) in databases {
        let entry = doc! {"name": &name, "sizeOnDisk": d.size_on_disk, "empty": d.empty};
        let visible = authorized
            .as_ref()
            .is_none_or(|granted| crate::server::auth::privileges::any_on_database(granted, &name));
        if !visible || !filter.matches(&entry) {
            continue;
        }
        total += d.size_on_disk;
        list.push(Bson::Document(if name_only {
            doc! {"name": name}
        } else {
            entry
        }));
    }
    let reply = if name_only {
        doc! {"databases": list}
    } else {
        doc! {"databases": list, "totalSize": total, "totalSizeMb": total / (1024 * 1024)}
    };
    Ok(RawDocumentBuf::from_document(&reply)?)
}

pub(super) async fn list_collections(
    state: &RouterState,
    ctx: &RequestContext,
    mut req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = format!("{}.$cmd.listCollections", req.db);
    only_authorized_collections(state, ctx, &mut req).await?;
    match state.send_to_primary(req, false).await? {
        Some((shard, reply)) => state.adopt_cursor(&shard, reply),
        None => Ok(cursor_reply(&ns, Vec::new(), 0, true)),
    }
}

/// `authorizedCollections` with `nameOnly` from a user without `listCollections` on the
/// database (which is all the command then requires): only the collections the user holds a
/// privilege on, as MongoDB lists them, by narrowing the request's filter.
async fn only_authorized_collections(
    state: &RouterState,
    ctx: &RequestContext,
    req: &mut CommandRequest,
) -> Result<()> {
    let args = req.args();
    if args.bool("authorizedCollections")? != Some(true) || args.bool("nameOnly")? != Some(true) {
        return Ok(());
    }
    let Some(granted) = privileges_of(state, ctx).await? else {
        return Ok(());
    };
    let list = [Privilege::new(
        Resource::Database(req.db.clone()),
        &["listCollections"],
    )];
    if allows(&granted, &list) {
        return Ok(());
    }
    let Some(only) = authorized_collections(&granted, &req.db) else {
        return Ok(());
    };
    let filter = match req.body.get("filter")? {
        Some(bson::RawBsonRef::Document(given)) => {
            doc! {"$and": [Document::try_from(given)?, only]}
        }
        _ => only,
    };
    let filter = RawDocumentBuf::from_document(&filter)?;
    req.replace_field("filter", Some(bson::RawBson::Document(filter)));
    Ok(())
}

pub(super) async fn list_indexes(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = format!("{}.{}", req.db, req.args().collection()?);
    // Every shard owning chunks has the same indexes: one of them answers.
    match state
        .send_to_owners(req, false, false)
        .await?
        .and_then(|replies| replies.into_iter().next())
    {
        Some(first) => state.adopt_cursor(&first.client, first.reply),
        None => Err(MongoError::namespace_not_found(format!(
            "ns does not exist: {ns}"
        ))),
    }
}

pub(super) async fn db_stats(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let db = req.db.clone();
    crate::catalog::validate_db_name(&db)?;
    match state.send_to_primary(req, false).await? {
        Some((_, reply)) => Ok(reply),
        None => Ok(RawDocumentBuf::from_document(&doc! {
            "db": db,
            "collections": 0_i64,
            "views": 0_i64,
            "objects": 0_i64,
            "avgObjSize": 0.0,
            "dataSize": 0.0,
            "storageSize": 0.0,
            "indexes": 0_i64,
            "indexSize": 0.0,
            "totalSize": 0.0,
            "scaleFactor": 1_i64,
        })?),
    }
}

pub(super) async fn coll_stats(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let ns = format!("{}.{}", req.db, req.args().collection()?);
    let db = req.db.clone();
    if !on_config_server(&db) {
        if let Some(routing) = state
            .collections
            .get(&state.config, &ns, &state.node.stats)
            .await?
        {
            return sharded_coll_stats(state, req, &ns, routing.chunks.len()).await;
        }
    }
    let Some((_, reply)) = state.send_to_primary(req, false).await? else {
        return Err(MongoError::namespace_not_found(format!(
            "Collection [{ns}] not found."
        )));
    };
    let reply = reply.to_document()?;
    if !crate::error::reply_ok(&reply) {
        return Ok(RawDocumentBuf::from_document(&reply)?);
    }
    // mongos reports where an unsharded collection lives.
    let primary = state
        .databases
        .get(&state.config, &db, false)
        .await?
        .map(|d| d.primary)
        .unwrap_or_else(|| "config".into());
    let mut out = Document::new();
    out.insert("sharded", false);
    out.insert("primary", primary.clone());
    for (k, v) in reply.iter().filter(|(k, _)| k.as_str() != "ok") {
        out.insert(k.clone(), v.clone());
    }
    let mut shard_stats = reply.clone();
    shard_stats.remove("ok");
    out.insert("shards", doc! {primary: shard_stats});
    Ok(RawDocumentBuf::from_document(&out)?)
}

/// `collStats` of a sharded collection, as mongos reports it: the sums over the shards owning
/// chunks, each shard's own stats under `shards`, and the number of chunks.
async fn sharded_coll_stats(
    state: &RouterState,
    req: CommandRequest,
    ns: &str,
    chunks: usize,
) -> Result<RawDocumentBuf> {
    let replies = state
        .send_to_owners(req, true, false)
        .await?
        .ok_or_else(|| MongoError::namespace_not_found(format!("Collection [{ns}] not found.")))?;
    let mut shards = Document::new();
    let mut sums: Vec<(&str, i64)> = [
        "count",
        "size",
        "storageSize",
        "totalIndexSize",
        "totalSize",
    ]
    .into_iter()
    .map(|f| (f, 0))
    .collect();
    let mut index_sizes = Document::new();
    let mut nindexes = 0;
    for ShardReply { shard, reply, .. } in replies {
        let mut stats = reply.to_document()?;
        stats.remove("ok");
        for (field, sum) in &mut sums {
            *sum += as_i64(stats.get(*field));
        }
        nindexes = nindexes.max(as_i64(stats.get("nindexes")));
        if let Ok(sizes) = stats.get_document("indexSizes") {
            for (name, size) in sizes {
                let total = as_i64(index_sizes.get(name));
                index_sizes.insert(name.clone(), total + as_i64(Some(size)));
            }
        }
        shards.insert(shard, stats);
    }
    let mut out = doc! {"sharded": true, "ns": ns};
    let count = sums[0].1;
    for (field, sum) in sums {
        out.insert(field, sum);
    }
    let size = out.get_i64("size").unwrap_or(0);
    out.insert("avgObjSize", if count > 0 { size / count } else { 0 });
    out.insert("nindexes", nindexes);
    out.insert("indexSizes", index_sizes);
    out.insert("nchunks", chunks as i64);
    out.insert("shards", shards);
    Ok(RawDocumentBuf::from_document(&out)?)
}
