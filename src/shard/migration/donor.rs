//! The donor's side of a migration (MongoDB's MigrationSourceManager and MigrationCoordinator),
//! run by `_shardsvrMoveRange` under the collection's DDL lock the config server holds: checks
//! that this shard owns the range and settles it (`range_choice`: a missing bound, a split, the
//! size check), registers the donation, persists the migration (`config.migrationCoordinators`)
//! and a pending deletion of the range, starts the recipient and serves it (`source`) until it
//! has caught up, enters the critical section (writes blocked, the storage fence up, then reads
//! blocked for the commit), has the config server commit, and leaves the section once its
//! filtering metadata shows the outcome. A commit makes the range's deletion here ready (and the
//! recipient's go); an abort deletes the recipient's copies instead.

use super::coordinator::MigrationRecord;
use super::source::Source;
use super::{ActiveMigration, KeyRange, uuid_bson};
use crate::datanode::DataNode;
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::NodeClient;
use crate::rpc::config::shard_hosts;
use crate::shard::ShardState;
use crate::shard::shard_key_index::serving_index;
use bson::{Bson, Document, doc};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// How often the donor asks the recipient how far it got.
const STATUS_POLL: Duration = Duration::from_millis(20);

/// What `_shardsvrMoveRange` asks.
pub(crate) struct MoveRangeRequest {
    pub ns: String,
    pub to: String,
    pub from: String,
    /// The chunk the range lies in, as the config server saw it.
    pub chunk: (Document, Document),
    pub min: Option<Document>,
    pub max: Option<Document>,
    pub wait_for_delete: bool,
    pub force_jumbo: bool,
    pub max_chunk_size_bytes: i64,
    pub epoch: Option<bson::oid::ObjectId>,
    pub ddl_lock_term: i64,
}

/// How far a migration got: where it stood if it failed, and when its critical section began.
struct Progress {
    stage: Stage,
    section_entered: Option<Instant>,
}

/// Where a migration stood when it failed.
enum Stage {
    /// Before the critical section's reads block: nothing committed.
    Open,
    /// The commit was sent: its outcome must be found out.
    Committing,
}

impl ShardState {
    /// `_shardsvrMoveRange`.
    pub(crate) async fn move_range(&self, request: MoveRangeRequest) -> Result<()> {
        let identity = self.require_identity()?;
        if request.from != identity.shard_name {
            return Err(MongoError::new(
                ErrorCode::IllegalOperation,
                format!(
                    "moveRange was sent to shard {} for a range of shard {}",
                    identity.shard_name, request.from
                ),
            ));
        }
        let ns = request.ns.as_str();
        self.refresh_collection(ns).await?;
        let filter = self.known_sharding(ns).ok_or_else(|| {
            MongoError::new(
                ErrorCode::NamespaceNotSharded,
                format!("{ns} is not sharded"),
            )
        })?;
        if request
            .epoch
            .is_some_and(|e| e != filter.entry().generation.epoch)
        {
            return Err(MongoError::new(
                ErrorCode::StaleEpoch,
                format!("{ns} was dropped or recreated"),
            ));
        }
        let key = filter.key_pattern().clone();
        let chunk = filter
            .chunks()
            .chunk_for(&key.encode(&request.chunk.0))
            .filter(|c| c.min == request.chunk.0 && c.max == request.chunk.1)
            .filter(|c| c.shard == identity.shard_name)
            .cloned()
            .ok_or_else(|| {
                MongoError::new(
                    ErrorCode::ConflictingOperationInProgress,
                    format!(
                        "shard {} no longer owns chunk [{}, {}) of {ns}",
                        identity.shard_name,
                        render_doc(&request.chunk.0),
                        render_doc(&request.chunk.1)
                    ),
                )
            })?;
        let uuid = Bson::Binary(filter.entry().uuid.clone());
        let pre_version = filter.shard_version();
        // Held, the filter would keep the range deleter waiting for this request.
        drop(filter);
        let chunk_range = KeyRange::new(ns, key.clone(), chunk.min.clone(), chunk.max.clone());
        let range = self.resolve_bounds(&request, &chunk_range).await?;
        // A migration a crash interrupted completes before another starts.
        if !self.recover_migrations().await? {
            return Err(MongoError::new(
                ErrorCode::ConflictingOperationInProgress,
                "an earlier migration from this shard is still being completed; try again later",
            ));
        }
        let _registration = self.migrations.register(ActiveMigration {
            donating: true,
            range: range.clone(),
            other: request.to.clone(),
        })?;
        if range.min != chunk.min || range.max != chunk.max {
            self.split_for_move(&request, &chunk_range, &range).await?;
        }
        self.check_not_too_big(&request, &range).await?;
        let config = self.connector.client(&identity.config_host);
        let to_host = shard_hosts(&config)
            .await?
            .into_iter()
            .find(|(name, _)| *name == request.to)
            .map(|(_, host)| host)
            .ok_or_else(|| {
                MongoError::new(
                    ErrorCode::ShardNotFound,
                    format!("Could not find shard {}", request.to),
                )
            })?;
        let recipient = self.connector.client(&to_host);
        let from_host = shard_hosts(&config)
            .await?
            .into_iter()
            .find(|(name, _)| *name == identity.shard_name)
            .map(|(_, host)| host)
            .unwrap_or_default();
        let migration_id = uuid::Uuid::new_v4();
        let mut record = MigrationRecord {
            id: migration_id,
            range: range.clone(),
            recipient: request.to.clone(),
            decision: None,
        };
        self.persist_coordinator(
            &record,
            &identity.shard_name,
            &uuid,
            pre_version.to_document(),
        )
        .await?;
        self.persist_range_deletion(
            migration_id,
            &range,
            &uuid,
            &identity.shard_name,
            true,
            request.wait_for_delete,
        )
        .await?;
        self.log_migration(&config, "moveChunk.start", &request, &range, doc! {})
            .await;
        let counters = &self.node.stats.migrations;
        counters.donor_started.fetch_add(1, Relaxed);
        let started = Instant::now();
        let mut progress = Progress {
            stage: Stage::Open,
            section_entered: None,
        };
        let outcome = self
            .donate(
                &request,
                &range,
                migration_id,
                &recipient,
                &config,
                &from_host,
                &mut progress,
            )
            .await;
        let committed = match (&outcome, &progress.stage) {
            (Ok(()), _) => true,
            (Err(_), Stage::Open) => false,
            (Err(e), Stage::Committing) => {
                tracing::warn!(ns, error = %e, "the commit of a migration failed; asking the config server for its outcome");
                self.outcome_on_config(&config, &range, &request.to).await
            }
        };
        if committed {
            self.node
                .fail_points
                .pause_if("moveChunkHangAtStep6", &doc! {})
                .await;
        }
        self.record_decision(migration_id, committed).await?;
        record.decision = Some(committed);
        self.leave_donor_section(&record).await?;
        if let Some(entered) = progress.section_entered {
            let held = millis_since(entered);
            counters.critical_section_millis.fetch_add(held, Relaxed);
            tracing::info!(ns, range = %range.display(), millis = held, "left the migration's critical section");
        }
        self.complete_migration(&record).await?;
        let source = self.migrations.source.lock().expect("poisoned").take();
        if let Some(source) = source {
            let cloned = source.cloned.load(std::sync::atomic::Ordering::Relaxed);
            counters
                .docs_cloned_on_donor
                .fetch_add(cloned as i64, Relaxed);
        }
        let outcome_counter = if committed {
            &counters.donor_committed
        } else {
            &counters.donor_aborted
        };
        outcome_counter.fetch_add(1, Relaxed);
        counters
            .donor_millis
            .fetch_add(millis_since(started), Relaxed);
        let note = if committed { "success" } else { "aborted" };
        let mut details = doc! {"note": note, "millis": started.elapsed().as_millis() as i64};
        if let Err(e) = &outcome {
            details.insert("errmsg", e.to_string());
        }
        self.log_migration(&config, "moveChunk.from", &request, &range, details)
            .await;
        if committed && request.wait_for_delete {
            self.wait_for_range_deletion(migration_id).await?;
        }
        match outcome {
            Err(e) if !committed => Err(e),
            _ => Ok(()),
        }
    }

    /// The migration proper, from starting the recipient to the config server's commit.
    #[allow(clippy::too_many_arguments)]
    async fn donate(
        &self,
        request: &MoveRangeRequest,
        range: &KeyRange,
        migration_id: uuid::Uuid,
        recipient: &NodeClient,
        config: &NodeClient,
        from_host: &str,
        progress: &mut Progress,
    ) -> Result<()> {
        let ns = range.ns.as_str();
        let (db_name, coll_name) = ns.split_once('.').unwrap_or((ns, ""));
        let (database, coll) = self
            .storage()
            .collection(db_name, coll_name)
            .await
            .ok_or_else(|| MongoError::namespace_not_found(format!("{ns} does not exist")))?;
        let index = serving_index(&coll, &range.key).ok_or_else(|| {
            MongoError::new(
                ErrorCode::IndexNotFound,
                format!(
                    "no index serves the shard key {} of {ns}",
                    render_doc(range.key.pattern())
                ),
            )
        })?;
        let session_id = format!(
            "{}_{}_{}",
            request.from,
            request.to,
            bson::oid::ObjectId::new()
        );
        let source = Arc::new(
            Source::start(
                session_id.clone(),
                database.clone(),
                &coll,
                &index,
                range.clone(),
            )
            .await?,
        );
        *self.migrations.source.lock().expect("poisoned") = Some(source.clone());
        // The recipient gets the collection as this shard has it (UUID, options, indexes).
        recipient
            .run_doc(db_name, crate::shard::commands::participant_command(&coll))
            .await?;
        recipient
            .run_doc(
                "admin",
                doc! {
                    "_recvChunkStart": ns,
                    "sessionId": &session_id,
                    "migrationId": uuid_bson(&migration_id),
                    "collectionUUID": Bson::Binary(bson::Binary {
                        subtype: bson::spec::BinarySubtype::Uuid,
                        bytes: coll.uuid.as_bytes().to_vec(),
                    }),
                    "from": from_host,
                    "fromShardName": &request.from,
                    "min": range.min.clone(),
                    "max": range.max.clone(),
                    "shardKeyPattern": range.key.pattern().clone(),
                },
            )
            .await?;
        let cloning = Instant::now();
        self.wait_until_steady(recipient, &session_id, &source)
            .await?;
        let counters = &self.node.stats.migrations;
        counters
            .donor_clone_millis
            .fetch_add(millis_since(cloning), Relaxed);
        self.node
            .fail_points
            .pause_if("moveChunkHangAtStep4", &doc! {})
            .await;
        let reason = super::coordinator::section_reason(&migration_id);
        progress.section_entered = Some(Instant::now());
        source.set_phase("criticalSection");
        self.critical_sections
            .enter_recoverable_blocking(&self.storage, db_name, &[ns], &reason, false)
            .await?;
        source.fence().await?;
        recipient
            .run_doc(
                "admin",
                doc! {"_recvChunkCommit": ns, "sessionId": &session_id},
            )
            .await?;
        let commit_phase = Instant::now();
        self.critical_sections
            .enter_recoverable_blocking(&self.storage, db_name, &[ns], &reason, true)
            .await?;
        self.node
            .fail_points
            .pause_if("moveChunkHangAtStep5", &doc! {})
            .await;
        progress.stage = Stage::Committing;
        source.set_phase("commit");
        let committed = config
                .run_doc(
                    "admin",
                    doc! {
                        "_configsvrCommitChunkMigration": ns,
                        "fromShard": &request.from,
                        "toShard": &request.to,
                        "migratedChunk": range.bounds(),
                        "fromShardCollectionVersion": self.known_sharding(ns).map(|f| f.shard_version().to_document()).unwrap_or_default(),
                        "ddlLockTerm": request.ddl_lock_term,
                    },
                )
            .await
            .map(|_| ());
        counters
            .critical_section_commit_millis
            .fetch_add(millis_since(commit_phase), Relaxed);
        committed
    }

    /// Polls the recipient until it has cloned everything and caught up.
    async fn wait_until_steady(
        &self,
        recipient: &NodeClient,
        session_id: &str,
        source: &Source,
    ) -> Result<()> {
        loop {
            let status = recipient
                .run_doc(
                    "admin",
                    doc! {"_recvChunkStatus": 1, "sessionId": session_id},
                )
                .await?;
            match status.get_str("state").unwrap_or_default() {
                "steady" => return Ok(()),
                "catchup" => {
                    source.set_phase("catchup");
                    tokio::time::sleep(STATUS_POLL).await
                }
                "fail" | "abort" | "done" => {
                    return Err(MongoError::new(
                        ErrorCode::OperationFailed,
                        format!(
                            "the recipient failed to receive the range: {}",
                            status.get_str("errmsg").unwrap_or("it stopped")
                        ),
                    ));
                }
                _ => tokio::time::sleep(STATUS_POLL).await,
            }
        }
    }

    /// Writes a `config.changelog` entry on the config server (best effort, as MongoDB's).
    async fn log_migration(
        &self,
        config: &NodeClient,
        what: &str,
        request: &MoveRangeRequest,
        range: &KeyRange,
        mut details: Document,
    ) {
        details.insert("min", range.min.clone());
        details.insert("max", range.max.clone());
        details.insert("from", &request.from);
        details.insert("to", &request.to);
        let now = bson::DateTime::now();
        let entry = doc! {
            "_id": format!("{}-{}-{}", self.node.host(), now.try_to_rfc3339_string().unwrap_or_default(), bson::oid::ObjectId::new()),
            "server": self.node.host(),
            "shard": &request.from,
            "clientAddr": "",
            "time": now,
            "what": what,
            "ns": &range.ns,
            "details": details,
        };
        if let Err(e) = config
            .run_doc("config", doc! {"insert": "changelog", "documents": [entry]})
            .await
        {
            tracing::warn!(what, error = %e, "could not write the changelog");
        }
    }
}

fn millis_since(start: Instant) -> i64 {
    i64::try_from(start.elapsed().as_millis()).unwrap_or(i64::MAX)
}
