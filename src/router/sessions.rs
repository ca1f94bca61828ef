//! The router's logical session refresh: every `logicalSessionRefreshMillis` (and on
//! `refreshLogicalSessionCacheNow`) the sessions its cache saw are written to
//! `config.system.sessions` — `lastUse` only moves forward — where a TTL index expires those
//! unused for 30 minutes (`localLogicalSessionTimeoutMinutes`), as MongoDB's routers do.
//! `$listSessions` reads that collection.

use super::RouterState;
use crate::error::{MongoError, Result};
use crate::server::asserts::contained;
use bson::{Bson, Document, doc};
use std::sync::Weak;

/// How long an unused session's record lives (`localLogicalSessionTimeoutMinutes`, 30).
const SESSION_TIMEOUT_SECS: i32 = 30 * 60;
/// Session records per update command.
const BATCH: usize = 1_000;

impl RouterState {
    /// Writes the sessions of this router's cache to `config.system.sessions`.
    pub(crate) async fn flush_sessions(&self) -> Result<()> {
        let records = self
            .node
            .sessions
            .take_for_flush(self.node.session_refresh_period());
        if records.is_empty() {
            return Ok(());
        }
        // Creating an index that exists is a no-op, so every flush may ask.
        self.config_command(doc! {
            "createIndexes": "system.sessions",
            "indexes": [{"key": {"lastUse": 1}, "name": "lsidTTLIndex", "expireAfterSeconds": SESSION_TIMEOUT_SECS}],
        })
        .await?;
        for chunk in records.chunks(BATCH) {
            let updates: Vec<Document> = chunk
                .iter()
                .map(|record| {
                    doc! {
                        "q": {"_id": record.get("_id").cloned().unwrap_or(Bson::Null)},
                        "u": {"$max": {"lastUse": record.get("lastUse").cloned().unwrap_or(Bson::Null)}},
                        "upsert": true,
                    }
                })
                .collect();
            self.config_command(doc! {"update": "system.sessions", "updates": updates})
                .await?;
        }
        Ok(())
    }

    async fn config_command(&self, command: Document) -> Result<Document> {
        let reply = self.config.run_doc("config", command).await?;
        if let Some(err) = MongoError::from_reply(&reply) {
            return Err(err);
        }
        if let Ok(errors) = reply.get_array("writeErrors") {
            if let Some(Bson::Document(first)) = errors.first() {
                let mut failed = first.clone();
                failed.insert("ok", 0);
                return Err(MongoError::from_reply(&failed)
                    .unwrap_or_else(|| MongoError::internal("write error")));
            }
        }
        Ok(reply)
    }
}

/// Flushes the router's session cache every refresh period while the router lives.
pub(super) fn spawn_session_refresh(state: Weak<RouterState>) {
    if let Some(router) = state.upgrade() {
        router.node.sessions.enable_flushing();
    }
    tokio::spawn(async move {
        while let Some(period) = state.upgrade().map(|s| s.node.session_refresh_period()) {
            tokio::time::sleep(period.max(std::time::Duration::from_millis(100))).await;
            let Some(router) = state.upgrade() else { break };
            if let Some(Err(e)) = contained("session refresh", router.flush_sessions()).await {
                tracing::debug!(error = %e, "could not refresh the logical sessions");
            }
        }
    });
}
