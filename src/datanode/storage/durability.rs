//! `j: true` durability: fsync of the write-ahead log, group-committed so that concurrent
//! writers waiting for durability share one fsync.

use crate::error::{MongoError, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Orders commits and tracks which of them are known to be on disk.
pub(super) struct Durability {
    wal: PathBuf,
    committed: AtomicU64,
    synced: AtomicU64,
    sync_lock: tokio::sync::Mutex<()>,
    fsyncs: AtomicU64,
}

impl Durability {
    pub fn new(db_path: &Path) -> Self {
        Durability {
            wal: db_path.with_extension("sqlite-wal"),
            committed: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            sync_lock: tokio::sync::Mutex::new(()),
            fsyncs: AtomicU64::new(0),
        }
    }

    /// Called by the writer after each commit; the returned sequence number names the commit.
    pub fn committed(&self) -> u64 {
        self.committed.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Returns once commit `seq` is on disk. Waiters queue on one lock; whoever holds it syncs
    /// everything committed so far, so the others usually find their commit already covered.
    pub async fn wait_durable(&self, seq: u64) -> Result<()> {
        if self.synced.load(Ordering::SeqCst) >= seq {
            return Ok(());
        }
        let _guard = self.sync_lock.lock().await;
        if self.synced.load(Ordering::SeqCst) >= seq {
            return Ok(());
        }
        let target = self.committed.load(Ordering::SeqCst);
        let wal = self.wal.clone();
        tokio::task::spawn_blocking(move || sync_file(&wal))
            .await
            .map_err(|e| MongoError::internal(format!("fsync task failed: {e}")))??;
        self.synced.fetch_max(target, Ordering::SeqCst);
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

impl Durability {
    /// How many fsyncs durability waits have cost so far.
    pub fn fsyncs(&self) -> u64 {
        self.fsyncs.load(Ordering::Relaxed)
    }
}

/// fsync applies to the file, not the descriptor: syncing a fresh descriptor flushes what
/// SQLite's own connection wrote. A missing WAL means everything was checkpointed already.
fn sync_file(path: &Path) -> Result<()> {
    match std::fs::File::open(path) {
        Ok(file) => file
            .sync_data()
            .map_err(|e| MongoError::internal(format!("fsync of {} failed: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(MongoError::internal(format!(
            "cannot open {} for fsync: {e}",
            path.display()
        ))),
    }
}
