//! An aggregation read through a [`Host`] a batch at a time: the command, its cursor's
//! `getMore`s, and `killCursors` when the reader stops before the end.

use super::Host;
use crate::document::collation::Collation;
use crate::error::{MongoError, Result};
use bson::{Bson, Document, doc};

/// The cursor of an `aggregate` a host runs.
pub struct HostCursor {
    db: String,
    /// The command, until it is sent.
    command: Option<Document>,
    /// The collection its `getMore`s name (the reply's namespace).
    collection: String,
    /// The cursor's id; 0 before the command and once the cursor has nothing more.
    id: i64,
}

impl HostCursor {
    /// An aggregation of `coll` of `db` (`None`: a collection-less `aggregate: 1`) with the
    /// command's `let` and `hint`; nothing is sent before the first batch is asked for.
    pub fn aggregate(
        db: &str,
        coll: Option<&str>,
        pipeline: Vec<Document>,
        let_doc: Document,
        hint: Option<&Bson>,
    ) -> HostCursor {
        // A pipeline that makes its own input runs collection-less, whatever `coll` says.
        let makes_input = pipeline
            .first()
            .is_some_and(|first| first.contains_key("$documents"));
        let target = match coll {
            Some(coll) if !makes_input => Bson::String(coll.to_string()),
            _ => Bson::Int32(1),
        };
        let mut command = doc! {"aggregate": target, "pipeline": pipeline, "cursor": {}};
        if !let_doc.is_empty() {
            command.insert("let", let_doc);
        }
        if let Some(hint) = hint {
            command.insert("hint", hint.clone());
        }
        HostCursor {
            db: db.to_string(),
            command: Some(command),
            collection: coll.unwrap_or("$cmd.aggregate").to_string(),
            id: 0,
        }
    }

    /// The same read with its output keeping the documents' metadata (`needsMerge`): the
    /// router's part of a pipeline reads what the first part's documents carry.
    pub fn keeping_metadata(mut self) -> HostCursor {
        if let Some(command) = &mut self.command {
            command.insert("needsMerge", true);
        }
        self
    }

    /// The same read comparing strings by `collation` (`None`: the simple one), said
    /// explicitly: a foreign stage compares as its pipeline does, whatever the other
    /// collection's default (a view whose own differs refuses it, as in MongoDB).
    pub fn with_collation(mut self, collation: Option<&Collation>) -> HostCursor {
        if let Some(command) = &mut self.command {
            let spec = collation.map_or_else(|| Collation::Simple.spec(), Collation::spec);
            command.insert("collation", spec);
        }
        self
    }

    /// Whether every batch has been read.
    pub fn exhausted(&self) -> bool {
        self.command.is_none() && self.id == 0
    }

    /// The next batch, of at most `batch_size` documents if given (empty once exhausted).
    pub async fn next_batch(
        &mut self,
        host: &Host<'_>,
        batch_size: Option<usize>,
    ) -> Result<Vec<Document>> {
        let size = batch_size.map(|n| i64::try_from(n.max(1)).unwrap_or(i64::MAX));
        let (command, field) = match self.command.take() {
            Some(mut command) => {
                if let Some(size) = size {
                    command.insert("cursor", doc! {"batchSize": size});
                }
                (command, "firstBatch")
            }
            None if self.id == 0 => return Ok(Vec::new()),
            None => {
                let mut command = doc! {"getMore": self.id, "collection": &self.collection};
                if let Some(size) = size {
                    command.insert("batchSize", size);
                }
                (command, "nextBatch")
            }
        };
        // A failed read ends the cursor: the node closed it.
        self.id = 0;
        let reply = host.runner.run_command(&self.db, command).await?;
        let cursor = reply
            .get_document("cursor")
            .map_err(|_| MongoError::internal("aggregate reply without a cursor"))?;
        self.id = match cursor.get("id") {
            Some(Bson::Int64(id)) => *id,
            Some(Bson::Int32(id)) => i64::from(*id),
            _ => 0,
        };
        if let Some((_, coll)) = cursor.get_str("ns").ok().and_then(|ns| ns.split_once('.')) {
            self.collection = coll.to_string();
        }
        let batch = cursor.get_array(field).into_iter().flatten();
        Ok(batch.filter_map(|doc| doc.as_document().cloned()).collect())
    }

    /// Closes the cursor if it is still open (a reader that stops early); a failure leaves it
    /// to its node's idle timeout.
    pub async fn close(&mut self, host: &Host<'_>) {
        self.command = None;
        if self.id != 0 {
            let kill = doc! {"killCursors": &self.collection, "cursors": [self.id]};
            self.id = 0;
            let _ = host.runner.run_command(&self.db, kill).await;
        }
    }
}
