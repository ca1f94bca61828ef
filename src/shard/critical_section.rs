//! Critical sections: while this shard changes where a database's data lives (the commit of
//! `shardCollection`, `movePrimary`), the requests routers version for that database wait, and
//! the ones already running finish first. A section is held by the coordinating command on
//! this shard and ends with it (or with the process): it is never left behind by a crash.

use super::ShardState;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::CommandGuard;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

/// How long a coordinator waits for the database's running requests to finish before it gives
/// up with LockBusy (MongoDB's DDL lock timeout is of the same order).
const ENTER_TIMEOUT: Duration = Duration::from_secs(30);

/// One reader-writer lock per database: versioned requests share it, a critical section holds
/// it alone. Tokio's lock is fair, so requests arriving after a section asked for it queue
/// behind the section instead of starving it.
#[derive(Default)]
pub(super) struct CriticalSections {
    databases: Mutex<HashMap<String, Arc<RwLock<()>>>>,
}

/// A critical section held on one database; dropping it lets the waiting requests run.
pub(super) struct CriticalSection {
    _held: OwnedRwLockWriteGuard<()>,
}

impl CriticalSections {
    fn lock_of(&self, db: &str) -> Arc<RwLock<()>> {
        let mut databases = self.databases.lock().expect("poisoned");
        Arc::clone(databases.entry(db.to_string()).or_default())
    }

    /// Admits one versioned request on `db`: waits while a critical section is held.
    pub async fn admit(&self, db: &str) -> OwnedRwLockReadGuard<()> {
        self.lock_of(db).read_owned().await
    }

    /// Enters `db`'s critical section once its running versioned requests have finished.
    pub async fn enter(&self, db: &str, reason: &str) -> Result<CriticalSection> {
        let lock = self.lock_of(db);
        match tokio::time::timeout(ENTER_TIMEOUT, lock.write_owned()).await {
            Ok(held) => {
                tracing::info!(db = %db, reason = %reason, "entered the critical section");
                Ok(CriticalSection { _held: held })
            }
            Err(_) => Err(MongoError::new(
                ErrorCode::LockBusy,
                format!(
                    "could not enter the critical section of database {db} for {reason}: requests kept running for {}s",
                    ENTER_TIMEOUT.as_secs()
                ),
            )),
        }
    }
}

impl ShardState {
    /// Admits a request: one a router versioned waits for its database's critical section.
    /// The coordinators of placement changes (`_shardsvr...` commands) are not admitted this
    /// way: they enter the section themselves.
    pub(super) async fn admit(&self, request: &CommandRequest) -> Result<CommandGuard> {
        let args = request.args();
        let versioned =
            args.get("databaseVersion")?.is_some() || args.get("shardVersion")?.is_some();
        if !versioned || super::is_coordinator(request) {
            return Ok(None);
        }
        let db = super::versioning::versioned_database(request)?;
        Ok(Some(Box::new(self.critical_sections.admit(&db).await)))
    }

    /// Enters `db`'s critical section (see [`CriticalSections::enter`]).
    pub(super) async fn enter_critical_section(
        &self,
        db: &str,
        reason: &str,
    ) -> Result<CriticalSection> {
        self.critical_sections.enter(db, reason).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_section_waits_for_running_requests_and_blocks_new_ones() {
        let sections = Arc::new(CriticalSections::default());
        let running = sections.admit("db").await;
        let entering = {
            let sections = Arc::clone(&sections);
            tokio::spawn(async move { sections.enter("db", "test").await.map(|_| ()) })
        };
        tokio::task::yield_now().await;
        assert!(!entering.is_finished(), "the section waits for the request");
        drop(running);
        entering.await.unwrap().unwrap();

        let held = sections.enter("db", "test").await.unwrap();
        let other_db = sections.admit("other").await;
        drop(other_db);
        let blocked = {
            let sections = Arc::clone(&sections);
            tokio::spawn(async move {
                drop(sections.admit("db").await);
            })
        };
        tokio::task::yield_now().await;
        assert!(
            !blocked.is_finished(),
            "a new request waits for the section"
        );
        drop(held);
        blocked.await.unwrap();
    }
}
