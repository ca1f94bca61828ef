//! DDL locks this shard holds on the config server while it runs a DDL a router sent it as the
//! database's primary (`create`, `renameCollection`), so that it never interleaves with a
//! conflicting DDL anywhere in the cluster. (The steps a config server coordinator sends —
//! `_shardsvrCreateCollection`, `_shardsvrRefineCollectionShardKey`, `_shardsvrMovePrimary` —
//! run under the coordinator's lock and carry its term, [`coordinator_term`].) While held, a
//! task pings the config server at a third of the lease; a shard that dies stops pinging and
//! its lock is taken over once the lease lapses. The commit it sends carries the lock's term,
//! which the config server refuses once the lock was taken over (fencing).

use super::ShardState;
use crate::datanode::HeldDdlLock;
use crate::error::Result;
use crate::rpc::NodeClient;
use bson::doc;
use futures::future::BoxFuture;
use std::sync::OnceLock;
use std::time::Duration;

/// The fencing term of the config server coordinator that sent a DDL step
/// (`ddlLockTerm`): the step's commit carries it back.
pub(crate) fn coordinator_term(request: &crate::command::CommandRequest) -> Result<i64> {
    request
        .args()
        .i64("ddlLockTerm")?
        .ok_or_else(|| crate::command::missing(request.name(), "ddlLockTerm"))
}

pub struct RemoteDdlLock {
    config: NodeClient,
    term: i64,
    pinger: tokio::task::JoinHandle<()>,
    released: bool,
}

impl RemoteDdlLock {
    /// Gives the lock back before the DDL answers, so the client's next DDL finds it free.
    /// (Dropped unreleased, on an error path, it is given back in the background.)
    pub async fn release(mut self) {
        self.released = true;
        self.pinger.abort();
        release(&self.config, self.term).await;
    }
}

impl HeldDdlLock for RemoteDdlLock {
    fn release(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(RemoteDdlLock::release(*self))
    }
}

async fn release(config: &NodeClient, term: i64) {
    if let Err(e) = config
        .run_doc("admin", doc! {"_configsvrReleaseDdlLock": term})
        .await
    {
        // Unreleased, the lock lapses with the lease once pings stop.
        tracing::warn!(term, error = %e, "could not release a DDL lock");
    }
}

impl Drop for RemoteDdlLock {
    fn drop(&mut self) {
        self.pinger.abort();
        if self.released {
            return;
        }
        let config = self.config.clone();
        let term = self.term;
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { release(&config, term).await });
        }
    }
}

impl ShardState {
    /// This process as a lock holder: shard name, address, start time and a random part, as
    /// MongoDB names lock holders (a restarted shard is another holder).
    pub(crate) fn lock_process(&self, shard: &str) -> String {
        static RANDOM: OnceLock<u32> = OnceLock::new();
        let random = *RANDOM.get_or_init(|| uuid::Uuid::new_v4().as_fields().0);
        format!(
            "{shard}:{}:{}:{random}",
            self.node.host(),
            self.node.started_at.timestamp_millis()
        )
    }

    /// [`ddl_lock`](Self::ddl_lock) for a DDL a router sent with the database version: the
    /// version is checked again once the lock is held, because a DDL that held it meanwhile
    /// (movePrimary, dropDatabase) may have moved or dropped the database — the router then
    /// meets StaleDbVersion and goes to the current primary.
    pub(crate) async fn routed_ddl_lock(
        &self,
        request: &crate::command::CommandRequest,
        names: &[&str],
        reason: &str,
    ) -> Result<RemoteDdlLock> {
        let sharding = request.sharding()?;
        let lock = self.ddl_lock(names, reason).await?;
        if let Err(e) = self.check_versions(sharding).await {
            lock.release().await;
            return Err(e);
        }
        Ok(lock)
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
            released: false,
        })
    }
}
