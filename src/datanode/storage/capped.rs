//! Capped collections: a size (and optionally a document count) limit, kept by removing the
//! oldest documents (lowest record ids) after each insert.

use super::DocumentReads;
use super::catalog::CollectionMeta;
use super::txn::WriteTxn;
use crate::error::{MongoError, Result};
use bson::{Bson, RawDocument};

/// The limits of a capped collection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CappedLimits {
    /// Most bytes of documents.
    pub size: i64,
    /// Most documents.
    pub max: Option<i64>,
}

fn as_i64(value: Option<&Bson>) -> Option<i64> {
    match value? {
        Bson::Int32(n) => Some(*n as i64),
        Bson::Int64(n) => Some(*n),
        Bson::Double(d) => Some(*d as i64),
        _ => None,
    }
}

impl CollectionMeta {
    /// The limits when the collection is capped.
    pub fn capped_limits(&self) -> Option<CappedLimits> {
        if !matches!(self.options.get("capped"), Some(Bson::Boolean(true))) {
            return None;
        }
        Some(CappedLimits {
            size: as_i64(self.options.get("size")).unwrap_or(i64::MAX),
            max: as_i64(self.options.get("max")).filter(|m| *m > 0),
        })
    }
}

/// Rows examined per eviction step.
const EVICTION_BATCH: i64 = 64;

impl WriteTxn<'_> {
    /// Refuses a document that alone exceeds the collection's size.
    pub(super) fn check_capped_size(limits: CappedLimits, doc: &RawDocument) -> Result<()> {
        let len = doc.as_bytes().len() as i64;
        if len > limits.size {
            return Err(MongoError::bad_value(format!(
                "object to insert exceeds cappedMaxSize: {len} > {}",
                limits.size
            )));
        }
        Ok(())
    }

    /// Removes the oldest documents until the collection is within its limits.
    pub(super) async fn evict_capped(
        &mut self,
        coll: &CollectionMeta,
        limits: CappedLimits,
    ) -> Result<()> {
        loop {
            let stats = self.collection_stats(coll);
            let within = |count: i64, size: i64| {
                size <= limits.size && limits.max.is_none_or(|m| count <= m)
            };
            if within(stats.count, stats.data_size) {
                return Ok(());
            }
            let oldest = self.scan(coll, 0, EVICTION_BATCH).await?;
            if oldest.is_empty() {
                return Ok(());
            }
            let (mut count, mut size) = (stats.count, stats.data_size);
            for (rid, raw) in oldest {
                if within(count, size) {
                    return Ok(());
                }
                self.delete(coll, rid, &raw).await?;
                count -= 1;
                size -= raw.as_bytes().len() as i64;
            }
        }
    }
}
