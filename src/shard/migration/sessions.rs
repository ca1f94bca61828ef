//! The retryable-write records that move with a range (the design's "Session Migration"): in
//! its critical section, once the last writes are on the recipient, the donor sends
//! (`_getNextSessionMods`) the records of the statements that wrote the range's documents (or
//! documents since deleted), and the recipient takes them into its transaction table, so a
//! write retried after the move is answered from its record instead of running twice.

use super::KeyRange;
use crate::datanode::DataNode;
use crate::datanode::storage::{DocumentReads, SessionRecord, SessionRecords, StatementRecord};
use crate::error::{MongoError, Result};
use crate::shard::ShardState;
use bson::{Bson, Document, doc};

impl ShardState {
    /// The records of the retryable writes to `range`'s documents, as the wire carries them.
    pub(crate) async fn range_session_records(&self, range: &KeyRange) -> Result<Vec<Bson>> {
        let Some((db_name, coll_name)) = range.ns.split_once('.') else {
            return Ok(Vec::new());
        };
        let Some((database, coll)) = self.storage().collection(db_name, coll_name).await else {
            return Ok(Vec::new());
        };
        // The statements' documents, looked up once the records are read.
        let records = self
            .transaction_table()
            .records_of(self.storage(), db_name, &range.ns, |s| {
                s.document_key.is_some()
            })
            .await?;
        let mut read = database.read().await?;
        let mut out = Vec::new();
        for (session, statements) in records {
            let mut kept = Vec::new();
            for statement in statements {
                let Some(key) = &statement.document_key else {
                    continue;
                };
                let key: Document = bson::from_slice(key)?;
                let Some(id) = key.get("_id") else {
                    continue;
                };
                // A document no longer here was deleted: its record goes too (a retry of
                // the delete on the new owner must not run again).
                let in_range = match read.fetch_by_id(&coll, id).await? {
                    Some((_, doc)) => range.contains(&doc),
                    None => true,
                };
                if in_range {
                    kept.push(statement);
                }
            }
            if !kept.is_empty() {
                out.push(Bson::Document(encode(&session, &kept)?));
            }
        }
        Ok(out)
    }

    /// Takes in the records a donor sent with a range.
    pub(super) async fn import_session_records(&self, ns: &str, sessions: &[Bson]) -> Result<()> {
        let Some((db, _)) = ns.split_once('.') else {
            return Ok(());
        };
        let records: SessionRecords = sessions
            .iter()
            .filter_map(Bson::as_document)
            .map(decode)
            .collect::<Result<_>>()?;
        if records.is_empty() {
            return Ok(());
        }
        self.transaction_table()
            .import(self.storage(), db, records)
            .await
    }
}

fn encode(session: &SessionRecord, statements: &[StatementRecord]) -> Result<Document> {
    let mut out = Vec::with_capacity(statements.len());
    for s in statements {
        let mut statement = doc! {
            "stmtId": s.stmt_id,
            "ns": &s.ns,
            "result": bson::from_slice::<Document>(&s.result)?,
        };
        if let Some(key) = &s.document_key {
            statement.insert("documentKey", bson::from_slice::<Document>(key)?);
        }
        out.push(statement);
    }
    Ok(doc! {
        "lsid": bson::from_slice::<Document>(&session.lsid)?,
        "txnNumber": session.txn_number,
        "lastWriteOpTime": session.last_write_op_time,
        "lastWriteDate": session.last_write_date,
        "statements": out,
    })
}

fn decode(doc: &Document) -> Result<(SessionRecord, Vec<StatementRecord>)> {
    let bad = || MongoError::internal("a malformed session record from a migration's donor");
    let session = SessionRecord {
        lsid: bson::to_vec(doc.get_document("lsid").map_err(|_| bad())?)?,
        txn_number: doc.get_i64("txnNumber").map_err(|_| bad())?,
        last_write_op_time: doc.get_i64("lastWriteOpTime").map_err(|_| bad())?,
        last_write_date: doc.get_i64("lastWriteDate").map_err(|_| bad())?,
    };
    let mut statements = Vec::new();
    for s in doc.get_array("statements").map_err(|_| bad())? {
        let s = s.as_document().ok_or_else(bad)?;
        statements.push(StatementRecord {
            stmt_id: s.get_i32("stmtId").map_err(|_| bad())?,
            ns: s.get_str("ns").map_err(|_| bad())?.to_string(),
            document_key: s
                .get_document("documentKey")
                .ok()
                .map(bson::to_vec)
                .transpose()?,
            result: bson::to_vec(s.get_document("result").map_err(|_| bad())?)?,
        });
    }
    Ok((session, statements))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_the_wire_shape() {
        let session = SessionRecord {
            lsid: bson::to_vec(&doc! {"id": 1, "uid": 2}).unwrap(),
            txn_number: 7,
            last_write_op_time: 11,
            last_write_date: 13,
        };
        let statements = vec![StatementRecord {
            stmt_id: 3,
            ns: "db.c".into(),
            document_key: Some(bson::to_vec(&doc! {"_id": 5}).unwrap()),
            result: bson::to_vec(&doc! {"n": 1}).unwrap(),
        }];
        let wire = encode(&session, &statements).unwrap();
        assert_eq!(decode(&wire).unwrap(), (session, statements));
    }
}
