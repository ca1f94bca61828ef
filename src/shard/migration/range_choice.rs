//! The range a `moveRange` moves, settled before the donation starts: a bound not given is
//! chosen where the chunk size is reached, the chunk is split so the range is a chunk of its
//! own, and a range of more than twice the chunk size's worth of documents is refused unless
//! `forceJumbo` (MongoDB's ChunkTooBig).

use super::KeyRange;
use super::donor::MoveRangeRequest;
use crate::datanode::storage::{DocumentReads, IndexRange};
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use crate::shard::ShardState;
use bson::{Bson, Document, doc};

impl ShardState {
    /// The range to move: `[min, max)` as asked; a bound not given is the chunk's own when the
    /// rest of the chunk fits the chunk size, else the key where the chunk size is reached.
    pub(super) async fn resolve_bounds(
        &self,
        request: &MoveRangeRequest,
        chunk: &KeyRange,
    ) -> Result<KeyRange> {
        let key = chunk.key.clone();
        let (min, max) = match (&request.min, &request.max) {
            (Some(min), Some(max)) => (min.clone(), max.clone()),
            (Some(min), None) => {
                let from = KeyRange::new(&chunk.ns, key.clone(), min.clone(), chunk.max.clone());
                let max = self
                    .key_at_size(&from, request.max_chunk_size_bytes, false)
                    .await?;
                (min.clone(), max.unwrap_or_else(|| chunk.max.clone()))
            }
            (None, Some(max)) => {
                let to = KeyRange::new(&chunk.ns, key.clone(), chunk.min.clone(), max.clone());
                let min = self
                    .key_at_size(&to, request.max_chunk_size_bytes, true)
                    .await?;
                (min.unwrap_or_else(|| chunk.min.clone()), max.clone())
            }
            (None, None) => (chunk.min.clone(), chunk.max.clone()),
        };
        let range = KeyRange::new(&chunk.ns, key, min, max);
        if range.min_key() >= range.max_key()
            || range.min_key() < chunk.min_key()
            || range.max_key() > chunk.max_key()
        {
            return Err(MongoError::bad_value(format!(
                "the range {} does not lie in chunk {} of {}",
                range.display(),
                chunk.display(),
                chunk.ns
            )));
        }
        Ok(range)
    }

    /// Walking `range` from its start (from its end when `backwards`), the first shard key at
    /// which the documents passed reach `bytes`; None when the whole range is smaller.
    async fn key_at_size(
        &self,
        range: &KeyRange,
        bytes: i64,
        backwards: bool,
    ) -> Result<Option<Document>> {
        let Some((database, coll, index)) = self.range_reader(range).await else {
            return Ok(None);
        };
        let mut read = database.read().await?;
        let mut total = 0i64;
        let mut after: Option<(Vec<u8>, i64)> = None;
        loop {
            let scan = IndexRange {
                resume: after.as_ref().map(|(k, r)| (k.as_slice(), *r)),
                reverse: backwards,
                ..range.scan(&index, 1_000)
            };
            let rows = read.index_scan(&coll, &scan).await?;
            let full = rows.len() == 1_000;
            for (entry, rid, doc) in rows {
                total += doc.as_bytes().len() as i64;
                if total >= bytes {
                    let at = range.key.extract(&doc.to_document()?)?;
                    let encoded = range.key.encode(&at);
                    // A split point strictly inside the range.
                    if encoded.as_slice() > range.min_key() && encoded.as_slice() < range.max_key()
                    {
                        return Ok(Some(at));
                    }
                }
                after = Some((entry, rid));
            }
            if !full {
                return Ok(None);
            }
        }
    }

    /// Splits the chunk so that `range` is a chunk of its own.
    pub(super) async fn split_for_move(
        &self,
        request: &MoveRangeRequest,
        chunk: &KeyRange,
        range: &KeyRange,
    ) -> Result<()> {
        let mut points = Vec::new();
        if range.min_key() != chunk.min_key() {
            points.push(Bson::Document(range.min.clone()));
        }
        if range.max_key() != chunk.max_key() {
            points.push(Bson::Document(range.max.clone()));
        }
        let identity = self.require_identity()?;
        let config = self.connector.client(&identity.config_host);
        let mut commit = doc! {
            "_configsvrCommitChunkSplit": &chunk.ns,
            "shard": &request.from,
            "min": chunk.min.clone(),
            "max": chunk.max.clone(),
            "splitPoints": points,
        };
        if let Some(epoch) = request.epoch {
            commit.insert("collEpoch", epoch);
        }
        config.run_doc("admin", commit).await?;
        self.forget_filtering(&chunk.ns);
        self.refresh_collection(&chunk.ns).await?;
        Ok(())
    }

    /// ChunkTooBig for a range of more than twice the chunk size's worth of documents (at the
    /// collection's average document size), unless `forceJumbo`; one document always moves.
    pub(super) async fn check_not_too_big(
        &self,
        request: &MoveRangeRequest,
        range: &KeyRange,
    ) -> Result<()> {
        if request.force_jumbo {
            return Ok(());
        }
        let Some((database, coll, index)) = self.range_reader(range).await else {
            return Ok(());
        };
        let stats = database.stats(&coll);
        if stats.count <= 0 {
            return Ok(());
        }
        let average = (stats.data_size / stats.count).max(1);
        let limit = (2 * request.max_chunk_size_bytes / average).max(1);
        let scan = range.scan(&index, limit + 1);
        let found = database.read().await?.index_keys(&scan).await?.len() as i64;
        if found > limit && found > 1 {
            return Err(MongoError::new(
                ErrorCode::ChunkTooBig,
                format!(
                    "Cannot move chunk: the maximum number of documents for a chunk is {limit}, the maximum chunk size is {}, average document size is {average}. Found more than {limit} documents in chunk ns: {} {} -> {}",
                    request.max_chunk_size_bytes,
                    range.ns,
                    render_doc(&range.min),
                    render_doc(&range.max)
                ),
            ));
        }
        Ok(())
    }
}
