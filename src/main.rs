//! The `docgrid` binary: parses flags (and an optional TOML file), sets up logging, and runs
//! the whole cluster (`dev`, the default) or one role per process.

use anyhow::{Context, Result, bail};
use bson::{Document, doc};
use clap::{Args, Parser, Subcommand, ValueEnum};
use docgrid::cluster::{self, NodeOptions};
use docgrid::server::CmdLine;
use docgrid::server::auth::cluster_auth_mode::ClusterAuthMode;
use docgrid::server::logbuf::{LogBuffer, LogLayer};
use docgrid::server::tls::{Tls, TlsMode, TlsOptions};
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;
use tracing_subscriber::prelude::*;

/// docgrid: a MongoDB-compatible sharded cluster. Point any MongoDB driver or mongosh at the
/// router (`mongodb://127.0.0.1:27017`).
///
/// Without a subcommand, runs `dev`: router, config server and shards in one process, with the
/// data in ./docgrid-data. Settings come from flags and an optional TOML file (`--config`);
/// flags win.
#[derive(Parser, Debug)]
#[command(
    name = "docgrid",
    version,
    about,
    long_about,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// `dev` options, accepted without the subcommand too.
    #[command(flatten)]
    dev: DevArgs,
    #[command(flatten)]
    global: GlobalArgs,
}

#[derive(Args, Debug, Clone, Default)]
struct GlobalArgs {
    /// TOML file with settings (keys as the long flags, with `_` for `-`: port, bind, data_dir,
    /// shards, configdb, log_format, log_level, enable_test_commands, maxConns; and mongod's
    /// `[net] maxIncomingConnections`).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Log line format.
    #[arg(long, global = true, value_enum)]
    log_format: Option<LogFormat>,
    /// Log filter (`info`, `debug`, `docgrid=trace`, ...; RUST_LOG syntax).
    #[arg(long, global = true)]
    log_level: Option<String>,
}

#[derive(Clone, Copy, Debug, ValueEnum, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Router, config server and shards in one process (the default).
    Dev(DevArgs),
    /// A router (mongos): clients connect here.
    Router(RouterArgs),
    /// The config server holding the routing table.
    Configsvr(StorageArgs),
    /// A shard server holding data; registers itself with the config server.
    Shard(ShardArgs),
}

#[derive(Args, Debug, Clone, Default)]
struct ListenArgs {
    /// Port to listen on (0 picks a free one).
    #[arg(long)]
    port: Option<u16>,
    /// Address to listen on.
    #[arg(long)]
    bind: Option<String>,
    /// Enable MongoDB's test-only commands (configureFailPoint); the same as
    /// `--setParameter enableTestCommands=1`.
    #[arg(long)]
    enable_test_commands: bool,
    /// A server parameter at startup, as `name=value` (repeatable), like mongod's.
    #[arg(long = "setParameter", value_name = "NAME=VALUE", value_parser = parse_parameter)]
    set_parameter: Vec<(String, String)>,
    /// The most connections this process accepts at once (mongod's `net.maxIncomingConnections`;
    /// default 1000000, lowered to 80% of the open file limit); beyond, a new connection is
    /// closed at once.
    #[arg(long = "maxConns", value_name = "N")]
    max_conns: Option<usize>,
    /// Require clients to authenticate (SCRAM-SHA-256/SCRAM-SHA-1) and hold the privileges of
    /// what they run, as mongod's `--auth`. Routers enforce it; shards and the config server
    /// enforce it with `--keyFile` (without one they trust their callers).
    #[arg(long)]
    auth: bool,
    /// A root user created in `admin` at startup when no user exists (dev and configsvr; also
    /// `MONGO_INITDB_ROOT_USERNAME`).
    #[arg(long, requires = "admin_password")]
    admin_user: Option<String>,
    /// The initial root user's password (also `MONGO_INITDB_ROOT_PASSWORD`).
    #[arg(long, requires = "admin_user")]
    admin_password: Option<String>,
    /// The cluster's shared key file (mongod's `--keyFile`): members authenticate each other
    /// as `__system` with it, internal commands need it, and authorization is on (as `--auth`)
    /// on every role. 6 to 1024 base64 characters, readable by the owner only.
    #[arg(long = "keyFile", value_name = "PATH")]
    key_file: Option<PathBuf>,
    /// How members authenticate each other, as mongod's `--clusterAuthMode`: `keyFile` (the
    /// default with `--keyFile`), `x509` (MONGODB-X509 with the cluster certificate, TLS and
    /// `--tlsCAFile` required, no key file), or the rolling-upgrade modes `sendKeyFile` and
    /// `sendX509`, which send one and accept both. Authorization is on with any of them.
    #[arg(long = "clusterAuthMode", value_name = "MODE")]
    cluster_auth_mode: Option<String>,
    /// TLS on client connections, as mongod's `--tlsMode`: disabled, allowTLS and preferTLS
    /// (TLS and plain connections), requireTLS (TLS only).
    #[arg(long = "tlsMode", value_name = "MODE")]
    tls_mode: Option<String>,
    /// The server's certificate chain and private key, one PEM file.
    #[arg(long = "tlsCertificateKeyFile", value_name = "PATH")]
    tls_certificate_key_file: Option<PathBuf>,
    /// Certificate authorities client certificates must chain to; with it, clients must
    /// present a certificate (unless `--tlsAllowConnectionsWithoutCertificates`).
    #[arg(long = "tlsCAFile", value_name = "PATH")]
    tls_ca_file: Option<PathBuf>,
    /// With `--tlsCAFile`: clients without a certificate are accepted too.
    #[arg(long = "tlsAllowConnectionsWithoutCertificates")]
    tls_allow_connections_without_certificates: bool,
    /// The password of an encrypted key in `--tlsCertificateKeyFile` (PKCS#8).
    #[arg(long = "tlsCertificateKeyFilePassword", value_name = "PASSWORD")]
    tls_certificate_key_file_password: Option<String>,
    /// Certificate revocation lists (PEM): revoked client and member certificates are refused.
    #[arg(long = "tlsCRLFile", value_name = "PATH")]
    tls_crl_file: Option<PathBuf>,
    /// Certificates of clients and members are not checked against the authorities (such a
    /// certificate opens a connection but does not authenticate).
    #[arg(long = "tlsAllowInvalidCertificates")]
    tls_allow_invalid_certificates: bool,
    /// A member's certificate need not name the host it was reached at.
    #[arg(long = "tlsAllowInvalidHostnames")]
    tls_allow_invalid_hostnames: bool,
    /// Protocols refused: TLS1_0, TLS1_1, TLS1_2, TLS1_3 separated by commas, or none.
    #[arg(long = "tlsDisabledProtocols", value_name = "PROTOCOLS")]
    tls_disabled_protocols: Option<String>,
    /// The certificate and key presented to other members (default: the server's).
    #[arg(long = "tlsClusterFile", value_name = "PATH")]
    tls_cluster_file: Option<PathBuf>,
    /// The password of an encrypted key in `--tlsClusterFile`.
    #[arg(long = "tlsClusterPassword", value_name = "PASSWORD")]
    tls_cluster_password: Option<String>,
}

fn parse_parameter(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("expected NAME=VALUE, got '{text}'"))
}

#[derive(Args, Debug, Clone, Default)]
struct DevArgs {
    #[command(flatten)]
    listen: ListenArgs,
    /// Number of shards.
    #[arg(long)]
    shards: Option<usize>,
    /// Data directory.
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

#[derive(Args, Debug, Clone, Default)]
struct RouterArgs {
    #[command(flatten)]
    listen: ListenArgs,
    /// The config server, as host:port.
    #[arg(long)]
    configdb: Option<String>,
}

#[derive(Args, Debug, Clone, Default)]
struct StorageArgs {
    #[command(flatten)]
    listen: ListenArgs,
    /// Data directory.
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

#[derive(Args, Debug, Clone, Default)]
struct ShardArgs {
    #[command(flatten)]
    storage: StorageArgs,
    /// The config server, as host:port.
    #[arg(long)]
    configdb: Option<String>,
}

/// Settings read from the `--config` TOML file.
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    port: Option<u16>,
    bind: Option<String>,
    data_dir: Option<PathBuf>,
    shards: Option<usize>,
    configdb: Option<String>,
    log_format: Option<LogFormat>,
    log_level: Option<String>,
    enable_test_commands: Option<bool>,
    #[serde(rename = "maxConns")]
    max_conns: Option<usize>,
    /// mongod's `net` section; `maxIncomingConnections` and `tls` are taken.
    net: Option<NetConfig>,
    /// mongod's `security` section; `authorization`, `keyFile` and `clusterAuthMode` are taken.
    security: Option<SecurityConfig>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct SecurityConfig {
    /// `enabled` or `disabled`, as in mongod's configuration file.
    authorization: Option<Authorization>,
    #[serde(rename = "keyFile")]
    key_file: Option<PathBuf>,
    #[serde(rename = "clusterAuthMode")]
    cluster_auth_mode: Option<String>,
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Authorization {
    Enabled,
    Disabled,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct NetConfig {
    #[serde(rename = "maxIncomingConnections")]
    max_incoming_connections: Option<usize>,
    /// mongod's `net.tls`.
    tls: Option<TlsConfig>,
}

#[derive(Deserialize, Debug, Default, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TlsConfig {
    mode: Option<String>,
    certificate_key_file: Option<PathBuf>,
    #[serde(rename = "CAFile")]
    ca_file: Option<PathBuf>,
    allow_connections_without_certificates: Option<bool>,
    certificate_key_file_password: Option<String>,
    #[serde(rename = "CRLFile")]
    crl_file: Option<PathBuf>,
    allow_invalid_certificates: Option<bool>,
    allow_invalid_hostnames: Option<bool>,
    disabled_protocols: Option<String>,
    cluster_file: Option<PathBuf>,
    cluster_password: Option<String>,
}

impl FileConfig {
    fn max_incoming_connections(&self) -> Option<usize> {
        self.net
            .as_ref()
            .and_then(|net| net.max_incoming_connections)
            .or(self.max_conns)
    }
}

fn load_file(path: &Option<PathBuf>) -> Result<FileConfig> {
    let Some(path) = path else {
        return Ok(FileConfig::default());
    };
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("invalid settings in {}", path.display()))
}

fn init_logging(format: LogFormat, filter: &str, log: Arc<LogBuffer>) -> Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter).context("invalid --log-level")?;
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    let registry = tracing_subscriber::registry()
        .with(filter)
        .with(LogLayer(log));
    match format {
        LogFormat::Text => registry.with(fmt).init(),
        LogFormat::Json => registry.with(fmt.json()).init(),
    }
    Ok(())
}

/// Applies the startup parameters that hold for the whole process rather than one node:
/// `maxBSONDepth` bounds every document the process stores or builds.
fn set_process_parameters(parameters: &[(String, String)]) -> Result<()> {
    for (name, value) in parameters {
        if name == "maxBSONDepth" {
            let depth: usize = value
                .parse()
                .with_context(|| format!("invalid maxBSONDepth: {value}"))?;
            docgrid::depth::set_max_bson_depth(depth).map_err(anyhow::Error::msg)?;
        }
    }
    Ok(())
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let file = load_file(&cli.global.config)?;
    let format = cli
        .global
        .log_format
        .or(file.log_format)
        .unwrap_or(LogFormat::Text);
    let level = cli
        .global
        .log_level
        .clone()
        .or_else(|| file.log_level.clone())
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| "info".into());
    let log = Arc::new(LogBuffer::default());
    init_logging(format, &level, log.clone())?;
    std::panic::set_hook(Box::new(|info| tracing::error!(panic = %info, "panic")));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(docgrid::depth::THREAD_STACK_SIZE)
        .enable_all()
        .build()?;
    runtime.block_on(run(cli, file, log))
}

async fn run(cli: Cli, file: FileConfig, log: Arc<LogBuffer>) -> Result<()> {
    let argv: Vec<String> = std::env::args().collect();
    let command = cli.command.unwrap_or(Command::Dev(cli.dev));
    let listen = match &command {
        Command::Dev(args) => &args.listen,
        Command::Router(args) => &args.listen,
        Command::Configsvr(args) => &args.listen,
        Command::Shard(args) => &args.storage.listen,
    };
    let key_file = listen
        .key_file
        .clone()
        .or_else(|| file.security.as_ref().and_then(|s| s.key_file.clone()));
    let tls_options = tls_options(listen, &file)?;
    let given_mode = listen.cluster_auth_mode.clone().or_else(|| {
        file.security
            .as_ref()
            .and_then(|s| s.cluster_auth_mode.clone())
    });
    let cluster_auth_mode = ClusterAuthMode::for_startup(
        given_mode.as_deref(),
        tls_options.mode,
        tls_options.ca_file.is_some(),
        key_file.is_some(),
    )
    .map_err(|e| anyhow::anyhow!("{}", e.message()))?;
    // mongod reads the key only where the mode accepts it.
    let cluster_key = match &key_file {
        Some(path) if cluster_auth_mode.is_some_and(ClusterAuthMode::allows_key_file) => {
            Some(Arc::new(read_key_file(path, &listen.set_parameter)?))
        }
        _ => None,
    };
    let tls = Tls::new(&tls_options).map_err(|e| anyhow::anyhow!("{}", e.message()))?;
    // Shown by getCmdLineOpts only when given, as mongod's parsed options are.
    let explicit_mode = given_mode.as_ref().and(cluster_auth_mode);
    let options = |listen: &ListenArgs, default_port: u16, parsed: Document| NodeOptions {
        bind: listen
            .bind
            .clone()
            .or_else(|| file.bind.clone())
            .unwrap_or_else(|| "127.0.0.1".into()),
        port: listen.port.or(file.port).unwrap_or(default_port),
        parameters: {
            let mut parameters = listen.set_parameter.clone();
            if listen.enable_test_commands || file.enable_test_commands.unwrap_or(false) {
                parameters.push(("enableTestCommands".into(), "1".into()));
            }
            parameters
        },
        max_incoming_connections: listen.max_conns.or_else(|| file.max_incoming_connections()),
        auth: listen.auth
            || file.security.as_ref().and_then(|s| s.authorization) == Some(Authorization::Enabled),
        initial_user: initial_user(listen),
        cluster_key: cluster_key.clone(),
        cluster_auth_mode: explicit_mode,
        tls: tls.clone(),
        cmdline: CmdLine {
            argv: argv.clone(),
            parsed,
        },
        log: log.clone(),
    };
    if !options(listen, 0, Document::new()).auth && cluster_auth_mode.is_none() {
        log.startup_warning(
            "CONTROL",
            22120,
            "Access control is not enabled for the database. Read and write access to data and configuration is unrestricted",
        );
    }
    set_process_parameters(&listen.set_parameter)?;
    let running = match &command {
        Command::Dev(args) => {
            let data_dir = args
                .data_dir
                .clone()
                .or_else(|| file.data_dir.clone())
                .unwrap_or_else(cluster::default_data_dir);
            let shards = args.shards.or(file.shards).unwrap_or(2);
            if shards == 0 {
                bail!("--shards must be at least 1");
            }
            let mut opts = options(&args.listen, 27017, Document::new());
            opts.cmdline.parsed = parsed(&opts, key_file.as_ref(), Some(&data_dir), None, "dev");
            let running = cluster::start_dev(&opts, &data_dir, shards).await?;
            tracing::info!(addr = %running.addr, data_dir = %data_dir.display(), shards, "docgrid dev cluster ready; connect with mongosh mongodb://{}", running.addr);
            running
        }
        Command::Router(args) => {
            let configdb = args
                .configdb
                .clone()
                .or_else(|| file.configdb.clone())
                .context("router needs --configdb host:port")?;
            let mut opts = options(&args.listen, 27017, Document::new());
            opts.cmdline.parsed = parsed(&opts, key_file.as_ref(), None, Some(&configdb), "router");
            let running = cluster::start_router(&opts, &configdb).await?;
            tracing::info!(addr = %running.addr, %configdb, "router ready");
            running
        }
        Command::Configsvr(args) => {
            let data_dir = args
                .data_dir
                .clone()
                .or_else(|| file.data_dir.clone())
                .unwrap_or_else(|| PathBuf::from("docgrid-data/config"));
            let mut opts = options(&args.listen, 27019, Document::new());
            opts.cmdline.parsed =
                parsed(&opts, key_file.as_ref(), Some(&data_dir), None, "configsvr");
            let running = cluster::start_configsvr(&opts, &data_dir).await?;
            tracing::info!(addr = %running.addr, data_dir = %data_dir.display(), "config server ready");
            running
        }
        Command::Shard(args) => {
            let configdb = args
                .configdb
                .clone()
                .or_else(|| file.configdb.clone())
                .context("shard needs --configdb host:port")?;
            let data_dir = args
                .storage
                .data_dir
                .clone()
                .or_else(|| file.data_dir.clone())
                .unwrap_or_else(|| PathBuf::from("docgrid-data/shard"));
            let mut opts = options(&args.storage.listen, 27018, Document::new());
            opts.cmdline.parsed = parsed(
                &opts,
                key_file.as_ref(),
                Some(&data_dir),
                Some(&configdb),
                "shardsvr",
            );
            let running = cluster::start_shard(&opts, &data_dir, &configdb).await?;
            tracing::info!(addr = %running.addr, data_dir = %data_dir.display(), %configdb, "shard ready");
            running
        }
    };
    shutdown_signal().await;
    tracing::info!("shutting down");
    running.shutdown().await;
    Ok(())
}

/// The initial root user from the flags, or else from the official Docker image's variables.
fn initial_user(listen: &ListenArgs) -> Option<(String, String)> {
    if let (Some(user), Some(password)) = (&listen.admin_user, &listen.admin_password) {
        return Some((user.clone(), password.clone()));
    }
    let user = std::env::var("MONGO_INITDB_ROOT_USERNAME").ok()?;
    let password = std::env::var("MONGO_INITDB_ROOT_PASSWORD").ok()?;
    (!user.is_empty()).then_some((user, password))
}

/// The TLS options of the flags, or else the TOML file's `net.tls`; their files are read at
/// startup (`Tls::new`), and an unusable one stops the process.
fn tls_options(listen: &ListenArgs, file: &FileConfig) -> Result<TlsOptions> {
    let from_file = file
        .net
        .as_ref()
        .and_then(|net| net.tls.clone())
        .unwrap_or_default();
    let mode = match listen.tls_mode.as_ref().or(from_file.mode.as_ref()) {
        Some(mode) => TlsMode::parse(mode).map_err(|e| anyhow::anyhow!("{}", e.message()))?,
        None => TlsMode::Disabled,
    };
    Ok(TlsOptions {
        mode,
        certificate_key_file: listen
            .tls_certificate_key_file
            .clone()
            .or(from_file.certificate_key_file),
        ca_file: listen.tls_ca_file.clone().or(from_file.ca_file),
        allow_connections_without_certificates: listen.tls_allow_connections_without_certificates
            || from_file
                .allow_connections_without_certificates
                .unwrap_or(false),
        certificate_key_file_password: listen
            .tls_certificate_key_file_password
            .clone()
            .or(from_file.certificate_key_file_password),
        crl_file: listen.tls_crl_file.clone().or(from_file.crl_file),
        allow_invalid_certificates: listen.tls_allow_invalid_certificates
            || from_file.allow_invalid_certificates.unwrap_or(false),
        allow_invalid_hostnames: listen.tls_allow_invalid_hostnames
            || from_file.allow_invalid_hostnames.unwrap_or(false),
        disabled_protocols: listen
            .tls_disabled_protocols
            .clone()
            .or(from_file.disabled_protocols),
        cluster_file: listen.tls_cluster_file.clone().or(from_file.cluster_file),
        cluster_password: listen
            .tls_cluster_password
            .clone()
            .or(from_file.cluster_password),
    })
}

/// Reads the cluster's key file with MongoDB's rules; its `__system` credentials take the
/// iteration counts the startup parameters set. An unusable key file stops the process, as it
/// stops mongod.
fn read_key_file(
    path: &std::path::Path,
    parameters: &[(String, String)],
) -> Result<docgrid::server::auth::ClusterKey> {
    use docgrid::server::auth;
    let params = docgrid::server::Parameters::with_startup(parameters)
        .map_err(|e| anyhow::anyhow!("{}", e.message()))?;
    auth::ClusterKey::read(path, |m| auth::iteration_count(&params, m))
        .map_err(|e| anyhow::anyhow!("{}", e.message()))
}

/// `getCmdLineOpts.parsed`, in mongod's option layout.
fn parsed(
    opts: &NodeOptions,
    key_file: Option<&PathBuf>,
    data_dir: Option<&PathBuf>,
    configdb: Option<&str>,
    role: &str,
) -> Document {
    let mut net = doc! {"bindIp": &opts.bind, "port": opts.port as i32};
    if let Some(max) = opts.max_incoming_connections {
        net.insert(
            "maxIncomingConnections",
            i32::try_from(max).unwrap_or(i32::MAX),
        );
    }
    if let Some(tls) = &opts.tls {
        net.insert("tls", doc! {"mode": tls.mode.name()});
    }
    let mut parsed = doc! {"net": net};
    if let Some(dir) = data_dir {
        parsed.insert("storage", doc! {"dbPath": dir.display().to_string()});
    }
    let mut sharding = doc! {"clusterRole": role};
    if let Some(configdb) = configdb {
        sharding.insert("configDB", configdb);
    }
    parsed.insert("sharding", sharding);
    let mut security = Document::new();
    if opts.auth {
        security.insert("authorization", "enabled");
    }
    if let Some(path) = key_file {
        security.insert("keyFile", path.display().to_string());
    }
    if let Some(mode) = opts.cluster_auth_mode {
        security.insert("clusterAuthMode", mode.name());
    }
    if !security.is_empty() {
        parsed.insert("security", security);
    }
    if !opts.parameters.is_empty() {
        let set: Document = opts
            .parameters
            .iter()
            .map(|(k, v)| (k.clone(), bson::Bson::String(v.clone())))
            .collect();
        parsed.insert("setParameter", set);
    }
    parsed
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("signal handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
