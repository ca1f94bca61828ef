//! The shard role: stores documents, checks the versions routers attach, executes queries.
//! The config server stores the config database with this same engine (as a config server in
//! MongoDB is a mongod), so storage, query execution and the CRUD commands are shared with it
//! through [`DataNode`].

pub mod commands;
mod critical_section;
pub mod cursors;
pub mod ddl_lock;
pub mod exec;
mod filtering;
mod identity;
pub mod index;
mod persisted_routing;
mod shard_key_index;
mod single_flight;
pub mod storage;
pub mod ttl;
pub mod validation;
mod versioning;
pub mod views;

pub use identity::ShardIdentity;

use crate::catalog::OwnershipFilter;
use crate::command::CommandRequest;
use crate::error::Result;
use crate::rpc::Connector;
use crate::server::asserts::contained;
use crate::server::{CURSOR_MONITOR_PERIOD, CommandGuard, CommandTable, Node, NodeState};
use cursors::CursorRegistry;
use futures::future::BoxFuture;
use std::sync::{Arc, Weak};
use storage::Storage;

/// A node that stores documents and serves CRUD commands on them.
pub trait DataNode: NodeState {
    fn storage(&self) -> &Storage;
    fn cursors(&self) -> &CursorRegistry;
    /// The name this node's data is reported under (`$collStats`'s `shard`).
    fn shard_name(&self) -> String;
    /// The ownership filter a request runs under (`None`: every document is visible).
    fn ownership(&self, _request: &CommandRequest) -> Option<Arc<OwnershipFilter>> {
        None
    }
    /// The sharding of a collection as this node knows it (`None`: not sharded, or unknown).
    fn sharding(&self, _ns: &str) -> Option<Arc<OwnershipFilter>> {
        None
    }
    /// Whether a collection is sharded, asking the config server when this node does not know.
    fn is_sharded<'a>(&'a self, _ns: &'a str) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async { Ok(false) })
    }
    /// For a DDL a router sent to this node as the database's primary, the cluster's DDL lock
    /// on `names` (held until the returned guard drops); `None` where there is nothing to
    /// lock (a request sent to this node directly, or a node outside a cluster).
    fn routed_ddl_lock<'a>(
        &'a self,
        _request: &'a CommandRequest,
        _names: Vec<String>,
        _reason: &'a str,
    ) -> BoxFuture<'a, Result<Option<ddl_lock::RemoteDdlLock>>> {
        Box::pin(async { Ok(None) })
    }
}

/// The state of one shard server.
pub struct ShardState {
    node: Node,
    storage: Arc<Storage>,
    cursors: CursorRegistry,
    connector: Arc<Connector>,
    identity: std::sync::RwLock<Option<ShardIdentity>>,
    versions: versioning::DatabaseVersionCache,
    filtering: filtering::FilteringMetadata,
    critical_sections: critical_section::CriticalSections,
    table: CommandTable<ShardState>,
}

impl ShardState {
    /// Opens the shard's data directory and starts its background jobs.
    pub async fn open(
        node: Node,
        data_dir: &std::path::Path,
        connector: Arc<Connector>,
    ) -> Result<Arc<ShardState>> {
        let storage = Storage::open(data_dir).await?;
        let identity = identity::load(&storage).await?;
        let state = Arc::new(ShardState {
            node,
            storage,
            cursors: CursorRegistry::default(),
            connector,
            identity: std::sync::RwLock::new(identity),
            versions: Default::default(),
            filtering: Default::default(),
            critical_sections: Default::default(),
            table: commands::table(),
        });
        state.load_filtering_metadata().await?;
        state.critical_sections.load(&state.storage).await?;
        spawn_cursor_reaper(Arc::downgrade(&state));
        ttl::spawn_ttl_monitor(Arc::downgrade(&state));
        Ok(state)
    }

    pub fn identity(&self) -> Option<ShardIdentity> {
        self.identity.read().expect("poisoned").clone()
    }

    /// This shard's identity, or the error for a shard no cluster has added yet.
    pub fn require_identity(&self) -> Result<ShardIdentity> {
        self.identity().ok_or_else(|| {
            crate::error::MongoError::new(
                crate::error::ErrorCode::ShardingStateNotInitialized,
                "this shard has not been added to a cluster",
            )
        })
    }

    pub fn storage_arc(&self) -> &Arc<Storage> {
        &self.storage
    }
}

impl NodeState for ShardState {
    fn node(&self) -> &Node {
        &self.node
    }

    fn commands(&self) -> &CommandTable<Self> {
        &self.table
    }

    fn before_command<'a>(
        &'a self,
        request: &'a CommandRequest,
    ) -> BoxFuture<'a, Result<CommandGuard>> {
        Box::pin(async move {
            let admitted = self.admit(request).await?;
            self.check_versions(request).await?;
            // A DDL coordinator names a collection whose sharding it is about to check or
            // change: only the database version (that this shard is the primary) applies.
            if !is_coordinator(request) {
                self.check_shard_version(request).await?;
            }
            Ok(admitted)
        })
    }
}

impl DataNode for ShardState {
    fn storage(&self) -> &Storage {
        &self.storage
    }

    fn cursors(&self) -> &CursorRegistry {
        &self.cursors
    }

    fn shard_name(&self) -> String {
        self.identity().map(|i| i.shard_name).unwrap_or_default()
    }

    fn ownership(&self, request: &CommandRequest) -> Option<Arc<OwnershipFilter>> {
        self.request_ownership(request)
    }

    fn sharding(&self, ns: &str) -> Option<Arc<OwnershipFilter>> {
        self.known_sharding(ns)
    }

    fn is_sharded<'a>(&'a self, ns: &'a str) -> BoxFuture<'a, Result<bool>> {
        Box::pin(self.collection_is_sharded(ns))
    }

    fn routed_ddl_lock<'a>(
        &'a self,
        request: &'a CommandRequest,
        names: Vec<String>,
        reason: &'a str,
    ) -> BoxFuture<'a, Result<Option<ddl_lock::RemoteDdlLock>>> {
        Box::pin(async move {
            let routed = request.args().get("databaseVersion")?.is_some();
            if !routed || self.identity().is_none() {
                return Ok(None);
            }
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            Ok(Some(
                ShardState::routed_ddl_lock(self, request, &names, reason).await?,
            ))
        })
    }
}

/// The DDL commands a router sends to a database's primary shard, which coordinates them
/// under the cluster's DDL lock (`ddl_lock`) rather than inside the critical section: the
/// internal `_shardsvr...` ones and `create`. Waiting for a DDL lock while admitted would
/// deadlock with a coordinator that holds it and enters the critical section.
fn is_coordinator(request: &CommandRequest) -> bool {
    request.name().starts_with("_shardsvr") || request.name() == "create"
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
