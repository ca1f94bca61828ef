//! Target `dispatch`: the whole cluster as `docgrid dev` assembles it — a config server and
//! two shards on SQLite in a temporary directory and a router, calling each other in-process
//! — executing the input as a client's command through the router's `Service::execute` (no
//! TCP). The input's `$fuzzDocs`, when present, are inserted into the command's collection
//! first, so reads and updates meet documents. The cluster lives across inputs; every
//! `RESET_EVERY` inputs its user databases are dropped so that it does not grow without end.

use super::command;
use bson::{Bson, RawBsonRef, RawDocumentBuf, doc, rawdoc};
use docgrid::command::CommandRequest;
use docgrid::configsvr::ConfigState;
use docgrid::router::RouterState;
use docgrid::rpc::Connector;
use docgrid::server::logbuf::LogBuffer;
use docgrid::server::{CmdLine, Dispatcher, Node, Parameters, RequestContext, Role, Service};
use docgrid::shard::ShardState;
use docgrid::wire::OpMsg;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

const RESET_EVERY: u64 = 2_000;
const SHARDS: usize = 2;
/// A command still running after this long is a finding (libFuzzer's `-timeout` is shorter;
/// this bounds the short run in `cargo test`).
const HANG: std::time::Duration = std::time::Duration::from_secs(30);

struct Cluster {
    runtime: tokio::runtime::Runtime,
    router: Arc<dyn Service>,
    peer: std::net::SocketAddr,
    inputs: AtomicU64,
    _dir: tempfile::TempDir,
}

fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| start().expect("the in-process cluster starts"))
}

fn node(role: Role, host: &str) -> Node {
    let node = Node::new(
        role,
        CmdLine::default(),
        Parameters::new(),
        Arc::new(LogBuffer::default()),
    );
    node.set_host(host);
    node
}

/// What `cluster::start_dev` assembles, without the listener.
fn start() -> Result<Cluster, Box<dyn std::error::Error>> {
    // The runtime `src/main.rs` builds, with its workers' stack.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(docgrid::depth::THREAD_STACK_SIZE)
        .enable_all()
        .on_thread_start(|| {
            if let Some(start) = super::super::THREAD_START.get() {
                start();
            }
        })
        .build()?;
    let dir = tempfile::tempdir()?;
    let router = runtime.block_on(async {
        let connector = Connector::new();
        let config_host = "inproc:config";
        let config = ConfigState::open(
            node(Role::ConfigServer, config_host),
            &dir.path().join("config"),
            connector.clone(),
        )
        .await?;
        connector.register_local(config_host, Arc::new(Dispatcher::new(config)));
        let config_client = connector.client(config_host);
        for i in 0..SHARDS {
            let name = format!("shard{i}");
            let host = format!("inproc:{name}");
            let shard = ShardState::open(
                node(Role::Shard, &host),
                &dir.path().join(&name),
                connector.clone(),
            )
            .await?;
            connector.register_local(&host, Arc::new(Dispatcher::new(shard)));
            config_client
                .run_doc("admin", doc! {"_configsvrAddShard": &host, "name": &name})
                .await?;
        }
        let router = RouterState::new(node(Role::Router, "fuzz:27017"), connector, config_host);
        Ok::<_, docgrid::error::MongoError>(Arc::new(Dispatcher::new(router)) as Arc<dyn Service>)
    })?;
    Ok(Cluster {
        runtime,
        router,
        peer: "127.0.0.1:50000".parse()?,
        inputs: AtomicU64::new(0),
        _dir: dir,
    })
}

pub fn run(data: &[u8]) {
    let Some(cmd) = command(data) else {
        return;
    };
    let cluster = cluster();
    if cluster.inputs.fetch_add(1, Ordering::Relaxed) % RESET_EVERY == RESET_EVERY - 1 {
        reset(cluster);
    }
    // Each input is a new connection: a connection's state (its client metadata, set once)
    // must not decide how the next input is answered.
    let ctx = RequestContext::connection(Node::next_connection_id(), cluster.peer, None);
    if cmd.docs_given {
        insert_docs(cluster, &ctx, &cmd.body, &cmd.docs);
    }
    let Ok(request) = CommandRequest::from_op_msg(OpMsg::new(cmd.body)) else {
        return;
    };
    // On a runtime worker, as a connection's task runs the command in the server (with a
    // worker's stack, not the main thread's).
    let router = cluster.router.clone();
    let task = cluster
        .runtime
        .spawn(async move { router.execute(&ctx, request).await });
    match cluster
        .runtime
        .block_on(async { tokio::time::timeout(HANG, task).await })
    {
        Ok(Ok(_reply)) => {}
        // A panic outside the dispatcher's guard; the panic hook has reported it already.
        Ok(Err(e)) => std::panic::resume_unwind(e.into_panic()),
        Err(_) => panic!("a command ran for more than {HANG:?}"),
    }
}

/// Inserts the input's documents into the collection its command names (`$db` and the
/// command's string argument), as a client would have before.
fn insert_docs(
    cluster: &Cluster,
    ctx: &RequestContext,
    body: &RawDocumentBuf,
    docs: &[bson::Document],
) {
    let Ok(Some(RawBsonRef::String(db))) = body.get("$db") else {
        return;
    };
    let Some(Ok((_, RawBsonRef::String(coll)))) = body.iter().next() else {
        return;
    };
    let docs: Vec<Bson> = docs.iter().cloned().map(Bson::Document).collect();
    let Ok(insert) = RawDocumentBuf::from_document(
        &doc! {"insert": coll, "documents": docs, "ordered": false, "$db": db},
    ) else {
        return;
    };
    if let Ok(request) = CommandRequest::from_op_msg(OpMsg::new(insert)) {
        cluster
            .runtime
            .block_on(cluster.router.execute(ctx, request));
    }
}

/// Drops every user database.
fn reset(cluster: &Cluster) {
    let ctx = RequestContext::internal();
    let run = |body: RawDocumentBuf| {
        let request = CommandRequest::from_op_msg(OpMsg::new(body)).ok()?;
        let reply = cluster
            .runtime
            .block_on(cluster.router.execute(&ctx, request));
        reply.to_document().ok()
    };
    let Some(listed) = run(rawdoc! {"listDatabases": 1, "nameOnly": true, "$db": "admin"}) else {
        return;
    };
    for db in listed.get_array("databases").into_iter().flatten() {
        let Some(name) = db.as_document().and_then(|d| d.get_str("name").ok()) else {
            continue;
        };
        if !["admin", "config", "local"].contains(&name) {
            run(rawdoc! {"dropDatabase": 1, "$db": name});
        }
    }
}
