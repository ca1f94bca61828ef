//! The router's view of `config.shards`: shard name → client, reloaded every 30 s and when a
//! name is unknown.

use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::{NodeClient, NodeConnector};
use bson::{Bson, doc};
use std::collections::BTreeMap;
use std::sync::RwLock;

pub struct ShardRegistry {
    connector: NodeConnector,
    shards: RwLock<BTreeMap<String, String>>,
}

impl ShardRegistry {
    pub fn new(connector: NodeConnector) -> Self {
        ShardRegistry {
            connector,
            shards: RwLock::new(BTreeMap::new()),
        }
    }

    /// Reloads the shard list from the config server.
    pub async fn reload(&self, config: &NodeClient) -> Result<()> {
        let reply = config
            .run_doc("config", doc! {"find": "shards", "filter": {}})
            .await?;
        let batch = reply
            .get_document("cursor")
            .ok()
            .and_then(|c| c.get_array("firstBatch").ok())
            .cloned()
            .unwrap_or_default();
        let mut shards = BTreeMap::new();
        for entry in batch.iter().filter_map(Bson::as_document) {
            if let (Ok(name), Ok(host)) = (entry.get_str("_id"), entry.get_str("host")) {
                shards.insert(name.to_string(), host.to_string());
            }
        }
        *self.shards.write().expect("poisoned") = shards;
        Ok(())
    }

    /// The client for a shard, reloading the list once if the name is unknown.
    pub async fn client(&self, config: &NodeClient, shard: &str) -> Result<NodeClient> {
        if let Some(host) = self.shards.read().expect("poisoned").get(shard) {
            return Ok(self.connector.client(host));
        }
        self.reload(config).await?;
        let host = self.shards.read().expect("poisoned").get(shard).cloned();
        host.map(|h| self.connector.client(&h)).ok_or_else(|| {
            MongoError::new(ErrorCode::ShardNotFound, format!("Shard {shard} not found"))
        })
    }

    /// Every shard's name and host (after a reload).
    pub async fn hosts(&self, config: &NodeClient) -> Result<Vec<(String, String)>> {
        self.reload(config).await?;
        let shards = self.shards.read().expect("poisoned").clone();
        Ok(shards.into_iter().collect())
    }

    /// Clients of every shard (after a reload).
    pub async fn all(&self, config: &NodeClient) -> Result<Vec<(String, NodeClient)>> {
        Ok(self
            .hosts(config)
            .await?
            .into_iter()
            .map(|(name, host)| (name, self.connector.client(&host)))
            .collect())
    }
}
