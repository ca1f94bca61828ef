//! The config server: the authoritative routing table (`config.shards`, `config.databases`,
//! ...) stored with the data-node storage engine (a config server is a mongod holding the config
//! database), plus the `_configsvr*` commands that change it. It is the only writer of
//! routing metadata.

mod commands;
mod consistency;
mod coordinators;
pub mod ddl_locks;
pub mod store;

use crate::datanode::cursors::CursorRegistry;
use crate::datanode::storage::Storage;
use crate::datanode::transaction_table;
use crate::datanode::{DataNode, spawn_cursor_reaper};
use crate::error::Result;
use crate::rpc::{Connector, NodeConnector};
use crate::server::sessions::LogicalSessionId;
use crate::server::{CommandTable, Node, NodeState, session_jobs};
use bson::{Bson, doc, oid::ObjectId};
use std::sync::Arc;
use store::ConfigStore;

/// Config collections that exist from the first start, so that tools reading them (mongosh's
/// `sh.status()`) find them.
const CONFIG_COLLECTIONS: [&str; 11] = [
    "version",
    "shards",
    "databases",
    "collections",
    "chunks",
    "settings",
    "mongos",
    "changelog",
    "tags",
    "locks",
    "actionlog",
];

/// The state of the config server.
pub struct ConfigState {
    node: Node,
    storage: Arc<Storage>,
    cursors: CursorRegistry,
    transaction_table: Arc<transaction_table::TransactionTable>,
    connector: NodeConnector,
    cluster_id: ObjectId,
    /// Serializes conflicting DDL across the cluster (see `ddl_locks`).
    ddl_locks: Arc<ddl_locks::DdlLocks>,
    coordinators: coordinators::Coordinators,
    /// MongoDB's chunk ResourceMutex: every change of `config.chunks` (splits, merges, DDL
    /// commits) takes it, so they never interleave.
    chunk_op_lock: tokio::sync::Mutex<()>,
    /// MongoDB's database ResourceMutex: changes of `config.databases` entries.
    database_op_lock: tokio::sync::Mutex<()>,
    /// Serializes changes of `config.shards`.
    shard_membership_lock: tokio::sync::Mutex<()>,
    /// Serializes changes of `admin.system.users`.
    user_write_lock: tokio::sync::Mutex<()>,
    /// Changes with every change of users; routers poll it (`_getUserCacheGeneration`).
    user_cache_generation: std::sync::Mutex<ObjectId>,
    me: std::sync::Weak<ConfigState>,
    table: CommandTable<ConfigState>,
}

impl ConfigState {
    pub async fn open(
        node: Node,
        data_dir: &std::path::Path,
        connector: Arc<Connector>,
    ) -> Result<Arc<ConfigState>> {
        let connector = NodeConnector::new(connector, node.clock.clone());
        let storage = Storage::open_for(&node, data_dir).await?;
        let store = ConfigStore::new(&storage);
        for coll in CONFIG_COLLECTIONS {
            store.ensure_collection(coll).await?;
        }
        let cluster_id = match store.find_one("version", &doc! {"_id": 1}).await? {
            Some(version) => version
                .get_object_id("clusterId")
                .unwrap_or_else(|_| ObjectId::new()),
            None => {
                let id = ObjectId::new();
                store
                    .upsert("version", &doc! {"_id": 1, "clusterId": id})
                    .await?;
                id
            }
        };
        // As on MongoDB's config servers, admin.system.version records the feature compatibility
        // version (and makes the admin database visible to listDatabases).
        let admin = storage.database_or_create("admin").await?;
        admin.ensure_collection("system.version").await?;
        let lease = node.params.get_i64("ddlLockLeaseMillis").unwrap_or(900_000);
        let ddl_locks = ddl_locks::DdlLocks::open(
            Arc::clone(&storage),
            std::time::Duration::from_millis(lease.max(1) as u64),
        )
        .await?;
        let state = Arc::new_cyclic(|me| ConfigState {
            node,
            storage,
            cursors: CursorRegistry::default(),
            transaction_table: Default::default(),
            connector,
            cluster_id,
            ddl_locks,
            coordinators: coordinators::Coordinators::default(),
            chunk_op_lock: tokio::sync::Mutex::new(()),
            database_op_lock: tokio::sync::Mutex::new(()),
            shard_membership_lock: tokio::sync::Mutex::new(()),
            user_write_lock: tokio::sync::Mutex::new(()),
            user_cache_generation: std::sync::Mutex::new(ObjectId::new()),
            me: me.clone(),
            table: commands::table(),
        });
        coordinators::Coordinators::recover(&state).await?;
        // The sessions collection exists from the start, so other nodes' refreshes find it.
        if let Err(e) = session_jobs::setup_sessions_collection(&*state).await {
            tracing::warn!(error = %e, "could not set up config.system.sessions");
        }
        transaction_table::start_session_jobs(&state, &state.transaction_table, &state.storage);
        spawn_cursor_reaper(Arc::downgrade(&state));
        crate::datanode::ttl::spawn_ttl_monitor(Arc::downgrade(&state));
        crate::server::cluster_keys::spawn(Arc::downgrade(&state));
        Ok(state)
    }

    /// This state as an `Arc`, for tasks that outlive the request (coordinators).
    fn arc(&self) -> Arc<ConfigState> {
        self.me.upgrade().expect("a running config server")
    }

    /// The fence of a commit sent by a shard coordinating a DDL under the lock on `resource`:
    /// the commit names the lock's term (`ddlLockTerm`), and is refused once another holder
    /// took the lock over. Held while the commit writes.
    async fn fence_commit(
        &self,
        req: &crate::command::CommandRequest,
        resource: &str,
    ) -> Result<tokio::sync::MutexGuard<'_, ()>> {
        let term = req
            .args()
            .i64("ddlLockTerm")?
            .ok_or_else(|| crate::command::missing(req.name(), "ddlLockTerm"))?;
        self.ddl_locks.fence(resource, term).await
    }

    /// How long a DDL waits for a conflicting one (`ddlLockTimeoutMillis`).
    fn lock_timeout(&self) -> std::time::Duration {
        let ms = self
            .node
            .params
            .get_i64("ddlLockTimeoutMillis")
            .unwrap_or(300_000);
        std::time::Duration::from_millis(ms.max(0) as u64)
    }

    pub fn cluster_id(&self) -> ObjectId {
        self.cluster_id
    }

    fn store(&self) -> ConfigStore<'_> {
        ConfigStore::new(&self.storage)
    }

    /// `(name, host)` of every shard.
    pub async fn shards(&self) -> Result<Vec<(String, String)>> {
        let shards = self.store().find("shards", &doc! {}).await?;
        Ok(shards
            .into_iter()
            .filter_map(|s| match (s.get("_id"), s.get("host")) {
                (Some(Bson::String(id)), Some(Bson::String(host))) => {
                    Some((id.clone(), host.clone()))
                }
                _ => None,
            })
            .collect())
    }
}

impl ConfigState {
    /// Every shard's name, the database's primary first (where its unsharded collections and
    /// views live).
    async fn shards_primary_first(&self, db: &str) -> Result<Vec<String>> {
        let primary = self
            .store()
            .find_one("databases", &doc! {"_id": db})
            .await?
            .and_then(|d| d.get_str("primary").ok().map(str::to_string));
        let mut shards: Vec<String> = self.shards().await?.into_iter().map(|(n, _)| n).collect();
        shards.sort_by_key(|name| Some(name) != primary.as_ref());
        Ok(shards)
    }
}

impl NodeState for ConfigState {
    fn node(&self) -> &Node {
        &self.node
    }

    fn commands(&self) -> &CommandTable<Self> {
        &self.table
    }

    fn cursor_sessions(&self) -> Vec<LogicalSessionId> {
        self.cursors.sessions()
    }

    fn after_command<'a>(
        &'a self,
        op: &'a crate::server::operations::Operation,
        outcome: &'a Result<bson::RawDocumentBuf>,
    ) -> Option<futures::future::BoxFuture<'a, ()>> {
        crate::datanode::profiler::record(self, op, outcome)
    }

    fn load_user<'a>(
        &'a self,
        name: &'a crate::server::auth::UserName,
    ) -> futures::future::BoxFuture<'a, Result<Option<bson::Document>>> {
        Box::pin(self.resolved_user(name))
    }

    fn has_users(&self) -> futures::future::BoxFuture<'_, Result<bool>> {
        Box::pin(self.any_user())
    }

    fn kill_session_cursors<'a>(
        &'a self,
        matches: &'a (dyn Fn(&LogicalSessionId) -> bool + Sync),
    ) -> futures::future::BoxFuture<'a, usize> {
        Box::pin(async move { self.cursors.kill_sessions(matches) })
    }
}

impl DataNode for ConfigState {
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
        "config".to_string()
    }
}
