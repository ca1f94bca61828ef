//! The config server: the authoritative routing table (`config.shards`, `config.databases`,
//! ...) stored with the shard storage engine (a config server is a mongod holding the config
//! database), plus the `_configsvr*` commands that change it. It is the only writer of
//! routing metadata.

mod clock;
mod commands;
mod namespace_locks;
pub mod store;

pub use clock::LogicalClock;

use crate::error::Result;
use crate::rpc::Connector;
use crate::server::{CommandTable, Node, NodeState};
use crate::shard::cursors::CursorRegistry;
use crate::shard::storage::Storage;
use crate::shard::{DataNode, spawn_cursor_reaper};
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
    connector: Arc<Connector>,
    cluster_id: ObjectId,
    clock: LogicalClock,
    /// Serializes metadata changes (database creation and drop, shard registration).
    ddl_lock: tokio::sync::Mutex<()>,
    /// Serializes metadata changes per collection namespace.
    namespace_locks: namespace_locks::NamespaceLocks,
    table: CommandTable<ConfigState>,
}

impl ConfigState {
    pub async fn open(
        node: Node,
        data_dir: &std::path::Path,
        connector: Arc<Connector>,
    ) -> Result<Arc<ConfigState>> {
        let storage = Storage::open(data_dir).await?;
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
        let state = Arc::new(ConfigState {
            node,
            storage,
            cursors: CursorRegistry::default(),
            connector,
            cluster_id,
            clock: LogicalClock::default(),
            ddl_lock: tokio::sync::Mutex::new(()),
            namespace_locks: namespace_locks::NamespaceLocks::default(),
            table: commands::table(),
        });
        spawn_cursor_reaper(Arc::downgrade(&state));
        crate::shard::ttl::spawn_ttl_monitor(Arc::downgrade(&state));
        Ok(state)
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

impl NodeState for ConfigState {
    fn node(&self) -> &Node {
        &self.node
    }

    fn commands(&self) -> &CommandTable<Self> {
        &self.table
    }
}

impl DataNode for ConfigState {
    fn storage(&self) -> &Storage {
        &self.storage
    }

    fn cursors(&self) -> &CursorRegistry {
        &self.cursors
    }

    fn shard_name(&self) -> String {
        "config".to_string()
    }
}
