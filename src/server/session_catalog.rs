//! The logical session catalog of one process (MongoDB's `SessionCatalog`): the runtime state
//! of the sessions that ran retryable writes or transactions here. An operation carrying an
//! `lsid` and a `txnNumber` checks its session out before it runs and back in when it ends, so
//! operations on one session run one at a time; a killed session's holder is interrupted and
//! the next checkout waits until the kill is handled, then proceeds (a kill does not forbid
//! later use). The reap job drops entries idle past the cutoff whose session is gone, and asks
//! the registered [`TransactionTableReaper`] to do the same with the transaction table.

use super::node::Role;
use super::sessions::LogicalSessionId;
use crate::command::CommandRequest;
use crate::error::Result;
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;
use tokio::sync::Notify;

/// The catalog; see the module documentation.
#[derive(Default)]
pub struct SessionCatalog {
    sessions: Mutex<HashMap<LogicalSessionId, Arc<SessionRuntime>>>,
    transaction_reaper: RwLock<Option<Arc<dyn TransactionTableReaper>>>,
}

impl std::fmt::Debug for SessionCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionCatalog")
            .field("size", &self.size())
            .finish()
    }
}

/// What the data node registers so the reap job cleans the transaction table too (MongoDB's
/// `MongoDSessionCatalog::reapSessionsOlderThan` over `config.transactions`).
pub trait TransactionTableReaper: Send + Sync {
    /// The sessions whose transaction-table record was last written before `cutoff`.
    fn sessions_written_before(
        &self,
        cutoff: bson::DateTime,
    ) -> BoxFuture<'_, Result<Vec<LogicalSessionId>>>;

    /// Removes the records of `dead` (sessions no longer in the sessions collection) last
    /// written before `cutoff`; returns how many it removed.
    fn remove<'a>(
        &'a self,
        dead: &'a [LogicalSessionId],
        cutoff: bson::DateTime,
    ) -> BoxFuture<'a, Result<usize>>;
}

/// One session's runtime state.
#[derive(Default)]
struct SessionRuntime {
    state: Mutex<RuntimeState>,
    checked_in: Notify,
}

#[derive(Debug, Default)]
struct RuntimeState {
    /// The operation holding the session checked out.
    checked_out_by: Option<i32>,
    /// When it was last checked out, and by which operation.
    last_checkout: Option<Instant>,
    last_checkout_op: Option<i32>,
    /// Operations waiting to check it out (an entry with waiters is never reaped).
    waiters: usize,
    /// Kills not yet handled: until they are, checkouts other than the killer's wait.
    kills_requested: usize,
}

impl SessionRuntime {
    fn created_now() -> Arc<SessionRuntime> {
        let runtime = SessionRuntime::default();
        runtime.state.lock().expect("poisoned").last_checkout = Some(Instant::now());
        Arc::new(runtime)
    }

    /// Waits until the session is free (and, unless `for_kill`, not being killed), then takes
    /// it for `opid`. Dropped while waiting (a deadline, killOp), it leaves no trace.
    async fn check_out(self: &Arc<Self>, opid: Option<i32>, for_kill: bool) {
        self.state.lock().expect("poisoned").waiters += 1;
        let _waiting = Waiting(self);
        loop {
            let notified = self.checked_in.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.state.lock().expect("poisoned");
                if state.checked_out_by.is_none() && (for_kill || state.kills_requested == 0) {
                    // A killer holds the session without an operation of its own: -1 marks it.
                    state.checked_out_by = Some(opid.unwrap_or(-1));
                    state.last_checkout = Some(Instant::now());
                    state.last_checkout_op = opid;
                    return;
                }
            }
            notified.await;
        }
    }

    fn check_in(&self, for_kill: bool) {
        let mut state = self.state.lock().expect("poisoned");
        state.checked_out_by = None;
        if for_kill {
            state.kills_requested = state.kills_requested.saturating_sub(1);
        }
        drop(state);
        self.checked_in.notify_waiters();
    }
}

/// Counts a waiter for as long as it waits.
struct Waiting<'a>(&'a SessionRuntime);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.state.lock().expect("poisoned").waiters -= 1;
    }
}

/// A session checked out by an operation; dropping it checks the session back in.
pub struct CheckedOutSession {
    runtime: Arc<SessionRuntime>,
}

impl Drop for CheckedOutSession {
    fn drop(&mut self) {
        self.runtime.check_in(false);
    }
}

/// A kill requested on one session: the session's checkouts wait until it is handled —
/// [`KillToken::handle`] (which waits for the interrupted holder to check in) or drop.
pub struct KillToken {
    runtime: Arc<SessionRuntime>,
    pub session: LogicalSessionId,
    /// The operation that held the session when it was killed (to interrupt).
    pub holder: Option<i32>,
}

impl KillToken {
    /// Waits for the session to be checked in, then ends the kill: later checkouts proceed.
    pub async fn handle(self) {
        self.runtime.check_out(None, true).await;
        self.runtime.check_in(true);
        std::mem::forget(self);
    }
}

impl Drop for KillToken {
    fn drop(&mut self) {
        // Given up before it was handled (the killer was interrupted): the kill ends here.
        let mut state = self.runtime.state.lock().expect("poisoned");
        state.kills_requested = state.kills_requested.saturating_sub(1);
        drop(state);
        self.runtime.checked_in.notify_waiters();
    }
}

/// Whether a request in a session checks it out: on a mongod every command with a
/// `txnNumber` (a retryable write or a transaction statement); on a router only transaction
/// statements (`autocommit`), as mongos' `RouterOperationContextSession` is for transactions.
pub fn checks_out(request: &CommandRequest, role: Role) -> bool {
    let has = |name: &str| matches!(request.body.get(name), Ok(Some(_)));
    has("txnNumber") && (role != Role::Router || has("autocommit"))
}

impl SessionCatalog {
    /// Checks `session` out for operation `opid`, waiting while another operation holds it
    /// or a kill of it is being handled.
    pub async fn check_out(&self, session: LogicalSessionId, opid: i32) -> CheckedOutSession {
        let runtime = self.entry(session);
        runtime.check_out(Some(opid), false).await;
        CheckedOutSession { runtime }
    }

    fn entry(&self, session: LogicalSessionId) -> Arc<SessionRuntime> {
        let mut sessions = self.sessions.lock().expect("poisoned");
        Arc::clone(
            sessions
                .entry(session)
                .or_insert_with(SessionRuntime::created_now),
        )
    }

    /// Marks the sessions `matches` accepts killed; the caller interrupts their holders and
    /// handles each token.
    pub fn kill(&self, matches: &dyn Fn(&LogicalSessionId) -> bool) -> Vec<KillToken> {
        let sessions = self.sessions.lock().expect("poisoned");
        sessions
            .iter()
            .filter(|(session, _)| matches(session))
            .map(|(session, runtime)| {
                let mut state = runtime.state.lock().expect("poisoned");
                state.kills_requested += 1;
                KillToken {
                    runtime: Arc::clone(runtime),
                    session: session.clone(),
                    holder: state.checked_out_by.filter(|op| *op >= 0),
                }
            })
            .collect()
    }

    /// How many sessions the catalog holds (`sessionCatalogSize`).
    pub fn size(&self) -> usize {
        self.sessions.lock().expect("poisoned").len()
    }

    /// The sessions not checked out, waited for or being killed, last checked out before
    /// `cutoff`: those the reap job may remove once their session is gone.
    pub fn idle_since(&self, cutoff: Instant) -> Vec<LogicalSessionId> {
        let sessions = self.sessions.lock().expect("poisoned");
        sessions
            .iter()
            .filter(|(_, runtime)| reapable(runtime, cutoff))
            .map(|(session, _)| session.clone())
            .collect()
    }

    /// Removes `dead` sessions still idle before `cutoff`; returns how many it removed.
    pub fn remove_idle(&self, dead: &[LogicalSessionId], cutoff: Instant) -> usize {
        let mut sessions = self.sessions.lock().expect("poisoned");
        let before = sessions.len();
        for session in dead {
            if sessions.get(session).is_some_and(|r| reapable(r, cutoff)) {
                sessions.remove(session);
            }
        }
        before - sessions.len()
    }

    /// Registers the data node's transaction-table cleanup for the reap job.
    pub fn register_transaction_reaper(&self, reaper: Arc<dyn TransactionTableReaper>) {
        *self.transaction_reaper.write().expect("poisoned") = Some(reaper);
    }

    pub fn transaction_reaper(&self) -> Option<Arc<dyn TransactionTableReaper>> {
        self.transaction_reaper.read().expect("poisoned").clone()
    }

    /// The runtime state of `session`, for tests and diagnostics: (checked out by, last
    /// checkout op, waiters, kills requested).
    pub fn runtime_state(
        &self,
        session: &LogicalSessionId,
    ) -> Option<(Option<i32>, Option<i32>, usize, usize)> {
        let sessions = self.sessions.lock().expect("poisoned");
        let state = sessions.get(session)?.state.lock().expect("poisoned");
        Some((
            state.checked_out_by,
            state.last_checkout_op,
            state.waiters,
            state.kills_requested,
        ))
    }
}

fn reapable(runtime: &SessionRuntime, cutoff: Instant) -> bool {
    let state = runtime.state.lock().expect("poisoned");
    state.checked_out_by.is_none()
        && state.waiters == 0
        && state.kills_requested == 0
        && state.last_checkout.is_none_or(|t| t < cutoff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn session(byte: u8) -> LogicalSessionId {
        LogicalSessionId {
            id: [byte; 16],
            uid: crate::server::sessions::NO_AUTH_DIGEST,
        }
    }

    #[tokio::test]
    async fn checkouts_of_one_session_serialize() {
        let catalog = Arc::new(SessionCatalog::default());
        let first = catalog.check_out(session(1), 10).await;
        // Another session is independent.
        drop(catalog.check_out(session(2), 11).await);
        let waiter = {
            let catalog = Arc::clone(&catalog);
            tokio::spawn(async move {
                let _second = catalog.check_out(session(1), 12).await;
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished());
        assert_eq!(
            catalog.runtime_state(&session(1)),
            Some((Some(10), Some(10), 1, 0))
        );
        drop(first);
        waiter.await.unwrap();
        assert_eq!(
            catalog.runtime_state(&session(1)),
            Some((None, Some(12), 0, 0))
        );
        assert_eq!(catalog.size(), 2);
    }

    #[tokio::test]
    async fn an_abandoned_wait_leaves_no_waiter() {
        let catalog = SessionCatalog::default();
        let _held = catalog.check_out(session(1), 1).await;
        let waited =
            tokio::time::timeout(Duration::from_millis(30), catalog.check_out(session(1), 2)).await;
        assert!(waited.is_err());
        assert_eq!(catalog.runtime_state(&session(1)).unwrap().2, 0);
    }

    #[tokio::test]
    async fn a_kill_names_the_holder_and_later_checkouts_proceed() {
        let catalog = Arc::new(SessionCatalog::default());
        let held = catalog.check_out(session(1), 7).await;
        let tokens = catalog.kill(&|s| *s == session(1));
        assert_eq!(tokens.len(), 1);
        assert_eq!(tokens[0].holder, Some(7));
        assert_eq!(catalog.runtime_state(&session(1)).unwrap().3, 1);
        let handled = tokio::spawn(async move {
            for token in tokens {
                token.handle().await;
            }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!handled.is_finished(), "the kill waits for the holder");
        drop(held);
        handled.await.unwrap();
        assert_eq!(catalog.runtime_state(&session(1)).unwrap().3, 0);
        drop(catalog.check_out(session(1), 8).await);
    }

    #[tokio::test]
    async fn checkouts_wait_while_a_kill_is_pending() {
        let catalog = Arc::new(SessionCatalog::default());
        drop(catalog.check_out(session(1), 1).await);
        let tokens = catalog.kill(&|_| true);
        let blocked =
            tokio::time::timeout(Duration::from_millis(30), catalog.check_out(session(1), 2)).await;
        assert!(blocked.is_err());
        drop(tokens);
        drop(catalog.check_out(session(1), 3).await);
    }

    #[tokio::test]
    async fn only_idle_entries_are_reaped() {
        let catalog = SessionCatalog::default();
        drop(catalog.check_out(session(1), 1).await);
        let _held = catalog.check_out(session(2), 2).await;
        let later = Instant::now() + Duration::from_secs(1);
        assert_eq!(catalog.idle_since(later), vec![session(1)]);
        assert!(
            catalog
                .idle_since(Instant::now() - Duration::from_secs(60))
                .is_empty()
        );
        assert_eq!(catalog.remove_idle(&[session(1), session(2)], later), 1);
        assert_eq!(catalog.size(), 1);
    }

    #[test]
    fn which_requests_check_out() {
        let lsid = bson::doc! {"id": bson::Binary {subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![1; 16]}};
        let request = |body: bson::Document| CommandRequest::from_document("db", &body).unwrap();
        let write = request(bson::doc! {"insert": "c", "lsid": lsid.clone(), "txnNumber": 1i64});
        let read = request(bson::doc! {"find": "c", "lsid": lsid.clone()});
        assert!(checks_out(&write, Role::Shard));
        assert!(!checks_out(&read, Role::Shard));
        assert!(!checks_out(&write, Role::Router));
        let txn = request(
            bson::doc! {"insert": "c", "lsid": lsid, "txnNumber": 1i64, "autocommit": false},
        );
        assert!(checks_out(&txn, Role::Router));
    }
}
