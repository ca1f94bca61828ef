//! The collection an aggregation cursor reads (`server::pipeline_cursor`), and where the read
//! stands: a chunk of matching documents per step, through the access path a leading `$match`
//! chose; a `$text` search's documents carry their text score, and those of an index scan
//! their index key when the pipeline reads it.

use super::output::KeySource;
use super::{Position, SCAN_CHUNK};
use crate::aggregate::foreign::Host;
use crate::datanode::storage::{CollectionMeta, DatabaseStore};
use crate::error::Result;
use crate::expression::meta::{INDEX_KEY_FIELD, TEXT_SCORE_FIELD};
use crate::query::filter::Filter;
use crate::server::pipeline_cursor::PipelineSource;
use bson::Document;
use futures::future::BoxFuture;
use std::sync::Arc;

/// The collection a pipeline reads, and where the read stands.
pub struct PipelineInput {
    pub db: Arc<DatabaseStore>,
    pub coll: Arc<CollectionMeta>,
    pub position: Position,
    /// Where the index keys come from, when a stage reads `{$meta: "indexKey"}`.
    pub index_keys: Option<KeySource>,
}

impl PipelineSource for PipelineInput {
    fn read<'a>(
        &'a mut self,
        max: usize,
        filter: &'a Filter,
        _host: Option<&'a Host<'a>>,
    ) -> BoxFuture<'a, Result<Option<Vec<Document>>>> {
        Box::pin(async move {
            if self.position.done() {
                return Ok(None);
            }
            self.position
                .set_chunk(i64::try_from(max).unwrap_or(SCAN_CHUNK));
            let mut read = self.db.read().await?;
            let batch = self
                .position
                .next_matches(&mut read, &self.coll, filter)
                .await?;
            if let Some(source) = &self.index_keys {
                let mut docs = Vec::with_capacity(batch.len());
                for candidate in batch {
                    let mut doc = candidate.doc;
                    if let Some(key) = source.scanned_key(&doc) {
                        doc.insert(INDEX_KEY_FIELD, key);
                    }
                    docs.push(doc);
                }
                return Ok(Some(docs));
            }
            if !filter.has_text() {
                return Ok(Some(batch.into_iter().map(|c| c.doc).collect()));
            }
            // A `$text` search gives each document its score, as metadata.
            let mut docs = Vec::with_capacity(batch.len());
            for candidate in batch {
                let mut doc = candidate.doc;
                if let Some(score) = filter.text_match_score(&doc)? {
                    doc.insert(TEXT_SCORE_FIELD, score);
                }
                docs.push(doc);
            }
            Ok(Some(docs))
        })
    }
}
