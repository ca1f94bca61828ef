//! The transaction table of one database file (MongoDB's `config.transactions`, kept per
//! database so that a retryable write and its record commit in one SQLite transaction): per
//! session its latest `txnNumber`, `lastWriteOpTime` and `lastWriteDate`, and per executed
//! statement of that `txnNumber` the result it returned, with the namespace and document key it
//! touched (what a chunk migration will move with the chunk's documents).

use super::sql_error;
use super::txn::{INSERT_CHUNK, WriteTxn, placeholders};
use crate::error::Result;
use sqlx::{AssertSqlSafe, Row};

/// Created on open in every database file, next to the catalog.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS docgrid_transactions (
    lsid BLOB PRIMARY KEY,
    txn_number INTEGER NOT NULL,
    last_write_op_time INTEGER NOT NULL,
    last_write_date INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS docgrid_statements (
    lsid BLOB NOT NULL,
    stmt_id INTEGER NOT NULL,
    txn_number INTEGER NOT NULL,
    ns TEXT NOT NULL,
    document_key BLOB,
    result BLOB NOT NULL,
    PRIMARY KEY (lsid, stmt_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS docgrid_statements_by_document ON docgrid_statements (ns, document_key);
";

/// A session's row: the latest retryable write this database saw for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionRecord {
    /// The session id `{id, uid}` as BSON bytes.
    pub lsid: Vec<u8>,
    pub txn_number: i64,
    /// The write's timestamp on the node's clock (`(time << 32) | increment`).
    pub last_write_op_time: i64,
    /// Milliseconds since the epoch.
    pub last_write_date: i64,
}

/// One executed statement of a session's latest `txnNumber`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatementRecord {
    pub stmt_id: i32,
    pub ns: String,
    /// The `_id` (document key) the statement wrote, as a BSON document; none when it wrote
    /// nothing (an update that matched nothing).
    pub document_key: Option<Vec<u8>>,
    /// The statement's result as BSON.
    pub result: Vec<u8>,
}

impl WriteTxn<'_> {
    /// Records `statements` as executed under `session`'s `txnNumber`, in this transaction:
    /// the session's row is replaced and, with `remove_older` (the caller knows this database
    /// holds some), the statements of its older `txnNumber`s go.
    pub async fn record_retryable_write(
        &mut self,
        session: &SessionRecord,
        statements: &[StatementRecord],
        remove_older: bool,
    ) -> Result<()> {
        let conn = &mut self.writer.conn;
        sqlx::query(
            "INSERT INTO docgrid_transactions (lsid, txn_number, last_write_op_time, last_write_date) \
             VALUES (?, ?, ?, ?) ON CONFLICT (lsid) DO UPDATE SET txn_number = excluded.txn_number, \
             last_write_op_time = excluded.last_write_op_time, last_write_date = excluded.last_write_date",
        )
        .bind(&session.lsid)
        .bind(session.txn_number)
        .bind(session.last_write_op_time)
        .bind(session.last_write_date)
        .execute(&mut *conn)
        .await
        .map_err(|e| sql_error("recording a retryable write", e))?;
        if remove_older {
            sqlx::query("DELETE FROM docgrid_statements WHERE lsid = ? AND txn_number < ?")
                .bind(&session.lsid)
                .bind(session.txn_number)
                .execute(&mut *conn)
                .await
                .map_err(|e| sql_error("recording a retryable write", e))?;
        }
        // Multi-row statements, as documents are inserted: a batch of inserts records one row
        // per document.
        for chunk in statements.chunks(INSERT_CHUNK) {
            let sql = format!(
                "INSERT OR REPLACE INTO docgrid_statements (lsid, stmt_id, txn_number, ns, document_key, result) VALUES {}",
                placeholders(chunk.len(), 6)
            );
            let mut query = sqlx::query(AssertSqlSafe(sql));
            for statement in chunk {
                query = query
                    .bind(&session.lsid)
                    .bind(statement.stmt_id)
                    .bind(session.txn_number)
                    .bind(&statement.ns)
                    .bind(&statement.document_key)
                    .bind(&statement.result);
            }
            query
                .execute(&mut *conn)
                .await
                .map_err(|e| sql_error("recording a retryable write's statements", e))?;
        }
        Ok(())
    }

    /// The session's row in this database and the statements recorded under its `txnNumber`.
    pub async fn retryable_write_record(
        &mut self,
        lsid: &[u8],
    ) -> Result<Option<(SessionRecord, Vec<StatementRecord>)>> {
        let conn = &mut self.writer.conn;
        let row = sqlx::query(
            "SELECT txn_number, last_write_op_time, last_write_date FROM docgrid_transactions WHERE lsid = ?",
        )
        .bind(lsid)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| sql_error("reading the transaction table", e))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let session = SessionRecord {
            lsid: lsid.to_vec(),
            txn_number: row.get(0),
            last_write_op_time: row.get(1),
            last_write_date: row.get(2),
        };
        let statements = sqlx::query(
            "SELECT stmt_id, ns, document_key, result FROM docgrid_statements WHERE lsid = ? AND txn_number = ?",
        )
        .bind(lsid)
        .bind(session.txn_number)
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| sql_error("reading the transaction table", e))?
        .into_iter()
        .map(|row| StatementRecord {
            stmt_id: row.get(0),
            ns: row.get(1),
            document_key: row.get(2),
            result: row.get(3),
        })
        .collect();
        Ok(Some((session, statements)))
    }

    /// The sessions whose last write here is older than `before` (ms since the epoch).
    pub async fn retryable_writes_before(&mut self, before: i64) -> Result<Vec<SessionRecord>> {
        Ok(sqlx::query(
            "SELECT lsid, txn_number, last_write_op_time, last_write_date FROM docgrid_transactions \
             WHERE last_write_date < ?",
        )
        .bind(before)
        .fetch_all(&mut self.writer.conn)
        .await
        .map_err(|e| sql_error("reading the transaction table", e))?
        .into_iter()
        .map(|row| SessionRecord {
            lsid: row.get(0),
            txn_number: row.get(1),
            last_write_op_time: row.get(2),
            last_write_date: row.get(3),
        })
        .collect())
    }

    /// Removes a session's rows (its record and its statements).
    pub async fn remove_retryable_write_record(&mut self, lsid: &[u8]) -> Result<()> {
        for sql in [
            "DELETE FROM docgrid_transactions WHERE lsid = ?",
            "DELETE FROM docgrid_statements WHERE lsid = ?",
        ] {
            sqlx::query(sql)
                .bind(lsid)
                .execute(&mut self.writer.conn)
                .await
                .map_err(|e| sql_error("reaping the transaction table", e))?;
        }
        Ok(())
    }
}
