//! The blocking sort of the stages that order their input by values they compute, as MongoDB
//! runs them on its spilling sorter: `$bucketAuto` by its `groupBy` value, `$sample` by a random
//! value, `$setWindowFields` by partition then `sortBy`, `$densify` by partition then field.
//! Documents travel with their keys, so that spilled runs hold everything the stage needs when
//! they are merged back; within the memory limit the stage gives, past it the sort spills sorted
//! runs (with disk use) or fails with QueryExceededMemoryLimitNoDiskUseAllowed, as `$sort` does.

use crate::document::collation::Collation;
use crate::error::{MongoError, Result};
use crate::query::sort::SortSpec;
use crate::spill::{BlockingSort, SortLimits, SortedDocs, approximate_document_size};
use bson::{Bson, Document};
use std::sync::Arc;

/// Where the document travels in its carrier document.
const DOC: &str = "d";

/// The key fields of the carrier document, in sort priority.
const KEYS: [&str; 2] = ["k0", "k1"];

/// A sort in progress.
pub struct KeyedSort {
    sort: BlockingSort,
    keys: usize,
    count: u64,
    /// What the keys' strings compare by (`None`: simple).
    collation: Option<Arc<Collation>>,
}

impl KeyedSort {
    /// A sort by `keys` computed values (ascending, at most two), then by the documents' own
    /// `inner` order; `keep` the best documents only (top-k). Strings compare by `collation`
    /// (the pipeline's; `None`: simple).
    pub fn new(
        keys: usize,
        inner: Option<&SortSpec>,
        keep: Option<usize>,
        limits: SortLimits,
        collation: Option<Arc<Collation>>,
    ) -> KeyedSort {
        let keys = keys.min(KEYS.len());
        let spec = SortSpec::nested(&KEYS[..keys], DOC, inner).with_collation(collation.clone());
        KeyedSort {
            sort: BlockingSort::new(spec, keep, limits),
            keys,
            count: 0,
            collation,
        }
    }

    /// Adds `doc` with its keys (one per key the sort was made for).
    pub fn push(&mut self, keys: Vec<Bson>, doc: Document) -> Result<()> {
        let mut carrier = Document::new();
        for (name, key) in KEYS.iter().zip(keys).take(self.keys) {
            // In a one-element array the key is compared whole: a sort path that reaches an
            // array orders by its least element, while these stages compare values as values.
            carrier.insert(*name, Bson::Array(vec![key]));
        }
        carrier.insert(DOC, doc);
        let size = approximate_document_size(&carrier);
        self.count += 1;
        self.sort.push(carrier, size)
    }

    /// How many documents were pushed.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// The documents with their keys, in order.
    pub fn finish(self) -> Result<KeyedDocs> {
        Ok(KeyedDocs {
            sorted: self.sort.finish()?,
            keys: self.keys,
            peeked: None,
            collation: self.collation,
        })
    }
}

/// A finished sort's documents with their keys, read in order.
pub struct KeyedDocs {
    sorted: SortedDocs,
    keys: usize,
    peeked: Option<(Vec<Bson>, Document)>,
    /// What the keys' strings compare by (`None`: simple): one partition's keys are equal.
    collation: Option<Arc<Collation>>,
}

impl KeyedDocs {
    /// The next document with its keys.
    pub fn next_keyed(&mut self) -> Result<Option<(Vec<Bson>, Document)>> {
        if let Some(next) = self.peeked.take() {
            return Ok(Some(next));
        }
        let Some(mut carrier) = self.sorted.next_doc()? else {
            return Ok(None);
        };
        let mut keys = Vec::with_capacity(self.keys);
        for name in &KEYS[..self.keys] {
            match carrier.remove(*name) {
                Some(Bson::Array(mut key)) if key.len() == 1 => keys.push(key.remove(0)),
                _ => return Err(MongoError::internal("a sorted document lost its key")),
            }
        }
        match carrier.remove(DOC) {
            Some(Bson::Document(doc)) => Ok(Some((keys, doc))),
            _ => Err(MongoError::internal("a sorted document lost its document")),
        }
    }

    /// The next document with its keys if its first key equals `first` (the rest of a
    /// partition, read back a document at a time).
    pub fn next_if_first_key(&mut self, first: &Bson) -> Result<Option<(Vec<Bson>, Document)>> {
        let collation = self.collation.clone();
        let same = self.peek_keys()?.is_some_and(|keys| {
            crate::document::order::compare_collated(&keys[0], first, collation.as_deref()).is_eq()
        });
        if same { self.next_keyed() } else { Ok(None) }
    }

    /// The next document's keys, without taking it.
    pub fn peek_keys(&mut self) -> Result<Option<&[Bson]>> {
        if self.peeked.is_none() {
            self.peeked = self.next_keyed()?;
        }
        Ok(self.peeked.as_ref().map(|(keys, _)| keys.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn limits(dir: &std::path::Path, max_bytes: usize) -> SortLimits {
        SortLimits {
            max_bytes,
            allow_disk_use: true,
            spill_dir: dir.join("_tmp"),
        }
    }

    /// Keys compare whole (an array as an array, not by its least element), ties keep
    /// arrival order, and the inner order breaks ties of the keys, spilled or not.
    #[test]
    fn orders_by_whole_keys_then_inner_order_spilled_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let inner = SortSpec::parse(&doc! {"s": -1}).unwrap();
        for max_bytes in [usize::MAX, 300] {
            let mut sort =
                KeyedSort::new(1, Some(&inner), None, limits(dir.path(), max_bytes), None);
            let keys = [
                Bson::Array(vec![Bson::Int32(5), Bson::Int32(0)]),
                Bson::Int32(3),
                Bson::Array(vec![Bson::Int32(1)]),
                Bson::Int32(3),
            ];
            for i in 0..40 {
                let key = keys[i % keys.len()].clone();
                sort.push(vec![key], doc! {"i": i as i32, "s": (i % 3) as i32})
                    .unwrap();
            }
            assert_eq!(sort.len(), 40);
            let mut out = sort.finish().unwrap();
            let mut seen = Vec::new();
            while let Some((keys, doc)) = out.next_keyed().unwrap() {
                seen.push((
                    keys[0].clone(),
                    doc.get_i32("s").unwrap(),
                    doc.get_i32("i").unwrap(),
                ));
            }
            assert_eq!(seen.len(), 40);
            // Numbers before arrays; [1] before [5, 0]; within a key `s` descending, then
            // arrival order.
            assert_eq!(seen[0].0, Bson::Int32(3));
            assert_eq!(seen[20].0, Bson::Array(vec![Bson::Int32(1)]));
            assert_eq!(seen[39].0, keys[0]);
            for pair in seen.windows(2) {
                if pair[0].0 == pair[1].0 {
                    assert!(
                        (pair[0].1, -pair[0].2) > (pair[1].1, -pair[1].2),
                        "{pair:?} ({max_bytes})"
                    );
                }
            }
        }
    }
}
