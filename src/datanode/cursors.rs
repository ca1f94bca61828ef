//! Open cursors of one node: what `getMore` continues and `killCursors` ends. Idle cursors are
//! reaped after `cursorTimeoutMillis`; a cursor remembers the session it was opened in, whose
//! end or expiry (the session refresh) or kill closes it, and the storage snapshot it reads at. An aggregation's cursor holds its pipeline run, not its
//! output: each batch runs the pipeline further.

use super::exec::{PipelineState, ScanState, SortedState};
use super::storage::StorageTransaction;
use crate::server::sessions::LogicalSessionId;
use bson::RawDocumentBuf;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where a cursor's next documents come from.
pub enum CursorBody {
    /// Results already computed (listings, `$collStats` and the other source stages).
    Buffered(VecDeque<RawDocumentBuf>),
    /// An aggregation that runs its pipeline further as batches are fetched.
    Pipeline(Box<PipelineState>),
    /// A query that resumes scanning where the last batch stopped.
    Scan(Box<ScanState>),
    /// A find whose blocking sort is done, possibly merging runs spilled to disk.
    Sorted(Box<SortedState>),
}

/// A cursor between batches.
pub struct Cursor {
    pub ns: String,
    pub body: CursorBody,
    pub no_timeout: bool,
    /// The logical session the cursor was opened in.
    pub session: Option<LogicalSessionId>,
    /// The storage snapshot the cursor was opened at (a snapshot read's, a transaction's):
    /// its `getMore`s read there too.
    pub snapshot: Option<Arc<StorageTransaction>>,
    last_used: Instant,
}

impl Cursor {
    pub fn new(ns: String, body: CursorBody, no_timeout: bool) -> Self {
        Cursor {
            ns,
            body,
            no_timeout,
            // Opened by a command: the session that command runs in.
            session: crate::server::sessions::request_session(),
            snapshot: StorageTransaction::current(),
            last_used: Instant::now(),
        }
    }
}

/// The registry; a cursor in use by a `getMore` is taken out and put back afterwards.
#[derive(Default)]
pub struct CursorRegistry {
    cursors: Mutex<HashMap<i64, Cursor>>,
}

/// A fresh positive 63-bit cursor id (MongoDB's ids are random, so they are not guessable).
fn new_cursor_id() -> i64 {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let id = i64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) & i64::MAX;
    id.max(1)
}

impl CursorRegistry {
    pub fn register(&self, cursor: Cursor) -> i64 {
        let mut cursors = self.cursors.lock().expect("poisoned");
        let mut id = new_cursor_id();
        while cursors.contains_key(&id) {
            id = new_cursor_id();
        }
        cursors.insert(id, cursor);
        id
    }

    pub fn take(&self, id: i64) -> Option<Cursor> {
        self.cursors.lock().expect("poisoned").remove(&id)
    }

    pub fn put_back(&self, id: i64, mut cursor: Cursor) {
        cursor.last_used = Instant::now();
        self.cursors.lock().expect("poisoned").insert(id, cursor);
    }

    pub fn kill(&self, id: i64) -> bool {
        self.take(id).is_some()
    }

    /// The namespace a cursor belongs to, if it exists.
    pub fn namespace(&self, id: i64) -> Option<String> {
        self.cursors
            .lock()
            .expect("poisoned")
            .get(&id)
            .map(|c| c.ns.clone())
    }

    /// Kills every cursor on a namespace (its collection was dropped or renamed).
    pub fn kill_namespace(&self, ns: &str) {
        self.cursors
            .lock()
            .expect("poisoned")
            .retain(|_, c| c.ns != ns);
    }

    /// Kills every cursor on a database.
    pub fn kill_database(&self, db: &str) {
        let prefix = format!("{db}.");
        self.cursors
            .lock()
            .expect("poisoned")
            .retain(|_, c| !c.ns.starts_with(&prefix));
    }

    /// The sessions open cursors were opened in.
    pub fn sessions(&self) -> Vec<LogicalSessionId> {
        let cursors = self.cursors.lock().expect("poisoned");
        cursors.values().filter_map(|c| c.session.clone()).collect()
    }

    /// Kills the cursors opened in a session `matches` accepts; returns how many.
    pub fn kill_sessions(&self, matches: &dyn Fn(&LogicalSessionId) -> bool) -> usize {
        let mut cursors = self.cursors.lock().expect("poisoned");
        let before = cursors.len();
        cursors.retain(|_, c| !c.session.as_ref().is_some_and(matches));
        before - cursors.len()
    }

    /// Removes cursors idle longer than `timeout`; returns how many.
    pub fn reap(&self, timeout: Duration) -> usize {
        let mut cursors = self.cursors.lock().expect("poisoned");
        let before = cursors.len();
        cursors.retain(|_, c| c.no_timeout || c.last_used.elapsed() < timeout);
        before - cursors.len()
    }

    pub fn len(&self) -> usize {
        self.cursors.lock().expect("poisoned").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_takes_and_reaps() {
        let reg = CursorRegistry::default();
        let id = reg.register(Cursor::new(
            "db.c".into(),
            CursorBody::Buffered(VecDeque::new()),
            false,
        ));
        assert!(id > 0);
        let c = reg.take(id).unwrap();
        assert!(reg.take(id).is_none());
        reg.put_back(id, c);
        assert_eq!(reg.reap(Duration::from_secs(600)), 0);
        assert_eq!(reg.reap(Duration::ZERO), 1);
        assert!(reg.is_empty());
    }

    #[test]
    fn cursors_remember_their_session() {
        let reg = CursorRegistry::default();
        let cursor = || Cursor::new("db.c".into(), CursorBody::Buffered(VecDeque::new()), false);
        reg.register(cursor());
        let mut in_session = cursor();
        in_session.session = Some(LogicalSessionId {
            id: [7; 16],
            uid: crate::server::sessions::NO_AUTH_DIGEST,
        });
        reg.register(in_session);
        let sessions = reg.sessions();
        assert_eq!(sessions.len(), 1);
        assert_eq!(sessions[0].id, [7; 16]);
        assert_eq!(reg.kill_sessions(&|s| s.id == [8; 16]), 0);
        assert_eq!(reg.kill_sessions(&|s| s.id == [7; 16]), 1);
        assert_eq!(reg.len(), 1);
    }
}
