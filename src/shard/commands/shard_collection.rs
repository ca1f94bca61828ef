//! `_shardsvrCreateCollection` with a shard key: the database's primary shard coordinates
//! `shardCollection`. It checks the collection and its indexes with MongoDB's rules (an index
//! prefixed by the shard key must exist, or the collection must be empty and gets one; unique
//! indexes must be prefixed by the shard key; no multikey shard key index), then asks the config
//! server to record the collection as sharded: with one chunk on this shard, or — for an empty
//! collection with a hashed leading field — one chunk per shard (MongoDB 8.0's layout), after
//! every other shard has created the collection with the same UUID and indexes
//! (`_shardsvrCreateCollectionParticipant`). The database's critical section is held
//! throughout, so no write lands under the unsharded version meanwhile.

use super::super::ShardState;
use crate::catalog::ShardKeyPattern;
use crate::command::{CommandRequest, missing};
use crate::datanode::DataNode;
use crate::datanode::index::IndexSpec;
use crate::datanode::storage::CollectionMeta;
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::config::{collection_routing, shard_hosts};
use crate::server::RequestContext;
use crate::shard::ddl_lock::coordinator_term;
use crate::shard::shard_key_index::{KeyFit, ShardKeyIndex};
use bson::{Bson, RawBsonRef, RawDocumentBuf, doc};

pub(super) async fn create_sharded_collection(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let name = args.collection()?.to_string();
    let ns = format!("{}.{name}", req.db);
    let pattern = args.shard_key("shardKey")?;
    let unique = args.bool("unique")?.unwrap_or(false);
    let identity = state.require_identity()?;
    crate::catalog::check_shardable(&req.db, &name)?;
    if unique && pattern.is_hashed() {
        return Err(MongoError::new(
            ErrorCode::InvalidOptions,
            "hashed shard keys cannot be declared unique. It's possible to ensure uniqueness on the hashed field by declaring an additional (non-hashed) unique index on the field.",
        ));
    }
    if args.bool("presplitHashedZones")? == Some(true) {
        return Err(MongoError::new(
            ErrorCode::InvalidOptions,
            "presplitHashedZones is true but no zones are defined for the collection (docgrid has no zones yet)",
        ));
    }
    if crate::datanode::views::resolve(state.storage(), &req.db, &name)
        .await?
        .is_some()
    {
        return Err(MongoError::new(
            ErrorCode::CommandNotSupportedOnView,
            format!("Namespace {ns} is a view, not a collection"),
        ));
    }
    // No other DDL on the collection anywhere in the cluster until this one is committed;
    // the commit carries the lock's term.
    let ddl_lock_term = coordinator_term(&req)?;
    // Writes racing with the commit would land here under the unsharded version, and in a
    // range another shard is about to own: they wait, and then find the collection sharded.
    let _section = state
        .enter_critical_section(&req.db, &format!("shardCollection of {ns}"))
        .await?;
    let db = state.storage().database_or_create(&req.db).await?;
    let coll = db.ensure_collection(&name).await?;
    // Shard keys compare by the simple collation: a collection whose default is another is
    // sharded only when the request says so (routers then apply the default to requests that
    // give no collation, from `defaultCollation`).
    let default_collation = coll.options.get_document("collation").ok().cloned();
    if let Some(collation) = &default_collation {
        if args.document("collation")?.is_none() {
            return Err(MongoError::bad_value(format!(
                "Collection has default collation: {}. Must specify collation {{locale: 'simple'}}",
                crate::document::display::render_doc(collation)
            )));
        }
    }
    if coll.capped_limits().is_some() {
        return Err(MongoError::new(
            ErrorCode::InvalidOptions,
            "can't shard a capped collection",
        ));
    }
    check_unique_indexes(&ns, &coll, &pattern)?;
    let empty = db.stats(&coll).count == 0;
    let fit = if unique {
        KeyFit::UniqueExact
    } else {
        KeyFit::Prefix
    };
    let index = ShardKeyIndex::of(&coll, &pattern, fit);
    if index != ShardKeyIndex::Usable {
        // An empty collection gets the index, unless indexes on the key exist but cannot serve.
        if !empty || index != ShardKeyIndex::Missing {
            index.require(&pattern)?;
        }
        let mut spec = doc! {"key": pattern.pattern().clone(), "name": crate::datanode::index::spec::default_name(pattern.pattern())};
        if unique {
            spec.insert("unique", true);
        }
        db.ensure_index(&name, IndexSpec::parse(&spec)?).await?;
    }
    let uuid = coll.uuid_bson();
    let config = state.connector.client(&identity.config_host);
    // Already sharded: the config server answers (the same key succeeds, another fails) and
    // no shard is asked to create anything again.
    let already_sharded = collection_routing(&config, &ns).await?.is_some();
    let mut commit = doc! {
        "_configsvrCommitShardCollection": &ns,
        "key": pattern.pattern().clone(),
        "unique": unique,
        "uuid": uuid,
        "primaryShard": &identity.shard_name,
        "ddlLockTerm": ddl_lock_term,
    };
    if let Some(collation) = default_collation {
        commit.insert("defaultCollation", collation);
    }
    if empty && pattern.has_hashed_prefix() && !already_sharded {
        // The collection was just read back with its shard key index.
        let coll = db
            .collection(&name)
            .ok_or_else(|| MongoError::internal("collection vanished while being sharded"))?;
        let chunks =
            spread_over_shards(state, &req.db, &coll, &pattern, &identity.shard_name).await?;
        commit.insert("initialChunks", chunks);
    }
    state
        .node
        .fail_points
        .pause_if(
            "hangBeforeDdlPhase",
            &doc! {"operation": "shardCollection", "phase": "commit"},
        )
        .await;
    config.run_doc("admin", commit).await?;
    // This shard now owns the collection's only chunk: learn its version at once, so routers
    // that still believe the collection unsharded are told they are stale.
    state.refresh_collection(&ns).await?;
    Ok(RawDocumentBuf::from_document(&doc! {
        "collectionsharded": &ns,
        "collectionUUID": coll.uuid_bson(),
    })?)
}

/// One chunk per shard (shards in name order), the hashed range cut evenly; every shard but
/// this one first creates the collection with this shard's UUID, options and indexes.
async fn spread_over_shards(
    state: &ShardState,
    db: &str,
    coll: &CollectionMeta,
    pattern: &ShardKeyPattern,
    this_shard: &str,
) -> Result<Vec<Bson>> {
    let identity = state.require_identity()?;
    let config = state.connector.client(&identity.config_host);
    let shards = shard_hosts(&config).await?;
    if shards.len() < 2 {
        return Ok(Vec::new());
    }
    let participant = participant_command(coll);
    for (name, host) in &shards {
        if name != this_shard {
            state
                .connector
                .client(host)
                .run_doc(db, participant.clone())
                .await?;
        }
    }
    let mut bounds = vec![pattern.global_min()];
    bounds.extend(pattern.hashed_split_points(shards.len()));
    bounds.push(pattern.global_max());
    Ok(bounds
        .windows(2)
        .zip(&shards)
        .map(|(w, (shard, _))| {
            Bson::Document(doc! {"min": w[0].clone(), "max": w[1].clone(), "shard": shard})
        })
        .collect())
}

/// The command that has another shard create `coll` as this shard has it: same UUID, options
/// and secondary indexes.
pub(crate) fn participant_command(coll: &CollectionMeta) -> bson::Document {
    doc! {
        "_shardsvrCreateCollectionParticipant": &coll.name,
        "uuid": coll.uuid_bson(),
        "options": coll.options.clone(),
        "indexes": coll.secondary_index_specs(),
    }
}

/// `{_shardsvrCreateCollectionParticipant: coll, uuid, options, indexes, replaceLeftover}`:
/// creates a collection's local part under the coordinator's UUID, with its options and
/// indexes. Idempotent; an empty local collection under another UUID (a leftover) is replaced,
/// a non-empty one refused. With `replaceLeftover` (movePrimary's copies), a local collection
/// under the same UUID is a failed earlier copy: it is dropped and created afresh.
pub(super) async fn create_collection_participant(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let name = args.collection()?.to_string();
    let uuid = match args.get("uuid")? {
        Some(RawBsonRef::Binary(b)) => uuid::Uuid::from_slice(b.bytes)
            .map_err(|_| MongoError::bad_value("uuid must be a 16-byte UUID"))?,
        _ => return Err(missing(req.name(), "uuid")),
    };
    let options = args.document("options")?.unwrap_or_default();
    let replace_leftover = args.bool("replaceLeftover")?.unwrap_or(false);
    let db = state.storage().database_or_create(&req.db).await?;
    if let Some(existing) = db.collection(&name) {
        if existing.uuid == uuid && replace_leftover {
            db.drop_collection(&name).await?;
        } else if existing.uuid != uuid {
            if db.stats(&existing).count > 0 {
                return Err(MongoError::new(
                    ErrorCode::InvalidUUID,
                    format!(
                        "collection {}.{name} already exists on this shard with another UUID and holds documents",
                        req.db
                    ),
                ));
            }
            db.drop_collection(&name).await?;
        }
    }
    let coll = match db.collection(&name) {
        Some(coll) => coll,
        None => db.create_collection_with_uuid(&name, options, uuid).await?,
    };
    for spec in args.array("indexes")?.unwrap_or_default() {
        let Bson::Document(spec) = spec else {
            return Err(MongoError::type_mismatch("indexes must be index specs"));
        };
        let exists = spec
            .get_str("name")
            .is_ok_and(|n| coll.indexes.iter().any(|i| i.name == n));
        if !exists {
            db.ensure_index(&name, IndexSpec::parse(&spec)?).await?;
        }
    }
    Ok(RawDocumentBuf::new())
}

/// Every unique index but `_id` must be prefixed by the shard key, or uniqueness could not be
/// enforced shard by shard.
fn check_unique_indexes(ns: &str, coll: &CollectionMeta, pattern: &ShardKeyPattern) -> Result<()> {
    for index in coll.indexes.iter().filter(|i| i.is_unique() && !i.is_id()) {
        let key = index.key_pattern();
        if !pattern.is_unique_index_compatible(&key) {
            return Err(MongoError::new(
                ErrorCode::InvalidOptions,
                format!(
                    "can't shard collection '{ns}' with unique index on {} and proposed shard key {}. Uniqueness can't be maintained unless shard key is a prefix",
                    render_doc(&key),
                    render_doc(pattern.pattern())
                ),
            ));
        }
    }
    Ok(())
}
