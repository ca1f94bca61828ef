//! Router-side cursors: each maps a cursor id the client sees to the shard cursor behind it.

use crate::rpc::NodeClient;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A cursor on one shard, seen by the client under a router-owned id.
#[derive(Clone)]
pub struct RouterCursor {
    pub shard: NodeClient,
    pub shard_cursor_id: i64,
    pub ns: String,
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
    pub fn register(&self, shard: NodeClient, shard_cursor_id: i64, ns: String) -> i64 {
        let mut cursors = self.cursors.lock().expect("poisoned");
        let mut id = new_cursor_id();
        while cursors.contains_key(&id) {
            id = new_cursor_id();
        }
        cursors.insert(
            id,
            RouterCursor {
                shard,
                shard_cursor_id,
                ns,
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

    pub fn remove(&self, id: i64) -> Option<RouterCursor> {
        self.cursors.lock().expect("poisoned").remove(&id)
    }

    /// Forgets cursors idle longer than `timeout` (their shard cursors time out on their own).
    pub fn reap(&self, timeout: Duration) -> usize {
        let mut cursors = self.cursors.lock().expect("poisoned");
        let before = cursors.len();
        cursors.retain(|_, c| c.last_used.elapsed() < timeout);
        before - cursors.len()
    }
}
