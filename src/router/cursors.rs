//! Router-side cursors: each maps a cursor id the client sees to what is behind it — one shard
//! cursor (a query one shard answered), a cluster cursor merging several, or the part of a
//! pipeline the router runs. A cursor remembers the session it was opened in and the user it
//! was opened for, the only one who may read on it (`commands::cursors`).

use super::cluster_cursor::ClusterCursor;
use crate::rpc::NodeClient;
use crate::server::auth::UserName;
use crate::server::pipeline_cursor::PipelineState;
use crate::server::sessions::LogicalSessionId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a router cursor reads from.
#[derive(Clone)]
pub enum CursorSource {
    Shard {
        client: NodeClient,
        cursor_id: i64,
        /// The collection the shard's cursor reads (a view's source, when the client sees
        /// the view).
        collection: String,
    },
    /// Locked for the length of a getMore: the client sends one at a time per cursor.
    Cluster(Arc<tokio::sync::Mutex<ClusterCursor>>),
    /// The router's part of a pipeline, run as batches are asked for. Its input is a cursor of
    /// this router's own (the pipeline's first part), which times out as any other when no
    /// batch has needed more input for the idle timeout.
    Pipeline(Arc<tokio::sync::Mutex<PipelineState>>),
}

/// A cursor seen by the client under a router-owned id.
#[derive(Clone)]
pub struct RouterCursor {
    pub source: CursorSource,
    pub ns: String,
    /// The logical session the cursor was opened in.
    pub session: Option<LogicalSessionId>,
    /// The user whose command opened it (none without authentication).
    pub owner: Option<UserName>,
    last_used: Instant,
}

#[derive(Default)]
pub struct RouterCursors {
    cursors: Mutex<HashMap<i64, RouterCursor>>,
}

fn new_cursor_id() -> i64 {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    (i64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) & i64::MAX).max(1)
}

impl RouterCursors {
    pub fn register(&self, source: CursorSource, ns: String) -> i64 {
        let mut cursors = self.cursors.lock().expect("poisoned");
        let mut id = new_cursor_id();
        while cursors.contains_key(&id) {
            id = new_cursor_id();
        }
        cursors.insert(
            id,
            RouterCursor {
                source,
                ns,
                // Opened by a command: the session that command runs in.
                session: crate::server::sessions::request_session(),
                owner: crate::server::operations::current_runs_as().map(|r| r.user.clone()),
                last_used: Instant::now(),
            },
        );
        id
    }

    pub fn get(&self, id: i64) -> Option<RouterCursor> {
        let mut cursors = self.cursors.lock().expect("poisoned");
        let cursor = cursors.get_mut(&id)?;
        cursor.last_used = Instant::now();
        Some(cursor.clone())
    }

    /// Registers cursor `id` under another namespace (a read on a view answered from its
    /// source collection).
    pub fn rename(&self, id: i64, ns: &str) {
        if let Some(cursor) = self.cursors.lock().expect("poisoned").get_mut(&id) {
            cursor.ns = ns.to_string();
        }
    }

    pub fn remove(&self, id: i64) -> Option<RouterCursor> {
        self.cursors.lock().expect("poisoned").remove(&id)
    }

    /// The sessions open cursors were opened in.
    pub fn sessions(&self) -> Vec<LogicalSessionId> {
        let cursors = self.cursors.lock().expect("poisoned");
        cursors.values().filter_map(|c| c.session.clone()).collect()
    }

    /// Forgets the cursors opened in a session `matches` accepts and returns them, for the
    /// caller to close.
    pub fn remove_sessions(
        &self,
        matches: &dyn Fn(&LogicalSessionId) -> bool,
    ) -> Vec<RouterCursor> {
        let mut cursors = self.cursors.lock().expect("poisoned");
        let ids: Vec<i64> = cursors
            .iter()
            .filter(|(_, c)| c.session.as_ref().is_some_and(matches))
            .map(|(id, _)| *id)
            .collect();
        ids.iter().filter_map(|id| cursors.remove(id)).collect()
    }

    /// Forgets cursors idle longer than `timeout` and returns what is behind those that hold
    /// cursors elsewhere (merging or pipeline cursors), which the caller closes (a single
    /// shard cursor times out on its own).
    pub fn reap(&self, timeout: Duration) -> Vec<CursorSource> {
        let mut cursors = self.cursors.lock().expect("poisoned");
        let mut reaped = Vec::new();
        cursors.retain(|_, c| {
            let keep = c.last_used.elapsed() < timeout;
            if !keep && !matches!(c.source, CursorSource::Shard { .. }) {
                reaped.push(c.source.clone());
            }
            keep
        });
        reaped
    }
}
