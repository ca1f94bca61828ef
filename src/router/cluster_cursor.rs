//! Cluster cursors: one client cursor over the cursors several shards opened for one query.
//! With a sort, shard streams (each sorted, each document carrying its `$sortKey` — or, for an
//! aggregation's sorted shard part, the key computed here from the document) are merged by the
//! sort key; without one they are read one after the other. `skip` and `limit` apply once,
//! here (shards were asked for `limit + skip` without skipping).

use crate::command::{CommandRequest, MAX_BATCH_BYTES};
use crate::error::{MongoError, Result};
use crate::query::sort::SortSpec;
use crate::rpc::NodeClient;
use bson::{Bson, RawBsonRef, RawDocument, RawDocumentBuf, doc};
use std::cmp::Ordering;
use std::collections::VecDeque;

/// The field shards add with a document's sort key (`{$sortKey: {$meta: "sortKey"}}`).
pub const SORT_KEY_FIELD: &str = "$sortKey";

/// One shard's cursor and what it returned that was not passed on yet.
struct RemoteCursor {
    shard: String,
    client: NodeClient,
    /// The shard's cursor id; 0 once the shard has nothing more.
    id: i64,
    buffer: VecDeque<Buffered>,
}

struct Buffered {
    sort_key: Vec<Bson>,
    doc: RawDocumentBuf,
}

/// Where the sort keys of a shard's documents come from.
#[derive(Clone, Copy)]
enum Keys<'a> {
    /// Not merged by a sort.
    None,
    /// The `$sortKey` field the shard added (find).
    Field,
    /// Computed from the document (an aggregation's shard part ending in `$sort`).
    Computed(&'a SortSpec),
}

pub struct ClusterCursor {
    db: String,
    collection: String,
    remotes: Vec<RemoteCursor>,
    sort: Option<SortSpec>,
    skip: u64,
    /// Documents still to return (`None`: no limit).
    remaining: Option<u64>,
    /// The batch size getMores ask shards for.
    shard_batch_size: Option<i64>,
    /// Documents ready to return before anything is read from shards: one read but not
    /// returned because the batch was full, or the output of a pipeline the router ran.
    ready: VecDeque<RawDocumentBuf>,
    /// Whether sort keys are computed from the documents rather than read from `$sortKey`.
    keys_from_documents: bool,
}

impl ClusterCursor {
    pub fn new(
        db: &str,
        collection: &str,
        sort: Option<SortSpec>,
        skip: u64,
        limit: Option<u64>,
        shard_batch_size: Option<i64>,
    ) -> ClusterCursor {
        ClusterCursor {
            db: db.to_string(),
            collection: collection.to_string(),
            remotes: Vec::new(),
            sort,
            skip,
            remaining: limit,
            shard_batch_size,
            ready: VecDeque::new(),
            keys_from_documents: false,
        }
    }

    /// A cursor merging shard streams sorted by `sort`, whose documents carry no `$sortKey`
    /// (the shards' part of an aggregation ending in `$sort`).
    pub fn merging_sorted_documents(db: &str, collection: &str, sort: SortSpec) -> ClusterCursor {
        let mut cursor = ClusterCursor::new(db, collection, Some(sort), 0, None, None);
        cursor.keys_from_documents = true;
        cursor
    }

    fn keys(&self) -> Keys<'_> {
        match (&self.sort, self.keys_from_documents) {
            (None, _) => Keys::None,
            (Some(_), false) => Keys::Field,
            (Some(sort), true) => Keys::Computed(sort),
        }
    }

    /// A cursor over documents the router computed (a pipeline's output).
    pub fn from_documents(db: &str, collection: &str, docs: Vec<RawDocumentBuf>) -> ClusterCursor {
        let mut cursor = ClusterCursor::new(db, collection, None, 0, None, None);
        cursor.ready = docs.into();
        cursor
    }

    /// Adds a shard's cursor from its reply to the initial command.
    pub fn add_shard(
        &mut self,
        shard: &str,
        client: NodeClient,
        reply: &RawDocument,
    ) -> Result<()> {
        let mut remote = RemoteCursor {
            shard: shard.to_string(),
            client,
            id: 0,
            buffer: VecDeque::new(),
        };
        remote.absorb(reply, "firstBatch", self.keys())?;
        self.remotes.push(remote);
        Ok(())
    }

    /// Whether every document has been returned.
    pub fn is_exhausted(&self) -> bool {
        self.remaining == Some(0)
            || (self.ready.is_empty()
                && self
                    .remotes
                    .iter()
                    .all(|r| r.id == 0 && r.buffer.is_empty()))
    }

    /// The next batch: at most `max_docs` documents (and 16 MiB).
    pub async fn next_batch(&mut self, max_docs: Option<usize>) -> Result<Vec<RawDocumentBuf>> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        while self.remaining != Some(0) && max_docs.is_none_or(|max| batch.len() < max) {
            let doc = match self.ready.pop_front() {
                Some(doc) => doc,
                None => match self.next_doc().await? {
                    Some(doc) => doc,
                    None => break,
                },
            };
            if self.skip > 0 {
                self.skip -= 1;
                continue;
            }
            if !batch.is_empty() && bytes + doc.as_bytes().len() > MAX_BATCH_BYTES {
                self.ready.push_front(doc);
                break;
            }
            bytes += doc.as_bytes().len();
            batch.push(doc);
            if let Some(remaining) = &mut self.remaining {
                *remaining -= 1;
            }
        }
        Ok(batch)
    }

    /// The next document in merge order, fetching from shards as their buffers run dry.
    async fn next_doc(&mut self) -> Result<Option<RawDocumentBuf>> {
        let keys = match (&self.sort, self.keys_from_documents) {
            (Some(sort), true) => Keys::Computed(sort),
            _ => Keys::Field,
        };
        let (db, collection, batch_size) = (&self.db, &self.collection, self.shard_batch_size);
        let Some(sort) = &self.sort else {
            for remote in &mut self.remotes {
                while remote.buffer.is_empty() && remote.id != 0 {
                    remote
                        .get_more(db, collection, batch_size, Keys::None)
                        .await?;
                }
                if let Some(next) = remote.buffer.pop_front() {
                    return Ok(Some(next.doc));
                }
            }
            return Ok(None);
        };
        // Every shard with more to give must show its next document before one is chosen.
        let refills = self
            .remotes
            .iter_mut()
            .filter(|r| r.buffer.is_empty() && r.id != 0)
            .map(|r| r.refill(db, collection, batch_size, keys));
        futures::future::try_join_all(refills).await?;
        let best = self
            .remotes
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.buffer.front().map(|b| (i, b)))
            .min_by(|(i, a), (j, b)| {
                // Equal keys: the lower shard index first, so the merge is deterministic.
                match sort.compare_keys(&a.sort_key, &b.sort_key) {
                    Ordering::Equal => i.cmp(j),
                    other => other,
                }
            })
            .map(|(i, _)| i);
        Ok(best.and_then(|i| self.remotes[i].buffer.pop_front().map(|b| b.doc)))
    }

    /// Closes the shard cursors still open (their shards would time them out otherwise).
    pub async fn kill(&mut self) {
        let kills = self.remotes.iter_mut().filter(|r| r.id != 0).map(|r| {
            let id = std::mem::take(&mut r.id);
            let kill = doc! {"killCursors": &self.collection, "cursors": [id]};
            let client = r.client.clone();
            let db = self.db.clone();
            async move {
                if let Ok(req) = CommandRequest::from_document(&db, &kill) {
                    let _ = client.call(req).await;
                }
            }
        });
        futures::future::join_all(kills).await;
    }
}

impl RemoteCursor {
    /// Fetches until the buffer holds a document or the shard has none left.
    async fn refill(
        &mut self,
        db: &str,
        collection: &str,
        batch_size: Option<i64>,
        keys: Keys<'_>,
    ) -> Result<()> {
        while self.buffer.is_empty() && self.id != 0 {
            self.get_more(db, collection, batch_size, keys).await?;
        }
        Ok(())
    }

    async fn get_more(
        &mut self,
        db: &str,
        collection: &str,
        batch_size: Option<i64>,
        keys: Keys<'_>,
    ) -> Result<()> {
        let mut cmd = doc! {"getMore": self.id, "collection": collection};
        if let Some(size) = batch_size {
            cmd.insert("batchSize", size);
        }
        // A cursor opened in a transaction reads on in it.
        let request = super::transactions::attach(
            Some(&self.shard),
            self.client.host(),
            CommandRequest::from_document(db, &cmd)?,
        )?;
        let reply = self
            .client
            .run(request)
            .await
            .inspect_err(|_| self.id = 0)?;
        self.absorb(&reply, "nextBatch", keys)
    }

    /// Takes a cursor reply's batch and cursor id.
    fn absorb(&mut self, reply: &RawDocument, batch_field: &str, keys: Keys<'_>) -> Result<()> {
        let Some(RawBsonRef::Document(cursor)) = reply.get("cursor")? else {
            return Err(MongoError::internal(format!(
                "shard {} answered a query without a cursor",
                self.shard
            )));
        };
        self.id = match cursor.get("id")? {
            Some(RawBsonRef::Int64(id)) => id,
            _ => 0,
        };
        if let Some(RawBsonRef::Array(batch)) = cursor.get(batch_field)? {
            for doc in batch {
                let RawBsonRef::Document(doc) = doc? else {
                    continue;
                };
                self.buffer.push_back(match keys {
                    Keys::Field => split_sort_key(doc)?,
                    Keys::Computed(sort) => Buffered {
                        sort_key: sort.sort_key(&bson::Document::try_from(doc)?),
                        doc: doc.to_raw_document_buf(),
                    },
                    Keys::None => Buffered {
                        sort_key: Vec::new(),
                        doc: doc.to_raw_document_buf(),
                    },
                });
            }
        }
        Ok(())
    }
}

/// Separates the `$sortKey` a shard appended from the document returned to the client.
pub fn take_sort_key(doc: &RawDocument) -> Result<(Vec<Bson>, RawDocumentBuf)> {
    let Buffered { sort_key, doc } = split_sort_key(doc)?;
    Ok((sort_key, doc))
}

fn split_sort_key(doc: &RawDocument) -> Result<Buffered> {
    let mut out = RawDocumentBuf::new();
    let mut sort_key = Vec::new();
    for element in doc {
        let (name, value) = element?;
        match (name, value) {
            (SORT_KEY_FIELD, RawBsonRef::Document(key)) => {
                for part in key {
                    let (_, v) = part?;
                    sort_key.push(Bson::try_from(v.to_raw_bson())?);
                }
            }
            _ => out.append_ref(name, value),
        }
    }
    Ok(Buffered { sort_key, doc: out })
}

/// The shards' streams as the input of the router's part of an aggregation (the merger's
/// part of a split pipeline): read a batch at a time as the merge needs input.
impl crate::server::pipeline_cursor::PipelineSource for ClusterCursor {
    fn read<'a>(
        &'a mut self,
        max: usize,
        _filter: &'a crate::query::filter::Filter,
        _host: Option<&'a crate::aggregate::foreign::Host<'a>>,
    ) -> futures::future::BoxFuture<'a, Result<Option<Vec<bson::Document>>>> {
        Box::pin(async move {
            if self.is_exhausted() {
                return Ok(None);
            }
            let batch = self.next_batch(Some(max)).await?;
            let docs = batch
                .iter()
                .map(|doc| bson::Document::try_from(doc.as_ref()))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok(Some(docs))
        })
    }

    fn close<'a>(
        &'a mut self,
        _host: Option<&'a crate::aggregate::foreign::Host<'a>>,
    ) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(self.kill())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn sort_keys_are_split_off() {
        let mut key = RawDocumentBuf::new();
        key.append("", 3);
        key.append("", "x");
        let mut doc = rawdoc! {"_id": 1, "a": 3};
        doc.append(SORT_KEY_FIELD, key);
        let buffered = split_sort_key(&doc).unwrap();
        assert_eq!(
            buffered.sort_key,
            vec![Bson::Int32(3), Bson::String("x".into())]
        );
        assert_eq!(buffered.doc, rawdoc! {"_id": 1, "a": 3});
    }
}
