//! How roles call each other: a [`NodeClient`] sends a [`CommandRequest`] to another node,
//! either in-process (same process, `dev` mode) or over TCP with OP_MSG. Both carry the same
//! command documents and give the same replies.

pub mod config;
mod tcp;

pub use tcp::PoolLimits;

use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::auth::ClusterKey;
use crate::server::auth::cluster_auth_mode::ClusterAuthModeCell;
use crate::server::clock::{self, LogicalClock};
use crate::server::tls::Tls;
use crate::server::{RequestContext, Service};
use bson::{Document, RawDocumentBuf};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// A handle to another node.
#[derive(Clone)]
pub struct NodeClient {
    host: Arc<str>,
    target: Target,
    /// The calling node's clock: requests carry its `$clusterTime`, replies advance it.
    clock: Option<Arc<LogicalClock>>,
}

#[derive(Clone)]
enum Target {
    Local(Arc<dyn Service>, Arc<RequestContext>),
    Tcp(Arc<tcp::Pool>),
}

impl NodeClient {
    /// A client that calls `service` directly.
    pub fn local(host: &str, service: Arc<dyn Service>) -> Self {
        NodeClient {
            host: host.into(),
            target: Target::Local(service, Arc::new(RequestContext::internal())),
            clock: None,
        }
    }

    /// A client that connects to `host` (`address:port`) over TCP, through a pool bounded
    /// by `limits`, each connection proving `membership`.
    pub fn tcp(host: &str, limits: PoolLimits, membership: Membership) -> Self {
        NodeClient {
            host: host.into(),
            target: Target::Tcp(Arc::new(tcp::Pool::new(host, limits, membership))),
            clock: None,
        }
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    /// Runs a command and returns its reply, `ok: 0` replies included. Fails only when the
    /// node cannot be reached.
    pub async fn call(&self, mut request: CommandRequest) -> Result<RawDocumentBuf> {
        let runs_as = crate::server::operations::current_runs_as();
        crate::server::impersonation::attach(&mut request, runs_as.as_deref())?;
        if let Some(clock) = &self.clock {
            clock::with_gossip(&mut request, clock);
        }
        let mut reply = match &self.target {
            Target::Local(service, ctx) => service.execute(ctx, request).await,
            Target::Tcp(pool) => pool.call(request).await?,
        };
        // The other node's times are taken off: this node answers with its own, and a reply
        // passed through to a client must not carry two.
        if let Some(time) = clock::take_gossip(&mut reply) {
            if let Some(clock) = &self.clock {
                clock.advance(time);
            }
        }
        Ok(reply)
    }

    /// Runs a command; an `ok: 0` reply becomes the error it carries.
    pub async fn run(&self, request: CommandRequest) -> Result<RawDocumentBuf> {
        let reply = self.call(request).await?;
        if crate::error::raw_reply_ok(&reply) {
            return Ok(reply);
        }
        let doc = reply.to_document()?;
        Err(MongoError::from_reply(&doc)
            .unwrap_or_else(|| MongoError::internal("a failed reply without its error")))
    }

    /// [`run`](Self::run) for a command built as a `Document`, with the reply as a `Document`.
    pub async fn run_doc(&self, db: &str, command: Document) -> Result<Document> {
        let reply = self
            .run(CommandRequest::from_document(db, &command)?)
            .await?;
        Ok(reply.to_document()?)
    }
}

/// Resolves host strings to clients, preferring services registered in this process, and keeps
/// one client (one connection pool) per host.
#[derive(Default)]
pub struct Connector {
    local: RwLock<HashMap<String, Arc<dyn Service>>>,
    clients: RwLock<HashMap<String, NodeClient>>,
    limits: PoolLimits,
    membership: Membership,
}

/// How a node's connections to other members prove it one of them: TLS when its mode says
/// members use it (`preferTLS`, `requireTLS`), then the cluster's key (`__system`) or, with
/// a mode sending certificates, MONGODB-X509 with the cluster certificate the TLS handshake
/// presented; the mode as it is when a connection opens (`setParameter` may move it).
#[derive(Clone, Default)]
pub struct Membership {
    pub key: Option<Arc<ClusterKey>>,
    pub tls: Option<Arc<Tls>>,
    pub mode: ClusterAuthModeCell,
}

/// A node's view of a [`Connector`]: its clients gossip the node's cluster time.
#[derive(Clone)]
pub struct NodeConnector {
    connector: Arc<Connector>,
    clock: Arc<LogicalClock>,
}

impl NodeConnector {
    pub fn new(connector: Arc<Connector>, clock: Arc<LogicalClock>) -> Self {
        NodeConnector { connector, clock }
    }

    pub fn client(&self, host: &str) -> NodeClient {
        let mut client = self.connector.client(host);
        client.clock = Some(self.clock.clone());
        client
    }

    pub fn register_local(&self, host: &str, service: Arc<dyn Service>) {
        self.connector.register_local(host, service);
    }
}

impl Connector {
    pub fn new() -> Arc<Self> {
        Arc::new(Connector::default())
    }

    /// A connector whose TCP pools follow `limits` and prove `membership`.
    pub fn with_limits(limits: PoolLimits, membership: Membership) -> Arc<Self> {
        Arc::new(Connector {
            limits,
            membership,
            ..Connector::default()
        })
    }

    /// Makes `host` resolve to a service in this process.
    pub fn register_local(&self, host: &str, service: Arc<dyn Service>) {
        self.local
            .write()
            .expect("poisoned")
            .insert(host.to_string(), service);
        self.clients.write().expect("poisoned").remove(host);
    }

    pub fn client(&self, host: &str) -> NodeClient {
        if let Some(client) = self.clients.read().expect("poisoned").get(host) {
            return client.clone();
        }
        let client = match self.local.read().expect("poisoned").get(host) {
            Some(service) => NodeClient::local(host, service.clone()),
            None => NodeClient::tcp(host, self.limits, self.membership.clone()),
        };
        self.clients
            .write()
            .expect("poisoned")
            .entry(host.to_string())
            .or_insert(client)
            .clone()
    }
}

/// The error for a node that could not be reached: the request was not sent.
pub(crate) fn unreachable(host: &str, what: impl std::fmt::Display) -> MongoError {
    MongoError::new(
        ErrorCode::HostUnreachable,
        format!("Error connecting to {host} :: caused by :: {what}"),
    )
}

/// The error for a connection lost during a request: the node may or may not have run it.
pub(crate) fn connection_lost(host: &str, what: impl std::fmt::Display) -> MongoError {
    MongoError::new(
        ErrorCode::SocketException,
        format!("Connection to {host} lost :: caused by :: {what}"),
    )
}
