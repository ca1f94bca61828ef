//! Profiling aid for the point read (BENCHMARKS.md, "Point-read profile"): the mean cost of a
//! `find_one({_id})` at each layer of a `dev` cluster, without the driver or TCP — `router`
//! (its dispatcher, routing and the in-process call to the shard), `shard` (the shard's
//! dispatcher and find), `storage` (a reader and the `_id` lookup), and `ping` (a shard's
//! dispatcher alone). `LAYERS=router,storage` picks layers, `OPS` and `ROUNDS` the sizes; run
//! under `perf stat` / `perf record` for CPU time and context switches per operation:
//!
//! ```text
//! cargo build --release --example point_read_layers
//! LAYERS=router OPS=40000 perf stat -e task-clock,context-switches \
//!     target/release/examples/point_read_layers
//! ```

use bson::{Bson, doc, rawdoc};
use docgrid::command::CommandRequest;
use docgrid::configsvr::ConfigState;
use docgrid::datanode::storage::DocumentReads;
use docgrid::router::RouterState;
use docgrid::rpc::Connector;
use docgrid::server::logbuf::LogBuffer;
use docgrid::server::{CmdLine, Dispatcher, Node, Parameters, RequestContext, Role, Service};
use docgrid::shard::ShardState;
use std::sync::Arc;
use std::time::Instant;

fn node(role: Role) -> Node {
    Node::new(
        role,
        CmdLine::default(),
        Parameters::new(),
        Arc::new(LogBuffer::default()),
    )
}

fn find_one(id: i64, lsid: &bson::Binary) -> bson::RawDocumentBuf {
    rawdoc! {"find": "items", "filter": {"_id": id}, "limit": 1_i64, "singleBatch": true,
    "lsid": {"id": lsid.clone()}, "$db": "bench"}
}

#[tokio::main]
async fn main() {
    // Measured from a runtime worker, as a server's connection task runs.
    tokio::spawn(run()).await.unwrap();
}

async fn run() {
    let n: i64 = 2000;
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (ops, rounds) = (env("OPS", 20_000), env("ROUNDS", 3));
    let dir = tempfile::tempdir().unwrap();
    let config_node = node(Role::ConfigServer);
    config_node.set_host("inproc:config");
    let connector = Connector::new();
    let config = ConfigState::open(config_node, &dir.path().join("config"), connector.clone())
        .await
        .unwrap();
    let config_service: Arc<dyn Service> = Arc::new(Dispatcher::new(config));
    connector.register_local("inproc:config", config_service.clone());
    let config_client = connector.client("inproc:config");
    let mut shards = Vec::new();
    let mut stores = Vec::new();
    for i in 0..2 {
        let name = format!("shard{i}");
        let host = format!("inproc:{name}");
        let node = node(Role::Shard);
        node.set_host(&host);
        let shard = ShardState::open(node, &dir.path().join(&name), connector.clone())
            .await
            .unwrap();
        stores.push(shard.storage_arc().clone());
        let service: Arc<dyn Service> = Arc::new(Dispatcher::new(shard));
        connector.register_local(&host, service.clone());
        shards.push(service);
        config_client
            .run_doc("admin", doc! {"_configsvrAddShard": &host, "name": &name})
            .await
            .unwrap();
    }
    let router = RouterState::new(node(Role::Router), connector.clone(), "inproc:config");
    let router: Arc<dyn Service> = Arc::new(Dispatcher::new(router));
    let ctx = RequestContext::internal();
    let docs: Vec<bson::Document> = (0..n)
        .map(|i| doc! {"_id": i, "k": i, "name": "x".repeat(40), "qty": i % 1000, "price": 1.5, "tag": "t"})
        .collect();
    let insert = CommandRequest::from_document(
        "bench",
        &doc! {"insert": "items", "documents": docs, "$db": "bench"},
    )
    .unwrap();
    let reply = router.execute(&ctx, insert).await;
    println!("insert: {:?}", reply.to_document().unwrap().get("n"));
    let lsid = bson::Binary {
        subtype: bson::spec::BinarySubtype::Uuid,
        bytes: vec![7; 16],
    };
    // Which shard is the primary: the one answering a direct find with a document.
    let mut primary = None;
    for (i, s) in shards.iter().enumerate() {
        let r = s
            .execute(
                &ctx,
                CommandRequest::new("bench", find_one(5, &lsid)).unwrap(),
            )
            .await;
        let d = r.to_document().unwrap();
        let got = d
            .get_document("cursor")
            .ok()
            .and_then(|c| c.get_array("firstBatch").ok())
            .map(|b| b.len());
        if got == Some(1) {
            primary = Some(i);
        }
    }
    let primary = primary.expect("a shard holds the collection");
    let shard = shards[primary].clone();
    let (store, coll) = stores[primary].collection("bench", "items").await.unwrap();

    let layers = std::env::var("LAYERS").unwrap_or_else(|_| "router,shard,storage,ping".into());
    for round in 0..rounds {
        let mut line = format!("round {round}:");
        for layer in layers.split(',') {
            let t = Instant::now();
            for i in 0..ops {
                let id = (i as i64 * 7919) % n;
                match layer {
                    "router" | "shard" => {
                        let service = if layer == "router" { &router } else { &shard };
                        let request = CommandRequest::new("bench", find_one(id, &lsid)).unwrap();
                        let reply = service.execute(&ctx, request).await;
                        assert!(reply.as_bytes().len() > 100, "{reply:?}");
                    }
                    "storage" => {
                        let mut read = store.read().await.unwrap();
                        let found = read.fetch_by_id(&coll, &Bson::Int64(id)).await.unwrap();
                        assert!(found.is_some());
                    }
                    "ping" => {
                        let request =
                            CommandRequest::new("admin", rawdoc! {"ping": 1, "$db": "admin"})
                                .unwrap();
                        assert!(!shard.execute(&ctx, request).await.as_bytes().is_empty());
                    }
                    other => panic!("unknown layer {other}"),
                }
            }
            let us = t.elapsed().as_secs_f64() * 1e6 / ops as f64;
            line.push_str(&format!(" {layer} {us:.1} µs"));
        }
        println!("{line}");
    }
}
