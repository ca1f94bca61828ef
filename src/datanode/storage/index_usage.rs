//! How often queries used each index of a database since this process opened it (what
//! `$indexStats` reports as `accesses`). In memory only: as in MongoDB, a restart starts the
//! counts over, and so do dropping and re-creating an index (a new index table).

use super::catalog::{CollectionMeta, IndexMeta};
use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Debug, Default)]
pub struct IndexUsage {
    /// `(collection ident, index ident)` → (operations, counting since).
    counts: Mutex<HashMap<(i64, i64), (i64, bson::DateTime)>>,
}

impl IndexUsage {
    /// One operation used `indexes` of `coll`.
    pub fn record<'a>(
        &self,
        coll: &CollectionMeta,
        indexes: impl IntoIterator<Item = &'a IndexMeta>,
    ) {
        let mut counts = self.counts.lock().expect("poisoned");
        for index in indexes {
            counts
                .entry((coll.ident, index.ident))
                .or_insert_with(|| (0, bson::DateTime::now()))
                .0 += 1;
        }
    }

    /// The operations that used `index` and since when they are counted (from the first time
    /// the index was used or asked about).
    pub fn accesses(&self, coll: &CollectionMeta, index: &IndexMeta) -> (i64, bson::DateTime) {
        *self
            .counts
            .lock()
            .expect("poisoned")
            .entry((coll.ident, index.ident))
            .or_insert_with(|| (0, bson::DateTime::now()))
    }
}
