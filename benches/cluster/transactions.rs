//! W12: what multi-document transactions cost and how they scale.
//! - W12a/W12b: a transfer (read two accounts, update both) run with `with_transaction` beside
//!   the same four operations without a transaction, alternated txn, plain, plain, txn in the
//!   same run; on an unsharded collection (one shard: a single-shard commit) and on one sharded
//!   across both shards by hashed `_id` (most transfers span both: a two-phase commit).
//! - W12c: clients running transfers on disjoint accounts of one shard, at 1, 4 and 16 clients
//!   (the 1-client throughput times the clients is the ceiling of perfect scaling), and the p99
//!   latency of plain updates run beside the 16 clients, with the p99 of the same updates run
//!   alone as its ceiling.

use crate::config::Config;
use crate::measure::{self, Rng, Timing};
use crate::report::{Ceiling, Outcome, Part};
use crate::rss::Servers;
use futures::FutureExt;
use mongodb::bson::{Document, doc};
use mongodb::{Client, ClientSession, Collection};
use std::sync::Arc;
use tokio::sync::Mutex;

/// Accounts per collection.
const ACCOUNTS: usize = 10_000;
/// Transfers each timed run makes (split over the clients).
const TRANSFERS: usize = 4_000;

type Accounts = Collection<Document>;

async fn accounts(client: &Client, name: &str, sharded: bool) -> anyhow::Result<Accounts> {
    let db = client.database("bench_w12");
    let coll = db.collection::<Document>(name);
    let _ = coll.drop().await;
    if sharded {
        client
            .database("admin")
            .run_command(
                doc! {"shardCollection": format!("bench_w12.{name}"), "key": {"_id": "hashed"}},
            )
            .await?;
    }
    let docs: Vec<Document> = (0..ACCOUNTS as i64)
        .map(|i| doc! {"_id": i, "balance": 1_000_i64})
        .collect();
    for chunk in docs.chunks(1000) {
        coll.insert_many(chunk.to_vec()).await?;
    }
    Ok(coll)
}

/// The two accounts the `i`-th transfer of client `c` moves money between, drawn from the
/// client's own `span` of accounts when `span` is given (disjoint clients), else from all.
fn pair(i: usize, c: usize, span: Option<usize>) -> (i64, i64) {
    let mut rng = Rng::new(i as u64 ^ 0x7A45_0000);
    let (base, n) = match span {
        Some(span) => (c * span, span),
        None => (0, ACCOUNTS),
    };
    let from = rng.below(n);
    let to = (from + 1 + rng.below(n - 1)) % n;
    ((base + from) as i64, (base + to) as i64)
}

/// The four operations of a transfer, in `session`'s transaction when it has one.
async fn transfer_ops(
    coll: &Accounts,
    session: &mut ClientSession,
    from: i64,
    to: i64,
) -> mongodb::error::Result<()> {
    for id in [from, to] {
        coll.find_one(doc! {"_id": id})
            .session(&mut *session)
            .await?;
    }
    coll.update_one(doc! {"_id": from}, doc! {"$inc": {"balance": -1}})
        .session(&mut *session)
        .await?;
    coll.update_one(doc! {"_id": to}, doc! {"$inc": {"balance": 1}})
        .session(&mut *session)
        .await?;
    Ok(())
}

/// `transfers` transfers from `clients` clients, each with a session of its own: in
/// `with_transaction` when `txn`, else as four plain operations.
async fn transfers(
    client: &Client,
    coll: &Accounts,
    transfers: usize,
    clients: usize,
    txn: bool,
    disjoint: bool,
) -> anyhow::Result<Timing> {
    let mut sessions = Vec::new();
    for _ in 0..clients {
        sessions.push(Mutex::new(client.start_session().await?));
    }
    let sessions = Arc::new(sessions);
    let span = disjoint.then_some(ACCOUNTS / clients.max(1));
    let coll = coll.clone();
    measure::run(transfers, clients, move |c, i| {
        let (sessions, coll) = (sessions.clone(), coll.clone());
        async move {
            let (from, to) = pair(i, c, span);
            let mut session = sessions[c].lock().await;
            if txn {
                session
                    .start_transaction()
                    .and_run((&coll, from, to), |s, (coll, from, to)| {
                        async move { transfer_ops(coll, s, *from, *to).await }.boxed()
                    })
                    .await?;
            } else {
                transfer_ops(&coll, &mut session, from, to).await?;
            }
            Ok(())
        }
    })
    .await
}

fn merged(mut a: Timing, b: Timing) -> Timing {
    a.add(b);
    a
}

/// W12a or W12b: transactions beside plain operations, alternated in the same run.
async fn cost(
    client: &Client,
    config: &Config,
    servers: &Servers,
    sharded: bool,
) -> anyhow::Result<Outcome> {
    let name = if sharded { "sharded" } else { "unsharded" };
    let coll = accounts(client, name, sharded).await?;
    let clients = config.clients.clamp(1, 16);
    let run = |txn| transfers(client, &coll, TRANSFERS, clients, txn, false);
    let (on1, _) = servers.observe(run(true)).await?;
    let (off1, _) = servers.observe(run(false)).await?;
    let (off2, _) = servers.observe(run(false)).await?;
    let (on2, rss) = servers.observe(run(true)).await?;
    let plain = merged(off1, off2);
    let (id, what) = if sharded {
        ("W12b", "with_transaction transfers across two shards (2PC)")
    } else {
        ("W12a", "with_transaction transfers on one shard")
    };
    Ok(
        Outcome::new(id, what, "dev", "transfers", (merged(on1, on2), rss))
            .ceiling(Ceiling::of(vec![(
                1.0,
                Part::new(
                    "the same four operations without a transaction",
                    &plain,
                    1.0,
                ),
            )]))
            .with("clients", clients.into()),
    )
}

/// Plain updates, one client, on accounts no transfer of W12c touches (the upper half).
async fn plain_updates(coll: &Accounts, ops: usize) -> anyhow::Result<Timing> {
    let coll = coll.clone();
    measure::run(ops, 1, move |_, i| {
        let coll = coll.clone();
        async move {
            let id = (ACCOUNTS / 2 + i % (ACCOUNTS / 2)) as i64;
            coll.update_one(doc! {"_id": id}, doc! {"$inc": {"balance": 0}})
                .await?;
            Ok(())
        }
    })
    .await
}

/// W12c: scaling over clients on disjoint accounts, and plain writes' p99 beside 16 clients.
async fn scaling(client: &Client, servers: &Servers) -> anyhow::Result<Vec<Outcome>> {
    let coll = accounts(client, "scaling", false).await?;
    // Transfers use the lower half; plain updates the upper half.
    let lower = |clients: usize| {
        let coll = coll.clone();
        let client = client.clone();
        async move {
            let per = ACCOUNTS / 2 / clients;
            let mut sessions = Vec::new();
            for _ in 0..clients {
                sessions.push(Mutex::new(client.start_session().await?));
            }
            let sessions = Arc::new(sessions);
            measure::run(TRANSFERS, clients, move |c, i| {
                let (sessions, coll) = (sessions.clone(), coll.clone());
                async move {
                    let (from, to) = pair(i, c, Some(per));
                    let mut session = sessions[c].lock().await;
                    session
                        .start_transaction()
                        .and_run((&coll, from, to), |s, (coll, from, to)| {
                            async move { transfer_ops(coll, s, *from, *to).await }.boxed()
                        })
                        .await?;
                    Ok(())
                }
            })
            .await
        }
    };
    let mut out = Vec::new();
    let (one, _) = servers.observe(lower(1)).await?;
    for clients in [1usize, 4, 16] {
        let (timing, rss) = if clients == 1 {
            (
                one.clone(),
                servers.observe(async { Ok(Timing::default()) }).await?.1,
            )
        } else {
            servers.observe(lower(clients)).await?
        };
        let ideal = Timing {
            ops: one.ops * clients,
            elapsed: one.elapsed,
            latencies: one.latencies.clone(),
        };
        out.push(
            Outcome::new(
                "W12c",
                &format!("transactions on disjoint accounts, {clients} clients"),
                "dev",
                "transfers",
                (timing, rss),
            )
            .ceiling(Ceiling::of(vec![(
                1.0,
                Part::new("1 client's throughput × clients", &ideal, 1.0),
            )]))
            .with("clients", clients.into()),
        );
    }
    let alone = plain_updates(&coll, 2_000).await?;
    let busy = lower(16);
    let beside = plain_updates(&coll, 2_000);
    let ((_, beside), rss) = servers
        .observe(async { futures::try_join!(busy, beside) })
        .await?;
    out.push(
        Outcome::new(
            "W12c",
            "plain updates beside 16 transaction clients",
            "dev",
            "ops",
            (beside.clone(), rss),
        )
        .ceiling(Ceiling::of(vec![(
            1.0,
            Part::new("the same updates alone", &alone, 1.0),
        )]))
        .with(
            "p99_beside_ms",
            (beside.p99().as_secs_f64() * 1000.0).into(),
        )
        .with("p99_alone_ms", (alone.p99().as_secs_f64() * 1000.0).into()),
    );
    Ok(out)
}

pub async fn run(
    client: &Client,
    config: &Config,
    servers: &Servers,
) -> anyhow::Result<Vec<Outcome>> {
    let mut out = vec![
        cost(client, config, servers, false).await?,
        cost(client, config, servers, true).await?,
    ];
    out.extend(scaling(client, servers).await?);
    Ok(out)
}
