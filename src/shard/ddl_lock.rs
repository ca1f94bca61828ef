//! DDL locks this shard holds on the config server while it coordinates a DDL itself (as the
//! database's primary: create, rename, shardCollection, refineCollectionShardKey, movePrimary),
//! so that it never interleaves with a conflicting DDL anywhere in the cluster. While held, a
//! task pings the config server at a third of the lease; a shard that dies stops pinging and
//! its lock is taken over once the lease lapses. The commit it sends carries the lock's term,
//! which the config server refuses once the lock was taken over (fencing).

use super::ShardState;
use crate::error::Result;
use crate::rpc::NodeClient;
use bson::doc;
use std::sync::OnceLock;
use std::time::Duration;

pub(crate) struct RemoteDdlLock {
    config: NodeClient,
    term: i64,
    pinger: tokio::task::JoinHandle<()>,
}

impl RemoteDdlLock {
    /// The fencing term, sent with the commit as `ddlLockTerm`.
    pub fn term(&self) -> i64 {
        self.term
    }
}

impl Drop for RemoteDdlLock {
    fn drop(&mut self) {
        self.pinger.abort();
        let config = self.config.clone();
        let term = self.term;
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = config
                    .run_doc("admin", doc! {"_configsvrReleaseDdlLock": term})
                    .await
                {
                    // Unreleased, the lock lapses with the lease once pings stop.
                    tracing::warn!(term, error = %e, "could not release a DDL lock");
                }
            });
        }
    }
}

impl ShardState {
    /// This process as a lock holder: shard name, address, start time and a random part, as
    /// MongoDB names lock holders (a restarted shard is another holder).
    fn lock_process(&self, shard: &str) -> String {
        static RANDOM: OnceLock<u32> = OnceLock::new();
        let random = *RANDOM.get_or_init(|| uuid::Uuid::new_v4().as_fields().0);
        format!(
            "{shard}:{}:{}:{random}",
            self.node.host(),
            self.node.started_at.timestamp_millis()
        )
    }

    /// Takes the DDL lock of a database (`["db"]`) or of collections (`["db.a", ...]`) on the
    /// config server, waiting as long as the config server lets DDL wait (then LockBusy).
    pub(crate) async fn ddl_lock(&self, names: &[&str], reason: &str) -> Result<RemoteDdlLock> {
        let identity = self.require_identity()?;
        let config = self.connector.client(&identity.config_host);
        let process = self.lock_process(&identity.shard_name);
        let target = match names {
            [single] => bson::Bson::String(single.to_string()),
            _ => bson::Bson::Array(
                names
                    .iter()
                    .map(|n| bson::Bson::String(n.to_string()))
                    .collect(),
            ),
        };
        let granted = config
            .run_doc(
                "admin",
                doc! {"_configsvrAcquireDdlLock": target, "process": &process, "reason": reason},
            )
            .await?;
        let term = granted.get_i64("term").unwrap_or_default();
        let lease = granted.get_i64("leaseMillis").unwrap_or(900_000).max(3);
        let every = Duration::from_millis(lease as u64 / 3);
        let pinger = {
            let config = config.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    if let Err(e) = config
                        .run_doc("admin", doc! {"_configsvrDdlLockPing": &process})
                        .await
                    {
                        tracing::warn!(process = %process, error = %e, "could not ping the DDL lock");
                    }
                }
            })
        };
        Ok(RemoteDdlLock {
            config,
            term,
            pinger,
        })
    }
}
