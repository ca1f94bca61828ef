//! What a process lets in: at most `net.maxIncomingConnections` connections (a connection
//! beyond is accepted and closed at once, as MongoDB does), and the limits every incoming
//! message is read under — the process's message memory budget and stall timeout.

use super::params::Parameters;
use crate::error::{MongoError, Result};
use crate::wire::{IngressLimits, MessageBudget};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

/// MongoDB's default `net.maxIncomingConnections`.
pub const DEFAULT_MAX_INCOMING_CONNECTIONS: usize = 1_000_000;

/// A process's admission state, shared by its listeners.
#[derive(Debug)]
pub struct Ingress {
    max_connections: usize,
    open: AtomicUsize,
    rejected: AtomicI64,
    pub limits: IngressLimits,
    /// TLS on this process's client connections (`--tlsMode`); `None`: plain only.
    pub tls: Option<Arc<super::tls::Tls>>,
}

/// A connection counted against the limit until it is dropped.
#[derive(Debug)]
pub struct Admission(Arc<Ingress>);

impl Drop for Admission {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Relaxed);
    }
}

impl Ingress {
    /// The admission of a process started with `--maxConns` (mongod refuses fewer than 5) and
    /// these startup parameters. As MongoDB does, the limit is lowered to 80% of the open file
    /// limit when that is smaller.
    pub fn new(max_incoming_connections: Option<usize>, params: &Parameters) -> Result<Arc<Self>> {
        let configured = max_incoming_connections.unwrap_or(DEFAULT_MAX_INCOMING_CONNECTIONS);
        if configured < 5 {
            return Err(MongoError::bad_value("maxConns has to be at least 5"));
        }
        let supported = open_file_limit().map_or(configured, |files| configured.min(files * 4 / 5));
        if supported < configured && configured != DEFAULT_MAX_INCOMING_CONNECTIONS {
            tracing::info!(limit = supported, " --maxConns too high");
        }
        let budget = params
            .get_i64("ingressMessageMemoryLimitBytes")
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or_else(default_message_memory_limit);
        let stall = params
            .get_i64("ingressMessageStallTimeoutMillis")
            .and_then(|ms| u64::try_from(ms).ok())
            .unwrap_or(DEFAULT_STALL_TIMEOUT_MS as u64);
        Ok(Arc::new(Ingress {
            max_connections: supported,
            open: AtomicUsize::new(0),
            rejected: AtomicI64::new(0),
            limits: IngressLimits {
                budget: MessageBudget::new(budget),
                stall_timeout: Duration::from_millis(stall),
            },
            tls: None,
        }))
    }

    /// [`new`](Self::new) with TLS on the connections it admits.
    pub fn with_tls(
        max_incoming_connections: Option<usize>,
        params: &Parameters,
        tls: Option<Arc<super::tls::Tls>>,
    ) -> Result<Arc<Self>> {
        let mut ingress = Self::new(max_incoming_connections, params)?;
        Arc::get_mut(&mut ingress).expect("just made").tls = tls;
        Ok(ingress)
    }

    /// Counts a new connection in, or refuses it when the limit is reached.
    pub fn admit(self: &Arc<Self>) -> Option<Admission> {
        let admitted = self
            .open
            .fetch_update(Relaxed, Relaxed, |open| {
                (open < self.max_connections).then_some(open + 1)
            })
            .is_ok();
        if !admitted {
            self.rejected.fetch_add(1, Relaxed);
            return None;
        }
        Some(Admission(Arc::clone(self)))
    }

    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    pub fn open(&self) -> usize {
        self.open.load(Relaxed)
    }

    pub fn rejected(&self) -> i64 {
        self.rejected.load(Relaxed)
    }
}

/// How long a message may go without progress before its connection is closed.
pub const DEFAULT_STALL_TIMEOUT_MS: i64 = 60_000;

/// The default message memory budget: a quarter of the machine's memory, at least 256 MiB
/// and at most 4 GiB (1 GiB when the memory size is unknown).
pub fn default_message_memory_limit() -> usize {
    const MIB: u64 = 1024 * 1024;
    let bytes =
        physical_memory().map_or(1024 * MIB, |total| (total / 4).clamp(256 * MIB, 4096 * MIB));
    bytes as usize
}

/// The smallest budget allowed: one largest message and what it may decompress to.
pub const MIN_MESSAGE_MEMORY_LIMIT: i64 = 2 * crate::wire::MAX_MESSAGE_SIZE as i64;

fn physical_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// The soft limit on open files (`ulimit -n`), from /proc/self/limits.
fn open_file_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_beyond_the_limit_are_refused_and_counted() {
        let ingress = Ingress::new(Some(5), &Parameters::new()).unwrap();
        let admitted: Vec<Admission> = (0..5).map(|_| ingress.admit().unwrap()).collect();
        assert!(ingress.admit().is_none());
        assert_eq!(ingress.rejected(), 1);
        assert_eq!(ingress.open(), 5);
        drop(admitted);
        assert_eq!(ingress.open(), 0);
        assert!(ingress.admit().is_some());
        assert_eq!(
            Ingress::new(Some(4), &Parameters::new())
                .unwrap_err()
                .message(),
            "maxConns has to be at least 5"
        );
    }

    #[test]
    fn the_default_budget_is_a_bounded_share_of_memory() {
        let limit = default_message_memory_limit();
        assert!((256 << 20..=4096 << 20).contains(&limit));
        assert!(limit as i64 >= MIN_MESSAGE_MEMORY_LIMIT);
    }
}
