//! The transaction table of one database file (MongoDB's `config.transactions`, kept per
//! database so that a retryable write and its record commit in one SQLite transaction): one row
//! per commit of a session's retryable write here, holding the statements it executed — each
//! one's `stmtId`, the result it returned, the namespace and document key it wrote (what a chunk
//! migration moves with the range's documents) — packed in one blob, and the session's
//! `txnNumber`, `lastWriteOpTime` and `lastWriteDate` as of that write, so that a session's
//! record is its rows' newest values and a write costs one row however many statements it ran
//! (a 1,000-document insert recorded as 1,000 rows cost a fifth of the insert).

use super::sql_error;
use super::txn::{Owned, WriteTxn};
use crate::error::{MongoError, Result};
use sqlx::Row;
use std::collections::BTreeMap;

/// Created on open in every database file, next to the catalog.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS docgrid_retryable_writes (
    lsid BLOB NOT NULL,
    first_stmt_id INTEGER NOT NULL,
    txn_number INTEGER NOT NULL,
    last_write_op_time INTEGER NOT NULL,
    last_write_date INTEGER NOT NULL,
    statements BLOB NOT NULL,
    PRIMARY KEY (lsid, first_stmt_id)
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
        // Run with the COMMIT (`WriteTxn::commit`): a retryable write then costs no round
        // trip to the writer's thread of its own.
        if remove_older {
            self.deferred.push(
                "DELETE FROM docgrid_retryable_writes WHERE lsid = ? AND txn_number < ?",
                [
                    Owned::Blob(session.lsid.clone()),
                    Owned::Int(session.txn_number),
                ],
            );
        }
        let Some(first) = statements.first() else {
            return Ok(());
        };
        // Keyed by its first statement: a retry records only statements that did not run, so
        // a row never replaces one of the same `txnNumber`; one of an older number it may. An
        // upsert: the driver's next write on a session usually has the same key, and updating
        // the row in place costs less than replacing it.
        self.deferred.push(
            "INSERT INTO docgrid_retryable_writes (lsid, first_stmt_id, txn_number, \
             last_write_op_time, last_write_date, statements) VALUES (?, ?, ?, ?, ?, ?) \
             ON CONFLICT (lsid, first_stmt_id) DO UPDATE SET txn_number = excluded.txn_number, \
             last_write_op_time = excluded.last_write_op_time, \
             last_write_date = excluded.last_write_date, statements = excluded.statements",
            [
                Owned::Blob(session.lsid.clone()),
                Owned::Int(i64::from(first.stmt_id)),
                Owned::Int(session.txn_number),
                Owned::Int(session.last_write_op_time),
                Owned::Int(session.last_write_date),
                Owned::Blob(pack(statements)),
            ],
        );
        Ok(())
    }

    /// Every session's record in this database and the statements of its latest `txnNumber`
    /// (rows of an older one a failed commit left are ignored).
    pub async fn retryable_write_records(&mut self) -> Result<SessionRecords> {
        let rows = sqlx::query(
            "SELECT lsid, txn_number, last_write_op_time, last_write_date, statements \
             FROM docgrid_retryable_writes",
        )
        .fetch_all(&mut self.writer.conn)
        .await
        .map_err(|e| sql_error("reading the transaction table", e))?;
        let mut sessions: BTreeMap<Vec<u8>, (SessionRecord, Vec<StatementRecord>)> =
            BTreeMap::new();
        for row in rows {
            let lsid: Vec<u8> = row.get(0);
            let txn_number: i64 = row.get(1);
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
            session.last_write_op_time = session.last_write_op_time.max(row.get(2));
            session.last_write_date = session.last_write_date.max(row.get(3));
            let packed: Vec<u8> = row.get(4);
            statements.extend(unpack(&packed)?);
        }
        Ok(sessions.into_values().collect())
    }

    /// Removes a session's rows.
    pub async fn remove_retryable_write_record(&mut self, lsid: &[u8]) -> Result<()> {
        sqlx::query("DELETE FROM docgrid_retryable_writes WHERE lsid = ?")
            .bind(lsid)
            .execute(&mut self.writer.conn)
            .await
            .map_err(|e| sql_error("reaping the transaction table", e))?;
        Ok(())
    }
}

/// The statements of one row, each as: `stmt_id` (i32), then the namespace, the document key
/// (absent: length `u32::MAX`) and the result, each a little-endian `u32` length and its bytes.
fn pack(statements: &[StatementRecord]) -> Vec<u8> {
    let size: usize = statements
        .iter()
        .map(|s| 16 + s.ns.len() + s.document_key.as_ref().map_or(0, Vec::len) + s.result.len())
        .sum();
    let mut out = Vec::with_capacity(size);
    let bytes = |out: &mut Vec<u8>, part: Option<&[u8]>| match part {
        Some(part) => {
            out.extend_from_slice(&(part.len() as u32).to_le_bytes());
            out.extend_from_slice(part);
        }
        None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
    };
    for statement in statements {
        out.extend_from_slice(&statement.stmt_id.to_le_bytes());
        bytes(&mut out, Some(statement.ns.as_bytes()));
        bytes(&mut out, statement.document_key.as_deref());
        bytes(&mut out, Some(&statement.result));
    }
    out
}

/// The statements [`pack`] packed; a truncated or malformed row is an error, not a guess.
fn unpack(mut packed: &[u8]) -> Result<Vec<StatementRecord>> {
    let corrupt = || MongoError::internal("a corrupt row in the transaction table");
    fn take<'a>(packed: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (packed.len() >= n).then(|| packed.split_at(n))?;
        *packed = rest;
        Some(head)
    }
    fn word(packed: &mut &[u8]) -> Option<[u8; 4]> {
        take(packed, 4)?.try_into().ok()
    }
    fn part(packed: &mut &[u8]) -> Option<Option<Vec<u8>>> {
        let len = u32::from_le_bytes(word(packed)?);
        if len == u32::MAX {
            return Some(None);
        }
        Some(Some(take(packed, len as usize)?.to_vec()))
    }
    let mut out = Vec::new();
    while !packed.is_empty() {
        let stmt_id = i32::from_le_bytes(word(&mut packed).ok_or_else(corrupt)?);
        let ns = part(&mut packed).flatten().ok_or_else(corrupt)?;
        let document_key = part(&mut packed).ok_or_else(corrupt)?;
        let result = part(&mut packed).flatten().ok_or_else(corrupt)?;
        out.push(StatementRecord {
            stmt_id,
            ns: String::from_utf8(ns).map_err(|_| corrupt())?,
            document_key,
            result,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_pack_and_unpack() {
        let statements = vec![
            StatementRecord {
                stmt_id: 0,
                ns: "app.c".into(),
                document_key: Some(vec![1, 2, 3]),
                result: vec![9; 12],
            },
            StatementRecord {
                stmt_id: 7,
                ns: "app.d".into(),
                document_key: None,
                result: vec![],
            },
        ];
        let packed = pack(&statements);
        assert_eq!(unpack(&packed).unwrap(), statements);
        assert!(unpack(&packed[..packed.len() - 1]).is_err());
        assert!(unpack(&[]).unwrap().is_empty());
    }
}
