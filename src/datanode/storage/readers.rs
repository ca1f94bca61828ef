//! The read-only connections of one database file, which run their statements synchronously
//! on the calling thread. sqlx runs every statement on a thread of its own per connection, so
//! a point read there costs two thread wake-ups (the statement there, the rows back) besides
//! the read itself, and its pool pinged every connection it took back; on this path those
//! wake-ups cost more than the read. A statement that may return many rows runs under
//! `block_in_place`, so a long scan does not hold up the other tasks of the runtime thread.

use super::database::{BUSY_TIMEOUT, CONNECTION_PRAGMAS, READER_MMAP_SIZE, STATEMENT_CACHE};
use super::read_sql::{Param, ReadQuery, ResultRow, column_error};
use crate::error::{MongoError, Result};
use rusqlite::types::{ToSql, ToSqlOutput, ValueRef};
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Statements expected to return at most this many rows run inline: a point read takes a few
/// microseconds and a find's first batch (101 documents) some tens, less than handing the
/// runtime thread's other tasks to another thread would cost.
const INLINE_ROWS: i64 = 128;

/// Readers of one file: at most `max` open at once, opened when first needed, closed after
/// `idle_timeout` unused.
pub(super) struct Readers {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    permits: Arc<Semaphore>,
    idle: Mutex<Vec<(Connection, Instant)>>,
    idle_timeout: Duration,
    closed: AtomicBool,
}

/// A reader in use; back to the idle list when dropped.
pub struct Reader {
    conn: Option<Connection>,
    inner: Arc<Inner>,
    _permit: OwnedSemaphorePermit,
    /// A read transaction is open on the connection (a transaction's pinned snapshot): it is
    /// rolled back before the connection goes back to the idle list.
    pinned: bool,
}

impl Readers {
    pub(super) fn new(path: &Path, max: usize, idle_timeout: Duration) -> Self {
        let inner = Arc::new(Inner {
            path: path.to_path_buf(),
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
            .map_err(|_| MongoError::internal("the database is closed"))?;
        let idle = self.inner.idle.lock().expect("poisoned").pop();
        let conn = match idle {
            Some((conn, _)) => conn,
            None => open(&self.inner.path).map_err(|e| sqlite_error("opening a reader", e))?,
        };
        Ok(Reader {
            conn: Some(conn),
            inner: self.inner.clone(),
            _permit: permit,
            pinned: false,
        })
    }

    /// Closes the idle readers and refuses new ones; readers in use close when dropped.
    pub(super) async fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        self.inner.permits.close();
        let idle = std::mem::take(&mut *self.inner.idle.lock().expect("poisoned"));
        drop(idle);
    }
}

/// A read-only connection with the settings of the database's writer.
fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    for (name, value) in CONNECTION_PRAGMAS {
        conn.execute_batch(&format!("PRAGMA {name} = {value}"))?;
    }
    conn.execute_batch(&format!("PRAGMA mmap_size = {READER_MMAP_SIZE}"))?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // See `database::stable_plans`: otherwise every statement with `LIMIT ?` is compiled
    // again each time it runs.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(conn)
}

fn sqlite_error(context: &str, e: rusqlite::Error) -> MongoError {
    MongoError::internal(format!("storage error while {context}: {e}"))
}

impl Inner {
    /// The idle readers unused for longer than the idle timeout, taken out of the list.
    fn take_expired(&self) -> Vec<Connection> {
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
                Some(inner) => inner.idle_timeout / 6,
                None => return,
            };
            tokio::time::sleep(period.max(Duration::from_millis(10))).await;
            let Some(inner) = inner.upgrade() else { return };
            drop(inner.take_expired());
        }
    });
}

impl Reader {
    /// Runs a read statement and decodes its rows; `expected_rows` (the statement's limit)
    /// decides whether it runs inline or under `block_in_place`. Either way the task then
    /// gives the runtime a turn — after every long statement, after many short ones (tokio's
    /// budget) — since a statement never awaits: without it a scan would run to its end before
    /// its deadline (`maxTimeMS`), a `killOp` or the other tasks of its thread got a look in.
    pub(super) async fn query<T>(
        &mut self,
        q: ReadQuery<'_>,
        expected_rows: i64,
        context: &str,
        decode: fn(&dyn ResultRow) -> Result<T>,
    ) -> Result<Vec<T>> {
        let rows = self.query_now(q, expected_rows, context, decode);
        if expected_rows > INLINE_ROWS {
            tokio::task::yield_now().await;
        } else {
            tokio::task::consume_budget().await;
        }
        rows
    }

    fn query_now<T>(
        &mut self,
        q: ReadQuery<'_>,
        expected_rows: i64,
        context: &str,
        decode: fn(&dyn ResultRow) -> Result<T>,
    ) -> Result<Vec<T>> {
        let conn = self.conn.as_ref().expect("present until dropped");
        let run = || {
            let mut stmt = conn
                .prepare_cached(&q.sql)
                .map_err(|e| sqlite_error(context, e))?;
            let mut rows = stmt
                .query(rusqlite::params_from_iter(q.params.iter()))
                .map_err(|e| sqlite_error(context, e))?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().map_err(|e| sqlite_error(context, e))? {
                out.push(decode(row)?);
            }
            Ok(out)
        };
        if expected_rows > INLINE_ROWS {
            blocking(run)
        } else {
            run()
        }
    }
}

impl Reader {
    /// Opens a read transaction and runs `first` in it: SQLite fixes a WAL snapshot at a read
    /// transaction's first read, so every later statement on this reader sees the database as
    /// of now, until the reader is dropped (which rolls the transaction back).
    pub(super) fn pin<T>(
        &mut self,
        first: ReadQuery<'_>,
        decode: fn(&dyn ResultRow) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.hold_snapshot()?;
        self.query_now(first, 1, "pinning a snapshot", decode)
    }

    /// Opens a read transaction unless one is open: the statements from the next on share
    /// one WAL snapshot, and so take SQLite's read lock once rather than each its own.
    pub(super) fn hold_snapshot(&mut self) -> Result<()> {
        if !self.pinned {
            let conn = self.conn.as_ref().expect("present until dropped");
            conn.execute_batch("BEGIN")
                .map_err(|e| sqlite_error("pinning a snapshot", e))?;
            self.pinned = true;
        }
        Ok(())
    }
}

impl super::read_sql::DocumentReads for Reader {
    async fn run<T>(
        &mut self,
        q: ReadQuery<'_>,
        expected_rows: i64,
        context: &str,
        decode: fn(&dyn ResultRow) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.query(q, expected_rows, context, decode).await
    }
}

/// Runs long synchronous work (a statement of many rows, file IO) on this thread under
/// `block_in_place`, so the runtime moves this thread's other tasks elsewhere meanwhile.
pub(super) fn blocking<T>(work: impl FnOnce() -> T) -> T {
    // `block_in_place` panics on a current-thread runtime (unit tests run on one).
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}

impl ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match *self {
            Param::Int(v) => ToSqlOutput::from(v),
            Param::Blob(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

impl ResultRow for rusqlite::Row<'_> {
    fn int(&self, column: usize) -> Result<i64> {
        self.get(column).map_err(|e| column_error(column, e))
    }
    fn blob(&self, column: usize) -> Result<Vec<u8>> {
        self.get(column).map_err(|e| column_error(column, e))
    }
    fn optional_blob(&self, column: usize) -> Result<Option<Vec<u8>>> {
        self.get(column).map_err(|e| column_error(column, e))
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        if self.pinned && conn.execute_batch("ROLLBACK").is_err() {
            // A connection whose snapshot cannot be released would pin the WAL: closed.
            return;
        }
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
    use crate::datanode::storage::read_sql;

    fn create(dir: &Path) -> PathBuf {
        let path = dir.join("r.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; CREATE TABLE t (rid INTEGER PRIMARY KEY, doc BLOB)",
        )
        .unwrap();
        path
    }

    fn count(reader: &mut Reader) -> i64 {
        let q = ReadQuery {
            sql: "SELECT count(*) FROM t".into(),
            params: vec![],
        };
        reader
            .query_now(q, 1, "counting", |row| row.int(0))
            .unwrap()[0]
    }

    #[tokio::test]
    async fn a_dropped_reader_is_reused_and_at_most_max_are_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = create(dir.path());
        let readers = Readers::new(&path, 2, Duration::from_secs(60));
        let a = readers.acquire().await.unwrap();
        let _b = readers.acquire().await.unwrap();
        let third = tokio::time::timeout(Duration::from_millis(50), readers.acquire()).await;
        assert!(third.is_err(), "a third reader must wait");
        drop(a);
        let mut c = readers.acquire().await.unwrap();
        assert_eq!(readers.inner.idle.lock().unwrap().len(), 0);
        assert_eq!(count(&mut c), 0);
        drop(c);
        assert_eq!(readers.inner.idle.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn readers_see_commits_and_are_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = create(dir.path());
        let readers = Readers::new(&path, 2, Duration::from_secs(60));
        let mut r = readers.acquire().await.unwrap();
        let writer = Connection::open(&path).unwrap();
        writer
            .execute("INSERT INTO t VALUES (1, x'0500000000')", [])
            .unwrap();
        assert_eq!(count(&mut r), 1, "a statement sees the latest commit");
        let write = ReadQuery {
            sql: "INSERT INTO t VALUES (2, NULL)".into(),
            params: vec![],
        };
        assert!(r.query_now(write, 0, "writing", |row| row.int(0)).is_err());
        let rows = r
            .query_now(
                ReadQuery {
                    sql: "SELECT rid, doc FROM t WHERE rid > ?".into(),
                    params: vec![Param::Int(0)],
                },
                1000,
                "scanning",
                read_sql::record,
            )
            .unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].0, 1);
        drop(r);
        readers.close().await;
        assert!(readers.acquire().await.is_err());
        assert_eq!(readers.inner.idle.lock().unwrap().len(), 0);
    }

    fn scan(limit: i64) -> ReadQuery<'static> {
        ReadQuery {
            sql: "SELECT rid, doc FROM t WHERE rid > ? LIMIT ?".into(),
            params: vec![Param::Int(0), Param::Int(limit)],
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn long_statements_run_off_the_runtime_thread_on_a_multi_thread_runtime() {
        let dir = tempfile::tempdir().unwrap();
        let path = create(dir.path());
        let readers = Readers::new(&path, 1, Duration::from_secs(60));
        let mut r = readers.acquire().await.unwrap();
        let long = r.query(scan(1000), 1000, "scanning", read_sql::record);
        assert!(long.await.unwrap().is_empty());
        let short = r.query(scan(1), 1, "scanning", read_sql::record);
        assert!(short.await.unwrap().is_empty());
    }

    /// On a current-thread runtime a spawned task runs only when the reading task yields.
    #[tokio::test]
    async fn reads_give_the_runtime_a_turn() {
        let dir = tempfile::tempdir().unwrap();
        let path = create(dir.path());
        let readers = Readers::new(&path, 1, Duration::from_secs(60));
        let mut r = readers.acquire().await.unwrap();
        let ran = Arc::new(AtomicBool::new(false));
        let flag = ran.clone();
        tokio::spawn(async move { flag.store(true, Ordering::SeqCst) });
        r.query(scan(1000), 1000, "scanning", read_sql::record)
            .await
            .unwrap();
        assert!(ran.load(Ordering::SeqCst), "a long statement yields");

        let ran = Arc::new(AtomicBool::new(false));
        let flag = ran.clone();
        tokio::spawn(async move { flag.store(true, Ordering::SeqCst) });
        for _ in 0..1000 {
            r.query(scan(1), 1, "reading", read_sql::record)
                .await
                .unwrap();
        }
        assert!(ran.load(Ordering::SeqCst), "many short statements yield");
    }

    #[tokio::test]
    async fn idle_readers_close_after_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let path = create(dir.path());
        let readers = Readers::new(&path, 2, Duration::from_millis(20));
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

    /// A statement whose `LIMIT` is a parameter runs again from the statement cache with
    /// another limit without being compiled again (see `database::stable_plans`).
    #[tokio::test]
    async fn a_new_limit_does_not_compile_the_statement_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = create(dir.path());
        let readers = Readers::new(&path, 1, Duration::from_secs(60));
        let mut reader = readers.acquire().await.unwrap();
        let sql = "SELECT rid FROM t WHERE rid > ? ORDER BY rid LIMIT ?";
        for limit in [1, 10, 100, 5] {
            let q = ReadQuery {
                sql: sql.into(),
                params: vec![read_sql::Param::Int(0), read_sql::Param::Int(limit)],
            };
            reader
                .query_now(q, 1, "scanning", |row| row.int(0))
                .unwrap();
        }
        let conn = reader.conn.as_ref().unwrap();
        let stmt = conn.prepare_cached(sql).unwrap();
        assert_eq!(stmt.get_status(rusqlite::StatementStatus::RePrepare), 0);
    }
}
