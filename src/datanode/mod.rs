//! What every node that stores documents has (every `mongod`, shard or config server): the
//! storage engine, query execution, indexes, cursors, TTL, views, validation and the generic data
//! commands, over [`DataNode`]. The roles build on it; it knows none of them.

pub mod collation;
pub mod commands;
pub mod cursors;
pub mod exec;
pub mod index;
pub mod profiler;
pub mod snapshot_read;
pub mod storage;
pub mod transaction_table;
pub mod ttl;
pub mod validation;
pub mod view_graph;
pub mod views;

use crate::catalog::OwnershipFilter;
use crate::command::CommandRequest;
use crate::error::Result;
use crate::server::asserts::contained;
use crate::server::{CURSOR_MONITOR_PERIOD, NodeState};
use cursors::CursorRegistry;
use futures::future::BoxFuture;
use std::sync::{Arc, Weak};
use storage::Storage;

/// A node that stores documents and serves CRUD commands on them.
pub trait DataNode: NodeState {
    fn storage(&self) -> &Storage;
    fn cursors(&self) -> &CursorRegistry;
    /// The retryable writes' session state (`transaction_table`).
    fn transaction_table(&self) -> &transaction_table::TransactionTable;
    /// The name this node's data is reported under (`$collStats`'s `shard`).
    fn shard_name(&self) -> String;
    /// The ownership filter a request runs under (`None`: every document is visible).
    fn ownership(&self, _request: &CommandRequest) -> Option<Arc<OwnershipFilter>> {
        None
    }
    /// The sharding of a collection as this node knows it (`None`: not sharded, or unknown).
    /// How many documents of `ns` here await a range deletion (a shard's orphans).
    fn orphan_count<'a>(&'a self, _ns: &'a str) -> BoxFuture<'a, Result<i64>> {
        Box::pin(async { Ok(0) })
    }

    /// Work the node does on its own that `$currentOp` lists beside the commands it runs
    /// (a shard's chunk migration).
    fn background_operations(&self) -> Vec<bson::Document> {
        Vec::new()
    }

    fn sharding(&self, _ns: &str) -> Option<Arc<OwnershipFilter>> {
        None
    }
    /// Whether a collection is sharded, asking the config server when this node does not know.
    fn is_sharded<'a>(&'a self, _ns: &'a str) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async { Ok(false) })
    }
    /// For a DDL a router sent to this node as the database's primary, the cluster's DDL lock
    /// on `names` (held until the returned guard is released or dropped); `None` where there is
    /// nothing to lock (a request sent to this node directly, or a node outside a cluster).
    fn routed_ddl_lock<'a>(
        &'a self,
        _request: &'a CommandRequest,
        _names: Vec<String>,
        _reason: &'a str,
    ) -> BoxFuture<'a, Result<Option<DdlGuard>>> {
        Box::pin(async { Ok(None) })
    }
}

/// A DDL lock a role holds for a request (a shard's lock on the config server), as the data
/// commands see it: something to give back once the DDL is done.
pub trait HeldDdlLock: Send {
    /// Gives the lock back before the DDL answers. (Dropped unreleased, on an error path, the
    /// holder gives it back as it sees fit.)
    fn release(self: Box<Self>) -> BoxFuture<'static, ()>;
}

/// The guard [`DataNode::routed_ddl_lock`] returns: the lock is held until [`release`] or drop.
///
/// [`release`]: DdlGuard::release
pub struct DdlGuard(Box<dyn HeldDdlLock>);

impl DdlGuard {
    pub fn new(lock: impl HeldDdlLock + 'static) -> DdlGuard {
        DdlGuard(Box::new(lock))
    }

    /// Gives the lock back before the DDL answers, so the client's next DDL finds it free.
    pub async fn release(self) {
        self.0.release().await
    }
}

/// Kills cursors idle for longer than `cursorTimeoutMillis`.
pub fn spawn_cursor_reaper<S: DataNode>(state: Weak<S>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(CURSOR_MONITOR_PERIOD);
        loop {
            tick.tick().await;
            let Some(state) = state.upgrade() else { break };
            let reaped = contained("cursor reaper", async {
                state.cursors().reap(state.node().cursor_timeout())
            })
            .await;
            if let Some(reaped @ 1..) = reaped {
                tracing::info!(reaped, "killed idle cursors");
            }
        }
    });
}
