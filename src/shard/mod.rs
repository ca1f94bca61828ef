//! The shard role: a data node (`datanode`: storage, query execution, the CRUD commands, shared
//! with the config server, which in MongoDB is a mongod too) that checks the versions routers
//! attach, filters documents by chunk ownership, holds critical sections and DDL locks, and runs
//! the shard-only sharding commands.

pub mod commands;
mod critical_section;
pub mod ddl_lock;
mod filtering;
mod identity;
mod migration;
mod persisted_routing;
mod shard_key_index;
mod single_flight;
pub mod txn_coordinator;
mod versioning;

pub use identity::ShardIdentity;

use crate::catalog::OwnershipFilter;
use crate::command::CommandRequest;
use crate::datanode::cursors::CursorRegistry;
use crate::datanode::storage::Storage;
use crate::datanode::transaction_table;
use crate::datanode::{DataNode, DdlGuard, spawn_cursor_reaper, ttl};
use crate::error::Result;
use crate::rpc::{Connector, NodeConnector};
use crate::server::sessions::LogicalSessionId;
use crate::server::{CommandGuard, CommandTable, Node, NodeState};
use bson::RawDocumentBuf;
use futures::future::BoxFuture;
use std::sync::Arc;

/// The state of one shard server.
pub struct ShardState {
    node: Node,
    storage: Arc<Storage>,
    cursors: CursorRegistry,
    transaction_table: Arc<transaction_table::TransactionTable>,
    connector: NodeConnector,
    identity: std::sync::RwLock<Option<ShardIdentity>>,
    versions: versioning::DatabaseVersionCache,
    filtering: filtering::FilteringMetadata,
    critical_sections: critical_section::CriticalSections,
    txn_coordinators: txn_coordinator::TxnCoordinators,
    /// Chunk migrations: the one running, and the range deleter.
    migrations: migration::Migrations,
    table: CommandTable<ShardState>,
    /// This state's own `Arc`, for tasks that outlive a request (a migration's recipient).
    me: std::sync::OnceLock<std::sync::Weak<ShardState>>,
}

impl ShardState {
    /// Opens the shard's data directory and starts its background jobs.
    pub async fn open(
        node: Node,
        data_dir: &std::path::Path,
        connector: Arc<Connector>,
    ) -> Result<Arc<ShardState>> {
        let connector = NodeConnector::new(connector, node.clock.clone());
        let storage = Storage::open_for(&node, data_dir).await?;
        let identity = identity::load(&storage).await?;
        let state = Arc::new(ShardState {
            node,
            storage,
            cursors: CursorRegistry::default(),
            transaction_table: Default::default(),
            connector,
            identity: std::sync::RwLock::new(identity),
            versions: Default::default(),
            filtering: Default::default(),
            critical_sections: Default::default(),
            txn_coordinators: Default::default(),
            migrations: Default::default(),
            table: commands::table(),
            me: Default::default(),
        });
        let _ = state.me.set(Arc::downgrade(&state));
        state.load_filtering_metadata().await?;
        state.critical_sections.load(&state.storage).await?;
        // Coordinations a restart interrupted go on from their documents.
        state.txn_coordinators.start(Arc::downgrade(&state)).await?;
        spawn_cursor_reaper(Arc::downgrade(&state));
        ttl::spawn_ttl_monitor(Arc::downgrade(&state));
        crate::server::cluster_keys::spawn(Arc::downgrade(&state));
        crate::server::auth::config_users::spawn_invalidator(Arc::downgrade(&state));
        migration::range_deleter::spawn_range_deleter(Arc::downgrade(&state));
        // Migrations a restart interrupted complete by their persisted decision.
        migration::coordinator::spawn_recovery(Arc::downgrade(&state));
        // Prepared transactions hold their documents again before any command runs.
        state
            .transaction_table
            .restore_prepared(&state.storage, &state.node.stats.txn)
            .await?;
        transaction_table::start_session_jobs(&state, &state.transaction_table, &state.storage);
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

    /// This state as an `Arc` (it is one from `open` on).
    fn arc(&self) -> Arc<ShardState> {
        self.me
            .get()
            .and_then(std::sync::Weak::upgrade)
            .expect("a shard state opened by ShardState::open")
    }
}

impl NodeState for ShardState {
    fn node(&self) -> &Node {
        &self.node
    }

    fn commands(&self) -> &CommandTable<Self> {
        &self.table
    }

    fn run_in_transaction<'a>(
        &'a self,
        transaction: crate::command::generic::TransactionArgs,
        request: CommandRequest,
        run: crate::server::TransactionStatement<'a>,
    ) -> BoxFuture<'a, Result<RawDocumentBuf>> {
        Box::pin(crate::datanode::transaction_table::run_in_transaction(
            self,
            transaction,
            request,
            run,
        ))
    }

    fn run_at_snapshot<'a>(
        &'a self,
        at: Option<bson::Timestamp>,
        request: CommandRequest,
        run: crate::server::TransactionStatement<'a>,
    ) -> BoxFuture<'a, Result<RawDocumentBuf>> {
        Box::pin(crate::datanode::snapshot_read::run_at_snapshot(
            self, at, request, run,
        ))
    }

    fn after_command<'a>(
        &'a self,
        op: &'a crate::server::operations::Operation,
        outcome: &'a Result<RawDocumentBuf>,
    ) -> Option<BoxFuture<'a, ()>> {
        crate::datanode::profiler::record(self, op, outcome)
    }

    fn before_command<'a>(
        &'a self,
        request: &'a CommandRequest,
    ) -> BoxFuture<'a, Result<CommandGuard>> {
        Box::pin(async move {
            // Parsed here, once; the handler reads the same value (`CommandRequest::sharding`).
            let sharding = request.sharding()?;
            if !sharding.is_versioned() {
                return Ok(None);
            }
            let coordinator = is_coordinator(request);
            let admitted = if coordinator {
                None
            } else {
                Some(self.admit(sharding, reads_only(request.name())).await)
            };
            self.check_versions(sharding).await?;
            // A DDL coordinator names a collection whose sharding it is about to check or
            // change: only the database version (that this shard is the primary) applies.
            if !coordinator {
                self.check_shard_versions(sharding).await?;
            }
            Ok(admitted.map(|guard| Box::new(guard) as _))
        })
    }

    fn on_config_server(
        &self,
        db: &'static str,
        command: bson::Document,
    ) -> BoxFuture<'_, Result<bson::Document>> {
        Box::pin(async move {
            let identity = self.require_identity()?;
            let config = self.connector.client(&identity.config_host);
            config.run_doc(db, command).await
        })
    }

    /// Users are the cluster's, on the config server, as routers read them; a shard no cluster
    /// has added yet has none.
    fn load_user<'a>(
        &'a self,
        name: &'a crate::server::auth::UserName,
    ) -> BoxFuture<'a, Result<Option<bson::Document>>> {
        Box::pin(async move {
            if self.identity().is_none() {
                return Ok(None);
            }
            crate::server::auth::config_users::user(self, name).await
        })
    }

    fn has_users(&self) -> BoxFuture<'_, Result<bool>> {
        Box::pin(async move {
            if self.identity().is_none() {
                return Ok(false);
            }
            crate::server::auth::config_users::any_user(self).await
        })
    }

    fn cursor_sessions(&self) -> Vec<LogicalSessionId> {
        self.cursors.sessions()
    }

    fn kill_session_cursors<'a>(
        &'a self,
        matches: &'a (dyn Fn(&LogicalSessionId) -> bool + Sync),
    ) -> BoxFuture<'a, usize> {
        Box::pin(async move {
            let aborted = self
                .transaction_table
                .abort_sessions(&self.node.stats.txn, matches)
                .await;
            self.cursors.kill_sessions(matches) + aborted
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

    fn transaction_table(&self) -> &transaction_table::TransactionTable {
        &self.transaction_table
    }

    fn shard_name(&self) -> String {
        self.identity().map(|i| i.shard_name).unwrap_or_default()
    }

    fn ownership(&self, request: &CommandRequest) -> Option<Arc<OwnershipFilter>> {
        self.request_ownership(request)
    }

    fn orphan_count<'a>(&'a self, ns: &'a str) -> BoxFuture<'a, Result<i64>> {
        Box::pin(self.count_orphans(ns))
    }

    fn background_operations(&self) -> Vec<bson::Document> {
        self.migrations.operations(&self.shard_name())
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
    ) -> BoxFuture<'a, Result<Option<DdlGuard>>> {
        Box::pin(async move {
            // Routed: sent by a router to the database's primary, with the database version.
            let routed = request.sharding()?.database_version().is_some();
            if !routed || self.identity().is_none() {
                return Ok(None);
            }
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            Ok(Some(DdlGuard::new(
                ShardState::routed_ddl_lock(self, request, &names, reason).await?,
            )))
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

/// Whether a versioned command only reads the collections it names: a migration's donor lets
/// those through while its critical section blocks writes (until its commit blocks reads too).
fn reads_only(command: &str) -> bool {
    matches!(
        command,
        "find" | "aggregate" | "count" | "distinct" | "explain" | "listIndexes" | "collStats"
    )
}
