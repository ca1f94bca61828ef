//! TEMPORARY stub of the storage transaction contract (replaced by the helper's module).
use super::{DatabaseStore, Storage};
use crate::error::Result;
use bson::Document;
use std::future::Future;
use std::sync::Arc;
pub struct StorageTransaction;
impl StorageTransaction {
    pub fn at(_t: bson::Timestamp) -> Arc<Self> {
        Arc::new(StorageTransaction)
    }
    pub fn new() -> Arc<Self> {
        Arc::new(StorageTransaction)
    }
    pub async fn scope<F: Future>(self: &Arc<Self>, f: F) -> F::Output {
        f.await
    }
    pub fn current() -> Option<Arc<StorageTransaction>> {
        None
    }
    pub fn has_writes(&self) -> bool {
        false
    }
    pub async fn commit(&self) -> Result<Vec<(Arc<DatabaseStore>, u64)>> {
        Ok(vec![])
    }
    pub async fn abort(&self) {}
    pub async fn prepare(&self) -> Result<Document> {
        Ok(Document::new())
    }
    pub async fn restore_prepared(_s: &Storage, _w: &Document) -> Result<Arc<Self>> {
        Ok(Self::new())
    }
}
