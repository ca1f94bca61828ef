//! The donor's part of `movePrimary`, sent by the config server's coordinator under its lock
//! (`_shardsvrMovePrimary`): inside the database's critical section (requests routers version
//! for the database wait, running ones finish first) it gives the new primary every collection
//! of the database — sharded ones as catalog entries (UUID, options, indexes; their documents
//! stay with their chunks), unsharded ones with their documents —, has the config server record
//! the new primary (database version lastMod + 1, fenced by the coordinator's term) and leaves
//! the section: the waiting requests meet the new version, answer StaleDbVersion, and their
//! routers go to the new primary. Then the coordinator has it drop its unread copies
//! (`_shardsvrMovePrimaryCleanup`).
//!
//! A failure before the commit leaves this shard the primary with all its data; the copies the
//! recipient made are dropped (and the coordinator's next attempt replaces any it could not
//! drop, recognised by their UUID).

use super::super::ShardState;
use crate::command::{CommandRequest, missing};
use crate::datanode::DataNode;
use crate::datanode::storage::{CollectionMeta, DatabaseStore, DocumentReads};
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::NodeClient;
use crate::rpc::config::{collection_entry, database_entry, shard_hosts};
use crate::server::RequestContext;
use crate::shard::ddl_lock::coordinator_term;
use bson::{RawArrayBuf, RawDocumentBuf, doc};

/// Documents per storage read while copying.
const READ_BATCH: i64 = 1_000;
/// Bytes of documents per `insert` sent to the recipient (well under the 48 MB message limit).
const SEND_BYTES: usize = 8 * 1024 * 1024;

pub(super) async fn move_primary(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let db_name = req.db.clone();
    let to = req
        .args()
        .str("to")?
        .ok_or_else(|| missing(req.name(), "to"))?
        .to_string();
    let identity = state.require_identity()?;
    let config = state.connector.client(&identity.config_host);
    let Some((_, to_host)) = shard_hosts(&config)
        .await?
        .into_iter()
        .find(|(name, _)| *name == to)
    else {
        return Err(MongoError::new(
            ErrorCode::ShardNotFound,
            format!("Shard {to} not found"),
        ));
    };
    if to == identity.shard_name {
        return Ok(RawDocumentBuf::new());
    }
    let ddl_lock_term = coordinator_term(&req)?;
    let _section = state
        .enter_critical_section(&db_name, &format!("movePrimary of {db_name} to {to}"))
        .await?;
    // Re-read under the section: another movePrimary may have finished since the router's
    // version was checked.
    let entry = database_entry(&config, &db_name).await?.ok_or_else(|| {
        MongoError::new(
            ErrorCode::NamespaceNotFound,
            format!("Database {db_name} not found"),
        )
    })?;
    if entry.primary != identity.shard_name {
        return Err(MongoError::new(
            ErrorCode::StaleDbVersion,
            format!(
                "{db_name}'s primary shard is now {}, not {}",
                entry.primary, identity.shard_name
            ),
        )
        .with_extra(doc! {"db": &db_name}));
    }
    let recipient = state.connector.client(&to_host);
    let database = state.storage().database(&db_name).await;
    let mut copied = Vec::new();
    let cloned = match &database {
        Some(database) => clone_collections(database, &config, &recipient, &mut copied).await,
        None => Ok(()),
    };
    state
        .node
        .fail_points
        .pause_if(
            "hangBeforeDdlPhase",
            &doc! {"operation": "movePrimary", "phase": "commit"},
        )
        .await;
    let committed = match cloned {
        Ok(()) => config
            .run_doc(
                "admin",
                doc! {
                    "_configsvrCommitMovePrimary": &db_name,
                    "to": &to,
                    "expectedDatabaseVersion": entry.version.to_document(),
                    "ddlLockTerm": ddl_lock_term,
                },
            )
            .await
            .map(|_| ()),
        Err(err) => Err(err),
    };
    if let Err(err) = committed {
        for name in &copied {
            if let Err(e) = recipient.run_doc(&db_name, doc! {"drop": name}).await {
                tracing::warn!(db = %db_name, collection = %name, error = %e, "could not drop a movePrimary copy on the recipient");
            }
        }
        return Err(err);
    }
    state.forget_database_version(&db_name);
    tracing::info!(db = %db_name, to = %to, collections = copied.len(), "committed the move of the primary shard");
    Ok(RawDocumentBuf::new())
}

/// `{_shardsvrMovePrimaryCleanup: 1}` on a database's former primary: drops its copies of the
/// unsharded collections (and views) it gave away, keeping the sharded collections, whose
/// chunks it may own. Idempotent; refuses to run on the database's primary.
pub(super) async fn cleanup(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let db_name = req.db.clone();
    let identity = state.require_identity()?;
    let config = state.connector.client(&identity.config_host);
    let entry = database_entry(&config, &db_name).await?;
    if entry.is_some_and(|e| e.primary == identity.shard_name) {
        return Err(MongoError::new(
            ErrorCode::IllegalOperation,
            format!(
                "{} is the primary shard of {db_name}: its collections stay",
                identity.shard_name
            ),
        ));
    }
    let _section = state
        .enter_critical_section(&db_name, &format!("cleanup after movePrimary of {db_name}"))
        .await?;
    state.forget_database_version(&db_name);
    let Some(database) = state.storage().database(&db_name).await else {
        return Ok(RawDocumentBuf::new());
    };
    for coll in database.collections() {
        let ns = format!("{db_name}.{}", coll.name);
        if collection_entry(&config, &ns).await?.is_none() {
            database.drop_collection(&coll.name).await?;
            state.cursors.kill_namespace(&ns);
        }
    }
    Ok(RawDocumentBuf::new())
}

/// Creates every collection of `database` on the recipient; copies the documents of the
/// unsharded ones, whose names go to `copied` as soon as the recipient holds a copy.
async fn clone_collections(
    database: &DatabaseStore,
    config: &NodeClient,
    recipient: &NodeClient,
    copied: &mut Vec<String>,
) -> Result<()> {
    let db_name = database.name().to_string();
    for coll in database.collections() {
        let ns = format!("{db_name}.{}", coll.name);
        let sharded = collection_entry(config, &ns).await?.is_some();
        let mut create = super::shard_collection::participant_command(&coll);
        if !sharded {
            create.insert("replaceLeftover", true);
        }
        recipient.run_doc(&db_name, create).await?;
        if sharded {
            continue;
        }
        copied.push(coll.name.clone());
        let n = copy_documents(database, &coll, recipient).await?;
        tracing::debug!(ns = %ns, documents = n, "copied a collection to the new primary");
    }
    Ok(())
}

/// Sends every document of `coll` to the recipient in record order; returns how many.
async fn copy_documents(
    database: &DatabaseStore,
    coll: &CollectionMeta,
    recipient: &NodeClient,
) -> Result<u64> {
    let mut after = 0;
    let mut sent = 0u64;
    let mut pending = Pending::default();
    loop {
        let batch = database.read().await?.scan(coll, after, READ_BATCH).await?;
        let Some((last, _)) = batch.last() else { break };
        after = *last;
        for (_, doc) in batch {
            pending.push(doc);
            if pending.bytes >= SEND_BYTES {
                sent += pending.send(database.name(), &coll.name, recipient).await?;
            }
        }
    }
    sent += pending.send(database.name(), &coll.name, recipient).await?;
    Ok(sent)
}

/// Documents read but not yet sent.
#[derive(Default)]
struct Pending {
    docs: RawArrayBuf,
    count: u64,
    bytes: usize,
}

impl Pending {
    fn push(&mut self, doc: RawDocumentBuf) {
        self.bytes += doc.as_bytes().len();
        self.count += 1;
        self.docs.push(doc);
    }

    /// Inserts the pending documents on the recipient (validators bypassed: they were valid
    /// where they came from), checking that every one was written.
    async fn send(&mut self, db: &str, coll: &str, recipient: &NodeClient) -> Result<u64> {
        if self.count == 0 {
            return Ok(0);
        }
        let docs = std::mem::take(self);
        let mut body = RawDocumentBuf::new();
        body.append("insert", coll);
        body.append("documents", docs.docs);
        body.append("ordered", true);
        body.append("bypassDocumentValidation", true);
        let reply = recipient.run(CommandRequest::new(db, body)?).await?;
        let written = match reply.get("n")? {
            Some(bson::RawBsonRef::Int32(n)) => u64::try_from(n).unwrap_or(0),
            Some(bson::RawBsonRef::Int64(n)) => u64::try_from(n).unwrap_or(0),
            _ => 0,
        };
        if written != docs.count || reply.get("writeErrors")?.is_some() {
            return Err(MongoError::new(
                ErrorCode::OperationFailed,
                format!(
                    "movePrimary copied {written} of {} documents of {db}.{coll} to the new primary",
                    docs.count
                ),
            ));
        }
        Ok(docs.count)
    }
}
