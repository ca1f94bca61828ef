//! Measuring aid for BENCHMARKS.md, "Expensive requests": sends one heavy request at a time
//! (100,000 projection fields, stages, `$in` values, `$or` branches, `$set` fields, ... ) with
//! the official driver to a running node given by `URI`, while a second client pings on its
//! own connection every 20 ms. Prints per request its time, its outcome (ok, or the error code)
//! and the slowest ping meanwhile; with `PID` set, the node's resident set (VmRSS) after the
//! request and its peak (VmHWM):
//!
//! ```text
//! cargo build --release --bin docgrid && cargo build --example expensive_requests
//! target/release/docgrid dev --port 27999 --data-dir /tmp/x &
//! URI=mongodb://127.0.0.1:27999 PID=$! target/debug/examples/expensive_requests
//! ```
//!
//! `ONLY=find_proj_incl,agg_stages` picks requests, `N` sets their size (100,000), `REPEAT`
//! how many times each is sent (1).

use bson::{Bson, Document, doc};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn fields(n: usize, prefix: &str, value: impl Fn(usize) -> Bson) -> Document {
    let mut d = Document::new();
    for i in 0..n {
        d.insert(format!("{prefix}f{i}"), value(i));
    }
    d
}

/// The requests, by name: `(database command, or None for the setup it needs)`.
fn request(name: &str, n: usize) -> Option<Document> {
    let coll = "docs";
    // The size of the long and the wide document.
    let m = n.min(500_000);
    Some(match name {
        "find_proj_incl" => doc! {"find": coll, "projection": fields(n, "", |_| Bson::Int32(1))},
        "find_proj_excl" => doc! {"find": coll, "projection": fields(n, "", |_| Bson::Int32(0))},
        "find_proj_dotted" => {
            doc! {"find": coll, "projection": fields(n, "a.", |_| Bson::Int32(1))}
        }
        "agg_project" => doc! {"aggregate": coll, "cursor": {},
        "pipeline": [{"$project": fields(n, "", |_| Bson::Int32(1))}]},
        "agg_stages" => doc! {"aggregate": coll, "cursor": {},
        "pipeline": (0..n).map(|_| Bson::Document(doc! {"$match": {"a": {"$gte": 0}}}))
            .collect::<Vec<_>>()},
        "agg_add_fields" => doc! {"aggregate": coll, "cursor": {},
        "pipeline": [{"$addFields": fields(n, "", |i| Bson::Int64(i as i64))}]},
        "find_in" => doc! {"find": coll,
        "filter": {"a": {"$in": (0..n as i64).map(Bson::Int64).collect::<Vec<_>>()}}},
        "find_or" => doc! {"find": coll,
        "filter": {"$or": (0..n as i64).map(|i| Bson::Document(doc! {"a": i}))
            .collect::<Vec<_>>()}},
        "update_set" => doc! {"update": coll,
        "updates": [{"q": {}, "u": {"$set": fields(n, "", |i| Bson::Int64(i as i64))},
            "multi": true}]},
        "find_in_indexed" => doc! {"find": "indexed",
        "filter": {"a": {"$in": (0..n as i64).map(Bson::Int64).collect::<Vec<_>>()}}},
        "find_or_indexed" => doc! {"find": "indexed",
        "filter": {"$or": (0..n as i64).map(|i| Bson::Document(doc! {"a": i}))
            .collect::<Vec<_>>()}},
        "find_in_sharded" => doc! {"find": "sharded",
        "filter": {"a": {"$in": (0..n as i64).map(Bson::Int64).collect::<Vec<_>>()}}},
        "find_or_sharded" => doc! {"find": "sharded",
        "filter": {"$or": (0..n as i64).map(|i| Bson::Document(doc! {"a": i}))
            .collect::<Vec<_>>()}},
        "find_proj_sharded" => {
            doc! {"find": "sharded", "projection": fields(n, "", |_| Bson::Int32(1))}
        }
        "agg_project_sharded" => doc! {"aggregate": "sharded", "cursor": {},
        "pipeline": [{"$project": fields(n, "", |_| Bson::Int32(1))}, {"$sort": {"a": 1}}]},
        "agg_let_vars" => doc! {"aggregate": coll, "cursor": {},
        "let": fields(n, "v", |i| Bson::Int64(i as i64)),
        "pipeline": [{"$project": fields(1000, "", |_| Bson::Document(
            doc! {"$let": {"vars": {"x": "$a"}, "in": {"$add": ["$$x", "$$vf7"]}}}))}]},
        "agg_nested_lookup" => {
            // `N` nested `$lookup` sub-pipelines (MongoDB allows 20), each over a collection of
            // one document (over more, the output would grow as their power).
            let mut stage = doc! {"$match": {}};
            for _ in 0..n {
                stage = doc! {"$lookup": {"from": "single", "as": "x", "pipeline": [stage]}};
            }
            doc! {"aggregate": coll, "cursor": {}, "pipeline": [stage, {"$limit": 1}]}
        }
        "find_sort" => doc! {"find": coll, "sort": fields(n.min(10_000), "", |_| Bson::Int32(1))},
        "find_big_array" => doc! {"find": "big", "filter": {"arr": (m as i64) - 1}},
        "update_big_array" => doc! {"update": "big",
        "updates": [{"q": {"_id": "array"}, "u": {"$push": {"arr": -1}}}]},
        "find_wide_doc" => doc! {"find": "big",
        "filter": {format!("f{}", n - 1): (n as i64) - 1},
        "projection": {format!("f{}", n / 2): 1}},
        "update_wide_doc" => doc! {"update": "big",
        "updates": [{"q": {"_id": "wide"}, "u": {"$set": {format!("f{}", n - 1): 0}}}]},
        _ => return None,
    })
}

const ALL: &[&str] = &[
    "find_proj_incl",
    "find_proj_excl",
    "find_proj_dotted",
    "agg_project",
    "agg_stages",
    "agg_add_fields",
    "find_in",
    "find_or",
    "update_set",
    "find_in_indexed",
    "find_or_indexed",
    "find_in_sharded",
    "find_or_sharded",
    "find_proj_sharded",
    "agg_project_sharded",
    "agg_let_vars",
    "find_sort",
    "find_big_array",
    "update_big_array",
    "find_wide_doc",
    "update_wide_doc",
];

fn rss_kb(pid: &str) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let uri = std::env::var("URI").unwrap_or_else(|_| "mongodb://127.0.0.1:27017".into());
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let repeat: usize = std::env::var("REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let pid = std::env::var("PID").ok();
    let only = std::env::var("ONLY").ok();
    let names: Vec<&str> = match &only {
        Some(list) => list.split(',').collect(),
        None => ALL.to_vec(),
    };
    let connect = || async {
        let mut options = mongodb::options::ClientOptions::parse(&uri).await?;
        options.direct_connection = Some(true);
        anyhow::Ok(mongodb::Client::with_options(options)?)
    };
    let client = connect().await?;
    let pinger = connect().await?;
    let db = client.database("stress");
    db.drop().await?;
    let docs: Vec<Document> = (0..100)
        .map(|i| doc! {"_id": i, "a": i, "b": format!("x{i}"), "f7": i, "a2": {"f1": i, "f2": i}})
        .collect();
    db.collection::<Document>("docs")
        .insert_many(docs.clone())
        .await?;
    db.collection::<Document>("indexed")
        .insert_many(docs.clone())
        .await?;
    db.run_command(
        doc! {"createIndexes": "indexed", "indexes": [{"key": {"a": 1}, "name": "a_1"}]},
    )
    .await?;
    db.collection::<Document>("single")
        .insert_one(doc! {"_id": 1})
        .await?;
    let admin = client.database("admin");
    // A router answers these; a shard reached directly refuses them (its requests then run on
    // an unsharded collection).
    let _ = admin
        .run_command(doc! {"shardCollection": "stress.sharded", "key": {"a": "hashed"}})
        .await;
    db.collection::<Document>("sharded")
        .insert_many(docs)
        .await?;
    // The long and the wide document stay within the 16 MB a document may have.
    let big = db.collection::<Document>("big");
    let m = n.min(500_000);
    big.insert_one(doc! {"_id": "array", "arr": (0..m as i64).collect::<Vec<_>>()})
        .await?;
    let mut wide = fields(m, "", |i| Bson::Int64(i as i64));
    wide.insert("_id", "wide");
    big.insert_one(wide).await?;
    pinger
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await?;
    println!("request\tms\toutcome\tslowest ping ms\tRSS MB\tpeak RSS MB");
    for name in names {
        let Some(command) = request(name, n) else {
            anyhow::bail!("no request {name}; known: {ALL:?}");
        };
        for _ in 0..repeat {
            let running = Arc::new(AtomicBool::new(true));
            let slowest = Arc::new(AtomicU64::new(0));
            let pings = {
                let (running, slowest, pinger) =
                    (Arc::clone(&running), Arc::clone(&slowest), pinger.clone());
                tokio::spawn(async move {
                    while running.load(Ordering::Relaxed) {
                        let t = Instant::now();
                        let _ = pinger.database("admin").run_command(doc! {"ping": 1}).await;
                        slowest.fetch_max(t.elapsed().as_millis() as u64, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                })
            };
            let started = Instant::now();
            let outcome = match db.run_command(command.clone()).await {
                Ok(reply) => match reply.get_array("writeErrors") {
                    Ok(errors) => format!("writeErrors {errors:?}"),
                    Err(_) => "ok".to_string(),
                },
                Err(e) => match e.kind.as_ref() {
                    mongodb::error::ErrorKind::Command(c) => {
                        format!("error {} {}: {:.80}", c.code, c.code_name, c.message)
                    }
                    other => format!("{other:.80}"),
                },
            };
            let ms = started.elapsed().as_millis();
            running.store(false, Ordering::Relaxed);
            pings.await?;
            let (rss, hwm) = pid.as_deref().map(rss_kb).unwrap_or((0, 0));
            println!(
                "{name}\t{ms}\t{outcome}\t{}\t{}\t{}",
                slowest.load(Ordering::Relaxed),
                rss / 1024,
                hwm / 1024
            );
        }
    }
    Ok(())
}
