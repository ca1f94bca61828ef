//! Chunk migrations on the router: `moveChunk` (a chunk named by a document it holds or by its
//! bounds), `moveRange` and `setAllowMigrations`, each handed to the config server, which
//! checks it and has the donor shard run it. The router forgets its cached routing of the
//! collection afterwards.

use super::super::RouterState;
use super::sharding::target_namespace;
use crate::command::CommandRequest;
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::config::collection_routing;
use crate::server::RequestContext;
use bson::{Document, RawDocumentBuf, doc};

pub(super) const MOVE_CHUNK_FIELDS: &[&str] = &[
    "find",
    "bounds",
    "to",
    "_secondaryThrottle",
    "secondaryThrottle",
    "_waitForDelete",
    "waitForDelete",
    "forceJumbo",
];

pub(super) const MOVE_RANGE_FIELDS: &[&str] = &[
    "toShard",
    "min",
    "max",
    "forceJumbo",
    "waitForDelete",
    "secondaryThrottle",
];

/// `{moveChunk: ns, find | bounds, to, _waitForDelete, forceJumbo}`: moves the chunk holding
/// `find`'s shard key, or the chunk `bounds` delimits, to shard `to`; answers `millis`.
pub(super) async fn move_chunk(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let started = std::time::Instant::now();
    let (db, coll) = target_namespace(&req)?;
    let ns = format!("{db}.{coll}");
    let args = req.args();
    let to = args.required_str("to")?;
    let find = args.document("find")?;
    let bounds = args.bounds("bounds")?;
    let (entry, chunks) = collection_routing(&state.config, &ns)
        .await?
        .ok_or_else(|| {
            MongoError::new(
                ErrorCode::NamespaceNotSharded,
                format!("ns {ns} is not sharded"),
            )
        })?;
    let key = &entry.key;
    let chunk = match (find, bounds) {
        (Some(_), Some(_)) => {
            return Err(MongoError::bad_value(
                "cannot specify bounds and find at the same time",
            ));
        }
        (Some(query), None) => {
            let point = key.equality_key(&query).ok_or_else(|| {
                MongoError::new(
                    ErrorCode::ShardKeyNotFound,
                    format!("no shard key found in chunk query {}", render_doc(&query)),
                )
            })?;
            chunks.chunk_for(&key.encode(&point)).cloned()
        }
        (None, Some((min, max))) => {
            if !key.is_key_shaped(&min) || !key.is_key_shaped(&max) {
                return Err(MongoError::bad_value(format!(
                    "shard key bounds [{}, {}) are not valid for shard key pattern {}",
                    render_doc(&min),
                    render_doc(&max),
                    render_doc(key.pattern())
                )));
            }
            chunks
                .chunks()
                .find(|c| c.min == min && c.max == max)
                .cloned()
                .or_else(|| {
                    // Bounds inside one chunk move that part of it, as MongoDB's moveChunk
                    // does since it became moveRange.
                    chunks
                        .chunk_for(&key.encode(&min))
                        .filter(|c| key.encode(&max) <= c.max_key)
                        .map(|c| {
                            let mut part = c.clone();
                            part.min = min.clone();
                            part.max = max.clone();
                            part
                        })
                })
        }
        (None, None) => {
            return Err(MongoError::bad_value(
                "need to specify either a find query, or both lower and upper bounds.",
            ));
        }
    }
    .ok_or_else(|| MongoError::bad_value("no chunk found for the given bounds"))?;
    let wait_for_delete = args.bool("_waitForDelete")?.or(args.bool("waitForDelete")?);
    let force_jumbo = args.bool("forceJumbo")?.unwrap_or(false);
    move_range_on_config(
        state,
        &ns,
        to,
        (Some(chunk.min), Some(chunk.max)),
        wait_for_delete.unwrap_or(false),
        force_jumbo,
    )
    .await?;
    let millis = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    Ok(RawDocumentBuf::from_document(&doc! {"millis": millis})?)
}

/// `{moveRange: ns, toShard, min?, max?, forceJumbo, waitForDelete, secondaryThrottle}`.
pub(super) async fn move_range(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let (db, coll) = target_namespace(&req)?;
    let ns = format!("{db}.{coll}");
    let args = req.args();
    let to = args.required_str("toShard")?;
    let min = args.document("min")?;
    let max = args.document("max")?;
    if min.is_none() && max.is_none() {
        return Err(MongoError::bad_value(
            "either min or max must be specified for moveRange",
        ));
    }
    move_range_on_config(
        state,
        &ns,
        to,
        (min, max),
        args.bool("waitForDelete")?.unwrap_or(false),
        args.bool("forceJumbo")?.unwrap_or(false),
    )
    .await?;
    Ok(RawDocumentBuf::new())
}

async fn move_range_on_config(
    state: &RouterState,
    ns: &str,
    to: &str,
    (min, max): (Option<Document>, Option<Document>),
    wait_for_delete: bool,
    force_jumbo: bool,
) -> Result<()> {
    let mut command = doc! {
        "_configsvrMoveRange": ns,
        "toShard": to,
        "waitForDelete": wait_for_delete,
        "forceJumbo": force_jumbo,
    };
    if let Some(min) = min {
        command.insert("min", min);
    }
    if let Some(max) = max {
        command.insert("max", max);
    }
    let moved = state.config.run_doc("admin", command).await;
    state.collections.invalidate(ns);
    moved.map(|_| ())
}

/// `{setAllowMigrations: ns, allowMigrations: bool}`.
pub(super) async fn set_allow_migrations(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let (db, coll) = target_namespace(&req)?;
    let ns = format!("{db}.{coll}");
    let allow = req.args().required_bool("allowMigrations")?;
    state
        .config
        .run_doc(
            "admin",
            doc! {"_configsvrSetAllowMigrations": &ns, "allowMigrations": allow},
        )
        .await?;
    state.collections.invalidate(&ns);
    Ok(RawDocumentBuf::new())
}
