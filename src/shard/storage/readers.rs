//! The read-only connections of one database file. sqlx's pool pings a connection on every
//! release (a round trip to the connection's thread from a task it spawns), which on a point
//! read costs as much as the read; a reader here goes back to the idle list as it is dropped.
//! That is safe because readers never open a transaction, and a statement abandoned mid-way (a
//! cancelled command) is finished and reset by the connection's thread before it runs the next
//! one.

use super::sql_error;
use crate::error::Result;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{Connection, SqliteConnection};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Readers of one file: at most `max` open at once, opened when first needed, closed after
/// `idle_timeout` unused.
pub(super) struct Readers {
    inner: Arc<Inner>,
}

struct Inner {
    options: SqliteConnectOptions,
    permits: Arc<Semaphore>,
    idle: Mutex<Vec<(SqliteConnection, Instant)>>,
    idle_timeout: Duration,
    closed: AtomicBool,
}

/// A reader in use; back to the idle list when dropped.
pub struct Reader {
    conn: Option<SqliteConnection>,
    inner: Arc<Inner>,
    _permit: OwnedSemaphorePermit,
}

impl Readers {
    pub(super) fn new(options: SqliteConnectOptions, max: usize, idle_timeout: Duration) -> Self {
        let inner = Arc::new(Inner {
            options: options.read_only(true),
            permits: Arc::new(Semaphore::new(max)),
            idle: Mutex::new(Vec::new()),
            idle_timeout,
            closed: AtomicBool::new(false),
        });
        spawn_idle_reaper(Arc::downgrade(&inner));
        Readers { inner }
    }

    /// An idle reader, or a new one while fewer than `max` are open; otherwise waits for one.
    pub(super) async fn acquire(&self) -> Result<Reader> {
        let permit = self
            .inner
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| crate::error::MongoError::internal("the database is closed"))?;
        let idle = self.inner.idle.lock().expect("poisoned").pop();
        let conn = match idle {
            Some((conn, _)) => conn,
            None => SqliteConnection::connect_with(&self.inner.options)
                .await
                .map_err(|e| sql_error("opening a reader", e))?,
        };
        Ok(Reader {
            conn: Some(conn),
            inner: self.inner.clone(),
            _permit: permit,
        })
    }

    /// Closes the idle readers and refuses new ones; readers in use close when dropped.
    pub(super) async fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        self.inner.permits.close();
        let idle = std::mem::take(&mut *self.inner.idle.lock().expect("poisoned"));
        for (conn, _) in idle {
            let _ = conn.close().await;
        }
    }
}

impl Inner {
    /// The idle readers unused for longer than the idle timeout, taken out of the list.
    fn take_expired(&self) -> Vec<SqliteConnection> {
        let mut idle = self.idle.lock().expect("poisoned");
        let (expired, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut *idle)
            .into_iter()
            .partition(|(_, since)| since.elapsed() >= self.idle_timeout);
        *idle = kept;
        expired.into_iter().map(|(conn, _)| conn).collect()
    }
}

/// Closes readers idle past the timeout, until the readers are dropped.
fn spawn_idle_reaper(inner: Weak<Inner>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        loop {
            let period = match inner.upgrade() {
                Some(inner) => inner.idle_timeout / 2,
                None => return,
            };
            tokio::time::sleep(period.max(Duration::from_millis(10))).await;
            let Some(inner) = inner.upgrade() else { return };
            for conn in inner.take_expired() {
                let _ = conn.close().await;
            }
        }
    });
}

impl Deref for Reader {
    type Target = SqliteConnection;
    fn deref(&self) -> &SqliteConnection {
        self.conn.as_ref().expect("present until dropped")
    }
}

impl DerefMut for Reader {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        self.conn.as_mut().expect("present until dropped")
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        if !self.inner.closed.load(Ordering::SeqCst) {
            self.inner
                .idle
                .lock()
                .expect("poisoned")
                .push((conn, Instant::now()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::Executor;

    fn options(dir: &std::path::Path) -> SqliteConnectOptions {
        SqliteConnectOptions::new()
            .filename(dir.join("r.sqlite"))
            .create_if_missing(true)
    }

    async fn create(dir: &std::path::Path) {
        let mut conn = SqliteConnection::connect_with(&options(dir)).await.unwrap();
        conn.execute("CREATE TABLE t (a)").await.unwrap();
        conn.close().await.unwrap();
    }

    #[tokio::test]
    async fn a_dropped_reader_is_reused_and_at_most_max_are_open() {
        let dir = tempfile::tempdir().unwrap();
        create(dir.path()).await;
        let readers = Readers::new(options(dir.path()), 2, Duration::from_secs(60));
        let a = readers.acquire().await.unwrap();
        let _b = readers.acquire().await.unwrap();
        let third = tokio::time::timeout(Duration::from_millis(50), readers.acquire()).await;
        assert!(third.is_err(), "a third reader must wait");
        drop(a);
        let mut c = readers.acquire().await.unwrap();
        assert_eq!(readers.inner.idle.lock().unwrap().len(), 0);
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM t")
            .fetch_one(&mut *c)
            .await
            .unwrap();
        assert_eq!(n, 0);
        drop(c);
        assert_eq!(readers.inner.idle.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn readers_are_read_only_and_closed_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        create(dir.path()).await;
        let readers = Readers::new(options(dir.path()), 2, Duration::from_secs(60));
        let mut r = readers.acquire().await.unwrap();
        assert!(r.execute("INSERT INTO t VALUES (1)").await.is_err());
        drop(r);
        readers.close().await;
        assert!(readers.acquire().await.is_err());
        assert_eq!(readers.inner.idle.lock().unwrap().len(), 0);
    }

    #[tokio::test]
    async fn idle_readers_close_after_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        create(dir.path()).await;
        let readers = Readers::new(options(dir.path()), 2, Duration::from_millis(20));
        drop(readers.acquire().await.unwrap());
        assert_eq!(readers.inner.idle.lock().unwrap().len(), 1);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !readers.inner.idle.lock().unwrap().is_empty() {
            assert!(
                Instant::now() < deadline,
                "the idle reader was never closed"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
