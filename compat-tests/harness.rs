//! The test clusters: [`TestCluster`] runs router, config server and shards in this process on
//! port 0; [`ProcessCluster`] spawns `docgrid` binaries on free ports.

use docgrid::cluster::{self, NodeOptions, Running};
use mongodb::Client;
use mongodb::bson::Document;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A whole cluster in this process.
pub struct TestCluster {
    pub addr: SocketAddr,
    pub routers: Vec<SocketAddr>,
    pub client: Client,
    running: Option<Running>,
    _dir: tempfile::TempDir,
}

pub fn node_options() -> NodeOptions {
    NodeOptions::loopback()
}

impl TestCluster {
    pub async fn start() -> TestCluster {
        Self::start_with(2, 1).await
    }

    pub async fn start_with(shards: usize, routers: usize) -> TestCluster {
        Self::start_with_options(node_options(), shards, routers).await
    }

    /// A cluster with MongoDB's test commands (`configureFailPoint`) enabled.
    pub async fn with_test_commands() -> TestCluster {
        let mut options = node_options();
        options
            .parameters
            .push(("enableTestCommands".into(), "1".into()));
        Self::start_with_options(options, 2, 1).await
    }

    /// A cluster whose processes start with these `--setParameter` values.
    pub async fn with_parameters(parameters: &[(&str, &str)]) -> TestCluster {
        let mut options = node_options();
        for (name, value) in parameters {
            options
                .parameters
                .push((name.to_string(), value.to_string()));
        }
        Self::start_with_options(options, 2, 1).await
    }

    /// A cluster started with these options (`auth`, an initial user, ...).
    pub async fn with_options(options: NodeOptions) -> TestCluster {
        Self::start_with_options(options, 2, 1).await
    }

    pub async fn start_with_options(
        options: NodeOptions,
        shards: usize,
        routers: usize,
    ) -> TestCluster {
        let dir = tempfile::tempdir().expect("temp dir");
        let running = cluster::start_dev_with_routers(&options, dir.path(), shards, routers)
            .await
            .expect("cluster starts");
        let client = client_for(running.addr).await;
        TestCluster {
            addr: running.addr,
            routers: running.routers.clone(),
            client,
            running: Some(running),
            _dir: dir,
        }
    }

    pub fn db(&self, name: &str) -> mongodb::Database {
        self.client.database(name)
    }

    /// A client of the i-th router.
    pub async fn router_client(&self, i: usize) -> Client {
        client_for(self.routers[i]).await
    }

    pub async fn admin(&self, command: Document) -> mongodb::error::Result<Document> {
        self.client.database("admin").run_command(command).await
    }

    pub async fn shutdown(mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown().await;
        }
    }
}

/// A client of one node, not discovering others.
pub async fn direct_client(port: u16) -> Client {
    Client::with_uri_str(format!(
        "mongodb://127.0.0.1:{port}/?directConnection=true&serverSelectionTimeoutMS=10000"
    ))
    .await
    .expect("client")
}

pub async fn client_for(addr: SocketAddr) -> Client {
    Client::with_uri_str(format!("mongodb://{addr}/?serverSelectionTimeoutMS=5000"))
        .await
        .expect("client")
}

/// The server error code of a failed driver operation.
pub fn error_code(err: &mongodb::error::Error) -> Option<i32> {
    match err.kind.as_ref() {
        mongodb::error::ErrorKind::Command(c) => Some(c.code),
        mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w)) => {
            Some(w.code)
        }
        mongodb::error::ErrorKind::InsertMany(i) => i
            .write_errors
            .as_ref()
            .and_then(|e| e.first())
            .map(|e| e.code),
        _ => None,
    }
}
/// The documents of a cursor reply's first batch.
pub fn first_batch(reply: &Document) -> Vec<Document> {
    reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .map(|d| d.as_document().unwrap().clone())
        .collect()
}

/// A failed command's code, codeName and message.
pub fn failure(err: &mongodb::error::Error) -> (i32, String, String) {
    match err.kind.as_ref() {
        mongodb::error::ErrorKind::Command(c) => (c.code, c.code_name.clone(), c.message.clone()),
        other => panic!("not a command error: {other:?}"),
    }
}

/// The failure of a command that must be refused.
pub async fn refused(
    db: &mongodb::Database,
    body: mongodb::bson::RawDocumentBuf,
) -> (i32, String, String) {
    let err = db
        .run_raw_command(body.clone())
        .await
        .expect_err(&format!("{body:?} was accepted"));
    failure(&err)
}

/// A free TCP port below 32768 (outside Linux's ephemeral range, so a port we pick is not
/// handed to some outgoing connection in the meantime).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let seed = (std::process::id() % 2000) as u16 * 8;
    loop {
        let offset = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = 20000 + (seed + offset) % 12000;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// A `docgrid` child process, killed (SIGKILL) when dropped.
pub struct Process {
    pub child: Child,
    /// Its command line, to start it again.
    pub args: Vec<String>,
}

impl Process {
    pub fn spawn(args: &[&str], port: u16) -> Process {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Self::spawn_owned(&args, port)
    }

    pub fn spawn_owned(args: &[String], port: u16) -> Process {
        let child = Command::new(env!("CARGO_BIN_EXE_docgrid"))
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("docgrid starts");
        let process = Process {
            child,
            args: args.to_vec(),
        };
        wait_for_port(port);
        process
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on port {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Config server, shards and a router as separate processes.
pub struct ProcessCluster {
    pub router_port: u16,
    pub config_port: u16,
    configdb: String,
    processes: Vec<Process>,
    shard_dirs: Vec<String>,
    /// Arguments every config server and shard process gets.
    extra: Vec<String>,
    /// `user:password` the cluster's clients authenticate with, if any.
    credentials: Option<String>,
    /// More URI options of the cluster's clients (`&tls=true...`).
    client_options: String,
    _dir: tempfile::TempDir,
}

impl ProcessCluster {
    pub async fn start(shards: usize) -> ProcessCluster {
        Self::start_with(shards, &[]).await
    }

    /// [`start`](Self::start) with more arguments for every process (config server, shards,
    /// router).
    pub async fn start_with(shards: usize, extra: &[&str]) -> ProcessCluster {
        Self::start_in(
            tempfile::tempdir().expect("temp dir"),
            shards,
            extra,
            None,
            "",
        )
        .await
    }

    /// [`start_with`](Self::start_with) in `dir` (which may hold files the arguments name),
    /// its clients authenticating as `credentials` (`user:password`), with more URI options.
    pub async fn start_in(
        dir: tempfile::TempDir,
        shards: usize,
        extra: &[&str],
        credentials: Option<&str>,
        client_options: &str,
    ) -> ProcessCluster {
        let config_port = free_port();
        let configdb = format!("127.0.0.1:{config_port}");
        let path = |name: &str| dir.path().join(name).display().to_string();
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let with_extra = |args: &[&str]| {
            let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            args.extend(extra.iter().cloned());
            args
        };
        let mut shard_dirs = Vec::new();
        let mut processes = vec![Process::spawn_owned(
            &with_extra(&[
                "configsvr",
                "--port",
                &config_port.to_string(),
                "--data-dir",
                &path("config"),
            ]),
            config_port,
        )];
        for i in 0..shards {
            let port = free_port();
            shard_dirs.push(path(&format!("shard{i}")));
            processes.push(Process::spawn_owned(
                &with_extra(&[
                    "shard",
                    "--port",
                    &port.to_string(),
                    "--data-dir",
                    &path(&format!("shard{i}")),
                    "--configdb",
                    &configdb,
                ]),
                port,
            ));
        }
        let router_port = free_port();
        processes.push(Process::spawn_owned(
            &with_extra(&[
                "router",
                "--port",
                &router_port.to_string(),
                "--configdb",
                &configdb,
            ]),
            router_port,
        ));
        let cluster = ProcessCluster {
            router_port,
            config_port,
            configdb,
            processes,
            shard_dirs,
            extra,
            credentials: credentials.map(str::to_string),
            client_options: client_options.to_string(),
            _dir: dir,
        };
        // Shards register themselves in the background; wait until all have.
        let client = cluster.client().await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let n = client
                .database("config")
                .collection::<Document>("shards")
                .estimated_document_count()
                .await
                .unwrap_or(0);
            if n as usize == shards {
                break;
            }
            assert!(Instant::now() < deadline, "shards did not register");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        cluster
    }

    pub async fn client(&self) -> Client {
        if self.credentials.is_none() && self.client_options.is_empty() {
            return client_for(SocketAddr::from(([127, 0, 0, 1], self.router_port))).await;
        }
        let credentials = self
            .credentials
            .as_ref()
            .map(|c| format!("{c}@"))
            .unwrap_or_default();
        Client::with_uri_str(format!(
            "mongodb://{credentials}127.0.0.1:{}/?serverSelectionTimeoutMS=5000{}",
            self.router_port, self.client_options
        ))
        .await
        .expect("client")
    }

    /// The directory the cluster's data (and files its arguments name) live in.
    pub fn dir(&self) -> &std::path::Path {
        self._dir.path()
    }

    /// The config server's `host:port`.
    pub fn configdb(&self) -> &str {
        &self.configdb
    }

    /// Starts another router process on the same cluster; returns a client of it.
    pub async fn add_router(&mut self) -> Client {
        self.add_router_with(&[]).await
    }

    /// [`add_router`](Self::add_router) with more command-line arguments.
    pub async fn add_router_with(&mut self, extra: &[&str]) -> Client {
        let port = free_port();
        let port_arg = port.to_string();
        let mut args = vec!["router", "--port", &port_arg, "--configdb", &self.configdb];
        args.extend_from_slice(extra);
        self.processes.push(Process::spawn(&args, port));
        client_for(SocketAddr::from(([127, 0, 0, 1], port))).await
    }

    /// A client connected to the config server directly.
    pub async fn config_client(&self) -> Client {
        direct_client(self.config_port).await
    }

    /// A client connected to shard `i` directly (it must not have been restarted elsewhere).
    pub async fn shard_client(&self, i: usize) -> Client {
        direct_client(self.shard_port(i)).await
    }

    pub fn shard_port(&self, i: usize) -> u16 {
        let args: Vec<String> = self.processes[1 + i].args.clone();
        let at = args.iter().position(|a| a == "--port").expect("a port");
        args[at + 1].parse().expect("a port number")
    }

    /// Kills the config server (SIGKILL) and starts it again on the same port and data.
    pub fn restart_config(&mut self) {
        let args = self.processes[0].args.clone();
        self.processes[0].kill();
        self.processes[0] = Process::spawn_owned(&args, self.config_port);
    }

    fn router_process(&mut self) -> &mut Process {
        let port = self.router_port.to_string();
        self.processes
            .iter_mut()
            .find(|p| p.args.first().is_some_and(|a| a == "router") && p.args.contains(&port))
            .expect("the first router")
    }

    /// Kills the first router (SIGKILL); [`start_router_again`](Self::start_router_again)
    /// brings it back.
    pub fn stop_router(&mut self) {
        self.router_process().kill();
    }

    pub fn start_router_again(&mut self) {
        let port = self.router_port;
        let process = self.router_process();
        let args = process.args.clone();
        *process = Process::spawn_owned(&args, port);
    }

    /// Kills shard `i` (SIGKILL); [`start_shard_again`](Self::start_shard_again) brings it back.
    pub fn stop_shard(&mut self, i: usize) {
        self.processes[1 + i].kill();
    }

    /// Starts the stopped shard `i` again on the same port and data.
    pub fn start_shard_again(&mut self, i: usize) {
        let args = self.processes[1 + i].args.clone();
        let port = self.shard_port(i);
        self.processes[1 + i] = Process::spawn_owned(&args, port);
    }

    /// The index of the shard process listening at `host` (`127.0.0.1:port`).
    pub fn shard_index(&self, host: &str) -> usize {
        (0..self.shard_dirs.len())
            .find(|i| host.ends_with(&format!(":{}", self.shard_port(*i))))
            .expect("a shard of this cluster")
    }

    /// Kills shard `i` (SIGKILL); returns its name and data directory.
    pub fn kill_shard(&mut self, i: usize) -> (String, String) {
        self.processes[1 + i].kill();
        (format!("shard{i}"), self.shard_dirs[i].clone())
    }

    /// Starts a shard on `data_dir` at `port` and waits until the config server lists it there.
    pub async fn restart_shard(&mut self, data_dir: &str, port: u16) {
        let mut args: Vec<String> = [
            "shard",
            "--port",
            &port.to_string(),
            "--data-dir",
            data_dir,
            "--configdb",
            &self.configdb,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(self.extra.iter().cloned());
        self.processes.push(Process::spawn_owned(&args, port));
        let client = self.client().await;
        let host = format!("127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let shards = client.database("config").collection::<Document>("shards");
            if shards
                .find_one(mongodb::bson::doc! {"host": &host})
                .await
                .ok()
                .flatten()
                .is_some()
            {
                return;
            }
            assert!(Instant::now() < deadline, "the shard did not re-register");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Declares a scenario (`async fn(&Client)`) as two tests: against the in-process cluster and
/// against config server, shards and router running as separate processes.
macro_rules! both_modes {
    ($($scenario:ident),* $(,)?) => {
        $(
            mod $scenario {
                #[tokio::test]
                async fn in_process() {
                    let cluster = $crate::harness::TestCluster::start().await;
                    super::$scenario(&cluster.client).await;
                    cluster.shutdown().await;
                }

                #[tokio::test]
                async fn separate_processes() {
                    let cluster = $crate::harness::ProcessCluster::start(2).await;
                    super::$scenario(&cluster.client().await).await;
                }
            }
        )*
    };
}
pub(crate) use both_modes;

/// Fails unless `checkMetadataConsistency` (cluster level, `checkIndexes` as given) reports
/// nothing; `what` says after what.
pub async fn assert_metadata_consistent(client: &Client, check_indexes: bool, what: &str) {
    let reply = client
        .database("admin")
        .run_command(
            mongodb::bson::doc! {"checkMetadataConsistency": 1, "checkIndexes": check_indexes},
        )
        .await
        .unwrap();
    let found = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert!(
        found.is_empty(),
        "inconsistent metadata after {what}: {found:?}"
    );
}

/// The shards' names, as `listShards` gives them.
/// The `config.databases` entry of `db` (which must exist).
pub async fn database_entry(client: &Client, db: &str) -> Document {
    client
        .database("config")
        .collection::<Document>("databases")
        .find_one(mongodb::bson::doc! {"_id": db})
        .await
        .unwrap()
        .unwrap()
}

/// The `config.collections` entry of `ns`, if it is sharded.
pub async fn collection_entry(client: &Client, ns: &str) -> Option<Document> {
    client
        .database("config")
        .collection::<Document>("collections")
        .find_one(mongodb::bson::doc! {"_id": ns})
        .await
        .unwrap()
}

pub async fn shard_names(client: &Client) -> Vec<String> {
    admin(client, mongodb::bson::doc! {"listShards": 1})
        .await
        .unwrap()
        .get_array("shards")
        .unwrap()
        .iter()
        .map(|s| s.as_document().unwrap().get_str("_id").unwrap().to_string())
        .collect()
}

/// Runs a command on the admin database.
pub async fn admin(client: &Client, command: Document) -> mongodb::error::Result<Document> {
    client.database("admin").run_command(command).await
}

/// Runs a command returning a cursor (`find`, `aggregate`) and follows it with `getMore`s to
/// its end, all in one session (a cursor is continued in the session that opened it); the
/// documents of every batch.
pub async fn cursor_documents(
    db: &mongodb::Database,
    command: Document,
) -> mongodb::error::Result<Vec<Document>> {
    let collection = command
        .values()
        .next()
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string();
    let mut session = db.client().start_session().await?;
    let reply = db.run_command(command).session(&mut session).await?;
    let batch = |reply: &Document, field: &str| -> (Vec<Document>, i64) {
        let cursor = reply.get_document("cursor").expect("a cursor reply");
        let docs = cursor
            .get_array(field)
            .expect("a batch")
            .iter()
            .map(|d| d.as_document().expect("documents").clone())
            .collect();
        (docs, cursor.get_i64("id").expect("a cursor id"))
    };
    let (mut docs, mut id) = batch(&reply, "firstBatch");
    while id != 0 {
        let more = db
            .run_command(
                mongodb::bson::doc! {"getMore": id, "collection": &collection, "batchSize": 4},
            )
            .session(&mut session)
            .await?;
        let (next, next_id) = batch(&more, "nextBatch");
        docs.extend(next);
        id = next_id;
    }
    Ok(docs)
}

/// A collection's `options`, as `listCollections` shows them.
pub async fn collection_options(db: &mongodb::Database, name: &str) -> Document {
    let infos = cursor_documents(
        db,
        mongodb::bson::doc! {"listCollections": 1, "filter": {"name": name}},
    )
    .await
    .unwrap();
    infos[0].get_document("options").unwrap().clone()
}

/// Every document of a collection, in `_id` order.
pub async fn all_by_id(coll: &mongodb::Collection<Document>) -> Vec<Document> {
    use futures::TryStreamExt;
    coll.find(mongodb::bson::doc! {})
        .sort(mongodb::bson::doc! {"_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

/// Every document of `coll` matching `filter`, in the server's order.
pub async fn find_all(coll: &mongodb::Collection<Document>, filter: Document) -> Vec<Document> {
    use futures::TryStreamExt;
    coll.find(filter)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

/// The `_id`s (int32) of the documents `filter` matches, ascending.
pub async fn sorted_ids(coll: &mongodb::Collection<Document>, filter: Document) -> Vec<i32> {
    let mut ids: Vec<i32> = find_all(coll, filter)
        .await
        .iter()
        .map(|d| d.get_i32("_id").unwrap())
        .collect();
    ids.sort_unstable();
    ids
}

/// The `config.shards` documents (`_id`, `host`, ...).
pub async fn shard_documents(client: &Client) -> Vec<Document> {
    let shards = client.database("config").collection::<Document>("shards");
    find_all(&shards, Document::new()).await
}

/// Splits `ns` at `middle` and moves the chunk holding `probes[i]` to the `i`-th shard, so
/// that its two chunks are on different shards (asserted).
pub async fn split_across_shards(
    client: &Client,
    ns: &str,
    middle: mongodb::bson::Document,
    probes: [mongodb::bson::Document; 2],
) {
    let admin = client.database("admin");
    admin
        .run_command(mongodb::bson::doc! {"split": ns, "middle": middle})
        .await
        .unwrap();
    let shards = shard_documents(client).await;
    for (shard, probe) in shards.iter().zip(probes) {
        // Moving a chunk to the shard that has it is a no-op.
        let _ = admin
            .run_command(mongodb::bson::doc! {
                "moveChunk": ns, "find": probe,
                "to": shard.get_str("_id").unwrap(), "_waitForDelete": true,
            })
            .await;
    }
    let chunks = client
        .database("config")
        .collection::<mongodb::bson::Document>("chunks");
    let pipeline = vec![mongodb::bson::doc! {"$group": {"_id": "$shard"}}];
    let owners = aggregate_documents(&chunks, pipeline).await;
    assert!(
        owners.len() >= 2,
        "the chunks are on both shards: {owners:?}"
    );
}

/// The host of the shard named `name`, as `config.shards` records it.
pub async fn shard_host(client: &Client, name: &str) -> String {
    client
        .database("config")
        .collection::<Document>("shards")
        .find_one(mongodb::bson::doc! {"_id": name})
        .await
        .unwrap()
        .unwrap()
        .get_str("host")
        .unwrap()
        .to_string()
}

/// xorshift64*: small, deterministic, good enough to pick test cases.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The documents an aggregation outputs.
pub async fn aggregate_documents(
    coll: &mongodb::Collection<Document>,
    pipeline: Vec<Document>,
) -> Vec<Document> {
    use futures::TryStreamExt;
    coll.aggregate(pipeline)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

/// The error code an aggregation fails with, whether at once or while its cursor is read.
pub async fn aggregate_error(
    coll: &mongodb::Collection<Document>,
    pipeline: Vec<Document>,
) -> Option<i32> {
    use futures::TryStreamExt;
    match coll.aggregate(pipeline).await {
        Ok(cursor) => match cursor.try_collect::<Vec<Document>>().await {
            Ok(docs) => panic!("expected an error, got {docs:?}"),
            Err(e) => error_code(&e),
        },
        Err(e) => error_code(&e),
    }
}

/// Which shard owns each shard key value `k` of a collection hashed on `k`.
pub async fn hashed_owners(
    client: &Client,
    ns: &str,
    values: impl Iterator<Item = i32>,
) -> Vec<(i32, String)> {
    let config = client.database("config");
    let entry = config
        .collection::<Document>("collections")
        .find_one(mongodb::bson::doc! {"_id": ns})
        .await
        .unwrap()
        .unwrap();
    let chunks: Vec<Document> = cursor_documents(
        &config,
        mongodb::bson::doc! {"find": "chunks", "filter": {"uuid": entry.get("uuid").unwrap().clone()}},
    )
    .await
    .unwrap();
    let bound = |d: &Document| match d.get("k").unwrap() {
        mongodb::bson::Bson::Int64(h) => Some(*h),
        mongodb::bson::Bson::MinKey => Some(i64::MIN),
        _ => None,
    };
    values
        .map(|k| {
            let hash =
                docgrid::document::hashed::hash_value(&mongodb::bson::Bson::Int32(k)).unwrap();
            let owner = chunks
                .iter()
                .find(|c| {
                    let min = bound(c.get_document("min").unwrap()).unwrap();
                    let max = bound(c.get_document("max").unwrap());
                    hash >= min && max.is_none_or(|m| hash < m)
                })
                .unwrap();
            (k, owner.get_str("shard").unwrap().to_string())
        })
        .collect()
}

/// Inserts `n` documents into `app.users`, shards it on `_id` and counts them back through
/// `client`: a request path through router, config server and shards.
pub async fn sharded_round_trip(client: &Client, n: i32) {
    let coll = client.database("app").collection::<Document>("users");
    coll.insert_many((0..n).map(|i| mongodb::bson::doc! {"_id": i}))
        .await
        .unwrap();
    admin(
        client,
        mongodb::bson::doc! {"shardCollection": "app.users", "key": {"_id": 1}},
    )
    .await
    .unwrap();
    assert_eq!(
        coll.count_documents(mongodb::bson::doc! {}).await.unwrap(),
        n as u64
    );
}

/// A self-signed certificate authority (`CN=docgrid test CA`) and its key, for tests' TLS
/// certificates.
pub fn certificate_authority() -> (rcgen::Certificate, rcgen::KeyPair) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "docgrid test CA");
    (ca.self_signed(&key).unwrap(), key)
}

/// Asserts that `client` cannot authenticate: a command in `db` fails with MongoDB's
/// "Authentication failed.".
pub async fn assert_authentication_fails(client: &Client, db: &str, command: Document) {
    let err = client.database(db).run_command(command).await.unwrap_err();
    assert!(err.to_string().contains("Authentication failed"), "{err}");
}

/// Asserts that `client` is authenticated as the cluster's `__system` user and may read.
pub async fn assert_system_member(client: &Client) {
    assert_eq!(
        authenticated_users(client).await,
        vec![mongodb::bson::doc! {"user": "__system", "db": "local"}]
    );
    client
        .database("app")
        .run_command(mongodb::bson::doc! {"find": "users", "limit": 1})
        .await
        .unwrap();
}

/// `connectionStatus`' `authInfo.authenticatedUsers` of a client's connection.
pub async fn authenticated_users(client: &Client) -> Vec<Document> {
    admin(client, mongodb::bson::doc! {"connectionStatus": 1})
        .await
        .unwrap()
        .get_document("authInfo")
        .unwrap()
        .get_array("authenticatedUsers")
        .unwrap()
        .iter()
        .map(|u| u.as_document().unwrap().clone())
        .collect()
}
