//! The router (mongos role): routes each command to the shard that owns the data using a cached,
//! versioned routing table; it stores no documents.

mod catalog_cache;
mod cluster_cursor;
mod commands;
mod cursors;
mod forward;
pub mod pipeline_split;
mod sessions;
mod shard_key_move;
mod shard_registry;
mod snapshot_reads;
mod targeting;
mod transactions;
mod write_batch;

use crate::rpc::{Connector, NodeClient, NodeConnector};
use crate::server::asserts::contained;
use crate::server::{CURSOR_MONITOR_PERIOD, CommandTable, Node, NodeState};
use bson::doc;
use catalog_cache::{CollectionCache, DatabaseCache};
use cursors::{CursorSource, RouterCursors};
use shard_registry::ShardRegistry;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How often the router records itself in `config.mongos`.
const PING_INTERVAL: Duration = Duration::from_secs(30);

pub struct RouterState {
    node: Node,
    config: NodeClient,
    databases: DatabaseCache,
    collections: CollectionCache,
    shards: ShardRegistry,
    cursors: RouterCursors,
    transactions: transactions::Transactions,
    table: CommandTable<RouterState>,
}

impl RouterState {
    /// A router that reads the routing table from the config server at `config_host`.
    pub fn new(node: Node, connector: Arc<Connector>, config_host: &str) -> Arc<RouterState> {
        let state = Arc::new(RouterState {
            config: NodeConnector::new(connector.clone(), node.clock.clone()).client(config_host),
            shards: ShardRegistry::new(NodeConnector::new(connector, node.clock.clone())),
            node,
            databases: DatabaseCache::default(),
            collections: CollectionCache::default(),
            cursors: RouterCursors::default(),
            transactions: transactions::Transactions::default(),
            table: commands::table(),
        });
        spawn_background(Arc::downgrade(&state));
        crate::server::auth::config_users::spawn_invalidator(Arc::downgrade(&state));
        crate::server::session_jobs::spawn(Arc::downgrade(&state));
        crate::server::cluster_keys::spawn(Arc::downgrade(&state));
        state
    }

    /// Records this router in `config.mongos`, as mongos does, so `sh.status()` lists it.
    async fn ping(&self) -> crate::error::Result<()> {
        let host = match self.node.host() {
            h if h.is_empty() => "in-process router".to_string(),
            h => h,
        };
        let entry = doc! {
            "_id": &host,
            "ping": bson::DateTime::now(),
            "up": self.node.started.elapsed().as_secs() as i64,
            "waiting": true,
            "mongoVersion": crate::server::commands::MONGODB_VERSION,
            "advisoryHostFQDNs": [],
        };
        self.config
            .run_doc("config", doc! {"update": "mongos", "updates": [{"q": {"_id": &host}, "u": entry, "upsert": true}]})
            .await?;
        Ok(())
    }
}

fn spawn_background(state: Weak<RouterState>) {
    let pinger = state.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(PING_INTERVAL);
        loop {
            tick.tick().await;
            let Some(state) = pinger.upgrade() else { break };
            contained("router ping", async {
                if let Err(e) = state.ping().await {
                    tracing::debug!(error = %e, "could not record the router in config.mongos");
                }
                // The shard registry mirrors config.shards: reloaded on this period as well as
                // on a miss, so hosts that changed are picked up without a failed request.
                if let Err(e) = state.shards.reload(&state.config).await {
                    tracing::debug!(error = %e, "could not reload the shard registry");
                }
            })
            .await;
        }
    });
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(CURSOR_MONITOR_PERIOD);
        loop {
            tick.tick().await;
            let Some(state) = state.upgrade() else { break };
            contained("cursor reaper", async {
                for source in state.cursors.reap(state.node.cursor_timeout()) {
                    match source {
                        CursorSource::Cluster(cluster) => cluster.lock().await.kill().await,
                        // A pipeline reading this router's own cursor leaves it to time out.
                        CursorSource::Pipeline(run) => run.lock().await.close(None).await,
                        CursorSource::Shard { .. } => {}
                    }
                }
            })
            .await;
        }
    });
}

impl NodeState for RouterState {
    fn node(&self) -> &Node {
        &self.node
    }

    fn commands(&self) -> &CommandTable<Self> {
        &self.table
    }

    fn on_config_server(
        &self,
        db: &'static str,
        command: bson::Document,
    ) -> futures::future::BoxFuture<'_, crate::error::Result<bson::Document>> {
        Box::pin(self.config.run_doc(db, command))
    }

    fn load_user<'a>(
        &'a self,
        name: &'a crate::server::auth::UserName,
    ) -> futures::future::BoxFuture<'a, crate::error::Result<Option<bson::Document>>> {
        Box::pin(crate::server::auth::config_users::user(self, name))
    }

    fn has_users(&self) -> futures::future::BoxFuture<'_, crate::error::Result<bool>> {
        Box::pin(crate::server::auth::config_users::any_user(self))
    }

    fn transactions_status(&self) -> Option<bson::Document> {
        Some(self.transactions.server_status())
    }

    fn cursor_sessions(&self) -> Vec<crate::server::sessions::LogicalSessionId> {
        self.cursor_sessions_of_router()
    }

    fn kill_session_cursors<'a>(
        &'a self,
        matches: &'a (dyn Fn(&crate::server::sessions::LogicalSessionId) -> bool + Sync),
    ) -> futures::future::BoxFuture<'a, usize> {
        Box::pin(self.kill_cursors_of_sessions(matches))
    }

    fn kill_sessions_remote<'a>(
        &'a self,
        patterns: &'a [bson::Document],
    ) -> futures::future::BoxFuture<'a, crate::error::Result<()>> {
        Box::pin(self.kill_sessions_on_nodes(patterns))
    }
}
