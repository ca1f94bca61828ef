//! The small internal collections a node keeps about itself (its identity, its cached routing,
//! its critical sections): read whole, written one document at a time by `_id`.

use super::{DocumentReads, Storage};
use crate::error::Result;
use bson::{Bson, Document, RawDocumentBuf};

/// How many documents one read of an internal collection takes at a time.
const SCAN_CHUNK: i64 = 1000;

impl Storage {
    /// Every document of `db.collection` (none when it does not exist).
    pub async fn documents(&self, db: &str, collection: &str) -> Result<Vec<Document>> {
        let Some((db, coll)) = self.collection(db, collection).await else {
            return Ok(Vec::new());
        };
        let mut read = db.read().await?;
        let mut out = Vec::new();
        let mut after = 0;
        loop {
            let rows = read.scan(&coll, after, SCAN_CHUNK).await?;
            let Some((last, _)) = rows.last() else {
                return Ok(out);
            };
            after = *last;
            for (_, raw) in rows {
                out.push(raw.to_document()?);
            }
        }
    }

    /// Writes the document `_id: id` of `db.collection` (with `None`, deletes it), creating the
    /// collection when needed; with `durable`, returns once the write is on disk.
    pub async fn put_document(
        &self,
        db: &str,
        collection: &str,
        id: &Bson,
        document: Option<&Document>,
        durable: bool,
    ) -> Result<()> {
        if document.is_none() && self.collection(db, collection).await.is_none() {
            return Ok(());
        }
        let db = self.database_or_create(db).await?;
        let coll = db.ensure_collection(collection).await?;
        let mut txn = db.write().await?;
        let old = txn.fetch_by_id(&coll, id).await?;
        match (old, document) {
            (Some((rid, old)), Some(new)) => {
                txn.replace(&coll, rid, &old, &RawDocumentBuf::from_document(new)?)
                    .await?
            }
            (None, Some(new)) => {
                txn.insert_one(&coll, &RawDocumentBuf::from_document(new)?)
                    .await?;
            }
            (Some((rid, old)), None) => txn.delete(&coll, rid, &old).await?,
            (None, None) => {}
        }
        let seq = txn.commit().await?;
        if durable {
            db.wait_durable(seq).await?;
        }
        Ok(())
    }
}
