//! Assembling processes from roles: the whole cluster in one process (`dev`: router, config
//! server and shards calling each other in-process), or one role per process over TCP.

use crate::configsvr::ConfigState;
use crate::error::{MongoError, Result};
use crate::router::RouterState;
use crate::rpc::{Connector, Membership, NodeClient, PoolLimits};
use crate::server::auth::ClusterKey;
use crate::server::auth::cluster_auth_mode::{ClusterAuthMode, ClusterAuthModeCell};
use crate::server::logbuf::LogBuffer;
use crate::server::tls::Tls;
use crate::server::{
    CmdLine, Dispatcher, Ingress, Node, Parameters, Role, ServerHandle, Service, serve,
};
use crate::shard::ShardState;
use bson::doc;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// Options shared by every way of starting a role.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    pub bind: String,
    pub port: u16,
    /// Startup parameters (`--setParameter name=value`), e.g. `enableTestCommands=1`.
    pub parameters: Vec<(String, String)>,
    /// `net.maxIncomingConnections` (`--maxConns`); MongoDB's default when `None`.
    pub max_incoming_connections: Option<usize>,
    pub cmdline: CmdLine,
    pub log: Arc<LogBuffer>,
    /// Clients must authenticate (`--auth`); routers enforce it (see `server::auth`).
    pub auth: bool,
    /// A root user (`user`, `password`) created at startup when no user exists
    /// (`--admin-user`/`--admin-password`, or the Docker image's `MONGO_INITDB_ROOT_*`).
    pub initial_user: Option<(String, String)>,
    /// The cluster's key (`--keyFile`): members authenticate each other with it, and it
    /// enables authorization on every role, as in MongoDB.
    pub cluster_key: Option<Arc<ClusterKey>>,
    /// How members prove membership (`--clusterAuthMode`); `keyFile` when `None` and there is
    /// a key. Any mode enables authorization on every role.
    pub cluster_auth_mode: Option<ClusterAuthMode>,
    /// TLS on client connections (`--tlsMode` and its files); `None`: plain only.
    pub tls: Option<Arc<Tls>>,
}

impl NodeOptions {
    /// Loopback on a free port, MongoDB's defaults otherwise: what tests and benchmarks start.
    pub fn loopback() -> NodeOptions {
        NodeOptions {
            bind: "127.0.0.1".into(),
            port: 0,
            parameters: Vec::new(),
            max_incoming_connections: None,
            cmdline: CmdLine::default(),
            log: Arc::new(LogBuffer::default()),
            auth: false,
            initial_user: None,
            cluster_key: None,
            cluster_auth_mode: None,
            tls: None,
        }
    }

    fn node(&self, role: Role) -> Result<Node> {
        let params = Parameters::with_startup(&self.parameters)?;
        let mut node = Node::new(role, self.cmdline.clone(), params, self.log.clone());
        // Without a cluster authentication mode, members cannot prove membership: shards and
        // the config server then trust their callers, and only routers check. A mode (a key
        // file, or member certificates) enables authorization everywhere (MongoDB's keyFile
        // and clusterAuthMode imply --auth).
        let mode = self.cluster_auth_mode();
        node.authorization = (self.auth && role == Role::Router) || mode.is_some();
        node.cluster_key = self
            .cluster_key
            .clone()
            .filter(|_| mode.is_some_and(ClusterAuthMode::allows_key_file));
        node.cluster_auth_mode = ClusterAuthModeCell::new(mode);
        // Every role signs the cluster time it gossips once clients authenticate anywhere.
        node.signs_cluster_time = self.auth || mode.is_some();
        node.tls = self.tls.clone();
        Ok(node)
    }

    /// The cluster authentication mode: the one given, else `keyFile` with a key.
    fn cluster_auth_mode(&self) -> Option<ClusterAuthMode> {
        self.cluster_auth_mode
            .or_else(|| self.cluster_key.as_ref().map(|_| ClusterAuthMode::KeyFile))
    }

    /// The admission of this process: one per process, shared by its listeners.
    fn ingress(&self) -> Result<Arc<Ingress>> {
        Ingress::with_tls(
            self.max_incoming_connections,
            &Parameters::with_startup(&self.parameters)?,
            self.tls.clone(),
        )
    }

    async fn listen(&self) -> Result<TcpListener> {
        TcpListener::bind((self.bind.as_str(), self.port))
            .await
            .map_err(|e| {
                MongoError::internal(format!("cannot listen on {}:{}: {e}", self.bind, self.port))
            })
    }
}

/// The address other nodes should use to reach a listener.
fn advertised(addr: SocketAddr) -> String {
    if addr.ip().is_unspecified() {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "localhost".into());
        format!("{host}:{}", addr.port())
    } else {
        addr.to_string()
    }
}

/// A running process: its listener(s) and what keeps the roles alive.
pub struct Running {
    /// The (first) router's address, or the role's own address.
    pub addr: SocketAddr,
    /// Every router listening in this process (`dev` may run several).
    pub routers: Vec<SocketAddr>,
    handles: Vec<ServerHandle>,
    _services: Vec<Arc<dyn Service>>,
}

impl Running {
    pub async fn shutdown(self) {
        for handle in self.handles {
            handle.shutdown().await;
        }
    }
}

const CONFIG_HOST: &str = "inproc:config";

/// Dev mode: config server, `shards` shards (at least as many as the data directory already
/// has) and a router, in this process; only the router listens.
pub async fn start_dev(opts: &NodeOptions, data_dir: &Path, shards: usize) -> Result<Running> {
    start_dev_with_routers(opts, data_dir, shards, 1).await
}

/// [`start_dev`] with several routers, each with its own routing cache (the first listens on
/// `opts.port`, the others on free ports).
pub async fn start_dev_with_routers(
    opts: &NodeOptions,
    data_dir: &Path,
    shards: usize,
    routers: usize,
) -> Result<Running> {
    let ingress = opts.ingress()?;
    let config_node = opts.node(Role::ConfigServer)?;
    config_node.set_host(CONFIG_HOST);
    let connector = connector_for(&config_node);
    let config =
        ConfigState::open(config_node, &data_dir.join("config"), connector.clone()).await?;
    let config_service: Arc<dyn Service> = Arc::new(Dispatcher::new(config));
    connector.register_local(CONFIG_HOST, config_service.clone());
    let mut services = vec![config_service];
    create_initial_user(opts, &connector.client(CONFIG_HOST)).await?;
    let existing = existing_shard_dirs(data_dir);
    let config_client = connector.client(CONFIG_HOST);
    for i in 0..shards.max(existing) {
        let name = format!("shard{i}");
        let host = format!("inproc:{name}");
        let node = opts.node(Role::Shard)?;
        node.set_host(&host);
        let shard = ShardState::open(node, &data_dir.join(&name), connector.clone()).await?;
        let service: Arc<dyn Service> = Arc::new(Dispatcher::new(shard));
        connector.register_local(&host, service.clone());
        services.push(service);
        config_client
            .run_doc("admin", doc! {"_configsvrAddShard": &host, "name": &name})
            .await?;
    }
    let mut handles = Vec::new();
    for i in 0..routers.max(1) {
        let router = RouterState::new(opts.node(Role::Router)?, connector.clone(), CONFIG_HOST);
        let mut listen = opts.clone();
        if i > 0 {
            listen.port = 0;
        }
        let listener = listen.listen().await?;
        let router_service: Arc<dyn Service> = Arc::new(Dispatcher::new(router));
        let handle = serve(listener, router_service.clone(), Arc::clone(&ingress))
            .map_err(|e| MongoError::internal(e.to_string()))?;
        router_service.node().set_host(advertised(handle.addr));
        services.push(router_service);
        handles.push(handle);
    }
    let routers: Vec<SocketAddr> = handles.iter().map(|h| h.addr).collect();
    Ok(Running {
        addr: routers[0],
        routers,
        handles,
        _services: services,
    })
}

fn existing_shard_dirs(data_dir: &Path) -> usize {
    (0..)
        .take_while(|i| data_dir.join(format!("shard{i}")).is_dir())
        .count()
}

/// A config server process.
pub async fn start_configsvr(opts: &NodeOptions, data_dir: &Path) -> Result<Running> {
    let ingress = opts.ingress()?;
    let listener = opts.listen().await?;
    let addr = listener
        .local_addr()
        .map_err(|e| MongoError::internal(e.to_string()))?;
    let node = opts.node(Role::ConfigServer)?;
    node.set_host(advertised(addr));
    let connector = connector_for(&node);
    let config = ConfigState::open(node, data_dir, connector).await?;
    let service: Arc<dyn Service> = Arc::new(Dispatcher::new(config));
    create_initial_user(opts, &NodeClient::local("config", service.clone())).await?;
    let handle = serve(listener, service.clone(), ingress)
        .map_err(|e| MongoError::internal(e.to_string()))?;
    Ok(Running {
        addr: handle.addr,
        routers: Vec::new(),
        handles: vec![handle],
        _services: vec![service],
    })
}

/// A shard process; it registers itself with the config server at `configdb` (retrying in
/// the background until the config server answers).
pub async fn start_shard(opts: &NodeOptions, data_dir: &Path, configdb: &str) -> Result<Running> {
    let ingress = opts.ingress()?;
    let listener = opts.listen().await?;
    let addr = listener
        .local_addr()
        .map_err(|e| MongoError::internal(e.to_string()))?;
    let host = advertised(addr);
    let node = opts.node(Role::Shard)?;
    node.set_host(&host);
    let connector = connector_for(&node);
    let shard = ShardState::open(node, data_dir, connector.clone()).await?;
    // A shard that already belongs to the cluster re-registers under its name, so that the
    // config server can follow it to a new address.
    let mut registration = doc! {"_configsvrAddShard": &host};
    if let Some(identity) = shard.identity() {
        // Named with this run's lock holder name, so locks of the previous run are released.
        registration.insert("process", shard.lock_process(&identity.shard_name));
        registration.insert("name", identity.shard_name);
    }
    let service: Arc<dyn Service> = Arc::new(Dispatcher::new(shard));
    let handle = serve(listener, service.clone(), ingress)
        .map_err(|e| MongoError::internal(e.to_string()))?;
    let config = connector.client(configdb);
    tokio::spawn(async move {
        loop {
            match config.run_doc("admin", registration.clone()).await {
                Ok(reply) => {
                    tracing::info!(
                        shard = reply.get_str("shardAdded").unwrap_or_default(),
                        "registered with the config server"
                    );
                    break;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot register with the config server yet; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    });
    Ok(Running {
        addr: handle.addr,
        routers: Vec::new(),
        handles: vec![handle],
        _services: vec![service],
    })
}

/// A router process reading the routing table from the config server at `configdb`.
pub async fn start_router(opts: &NodeOptions, configdb: &str) -> Result<Running> {
    let ingress = opts.ingress()?;
    let listener = opts.listen().await?;
    let addr = listener
        .local_addr()
        .map_err(|e| MongoError::internal(e.to_string()))?;
    let node = opts.node(Role::Router)?;
    node.set_host(advertised(addr));
    let connector = connector_for(&node);
    let router = RouterState::new(node, connector, configdb);
    let service: Arc<dyn Service> = Arc::new(Dispatcher::new(router));
    let handle = serve(listener, service.clone(), ingress)
        .map_err(|e| MongoError::internal(e.to_string()))?;
    Ok(Running {
        addr: handle.addr,
        routers: vec![handle.addr],
        handles: vec![handle],
        _services: vec![service],
    })
}

/// Creates the initial root user on the config server behind `config` unless some user exists
/// (as the official Docker image's entrypoint does on first start).
async fn create_initial_user(opts: &NodeOptions, config: &NodeClient) -> Result<()> {
    let Some((user, password)) = &opts.initial_user else {
        return Ok(());
    };
    let existing = config
        .run_doc(
            "admin",
            doc! {"find": "system.users", "limit": 1, "projection": {"_id": 1}},
        )
        .await?;
    if !crate::command::first_batch(&existing).is_empty() {
        return Ok(());
    }
    let create = doc! {
        "createUser": user,
        "pwd": password,
        "roles": [{"role": "root", "db": "admin"}],
    };
    config.run_doc("admin", create).await?;
    tracing::info!(user = %user, "created the initial root user in admin");
    Ok(())
}

/// The connector of a node, its pools sized by the node's startup parameters, its
/// connections proving membership as its cluster authentication mode sends: with its key, or
/// with its cluster certificate over TLS.
fn connector_for(node: &Node) -> Arc<Connector> {
    let membership = Membership {
        key: node.cluster_key.clone(),
        tls: node.tls.clone(),
        mode: node.cluster_auth_mode.clone(),
    };
    Connector::with_limits(PoolLimits::from_params(&node.params), membership)
}

/// The default data directory of `dev` mode.
pub fn default_data_dir() -> PathBuf {
    PathBuf::from("docgrid-data")
}
