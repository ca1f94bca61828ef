//! What every process role shares: its role, start time, counters, parameters, startup options
//! and recent log lines.

use super::clock::LogicalClock;
use super::failpoint::FailPoints;
use super::logbuf::LogBuffer;
use super::operations::Operations;
use super::params::Parameters;
use super::session_catalog::SessionCatalog;
use super::sessions::SessionCache;
use super::stats::Stats;
use bson::Document;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

/// The three kinds of process in a cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Router,
    ConfigServer,
    Shard,
}

impl Role {
    /// The `process` name `serverStatus` reports.
    pub fn process_name(self) -> &'static str {
        match self {
            Role::Router => "mongos",
            Role::ConfigServer | Role::Shard => "mongod",
        }
    }
}

/// The command line a process was started with, for `getCmdLineOpts`.
#[derive(Clone, Debug, Default)]
pub struct CmdLine {
    pub argv: Vec<String>,
    pub parsed: Document,
}

/// Per-role state common to all roles.
#[derive(Debug)]
pub struct Node {
    pub role: Role,
    pub started: Instant,
    pub started_at: bson::DateTime,
    pub stats: Stats,
    pub params: Parameters,
    pub cmdline: CmdLine,
    pub log: Arc<LogBuffer>,
    pub fail_points: FailPoints,
    /// The commands running now (`$currentOp`, `killOp`).
    pub operations: Operations,
    /// The logical sessions used lately (`$listLocalSessions`).
    pub sessions: SessionCache,
    /// The runtime state of sessions with retryable writes or transactions (checkout).
    pub session_catalog: SessionCatalog,
    /// The cluster time this node has given or heard (`$clusterTime`).
    pub clock: Arc<LogicalClock>,
    /// Whether clients must authenticate and hold the privileges of what they run (`--auth`).
    pub authorization: bool,
    /// Whether this node signs the `$clusterTime` it gossips (`server::cluster_keys`): with
    /// `--auth` or a key file.
    pub signs_cluster_time: bool,
    /// The stored users this node has looked up (`server::auth`).
    pub users: super::auth::UserCache,
    /// The profiler's settings (`profile`).
    pub profiling: super::profiling::Profiling,
    /// The cluster's key (`--keyFile`): members authenticate as `__system` with it, when the
    /// cluster authentication mode accepts the key file.
    pub cluster_key: Option<Arc<super::auth::ClusterKey>>,
    /// How members prove membership (`--clusterAuthMode`); `None`: they do not.
    pub cluster_auth_mode: super::auth::cluster_auth_mode::ClusterAuthModeCell,
    /// The process's TLS: members call each other with it under `preferTLS`/`requireTLS`.
    pub tls: Option<Arc<super::tls::Tls>>,
    host: RwLock<String>,
}

static NEXT_CONNECTION_ID: AtomicI64 = AtomicI64::new(1);

impl Node {
    pub fn new(role: Role, cmdline: CmdLine, params: Parameters, log: Arc<LogBuffer>) -> Self {
        Node {
            role,
            started: Instant::now(),
            started_at: bson::DateTime::now(),
            stats: Stats::default(),
            params,
            cmdline,
            log,
            fail_points: FailPoints::default(),
            operations: Operations::default(),
            sessions: SessionCache::default(),
            session_catalog: SessionCatalog::default(),
            clock: Arc::default(),
            authorization: false,
            signs_cluster_time: false,
            users: Default::default(),
            profiling: Default::default(),
            cluster_key: None,
            cluster_auth_mode: Default::default(),
            tls: None,
            host: RwLock::new(String::new()),
        }
    }

    /// The `host:port` this node is reachable at (empty when it only serves in-process calls).
    pub fn host(&self) -> String {
        self.host.read().expect("poisoned").clone()
    }

    pub fn set_host(&self, host: impl Into<String>) {
        *self.host.write().expect("poisoned") = host.into();
    }

    /// `serverInfo` as `explain` replies carry it.
    pub fn server_info(&self) -> bson::Document {
        let host = self.host();
        let (name, port) = host.rsplit_once(':').unwrap_or((host.as_str(), "0"));
        bson::doc! {
            "host": name,
            "port": port.parse::<i32>().unwrap_or(0),
            "version": crate::server::commands::MONGODB_VERSION,
            "gitVersion": env!("CARGO_PKG_VERSION"),
        }
    }

    /// How long an idle cursor lives (`cursorTimeoutMillis`).
    pub fn cursor_timeout(&self) -> std::time::Duration {
        let millis = self
            .params
            .get_i64("cursorTimeoutMillis")
            .unwrap_or(super::params::DEFAULT_CURSOR_TIMEOUT_MS);
        std::time::Duration::from_millis(millis.max(0) as u64)
    }

    /// How often the logical session cache refreshes and reaps (`logicalSessionRefreshMillis`).
    pub fn session_refresh_period(&self) -> std::time::Duration {
        let millis = self
            .params
            .get_i64("logicalSessionRefreshMillis")
            .unwrap_or(300_000);
        std::time::Duration::from_millis(millis.max(0) as u64)
    }

    /// How long an unused session lives (`localLogicalSessionTimeoutMinutes`).
    pub fn session_timeout_minutes(&self) -> i64 {
        self.params
            .get_i64("localLogicalSessionTimeoutMinutes")
            .unwrap_or(30)
    }

    /// Records a use of `session` in the logical session cache (at most `maxSessions`).
    pub fn touch_session(
        &self,
        session: super::sessions::LogicalSessionId,
    ) -> crate::error::Result<()> {
        let max = self
            .params
            .get_i64("maxSessions")
            .unwrap_or(super::sessions::DEFAULT_MAX_SESSIONS);
        self.sessions.vivify(session, max)
    }

    /// A process-wide connection id, as `hello.connectionId` reports.
    pub fn next_connection_id() -> i64 {
        NEXT_CONNECTION_ID.fetch_add(1, Ordering::Relaxed)
    }
}
