//! The donor's MigrationCoordinator: the migration persisted in `config.migrationCoordinators`
//! (range, shard key, recipient) before anything is copied, its decision persisted once known,
//! and its completion — the critical section left once this shard's metadata shows the
//! outcome, the recipient told (`_recvChunkReleaseCritSec` after a commit, `_recvChunkAbort`
//! otherwise), the right side's range deletion made ready, the document deleted. After a
//! restart, or when the recipient cannot be reached, recovery completes every migration left:
//! by its persisted decision, or — none persisted — by asking the config server whether the
//! range moved (the seed's "Recovery").

use super::{CONFIG_DB, COORDINATORS, KeyRange, uuid_bson};
use crate::catalog::ShardKeyPattern;
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::NodeClient;
use crate::rpc::config::{collection_routing, shard_hosts};
use crate::shard::ShardState;
use bson::{Bson, Document, doc};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How long a migration's end tries to reach the recipient before recovery takes over.
const INLINE_ATTEMPTS: Duration = Duration::from_secs(10);
/// How often recovery tries again.
const RECOVERY_PAUSE: Duration = Duration::from_secs(2);

/// A migration as its coordinator document records it.
pub(super) struct MigrationRecord {
    pub id: uuid::Uuid,
    pub range: KeyRange,
    pub recipient: String,
    pub decision: Option<bool>,
}

impl MigrationRecord {
    fn parse(doc: &Document) -> Option<MigrationRecord> {
        let id = match doc.get("_id")? {
            Bson::Binary(b) => uuid::Uuid::from_slice(&b.bytes).ok()?,
            _ => return None,
        };
        let range = doc.get_document("range").ok()?;
        let key = ShardKeyPattern::parse(doc.get_document("keyPattern").ok()?).ok()?;
        Some(MigrationRecord {
            id,
            range: KeyRange::new(
                doc.get_str("nss").ok()?,
                key,
                range.get_document("min").ok()?.clone(),
                range.get_document("max").ok()?.clone(),
            ),
            recipient: doc.get_str("recipientShardId").ok()?.to_string(),
            decision: doc.get_str("decision").ok().map(|d| d == "committed"),
        })
    }
}

/// The reason the donor's critical section is held for.
pub(super) fn section_reason(migration_id: &uuid::Uuid) -> Document {
    doc! {"command": "moveRange", "migrationId": migration_id.to_string()}
}

impl ShardState {
    pub(super) async fn persist_coordinator(
        &self,
        record: &MigrationRecord,
        donor: &str,
        collection_uuid: &Bson,
        pre_migration_version: Document,
    ) -> Result<()> {
        let id = uuid_bson(&record.id);
        let document = doc! {
            "_id": id.clone(),
            "nss": &record.range.ns,
            "collectionUuid": collection_uuid.clone(),
            "donorShardId": donor,
            "recipientShardId": &record.recipient,
            "range": record.range.bounds(),
            "keyPattern": record.range.key.pattern().clone(),
            "preMigrationChunkVersion": pre_migration_version,
        };
        self.storage
            .put_document(CONFIG_DB, COORDINATORS, &id, Some(&document), true)
            .await
    }

    /// The migrations this shard donated and has not completed.
    pub(super) async fn unfinished_migrations(&self) -> Result<Vec<MigrationRecord>> {
        Ok(self
            .storage
            .documents(CONFIG_DB, COORDINATORS)
            .await?
            .iter()
            .filter_map(MigrationRecord::parse)
            .collect())
    }

    /// Loads the collection's placement after a commit, retrying until the config server
    /// answers: this shard must not serve the range as its own any more.
    pub(super) async fn refresh_until_done(&self, ns: &str) {
        let mut delay = Duration::from_millis(50);
        loop {
            self.forget_filtering(ns);
            match self.refresh_collection(ns).await {
                Ok(_) => return,
                Err(e) => {
                    tracing::warn!(ns, error = %e, "could not refresh after a migration; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// Whether the config server's chunks show `range` on `to` (the commit happened).
    async fn committed_on_config(
        &self,
        config: &NodeClient,
        range: &KeyRange,
        to: &str,
    ) -> Result<bool> {
        let routing = collection_routing(config, &range.ns).await?;
        Ok(routing.is_some_and(|(_, chunks)| {
            chunks
                .chunk_for(range.min_key())
                .is_some_and(|c| c.shard == to && c.min == range.min)
        }))
    }

    /// Asks the config server whether the range moved, until it answers.
    pub(super) async fn outcome_on_config(
        &self,
        config: &NodeClient,
        range: &KeyRange,
        to: &str,
    ) -> bool {
        let mut delay = Duration::from_millis(50);
        loop {
            match self.committed_on_config(config, range, to).await {
                Ok(committed) => return committed,
                Err(e) => {
                    tracing::warn!(ns = %range.ns, error = %e, "could not learn a migration's outcome; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// Persists the migration's decision in its coordinator document.
    pub(super) async fn record_decision(
        &self,
        migration_id: uuid::Uuid,
        committed: bool,
    ) -> Result<()> {
        let id = uuid_bson(&migration_id);
        let decision = if committed { "committed" } else { "aborted" };
        let mut coordinator = self
            .storage
            .documents(CONFIG_DB, COORDINATORS)
            .await?
            .into_iter()
            .find(|d| d.get("_id") == Some(&id))
            .ok_or_else(|| MongoError::internal("a migration without its coordinator document"))?;
        coordinator.insert("decision", decision);
        self.storage
            .put_document(CONFIG_DB, COORDINATORS, &id, Some(&coordinator), true)
            .await
    }

    /// Leaves the donor's critical section of a decided migration, once this shard's
    /// filtering metadata shows the outcome (requests waiting for it then meet the new
    /// version). Nothing happens when the section is not held.
    pub(super) async fn leave_donor_section(&self, record: &MigrationRecord) -> Result<()> {
        let ns = record.range.ns.as_str();
        self.refresh_until_done(ns).await;
        self.critical_sections
            .release_recoverable(&self.storage, &[ns], &section_reason(&record.id))
            .await
    }

    /// Has both sides act on the decision: after a commit the recipient drops its pending
    /// deletion and this shard's deletion of the range becomes ready; after an abort this
    /// shard's pending deletion goes and the recipient deletes its copies. The coordinator
    /// document goes last. Tries for a while; then recovery goes on in the background.
    pub(super) async fn complete_migration(&self, record: &MigrationRecord) -> Result<()> {
        let deadline = std::time::Instant::now() + INLINE_ATTEMPTS;
        loop {
            match self.tell_recipient(record).await {
                Ok(()) => break,
                Err(e) if std::time::Instant::now() < deadline => {
                    tracing::warn!(ns = %record.range.ns, error = %e, "could not tell the recipient the migration's outcome; retrying");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => {
                    tracing::warn!(ns = %record.range.ns, error = %e, "could not tell the recipient the migration's outcome; recovery will");
                    spawn_recovery(Arc::downgrade(&self.arc()));
                    return Ok(());
                }
            }
        }
        self.finish_locally(record).await
    }

    async fn tell_recipient(&self, record: &MigrationRecord) -> Result<()> {
        let committed = record
            .decision
            .ok_or_else(|| MongoError::internal("an undecided migration"))?;
        let identity = self.require_identity()?;
        let config = self.connector.client(&identity.config_host);
        let host = shard_hosts(&config)
            .await?
            .into_iter()
            .find(|(name, _)| *name == record.recipient)
            .map(|(_, host)| host)
            .ok_or_else(|| {
                MongoError::new(
                    ErrorCode::ShardNotFound,
                    format!("Could not find shard {}", record.recipient),
                )
            })?;
        let id = uuid_bson(&record.id);
        let command = if committed {
            doc! {"_recvChunkReleaseCritSec": &record.range.ns, "migrationId": id}
        } else {
            doc! {"_recvChunkAbort": &record.range.ns, "migrationId": id}
        };
        self.connector
            .client(&host)
            .run_doc("admin", command)
            .await?;
        Ok(())
    }

    async fn finish_locally(&self, record: &MigrationRecord) -> Result<()> {
        let committed = record.decision == Some(true);
        if committed {
            self.mark_range_deletion_ready(&record.id).await?;
        } else {
            self.delete_range_deletion(&record.id).await?;
        }
        self.storage
            .put_document(CONFIG_DB, COORDINATORS, &uuid_bson(&record.id), None, true)
            .await?;
        tracing::info!(ns = %record.range.ns, range = %record.range.display(), to = %record.recipient, committed, "migration finished");
        Ok(())
    }

    /// Completes one unfinished migration after a restart (or a recipient out of reach).
    async fn recover(&self, mut record: MigrationRecord) -> Result<()> {
        if record.decision.is_none() {
            let identity = self.require_identity()?;
            let config = self.connector.client(&identity.config_host);
            let committed = self
                .committed_on_config(&config, &record.range, &record.recipient)
                .await?;
            self.record_decision(record.id, committed).await?;
            record.decision = Some(committed);
            tracing::info!(ns = %record.range.ns, range = %record.range.display(), committed, "recovered a migration's decision from the config server");
        }
        self.leave_donor_section(&record).await?;
        self.tell_recipient(&record).await?;
        self.finish_locally(&record).await
    }

    /// Completes every unfinished migration once; true when none is left.
    pub(super) async fn recover_migrations(&self) -> Result<bool> {
        let mut done = true;
        for record in self.unfinished_migrations().await? {
            if self.migrations.active().is_some_and(|a| a.donating) {
                // The running donation completes its own migration.
                return Ok(false);
            }
            if let Err(e) = self.recover(record).await {
                tracing::warn!(error = %e, "could not complete an unfinished migration yet");
                done = false;
            }
        }
        Ok(done)
    }
}

/// Completes the unfinished migrations in the background, trying again until none is left.
pub(crate) fn spawn_recovery(state: Weak<ShardState>) {
    tokio::spawn(async move {
        loop {
            let Some(shard) = state.upgrade() else { return };
            if shard.identity().is_some() {
                match shard.recover_migrations().await {
                    Ok(true) => return,
                    Ok(false) => {}
                    Err(e) => tracing::warn!(error = %e, "migration recovery"),
                }
            }
            drop(shard);
            tokio::time::sleep(RECOVERY_PAUSE).await;
        }
    });
}
