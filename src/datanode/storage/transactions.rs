//! The transaction table of one database file (MongoDB's `config.transactions`, kept per
//! database so that a retryable write and its record commit in one SQLite transaction): one row
//! per executed statement of a session's latest `txnNumber` here — the result it returned, the
//! namespace and document key it wrote (what a chunk migration will move with the chunk's
//! documents) — each carrying the session's `txnNumber`, `lastWriteOpTime` and `lastWriteDate`
//! as of its write, so that a session's record is its rows' newest values and a write costs one
//! statement.

use super::sql_error;
use super::txn::{INSERT_CHUNK, WriteTxn, placeholders};
use crate::error::Result;
use sqlx::{AssertSqlSafe, Row};
use std::collections::BTreeMap;

/// Created on open in every database file, next to the catalog.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS docgrid_transactions (
    lsid BLOB NOT NULL,
    stmt_id INTEGER NOT NULL,
    txn_number INTEGER NOT NULL,
    last_write_op_time INTEGER NOT NULL,
    last_write_date INTEGER NOT NULL,
    ns TEXT NOT NULL,
    document_key BLOB,
    result BLOB NOT NULL,
    PRIMARY KEY (lsid, stmt_id)
) WITHOUT ROWID;
";

/// A session's record in one database: its latest retryable write there.
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
    /// The `_id` (document key) the statement wrote, as a BSON document (`{_id}`).
    pub document_key: Option<Vec<u8>>,
    /// The statement's result as BSON.
    pub result: Vec<u8>,
}

/// Every session's record in one database, with the statements of its latest `txnNumber`.
pub type SessionRecords = Vec<(SessionRecord, Vec<StatementRecord>)>;

impl WriteTxn<'_> {
    /// Records `statements` as executed under `session`'s `txnNumber`, in this transaction;
    /// with `remove_older` (the caller knows this database holds some), the statements of the
    /// session's older `txnNumber`s go.
    pub async fn record_retryable_write(
        &mut self,
        session: &SessionRecord,
        statements: &[StatementRecord],
        remove_older: bool,
    ) -> Result<()> {
        let conn = &mut self.writer.conn;
        if remove_older {
            sqlx::query("DELETE FROM docgrid_transactions WHERE lsid = ? AND txn_number < ?")
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
                "INSERT OR REPLACE INTO docgrid_transactions (lsid, stmt_id, txn_number, \
                 last_write_op_time, last_write_date, ns, document_key, result) VALUES {}",
                placeholders(chunk.len(), 8)
            );
            let mut query = sqlx::query(AssertSqlSafe(sql));
            for statement in chunk {
                query = query
                    .bind(&session.lsid)
                    .bind(statement.stmt_id)
                    .bind(session.txn_number)
                    .bind(session.last_write_op_time)
                    .bind(session.last_write_date)
                    .bind(&statement.ns)
                    .bind(&statement.document_key)
                    .bind(&statement.result);
            }
            query
                .execute(&mut *conn)
                .await
                .map_err(|e| sql_error("recording a retryable write", e))?;
        }
        Ok(())
    }

    /// Every session's record in this database and the statements of its latest `txnNumber`
    /// (rows of an older one a failed commit left are ignored).
    pub async fn retryable_write_records(&mut self) -> Result<SessionRecords> {
        let rows = sqlx::query(
            "SELECT lsid, stmt_id, txn_number, last_write_op_time, last_write_date, ns, \
             document_key, result FROM docgrid_transactions",
        )
        .fetch_all(&mut self.writer.conn)
        .await
        .map_err(|e| sql_error("reading the transaction table", e))?;
        let mut sessions: BTreeMap<Vec<u8>, (SessionRecord, Vec<StatementRecord>)> =
            BTreeMap::new();
        for row in rows {
            let lsid: Vec<u8> = row.get(0);
            let txn_number: i64 = row.get(2);
            let (session, statements) = sessions.entry(lsid.clone()).or_insert_with(|| {
                let session = SessionRecord {
                    lsid,
                    txn_number,
                    last_write_op_time: 0,
                    last_write_date: 0,
                };
                (session, Vec::new())
            });
            if txn_number < session.txn_number {
                continue;
            }
            if txn_number > session.txn_number {
                session.txn_number = txn_number;
                statements.clear();
            }
            session.last_write_op_time = session.last_write_op_time.max(row.get(3));
            session.last_write_date = session.last_write_date.max(row.get(4));
            statements.push(StatementRecord {
                stmt_id: row.get(1),
                ns: row.get(5),
                document_key: row.get(6),
                result: row.get(7),
            });
        }
        Ok(sessions.into_values().collect())
    }

    /// Removes a session's rows.
    pub async fn remove_retryable_write_record(&mut self, lsid: &[u8]) -> Result<()> {
        sqlx::query("DELETE FROM docgrid_transactions WHERE lsid = ?")
            .bind(lsid)
            .execute(&mut self.writer.conn)
            .await
            .map_err(|e| sql_error("reaping the transaction table", e))?;
        Ok(())
    }
}
