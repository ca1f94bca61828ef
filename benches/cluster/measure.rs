//! Timing: running an operation sequentially or from concurrent clients, latency percentiles,
//! and the random and zipfian key choices the workloads draw from.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one timed run did: operations, wall-clock time, and each operation's latency.
#[derive(Clone, Debug, Default)]
pub struct Timing {
    pub ops: usize,
    pub elapsed: Duration,
    pub latencies: Vec<Duration>,
}

impl Timing {
    pub fn per_second(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        sorted
            .get(((sorted.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or_default()
    }

    pub fn p50(&self) -> Duration {
        self.percentile(0.50)
    }

    pub fn p99(&self) -> Duration {
        self.percentile(0.99)
    }

    /// Appends the operations of `other`, run after these.
    pub fn add(&mut self, other: Timing) {
        self.ops += other.ops;
        self.elapsed += other.elapsed;
        self.latencies.extend(other.latencies);
    }

    /// One operation that took `elapsed` (a whole-collection aggregation, an `update_many`).
    pub fn single(elapsed: Duration) -> Timing {
        Timing {
            ops: 1,
            elapsed,
            latencies: vec![elapsed],
        }
    }
}

/// Runs `op(client, i)` for `i` in `0..ops`, split over `clients` concurrent tasks (client `c`
/// runs the `i` with `i % clients == c`, in order). Each call is one timed operation.
pub async fn run<F, Fut>(ops: usize, clients: usize, op: F) -> anyhow::Result<Timing>
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let clients = clients.max(1);
    let op = Arc::new(op);
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(clients);
    for client in 0..clients {
        let op = op.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(ops / clients + 1);
            for i in (client..ops).step_by(clients) {
                let t = Instant::now();
                op(client, i).await?;
                latencies.push(t.elapsed());
            }
            anyhow::Ok(latencies)
        }));
    }
    let mut latencies = Vec::with_capacity(ops);
    for task in tasks {
        latencies.extend(task.await??);
    }
    Ok(Timing {
        ops,
        elapsed: start.elapsed(),
        latencies,
    })
}

/// splitmix64: reproducible across runs, no dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// YCSB's scrambled zipfian key choice (constant 0.99, the algorithm of Gray et al., "Quickly
/// generating billion-record synthetic databases"): item ranks follow Zipf's law, and ranks are
/// hashed onto keys so that the hot keys are spread over the key space as in YCSB.
#[derive(Clone, Debug)]
pub struct Zipfian {
    items: usize,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

impl Zipfian {
    pub const THETA: f64 = 0.99;

    pub fn new(items: usize) -> Zipfian {
        let items = items.max(2);
        let theta = Self::THETA;
        let zeta = |n: usize| (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let zetan = zeta(items);
        let zeta2 = zeta(2);
        Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
        }
    }

    /// The rank (0 = most popular) of the next item.
    fn rank(&self, rng: &mut Rng) -> usize {
        let u = rng.unit();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        let r = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as usize;
        r.min(self.items - 1)
    }

    /// The next key in `0..items`.
    pub fn next(&self, rng: &mut Rng) -> usize {
        (fnv1a(self.rank(rng) as u64) % self.items as u64) as usize
    }
}

fn fnv1a(value: u64) -> u64 {
    let mut hash = 0xCBF2_9CE4_8422_2325u64;
    for byte in value.to_le_bytes() {
        hash ^= byte as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01B3);
    }
    hash
}

/// A workload and its ceiling over `ops` operations, each in two halves run alternately
/// (workload, ceiling, ceiling, workload) so that neither runs on a warmer cache; the resident
/// set is observed over the workload's first half. `reads(range, workload)` runs one half.
pub async fn alternated<F, Fut>(
    ops: usize,
    servers: &crate::rss::Servers,
    reads: F,
) -> anyhow::Result<((Timing, crate::rss::Rss), Timing)>
where
    F: Fn((usize, usize), bool) -> Fut,
    Fut: Future<Output = anyhow::Result<Timing>>,
{
    let half = ops / 2;
    let (first, rss) = servers.observe(reads((0, half), true)).await?;
    let mut ceiling = reads((0, half), false).await?;
    ceiling.add(reads((half, ops - half), false).await?);
    let mut measured = first;
    measured.add(reads((half, ops - half), true).await?);
    Ok(((measured, rss), ceiling))
}
