//! The storage ceiling: the rows a workload reads or writes, straight through sqlx on a scratch
//! SQLite file opened as a shard opens its files (WAL, `synchronous=NORMAL`, the same page
//! cache and mmap window), with the same layout (a table of BSON blobs by record id, an `_id`
//! index and a `k` index as `WITHOUT ROWID` tables): multi-row inserts in one transaction per
//! batch, prepared point and range selects, updates read-modify-writing the same blobs, and
//! whole-table scans decoding the fields a `$group` or a `count` filter needs.
//!
//! Each measurement opens its connections and closes them afterwards: in `dev` mode the cluster
//! runs in this process too, and SQLite page caches and mmap windows left open here would count
//! in the memory reported for the cluster's later workloads.

use crate::data;
use crate::measure::{self, Timing};
use mongodb::bson::{Bson, Document, RawDocument};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use sqlx::{AssertSqlSafe, Connection, Row, SqliteConnection};
use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Mutex;

/// Rows per multi-row `INSERT` statement (two bound values per row, far below SQLite's limit).
const ROWS_PER_STATEMENT: usize = 500;

/// Rows per statement of a whole-table scan: few enough round trips to sqlx's connection
/// thread that the scan costs what decoding the rows costs.
const SCAN_CHUNK: i64 = 10_000;

/// A scratch SQLite file holding `n` documents.
pub struct Scratch {
    n: usize,
    path: PathBuf,
}

type Writer = Arc<Mutex<SqliteConnection>>;

/// The index key of an int64, encoded as the shard encodes it.
fn key_bytes(v: i64) -> Vec<u8> {
    docgrid::document::keystring::encode_one(&bson::Bson::Int64(v))
}

/// The scratch file is opened exactly as a shard opens its files.
fn options(path: &Path) -> SqliteConnectOptions {
    docgrid::datanode::storage::connect_options(path)
}

/// ... and read as a shard's readers read them.
fn reader_options(path: &Path) -> SqliteConnectOptions {
    docgrid::datanode::storage::reader_connect_options(path)
}

impl Scratch {
    /// An empty file in `dir`.
    pub async fn create(dir: &Path, n: usize) -> anyhow::Result<Scratch> {
        let path = dir.join(format!("ceiling-{n}.sqlite"));
        let mut writer = SqliteConnection::connect_with(&options(&path)).await?;
        for ddl in [
            "CREATE TABLE items (rid INTEGER PRIMARY KEY, doc BLOB NOT NULL)",
            "CREATE TABLE id_index (key BLOB PRIMARY KEY, rid INTEGER NOT NULL) WITHOUT ROWID",
            "CREATE TABLE k_index (key BLOB NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (key, rid)) WITHOUT ROWID",
        ] {
            sqlx::query(ddl).execute(&mut writer).await?;
        }
        writer.close().await?;
        Ok(Scratch { n, path })
    }

    async fn connect(&self) -> anyhow::Result<SqliteConnection> {
        Ok(SqliteConnection::connect_with(&options(&self.path)).await?)
    }

    /// Runs `work` with the one writer (shared by the measurement's clients as a shard's
    /// writer is), closing it afterwards.
    async fn with_writer<F, Fut>(&self, work: F) -> anyhow::Result<Timing>
    where
        F: FnOnce(Writer) -> Fut,
        Fut: Future<Output = anyhow::Result<Timing>>,
    {
        let writer = Arc::new(Mutex::new(self.connect().await?));
        let timing = work(writer.clone()).await;
        if let Ok(conn) = Arc::try_unwrap(writer) {
            conn.into_inner().close().await?;
        }
        timing
    }

    /// Runs `work` with `clients` read-only connections opened beforehand, closing them
    /// afterwards.
    async fn with_readers<F, Fut>(&self, clients: usize, work: F) -> anyhow::Result<Timing>
    where
        F: FnOnce(SqlitePool) -> Fut,
        Fut: Future<Output = anyhow::Result<Timing>>,
    {
        let pool = SqlitePoolOptions::new()
            .max_connections(clients.max(1) as u32)
            .min_connections(clients.max(1) as u32)
            .test_before_acquire(false)
            .connect_with(reader_options(&self.path).read_only(true))
            .await?;
        let timing = work(pool.clone()).await;
        pool.close().await;
        timing
    }

    /// Inserts the `n` documents in transactions of `batch`, each a few multi-row `INSERT`s
    /// into the table and the `_id` index. One operation per batch.
    pub async fn load(&self, batch: usize) -> anyhow::Result<Timing> {
        let n = self.n;
        self.with_writer(|writer| {
            measure::run(n.div_ceil(batch), 1, move |_, b| {
                let writer = writer.clone();
                async move {
                    let first = b * batch;
                    let docs = data::batch(first, (first + batch).min(n), n);
                    let mut conn = writer.lock().await;
                    let mut tx = conn.begin().await?;
                    for (c, chunk) in docs.chunks(ROWS_PER_STATEMENT).enumerate() {
                        let base = first + c * ROWS_PER_STATEMENT;
                        let sql = insert_sql("items", "rid, doc", chunk.len());
                        let mut rows = sqlx::query(AssertSqlSafe(sql));
                        for (j, doc) in chunk.iter().enumerate() {
                            rows = rows.bind((base + j + 1) as i64).bind(doc.as_bytes());
                        }
                        rows.execute(&mut *tx).await?;
                        let sql = insert_sql("id_index", "key, rid", chunk.len());
                        let mut keys = sqlx::query(AssertSqlSafe(sql));
                        for j in 0..chunk.len() {
                            let id = (base + j) as i64;
                            keys = keys.bind(key_bytes(id)).bind(id + 1);
                        }
                        keys.execute(&mut *tx).await?;
                    }
                    tx.commit().await?;
                    Ok(())
                }
            })
        })
        .await
    }

    /// Fills the `k` index in key order (timed beside the cluster's `createIndexes`).
    pub async fn build_k_index(&self) -> anyhow::Result<()> {
        // In key order, as a sorted index build inserts: the B-tree is appended to.
        let mut rows: Vec<(i64, i64)> = (0..self.n)
            .map(|i| (data::key_of(i, self.n), (i + 1) as i64))
            .collect();
        rows.sort_unstable();
        let mut conn = self.connect().await?;
        let mut tx = conn.begin().await?;
        for chunk in rows.chunks(ROWS_PER_STATEMENT) {
            let sql = insert_sql("k_index", "key, rid", chunk.len());
            let mut keys = sqlx::query(AssertSqlSafe(sql));
            for &(key, rid) in chunk {
                keys = keys.bind(key_bytes(key)).bind(rid);
            }
            keys.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        conn.close().await?;
        Ok(())
    }

    /// Prepared point selects by `_id` key from `clients` concurrent readers, keys from `key`.
    pub async fn point_selects(
        &self,
        ops: usize,
        clients: usize,
        key: impl Fn(usize) -> i64 + Send + Sync + 'static,
    ) -> anyhow::Result<Timing> {
        self.with_readers(clients, |readers| {
            measure::run(ops, clients, move |_, i| {
                let readers = readers.clone();
                let id = key(i);
                async move {
                    let row = sqlx::query(
                        "SELECT i.doc FROM id_index x JOIN items i ON i.rid = x.rid WHERE x.key = ?",
                    )
                    .bind(key_bytes(id))
                    .fetch_one(&readers)
                    .await?;
                    anyhow::ensure!(!row.try_get::<&[u8], _>(0)?.is_empty());
                    Ok(())
                }
            })
        })
        .await
    }

    /// Prepared selects of the documents whose `k` is in `[x, x + width)`, one reader.
    pub async fn range_selects(
        &self,
        ops: usize,
        width: i64,
        start: impl Fn(usize) -> i64 + Send + Sync + 'static,
    ) -> anyhow::Result<Timing> {
        self.with_readers(1, |readers| {
            measure::run(ops, 1, move |_, i| {
                let readers = readers.clone();
                let x = start(i);
                async move {
                    let rows = sqlx::query(
                        "SELECT i.doc FROM k_index x JOIN items i ON i.rid = x.rid \
                         WHERE x.key >= ? AND x.key < ? ORDER BY x.key",
                    )
                    .bind(key_bytes(x))
                    .bind(key_bytes(x + width))
                    .fetch_all(&readers)
                    .await?;
                    anyhow::ensure!(!rows.is_empty());
                    Ok(())
                }
            })
        })
        .await
    }

    /// `$inc: {qty: 1}` on the documents with `_id < docs` in one transaction: each blob read,
    /// decoded, changed, encoded and written back by a prepared single-row `UPDATE`.
    pub async fn update_inc(&self, docs: usize) -> anyhow::Result<Timing> {
        let mut conn = self.connect().await?;
        let start = Instant::now();
        let mut tx = conn.begin().await?;
        let rows = sqlx::query("SELECT rid, doc FROM items WHERE rid <= ? ORDER BY rid")
            .bind(docs as i64)
            .fetch_all(&mut *tx)
            .await?;
        for row in rows {
            let rid: i64 = row.try_get(0)?;
            update_row(&mut tx, rid, row.try_get::<&[u8], _>(1)?).await?;
        }
        tx.commit().await?;
        let elapsed = start.elapsed();
        conn.close().await?;
        Ok(Timing::single(elapsed))
    }

    /// Single-document `$inc: {qty: 1}` by `_id`, each its own transaction, from `clients`
    /// concurrent clients queueing for the one writer as the shard's writers do.
    pub async fn point_updates(
        &self,
        ops: usize,
        clients: usize,
        key: impl Fn(usize) -> i64 + Send + Sync + 'static,
    ) -> anyhow::Result<Timing> {
        self.with_writer(|writer| {
            measure::run(ops, clients, move |_, i| {
                let writer = writer.clone();
                let id = key(i);
                async move {
                    let mut conn = writer.lock().await;
                    let mut tx = conn.begin().await?;
                    let row = sqlx::query(
                        "SELECT i.rid, i.doc FROM id_index x JOIN items i ON i.rid = x.rid WHERE x.key = ?",
                    )
                    .bind(key_bytes(id))
                    .fetch_one(&mut *tx)
                    .await?;
                    let rid: i64 = row.try_get(0)?;
                    update_row(&mut tx, rid, row.try_get::<&[u8], _>(1)?).await?;
                    tx.commit().await?;
                    Ok(())
                }
            })
        })
        .await
    }

    /// A scan of every blob reading `qty` and `price`, grouped by `qty` (W6's `$group`).
    pub async fn group_scan(&self) -> anyhow::Result<Timing> {
        let mut groups: HashMap<i32, (i64, f64)> = HashMap::new();
        let timing = self
            .scan(|doc| {
                let group = groups.entry(doc.get_i32("qty")?).or_default();
                group.0 += 1;
                group.1 += doc.get_f64("price")?;
                Ok(())
            })
            .await?;
        anyhow::ensure!(!groups.is_empty());
        Ok(timing)
    }

    /// A scan of every blob counting those with `qty < below` (W7's `count`).
    pub async fn count_scan(&self, below: i32) -> anyhow::Result<Timing> {
        let mut count = 0u64;
        let timing = self
            .scan(|doc| {
                count += u64::from(doc.get_i32("qty")? < below);
                Ok(())
            })
            .await?;
        anyhow::ensure!(count > 0);
        Ok(timing)
    }

    /// Every document in record order, read in chunks by record id, one reader.
    async fn scan(
        &self,
        mut visit: impl FnMut(&RawDocument) -> anyhow::Result<()>,
    ) -> anyhow::Result<Timing> {
        let mut conn = SqliteConnection::connect_with(&reader_options(&self.path)).await?;
        // As the server's connections: the scan's statement is not compiled again per chunk.
        docgrid::datanode::storage::stable_plans(&mut conn).await?;
        let start = Instant::now();
        let mut after = 0i64;
        loop {
            let rows = sqlx::query("SELECT rid, doc FROM items WHERE rid > ? ORDER BY rid LIMIT ?")
                .bind(after)
                .bind(SCAN_CHUNK)
                .fetch_all(&mut conn)
                .await?;
            let Some(last) = rows.last() else { break };
            after = last.try_get(0)?;
            for row in &rows {
                visit(RawDocument::from_bytes(row.try_get::<&[u8], _>(1)?)?)?;
            }
        }
        let elapsed = start.elapsed();
        conn.close().await?;
        Ok(Timing::single(elapsed))
    }
}

fn insert_sql(table: &str, columns: &str, rows: usize) -> String {
    let values = vec!["(?, ?)"; rows].join(", ");
    format!("INSERT INTO {table} ({columns}) VALUES {values}")
}

/// Rewrites row `rid` with its document's `qty` incremented.
async fn update_row(conn: &mut SqliteConnection, rid: i64, doc: &[u8]) -> anyhow::Result<()> {
    sqlx::query("UPDATE items SET doc = ? WHERE rid = ?")
        .bind(inc_qty(doc)?)
        .bind(rid)
        .execute(conn)
        .await?;
    Ok(())
}

fn inc_qty(bytes: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut doc = Document::from_reader(bytes)?;
    let qty = doc.get_i32("qty")?;
    doc.insert("qty", Bson::Int32(qty + 1));
    let mut out = Vec::with_capacity(bytes.len());
    doc.to_writer(&mut out)?;
    Ok(out)
}
