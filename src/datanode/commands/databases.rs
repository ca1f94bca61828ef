//! Database-level commands: listDatabases, dropDatabase, dbStats, collStats.

use super::super::DataNode;
use crate::catalog::validate_collection_name;
use crate::command::CommandRequest;
use crate::command::requests::DbStatsRequest;
use crate::error::{MongoError, Result};
use crate::query::filter::Filter;
use crate::server::RequestContext;
use bson::{Bson, Document, RawDocumentBuf, doc};

pub(super) async fn list_databases<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let declared = crate::command::requests::ListDatabasesRequest::parse(&req)?;
    let name_only = declared.name_only.unwrap_or(false);
    let filter = Filter::parse(&declared.filter.unwrap_or_default())?;
    let mut databases = Vec::new();
    let mut total: i64 = 0;
    for name in state.storage().database_names().await {
        let Some(db) = state.storage().database(&name).await else {
            continue;
        };
        let size = db.size_on_disk();
        let entry = doc! {"name": &name, "sizeOnDisk": size, "empty": false};
        if !filter.matches(&entry) {
            continue;
        }
        total += size;
        databases.push(Bson::Document(if name_only {
            doc! {"name": name}
        } else {
            entry
        }));
    }
    let reply = if name_only {
        doc! {"databases": databases}
    } else {
        doc! {"databases": databases, "totalSize": total, "totalSizeMb": total / (1024 * 1024)}
    };
    Ok(RawDocumentBuf::from_document(&reply)?)
}

pub(super) async fn drop_database<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    crate::catalog::validate_db_name(&req.db)?;
    let dropped = state.storage().drop_database(&req.db).await?;
    state.cursors().kill_database(&req.db);
    Ok(if dropped {
        RawDocumentBuf::from_document(&doc! {"dropped": &req.db})?
    } else {
        RawDocumentBuf::new()
    })
}

/// `scale` (`dbStats`' typed field, read by hand for `collStats`), positive, 1 by default.
fn scale_of(scale: Option<i64>) -> Result<i64> {
    match scale {
        Some(s) if s <= 0 => Err(MongoError::bad_value(
            "Scale factor must be a positive number",
        )),
        Some(s) => Ok(s),
        None => Ok(1),
    }
}

pub(super) async fn db_stats<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    crate::catalog::validate_db_name(&req.db)?;
    let scale = scale_of(DbStatsRequest::parse(&req)?.scale)?;
    let (mut collections, mut objects, mut data_size, mut indexes, mut storage) =
        (0i64, 0i64, 0i64, 0i64, 0i64);
    if let Some(db) = state.storage().database(&req.db).await {
        for meta in db.collections() {
            let stats = db.stats(&meta);
            collections += 1;
            objects += stats.count;
            data_size += stats.data_size;
            indexes += meta.indexes.len() as i64;
        }
        storage = db.size_on_disk();
    }
    let avg = if objects > 0 {
        data_size as f64 / objects as f64
    } else {
        0.0
    };
    Ok(RawDocumentBuf::from_document(&doc! {
        "db": &req.db,
        "collections": collections,
        "views": 0_i64,
        "objects": objects,
        "avgObjSize": avg,
        "dataSize": (data_size / scale) as f64,
        "storageSize": (storage / scale) as f64,
        "indexes": indexes,
        "indexSize": 0.0,
        "totalSize": (storage / scale) as f64,
        "scaleFactor": scale,
    })?)
}

pub(super) async fn coll_stats<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let name = req.args().collection()?;
    validate_collection_name(&req.db, name)?;
    let scale = scale_of(req.args().i64("scale")?)?;
    let ns = format!("{}.{name}", req.db);
    let (db, meta) = state
        .storage()
        .collection(&req.db, name)
        .await
        .ok_or_else(|| MongoError::namespace_not_found(format!("Collection [{ns}] not found.")))?;
    let stats = db.stats(&meta);
    let mut index_sizes = Document::new();
    for index in &meta.indexes {
        index_sizes.insert(index.name.clone(), 0_i64);
    }
    let avg = if stats.count > 0 {
        stats.data_size / stats.count
    } else {
        0
    };
    let mut reply = doc! {
        "ns": ns,
        "size": stats.data_size / scale,
        "count": stats.count,
        "avgObjSize": avg,
        "storageSize": stats.data_size / scale,
        "nindexes": meta.indexes.len() as i32,
        "totalIndexSize": 0_i64,
        "indexSizes": index_sizes,
        "totalSize": stats.data_size / scale,
        "scaleFactor": scale,
        "capped": meta.capped_limits().is_some(),
    };
    if let Some(limits) = meta.capped_limits() {
        reply.insert("maxSize", limits.size / scale);
        if let Some(max) = limits.max {
            reply.insert("max", max);
        }
    }
    Ok(RawDocumentBuf::from_document(&reply)?)
}
